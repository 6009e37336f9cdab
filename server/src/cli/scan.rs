//! `conclave scan`: Conclave's own analyzers, run as a review's analyzer lanes (the
//! built-in conclaves' `invisible-text` lane runs `conclave scan invisible-text`), or
//! by hand. Each prints a SARIF 2.1.0 log on standard output.

use clap::{Args, Subcommand};
use conclave_review::invisible_text;
use std::path::PathBuf;

use super::exit;

/// Conclave's own analyzers.
#[derive(Debug, Subcommand)]
pub enum ScanCommand {
    /// Bidirectional controls and invisible characters on the lines the working tree
    /// adds or changes against a base (Trojan Source, CVE-2021-42574): a
    /// bidirectional control is an `error`, another invisible character a `warning`.
    InvisibleText(InvisibleTextArgs),
}

/// Arguments of `conclave scan invisible-text`.
#[derive(Debug, Args)]
pub struct InvisibleTextArgs {
    /// Compare with the merge base of this commit and HEAD (default: HEAD itself,
    /// the working tree's own changes).
    #[arg(long, default_value = "HEAD")]
    pub base: String,
    /// A directory of the repository (default: the working directory).
    #[arg(long, default_value = ".")]
    pub repo: PathBuf,
    /// The files to scan, relative to the repository root (default: every changed file).
    pub files: Vec<String>,
}

/// Runs the scan; returns the exit code. Runs git and reads files: call it on a
/// blocking thread.
pub fn run(command: ScanCommand) -> u8 {
    let ScanCommand::InvisibleText(args) = command;
    let files = if args.files.is_empty() { changed_files(&args) } else { Ok(args.files.clone()) };
    let hits = files.and_then(|files| invisible_text::scan(&args.repo, &args.base, &files));
    match hits {
        Ok(hits) => match serde_json::to_string_pretty(&invisible_text::sarif(&hits)) {
            Ok(log) => {
                println!("{log}");
                exit::OK
            }
            Err(e) => {
                eprintln!("error: cannot write the SARIF log: {e}");
                exit::OTHER
            }
        },
        Err(e) => {
            eprintln!("error: {e} (--base, --repo)");
            exit::CONFIG
        }
    }
}

/// Every file the working tree changes against the base.
fn changed_files(args: &InvisibleTextArgs) -> Result<Vec<String>, conclave_review::diff::ChangeError> {
    let changed = conclave_review::diff::working_tree_changes(&args.repo, &args.base, &[])?;
    Ok(changed.into_iter().map(|f| f.path).collect())
}
