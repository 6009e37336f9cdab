//! Building a review's impact for a 40-file change (target: at most 200 ms): a
//! generated repository of 400 files (100 each of Rust, Python, Go and TypeScript,
//! about 100 lines and 12 functions each, every function called from other files,
//! with tests), whose change, in the working tree against `HEAD`, modifies two
//! functions, adds one and removes one in each of 40 files (10 per language). The
//! head's symbol index is built first (its own cost is the symbol crate's bench);
//! then the impact is built as a review builds it: both versions of each changed
//! file (the base's from git's objects), the functions touched, each one's callers
//! and tests, the caps. Median of 9 runs; the index build is printed too.
//!
//! Run with `cargo bench -p conclave-review --bench impact`.

use conclave_review::diff::collect_change;
use conclave_review::impact::{ImpactRequest, build_impact};
use conclave_shared::ImpactSettings;
use conclave_symbols::{Index, IndexOptions};
use std::fmt::Write as _;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

const FILES_PER_LANGUAGE: usize = 100;
const FUNCTIONS: usize = 12;
const CHANGED_PER_LANGUAGE: usize = 10;

fn git(root: &Path, args: &[&str]) {
    let out = Command::new("git").arg("-C").arg(root).args(args).output().expect("git runs");
    assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
}

/// The file `i` calls into from its function `k`.
fn callee(i: usize, k: usize) -> (usize, usize) {
    ((i * 7 + k * 13 + 1) % FILES_PER_LANGUAGE, (k + i) % FUNCTIONS)
}

/// A function body of a few assignments (`declare` starts each, `assign` is the
/// operator), one of them different in a `changed` function.
fn body(lines: &mut String, (declare, assign): (&str, &str), k: usize, changed: bool) {
    for step in 0..4 {
        let delta = if changed && step == 1 { k + 100 } else { k + step };
        let _ = writeln!(lines, "{declare}let_{step}{assign}x + {delta};");
    }
}

fn rust(i: usize, head: bool) -> String {
    let mut out = format!("//! Module {i}.\n\n");
    for k in 0..FUNCTIONS {
        if head && k == FUNCTIONS - 1 {
            continue;
        }
        let (j, k2) = callee(i, k);
        let _ = writeln!(out, "/// Step {k}.\npub fn f{i}_{k}(x: u64) -> u64 {{");
        body(&mut out, ("    let ", " = "), k, head && k < 2);
        let _ = writeln!(out, "    crate::m{j}::f{j}_{k2}(let_3)\n}}\n");
    }
    if head {
        let _ = writeln!(out, "pub fn added_{i}(x: u64) -> u64 {{\n    f{i}_2(x) + f{i}_3(x)\n}}\n");
    }
    let _ = writeln!(
        out,
        "#[cfg(test)]\nmod tests {{\n    #[test]\n    fn first() {{\n        assert_eq!(super::f{i}_0(1), 2);\n    }}\n}}"
    );
    out
}

fn python(i: usize, head: bool) -> String {
    let mut out = format!("\"\"\"Module {i}.\"\"\"\n\n");
    for k in 0..FUNCTIONS {
        if head && k == FUNCTIONS - 1 {
            continue;
        }
        let (j, k2) = callee(i, k);
        let _ = writeln!(out, "from pkg import m{j}\n\n\ndef f{i}_{k}(x):");
        body(&mut out, ("    ", " = "), k, head && k < 2);
        let _ = writeln!(out, "    return m{j}.f{j}_{k2}(let_3)\n\n");
    }
    if head {
        let _ = writeln!(out, "def added_{i}(x):\n    return f{i}_2(x) + f{i}_3(x)\n\n");
    }
    let _ = writeln!(out, "def test_first():\n    assert f{i}_0(1) == 2");
    out
}

