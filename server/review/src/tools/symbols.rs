//! The symbol tools over the repository's index (`conclave-symbols`):
//! `find_definition`, `find_references` and `outline`. The index is built once per
//! review, on first use, on a blocking thread, and shared ([`SymbolIndex`]) by every
//! agent of the review; answers are capped with a note when a list was cut.

use conclave_core::ToolSpec;
use conclave_symbols::{Definition, Index, IndexOptions, Reference, default_cache_dir, language_of};
use serde_json::{Value, json};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use tokio::sync::OnceCell;

use super::sandbox::{Opened, Sandbox};

/// Most definitions `find_definition` shows.
pub const MAX_DEFINITIONS: usize = 50;
/// Most call sites and most other uses `find_references` shows (each).
pub const MAX_REFERENCES: usize = 100;
/// Most symbols `outline` shows.
pub const MAX_OUTLINE: usize = 300;

/// The handle on one review's symbol index: built lazily, once, for the repository
/// the review tools read (the head worktree), with their allowlist; clones share it.
#[derive(Debug, Clone)]
pub struct SymbolIndex {
    root: PathBuf,
    options: IndexOptions,
    cell: Arc<OnceCell<Result<Arc<Index>, String>>>,
}

impl SymbolIndex {
    /// The index of `root` as the review tools see it (`allow` is their allowlist),
    /// cached in [`default_cache_dir`].
    pub fn new(root: &Path, allow: &[String]) -> SymbolIndex {
        let options = IndexOptions { cache_dir: default_cache_dir(), allow: allow.to_vec(), ..IndexOptions::default() };
        SymbolIndex::with_options(root, options)
    }

    /// The index of `root` built with `options`.
    pub fn with_options(root: &Path, options: IndexOptions) -> SymbolIndex {
        SymbolIndex { root: root.to_path_buf(), options, cell: Arc::new(OnceCell::new()) }
    }

    /// The index, built on the first call (on a blocking thread; concurrent callers
    /// wait for the same build) and shared after; `Err` says why it could not be.
    pub async fn get(&self) -> Result<Arc<Index>, String> {
        let (root, options) = (self.root.clone(), self.options.clone());
        self.cell
            .get_or_init(|| async move {
                tokio::task::spawn_blocking(move || {
                    Index::build(&root, &options).map(Arc::new).map_err(|e| e.to_string())
                })
                .await
                .unwrap_or_else(|e| Err(format!("building the symbol index stopped: {e}")))
            })
            .await
            .clone()
    }
}

/// Whether `id` names a symbol tool.
pub fn is_symbol_tool(id: &str) -> bool {
    matches!(id, "find_definition" | "find_references" | "outline")
}

/// Runs a symbol tool on the built index (blocking: `outline` opens its path through
/// the sandbox to refuse what the other tools refuse).
pub fn run(index: &Index, sandbox: &Sandbox, name: &str, args: &Value) -> Result<String, String> {
    match name {
        "find_definition" => find_definition(index, args),
        "find_references" => find_references(index, args),
        "outline" => outline(index, sandbox, args),
        other => Err(format!("`{other}` is not a symbol tool")),
    }
}

fn symbol_and_near(args: &Value, tool: &str) -> Result<(String, Option<String>), String> {
    let symbol = args.get("symbol").and_then(Value::as_str).map(str::trim).filter(|s| !s.is_empty());
    let symbol = symbol.ok_or_else(|| format!("{tool} needs `symbol`, a name such as `parse` or `Config::load`"))?;
    let near = args.get("near_file").and_then(Value::as_str).filter(|s| !s.is_empty()).map(str::to_string);
    Ok((symbol.to_string(), near))
}

fn find_definition(index: &Index, args: &Value) -> Result<String, String> {
    let (symbol, near) = symbol_and_near(args, "find_definition")?;
    let found = index.definitions(&symbol, near.as_deref());
    if found.is_empty() {
        return Ok(format!("no definition of `{symbol}` in the indexed files\n{}", coverage_note(index))
            .trim_end()
            .to_string());
    }
    let mut out = format!("{} definition(s) of `{symbol}`{}:\n", found.len(), nearest(&near));
    for definition in found.iter().take(MAX_DEFINITIONS) {
        let _ = writeln!(out, "{}", definition_line(definition));
    }
    if found.len() > MAX_DEFINITIONS {
        let _ = writeln!(
            out,
            "[{} more not shown; give near_file or a qualified name such as `Type::name`]",
            found.len() - MAX_DEFINITIONS
        );
    }
    out.push_str(&coverage_note(index));
    Ok(out.trim_end().to_string())
}

