//! The editor's state: the open conclave with its bounded undo and redo history, the
//! selection (one node, several, or an edge), the viewport, drags in progress, the
//! clipboard, what the server's validation learned, and the run being watched (a
//! [`RunView`], see `run_view.rs`). Every edit goes through [`Editor::edit`], so every
//! edit can be undone.

use conclave_shared::api::{ConclaveSummary, ProviderInfo};
use conclave_shared::{Conclave, Diagnostic, Edge, Node, Position};
use leptos::prelude::*;
use wasm_bindgen::JsCast;

use crate::run_view::RunView;

/// Width of a node card, in canvas pixels.
pub const NODE_WIDTH: f64 = 200.0;
/// Where the ports sit below a card's top edge.
pub const PORT_Y: f64 = 26.0;

/// How many steps undo (and redo) keep; older steps are dropped.
pub const HISTORY_LIMIT: usize = 200;

/// What is selected. One node is always `Node`, never a one-element `Nodes`, so code
/// that only cares about a single selected node (the inspector) can match `Node`.
#[derive(Debug, Clone, PartialEq)]
pub enum Selection {
    /// Nothing.
    None,
    /// A node, by id.
    Node(String),
    /// Two or more nodes, by id, in the order they were selected.
    Nodes(Vec<String>),
    /// An edge, by its ends.
    Edge(String, String),
}

impl Selection {
    /// The selection of these nodes: `None`, `Node` or `Nodes` by how many there are.
    pub fn of_nodes(mut ids: Vec<String>) -> Selection {
        let mut seen = std::collections::HashSet::new();
        ids.retain(|id| seen.insert(id.clone()));
        match ids.len() {
            0 => Selection::None,
            1 => Selection::Node(ids.remove(0)),
            _ => Selection::Nodes(ids),
        }
    }

    /// The selected nodes (none when an edge is selected).
    pub fn nodes(&self) -> Vec<String> {
        match self {
            Selection::Node(id) => vec![id.clone()],
            Selection::Nodes(ids) => ids.clone(),
            Selection::None | Selection::Edge(..) => Vec::new(),
        }
    }

    /// Whether the node `id` is selected.
    pub fn has_node(&self, id: &str) -> bool {
        match self {
            Selection::Node(one) => one == id,
            Selection::Nodes(ids) => ids.iter().any(|n| n == id),
            Selection::None | Selection::Edge(..) => false,
        }
    }
}

/// Copied nodes and the edges among them.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Clip {
    /// The nodes, as they were when copied.
    pub nodes: Vec<Node>,
    /// The edges whose both ends are among `nodes`.
    pub edges: Vec<Edge>,
}

/// The canvas transform: canvas point × zoom + pan = screen point in the canvas box.
/// The default is where a new conclave starts: 100%, the origin a little inside.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Viewport {
    /// Horizontal pan.
    pub x: f64,
    /// Vertical pan.
    pub y: f64,
    /// Scale.
    pub zoom: f64,
}

impl Default for Viewport {
    fn default() -> Self {
        Viewport { x: 40.0, y: 40.0, zoom: 1.0 }
    }
}

/// A pointer drag in progress.
#[derive(Debug, Clone, PartialEq)]
pub enum Drag {
    /// An item from the palette: a node kind, a tool (`tool:<id>`) or `structured-output`.
    Palette { item: String, x: f64, y: f64 },
    /// The selected node cards being moved together: the card `grabbed` was pressed at
    /// canvas point `start`; `origins` are where the cards were; `moved` once they moved.
    Nodes { grabbed: String, start: (f64, f64), origins: Vec<(String, Position)>, moved: bool },
    /// A new edge from `from`'s output port, the pointer at canvas (x, y); `over` is
    /// the node whose input port is under the pointer, and whether it accepts the edge.
    Edge { from: String, x: f64, y: f64, over: Option<(String, bool)> },
    /// A selection band from screen point `start` to `end`; the nodes it touches join
    /// the ones selected `before` it.
    Band { start: (f64, f64), end: (f64, f64), before: Vec<String> },
    /// The canvas being panned from screen point (sx, sy) at pan (px, py).
    Pan { sx: f64, sy: f64, px: f64, py: f64 },
    /// The pointer pressed in the minimap, panning the canvas to follow it.
    Minimap,
}

