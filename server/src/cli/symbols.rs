//! `conclave symbols [REPO] --definition NAME | --references NAME | --outline FILE`:
//! the review tools' symbol index for people and scripts, over the same files
//! (`.gitignore`, no `.git/`, no symlink out, the same allowlist) and the same cache.

use clap::{ArgGroup, Args, ValueEnum};
use conclave_review::diff::repository_root;
use conclave_review::tools::sandbox::{Opened, Sandbox};
use conclave_symbols::{Definition, Index, IndexOptions, Reference, default_cache_dir, language_of};
use serde_json::json;
use std::path::PathBuf;

use super::exit;

/// Arguments of `conclave symbols`.
#[derive(Debug, Args)]
#[command(group(ArgGroup::new("query").required(true).args(["definition", "references", "outline"])))]
pub struct SymbolsArgs {
    /// The repository (default: the working directory's); a directory outside git is
    /// indexed as it is.
    #[arg(default_value = ".")]
    pub repo: PathBuf,
    /// Where NAME is defined (a name, or `Type::name` / `Type.name`).
    #[arg(long, value_name = "NAME")]
    pub definition: Option<String>,
    /// Where NAME is used: call sites, then other uses (types, imports, values).
    #[arg(long, value_name = "NAME")]
    pub references: Option<String>,
    /// The functions, methods, types and constants of FILE (relative to the
    /// repository root), with their line ranges.
    #[arg(long, value_name = "FILE")]
    pub outline: Option<String>,
    /// Rank answers nearest to this file first (same file, same directory, fewest
    /// directories apart).
    #[arg(long, value_name = "FILE")]
    pub near: Option<String>,
    /// `text` (one answer a line) or `json` (with the index's report).
    #[arg(long, value_enum, default_value_t = SymbolsFormat::Text)]
    pub format: SymbolsFormat,
    /// Let the index read files matching this glob although `.git/` or `.gitignore`
    /// hide them, as the review tools' `--allow-path` (repeatable; adds to
    /// CONCLAVE_ALLOW_PATHS).
    #[arg(long = "allow-path", value_name = "GLOB")]
    pub allow_paths: Vec<String>,
    /// Parse every file instead of reading unchanged ones from the cache
    /// (`$CONCLAVE_SYMBOLS_CACHE`, else `~/.cache/conclave/symbols`).
    #[arg(long)]
    pub no_cache: bool,
}

/// How `conclave symbols` prints.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum SymbolsFormat {
    Text,
    Json,
}

/// Indexes the repository and answers the query; exit 0 with answers, 1 when there
/// are none, 2 when the repository or the file cannot be used. `allow` is the
/// workspace's allowlist (`CONCLAVE_ALLOW_PATHS`), which `--allow-path` adds to.
pub fn run(mut args: SymbolsArgs, allow: &[String]) -> u8 {
    args.allow_paths.splice(0..0, allow.iter().cloned());
    let root = repository_root(&args.repo).unwrap_or_else(|_| args.repo.clone());
    let options = IndexOptions {
        cache_dir: if args.no_cache { None } else { default_cache_dir() },
        allow: args.allow_paths.clone(),
        ..IndexOptions::default()
    };
    let index = match Index::build(&root, &options) {
        Ok(index) => index,
        Err(e) => {
            eprintln!("error: {e}");
            return exit::CONFIG;
        }
    };
    let report = index.report();
    if report.left_out.total() + report.skipped.values().sum::<usize>() > 0 && args.format == SymbolsFormat::Text {
        eprintln!("note: {}", report.summary());
    }
    if let Some(name) = &args.definition {
        let found = index.definitions(name, args.near.as_deref());
        print_definitions(&index, &args, name, &found)
    } else if let Some(name) = &args.references {
        let found = index.references(name, args.near.as_deref());
        print_references(&index, &args, name, &found)
    } else if let Some(file) = &args.outline {
        outline(&index, &args, file)
    } else {
        eprintln!("error: give --definition NAME, --references NAME or --outline FILE");
        exit::CONFIG
    }
}

fn print_definitions(index: &Index, args: &SymbolsArgs, name: &str, found: &[&Definition]) -> u8 {
    if args.format == SymbolsFormat::Json {
        println!("{}", json!({"definitions": found, "report": index.report()}));
    } else {
        for d in found {
            let within = d.container.as_deref().map(|c| format!(" in {c}")).unwrap_or_default();
            println!("{}:{}-{} {}{within}: {}", d.file, d.start_line, d.end_line, d.kind.name(), d.signature);
        }
    }
    nothing_found(found.is_empty(), &format!("no definition of `{name}`"), index)
}

fn print_references(index: &Index, args: &SymbolsArgs, name: &str, found: &[&Reference]) -> u8 {
    if args.format == SymbolsFormat::Json {
        println!("{}", json!({"references": found, "report": index.report()}));
    } else {
        let (calls, uses): (Vec<&&Reference>, Vec<&&Reference>) = found.iter().partition(|r| r.call);
        for (what, list) in [("call", calls), ("use", uses)] {
            for r in list {
                let within = r.enclosing.as_deref().map(|f| format!(" in {f}")).unwrap_or_default();
                println!("{}:{} {what}{within}: {}", r.file, r.line, r.text);
            }
        }
    }
    nothing_found(found.is_empty(), &format!("no references to `{name}`"), index)
}

fn outline(index: &Index, args: &SymbolsArgs, file: &str) -> u8 {
    // The file is opened as the review tools open it, so a path out of the
    // repository is refused with their words.
    let path = match Sandbox::new(index.root(), &args.allow_paths).map(|s| s.open(file)) {
        Ok(Ok((path, Opened::File(_)))) => path,
        Ok(Ok((_, Opened::Dir))) => {
            eprintln!("error: `{file}` is a directory of {}; give a file", index.root().display());
            return exit::CONFIG;
        }
        Ok(Err(refused)) => {
            eprintln!("error: {refused} (repository {})", index.root().display());
            return exit::CONFIG;
        }
        Err(e) => {
            eprintln!("error: cannot open {}: {e}", index.root().display());
            return exit::CONFIG;
        }
    };
    let Some(definitions) = index.outline(&path) else {
        let why = if language_of(&path).is_none() {
            "no grammar for its language (Rust, Python, Go, TypeScript and JavaScript are indexed)"
        } else {
            index.not_indexed(&path).unwrap_or("not indexed")
        };
        eprintln!("error: `{path}` is not in the symbol index: {why}");
        return exit::CONFIG;
    };
    if args.format == SymbolsFormat::Json {
        println!("{}", json!({"file": path, "definitions": definitions, "report": index.report()}));
    } else {
        for d in definitions {
            let qualified =
                d.container.as_deref().map(|c| format!("{c}::{}", d.name)).unwrap_or_else(|| d.name.to_string());
            println!("{}-{} {} {qualified}", d.start_line, d.end_line, d.kind.name());
        }
    }
    exit::OK
}

fn nothing_found(empty: bool, what: &str, index: &Index) -> u8 {
    if !empty {
        return exit::OK;
    }
    eprintln!("{what} in the {} indexed files of {}", index.report().files_indexed, index.root().display());
    exit::OTHER
}
