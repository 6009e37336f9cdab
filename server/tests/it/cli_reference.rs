//! The manual's generated references are current: `docs/reference/cli.md` is what
//! `conclave docs cli` writes from the clap definitions, and `conclave docs format`
//! writes `docs/reference/conclave-file.md` from the format's JSON Schema (whose own
//! staleness test is the catalog's `file_format`).

use clap::CommandFactory;
use conclave_server::cli::{Cli, docs::cli_reference_markdown};
use std::path::Path;
use std::process::Command;

fn checked_in(relative: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(relative);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn written_by_conclave(args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_conclave")).args(args).output().expect("run conclave");
    assert!(out.status.success(), "conclave {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).expect("UTF-8")
}

#[test]
fn the_checked_in_cli_reference_is_what_conclave_writes() {
    let written = written_by_conclave(&["docs", "cli"]);
    assert_eq!(written, cli_reference_markdown(&Cli::command()), "the binary and the library agree");
    assert!(
        checked_in("docs/reference/cli.md") == written,
        "docs/reference/cli.md is stale: regenerate it with `conclave docs cli > docs/reference/cli.md`"
    );
    // Every visible command has its section; the hidden `docs` command has none.
    for heading in ["## `conclave review`", "## `conclave eval compare`", "## `conclave sandbox check`"] {
        assert!(written.contains(heading), "{heading} is missing");
    }
    assert!(!written.contains("## `conclave docs"), "a hidden command is not documented");
}

#[test]
fn the_checked_in_format_reference_is_what_conclave_writes() {
    let written = written_by_conclave(&["docs", "format"]);
    assert!(
        checked_in("docs/reference/conclave-file.md") == written,
        "docs/reference/conclave-file.md is stale: regenerate it with `conclave docs format > docs/reference/conclave-file.md`"
    );
    assert!(written.contains("## AgentConfig") && written.contains("| `output_schema_ref` |"), "{written}");
}
