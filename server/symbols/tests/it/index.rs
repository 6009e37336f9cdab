//! The index over generated repositories: bad input skipped and counted, the files
//! the review tools read and no others, the caps (a 100,000-file repository), and the
//! cache by blob id (a second build parses only what changed; a corrupt entry is
//! parsed again).

use conclave_symbols::{Index, IndexOptions, blob_id};
use std::path::Path;
use std::process::Command;

fn write(root: &Path, path: &str, content: impl AsRef<[u8]>) {
    let path = root.join(path);
    std::fs::create_dir_all(path.parent().expect("a parent")).expect("mkdir");
    std::fs::write(path, content).expect("write");
}

fn git_init(root: &Path) {
    let out = Command::new("git").arg("init").arg("-q").arg(root).output().expect("git runs");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
}

#[test]
fn blob_ids_are_git_s() {
    // `printf 'hello\n' | git hash-object --stdin`, and `git hash-object /dev/null`
    assert_eq!(blob_id(b"hello\n"), "ce013625030ba8dba906f756967f9e9ca394464a");
    assert_eq!(blob_id(b""), "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391");
}

#[test]
fn bad_input_is_skipped_and_counted_never_a_failure() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path();
    write(root, "src/good.rs", "pub fn good() {}\n");
    write(root, "src/binary.rs", b"fn a() {}\0\x01\x02binary");
    write(root, "src/latin1.py", b"def caf\xe9():\n    pass\n");
    write(root, "src/garbage.go", ")))) }}}} ((((\n");
    write(root, "src/half.ts", "export function fine(a: number): number {\n  return a;\n}\n\nfunction broken( {{{\n");
    write(root, "README.md", "# readme\n");
    write(root, "src/main.c", "int main() { return 0; }\n");
    write(root, "Makefile", "all:\n");
    let index = Index::build(root, &IndexOptions::default()).expect("bad input never fails a build");
    let report = index.report();
    let skipped: Vec<(&str, usize)> = report.skipped.iter().map(|(k, v)| (k.as_str(), *v)).collect();
    assert_eq!(skipped, [("binary", 1), ("invalid_utf8", 1), ("parse_error", 1)], "{report:?}");
    let other: Vec<(&str, usize)> = report.other_languages.iter().map(|(k, v)| (k.as_str(), *v)).collect();
    assert_eq!(other, [("(none)", 1), ("c", 1), ("md", 1)]);
    assert_eq!((report.files_seen, report.files_indexed, report.with_parse_errors), (8, 2, 1));
    // What parsed of a file with grammar errors is kept.
    assert_eq!(&*index.definitions("fine", None)[0].file, "src/half.ts");
    assert!(index.not_indexed("src/binary.rs").is_some_and(|why| why.contains("binary")));
    let summary = report.summary();
    assert!(summary.contains("3 skipped (1 binary, 1 invalid_utf8, 1 parse_error)"), "{summary}");
}

#[test]
fn only_what_the_review_tools_read_is_indexed() {
    let dir = tempfile::tempdir().expect("tempdir");
    let outside = tempfile::tempdir().expect("tempdir");
    let root = dir.path();
    git_init(root);
    write(root, ".gitignore", "generated/\n");
    write(root, "src/lib.rs", "pub fn visible() {}\n");
    write(root, "generated/out.rs", "pub fn ignored() {}\n");
    write(root, ".git/hooks/x.py", "def in_git():\n    pass\n");
    write(outside.path(), "secret.rs", "pub fn outside() {}\n");
    std::os::unix::fs::symlink(outside.path().join("secret.rs"), root.join("src/link_out.rs")).expect("symlink");
    std::os::unix::fs::symlink(outside.path(), root.join("dir_out")).expect("symlink");
    std::os::unix::fs::symlink("lib.rs", root.join("src/link_in.rs")).expect("symlink");
    let index = Index::build(root, &IndexOptions::default()).expect("index");
    assert_eq!(index.paths().collect::<Vec<_>>(), ["src/lib.rs"]);
    for name in ["ignored", "in_git", "outside"] {
        assert!(index.definitions(name, None).is_empty(), "{name} must not be indexed");
    }
    // The allowlist of the review tools reaches ignored files, as it does for them.
    let options = IndexOptions { allow: vec!["generated/*.rs".into()], ..IndexOptions::default() };
    let index = Index::build(root, &options).expect("index");
    assert_eq!(&*index.definitions("ignored", None)[0].file, "generated/out.rs");
    let missing = Index::build(&root.join("nope"), &IndexOptions::default()).expect_err("no such root");
    assert!(missing.to_string().starts_with(&format!("cannot index `{}`", root.join("nope").display())), "{missing}");
}

