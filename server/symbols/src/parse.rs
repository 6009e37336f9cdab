//! One file's symbols: parse it with its language's grammar, run the tags query, and
//! place each definition in its container and each reference in its function.

use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap};
use tree_sitter::{Node, Parser, QueryCursor, StreamingIterator, Tree};

use crate::lang::{Grammar, Role, ScopeKind, grammar, language_of};
use crate::symbol::{Definition, FileSymbols, Lang, Reference, Skip, SymbolKind};

/// Largest file [`parse_source`] parses.
pub const MAX_SOURCE_BYTES: u64 = 4 * 1024 * 1024;
/// Longest signature or reference text kept, in characters.
const MAX_TEXT: usize = 200;
/// How far into a file a NUL byte makes it binary.
const BINARY_PROBE: usize = 8000;

/// One file's symbols, no cache; `Err` says why it was skipped (binary, invalid
/// UTF-8, unknown language, too large, parse error beyond repair). A file with some
/// grammar errors still gives what parsed, with `parse_errors` set.
pub fn parse_source(path: &str, source: &[u8]) -> Result<FileSymbols, Skip> {
    let lang = language_of(path).ok_or_else(|| Skip::UnknownLanguage(extension(path)))?;
    if source.len() as u64 > MAX_SOURCE_BYTES {
        return Err(Skip::TooLarge { bytes: source.len() as u64, cap: MAX_SOURCE_BYTES });
    }
    if source[..source.len().min(BINARY_PROBE)].contains(&0) {
        return Err(Skip::Binary);
    }
    let text = std::str::from_utf8(source).map_err(|_| Skip::InvalidUtf8)?;
    let grammar = grammar(lang).map_err(|e| Skip::Query(lang.name().to_string(), e))?;
    let tree = parse_tree(lang, grammar, text)?;
    let symbols = extract(grammar, &tree, path, text);
    let errors = tree.root_node().has_error();
    if errors && (symbols.definitions.is_empty() && symbols.references.is_empty() || tree.root_node().is_error()) {
        return Err(Skip::ParseError);
    }
    Ok(FileSymbols { parse_errors: errors, ..symbols })
}

/// The extension of `path` as named in skip counts, `(none)` without one.
pub(crate) fn extension(path: &str) -> String {
    let name = path.rsplit('/').next().unwrap_or(path);
    match name.rsplit_once('.') {
        Some((stem, extension)) if !stem.is_empty() => extension.to_ascii_lowercase(),
        _ => "(none)".to_string(),
    }
}

fn parse_tree(lang: Lang, grammar: &Grammar, text: &str) -> Result<Tree, Skip> {
    thread_local! {
        static PARSERS: RefCell<HashMap<Lang, Parser>> = RefCell::new(HashMap::new());
    }
    PARSERS.with(|parsers| {
        let mut parsers = parsers.borrow_mut();
        let parser = match parsers.entry(lang) {
            std::collections::hash_map::Entry::Occupied(e) => e.into_mut(),
            std::collections::hash_map::Entry::Vacant(e) => {
                let mut parser = Parser::new();
                parser
                    .set_language(&grammar.language)
                    .map_err(|e| Skip::Query(lang.name().to_string(), e.to_string()))?;
                e.insert(parser)
            }
        };
        parser.parse(text, None).ok_or(Skip::ParseError)
    })
}

/// A function, class or module of the file, with the scope it sits in.
#[derive(Debug)]
struct Scope {
    start: usize,
    end: usize,
    kind: ScopeKind,
    name: Option<String>,
    parent: Option<usize>,
}

/// What one query match found.
enum Found<'t> {
    Definition(SymbolKind, Node<'t>),
    Reference(bool),
}

