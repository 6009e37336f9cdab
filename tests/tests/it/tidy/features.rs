//! The `conclave` binary is built with the same features of every crate as the whole
//! workspace's test build. `scripts/main.sh` builds the binary and `scripts/test.sh`
//! then builds the tests: when a test-only crate turns on a feature of a crate the
//! binary also uses (thirtyfour turns on serde's `rc`), that crate and everything
//! above it compile twice, and the install test's `cargo install` compiles them a
//! third time. The root `Cargo.toml` turns such features on for the binary too.

use std::collections::{BTreeMap, BTreeSet};
use std::process::Command;

/// Each package of the graph `cargo tree` prints, with the feature sets it is built
/// with on the target (proc macros and build scripts, built for the host, left out).
fn features(args: &[&str]) -> BTreeMap<String, BTreeSet<String>> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = Command::new(cargo)
        .current_dir(super::root())
        .args(["tree", "--prefix", "none", "--no-dedupe", "--format", "{p}|{f}"])
        .args(args)
        .output()
        .expect("cargo tree runs");
    assert!(out.status.success(), "cargo tree {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    let mut found: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let Some((package, features)) = line.split_once('|') else { continue };
        // `name v1.2.3 (path)`: the name and version name the package.
        let package = package.split_whitespace().take(2).collect::<Vec<_>>().join(" ");
        found.entry(package).or_default().insert(features.trim().to_string());
    }
    found
}

#[test]
fn the_binary_is_built_with_the_features_the_tests_build_its_crates_with() {
    let binary = features(&["-p", "conclave-server", "-e", "normal,no-proc-macro"]);
    let tests = features(&["--workspace", "-e", "normal,dev,no-proc-macro"]);
    let differ: Vec<String> = binary
        .iter()
        .filter(|(package, set)| tests.get(*package).is_some_and(|t| t != *set))
        .map(|(package, set)| format!("{package}: the binary {set:?}, the test build {:?}", tests[package]))
        .collect();
    assert!(
        differ.is_empty(),
        "crates the binary shares with the tests are built with other features, so they compile twice; turn the \
         test build's features on for the binary in the root Cargo.toml:\n{}",
        differ.join("\n")
    );
}
