//! `conclave symbols`, the real binary, on the fixture repositories of
//! `tests/fixtures/symbols/` (copied into git repositories): definitions, call sites
//! and outlines in each language, JSON for scripts, the cache, and the refusals and
//! errors a person sees (a path out of the repository, no such repository).

use conclave_testkit::workspace::git;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

struct Repo {
    dir: tempfile::TempDir,
    cache: tempfile::TempDir,
}

/// The fixture of `lang` as a committed git repository.
fn repo(lang: &str) -> Repo {
    let dir = tempfile::tempdir().expect("tempdir");
    let from = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/symbols").join(lang);
    copy(&from, dir.path());
    git(dir.path(), &["init", "-q"]);
    git(dir.path(), &["add", "-A"]);
    git(dir.path(), &["commit", "-q", "-m", "shop"]);
    Repo { dir, cache: tempfile::tempdir().expect("tempdir") }
}

fn copy(from: &Path, to: &Path) {
    for entry in std::fs::read_dir(from).expect("read fixture").flatten() {
        let target = to.join(entry.file_name());
        if entry.path().is_dir() {
            std::fs::create_dir_all(&target).expect("mkdir");
            copy(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).expect("copy");
        }
    }
}

impl Repo {
    fn run(&self, args: &[&str]) -> Output {
        Command::new(env!("CARGO_BIN_EXE_conclave"))
            .arg("symbols")
            .arg(self.dir.path())
            .args(args)
            .env("CONCLAVE_SYMBOLS_CACHE", self.cache.path())
            .output()
            .expect("conclave runs")
    }

    /// Stdout's lines of a run that must succeed.
    fn lines(&self, args: &[&str]) -> Vec<String> {
        let out = self.run(args);
        assert_eq!(out.status.code(), Some(0), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stdout).lines().map(str::to_string).collect()
    }

    /// Exit code and stderr of a run that must fail.
    fn fails(&self, args: &[&str]) -> (Option<i32>, String) {
        let out = self.run(args);
        assert!(out.stdout.is_empty(), "{args:?}: {}", String::from_utf8_lossy(&out.stdout));
        (out.status.code(), String::from_utf8_lossy(&out.stderr).trim().to_string())
    }
}

#[test]
fn definitions_and_callers_in_every_language() {
    let cases: [(&str, &str, &str, [&str; 3]); 5] = [
        (
            "rust",
            "format_price",
            "src/money.rs:4-6 function: pub fn format_price(cents: u32) -> String {",
            [
                "src/cart.rs:18 call in line: crate::money::format_price(price)",
                "src/lib.rs:10 call in checkout: format_price(total)",
                "src/report.rs:3 call in render: super::format_price(total)",
            ],
        ),
        (
            "python",
            "format_price",
            "shop/money.py:5-6 function: def format_price(cents):",
            [
                "main.py:8 call in checkout: return format_price(total)",
                "shop/cart.py:18 call in line: return format_price(price)",
                "shop/report.py:6 call in render: return money.format_price(total)",
            ],
        ),
        (
            "go",
            "FormatPrice",
            "money/money.go:10-12 function: func FormatPrice(cents int) string {",
            [
                "cart/cart.go:29 call in Render: out += money.FormatPrice(p)",
                "main.go:13 call in checkout: return money.FormatPrice(c.Total())",
                "report/report.go:8 call in Render: return money.FormatPrice(total)",
            ],
        ),
        (
            "typescript",
            "formatPrice",
            "src/money.ts:6-8 function: export function formatPrice(cents: Cents): string {",
            [
                "src/cart.ts:22 call in line: return formatPrice(price);",
                "src/index.ts:9 call in checkout: return formatPrice(total);",
                "src/report.ts:5 call in render: return formatPrice(total);",
            ],
        ),
        (
            "javascript",
            "formatPrice",
            "src/money.js:4-6 function: export function formatPrice(cents) {",
            [
                "src/cart.js:19 call in line: const line = (price) => formatPrice(price);",
                "src/index.js:9 call in checkout: return formatPrice(total);",
                "src/report.js:4 call in render: export const render = (total) => formatPrice(total);",
            ],
        ),
    ];
    for (lang, name, definition, calls) in cases {
        let repo = repo(lang);
        assert_eq!(repo.lines(&["--definition", name]), [definition], "{lang}");
        let references = repo.lines(&["--references", name]);
        assert_eq!(references[..3], calls, "{lang}: the call sites come first");
        assert!(references[3..].iter().all(|r| r.contains(" use")), "{lang}: then the other uses: {references:?}");
    }
}

