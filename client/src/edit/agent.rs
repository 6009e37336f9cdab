//! Reading and changing one agent of the open conclave: memos of its values (so an
//! input bound to one changes only when that value does), edits of its config as one
//! undoable step, and the tools an agent can be given.

use conclave_shared::fields::same_json;
use conclave_shared::{AgentConfig, Conclave, Node};
use leptos::prelude::*;
use serde_json::Value;

use crate::state::Editor;

/// Tools an agent can be given, by id, with their labels.
pub const TOOLS: [(&str, &str); 6] = [
    ("read_file", "Read file"),
    ("list_files", "List files"),
    ("grep", "Grep"),
    ("find_definition", "Find definition"),
    ("find_references", "Find references"),
    ("outline", "Outline"),
];

/// Applies a change to the agent of node `id`, as one undoable edit.
pub fn edit_agent(editor: Editor, id: &str, change: impl FnOnce(&mut AgentConfig)) {
    let Some(before) = read_agent(editor, id, AgentConfig::clone) else { return };
    let mut after = before.clone();
    change(&mut after);
    let set = |c: &mut Conclave| {
        if let Some(a) = c.nodes.iter_mut().find(|n| n.id == id).and_then(|n| n.agent.as_mut()) {
            *a = after.clone();
        }
    };
    if after != before {
        editor.edit(set);
    } else if !same_schema(&before.output_schema, &after.output_schema) {
        // `Editor::edit` drops an edit whose conclave compares equal to the old one,
        // and JSON objects compare equal whatever their key order; moving a field is
        // a real change all the same, recorded as one undo step this way.
        editor.checkpoint();
        editor.edit_silently(set);
    }
}

/// Whether two schemas are the same, key order included.
pub fn same_schema(a: &Option<Value>, b: &Option<Value>) -> bool {
    match (a, b) {
        (Some(a), Some(b)) => same_json(a, b),
        (a, b) => a.is_none() && b.is_none(),
    }
}

/// A memo of node `id`'s inline schema that changes when a property only moves too.
pub fn agent_schema(editor: Editor, id: &str) -> Memo<Option<Value>> {
    let id = id.to_string();
    Memo::new_with_compare(
        move |_| editor.conclave.with(|c| c.as_ref()?.node(&id)?.agent.as_ref()?.output_schema.clone()),
        |before, now| !matches!((before, now), (Some(a), Some(b)) if same_schema(a, b)),
    )
}

/// A memo of one value of node `id`'s agent (`None` when it has none): inputs bound to
/// it change only when that value does.
pub fn agent_value<T>(
    editor: Editor,
    id: &str,
    read: impl Fn(&AgentConfig) -> T + Send + Sync + 'static,
) -> Memo<Option<T>>
where
    T: Clone + PartialEq + Send + Sync + 'static,
{
    let id = id.to_string();
    Memo::new(move |_| editor.conclave.with(|c| c.as_ref()?.node(&id)?.agent.as_ref().map(&read)))
}

/// One value of node `id`'s agent, now, without subscribing to it.
pub fn read_agent<T>(editor: Editor, id: &str, read: impl FnOnce(&AgentConfig) -> T) -> Option<T> {
    editor.conclave.with_untracked(|c| c.as_ref()?.node(id)?.agent.as_ref().map(read))
}

/// A memo of one value of node `id`.
pub fn node_value<T>(editor: Editor, id: &str, read: impl Fn(&Node) -> T + Send + Sync + 'static) -> Memo<Option<T>>
where
    T: Clone + PartialEq + Send + Sync + 'static,
{
    let id = id.to_string();
    Memo::new(move |_| editor.conclave.with(|c| c.as_ref()?.node(&id).map(&read)))
}