fn extract(grammar: &Grammar, tree: &Tree, path: &str, text: &str) -> FileSymbols {
    let source = text.as_bytes();
    let (scopes, token_trees) = scopes(grammar, tree, source);
    let lines = line_starts(source);
    let mut definitions: BTreeMap<usize, Definition> = BTreeMap::new();
    let mut references: BTreeMap<usize, Reference> = BTreeMap::new();
    let file: std::sync::Arc<str> = path.into();
    let mut cursor = QueryCursor::new();
    let mut matches = cursor.matches(&grammar.query, tree.root_node(), source);
    while let Some(m) = matches.next() {
        let mut name = None;
        let mut found = None;
        for capture in m.captures {
            match grammar.roles.get(capture.index as usize) {
                Some(Role::Name) => name = Some(capture.node),
                Some(Role::Definition(kind)) => found = Some(Found::Definition(*kind, capture.node)),
                Some(Role::Reference(call)) => found = Some(Found::Reference(*call)),
                _ => {}
            }
        }
        let (Some(name_node), Some(found)) = (name, found) else { continue };
        let Ok(name) = name_node.utf8_text(source) else { continue };
        let at = name_node.start_byte();
        match found {
            Found::Definition(kind, node) => {
                let line = line_text(text, &lines, node.start_position().row);
                definitions.entry(at).or_insert_with(|| define(name, kind, node, path, line, source, &scopes));
            }
            Found::Reference(call) => {
                let reference = references.entry(at).or_insert_with(|| Reference {
                    name: name.into(),
                    file: file.clone(),
                    line: name_node.start_position().row as u32 + 1,
                    text: capped(line_text(text, &lines, name_node.start_position().row)).into(),
                    enclosing: enclosing_function(&scopes, at).map(Into::into),
                    qualifier: path_qualifier(name_node, source, &scopes).map(Into::into),
                    call,
                });
                reference.call |= call;
            }
        }
    }
    for tree in token_trees {
        for (name_node, qualifier) in macro_calls(tree, source, &scopes) {
            let Ok(name) = name_node.utf8_text(source) else { continue };
            let at = name_node.start_byte();
            references.entry(at).or_insert_with(|| Reference {
                name: name.into(),
                file: file.clone(),
                line: name_node.start_position().row as u32 + 1,
                text: capped(line_text(text, &lines, name_node.start_position().row)).into(),
                enclosing: enclosing_function(&scopes, at).map(Into::into),
                qualifier: qualifier.map(Into::into),
                call: true,
            });
        }
    }
    references.retain(|at, _| !definitions.contains_key(at));
    let mut definitions: Vec<Definition> = definitions.into_values().collect();
    definitions.sort_by_key(|d| (d.start_line, d.end_line));
    FileSymbols { definitions, references: references.into_values().collect(), parse_errors: false }
}

/// The definition of `name` by `node`, whose first line is `line` (whole, so it
/// shows the `export` or `const` before a name).
fn define(
    name: &str,
    kind: SymbolKind,
    node: Node,
    path: &str,
    line: &str,
    source: &[u8],
    scopes: &[Scope],
) -> Definition {
    let (container, in_class) = if node.kind() == "method_declaration" {
        (go_receiver(node, source), true)
    } else {
        match container_of(scopes, node) {
            Some(scope) => (scope.name.clone(), scope.kind == ScopeKind::Class),
            None => (None, false),
        }
    };
    let kind = match kind {
        SymbolKind::Function | SymbolKind::Method if in_class => SymbolKind::Method,
        SymbolKind::Method => SymbolKind::Function,
        other => other,
    };
    Definition {
        name: name.into(),
        kind,
        file: path.into(),
        start_line: node.start_position().row as u32 + 1,
        end_line: node.end_position().row as u32 + 1,
        signature: capped(line).into(),
        container: container.map(Into::into),
    }
}

/// The calls among a Rust macro's argument tokens (`assert_eq!(total(&v), 3)`,
/// `println!("{}", c.port())`, `vec![Site::new(1)]`), which tree-sitter leaves
/// as a `token_tree`: an identifier directly followed by a `(…)` token tree, with
/// the path before it when it is `X::name(`. Nested token trees are visited by the
/// caller, each its own.
fn macro_calls<'t>(tree: Node<'t>, source: &[u8], scopes: &[Scope]) -> Vec<(Node<'t>, Option<String>)> {
    let mut cursor = tree.walk();
    let children: Vec<Node<'t>> = tree.children(&mut cursor).collect();
    let mut calls = Vec::new();
    for (i, child) in children.iter().enumerate() {
        let Some(next) = children.get(i + 1) else { break };
        let opens_call = next.kind() == "token_tree" && next.child(0).is_some_and(|open| open.kind() == "(");
        if child.kind() != "identifier" || !opens_call {
            continue;
        }
        let qualifier = match (i.checked_sub(2).map(|j| children[j]), children.get(i.wrapping_sub(1))) {
            (Some(path), Some(colons)) if colons.kind() == "::" => {
                path.utf8_text(source).ok().and_then(|path| qualifier_of(path, child.start_byte(), scopes))
            }
            _ => None,
        };
        calls.push((*child, qualifier));
    }
    calls
}

/// The type or module before `name_node` in a Rust path (`Site` of `Site::new`).
fn path_qualifier(name_node: Node, source: &[u8], scopes: &[Scope]) -> Option<String> {
    let parent = name_node.parent()?;
    if parent.kind() != "scoped_identifier" || parent.child_by_field_name("name")?.id() != name_node.id() {
        return None;
    }
    let path = parent.child_by_field_name("path")?.utf8_text(source).ok()?;
    qualifier_of(path, name_node.start_byte(), scopes)
}

/// The last segment of a Rust path, less generics (`Vec` of `Vec::<u8>`); `Self`
/// as the type of the impl (or trait) around byte `at`; `None` for `self`, `super`
/// and `crate`, whose module is not named.
fn qualifier_of(path: &str, at: usize, scopes: &[Scope]) -> Option<String> {
    let last = path.rsplit("::").map(str::trim).find(|s| !s.starts_with('<'))?;
    let last = last.split('<').next().unwrap_or(last).trim();
    if last.is_empty() || !last.chars().all(|c| c.is_alphanumeric() || c == '_') {
        return None;
    }
    match last {
        "self" | "super" | "crate" => None,
        "Self" => {
            let mut i = innermost(scopes, at);
            while let Some(scope) = i.map(|i| &scopes[i]) {
                if scope.kind == ScopeKind::Class {
                    return scope.name.clone();
                }
                i = scope.parent;
            }
            None
        }
        _ => Some(last.to_string()),
    }
}

