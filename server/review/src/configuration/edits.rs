//! Which configuration files a change adds, edits or deletes, and for a conclave
//! file which command nodes it adds or changes: what the report names and raises as
//! findings for a person to look at.

use serde_json::Value;
use std::collections::BTreeMap;
use std::path::Path;

use super::layout::Layout;
use super::snapshot::Snapshot;
use super::source::{ConfigKind, EditedFile};
use crate::diff::ChangedFile;

/// The configuration files among `changed`, with the command nodes each conclave file
/// adds or changes against the base's copy in `snapshot`. The new versions are read
/// from the committed head of the repository at `root`.
pub fn edited(root: &Path, snapshot: &Snapshot, layout: &Layout, changed: &[ChangedFile]) -> Vec<EditedFile> {
    changed
        .iter()
        .filter_map(|file| {
            let kind = layout.kind_of(&file.path)?;
            let commands = match kind {
                ConfigKind::Conclave if file.status != "deleted" => {
                    let before = std::fs::read_to_string(snapshot.path(&file.path)).ok();
                    let after = head_text(root, &file.path);
                    commands_added(before.as_deref(), after.as_deref())
                }
                _ => Vec::new(),
            };
            let line = file.changed_lines.first().map_or(0, |(start, _)| *start);
            Some(EditedFile { path: file.path.clone(), kind, status: file.status.clone(), commands, line })
        })
        .collect()
}

/// The committed head's text of `path`, if it has one.
fn head_text(root: &Path, path: &str) -> Option<String> {
    crate::diff::git(root, &["cat-file", "blob", &format!("HEAD:{path}")]).ok()
}

/// The ids of the command nodes of the conclave `after` that `before` lacks or has
/// with another command; every command node of `after` when `before` is absent or
/// unreadable, and of a file that does not parse (it may still hold them).
pub fn commands_added(before: Option<&str>, after: Option<&str>) -> Vec<String> {
    let Some(after) = after else { return Vec::new() };
    let commands_of = |text: &str| -> Option<BTreeMap<String, Value>> {
        let value: Value = serde_json::from_str(text).ok()?;
        let nodes = value.get("nodes")?.as_array()?;
        Some(
            nodes
                .iter()
                .filter(|n| n.get("kind").and_then(Value::as_str) == Some("command") || n.get("command").is_some())
                .filter_map(|n| Some((n.get("id")?.as_str()?.to_string(), n.get("command").cloned()?)))
                .collect(),
        )
    };
    let Some(new) = commands_of(after) else {
        return vec!["(the file does not parse; it may hold command nodes)".to_string()];
    };
    let old = before.and_then(commands_of).unwrap_or_default();
    new.into_iter().filter(|(id, command)| old.get(id) != Some(command)).map(|(id, _)| id).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_command_node_added_or_changed_is_named_and_an_unchanged_one_is_not() {
        let base = r#"{"nodes": [{"id": "lint", "kind": "command", "command": {"argv": ["ruff"]}},
                                 {"id": "a", "kind": "agent"}]}"#;
        let head = r#"{"nodes": [{"id": "lint", "kind": "command", "command": {"argv": ["ruff"]}},
                                 {"id": "evil", "kind": "command", "command": {"argv": ["sh", "-c", "x"]}},
                                 {"id": "a", "kind": "agent"}]}"#;
        assert_eq!(commands_added(Some(base), Some(head)), ["evil"]);
        let changed = head.replace(r#"["ruff"]"#, r#"["sh", "-c", "curl"]"#);
        assert_eq!(commands_added(Some(base), Some(&changed)), ["evil", "lint"]);
        assert_eq!(commands_added(None, Some(head)), ["evil", "lint"], "a new file adds every command node");
        assert_eq!(commands_added(Some(head), Some(base)), Vec::<String>::new(), "removing one adds none");
        assert_eq!(commands_added(Some(base), None), Vec::<String>::new());
        assert_eq!(commands_added(Some(base), Some("{ not json")).len(), 1, "an unreadable file is named as one");
    }
}
