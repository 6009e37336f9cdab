//! The review's impact on real git repositories: a renamed function keeps the
//! callers that still use its old name; files that cannot be parsed (binary, not
//! UTF-8, beyond the grammar's repair) are skipped and counted, never an error; a
//! change of hundreds of functions stays within the caps and says what it left out;
//! and a review whose conclave turns impact off, or whose change has no code, gives
//! none.

use conclave_review::diff::collect_change;
use conclave_review::impact::{ChangeImpact, ChangeKind, ImpactRequest, build_impact, without_impact};
use conclave_shared::ImpactSettings;
use conclave_symbols::{Index, IndexOptions};
use conclave_testkit::git;
use std::path::Path;

fn write(root: &Path, path: &str, bytes: &[u8]) {
    let path = root.join(path);
    std::fs::create_dir_all(path.parent().expect("a parent")).expect("mkdir");
    std::fs::write(path, bytes).expect("write");
}

/// A repository with `base` committed, then `head` written over it (and files of
/// `gone` deleted) in the working tree; the impact of that change with `settings`.
fn impact_of(base: &[(&str, &[u8])], head: &[(&str, &[u8])], gone: &[&str], settings: ImpactSettings) -> ChangeImpact {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path();
    git(root, &["init", "-q", "-b", "main"]);
    for (path, bytes) in base {
        write(root, path, bytes);
    }
    git(root, &["add", "-A"]);
    git(root, &["commit", "-q", "-m", "base"]);
    for (path, bytes) in head {
        write(root, path, bytes);
    }
    for path in gone {
        std::fs::remove_file(root.join(path)).expect("remove");
    }
    let change = collect_change(root, None).expect("git").expect("a change");
    let index = Index::build(root, &IndexOptions { cache_dir: None, ..IndexOptions::default() }).expect("indexes");
    let head = String::from_utf8(
        std::process::Command::new("git").arg("-C").arg(root).args(["rev-parse", "HEAD"]).output().expect("git").stdout,
    )
    .expect("utf-8");
    let request = ImpactRequest { root, base_commit: Some(head.trim()), files: &change.files, allow: &[], settings };
    build_impact(&request, Ok(&index))
}

#[test]
fn a_renamed_function_lists_the_callers_still_using_its_old_name() {
    let lib_base = b"pub fn page_count(total: usize, size: usize) -> usize {\n    (total + size - 1) / size\n}\n";
    let lib_head = b"pub fn pages(total: usize, size: usize) -> usize {\n    total.div_ceil(size)\n}\n";
    let main = b"fn main() {\n    let n = mylib::page_count(10, 3);\n    println!(\"{n}\");\n}\n";
    let got = impact_of(
        &[("src/lib.rs", lib_base), ("src/main.rs", main)],
        &[("src/lib.rs", lib_head)],
        &[],
        ImpactSettings::default(),
    );
    let impact = got.impact.expect("an impact");
    let removed = impact.functions.iter().find(|f| f.name == "page_count").expect("the old name");
    assert_eq!(removed.change, ChangeKind::Removed);
    assert_eq!((removed.file.as_str(), removed.lines), ("src/lib.rs", [1, 3]));
    let callers: Vec<(&str, u32)> = removed.callers.iter().map(|c| (c.file.as_str(), c.line)).collect();
    assert_eq!(callers, [("src/main.rs", 2)], "the caller still using the old name");
    let added = impact.functions.iter().find(|f| f.name == "pages").expect("the new name");
    assert_eq!(added.change, ChangeKind::Added);
    assert!(added.callers.is_empty());
}

