//! The repository's record (like git's index): a file whose stat matches is not
//! reopened, a change the stat cannot show (same size, mtime in the racy window) is
//! still seen, a few changed files write a delta beside the record rather than the
//! record, and a corrupt record or delta is ignored, never a failure.

use conclave_symbols::{Index, IndexOptions};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

fn write(root: &Path, path: &str, content: &str) {
    let path = root.join(path);
    std::fs::create_dir_all(path.parent().expect("a parent")).expect("mkdir");
    std::fs::write(path, content).expect("write");
}

/// Sets a file's modification time.
fn set_mtime(root: &Path, path: &str, time: SystemTime) {
    let file = std::fs::File::options().write(true).open(root.join(path)).expect("open");
    file.set_modified(time).expect("set mtime");
}

fn mtime(root: &Path, path: &str) -> SystemTime {
    std::fs::metadata(root.join(path)).expect("stat").modified().expect("mtime")
}

/// Ten Rust files last modified an hour ago (outside the racy window).
fn old_repository(root: &Path) {
    let hour_ago = SystemTime::now() - Duration::from_secs(3600);
    for i in 0..10 {
        let path = format!("src/m{i}.rs");
        write(root, &path, &format!("pub fn f{i}() {{ helper(); }}\n"));
        set_mtime(root, &path, hour_ago);
    }
}

/// An old repository (`old_repository`), a cache directory, and options that index
/// with that cache.
fn old_repository_with_cache() -> (tempfile::TempDir, tempfile::TempDir, IndexOptions) {
    let (dir, cache) = (tempfile::tempdir().expect("tempdir"), tempfile::tempdir().expect("tempdir"));
    old_repository(dir.path());
    let options = IndexOptions { cache_dir: Some(cache.path().to_path_buf()), ..IndexOptions::default() };
    (dir, cache, options)
}

/// The one record file under the cache directory.
fn record_path(cache: &Path) -> PathBuf {
    let mut found = Vec::new();
    for format in std::fs::read_dir(cache).expect("read_dir").flatten() {
        if let Ok(records) = std::fs::read_dir(format.path().join("repos")) {
            found.extend(records.flatten().map(|e| e.path()));
        }
    }
    assert_eq!(found.len(), 1, "{found:?}");
    found.remove(0)
}

/// The delta file beside the record, when there is one.
fn delta_path(cache: &Path) -> Option<PathBuf> {
    let record = record_path(cache);
    let delta = record.parent()?.parent()?.join("deltas").join(record.file_name()?);
    delta.exists().then_some(delta)
}

fn modified(path: &Path) -> SystemTime {
    std::fs::metadata(path).expect("stat").modified().expect("mtime")
}

/// (parsed, from_cache, from_record, stat_hits)
fn counts(index: &Index) -> (usize, usize, usize, usize) {
    let r = index.report();
    (r.parsed, r.from_cache, r.from_record, r.stat_hits)
}

#[test]
fn unchanged_files_are_not_reopened() {
    let (dir, cache, options) = old_repository_with_cache();
    let root = dir.path();
    let first = Index::build(root, &options).expect("index");
    assert_eq!(counts(&first), (10, 0, 0, 0));
    let second = Index::build(root, &options).expect("index");
    assert_eq!(counts(&second), (0, 10, 10, 10), "{:?}", second.report());
    assert_eq!(second.references("helper", None).len(), 10);
    assert_eq!(&*second.definitions("f4", None)[0].file, "src/m4.rs");
    // Nothing changed, so the record is not written again.
    let written = std::fs::metadata(record_path(cache.path())).expect("record").modified().expect("mtime");
    std::thread::sleep(Duration::from_millis(20));
    Index::build(root, &options).expect("index");
    let again = std::fs::metadata(record_path(cache.path())).expect("record").modified().expect("mtime");
    assert_eq!(written, again);
    // A changed file (another size and mtime) is read and parsed; a new one too.
    write(root, "src/m3.rs", "pub fn f3_renamed() { helper(); }\n");
    write(root, "src/new.rs", "pub fn brand_new() {}\n");
    let third = Index::build(root, &options).expect("index");
    assert_eq!(counts(&third), (2, 9, 9, 9), "{:?}", third.report());
    assert_eq!(&*third.definitions("f3_renamed", None)[0].file, "src/m3.rs");
    assert!(third.definitions("f3", None).is_empty());
}

#[test]
fn a_change_the_stat_cannot_show_is_still_seen() {
    let (dir, _cache, options) = old_repository_with_cache();
    let root = dir.path();
    // Written now: within the racy window of the record written below.
    write(root, "src/racy.rs", "pub fn aaaa() {}\n");
    Index::build(root, &options).expect("index");
    // The same size and the same mtime, as a change within one mtime tick would be.
    let before = mtime(root, "src/racy.rs");
    write(root, "src/racy.rs", "pub fn bbbb() {}\n");
    set_mtime(root, "src/racy.rs", before);
    let second = Index::build(root, &options).expect("index");
    assert_eq!(counts(&second), (1, 10, 10, 10), "hashed, not trusted: {:?}", second.report());
    assert_eq!(second.report().parsed_named, ["src/racy.rs"]);
    assert!(second.definitions("aaaa", None).is_empty());
    assert_eq!(second.definitions("bbbb", None).len(), 1);
    // An old file changed to the same size, its mtime moved by one second: read again.
    let old = mtime(root, "src/m5.rs");
    write(root, "src/m5.rs", "pub fn g5() { helper(); }\n");
    set_mtime(root, "src/m5.rs", old + Duration::from_secs(1));
    let third = Index::build(root, &options).expect("index");
    assert_eq!(third.report().parsed_named, ["src/m5.rs"]);
    assert_eq!(third.definitions("g5", None).len(), 1);
    assert!(third.definitions("f5", None).is_empty());
}