fn find_references(index: &Index, args: &Value) -> Result<String, String> {
    let (symbol, near) = symbol_and_near(args, "find_references")?;
    let found = index.references(&symbol, near.as_deref());
    if found.is_empty() {
        return Ok(format!("no references to `{symbol}` in the indexed files\n{}", coverage_note(index))
            .trim_end()
            .to_string());
    }
    let (calls, uses): (Vec<&Reference>, Vec<&Reference>) = found.into_iter().partition(|r| r.call);
    let mut out = String::new();
    for (title, list) in [("Call sites", calls), ("Other uses (types, imports, values)", uses)] {
        if list.is_empty() {
            continue;
        }
        let _ = writeln!(out, "{title} of `{symbol}` ({}){}:", list.len(), nearest(&near));
        for reference in list.iter().take(MAX_REFERENCES) {
            let within = reference.enclosing.as_deref().map(|f| format!(" in {f}")).unwrap_or_default();
            let _ = writeln!(out, "{}:{}{within}: {}", reference.file, reference.line, reference.text);
        }
        if list.len() > MAX_REFERENCES {
            let _ = writeln!(
                out,
                "[{} more not shown; give near_file to see the nearest first]",
                list.len() - MAX_REFERENCES
            );
        }
    }
    out.push_str(&coverage_note(index));
    Ok(out.trim_end().to_string())
}

fn outline(index: &Index, sandbox: &Sandbox, args: &Value) -> Result<String, String> {
    let requested = args.get("path").and_then(Value::as_str).ok_or("outline needs `path`")?;
    let path = match sandbox.open(requested).map_err(|e| e.0)? {
        (path, Opened::File(_)) => path,
        (_, Opened::Dir) => return Err(format!("`{requested}` is a directory; give a file (list_files shows them)")),
    };
    let Some(definitions) = index.outline(&path) else {
        if language_of(&path).is_none() {
            return Err(format!(
                "`{path}` is not in a language the index parses (Rust, Python, Go, TypeScript, JavaScript); read_file shows it"
            ));
        }
        let why = index.not_indexed(&path).unwrap_or("not indexed");
        return Err(format!("`{path}` is not in the symbol index ({why}); read_file shows it"));
    };
    if definitions.is_empty() {
        return Ok(format!("`{path}` defines no functions, methods, types or constants"));
    }
    let mut out = format!("`{path}`: {} symbol(s)\n", definitions.len());
    for definition in definitions.iter().take(MAX_OUTLINE) {
        let qualified = match &definition.container {
            Some(container) => format!("{container}::{}", definition.name),
            None => definition.name.to_string(),
        };
        let _ = writeln!(
            out,
            "{:>5}-{:<5} {} {qualified}",
            definition.start_line,
            definition.end_line,
            definition.kind.name()
        );
    }
    if definitions.len() > MAX_OUTLINE {
        let _ = writeln!(out, "[{} more not shown; read_file shows the rest]", definitions.len() - MAX_OUTLINE);
    }
    Ok(out.trim_end().to_string())
}

fn definition_line(definition: &Definition) -> String {
    let within = definition.container.as_deref().map(|c| format!(" in {c}")).unwrap_or_default();
    format!(
        "{}:{}-{} {}{within}: {}",
        definition.file,
        definition.start_line,
        definition.end_line,
        definition.kind.name(),
        definition.signature
    )
}

fn nearest(near: &Option<String>) -> String {
    near.as_deref().map(|n| format!(", nearest to {n} first")).unwrap_or_default()
}

/// A note when the index does not cover every file, so the model knows grep may
/// find more.
fn coverage_note(index: &Index) -> String {
    let report = index.report();
    let missing = report.left_out.total() + report.skipped.values().sum::<usize>();
    if missing == 0 {
        return String::new();
    }
    format!("[the index does not cover {missing} file(s) (skipped or left out by its caps); grep searches them]")
}

/// The spec of a symbol tool, strict like the others: every property required
/// (nullable where optional), objects closed.
pub fn spec(id: &str) -> Option<ToolSpec> {
    let symbol = json!({"type": "string", "description": "A name such as `parse`, or qualified by its type or class: `Config::load`, `Config.load`."});
    let near = json!({"type": ["string", "null"], "description": "A file path; answers nearest to it come first (null for path order)."});
    let (description, properties, names): (&str, Value, Vec<&str>) = match id {
        "find_definition" => (
            "Find where a function, method, type or constant is defined, from the repository's symbol index: each definition's file, line range and first line. Give near_file (the file you are looking at) to rank the nearest definition first when several share the name.",
            json!({"symbol": symbol, "near_file": near}),
            vec!["symbol", "near_file"],
        ),
        "find_references" => (
            "Find the uses of a function, method, type or constant, from the repository's symbol index: each use's file, line, the line's text and the function it sits in; call sites are listed apart from other uses (types, imports, values).",
            json!({"symbol": symbol, "near_file": near}),
            vec!["symbol", "near_file"],
        ),
        "outline" => (
            "List a file's functions, methods, types and constants with their line ranges, from the repository's symbol index.",
            json!({"path": {"type": "string", "description": "A file path relative to the repository root."}}),
            vec!["path"],
        ),
        _ => return None,
    };
    Some(ToolSpec {
        name: id.to_string(),
        description: description.to_string(),
        parameters: json!({"type": "object", "properties": properties, "required": names, "additionalProperties": false}),
    })
}
