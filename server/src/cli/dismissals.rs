//! `conclave dismissals list|export`: the dismissals kept in the run store (made by
//! replying `/conclave dismiss REASON` on a pull request), listed, or written into a
//! repository's `.conclave/dismissed.json` for teams that keep them in git.

use clap::{Subcommand, ValueEnum};
use conclave_core::{RunStore, StoredDismissal};
use conclave_review::diff::repository_root;
use conclave_review::dismissals::{FILE, merge_into_file};
use std::path::PathBuf;
use std::sync::Arc;

use super::exit;
use super::offload::blocking;

/// `conclave dismissals` subcommands.
#[derive(Debug, Subcommand)]
pub enum DismissalsCommand {
    /// The stored dismissals, by repository then fingerprint.
    List {
        /// Only this repository's (GitHub's `owner/name`, GitLab's project path).
        #[arg(long, value_name = "KEY", env = "CONCLAVE_REPOSITORY_KEY")]
        repository: Option<String>,
        /// How to print them.
        #[arg(long, value_enum, default_value = "table")]
        format: ListFormat,
    },
    /// Add a repository's stored dismissals to its .conclave/dismissed.json (an
    /// entry already in the file stays as it is); commit the file to keep them in git.
    Export {
        /// The repository whose dismissals to write (GitHub's `owner/name`, GitLab's
        /// project path).
        #[arg(long, value_name = "KEY", env = "CONCLAVE_REPOSITORY_KEY")]
        repository: Option<String>,
        /// A directory of the git repository to write into (default: the working directory).
        #[arg(default_value = ".")]
        repo: PathBuf,
    },
}

/// How `dismissals list` prints.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ListFormat {
    /// One line per dismissal.
    Table,
    /// A JSON array.
    Json,
}

/// Runs the subcommand; the exit code.
pub async fn run(cmd: DismissalsCommand, store: Arc<dyn RunStore>) -> u8 {
    match cmd {
        DismissalsCommand::List { repository, format } => list(store.as_ref(), repository.as_deref(), format).await,
        DismissalsCommand::Export { repository, repo } => export(store.as_ref(), repository, repo).await,
    }
}

async fn list(store: &dyn RunStore, repository: Option<&str>, format: ListFormat) -> u8 {
    let dismissals = match store.dismissals(repository).await {
        Ok(dismissals) => dismissals,
        Err(e) => {
            eprintln!("error: {e}");
            return exit::OTHER;
        }
    };
    match format {
        ListFormat::Json => match serde_json::to_string_pretty(&dismissals) {
            Ok(text) => println!("{text}"),
            Err(e) => {
                eprintln!("error: cannot write the dismissals as JSON: {e}");
                return exit::OTHER;
            }
        },
        ListFormat::Table if dismissals.is_empty() => match repository {
            Some(key) => println!("no stored dismissals of {key}"),
            None => println!("no stored dismissals"),
        },
        ListFormat::Table => print!("{}", table(&dismissals)),
    }
    exit::OK
}

/// One line per dismissal: repository, fingerprint, author, where, and why.
fn table(dismissals: &[StoredDismissal]) -> String {
    let width = dismissals.iter().map(|d| d.repository.len()).max().unwrap_or(0).max("REPOSITORY".len());
    let author = dismissals.iter().map(|d| d.author.len()).max().unwrap_or(0).max("AUTHOR".len());
    let mut text = format!("{:<width$}  {:<32}  {:<author$}  REASON (SOURCE)\n", "REPOSITORY", "FINGERPRINT", "AUTHOR");
    for d in dismissals {
        let reason = d.reason.replace('\n', " ");
        text.push_str(&format!(
            "{:<width$}  {:<32}  {:<author$}  {reason} ({})\n",
            d.repository, d.fingerprint, d.author, d.source
        ));
    }
    text
}

async fn export(store: &dyn RunStore, repository: Option<String>, repo: PathBuf) -> u8 {
    let Some(key) = repository else {
        eprintln!(
            "error: which repository's dismissals? pass --repository KEY (GitHub's owner/name, GitLab's project \
             path), or set CONCLAVE_REPOSITORY_KEY"
        );
        return exit::CONFIG;
    };
    let dismissals = match store.dismissals(Some(&key)).await {
        Ok(dismissals) => dismissals,
        Err(e) => {
            eprintln!("error: {e}");
            return exit::OTHER;
        }
    };
    let written = blocking(move || {
        let root = repository_root(&repo).map_err(|e| e.to_string())?;
        merge_into_file(&root, &dismissals).map(|added| (root, added, dismissals.len())).map_err(|e| e.to_string())
    })
    .await;
    match written {
        Ok((root, added, stored)) => {
            println!(
                "{added} of {stored} stored dismissal(s) of {key} added to {} ({} were there); commit the file to \
                 keep them in git",
                root.join(FILE).display(),
                stored - added
            );
            exit::OK
        }
        Err(message) => {
            eprintln!("error: {message}");
            exit::CONFIG
        }
    }
}