#[test]
fn a_corrupt_record_is_ignored() {
    let (dir, cache, options) = old_repository_with_cache();
    let root = dir.path();
    Index::build(root, &options).expect("index");
    let record = record_path(cache.path());
    let bytes = std::fs::read(&record).expect("read");
    std::fs::write(&record, &bytes[..bytes.len() / 2]).expect("cut short");
    let second = Index::build(root, &options).expect("a corrupt record is no failure");
    assert!(second.report().record_corrupt);
    assert_eq!(counts(&second), (0, 10, 0, 0), "the per-blob cache serves: {:?}", second.report());
    assert_eq!(second.references("helper", None).len(), 10);
    // Rewritten: the next build reads it.
    let third = Index::build(root, &options).expect("index");
    assert!(!third.report().record_corrupt);
    assert_eq!(counts(&third), (0, 10, 10, 10));
    // Another repository's record (same files, another root) is stale here: ignored.
    let other = tempfile::tempdir().expect("tempdir");
    old_repository(other.path());
    Index::build(other.path(), &options).expect("index");
    let theirs = std::fs::read_dir(record.parent().expect("a parent"))
        .expect("read_dir")
        .flatten()
        .map(|e| e.path())
        .find(|p| *p != record)
        .expect("the other record");
    std::fs::copy(&theirs, &record).expect("copy");
    let fourth = Index::build(root, &options).expect("index");
    assert!(fourth.report().record_corrupt);
    assert_eq!(counts(&fourth), (0, 10, 0, 0), "{:?}", fourth.report());
    assert_eq!(&*fourth.definitions("f2", None)[0].file, "src/m2.rs");
}

#[test]
fn a_few_changed_files_write_a_delta_and_many_a_new_record() {
    let (dir, cache, options) = old_repository_with_cache();
    let root = dir.path();
    Index::build(root, &options).expect("index");
    let record = record_path(cache.path());
    let written = modified(&record);
    assert!(delta_path(cache.path()).is_none(), "a first build writes the record whole");
    // One file changed, one added, one removed: a delta, the record untouched.
    write(root, "src/m3.rs", "pub fn f3_renamed() { helper(); }\n");
    write(root, "src/new.rs", "pub fn brand_new() { helper(); }\n");
    std::fs::remove_file(root.join("src/m7.rs")).expect("remove");
    std::thread::sleep(Duration::from_millis(20));
    let third = Index::build(root, &options).expect("index");
    assert_eq!(counts(&third), (2, 8, 8, 8), "{:?}", third.report());
    assert_eq!(modified(&record), written, "the record is not written again");
    assert!(delta_path(cache.path()).is_some(), "the change is in a delta");
    // The next build reads the change back from the delta (the two new files, in the
    // racy window, are hashed and match it) and the removal.
    let fourth = Index::build(root, &options).expect("index");
    assert_eq!(counts(&fourth), (0, 10, 10, 8), "{:?}", fourth.report());
    assert_eq!(&*fourth.definitions("f3_renamed", None)[0].file, "src/m3.rs");
    assert!(fourth.definitions("f3", None).is_empty());
    assert!(fourth.definitions("f7", None).is_empty());
    assert_eq!(fourth.references("helper", None).len(), 10);
    // Past the delta's cap (64 files), the record is written anew and the delta goes.
    for i in 0..70 {
        write(root, &format!("src/more/n{i}.rs"), &format!("pub fn n{i}() {{ helper(); }}\n"));
    }
    let fifth = Index::build(root, &options).expect("index");
    assert_eq!(fifth.report().parsed, 70);
    assert_ne!(modified(&record), written, "the record is written anew");
    assert!(delta_path(cache.path()).is_none(), "and the delta dropped");
    let sixth = Index::build(root, &options).expect("index");
    assert_eq!(sixth.report().from_record, 80, "{:?}", sixth.report());
    assert_eq!(sixth.references("helper", None).len(), 80);
    assert!(sixth.definitions("f7", None).is_empty());
}

#[test]
fn a_corrupt_delta_is_ignored() {
    let (dir, cache, options) = old_repository_with_cache();
    let root = dir.path();
    Index::build(root, &options).expect("index");
    write(root, "src/m3.rs", "pub fn f3_renamed() { helper(); }\n");
    Index::build(root, &options).expect("index");
    let delta = delta_path(cache.path()).expect("a delta");
    let bytes = std::fs::read(&delta).expect("read");
    std::fs::write(&delta, &bytes[..bytes.len() / 2]).expect("cut short");
    let again = Index::build(root, &options).expect("a corrupt delta is no failure");
    assert!(again.report().record_corrupt);
    // The record serves the nine unchanged files; the changed one comes from the
    // per-blob cache.
    assert_eq!(counts(&again), (0, 10, 9, 9), "{:?}", again.report());
    assert_eq!(&*again.definitions("f3_renamed", None)[0].file, "src/m3.rs");
    assert!(again.definitions("f3", None).is_empty());
}
