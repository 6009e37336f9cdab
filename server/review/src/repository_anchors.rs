//! Anchoring findings in the reviewed repository: the files `anchor.rs` checks quotes
//! against are read through the same sandbox as the agents' tools (one walk of the
//! repository, honouring `.gitignore`; files opened without following symlinks out).
//! The report, the comparison of sibling reviewers, the check of an agent's quotes and
//! the merge of samples all place findings this way.

use conclave_shared::Finding;
use std::collections::HashMap;
use std::io::Read;
use std::path::Path;

use crate::anchor::anchor_findings;
use crate::tools::Sandbox;
use crate::tools::sandbox::Opened;

/// The largest file a finding's quote is checked against.
const MAX_ANCHOR_FILE: u64 = 8 * 1024 * 1024;

/// Checks `findings` against the files under `root` that the agents' tools may read
/// (one walk of the repository, honouring `.gitignore`; files opened without
/// following symlinks out), and fingerprints them. Files that cannot be read leave
/// their findings unchecked.
pub fn anchor_in_repository(findings: &mut [Finding], root: &Path) {
    let sandbox = Sandbox::new(root, &[]).ok();
    let visible = sandbox.as_ref().map(Sandbox::visible_files).unwrap_or_default();
    anchor_findings(findings, |path| {
        let sandbox = sandbox.as_ref().filter(|_| visible.contains(path))?;
        read_text(sandbox, path)
    });
}

/// Gives each finding that `quote` selects and that has no `evidence` the text of
/// its line as evidence, read as [`anchor_in_repository`] reads files: an analyzer
/// names a line, not code, and the quote lets the line be anchored and recognised
/// after it moves. Findings whose line cannot be read keep no evidence.
pub fn quote_cited_lines(findings: &mut [Finding], root: &Path, quote: impl Fn(&Finding) -> bool) {
    let Some(sandbox) = Sandbox::new(root, &[]).ok() else { return };
    let visible = sandbox.visible_files();
    let mut files: HashMap<String, Option<String>> = HashMap::new();
    for finding in findings.iter_mut().filter(|f| f.evidence.is_none() && quote(f)) {
        let text = files
            .entry(finding.file.clone())
            .or_insert_with(|| visible.contains(&finding.file).then(|| read_text(&sandbox, &finding.file)).flatten());
        let line = text.as_deref().and_then(|t| t.lines().nth(usize::try_from(finding.line).ok()?.checked_sub(1)?));
        finding.evidence = line.map(str::trim).filter(|l| !l.is_empty()).map(str::to_string);
    }
}

/// A text file of the repository, or `None` (missing, too big, binary).
fn read_text(sandbox: &Sandbox, path: &str) -> Option<String> {
    let Opened::File(file) = sandbox.open_listed(path).ok()? else { return None };
    let mut bytes = Vec::new();
    file.take(MAX_ANCHOR_FILE + 1).read_to_end(&mut bytes).ok()?;
    if bytes.len() as u64 > MAX_ANCHOR_FILE || bytes.contains(&0) {
        return None;
    }
    String::from_utf8(bytes).ok()
}
