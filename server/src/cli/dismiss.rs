//! `conclave dismiss FINGERPRINT --reason TEXT`: records in the repository's
//! `.conclave/dismissed.json` that a finding does not apply, so later reviews report
//! it as suppressed and no gate fails on it.

use clap::Args;
use conclave_review::diff::{git_author, repository_root};
use conclave_review::dismissals::{DismissalError, FILE, dismiss};
use std::path::PathBuf;

use super::exit;

/// Arguments of `conclave dismiss`.
#[derive(Debug, Args)]
pub struct DismissArgs {
    /// The finding's fingerprint, from the JSON report (`fingerprint`) or SARIF
    /// (`partialFingerprints`).
    pub fingerprint: String,
    /// Why the finding does not apply; reviewers of the change see it.
    #[arg(long)]
    pub reason: String,
    /// Who dismisses it (default: `user.name <user.email>` from git).
    #[arg(long)]
    pub author: Option<String>,
    /// A directory of the repository (default: the working directory).
    #[arg(long, default_value = ".")]
    pub repo: PathBuf,
}

/// Records the dismissal; returns the exit code.
pub fn run(args: DismissArgs) -> u8 {
    let root = match repository_root(&args.repo) {
        Ok(root) => root,
        Err(e) => {
            eprintln!("error: {e}");
            return exit::CONFIG;
        }
    };
    let Some(author) = args.author.clone().or_else(|| git_author(&root)) else {
        eprintln!(
            "error: who dismisses this? git has no user.name and user.email here; pass --author \"Name <email>\""
        );
        return exit::CONFIG;
    };
    match dismiss(&root, &args.fingerprint, &args.reason, &author) {
        Ok(replaced) => {
            let verb = if replaced { "dismissal replaced" } else { "dismissed" };
            println!("{verb}: {} ({FILE}); commit the file so later reviews see it", args.fingerprint);
            exit::OK
        }
        Err(e @ DismissalError::NoReason) => {
            eprintln!("error: {e} (--reason)");
            exit::CONFIG
        }
        Err(e) => {
            eprintln!("error: {e}");
            exit::CONFIG
        }
    }
}
