//! Splitting a change too large for one call into parts: directories kept together
//! while they fit, a file too large for a part split by whole hunks under its
//! header, a hunk larger than a part left out, and under a cap on parts the smallest
//! files reviewed first.

use conclave_review::diff::parts::{FileDiff, split};
use conclave_review::diff::{Change, ChangedFile, Head, LeftOutHunk, OmittedFile};
use std::fmt::Write as _;
use std::path::PathBuf;

/// A file's annotated diff: its header, then one hunk per `(first line, added lines)`,
/// each added line `width` characters of text.
fn annotated(path: &str, hunks: &[(u64, u64)], width: usize) -> (ChangedFile, String) {
    let mut text = format!("--- {path} (modified)\n");
    let mut changed = Vec::new();
    for &(start, lines) in hunks {
        let _ = writeln!(text, "@@ -{start},0 +{start},{lines} @@ fn f() {{");
        for line in start..start + lines {
            let _ = writeln!(text, "+{line:>5} | {}", "x".repeat(width));
        }
        changed.push((start, start + lines - 1));
    }
    (ChangedFile { path: path.into(), status: "modified".into(), changed_lines: changed }, text)
}

fn diffs(files: &[(ChangedFile, String)]) -> Vec<FileDiff<'_>> {
    files.iter().map(|(file, diff)| FileDiff { file, diff }).collect()
}

fn paths(part: &conclave_review::diff::Part) -> Vec<&str> {
    part.files.iter().map(|f| f.path.as_str()).collect()
}

#[test]
fn a_directory_stays_in_one_part_while_it_fits_and_directories_go_in_path_order() {
    let files = [
        annotated("b/two.rs", &[(1, 3)], 40),
        annotated("a/one.rs", &[(1, 6)], 40),
        annotated("b/one.rs", &[(1, 3)], 40),
        annotated("c.rs", &[(1, 3)], 40),
    ];
    let sizes: Vec<usize> = files.iter().map(|(_, d)| d.len() + 1).collect();
    // Room for `a/one.rs` and `c.rs`, not for `a/one.rs` and both of `b/`.
    let part_bytes = sizes[1] + sizes[3] + 10;
    let split = split(&diffs(&files), part_bytes, 8);
    let grouped: Vec<Vec<&str>> = split.parts.iter().map(paths).collect();
    assert_eq!(grouped, [vec!["c.rs", "a/one.rs"], vec!["b/one.rs", "b/two.rs"]], "the root first, then a/, then b/");
    assert_eq!(split.parts.iter().map(|p| p.part.as_str()).collect::<Vec<_>>(), ["1 of 2", "2 of 2"]);
    assert!(split.parts.iter().all(|p| p.diff.len() <= part_bytes));
    assert!(split.left_out.is_empty() && split.not_reviewed.is_empty());
    assert_eq!(
        split.parts[1].diff,
        format!("{}\n{}", files[2].1, files[0].1),
        "whole files, joined as the diff joins them"
    );
}

#[test]
fn a_file_too_large_for_a_part_is_split_by_whole_hunks_under_its_header_and_only_a_huge_hunk_is_left_out() {
    let hunks: Vec<(u64, u64)> = (0..10).map(|k| (k * 100 + 1, 4)).chain([(2000, 40)]).collect();
    let files = [annotated("src/big.rs", &hunks, 30)];
    let part_bytes = 600;
    let split = split(&diffs(&files), part_bytes, 8);
    assert!(split.parts.len() >= 2, "{}", split.parts.len());
    let mut seen_hunks = Vec::new();
    for part in &split.parts {
        assert!(part.diff.len() <= part_bytes, "{} bytes", part.diff.len());
        assert!(part.diff.starts_with("--- src/big.rs (modified)\n@@ "), "a valid section: {}", part.diff);
        let mut lines = part.diff.lines().skip(1).peekable();
        while let Some(header) = lines.next() {
            assert!(header.starts_with("@@ -"), "{header}");
            let new = header.split(' ').nth(2).and_then(|n| n.strip_prefix('+'));
            let added = new.and_then(|n| n.split_once(',')).map(|(s, n)| (s.to_string(), n));
            let (start, count) = added.expect("a hunk header");
            let count: usize = count.parse().expect("a count");
            let body: Vec<&str> = (0..count).filter_map(|_| lines.next()).collect();
            assert_eq!(body.len(), count, "the whole hunk");
            assert!(body[0].starts_with(&format!("+{start:>5} | ")), "numbered as the annotated diff: {}", body[0]);
            seen_hunks.push(start.parse::<u64>().expect("a line"));
        }
        let file = &part.files[0];
        assert!(
            file.changed_lines.iter().all(|&(a, _)| part.diff.contains(&format!("+{a:>5} | "))),
            "a piece names only its own changed lines: {:?}",
            file.changed_lines
        );
    }
    let expected: Vec<u64> = (0..10).map(|k| k * 100 + 1).collect();
    assert_eq!(seen_hunks, expected, "every hunk but the huge one, once, in order");
    let huge = files[0].1.find("@@ -2000").map(|at| files[0].1.len() - at).expect("the huge hunk");
    assert_eq!(split.left_out, [LeftOutHunk { path: "src/big.rs".into(), lines: (2000, 2039), diff_bytes: huge }]);
}

