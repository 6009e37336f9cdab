//! What the canvas's parts share: the memos of the node list (`CanvasGraph`), where
//! ports are, and the geometry between screen points and canvas coordinates. The
//! canvas, its cards, the minimap and the pointer drags all read it.

use std::collections::HashMap;

use conclave_shared::Node;
use leptos::prelude::*;

use crate::state::{Drag, Editor, NODE_WIDTH, PORT_Y};

/// What the canvas's parts share, as memos: the node ids in order, each id's place in
/// the conclave's node list, and the input port an edge being drawn is over (its node,
/// and whether the edge would be accepted).
#[derive(Debug, Clone, Copy)]
pub struct CanvasGraph {
    /// The node ids, in the conclave's order.
    pub ids: Memo<Vec<String>>,
    /// Where each node id is in the conclave's node list.
    pub index: Memo<HashMap<String, usize>>,
    /// The input port under the pointer while an edge is drawn.
    pub target: Memo<Option<(String, bool)>>,
    /// The canvas box's size on screen, kept by a `ResizeObserver`, so views that
    /// depend on it never read layout while the page is being changed (a read then
    /// forces the browser to lay out every card again).
    pub size: RwSignal<Option<(f64, f64)>>,
}

impl CanvasGraph {
    /// The memos of the open conclave in `editor`.
    pub fn new(editor: Editor) -> CanvasGraph {
        let ids: Memo<Vec<String>> = Memo::new(move |_| {
            editor
                .conclave
                .with(|c| c.as_ref().map(|c| c.nodes.iter().map(|n| n.id.clone()).collect()).unwrap_or_default())
        });
        let index = Memo::new(move |_| ids.with(|ids| ids.iter().enumerate().map(|(i, id)| (id.clone(), i)).collect()));
        let target = Memo::new(move |_| {
            editor.drag.with(|d| match d {
                Some(Drag::Edge { over, .. }) => over.clone(),
                _ => None,
            })
        });
        CanvasGraph { ids, index, target, size: RwSignal::new(None) }
    }

    /// A memo of `read` applied to node `id`; it changes only when that value does.
    pub fn node<T>(
        self,
        editor: Editor,
        id: String,
        read: impl Fn(&Node) -> T + Send + Sync + 'static,
    ) -> Memo<Option<T>>
    where
        T: PartialEq + Clone + Send + Sync + 'static,
    {
        Memo::new(move |_| {
            let at = self.index.with(|index| index.get(&id).copied())?;
            editor.conclave.with(|c| c.as_ref()?.nodes.get(at).filter(|n| n.id == id).map(&read))
        })
    }

    /// Where a node's input (or output) port is, in canvas coordinates.
    pub fn port(self, editor: Editor, id: &str, out: bool) -> Option<(f64, f64)> {
        let at = self.index.with(|index| index.get(id).copied())?;
        editor.conclave.with(|c| {
            let n = c.as_ref()?.nodes.get(at).filter(|n| n.id == id)?;
            Some((n.position.x as f64 + if out { NODE_WIDTH } else { 0.0 }, n.position.y as f64 + PORT_Y))
        })
    }
}

/// The canvas element, when a conclave is open.
pub fn canvas_element() -> Option<web_sys::Element> {
    web_sys::window()?.document()?.query_selector("[data-testid=canvas]").ok()?
}

/// A screen point relative to the canvas box.
pub fn canvas_offset(x: f64, y: f64) -> Option<(f64, f64)> {
    let rect = canvas_element()?.get_bounding_client_rect();
    Some((x - rect.left(), y - rect.top()))
}

/// The canvas box's size on screen.
pub fn canvas_size() -> Option<(f64, f64)> {
    let rect = canvas_element()?.get_bounding_client_rect();
    Some((rect.width(), rect.height()))
}

/// A screen point in canvas coordinates.
pub fn to_canvas(editor: Editor, x: f64, y: f64) -> Option<(f64, f64)> {
    let (cx, cy) = canvas_offset(x, y)?;
    let v = editor.view.get_untracked();
    Some(((cx - v.x) / v.zoom, (cy - v.y) / v.zoom))
}
