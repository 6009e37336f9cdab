//! The minimap: an overview of every card and of the part of the canvas in view, shown
//! when the conclave has many nodes, or does not fit a canvas tall enough to spare
//! the room. Pressing or dragging in it pans the canvas to centre that point.

use conclave_shared::number::shortest;
use leptos::prelude::*;

use crate::edit::canvas::CanvasGraph;
use crate::edit::minimap::{CARD_HEIGHT, MARGIN, bounds_of, pan_to_minimap_point};
use crate::state::{Drag, Editor, NODE_WIDTH};

/// From this many nodes on, the minimap is always shown.
pub const MINIMAP_NODES: usize = 30;
/// Below this canvas height the minimap is shown only for large conclaves: it is
/// three times the minimap's own height (`.minimap` in graph.css).
const SHORT_CANVAS: f64 = 390.0;
/// The minimap.
#[component]
pub fn Minimap() -> impl IntoView {
    let editor = expect_context::<Editor>();
    let graph = expect_context::<CanvasGraph>();
    let bounds = Memo::new(move |_| {
        editor.conclave.with(|c| c.as_ref().and_then(|c| bounds_of(c.nodes.iter().map(|n| n.position))))
    });
    // The canvas's size comes from its resize observer, never from reading the page
    // while an edit is being drawn. Memos, so panning re-renders only the viewport rectangle, not the whole minimap.
    let shown = Memo::new(move |_| {
        let Some((x, y, w, h)) = bounds.get() else { return false };
        if graph.ids.with(Vec::len) >= MINIMAP_NODES {
            return true;
        }
        let v = editor.view.get();
        let Some((cw, ch)) = graph.size.get() else { return false };
        // On a short canvas (the run panel open, a small window) a minimap would hide
        // too much of the few cards it maps.
        if ch < SHORT_CANVAS {
            return false;
        }
        // The cards without the margin must lie inside the visible canvas.
        let (left, top) = (v.x + (x + MARGIN) * v.zoom, v.y + (y + MARGIN) * v.zoom);
        let (right, bottom) = (left + (w - 2.0 * MARGIN) * v.zoom, top + (h - 2.0 * MARGIN) * v.zoom);
        left < 0.0 || top < 0.0 || right > cw || bottom > ch
    });
    let view_box = move || bounds.get().map(|(x, y, w, h)| [x, y, w, h].map(shortest).join(" ")).unwrap_or_default();
    let viewport = Memo::new(move |_| {
        let v = editor.view.get();
        let (cw, ch) = graph.size.get().unwrap_or((0.0, 0.0));
        (-v.x / v.zoom, -v.y / v.zoom, cw / v.zoom, ch / v.zoom)
    });
    move || {
        shown.get().then(|| view! {
            <svg class="minimap" data-testid="minimap" viewBox=view_box preserveAspectRatio="xMidYMid meet"
                on:pointerdown=move |ev: web_sys::PointerEvent| {
                    ev.stop_propagation();
                    ev.prevent_default();
                    pan_to_minimap_point(editor, ev.client_x() as f64, ev.client_y() as f64);
                    editor.drag.set(Some(Drag::Minimap));
                }>
                <title>"Overview: click or drag to move the view"</title>
                <For each=move || graph.ids.get() key=|id| id.clone() children=move |id| view! { <MiniCard id=id/> }/>
                <rect class="minimap-viewport" data-testid="minimap-viewport"
                    x=move || shortest(viewport.get().0) y=move || shortest(viewport.get().1)
                    width=move || shortest(viewport.get().2) height=move || shortest(viewport.get().3)></rect>
            </svg>
        })
    }
}

#[component]
fn MiniCard(id: String) -> impl IntoView {
    let editor = expect_context::<Editor>();
    let graph = expect_context::<CanvasGraph>();
    let card = graph.node(editor, id.clone(), |n| (n.position, n.kind.as_str()));
    view! {
        <rect data-node-id=id class=move || format!("mini-node kind-{}", card.get().map_or("agent", |c| c.1))
            x=move || card.get().map_or(0, |c| c.0.x) y=move || card.get().map_or(0, |c| c.0.y)
            width=shortest(NODE_WIDTH) height=shortest(CARD_HEIGHT) rx="8"></rect>
    }
}
