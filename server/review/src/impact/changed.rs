//! Which functions and methods a change touches in one file: the base and head
//! versions' definitions matched against the lines the change adds and deletes
//! (a line diff of the two texts). Pure.

use conclave_symbols::{Definition, FileSymbols, SymbolKind};
use std::collections::HashSet;

use super::model::ChangeKind;

/// A function or method the change touches.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Touched {
    /// Its definition: the head version's, the base version's when removed.
    pub definition: Definition,
    pub change: ChangeKind,
    /// The lines the change adds or deletes inside it.
    pub changed_lines: u32,
}

/// One changed file's two versions, each with its symbols (`None`: the file does not
/// exist on that side, or its symbols could not be read).
#[derive(Debug, Clone, Copy, Default)]
pub struct Versions<'a> {
    pub base: Option<(&'a str, &'a FileSymbols)>,
    pub head: Option<(&'a str, &'a FileSymbols)>,
}

/// The lines a change adds and deletes, from a line diff of the two versions.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LineChanges {
    /// Head lines the change adds (1-based).
    pub added: Vec<u32>,
    /// Base lines the change deletes (1-based).
    pub deleted: Vec<u32>,
    /// For each deleted line, the head line the deletion sits before.
    pub deleted_before: Vec<u32>,
}

/// The functions and methods of one file the change adds, removes or modifies: a
/// head definition with added lines inside it, or deletions between its first and
/// last lines, is added (no base definition of the same name and container) or
/// modified; a base definition with no head definition of the same name and
/// container is removed.
pub fn touched_functions(versions: Versions<'_>) -> Vec<Touched> {
    let (base_text, base_symbols) = versions.base.map_or(("", None), |(t, s)| (t, Some(s)));
    let (head_text, head_symbols) = versions.head.map_or(("", None), |(t, s)| (t, Some(s)));
    let lines = line_changes(base_text, head_text);
    let functions = |symbols: Option<&FileSymbols>| -> Vec<Definition> {
        symbols.map_or_else(Vec::new, |s| s.definitions.iter().filter(|d| is_function(d)).cloned().collect())
    };
    let (base, head) = (functions(base_symbols), functions(head_symbols));
    let key = |d: &Definition| (d.name.clone(), d.container.clone());
    let in_base: HashSet<_> = base.iter().map(key).collect();
    let in_head: HashSet<_> = head.iter().map(key).collect();
    let mut touched = Vec::new();
    for definition in head {
        let (start, end) = (definition.start_line, definition.end_line);
        let added = count_in(&lines.added, start, end);
        let deleted = lines.deleted_before.iter().filter(|&&before| before > start && before <= end).count();
        let changed = (added + deleted) as u32;
        if changed == 0 {
            continue;
        }
        let change = if in_base.contains(&key(&definition)) { ChangeKind::Modified } else { ChangeKind::Added };
        touched.push(Touched { definition, change, changed_lines: changed });
    }
    for definition in base {
        if in_head.contains(&key(&definition)) {
            continue;
        }
        let changed = count_in(&lines.deleted, definition.start_line, definition.end_line) as u32;
        if changed > 0 {
            touched.push(Touched { definition, change: ChangeKind::Removed, changed_lines: changed });
        }
    }
    touched
}

/// Whether a definition is a function or a method.
pub fn is_function(definition: &Definition) -> bool {
    matches!(definition.kind, SymbolKind::Function | SymbolKind::Method)
}

/// The lines `head` adds to `base` and those it deletes.
pub fn line_changes(base: &str, head: &str) -> LineChanges {
    let mut out = LineChanges::default();
    if base == head {
        return out;
    }
    let patch = diffy::create_patch(base, head);
    for hunk in patch.hunks() {
        let (old, new) = (hunk.old_range(), hunk.new_range());
        // An empty range starts at the line before it.
        let mut old_line = (old.start() + usize::from(old.is_empty())) as u32;
        let mut new_line = (new.start() + usize::from(new.is_empty())) as u32;
        for line in hunk.lines() {
            match line {
                diffy::Line::Context(_) => {
                    old_line += 1;
                    new_line += 1;
                }
                diffy::Line::Delete(_) => {
                    out.deleted.push(old_line);
                    out.deleted_before.push(new_line);
                    old_line += 1;
                }
                diffy::Line::Insert(_) => {
                    out.added.push(new_line);
                    new_line += 1;
                }
            }
        }
    }
    out
}

/// How many of the sorted `lines` fall in `start..=end`.
fn count_in(lines: &[u32], start: u32, end: u32) -> usize {
    let from = lines.partition_point(|&l| l < start);
    let to = lines.partition_point(|&l| l <= end);
    to.saturating_sub(from)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn symbols(path: &str, text: &str) -> FileSymbols {
        conclave_symbols::parse_source(path, text.as_bytes()).expect("parses")
    }

    fn summary(touched: &[Touched]) -> Vec<(String, ChangeKind, u32)> {
        touched.iter().map(|t| (t.definition.name.to_string(), t.change, t.changed_lines)).collect()
    }

    #[test]
    fn added_modified_and_removed_functions_are_told_apart() {
        let base =
            "fn keep() {\n    one();\n}\n\nfn edit() {\n    two();\n    three();\n}\n\nfn gone() {\n    four();\n}\n";
        let head =
            "fn keep() {\n    one();\n}\n\nfn edit() {\n    two();\n}\n\nfn fresh() {\n    five();\n    six();\n}\n";
        let (b, h) = (symbols("a.rs", base), symbols("a.rs", head));
        let touched = touched_functions(Versions { base: Some((base, &b)), head: Some((head, &h)) });
        let mut got = summary(&touched);
        got.sort();
        assert_eq!(
            got,
            vec![
                ("edit".to_string(), ChangeKind::Modified, 1),
                // The line diff keeps the closing braces of `gone` as those of `fresh`.
                ("fresh".to_string(), ChangeKind::Added, 3),
                ("gone".to_string(), ChangeKind::Removed, 2),
            ]
        );
    }

    #[test]
    fn a_new_file_adds_every_function_and_a_deleted_one_removes_them() {
        let text = "def a():\n    return 1\n\n\ndef b():\n    return a()\n";
        let parsed = symbols("m.py", text);
        let added = touched_functions(Versions { base: None, head: Some((text, &parsed)) });
        assert_eq!(summary(&added), vec![("a".into(), ChangeKind::Added, 2), ("b".into(), ChangeKind::Added, 2)]);
        let removed = touched_functions(Versions { base: Some((text, &parsed)), head: None });
        assert!(removed.iter().all(|t| t.change == ChangeKind::Removed), "{removed:?}");
        assert_eq!(removed.len(), 2);
    }

    #[test]
    fn line_changes_place_deletions_before_the_next_head_line() {
        let changes = line_changes("a\nb\nc\nd\n", "a\nc\nx\nd\n");
        assert_eq!(changes.added, vec![3]);
        assert_eq!(changes.deleted, vec![2]);
        assert_eq!(changes.deleted_before, vec![2]);
        assert_eq!(line_changes("same\n", "same\n"), LineChanges::default());
    }
}