fn go(i: usize, head: bool) -> String {
    let mut out = format!("package g{i}\n\n");
    for k in 0..FUNCTIONS {
        if head && k == FUNCTIONS - 1 {
            continue;
        }
        let (j, k2) = callee(i, k);
        let _ = writeln!(out, "// F{i}_{k} is step {k}.\nfunc F{i}_{k}(x int) int {{");
        body(&mut out, ("\t", " := "), k, head && k < 2);
        let _ = writeln!(out, "\treturn g{j}.F{j}_{k2}(let_3)\n}}\n");
    }
    if head {
        let _ = writeln!(out, "func Added{i}(x int) int {{\n\treturn F{i}_2(x) + F{i}_3(x)\n}}\n");
    }
    out
}

fn typescript(i: usize, head: bool) -> String {
    let mut out = String::new();
    for k in 0..FUNCTIONS {
        if head && k == FUNCTIONS - 1 {
            continue;
        }
        let (j, k2) = callee(i, k);
        let _ = writeln!(out, "import {{ f{j}_{k2} }} from \"./m{j}.js\";");
        let _ = writeln!(out, "/** Step {k}. */\nexport function f{i}_{k}(x: number): number {{");
        body(&mut out, ("  const ", " = "), k, head && k < 2);
        let _ = writeln!(out, "  return f{j}_{k2}(let_3);\n}}\n");
    }
    if head {
        let _ = writeln!(out, "export function added{i}(x: number): number {{\n  return f{i}_2(x) + f{i}_3(x);\n}}\n");
    }
    out
}

/// Writes every file, `head` or base version, under `root`.
fn write_files(root: &Path, head: bool) {
    for i in 0..FILES_PER_LANGUAGE {
        let changed = head && i < CHANGED_PER_LANGUAGE;
        let files = [
            (format!("src/m{i}.rs"), rust(i, changed)),
            (format!("pkg/m{i}.py"), python(i, changed)),
            (format!("g{i}/g.go"), go(i, changed)),
            (format!("ts/m{i}.ts"), typescript(i, changed)),
        ];
        for (path, text) in files {
            let path = root.join(path);
            std::fs::create_dir_all(path.parent().expect("a parent")).expect("mkdir");
            std::fs::write(path, text).expect("write");
        }
    }
}

fn median(mut times: Vec<Duration>) -> f64 {
    times.sort();
    times[times.len() / 2].as_secs_f64() * 1e3
}

fn main() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path();
    git(root, &["init", "-q", "-b", "main"]);
    write_files(root, false);
    git(root, &["add", "-A"]);
    git(root, &["-c", "user.name=bench", "-c", "user.email=bench@example.com", "commit", "-q", "-m", "base"]);
    write_files(root, true);
    let change = collect_change(root, None).expect("git").expect("a change");
    let files = change.files.len();
    let options = IndexOptions { cache_dir: None, ..IndexOptions::default() };
    let started = Instant::now();
    let index = Index::build(root, &options).expect("indexes");
    let index_ms = started.elapsed().as_secs_f64() * 1e3;
    let head = Command::new("git").arg("-C").arg(root).args(["rev-parse", "HEAD"]).output().expect("git");
    let base = String::from_utf8_lossy(&head.stdout).trim().to_string();
    let request = ImpactRequest {
        root,
        base_commit: Some(&base),
        files: &change.files,
        allow: &[],
        settings: ImpactSettings::default(),
    };
    let mut times = Vec::new();
    let mut last = None;
    for _ in 0..9 {
        let started = Instant::now();
        let impact = build_impact(&request, Ok(&index));
        times.push(started.elapsed());
        last = Some(impact);
    }
    let record = last.expect("built").record;
    println!(
        "impact of a {files}-file change in a {}-file repository ({} definitions, {} references): median {:.1} ms \
         (target: at most 200 ms); {} functions, {} callers and {} tests found, {} / {} / {} given ({} bytes); \
         the index took {index_ms:.0} ms",
        index.report().files_indexed,
        index.report().definitions,
        index.report().references,
        median(times),
        record.found.functions,
        record.found.callers,
        record.found.tests,
        record.given.functions,
        record.given.callers,
        record.given.tests,
        record.bytes
    );
}
