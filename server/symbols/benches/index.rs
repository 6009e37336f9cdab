//! The symbol index's speed: this repository indexed cold (goal ≤ 3 s), a generated
//! repository of 200,000 lines indexed cold (goal ≤ 20 s) with its peak memory, and
//! a re-index after one changed file with the cache (goal ≤ 100 ms), each the median
//! of a few runs, with the load average (the machine is shared).
//!
//! The generated repository is indexed in a child process (this binary again), so
//! its peak resident size (`VmHWM`) is its own.
//!
//! Run with `cargo bench -p conclave-symbols`.

use conclave_symbols::{Index, IndexOptions};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// The child's argument: index the repository at the path that follows.
const CHILD: &str = "--index-in-child";
/// Runs of each measure; the median is reported.
const RUNS: usize = 5;
/// Lines of the generated repository.
const LINES: usize = 200_000;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if let Some(at) = args.iter().position(|a| a == CHILD) {
        return child(Path::new(&args[at + 1]));
    }
    println!("load average at start: {}", load());
    let this = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let cold = median(|| timed(|| Index::build(&this, &IndexOptions::default())).0);
    let index = Index::build(&this, &IndexOptions::default()).expect("this repository indexes");
    let report = index.report();
    println!(
        "this repository, cold: {} ms median of {RUNS} (goal 3000 ms): {} files, {} definitions, {} references",
        cold.as_millis(),
        report.files_indexed,
        report.definitions,
        report.references
    );
    let generated = tempfile::tempdir().expect("tempdir");
    let files = generate(generated.path(), LINES);
    let mut children: Vec<(Duration, u64)> = (0..3).map(|_| index_in_child(generated.path())).collect();
    children.sort();
    let (took, peak_kb) = children[1];
    println!(
        "generated repository ({LINES} lines, {files} files in 5 languages), cold: {} ms median of 3 (goal 20000 ms); peak resident {} MB",
        took.as_millis(),
        peak_kb / 1024
    );
    for (name, root) in [("this repository", this.as_path()), ("the generated repository", generated.path())] {
        let again = reindex_after_one_change(root);
        println!("{name}, re-index after one changed file: {} ms median of {RUNS} (goal 100 ms)", again.as_millis());
    }
    println!("load average at end: {}", load());
}

/// Builds the index of `root` in a fresh process; its time and peak resident KB.
fn index_in_child(root: &Path) -> (Duration, u64) {
    let exe = std::env::current_exe().expect("this bench's path");
    let out = Command::new(exe).arg(CHILD).arg(root).output().expect("the child runs");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}{}", String::from_utf8_lossy(&out.stderr));
    let mut fields = text.split_whitespace().map(|f| f.parse::<u64>().expect("numbers"));
    (Duration::from_micros(fields.next().unwrap_or(0)), fields.next().unwrap_or(0))
}

fn child(root: &Path) {
    let (took, index) = timed(|| Index::build(root, &IndexOptions::default()));
    let index = index.expect("the generated repository indexes");
    assert!(index.report().definitions > 0);
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let peak = status.lines().find_map(|l| l.strip_prefix("VmHWM:")).unwrap_or("0 kB");
    println!("{} {}", took.as_micros(), peak.trim().trim_end_matches(" kB"));
}

