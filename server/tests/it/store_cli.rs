//! `--db` and `CONCLAVE_DB` with a PostgreSQL URL: a real server through the binary,
//! and an unreachable one named without its password (exit 2).

use std::process::{Command, Output};

fn conclave(dir: &std::path::Path, db: &str, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_conclave"))
        .current_dir(dir)
        .env("CONCLAVE_DB", db)
        .args(args)
        .output()
        .expect("conclave runs")
}

#[test]
fn an_unreachable_postgres_url_is_a_configuration_error_without_the_password() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = conclave(dir.path(), "postgresql://me:hunter2@127.0.0.1:1/runs", &["runs", "list"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("cannot connect to PostgreSQL at 127.0.0.1:1 (database `runs`, user `me`)"), "{stderr}");
    assert!(stderr.contains("help: --db and CONCLAVE_DB take a postgres:// URL or a SQLite file"), "{stderr}");
    assert!(!stderr.contains("hunter2"), "the password leaked: {stderr}");
    assert!(std::fs::read_dir(dir.path()).expect("dir").next().is_none(), "no SQLite file was created");
}

#[test]
fn runs_are_listed_from_a_real_postgres_server() {
    let url = std::env::var("CONCLAVE_TEST_POSTGRES_URL").unwrap_or_else(|_| {
        panic!(
            "CONCLAVE_TEST_POSTGRES_URL is not set: run the tests with `bash scripts/test.sh`, or start a server \
             with `bash scripts/postgres.sh start DIR` and export the URL it prints"
        )
    });
    let dir = tempfile::tempdir().expect("tempdir");
    let out = conclave(dir.path(), &url, &["runs", "list", "--json"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let listed: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON list of runs");
    assert!(listed.is_array(), "{listed}");
    assert!(std::fs::read_dir(dir.path()).expect("dir").next().is_none(), "no SQLite file was created");
}