#[test]
fn a_hundred_thousand_files_stay_within_the_caps() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path();
    for d in 0..100 {
        std::fs::create_dir(root.join(format!("d{d:03}"))).expect("mkdir");
        for f in 0..1000 {
            std::fs::write(root.join(format!("d{d:03}/f{f:03}.py")), format!("def f{f}():\n    g{d}()\n"))
                .expect("write");
        }
    }
    let index = Index::build(root, &IndexOptions::default()).expect("index");
    let report = index.report();
    assert_eq!((report.files_seen, report.files_indexed), (100_000, 50_000), "{}", report.summary());
    assert_eq!(report.left_out.over_file_cap, 50_000);
    assert_eq!(report.left_out.named.len(), 20);
    assert!(
        report.left_out.named[0].starts_with("d050/f000.py (past the cap of 50000 files)"),
        "{:?}",
        report.left_out
    );
    assert!(report.summary().contains("50000 left out by the caps (50000 past the file cap"), "{}", report.summary());
    assert_eq!(index.references("g49", None).len(), 1000);
    assert!(index.references("g50", None).is_empty());
    assert!(index.not_indexed("d099/f999.py").is_some_and(|why| why.starts_with("left out")));
}

#[test]
fn the_size_caps_leave_files_out_and_say_so() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path();
    write(root, "a.rs", format!("pub fn a() {{}}\n{}", "// pad\n".repeat(100)));
    write(root, "b.rs", format!("pub fn b() {{}}\n{}", "// pad\n".repeat(100)));
    write(root, "c.rs", format!("pub fn c() {{}}\n{}", "// pad\n".repeat(1000)));
    let options = IndexOptions { max_file_bytes: 2000, max_total_bytes: 1000, ..IndexOptions::default() };
    let index = Index::build(root, &options).expect("index");
    let left = &index.report().left_out;
    assert_eq!((left.too_large, left.over_total_cap, index.report().files_indexed), (1, 1, 1));
    assert_eq!(left.named, ["b.rs (past the cap of 1000 bytes in all)", "c.rs (7014 bytes, over the cap of 2000)"]);
}

#[test]
fn a_second_build_parses_only_the_changed_file() {
    let dir = tempfile::tempdir().expect("tempdir");
    let cache = tempfile::tempdir().expect("tempdir");
    let root = dir.path();
    for i in 0..20 {
        write(root, &format!("src/m{i}.rs"), format!("pub fn f{i}() {{ helper(); }}\n"));
    }
    write(root, "src/bad.rs", b"\0binary");
    let options = IndexOptions { cache_dir: Some(cache.path().to_path_buf()), ..IndexOptions::default() };
    let first = Index::build(root, &options).expect("index");
    assert_eq!((first.report().parsed, first.report().from_cache), (21, 0));
    let second = Index::build(root, &options).expect("index");
    assert_eq!((second.report().parsed, second.report().from_cache), (0, 21), "{:?}", second.report());
    assert_eq!(second.references("helper", None).len(), 20);
    assert_eq!(second.report().skipped.get("binary"), Some(&1), "a skip is cached too");
    // The same blob at another path reads back with its own path.
    write(root, "other/copy.rs", "pub fn f3() { helper(); }\n");
    write(root, "src/m7.rs", "pub fn f7_renamed() { helper(); }\n");
    let third = Index::build(root, &options).expect("index");
    assert_eq!((third.report().parsed, third.report().parsed_named.clone()), (1, vec!["src/m7.rs".to_string()]));
    assert_eq!(&*third.definitions("f7_renamed", None)[0].file, "src/m7.rs");
    assert!(third.definitions("f7", None).is_empty());
    let copies: Vec<&str> = third.definitions("f3", None).iter().map(|d| &*d.file).collect();
    assert_eq!(copies, ["other/copy.rs", "src/m3.rs"]);
}

#[test]
fn a_corrupt_cache_entry_is_parsed_again() {
    let dir = tempfile::tempdir().expect("tempdir");
    let cache = tempfile::tempdir().expect("tempdir");
    let root = dir.path();
    write(root, "a.py", "def a():\n    b()\n");
    write(root, "b.py", "def b():\n    pass\n");
    let options = IndexOptions { cache_dir: Some(cache.path().to_path_buf()), ..IndexOptions::default() };
    Index::build(root, &options).expect("index");
    // Without the repository's record (tests/it/record.rs), so the entries are read.
    let records: Vec<_> =
        walk(cache.path()).into_iter().filter(|p| p.parent().is_some_and(|d| d.ends_with("repos"))).collect();
    assert_eq!(records.len(), 1, "{records:?}");
    std::fs::remove_file(&records[0]).expect("remove the record");
    let entries: Vec<_> = walk(cache.path());
    assert_eq!(entries.len(), 2, "{entries:?}");
    // Cut short, and well-formed but pointing at strings it does not hold.
    std::fs::write(&entries[0], b"{\"format\": 2, \"blob\": tru").expect("corrupt");
    let mut entry: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&entries[1]).expect("read")).expect("json");
    entry["outcome"]["Ok"]["strings"] = serde_json::json!([]);
    std::fs::write(&entries[1], entry.to_string()).expect("no strings");
    let again = Index::build(root, &options).expect("a corrupt entry is no failure");
    assert!(!again.report().record_corrupt, "none there is not a corrupt one");
    assert_eq!((again.report().parsed, again.report().cache_corrupt), (2, 2));
    assert_eq!(&*again.references("b", None)[0].file, "a.py");
    let third = Index::build(root, &options).expect("index");
    assert_eq!((third.report().from_cache, third.report().cache_corrupt), (2, 0), "rewritten");
}

fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).expect("read_dir").flatten() {
        if entry.path().is_dir() {
            files.extend(walk(&entry.path()));
        } else {
            files.push(entry.path());
        }
    }
    files.sort();
    files
}