/// The median time to re-index `root` (copied, with a warm cache and its record)
/// after one file changed, each run changing another file: the unchanged files are
/// stat hits, the changed one is read, hashed and parsed, and a delta is written.
fn reindex_after_one_change(root: &Path) -> Duration {
    let copy = tempfile::tempdir().expect("tempdir");
    let cache = tempfile::tempdir().expect("tempdir");
    let sandbox = conclave_sandbox::paths::Sandbox::new(root, &[]).expect("sandbox");
    let mut sources = Vec::new();
    for path in sandbox.visible_files() {
        let to = copy.path().join(&path);
        std::fs::create_dir_all(to.parent().expect("a parent")).expect("mkdir");
        std::fs::copy(root.join(&path), &to).expect("copy");
        if conclave_symbols::language_of(&path).is_some() {
            sources.push(to);
        }
    }
    let options = IndexOptions { cache_dir: Some(cache.path().to_path_buf()), ..IndexOptions::default() };
    // A repository's files are older than its record between reviews: wait out the
    // racy window (2 s) the fresh copies are in, else every run hashes every file.
    std::thread::sleep(Duration::from_millis(2_100));
    Index::build(copy.path(), &options).expect("index");
    let mut runs = 0;
    median(|| {
        runs += 1;
        let file = &sources[runs * 7 % sources.len()];
        let mut text = std::fs::read_to_string(file).unwrap_or_default();
        text.push_str(&format!("\n// changed {runs}\n"));
        std::fs::write(file, text).expect("change");
        let (took, index) = timed(|| Index::build(copy.path(), &options));
        assert_eq!(index.expect("index").report().parsed, 1, "only the changed file is parsed");
        took
    })
}

/// Writes a repository of about `lines` lines: modules of functions in five
/// languages calling each other; the number of files.
fn generate(root: &Path, lines: usize) -> usize {
    let per_file = 200;
    let files = lines / per_file;
    for f in 0..files {
        let (dir, ext) = ["rs", "py", "go", "ts", "js"].map(|e| (format!("{e}/m{}", f / 50), e))[f % 5].clone();
        std::fs::create_dir_all(root.join(&dir)).expect("mkdir");
        let header = if ext == "go" { format!("package m{}\n\n", f / 50) } else { String::new() };
        let body: String = (0..per_file / 10).map(|i| function(ext, f, i)).collect();
        let body = header + &body;
        std::fs::write(root.join(format!("{dir}/f{f}.{ext}")), body).expect("write");
    }
    files
}

/// One ten-line function of file `f` in language `ext`, calling two others.
fn function(ext: &str, f: usize, i: usize) -> String {
    let (a, b) = (format!("f{}_{}", (f + 1) % 997, i), format!("f{}_{}", (f + 3) % 997, (i + 1) % 20));
    match ext {
        "rs" => format!(
            "/// Function {i}.\npub fn f{f}_{i}(x: u64) -> u64 {{\n    let y = x + {i};\n    if y > 10 {{\n        return {a}(y);\n    }}\n    let z = {b}(y * 2);\n    z + 1\n}}\n\n"
        ),
        "py" => format!(
            "def f{f}_{i}(x):\n    \"\"\"Function {i}.\"\"\"\n    y = x + {i}\n    if y > 10:\n        return {a}(y)\n    z = {b}(y * 2)\n    w = z + 1\n    return w\n\n\n"
        ),
        "go" => format!(
            "// F{f}_{i} is function {i}.\nfunc f{f}_{i}(x int) int {{\n\ty := x + {i}\n\tif y > 10 {{\n\t\treturn {a}(y)\n\t}}\n\tz := {b}(y * 2)\n\treturn z + 1\n}}\n\n"
        ),
        _ => format!(
            "// Function {i}.\nexport function f{f}_{i}(x) {{\n  const y = x + {i};\n  if (y > 10) {{\n    return {a}(y);\n  }}\n  const z = {b}(y * 2);\n  return z + 1;\n}}\n\n"
        ),
    }
}

fn timed<T>(work: impl FnOnce() -> T) -> (Duration, T) {
    let started = Instant::now();
    let out = work();
    (started.elapsed(), out)
}

fn median(mut run: impl FnMut() -> Duration) -> Duration {
    let mut times: Vec<Duration> = (0..RUNS).map(|_| run()).collect();
    times.sort();
    times[RUNS / 2]
}

fn load() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .unwrap_or_default()
        .split_whitespace()
        .take(3)
        .collect::<Vec<_>>()
        .join(" ")
}
