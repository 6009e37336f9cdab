//! The code's own rules, checked on every test run: each crate depends only on what
//! ARCHITECTURE.md says it may know (read from `cargo tree`), `conclave-shared`
//! builds for the browser with serde, serde_json and petgraph alone (and zmij, serde_json's own), the release binary has no
//! test doubles, every source file opens with a `//!` header, no function in the
//! server or the editor runs past 80 lines, no crate's code holds knowledge that
//! belongs to another crate (`imports.rs` and `words.rs` read the code for these), and
//! no two files of a crate import each other, directly or in a circle.

mod features;
mod imports;
mod words;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;
use syn::visit::Visit;

/// The database clients: only conclave-store may know them.
const DATABASE_CLIENTS: &[&str] = &["rusqlite", "tokio-postgres", "deadpool-postgres"];

/// What each crate must not depend on (directly or through another crate), besides
/// the database clients for every crate that does not reach conclave-store.
const FORBIDDEN: &[(&str, &[&str])] = &[
    ("conclave-shared", &["tokio", "reqwest", "axum", "llama-cpp-2", "clap", "jsonschema", "conclave-core", "metrics"]),
    ("conclave-schema", &["tokio", "reqwest", "axum", "llama-cpp-2", "clap", "conclave-core", "metrics"]),
    (
        "conclave-core",
        &["reqwest", "axum", "llama-cpp-2", "clap", "jsonschema", "conclave-schema", "metrics", "rmcp", "jsonwebtoken"],
    ),
    ("conclave-catalog", &["tokio", "reqwest", "axum", "llama-cpp-2", "clap", "conclave-core", "metrics"]),
    // The engine records metrics through the `metrics` facade and spans through
    // `tracing`; the exporters are the binary's business.
    (
        "conclave-engine",
        &[
            "rmcp",
            "reqwest",
            "axum",
            "llama-cpp-2",
            "clap",
            "conclave-review",
            "conclave-providers",
            "conclave-store",
            "metrics-exporter-prometheus",
            "metrics-util",
            "opentelemetry",
            "opentelemetry_sdk",
            "opentelemetry-otlp",
            "tracing-opentelemetry",
        ],
    ),
    // Only the server authenticates to the forges (a GitHub App's JWT).
    (
        "conclave-providers",
        &["axum", "clap", "conclave-engine", "conclave-review", "conclave-store", "metrics", "jsonwebtoken"],
    ),
    // The MCP client knows the SDK, the engine's command sandbox and the core traits:
    // no API, command line, review, vendor or store crate.
    (
        "conclave-mcp",
        &["axum", "clap", "llama-cpp-2", "conclave-review", "conclave-providers", "conclave-store", "jsonwebtoken"],
    ),
    // The sandbox confines processes with the standard library and the kernel: no
    // async runtime, no engine, review or server crate.
    (
        "conclave-sandbox",
        &["tokio", "reqwest", "axum", "clap", "conclave-core", "conclave-engine", "conclave-review", "metrics"],
    ),
    (
        "conclave-review",
        &[
            "reqwest",
            "axum",
            "llama-cpp-2",
            "clap",
            "conclave-providers",
            "conclave-store",
            "metrics-exporter-prometheus",
            "opentelemetry",
            "tracing-opentelemetry",
            "jsonwebtoken",
        ],
    ),
];

/// conclave-store's own limits: it is reached by the server only.
const STORE_FORBIDDEN: &[&str] =
    &["reqwest", "axum", "llama-cpp-2", "clap", "conclave-engine", "conclave-review", "metrics", "jsonwebtoken"];

/// The longest a function may be, in lines, outside `view!` blocks.
const MAX_FUNCTION_LINES: usize = 80;

fn root() -> PathBuf {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    manifest.parent().unwrap_or(manifest).to_path_buf()
}

/// `cargo tree` for one package, normal dependencies only, one package name a line.
fn tree(package: &str, extra: &[&str]) -> BTreeSet<String> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = Command::new(cargo)
        .current_dir(root())
        .args(["tree", "-p", package, "-e", "normal", "--prefix", "none", "--format", "{p}"])
        .args(extra)
        .output()
        .expect("cargo tree runs");
    assert!(out.status.success(), "cargo tree -p {package}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|line| line.split_whitespace().next())
        .map(str::to_string)
        .collect()
}

