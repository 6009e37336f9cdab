//! Keyboard shortcuts on the window. In a text field (input, textarea, select,
//! contenteditable) only Save is taken; undo, copy, paste, Delete and the arrows stay
//! the field's own. Elsewhere: undo and redo, copy, paste, duplicate, select all,
//! delete, Esc, the arrows to move the selected nodes, and F to fit the graph to the
//! view.

use leptos::prelude::*;
use wasm_bindgen::JsCast;

use super::clipboard::{copy, duplicate, paste};
use super::file::save;
use super::fit::fit_view;
use crate::state::{Drag, Editor, Selection};

/// How far an arrow key moves the selected nodes, and with Shift.
const NUDGE: (i32, i32) = (10, 50);

/// Listens for shortcuts for as long as the page lives.
pub fn install_keyboard(editor: Editor) {
    let keys = window_event_listener(leptos::ev::keydown, move |ev: web_sys::KeyboardEvent| on_key(editor, &ev));
    std::mem::forget(keys);
}

/// Whether the key went to a field that edits text (and has its own undo).
fn in_text_field(ev: &web_sys::KeyboardEvent) -> bool {
    let Some(el) = ev.target().and_then(|t| t.dyn_into::<web_sys::Element>().ok()) else { return false };
    matches!(el.tag_name().as_str(), "INPUT" | "TEXTAREA" | "SELECT")
        || el.dyn_ref::<web_sys::HtmlElement>().is_some_and(|h| h.is_content_editable())
}

fn on_key(editor: Editor, ev: &web_sys::KeyboardEvent) {
    let command = ev.ctrl_key() || ev.meta_key();
    let key = ev.key();
    if command && key.eq_ignore_ascii_case("s") {
        ev.prevent_default();
        save(editor);
        return;
    }
    if in_text_field(ev) || editor.run_dialog.get_untracked() || editor.conclave.with_untracked(Option::is_none) {
        return;
    }
    let handled = match (command, key.to_ascii_lowercase().as_str()) {
        (true, "z") if ev.shift_key() => {
            editor.redo();
            true
        }
        (true, "z") => {
            editor.undo();
            true
        }
        (true, "y") => {
            editor.redo();
            true
        }
        (true, "c") => copy(editor),
        (true, "v") => paste(editor),
        (true, "d") => {
            duplicate(editor);
            true
        }
        (true, "a") => {
            let all =
                editor.conclave.with_untracked(|c| c.iter().flat_map(|c| &c.nodes).map(|n| n.id.clone()).collect());
            editor.selection.set(Selection::of_nodes(all));
            true
        }
        (false, "delete" | "backspace") => {
            delete_selection(editor);
            true
        }
        (false, "escape") => {
            if matches!(editor.drag.get_untracked(), Some(Drag::Edge { .. } | Drag::Band { .. })) {
                editor.drag.set(None);
            }
            editor.selection.set(Selection::None);
            true
        }
        (false, "f") if !ev.alt_key() => {
            fit_view(editor);
            true
        }
        (false, "arrowleft") => nudge(editor, ev, -1, 0),
        (false, "arrowright") => nudge(editor, ev, 1, 0),
        (false, "arrowup") => nudge(editor, ev, 0, -1),
        (false, "arrowdown") => nudge(editor, ev, 0, 1),
        _ => false,
    };
    if handled {
        ev.prevent_default();
    }
}

/// Moves the selected nodes one step (Shift: a bigger one). Each press is one undo
/// step; a held key's repeats join the step of its first press.
fn nudge(editor: Editor, ev: &web_sys::KeyboardEvent, dx: i32, dy: i32) -> bool {
    let ids = editor.selection.get_untracked().nodes();
    if ids.is_empty() {
        return false;
    }
    let step = if ev.shift_key() { NUDGE.1 } else { NUDGE.0 };
    let change = |c: &mut conclave_shared::Conclave| {
        for n in c.nodes.iter_mut().filter(|n| ids.contains(&n.id)) {
            n.position.x += dx * step;
            n.position.y += dy * step;
        }
    };
    if ev.repeat() {
        editor.edit_silently(change);
    } else {
        editor.edit(change);
    }
    true
}

/// Deletes the selected nodes (with their edges) or the selected edge.
pub fn delete_selection(editor: Editor) {
    let selection = editor.selection.get_untracked();
    match &selection {
        Selection::Edge(from, to) => editor.edit(|c| c.edges.retain(|e| !(e.from == *from && e.to == *to))),
        Selection::None => return,
        Selection::Node(_) | Selection::Nodes(_) => {
            let ids = selection.nodes();
            editor.edit(|c| {
                c.nodes.retain(|n| !ids.contains(&n.id));
                c.edges.retain(|e| !ids.contains(&e.from) && !ids.contains(&e.to));
            });
        }
    }
    editor.selection.set(Selection::None);
}
