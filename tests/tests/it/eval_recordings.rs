//! The recordings shipped with `evals/injected-bugs/` are exactly what its
//! hand-written answers give: the eval is run with the testbed, whose stand-in for
//! Anthropic answers each agent from `answers/<case>.json` under Anthropic's name and
//! capabilities, recording every call; the files must equal the shipped ones. When a
//! prompt, the engine or the recording format changes, they no longer do, and
//! `CONCLAVE_WRITE_RECORDINGS=1 cargo test -p conclave-tests --test it eval_recordings`
//! writes them again (then review the change of the eval's figures).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_conclave-testbed");

fn dataset() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../evals/injected-bugs")
}

/// Records the eval of the dataset by `conclave` (an id or a file) into `into`.
fn record(conclave: &str, into: &Path, workdir: &Path) {
    let out = Command::new(BIN)
        .args(["eval", &dataset().display().to_string(), "--conclave", conclave, "--format", "json"])
        .args([
            "--record",
            &into.display().to_string(),
            "--output-file",
            &workdir.join("summary.json").display().to_string(),
        ])
        .current_dir(workdir)
        .env("CONCLAVE_DB", workdir.join("runs.db"))
        .env("CONCLAVE_CONFIG_DIR", workdir.join("config"))
        .env("CONCLAVE_TESTBED_ANSWERS", dataset().join("answers"))
        .env("CONCLAVE_TESTBED_STAND_IN", "anthropic")
        .env("ANTHROPIC_BASE_URL", "http://127.0.0.1:9")
        .env_remove("ANTHROPIC_API_KEY")
        .env_remove("CI")
        .output()
        .expect("the testbed runs");
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
}

fn files(dir: &Path) -> BTreeMap<String, String> {
    std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .flatten()
                .map(|e| {
                    (
                        e.file_name().to_string_lossy().into_owned(),
                        std::fs::read_to_string(e.path()).unwrap_or_default(),
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn the_shipped_recordings_are_what_the_answers_give() {
    let dir = tempfile::tempdir().expect("tempdir");
    let written = dir.path().join("recordings");
    let without = dataset().join("conclaves/without-correctness.conclave.json");
    for conclave in ["light-code-review", &without.display().to_string()] {
        record(conclave, &written, dir.path());
    }
    let shipped = dataset().join("recordings");
    if std::env::var_os("CONCLAVE_WRITE_RECORDINGS").is_some() {
        let _ = std::fs::remove_dir_all(&shipped);
        std::fs::create_dir_all(&shipped).expect("mkdir");
        for (name, text) in files(&written) {
            std::fs::write(shipped.join(name), text).expect("write");
        }
        return;
    }
    let (now, then) = (files(&written), files(&shipped));
    let stale: Vec<&String> = now.keys().filter(|k| then.get(*k) != now.get(*k)).collect();
    let gone: Vec<&String> = then.keys().filter(|k| !now.contains_key(*k)).collect();
    assert!(
        stale.is_empty() && gone.is_empty(),
        "evals/injected-bugs/recordings is out of date ({} new or changed, {} no longer asked); write them again with \
         CONCLAVE_WRITE_RECORDINGS=1 cargo test -p conclave-tests --test it eval_recordings",
        stale.len(),
        gone.len()
    );
}