#[test]
fn each_crate_depends_only_on_what_it_may_know() {
    let mut broken = Vec::new();
    let mut check = |package: &str, forbidden: &mut dyn Iterator<Item = &&str>| {
        let dependencies = tree(package, &[]);
        for name in forbidden.filter(|f| dependencies.contains(**f)) {
            broken.push(format!("{package} depends on {name}"));
        }
    };
    for (package, forbidden) in FORBIDDEN {
        check(package, &mut forbidden.iter().chain(DATABASE_CLIENTS));
    }
    check("conclave-store", &mut STORE_FORBIDDEN.iter());
    assert!(broken.is_empty(), "crate boundaries broken (see ARCHITECTURE.md):\n{}", broken.join("\n"));
}

#[test]
fn only_the_store_uses_a_database_client_directly() {
    let direct = tree("conclave-server", &["--depth", "1"]);
    let used: Vec<&&str> = DATABASE_CLIENTS.iter().filter(|c| direct.contains(**c)).collect();
    assert!(used.is_empty(), "conclave-server uses {used:?} itself: go through conclave-store's stores");
}

#[test]
fn shared_builds_for_the_browser_with_serde_alone() {
    let direct = tree("conclave-shared", &["--depth", "1", "--target", "wasm32-unknown-unknown"]);
    // zmij is serde_json's own float formatter, so it adds nothing to the bundle;
    // petgraph holds the graph algorithms.
    let expected: BTreeSet<String> =
        ["conclave-shared", "petgraph", "serde", "serde_json", "zmij"].map(String::from).into();
    assert_eq!(direct, expected, "conclave-shared's direct dependencies for wasm32");
}

/// What a test double's code carries into any binary that links it: the name of its
/// crate, in the symbol of each of its functions.
const TEST_DOUBLE_MARKERS: &[&str] = &["conclave_doubles", "conclave_testkit"];

/// What the real `conclave` binary always carries: its own crates' symbols. Finding
/// them shows the check read the right file.
const REAL_CODE_MARKERS: &[&str] = &["conclave_server", "conclave_engine", "conclave_providers"];

/// The `conclave` executable built beside this test's own: the test runs from
/// `target/<profile>/deps/`, the binary is `target/<profile>/conclave`.
fn built_binary() -> PathBuf {
    let exe = std::env::current_exe().expect("the test knows its own path");
    let profile = exe.parent().and_then(Path::parent).expect("the test runs from target/<profile>/deps/");
    profile.join(format!("conclave{}", std::env::consts::EXE_SUFFIX))
}

/// Which of `markers` occur in the file at `path`, read in chunks.
fn markers_in(path: &Path, markers: &[&str]) -> BTreeSet<String> {
    use std::io::Read;
    let finders: Vec<memchr::memmem::Finder<'_>> = markers.iter().map(memchr::memmem::Finder::new).collect();
    let overlap = markers.iter().map(|m| m.len()).max().unwrap_or(0);
    let mut file = std::fs::File::open(path).unwrap_or_else(|e| panic!("cannot open {}: {e}", path.display()));
    let mut window: Vec<u8> = Vec::new();
    let mut chunk = vec![0u8; 8 << 20];
    let mut found = BTreeSet::new();
    loop {
        let n = file.read(&mut chunk).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
        if n == 0 {
            return found;
        }
        // Keep the tail of the previous chunk, so a marker split across two is found.
        let keep = window.len().min(overlap);
        window.drain(..window.len() - keep);
        window.extend_from_slice(&chunk[..n]);
        for (marker, finder) in markers.iter().zip(&finders) {
            if !found.contains(*marker) && finder.find(&window).is_some() {
                found.insert(marker.to_string());
            }
        }
    }
}

#[test]
fn the_built_binary_has_no_test_doubles() {
    let binary = built_binary();
    assert!(
        binary.is_file(),
        "{} is missing: this check reads the `conclave` binary that `cargo test --workspace` builds; build it first \
         (`cargo build -p conclave-server`)",
        binary.display()
    );
    let markers: Vec<&str> = TEST_DOUBLE_MARKERS.iter().chain(REAL_CODE_MARKERS).copied().collect();
    let found = markers_in(&binary, &markers);
    let real: Vec<&&str> = REAL_CODE_MARKERS.iter().filter(|m| !found.contains(**m)).collect();
    assert!(
        real.is_empty(),
        "{} lacks {real:?}, which every `conclave` binary with symbols has: the check read the wrong file, or the \
         binary was stripped",
        binary.display()
    );
    let doubles: Vec<&&str> = TEST_DOUBLE_MARKERS.iter().filter(|m| found.contains(**m)).collect();
    assert!(
        doubles.is_empty(),
        "{} contains test doubles ({doubles:?}): conclave-doubles or conclave-testkit reached the binary; they may be \
         dev-dependencies only, never normal dependencies of a crate the binary builds",
        binary.display()
    );
}

