//! The code's own rules, checked on every test run: each crate depends only on what
//! ARCHITECTURE.md says it may know (read from `cargo tree`), `conclave-shared`
//! builds for the browser with serde and serde_json alone, the release binary has no
//! test doubles, every source file opens with a `//!` header, and no function in the
//! server or the editor runs past 80 lines.

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
    ("conclave-core", &["reqwest", "axum", "llama-cpp-2", "clap", "jsonschema", "conclave-schema", "metrics"]),
    ("conclave-catalog", &["tokio", "reqwest", "axum", "llama-cpp-2", "clap", "conclave-core", "metrics"]),
    // The engine records metrics through the `metrics` facade and spans through
    // `tracing`; the exporters are the binary's business.
    (
        "conclave-engine",
        &[
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
    ("conclave-providers", &["axum", "clap", "conclave-engine", "conclave-review", "conclave-store", "metrics"]),
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
        ],
    ),
];

/// conclave-store's own limits: it is reached by the server only.
const STORE_FORBIDDEN: &[&str] =
    &["reqwest", "axum", "llama-cpp-2", "clap", "conclave-engine", "conclave-review", "metrics"];

/// The longest a function may be, in lines, outside `view!` blocks.
const MAX_FUNCTION_LINES: usize = 80;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
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
    let expected: BTreeSet<String> = ["conclave-shared", "serde", "serde_json"].map(String::from).into();
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
