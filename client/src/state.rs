//! The editor's state: the open conclave with its undo and redo history, the
//! selection, the viewport, drags in progress, what the server's validation learned,
//! and the run being watched (a [`RunView`], see `run_view.rs`). Every edit goes
//! through [`Editor::edit`], so every edit can be undone.

use conclave_shared::api::{ConclaveSummary, ProviderInfo};
use conclave_shared::{Conclave, Diagnostic};
use leptos::prelude::*;

use crate::run_view::RunView;

/// Width of a node card, in canvas pixels.
pub const NODE_WIDTH: f64 = 200.0;
/// Where the ports sit below a card's top edge.
pub const PORT_Y: f64 = 26.0;

/// What is selected.
#[derive(Debug, Clone, PartialEq)]
pub enum Selection {
    /// Nothing.
    None,
    /// A node, by id.
    Node(String),
    /// An edge, by its ends.
    Edge(String, String),
}

/// The canvas transform: canvas point × zoom + pan = screen point in the canvas box.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Viewport {
    /// Horizontal pan.
    pub x: f64,
    /// Vertical pan.
    pub y: f64,
    /// Scale.
    pub zoom: f64,
}

/// A pointer drag in progress.
#[derive(Debug, Clone, PartialEq)]
pub enum Drag {
    /// An item from the palette: a node kind, a tool (`tool:<id>`) or `structured-output`.
    Palette { item: String, x: f64, y: f64 },
    /// A node card being moved; `dx`, `dy` from the pointer to the card's corner.
    Node { id: String, dx: f64, dy: f64 },
    /// A new edge from `from`'s output port, the pointer at canvas (x, y).
    Edge { from: String, x: f64, y: f64 },
    /// The canvas being panned from screen point (sx, sy) at pan (px, py).
    Pan { sx: f64, sy: f64, px: f64, py: f64 },
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
    /// Snapshots before each edit.
    pub undo_stack: RwSignal<Vec<Conclave>>,
    /// Snapshots undone.
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
    /// The drag in progress.
    pub drag: RwSignal<Option<Drag>>,
    /// The run being watched.
    pub run: RwSignal<Option<RunView>>,
    /// Whether the run dialog is open.
    pub run_dialog: RwSignal<bool>,
}

impl Editor {
    /// A fresh editor with nothing open.
    pub fn new() -> Editor {
        Editor {
            conclave: RwSignal::new(None),
            stored: RwSignal::new(false),
            dirty: RwSignal::new(false),
            undo_stack: RwSignal::new(Vec::new()),
            redo_stack: RwSignal::new(Vec::new()),
            selection: RwSignal::new(Selection::None),
            message: RwSignal::new(None),
            diagnostics: RwSignal::new(Vec::new()),
            findings_agents: RwSignal::new(Vec::new()),
            providers: RwSignal::new(Vec::new()),
            schema_refs: RwSignal::new(Vec::new()),
            catalog: RwSignal::new(Vec::new()),
            view: RwSignal::new(Viewport { x: 40.0, y: 40.0, zoom: 1.0 }),
            drag: RwSignal::new(None),
            run: RwSignal::new(None),
            run_dialog: RwSignal::new(false),
        }
    }

    /// Opens a conclave, forgetting the history of the previous one.
    pub fn open(&self, conclave: Conclave, stored: bool) {
        self.conclave.set(Some(conclave));
        self.stored.set(stored);
        self.dirty.set(false);
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
        self.undo_stack.update(|u| u.push(before));
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
            self.undo_stack.update(|u| u.push(current));
            self.redo_stack.set(Vec::new());
        }
    }

    /// Undoes the last edit.
    pub fn undo(&self) {
        let Some(previous) = self.undo_stack.try_update(|u| u.pop()).flatten() else { return };
        if let Some(current) = self.conclave.get_untracked() {
            self.redo_stack.update(|r| r.push(current));
        }
        self.conclave.set(Some(previous));
        self.dirty.set(true);
    }

    /// Redoes the last undone edit.
    pub fn redo(&self) {
        let Some(next) = self.redo_stack.try_update(|r| r.pop()).flatten() else { return };
        if let Some(current) = self.conclave.get_untracked() {
            self.undo_stack.update(|u| u.push(current));
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

/// A node id not yet used: `base`, `base-2`, `base-3`, ...
pub fn fresh_id(conclave: &Conclave, base: &str) -> String {
    if conclave.node(base).is_none() {
        return base.to_string();
    }
    (2..).map(|n| format!("{base}-{n}")).find(|id| conclave.node(id).is_none()).unwrap_or_else(|| base.to_string())
}