/// The innermost scope strictly around `node` (not `node` itself).
fn container_of<'s>(scopes: &'s [Scope], node: Node) -> Option<&'s Scope> {
    let mut at = innermost(scopes, node.start_byte());
    while let Some(i) = at {
        let scope = &scopes[i];
        let own = scope.start == node.start_byte() && scope.end == node.end_byte();
        let inside = scope.start <= node.start_byte() && node.end_byte() <= scope.end;
        if !own && inside {
            return Some(scope);
        }
        at = scope.parent;
    }
    None
}

fn enclosing_function(scopes: &[Scope], at: usize) -> Option<String> {
    let mut i = innermost(scopes, at);
    while let Some(scope) = i.map(|i| &scopes[i]) {
        if scope.kind == ScopeKind::Function && scope.name.is_some() {
            return scope.name.clone();
        }
        i = scope.parent;
    }
    None
}

/// The innermost scope holding byte `at`: scopes nest, so it is the last scope that
/// starts at or before `at`, or one of its ancestors.
fn innermost(scopes: &[Scope], at: usize) -> Option<usize> {
    let mut i = scopes.partition_point(|s| s.start <= at).checked_sub(1);
    while let Some(scope) = i.map(|i| &scopes[i]) {
        if at < scope.end {
            return i;
        }
        i = scope.parent;
    }
    None
}

/// Every scope of the tree in start order, with its parent, and every Rust token
/// tree (a macro's arguments), by one walk.
fn scopes<'t>(grammar: &Grammar, tree: &'t Tree, source: &[u8]) -> (Vec<Scope>, Vec<Node<'t>>) {
    let mut scopes: Vec<Scope> = Vec::new();
    let mut token_trees = Vec::new();
    let mut open: Vec<usize> = Vec::new();
    let mut cursor = tree.walk();
    loop {
        let node = cursor.node();
        if grammar.token_tree != 0 && node.kind_id() == grammar.token_tree {
            token_trees.push(node);
        }
        if let Some(kind) = grammar.scope(node.kind_id()) {
            while open.last().is_some_and(|&i| scopes[i].end <= node.start_byte()) {
                open.pop();
            }
            let parent = open.last().copied();
            open.push(scopes.len());
            scopes.push(Scope {
                start: node.start_byte(),
                end: node.end_byte(),
                kind,
                name: scope_name(node, source),
                parent,
            });
        }
        if cursor.goto_first_child() || cursor.goto_next_sibling() {
            continue;
        }
        loop {
            if !cursor.goto_parent() {
                return (scopes, token_trees);
            }
            if cursor.goto_next_sibling() {
                break;
            }
        }
    }
}

fn scope_name(node: Node, source: &[u8]) -> Option<String> {
    let text = |n: Node| n.utf8_text(source).ok().map(str::to_string);
    if node.kind() == "impl_item" {
        let ty = node.child_by_field_name("type").and_then(text)?;
        return Some(ty.split('<').next().unwrap_or(&ty).trim().to_string());
    }
    if let Some(name) = node.child_by_field_name("name") {
        return text(name);
    }
    // An anonymous function takes the name it is bound to.
    let parent = node.parent()?;
    let bound = match parent.kind() {
        "variable_declarator" | "public_field_definition" | "field_definition" => parent.child_by_field_name("name"),
        "pair" => parent.child_by_field_name("key"),
        "assignment_expression" => {
            parent.child_by_field_name("left").map(|left| left.child_by_field_name("property").unwrap_or(left))
        }
        _ => None,
    };
    bound.and_then(text)
}

fn go_receiver(node: Node, source: &[u8]) -> Option<String> {
    let receiver = node.child_by_field_name("receiver")?;
    let mut stack = vec![receiver];
    while let Some(n) = stack.pop() {
        if n.kind() == "type_identifier" {
            return n.utf8_text(source).ok().map(str::to_string);
        }
        let mut cursor = n.walk();
        stack.extend(n.children(&mut cursor).collect::<Vec<_>>().into_iter().rev());
    }
    None
}

fn line_starts(source: &[u8]) -> Vec<usize> {
    std::iter::once(0).chain(source.iter().enumerate().filter(|(_, b)| **b == b'\n').map(|(i, _)| i + 1)).collect()
}

fn line_text<'a>(text: &'a str, lines: &[usize], row: usize) -> &'a str {
    let start = lines.get(row).copied().unwrap_or(text.len());
    let end = lines.get(row + 1).copied().unwrap_or(text.len());
    text.get(start..end).unwrap_or_default().trim()
}

fn capped(text: &str) -> String {
    match text.char_indices().nth(MAX_TEXT) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_string(),
    }
}