#[test]
fn methods_nested_functions_re_exports_and_near() {
    let repo = repo("rust");
    assert_eq!(
        repo.lines(&["--definition", "Cart::total"]),
        ["src/cart.rs:7-9 method in Cart: pub fn total(&self) -> u32 {"]
    );
    assert_eq!(
        repo.lines(&["--definition", "line"]),
        ["src/cart.rs:17-19 function in render: fn line(price: u32) -> String {"]
    );
    let uses: Vec<String> =
        repo.lines(&["--references", "format_price"]).into_iter().filter(|l| l.contains(" use")).collect();
    assert_eq!(uses, ["src/lib.rs:6 use: pub use money::format_price;"]);
    for (near, first) in [("src/report.rs", "src/report.rs:2-4"), ("src/cart.rs", "src/cart.rs:16-21")] {
        let found = repo.lines(&["--definition", "render", "--near", near]);
        assert_eq!(found.len(), 2);
        assert!(found[0].starts_with(first), "near {near}: {found:?}");
    }
    assert_eq!(
        repo.lines(&["--outline", "src/cart.rs"]),
        [
            "2-4 type Cart",
            "7-9 method Cart::total",
            "11-13 method Cart::add",
            "16-21 function render",
            "17-19 function render::line",
        ]
    );
}

#[test]
fn json_for_scripts_and_the_cache_for_the_second_run() {
    let repo = repo("python");
    let first: Value =
        serde_json::from_slice(&repo.run(&["--definition", "total", "--format", "json"]).stdout).expect("json");
    assert_eq!(first["definitions"][0]["file"], "shop/cart.py");
    assert_eq!(first["definitions"][0]["kind"], "method");
    assert_eq!(first["definitions"][0]["container"], "Cart");
    assert_eq!((first["report"]["parsed"].as_u64(), first["report"]["from_cache"].as_u64()), (Some(5), Some(0)));
    std::fs::write(repo.dir.path().join("shop/report.py"), "def render(total):\n    return str(total)\n")
        .expect("edit");
    let second: Value =
        serde_json::from_slice(&repo.run(&["--references", "format_price", "--format", "json"]).stdout).expect("json");
    assert_eq!(second["report"]["parsed_named"], serde_json::json!(["shop/report.py"]), "{}", second["report"]);
    assert_eq!(second["report"]["from_cache"], 4);
    let callers: Vec<&str> = second["references"]
        .as_array()
        .expect("a list")
        .iter()
        .filter(|r| r["call"] == true)
        .map(|r| r["file"].as_str().unwrap_or(""))
        .collect();
    assert_eq!(callers, ["main.py", "shop/cart.py"], "the edited file no longer calls it");
}

#[test]
fn paths_out_of_the_repository_are_refused() {
    let repo = repo("go");
    let outside = tempfile::tempdir().expect("tempdir");
    std::fs::write(outside.path().join("secret.go"), "package secret\nfunc Secret() {}\n").expect("write");
    std::os::unix::fs::symlink(outside.path().join("secret.go"), repo.dir.path().join("link.go")).expect("symlink");
    let secret = outside.path().join("secret.go").display().to_string();
    for (path, says) in [
        ("../secret.go", "climbs out of the repository with `..`"),
        (secret.as_str(), "is outside the repository"),
        ("link.go", "leads outside the repository (through a symlink)"),
        ("/proc/self/environ", "is a system path outside the repository"),
    ] {
        let (code, stderr) = repo.fails(&["--outline", path]);
        assert_eq!(code, Some(2), "{path}: {stderr}");
        assert!(stderr.starts_with("error: `") && stderr.contains(says), "{path}: {stderr}");
    }
    assert!(
        repo.fails(&["--definition", "Secret"]).1.starts_with("no definition of `Secret` in the 4 indexed files of")
    );
    let (code, stderr) = repo.fails(&["--outline", "go.mod"]);
    assert_eq!(
        (code, stderr.as_str()),
        (
            Some(2),
            "error: `go.mod` is not in the symbol index: no grammar for its language (Rust, Python, Go, TypeScript and JavaScript are indexed)"
        )
    );
}

#[test]
fn errors_say_what_and_where() {
    let missing = PathBuf::from("/nonexistent/repo");
    let out = Command::new(env!("CARGO_BIN_EXE_conclave"))
        .args(["symbols", "/nonexistent/repo", "--definition", "x"])
        .output()
        .expect("conclave runs");
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.starts_with(&format!("error: cannot index `{}`: ", missing.display())), "{stderr}");
    assert!(stderr.contains("give the path of a repository's directory"), "{stderr}");
    let out = Command::new(env!("CARGO_BIN_EXE_conclave")).args(["symbols", "."]).output().expect("conclave runs");
    assert_eq!(out.status.code(), Some(2), "a query is required");
    assert!(String::from_utf8_lossy(&out.stderr).contains("--definition <NAME>|--references <NAME>|--outline <FILE>"));
}
