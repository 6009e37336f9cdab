//! How a conclave gets its id: "New" opens an untitled conclave at once (`untitled`,
//! `untitled-2`, ... whichever is free in the catalog), and until its first save its
//! id follows its name as a slug the server accepts (lowercase letters, digits, `-`
//! and `_`, at most 64 characters, unique in the catalog). After the first save the
//! id is fixed.

use conclave_shared::Conclave;
use leptos::prelude::*;

use crate::state::Editor;

/// The longest id the server accepts.
const MAX_ID: usize = 64;

/// Opens a new, unsaved conclave named "Untitled".
pub fn open_untitled(editor: Editor) {
    let id = unique_id("untitled", &catalog_ids(editor));
    let conclave = Conclave {
        version: 1,
        id,
        name: "Untitled".into(),
        description: String::new(),
        settings: Default::default(),
        nodes: Vec::new(),
        edges: Vec::new(),
    };
    editor.open(conclave, false);
    editor
        .say("New conclave: name it in the toolbar, then drag a Trigger, Agents and an Output onto the canvas", false);
}

/// Renames the open conclave (one undo step); a conclave never saved takes the name's
/// slug as its id.
pub fn rename(editor: Editor, name: String) {
    let stored = editor.stored.get_untracked();
    let id = id_for_name(editor, &name);
    editor.edit(|c| {
        if !stored {
            c.id = id;
        }
        c.name = name;
    });
}

/// The id an unsaved conclave named `name` gets.
pub fn id_for_name(editor: Editor, name: &str) -> String {
    unique_id(&slug(name), &catalog_ids(editor))
}

/// The file the open conclave is (or will be) saved as.
pub fn file_of(id: &str) -> String {
    format!("conclaves/{id}.conclave.json")
}

fn catalog_ids(editor: Editor) -> Vec<String> {
    editor.catalog.with_untracked(|list| list.iter().map(|s| s.id.clone()).collect())
}

/// A name as an id: lowercase ASCII letters and digits, `-` between words (any run of
/// other characters), `_` kept inside; `untitled` when nothing is left.
fn slug(name: &str) -> String {
    let mut out = String::new();
    for ch in name.chars().map(|c| c.to_ascii_lowercase()) {
        if ch.is_ascii_lowercase() || ch.is_ascii_digit() || (ch == '_' && !out.is_empty()) {
            out.push(ch);
        } else if !out.is_empty() && !out.ends_with('-') {
            out.push('-');
        }
    }
    let out = trim_end(&out, MAX_ID);
    if out.is_empty() { "untitled".into() } else { out }
}

/// `text` cut to `max` bytes (all ASCII) without a trailing `-`.
fn trim_end(text: &str, max: usize) -> String {
    text[..text.len().min(max)].trim_end_matches('-').to_string()
}

/// `base`, or `base-2`, `base-3`, ... (shortened to fit) if taken.
fn unique_id(base: &str, taken: &[String]) -> String {
    let free = |id: &str| !taken.iter().any(|t| t == id);
    if free(base) {
        return base.to_string();
    }
    (2..)
        .map(|n| {
            let suffix = format!("-{n}");
            format!("{}{suffix}", trim_end(base, MAX_ID - suffix.len()))
        })
        .find(|id| free(id))
        .unwrap_or_else(|| base.to_string())
}