#[test]
fn unparseable_files_are_skipped_and_counted_and_the_rest_is_given() {
    let lib = b"pub fn total(xs: &[u64]) -> u64 {\n    xs.iter().sum()\n}\n";
    let lib_head = b"pub fn total(xs: &[u64]) -> u64 {\n    xs.iter().copied().sum()\n}\n";
    let caller = b"pub fn report(xs: &[u64]) -> String {\n    format!(\"{}\", crate::lib::total(xs))\n}\n";
    let binary: &[u8] = b"\x7fELF\0\0\0\x01fn main() {}\n";
    let latin1: &[u8] = b"def caf\xe9():\n    return 1\n";
    let broken: &[u8] = b"func ((( {{{ ]]] package\n\x01\x02 ))) func\n";
    let got = impact_of(
        &[("src/lib.rs", lib), ("src/report.rs", caller)],
        &[
            ("src/lib.rs", lib_head),
            ("src/blob.rs", binary),
            ("app/cafe.py", latin1),
            ("cmd/broken.go", broken),
            ("NOTES.txt", b"notes\n"),
        ],
        &[],
        ImpactSettings::default(),
    );
    let record = &got.record;
    assert_eq!(record.skipped.get("binary"), Some(&1), "{record:?}");
    assert_eq!(record.skipped.get("invalid_utf8"), Some(&1), "{record:?}");
    assert_eq!(record.skipped.get("language"), Some(&1), "{record:?}");
    let skipped: u32 = record.skipped.values().sum();
    assert!(skipped == 3 || record.skipped.get("parse_error") == Some(&1), "{record:?}");
    let impact = got.impact.expect("the parseable file's impact");
    let total = impact.functions.iter().find(|f| f.name == "total").expect("total");
    assert_eq!(total.change, ChangeKind::Modified);
    assert_eq!(total.callers.iter().map(|c| (c.file.as_str(), c.line)).collect::<Vec<_>>(), [("src/report.rs", 2)]);
}

#[test]
fn a_change_of_hundreds_of_functions_stays_within_the_caps() {
    let mut base = Vec::new();
    let mut head = Vec::new();
    for f in 0..60 {
        let (mut old, mut new) = (String::new(), String::new());
        for k in 0..6 {
            old.push_str(&format!("def f{f}_{k}(x):\n    return x + {k}\n\n\ndef use{f}_{k}():\n    return f{f}_{k}(1) + f{f}_{k}(2)\n\n\n"));
            new.push_str(&format!("def f{f}_{k}(x):\n    return x * {k}\n\n\ndef use{f}_{k}():\n    return f{f}_{k}(1) + f{f}_{k}(2)\n\n\n"));
        }
        base.push((format!("pkg/m{f}.py"), old.into_bytes()));
        head.push((format!("pkg/m{f}.py"), new.into_bytes()));
    }
    let as_refs = |files: &[(String, Vec<u8>)]| files.iter().map(|(p, b)| (p.clone(), b.clone())).collect::<Vec<_>>();
    let (base, head) = (as_refs(&base), as_refs(&head));
    let base: Vec<(&str, &[u8])> = base.iter().map(|(p, b)| (p.as_str(), b.as_slice())).collect();
    let head: Vec<(&str, &[u8])> = head.iter().map(|(p, b)| (p.as_str(), b.as_slice())).collect();
    let got = impact_of(&base, &head, &[], ImpactSettings::default());
    let record = &got.record;
    assert_eq!(record.found.functions, 360, "{record:?}");
    assert_eq!(record.found.callers, 360, "{record:?}");
    let impact = got.impact.expect("an impact");
    let bytes = serde_json::to_vec(&impact).expect("json").len();
    assert!(bytes <= 8192 && record.bytes as usize == bytes, "{bytes} bytes, {record:?}");
    assert!(record.given.callers + record.given.tests <= 40, "{record:?}");
    let left = impact.left_out.expect("what was left out is said");
    assert_eq!(left.functions, 360 - record.given.functions);
    assert_eq!(left.callers, 360 - record.given.callers);
}

#[test]
fn impact_turned_off_or_a_change_without_code_gives_none() {
    let off = without_impact(ImpactSettings { enabled: Some(false), ..ImpactSettings::default() }, "off".into());
    assert_eq!((off.impact, off.record.off.as_deref()), (None, Some("off")));
    let docs = impact_of(&[("README.md", b"# A\n")], &[("README.md", b"# B\n")], &[], ImpactSettings::default());
    assert!(docs.impact.is_none());
    assert_eq!(docs.record.skipped.get("language"), Some(&1));
    assert_eq!(docs.record.files, 0);
}