/// Everything the editor shares between components.
#[derive(Debug, Clone, Copy)]
pub struct Editor {
    /// The open conclave.
    pub conclave: RwSignal<Option<Conclave>>,
    /// Whether the open conclave exists on the server.
    pub stored: RwSignal<bool>,
    /// Whether there are unsaved changes.
    pub dirty: RwSignal<bool>,
    /// The ETag of the open conclave's file as the editor last read or wrote it: a
    /// save sends it in `If-Match`, so it never overwrites a newer file.
    pub etag: StoredValue<Option<String>>,
    /// Whether the last save was refused because the file changed on disk since it
    /// was opened; the editor keeps the unsaved changes until the user chooses.
    pub conflict: RwSignal<bool>,
    /// Snapshots before each edit, at most [`HISTORY_LIMIT`].
    pub undo_stack: RwSignal<Vec<Conclave>>,
    /// Snapshots undone, at most [`HISTORY_LIMIT`].
    pub redo_stack: RwSignal<Vec<Conclave>>,
    /// The selection.
    pub selection: RwSignal<Selection>,
    /// The status line: text and whether it is an error.
    pub message: RwSignal<Option<(String, bool)>>,
    /// The last validation.
    pub diagnostics: RwSignal<Vec<Diagnostic>>,
    /// The agents whose output the server's last validation found findings-shaped.
    /// Any at all means the conclave reviews code; see [`Editor::reviews_code`].
    pub findings_agents: RwSignal<Vec<String>>,
    /// Providers offered in the inspector.
    pub providers: RwSignal<Vec<ProviderInfo>>,
    /// Schema references offered in the inspector.
    pub schema_refs: RwSignal<Vec<String>>,
    /// The catalog.
    pub catalog: RwSignal<Vec<ConclaveSummary>>,
    /// The canvas transform.
    pub view: RwSignal<Viewport>,
    /// Whether the conclave just opened waits for the canvas to fit it to the view
    /// (the canvas may not be on the page yet, or not know its size).
    pub fit_pending: RwSignal<bool>,
    /// The view the last fit set. While the view is still that one, a resized canvas
    /// (the run dock opening below it, a resized window) is fitted again, so a graph
    /// shown whole stays whole until the user pans or zooms.
    pub fitted: StoredValue<Option<Viewport>>,
    /// The drag in progress.
    pub drag: RwSignal<Option<Drag>>,
    /// The run being watched.
    pub run: RwSignal<Option<RunView>>,
    /// Whether the run dialog is open.
    pub run_dialog: RwSignal<bool>,
    /// Whether the Evals panel (the kept evals of the open conclave) is open.
    pub evals: RwSignal<bool>,
    /// Whether the Settings panel (the conclave's run-wide settings: MCP servers) is open.
    pub settings: RwSignal<bool>,
    /// What Ctrl+C copied, for Ctrl+V.
    pub clipboard: StoredValue<Option<Clip>>,
}

impl Editor {
    /// A fresh editor with nothing open.
    pub fn new() -> Editor {
        Editor {
            conclave: RwSignal::new(None),
            stored: RwSignal::new(false),
            dirty: RwSignal::new(false),
            etag: StoredValue::new(None),
            conflict: RwSignal::new(false),
            undo_stack: RwSignal::new(Vec::new()),
            redo_stack: RwSignal::new(Vec::new()),
            selection: RwSignal::new(Selection::None),
            message: RwSignal::new(None),
            diagnostics: RwSignal::new(Vec::new()),
            findings_agents: RwSignal::new(Vec::new()),
            providers: RwSignal::new(Vec::new()),
            schema_refs: RwSignal::new(Vec::new()),
            catalog: RwSignal::new(Vec::new()),
            view: RwSignal::new(Viewport::default()),
            fit_pending: RwSignal::new(false),
            fitted: StoredValue::new(None),
            drag: RwSignal::new(None),
            run: RwSignal::new(None),
            run_dialog: RwSignal::new(false),
            evals: RwSignal::new(false),
            settings: RwSignal::new(false),
            clipboard: StoredValue::new(None),
        }
    }

