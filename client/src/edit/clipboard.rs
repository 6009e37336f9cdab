//! Copy, paste and duplicate of nodes (Ctrl/Cmd+C, V, D): the selected nodes and the
//! edges among them; a paste gives every node a fresh id, keeps its configuration,
//! sets it off from where it was copied, and selects the copies, as one undo step.

use std::collections::HashMap;

use conclave_shared::{Conclave, Edge, Position};
use leptos::prelude::*;

use crate::state::{Clip, Editor, Selection, fresh_id};

/// How far a pasted node is set off from its original, per step, in canvas pixels.
const OFFSET: i32 = 40;

/// Copies the selected nodes; false when no node is selected (the key is then left
/// to the browser, which may copy selected text).
pub fn copy(editor: Editor) -> bool {
    let Some(clip) = selected_clip(editor) else { return false };
    let count = clip.nodes.len();
    editor.clipboard.set_value(Some(clip));
    editor.say(format!("Copied {}", nodes_text(count)), false);
    true
}

/// Pastes what was copied; false when nothing was.
pub fn paste(editor: Editor) -> bool {
    let Some(clip) = editor.clipboard.get_value() else { return false };
    insert(editor, &clip);
    true
}

/// Duplicates the selected nodes and the edges among them, leaving the clipboard as it is.
pub fn duplicate(editor: Editor) {
    if let Some(clip) = selected_clip(editor) {
        insert(editor, &clip);
    }
}

fn nodes_text(count: usize) -> String {
    if count == 1 { "1 node".into() } else { format!("{count} nodes") }
}

/// The selected nodes and the edges whose both ends are among them.
fn selected_clip(editor: Editor) -> Option<Clip> {
    let ids = editor.selection.get_untracked().nodes();
    if ids.is_empty() {
        return None;
    }
    editor.conclave.with_untracked(|c| {
        let c = c.as_ref()?;
        let nodes: Vec<_> = c.nodes.iter().filter(|n| ids.contains(&n.id)).cloned().collect();
        let edges = c.edges.iter().filter(|e| ids.contains(&e.from) && ids.contains(&e.to)).cloned().collect();
        (!nodes.is_empty()).then_some(Clip { nodes, edges })
    })
}

/// Adds copies of the clip's nodes and edges and selects them.
fn insert(editor: Editor, clip: &Clip) {
    let mut added = Vec::new();
    editor.edit(|c| added = paste_into(c, clip));
    editor.say(format!("Pasted {}", nodes_text(added.len())), false);
    editor.selection.set(Selection::of_nodes(added));
}

/// Adds the clip to `conclave` with fresh ids and returns them. A node whose label was
/// its id gets its new id as label.
fn paste_into(conclave: &mut Conclave, clip: &Clip) -> Vec<String> {
    let offset = free_offset(conclave, clip);
    let mut renamed: HashMap<String, String> = HashMap::new();
    for node in &clip.nodes {
        let mut copy = node.clone();
        copy.id = fresh_id(conclave, id_stem(&node.id));
        if node.label == node.id {
            copy.label = copy.id.clone();
        }
        copy.position = Position { x: node.position.x + offset, y: node.position.y + offset };
        renamed.insert(node.id.clone(), copy.id.clone());
        conclave.nodes.push(copy);
    }
    for edge in &clip.edges {
        if let (Some(from), Some(to)) = (renamed.get(&edge.from), renamed.get(&edge.to)) {
            conclave.edges.push(Edge { from: from.clone(), to: to.clone(), case: edge.case.clone() });
        }
    }
    clip.nodes.iter().filter_map(|n| renamed.get(&n.id).cloned()).collect()
}

/// The smallest multiple of [`OFFSET`] that puts no copy on (or within half a step of)
/// a card already there, so pasting twice does not stack copies.
fn free_offset(conclave: &Conclave, clip: &Clip) -> i32 {
    let taken = |p: Position| {
        conclave
            .nodes
            .iter()
            .any(|n| (n.position.x - p.x).abs() < OFFSET / 2 && (n.position.y - p.y).abs() < OFFSET / 2)
    };
    (1..100)
        .map(|step| step * OFFSET)
        .find(|&d| !clip.nodes.iter().any(|n| taken(Position { x: n.position.x + d, y: n.position.y + d })))
        .unwrap_or(OFFSET)
}

/// `agent-3` → `agent`, so copies are numbered from the family name.
fn id_stem(id: &str) -> &str {
    match id.rsplit_once('-') {
        Some((stem, n)) if !stem.is_empty() && !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()) => stem,
        _ => id,
    }
}