/// Every Rust file of the workspace's crates.
fn sources() -> Vec<PathBuf> {
    let mut files = Vec::new();
    for dir in ["shared", "server", "client", "tests"] {
        collect(&root().join(dir), &mut files);
    }
    files.sort();
    files
}

fn collect(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("readable directory").flatten() {
        let path = entry.path();
        let name = entry.file_name();
        if path.is_dir() && !matches!(name.to_str(), Some("target" | "dist" | "fixtures" | "snapshots")) {
            collect(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

fn relative(path: &Path) -> String {
    path.strip_prefix(root()).unwrap_or(path).display().to_string()
}

#[test]
fn every_source_file_says_what_it_is_for() {
    let missing: Vec<String> = sources()
        .into_iter()
        .filter(|path| {
            let text = std::fs::read_to_string(path).unwrap_or_default();
            !text.lines().next().is_some_and(|first| first.starts_with("//!"))
        })
        .map(|path| relative(&path))
        .collect();
    assert!(missing.is_empty(), "files without a `//!` header on their first line:\n{}", missing.join("\n"));
}

/// Collects functions with their length, not counting lines inside `view!` blocks.
struct Lengths {
    found: Vec<(String, usize, usize)>,
}

impl Lengths {
    fn measure(&mut self, name: String, start: proc_macro2::Span, block: &syn::Block) {
        let (first, last) = (start.start().line, block_end(block));
        let mut views = ViewLines(0);
        views.visit_block(block);
        self.found.push((name, first, (last + 1 - first).saturating_sub(views.0)));
    }
}

fn block_end(block: &syn::Block) -> usize {
    block.brace_token.span.close().end().line
}

/// Counts the lines inside `view!` macro invocations.
struct ViewLines(usize);

impl<'a> Visit<'a> for ViewLines {
    fn visit_macro(&mut self, mac: &'a syn::Macro) {
        if mac.path.is_ident("view") {
            let span = mac.delimiter.span().join();
            self.0 += span.end().line + 1 - span.start().line;
        }
    }
}

impl<'a> Visit<'a> for Lengths {
    fn visit_item_fn(&mut self, item: &'a syn::ItemFn) {
        self.measure(item.sig.ident.to_string(), item.sig.fn_token.span, &item.block);
        syn::visit::visit_item_fn(self, item);
    }

    fn visit_impl_item_fn(&mut self, item: &'a syn::ImplItemFn) {
        self.measure(item.sig.ident.to_string(), item.sig.fn_token.span, &item.block);
        syn::visit::visit_impl_item_fn(self, item);
    }

    fn visit_trait_item_fn(&mut self, item: &'a syn::TraitItemFn) {
        if let Some(block) = &item.default {
            self.measure(item.sig.ident.to_string(), item.sig.fn_token.span, block);
        }
        syn::visit::visit_trait_item_fn(self, item);
    }
}

#[test]
fn no_function_in_the_server_or_the_editor_runs_past_80_lines() {
    let mut long = Vec::new();
    for path in sources().into_iter().filter(|p| {
        let r = relative(p);
        r.starts_with("server/") || r.starts_with("client/")
    }) {
        let text = std::fs::read_to_string(&path).expect("readable");
        let file = syn::parse_file(&text).unwrap_or_else(|e| panic!("{} does not parse: {e}", relative(&path)));
        let mut lengths = Lengths { found: Vec::new() };
        lengths.visit_file(&file);
        for (name, line, lines) in lengths.found.into_iter().filter(|f| f.2 > MAX_FUNCTION_LINES) {
            long.push(format!("{}:{line} `{name}` is {lines} lines", relative(&path)));
        }
    }
    assert!(
        long.is_empty(),
        "functions over {MAX_FUNCTION_LINES} lines (split them along a real seam):\n{}",
        long.join("\n")
    );
}

/// The workspace's crates, by directory: no two files of one may import each other.
const CRATES: &[&str] = &[
    "shared",
    "server/core",
    "server/schema",
    "server/catalog",
    "server/engine",
    "server/providers",
    "server/store",
    "server/review",
    "server/sandbox",
    "server",
    "client",
    "tests",
    "tests/kit",
];

/// Vendor and forge names, in any case, inside identifiers and strings: the providers
/// crate and the server know them.
const VENDOR_WORDS: &[&str] = &["anthropic", "openai", "ollama", "claude", "llama", "github", "gitlab"];

/// Code-review wording, in strings: the review crate writes what a model is told.
const REVIEW_WORDS: &[&str] = &["review"];

/// The enum of vendor lowering dialects, whose variants only a provider may choose.
const VENDOR_DIALECTS: &str = "LowerTarget";

/// What a crate's code must not hold.
#[derive(Debug)]
enum Forbidden {
    /// Any of these words inside an identifier or a string, in any case.
    Words(&'static [&'static str]),
    /// Any of these words inside a string, in any case.
    Wording(&'static [&'static str]),
    /// A variant of this enum.
    VariantOf(&'static str),
    /// A long flag of the `conclave` command line (`--no-fallback`) in a string.
    CliFlags,
}

/// Knowledge in the wrong crate: where it must not be (a crate's directory: the
/// code of its library and binary), what, and where it belongs.
struct Leak {
    source: &'static str,
    forbidden: Forbidden,
    fix: &'static str,
}

/// Every rule of knowledge, in one place.
const LEAKS: &[Leak] = &[
    Leak {
        source: "server/core",
        forbidden: Forbidden::Words(VENDOR_WORDS),
        fix: "conclave-core must not know vendors or forges: let conclave-providers (or the server) pass the names in",
    },
    Leak {
        source: "server/engine",
        forbidden: Forbidden::Words(VENDOR_WORDS),
        fix: "the engine must not know vendors or forges: ask the provider (its capabilities or dialects)",
    },
    Leak {
        source: "server/engine",
        forbidden: Forbidden::VariantOf(VENDOR_DIALECTS),
        fix: "the engine must not pick a vendor's dialect: take it from the provider's capabilities or dialects",
    },
    Leak {
        source: "server/engine",
        forbidden: Forbidden::Wording(REVIEW_WORDS),
        fix: "the engine must not word code review for the model: let the OutputPolicy hook say it",
    },
    Leak {
        source: "server/review",
        forbidden: Forbidden::CliFlags,
        fix: "conclave-review must not name command-line flags (an API user has none): return a typed error or data, and let the CLI name its flag and the API its field",
    },
];

#[test]
fn no_crate_holds_knowledge_that_belongs_to_another() {
    let flags = cli_flags();
    assert!(flags.contains("no-fallback") && flags.contains("base"), "the CLI's flags were not found: {flags:?}");
    let mut found = Vec::new();
    for leak in LEAKS {
        let files = imports::production_files(&root().join(leak.source)).unwrap_or_else(|e| panic!("{e}"));
        for file in files {
            found.extend(leak.found_in(&file, &flags));
        }
    }
    found.dedup();
    assert!(found.is_empty(), "knowledge in the wrong crate (see ARCHITECTURE.md):\n{}", found.join("\n"));
}

/// The check above finds each leak it was written for, as the code held it before it
/// moved: a vendor list, an OpenAI-only type and vendor and forge variables in
/// conclave-core, a vendor's dialect and review wording in the engine, and CLI flags
/// in conclave-review's messages.
#[test]
fn the_knowledge_check_finds_each_leak_it_was_written_for() {
    let flags = cli_flags();
    let leaks = [
        ("server/core", r#"pub const KNOWN_PROVIDERS: &[&str] = &["anthropic", "openai", "local"];"#),
        ("server/core", "pub struct AgentRequest { pub api: OpenAiApi }"),
        ("server/core", r#"pub const SECRET_VARIABLES: &[&str] = &["CONCLAVE_TOKEN", "GITHUB_TOKEN"];"#),
        ("server/core", r#"pub const URL_VARIABLES: &[&str] = &["OLLAMA_HOST"];"#),
        ("server/engine", "fn lowered(c: &Contract) -> Lowered { lower(&c.original, LowerTarget::Ollama) }"),
        ("server/engine", r#"const TITLE: &str = "Contradictions the engine found between the reviewers above";"#),
        (
            "server/review",
            r#"#[derive(Error)] enum E { #[error("`{0}` is not a commit; give a branch as --base")] Base(String) }"#,
        ),
        ("server/review", r#"fn hint() -> &'static str { "pass --no-fallback to fail instead" }"#),
    ];
    let dir = tempfile::tempdir().expect("tempdir");
    for (n, (source, code)) in leaks.iter().enumerate() {
        let file = dir.path().join(format!("leak{n}.rs"));
        std::fs::write(&file, format!("//! A leak.\n{code}\n")).expect("write");
        let found: Vec<String> =
            LEAKS.iter().filter(|l| l.source == *source).flat_map(|l| l.found_in(&file, &flags)).collect();
        assert!(!found.is_empty(), "the check missed a leak in {source}: {code}");
    }
}

impl Leak {
    /// Each place in `file` that holds what this rule forbids, with the fix.
    fn found_in(&self, file: &Path, flags: &BTreeSet<String>) -> Vec<String> {
        let words = words::code_words(file).unwrap_or_else(|e| panic!("{e}"));
        words
            .into_iter()
            .filter_map(|(line, word)| self.forbidden.find(&word, flags).map(|what| (line, what)))
            .map(|(line, what)| format!("{}:{line}: {what}; {}", relative(file), self.fix))
            .collect()
    }
}

impl Forbidden {
    /// What in `word` is forbidden, said for the message.
    fn find(&self, word: &words::Word, flags: &BTreeSet<String>) -> Option<String> {
        use words::Word;
        match (self, word) {
            (Forbidden::Words(list), Word::Ident(text) | Word::Str(text)) => {
                let lower = text.to_lowercase();
                let hit = list.iter().find(|w| lower.contains(*w))?;
                Some(format!("`{text}` names `{hit}`"))
            }
            (Forbidden::Wording(list), Word::Str(text)) => {
                let lower = text.to_lowercase();
                let hit = list.iter().find(|w| lower.contains(*w))?;
                Some(format!("{text:?} is worded for `{hit}`"))
            }
            (Forbidden::VariantOf(name), Word::Path(path)) => {
                let at = path.iter().position(|s| s == name)?;
                let variant = path.get(at + 1)?;
                Some(format!("`{name}::{variant}` picks a vendor's dialect"))
            }
            (Forbidden::CliFlags, Word::Str(text)) => {
                let flag = flags_in(text).into_iter().find(|f| flags.contains(f))?;
                Some(format!("`--{flag}` names a flag of the `conclave` command line"))
            }
            _ => None,
        }
    }
}

/// The long flags (`--name`) written in `text`, without their dashes.
fn flags_in(text: &str) -> Vec<String> {
    let mut flags = Vec::new();
    let mut rest = text;
    while let Some(at) = rest.find("--") {
        let before = rest[..at].chars().next_back();
        rest = &rest[at + 2..];
        let name: String = rest.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '-').collect();
        if before.is_none_or(|c| !c.is_ascii_alphanumeric() && c != '-')
            && name.starts_with(|c: char| c.is_ascii_lowercase())
        {
            flags.push(name);
        }
    }
    flags
}

/// The long flags of the `conclave` command line, read from its clap definitions
/// (`#[arg(long)]` on a field, or `#[arg(long = "name")]`).
fn cli_flags() -> BTreeSet<String> {
    let mut files = Vec::new();
    collect(&root().join("server/src/cli"), &mut files);
    let mut flags = BTreeSet::new();
    for file in files {
        let text = std::fs::read_to_string(&file).expect("readable");
        let parsed = syn::parse_file(&text).unwrap_or_else(|e| panic!("{} does not parse: {e}", relative(&file)));
        let mut fields = LongFlags(&mut flags);
        fields.visit_file(&parsed);
    }
    flags
}

/// Collects the long flags of clap fields.
struct LongFlags<'f>(&'f mut BTreeSet<String>);

impl<'a> Visit<'a> for LongFlags<'_> {
    fn visit_field(&mut self, field: &'a syn::Field) {
        for attribute in field.attrs.iter().filter(|a| a.path().is_ident("arg")) {
            let Ok(list) = attribute.meta.require_list() else { continue };
            let Ok(args) =
                list.parse_args_with(syn::punctuated::Punctuated::<syn::Meta, syn::Token![,]>::parse_terminated)
            else {
                continue;
            };
            for arg in args.iter().filter(|a| a.path().is_ident("long")) {
                let name = match arg {
                    syn::Meta::NameValue(syn::MetaNameValue {
                        value: syn::Expr::Lit(syn::ExprLit { lit: syn::Lit::Str(name), .. }),
                        ..
                    }) => name.value(),
                    _ => field.ident.as_ref().map(|i| i.to_string().replace('_', "-")).unwrap_or_default(),
                };
                self.0.insert(name);
            }
        }
        syn::visit::visit_field(self, field);
    }
}

#[test]
fn no_two_files_of_a_crate_import_each_other() {
    let mut circles = Vec::new();
    for dir in CRATES {
        let edges = imports::crate_imports(&root().join(dir)).unwrap_or_else(|e| panic!("{e}"));
        for cycle in imports::cycles(&edges) {
            circles.push(describe_circle(&cycle, &edges));
        }
    }
    assert!(
        circles.is_empty(),
        "files that import each other in a circle (each time, a helper lives in the wrong file: move what both use \
         into a file beneath them, so that a file imports only what is beneath it):\n{}",
        circles.join("\n")
    );
}

/// `a.rs → b.rs → a.rs`, then what each file takes from the next.
fn describe_circle(cycle: &[PathBuf], edges: &imports::Edges) -> String {
    let short = |p: &Path| relative(p);
    let mut line: Vec<String> = cycle.iter().map(|p| short(p)).collect();
    line.push(short(&cycle[0]));
    let mut out = format!("  {}", line.join(" → "));
    for (i, from) in cycle.iter().enumerate() {
        let to = &cycle[(i + 1) % cycle.len()];
        let names: Vec<String> = edges
            .get(&(from.clone(), to.clone()))
            .map(|n| n.iter().map(|n| format!("`{n}`")).collect())
            .unwrap_or_default();
        out.push_str(&format!("\n      {} takes {} from {}", short(from), names.join(", "), short(to)));
    }
    out
}

#[test]
fn the_import_check_resolves_paths_and_follows_re_exports_to_the_defining_file() {
    let dir = tempfile::tempdir().expect("tempdir");
    let files = [
        ("src/lib.rs", "//! root\nmod a;\nmod b;\nmod c;\npub mod d;\nmod e;\npub use c::Shared;\n"),
        ("src/a.rs", "//! a\nuse crate::Shared;\npub fn from_a() -> Shared { Shared }\n"),
        ("src/b.rs", "//! b\nuse super::a::from_a;\npub fn from_b() { from_a(); crate::d::inner::deep(); }\n"),
        ("src/c.rs", "//! c\npub struct Shared;\npub fn uses_b() { super::b::from_b() }\n"),
        ("src/d.rs", "//! d\npub mod inner;\n"),
        ("src/d/inner.rs", "//! inner\npub fn deep() { let _ = format!(\"{:?}\", crate::c::uses_b()); }\n"),
        ("src/e.rs", "//! e\nuse super::c::*;\npub fn made() -> Shared { Shared }\n"),
    ];
    for (path, text) in files {
        let path = dir.path().join(path);
        std::fs::create_dir_all(path.parent().expect("a parent")).expect("mkdir");
        std::fs::write(path, text).expect("write");
    }
    let edges = imports::crate_imports(dir.path()).expect("the crate reads");
    let src = dir.path().join("src");
    let name = |p: &Path| p.strip_prefix(&src).unwrap_or(p).display().to_string();
    let found: Vec<(String, String, Vec<String>)> =
        edges.iter().map(|((from, to), items)| (name(from), name(to), items.iter().cloned().collect())).collect();
    let expected = [
        ("a.rs", "c.rs", "Shared"),
        ("b.rs", "a.rs", "from_a"),
        ("b.rs", "d/inner.rs", "deep"),
        ("c.rs", "b.rs", "from_b"),
        ("d/inner.rs", "c.rs", "uses_b"),
        ("e.rs", "c.rs", "Shared"),
    ]
    .map(|(from, to, item)| (from.to_string(), to.to_string(), vec![item.to_string()]));
    assert_eq!(found, expected, "`pub use` and `mod` are no imports; re-exports, globs and macro paths are followed");
    let circles: Vec<Vec<String>> =
        imports::cycles(&edges).iter().map(|c| c.iter().map(|p| name(p)).collect()).collect();
    assert_eq!(
        circles,
        [["a.rs", "c.rs", "b.rs"], ["b.rs", "d/inner.rs", "c.rs"]].map(|c| c.map(String::from).to_vec()),
        "each file on a circle gives its shortest one"
    );
}