    /// Opens a conclave, forgetting the history of the previous one, and asks for the
    /// whole graph to be fitted to the view. Its file's ETag is not known
    /// (`open_conclave` sets it after opening a file).
    pub fn open(&self, conclave: Conclave, stored: bool) {
        self.conclave.set(Some(conclave));
        self.fit_pending.set(true);
        self.stored.set(stored);
        self.dirty.set(false);
        self.etag.set_value(None);
        self.conflict.set(false);
        self.undo_stack.set(Vec::new());
        self.redo_stack.set(Vec::new());
        self.selection.set(Selection::None);
        self.diagnostics.set(Vec::new());
        self.findings_agents.set(Vec::new());
        self.run.set(None);
    }

    /// Applies an edit that can be undone; no-op edits leave no history.
    pub fn edit(&self, change: impl FnOnce(&mut Conclave)) {
        let Some(before) = self.conclave.get_untracked() else { return };
        let mut after = before.clone();
        change(&mut after);
        if after == before {
            return;
        }
        push_bounded(self.undo_stack, before);
        self.redo_stack.set(Vec::new());
        self.conclave.set(Some(after));
        self.dirty.set(true);
    }

    /// Changes the conclave without a new history entry (the moves of a drag whose
    /// start was recorded with [`Editor::checkpoint`]).
    pub fn edit_silently(&self, change: impl FnOnce(&mut Conclave)) {
        self.conclave.update(|c| {
            if let Some(c) = c {
                change(c);
            }
        });
        self.dirty.set(true);
    }

    /// Records the current state as an undo step (at the start of a drag).
    pub fn checkpoint(&self) {
        if let Some(current) = self.conclave.get_untracked() {
            push_bounded(self.undo_stack, current);
            self.redo_stack.set(Vec::new());
        }
    }

    /// Undoes the last edit.
    pub fn undo(&self) {
        self.step(self.undo_stack, self.redo_stack);
    }

    /// Redoes the last undone edit.
    pub fn redo(&self) {
        self.step(self.redo_stack, self.undo_stack);
    }

    /// Moves from the snapshot on top of `from` to the current state, which goes onto
    /// `to`. Once stored, a conclave keeps its id: a snapshot from before the first
    /// save (when the id followed the name) takes the stored id.
    fn step(&self, from: RwSignal<Vec<Conclave>>, to: RwSignal<Vec<Conclave>>) {
        let Some(mut next) = from.try_update(|s| s.pop()).flatten() else { return };
        if let Some(current) = self.conclave.get_untracked() {
            if self.stored.get_untracked() {
                next.id = current.id.clone();
            }
            push_bounded(to, current);
        }
        self.conclave.set(Some(next));
        self.dirty.set(true);
    }

    /// Whether the open conclave reviews code, so a run of it takes a repository and a
    /// base ref. The server decides this during validation; the editor only keeps the
    /// answer of the last validation.
    pub fn reviews_code(&self) -> bool {
        self.findings_agents.with(|agents| !agents.is_empty())
    }

    /// Shows a line in the status bar.
    pub fn say(&self, text: impl Into<String>, error: bool) {
        self.message.set(Some((text.into(), error)));
    }
}

impl Default for Editor {
    fn default() -> Self {
        Editor::new()
    }
}

fn push_bounded(stack: RwSignal<Vec<Conclave>>, snapshot: Conclave) {
    stack.update(|s| {
        s.push(snapshot);
        if s.len() > HISTORY_LIMIT {
            s.drain(..s.len() - HISTORY_LIMIT);
        }
    });
}

/// Blurs the focused element, so an input that commits on `change` (the inspector, the
/// field builder, the conclave's name) commits before the conclave is read.
pub fn commit_pending_input() {
    let focused = web_sys::window().and_then(|w| w.document()).and_then(|d| d.active_element());
    if let Some(element) = focused.and_then(|e| e.dyn_into::<web_sys::HtmlElement>().ok()) {
        element.blur().ok();
    }
}

/// A node id not yet used: `base`, `base-2`, `base-3`, ...
pub fn fresh_id(conclave: &Conclave, base: &str) -> String {
    if conclave.node(base).is_none() {
        return base.to_string();
    }
    (2..).map(|n| format!("{base}-{n}")).find(|id| conclave.node(id).is_none()).unwrap_or_else(|| base.to_string())
}