#[test]
fn beyond_the_cap_on_parts_the_smallest_files_are_reviewed_and_the_rest_listed_largest_first() {
    let files = [
        annotated("a/medium.rs", &[(1, 8)], 40),
        annotated("b/largest.rs", &[(1, 12)], 40),
        annotated("c/smallest.rs", &[(1, 2)], 40),
        annotated("d/small.rs", &[(1, 4)], 40),
    ];
    // Each file fills a part of its own.
    let part_bytes = files.iter().map(|(_, d)| d.len() + 1).max().expect("files") + 1;
    let all = split(&diffs(&files), part_bytes, 8);
    assert_eq!(all.parts.len(), 3, "two small files share a part");
    let capped = split(&diffs(&files), part_bytes, 2);
    let reviewed: Vec<Vec<&str>> = capped.parts.iter().map(paths).collect();
    assert_eq!(reviewed, [vec!["a/medium.rs", "c/smallest.rs"], vec!["d/small.rs"]], "in path order");
    let size = |i: usize| files[i].1.len();
    assert_eq!(capped.not_reviewed, [OmittedFile { path: "b/largest.rs".into(), diff_bytes: size(1) }]);
    let one = split(&diffs(&files), part_bytes, 1);
    assert_eq!(one.parts.iter().map(paths).collect::<Vec<_>>(), [vec!["c/smallest.rs", "d/small.rs"]]);
    let listed: Vec<&str> = one.not_reviewed.iter().map(|f| f.path.as_str()).collect();
    assert_eq!(listed, ["b/largest.rs", "a/medium.rs"], "largest first");
}

#[test]
fn a_change_split_into_parts_is_read_back_from_its_run_input_and_one_that_fits_is_untouched() {
    let files = [annotated("a/one.rs", &[(1, 20)], 40), annotated("b/two.rs", &[(1, 20)], 40)];
    let change = Change {
        root: PathBuf::from("/repo"),
        base: Some("main".into()),
        files: files.iter().map(|(f, _)| f.clone()).collect(),
        annotated: files.iter().map(|(_, d)| d.as_str()).collect::<Vec<_>>().join("\n"),
        omitted: vec![],
        parts: vec![],
        left_out: vec![],
        head: Head::default(),
        impact: None,
    };
    let mut fits = change.clone();
    fits.split_into_parts(change.annotated.len() + 1, 8).expect("fits");
    assert_eq!(fits.run_input(), change.run_input(), "a change that fits is reviewed exactly as before");

    let mut split = change.clone();
    split.split_into_parts(files[0].1.len() + 10, 8).expect("splits");
    assert_eq!(split.parts.len(), 2);
    let input = split.run_input();
    assert_eq!(input["parts"][1]["diff"], files[1].1.trim_end_matches('\n').to_string() + "\n");
    assert!(input["diff"].as_str().is_some_and(|d| d.contains("split into 2 parts")), "{}", input["diff"]);
    let back = Change::from_run_input(&input).expect("a review input");
    assert_eq!(back.parts, split.parts);
    assert_eq!(back.run_input(), input, "the same parts again: a worker or a resumed run rebuilds them");

    let mut tiny = change.clone();
    let error = tiny.split_into_parts(60, 8).expect_err("no hunk fits");
    assert!(error.to_string().starts_with("the change is too large to review: the smallest hunk is"), "{error}");
}

#[test]
fn the_policy_merges_parts_findings_the_same_issue_across_a_boundary_once_and_recounts() {
    use conclave_engine::OutputPolicy;
    use serde_json::json;
    let finding = |file: &str, line: u64, severity: &str, description: &str| json!({"file": file, "line": line, "severity": severity, "description": description});
    let leak = "The handle opened here is never closed when the parse fails, leaking a descriptor.";
    let answer = |items: Vec<serde_json::Value>, summary: &str| json!({"findings": items, "counts": {"blocker": 0, "major": 9, "minor": 9}, "summary": summary});
    let first = answer(
        vec![finding("src/big.rs", 120, "major", leak), finding("a/one.rs", 3, "minor", "A name shadows the import.")],
        "part one",
    );
    // The same leak, seen again by the next part near the boundary of the split file.
    let second =
        answer(vec![finding("src/big.rs", 121, "major", leak), finding("b/two.rs", 9, "major", "Off by one.")], "two");
    let merged = conclave_review::ReviewPolicy::default().merge_parts(
        vec![first, second],
        "findings",
        &["part 3 of 3: the provider refused the key".to_string()],
    );
    let places: Vec<(String, u64)> = merged["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .map(|f| (f["file"].as_str().unwrap_or_default().to_string(), f["line"].as_u64().unwrap_or(0)))
        .collect();
    assert_eq!(places, [("src/big.rs".into(), 120), ("a/one.rs".into(), 3), ("b/two.rs".into(), 9)]);
    assert_eq!(merged["counts"], json!({"blocker": 0, "major": 2, "minor": 1}), "counts of the merged findings");
    assert_eq!(merged["summary"], "part one", "the first part's other fields stand");
    assert_eq!(
        merged["parts"],
        json!({"requested": 3, "answered": 2, "failed": ["part 3 of 3: the provider refused the key"]})
    );
}
