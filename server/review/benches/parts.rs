//! Splitting a 20 MB change into parts (target: at most 1 s): 2,000 files of about
//! 8 KB in 100 directories and four huge files of about 1 MB, one of them a single
//! generated hunk larger than a part, as the annotated diff numbers them. Split into
//! parts of 1 MiB (the default `--max-diff-bytes`) with room for every part, and
//! under the default cap of 8 parts (the smallest files first, found by bisection).
//!
//! Run with `cargo bench -p conclave-review --bench parts`.

use conclave_review::diff::{Change, ChangedFile, DEFAULT_MAX_DIFF_BYTES, DEFAULT_MAX_PARTS, Head};
use std::fmt::Write as _;
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// One file's annotated diff: `hunks` hunks of `added` added lines, 3 lines of
/// context around each, every line numbered.
fn file_diff(path: &str, hunks: usize, added: usize) -> (ChangedFile, String) {
    let mut text = format!("--- {path} (modified)\n");
    let mut changed = Vec::new();
    for h in 0..hunks {
        let start = 1 + h * (added + 20);
        let _ = writeln!(text, "@@ -{start},{} +{start},{} @@ fn handler_{h}(request: &Request) {{", 6 + 2, added + 6);
        let mut line = start;
        for _ in 0..3 {
            let _ = writeln!(text, " {line:>5} |     let context_{line} = request.field({line});");
            line += 1;
        }
        let _ = writeln!(text, "-      |     let removed = old_call(request, {h});");
        let _ = writeln!(text, "-      |     let removed_too = old_call(request, {h} + 1);");
        changed.push((line as u64, (line + added - 1) as u64));
        for _ in 0..added {
            let _ = writeln!(text, "+{line:>5} |     let value_{line} = compute(request.input_{h}, {line}) + offset;");
            line += 1;
        }
        for _ in 0..3 {
            let _ = writeln!(text, " {line:>5} |     let trailing_{line} = request.field({line});");
            line += 1;
        }
    }
    (ChangedFile { path: path.into(), status: "modified".into(), changed_lines: changed }, text)
}

fn change() -> Change {
    let mut files: Vec<(ChangedFile, String)> =
        (0..2_000).map(|i| file_diff(&format!("src/module{}/file{i}.rs", i % 100), 6, 13)).collect();
    for huge in 0..3 {
        files.push(file_diff(&format!("generated/huge{huge}.rs"), 900, 13));
    }
    files.push(file_diff("generated/one_hunk.rs", 1, 16_000));
    let annotated = files.iter().map(|(_, d)| d.as_str()).collect::<Vec<_>>().join("\n");
    Change {
        root: PathBuf::from("/repo"),
        base: Some("main".into()),
        files: files.into_iter().map(|(f, _)| f).collect(),
        annotated,
        omitted: Vec::new(),
        parts: Vec::new(),
        left_out: Vec::new(),
        head: Head::default(),
        impact: None,
    }
}

fn measure(change: &Change, max_parts: usize) -> (Duration, Change) {
    let mut times = Vec::new();
    let mut last = change.clone();
    for _ in 0..7 {
        let mut run = change.clone();
        let started = Instant::now();
        run.split_into_parts(DEFAULT_MAX_DIFF_BYTES, max_parts).expect("splits");
        times.push(started.elapsed());
        last = run;
    }
    times.sort();
    (times[times.len() / 2], last)
}

fn main() {
    let change = change();
    let mb = change.annotated.len() as f64 / 1e6;
    for (label, max_parts) in [("room for every part", 64), ("the default cap", DEFAULT_MAX_PARTS)] {
        let (median, split) = measure(&change, max_parts);
        println!(
            "{mb:.1} MB over {} files, {label}: median {:.1} ms (target: at most 1000 ms); {} parts, {} hunk(s) left out, {} file(s) beyond the cap",
            change.files.len(),
            median.as_secs_f64() * 1e3,
            split.parts.len(),
            split.left_out.len(),
            split.omitted.len()
        );
    }
}
