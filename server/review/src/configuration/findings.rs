//! The findings Conclave raises itself for a change's edits to the review's
//! configuration: each edited file is a finding for a person to look at, since once
//! merged it configures every later review. An edit of a conclave file is `major`
//! (it can add command nodes, which run programs); other configuration is `minor`.
//! They come from Conclave, not a model, under the lane [`LANE`].

use conclave_shared::{Finding, Severity, Stance, Trust};

use super::source::{ConfigKind, ConfigurationSource, EditedFile};
use crate::inert::code_span;

/// The lane (agent and `raisedBy`) of these findings.
pub const LANE: &str = "configuration";

/// One finding per configuration file the change edits.
pub fn edit_findings(source: &ConfigurationSource) -> Vec<Finding> {
    source.edited.iter().map(|edit| finding(edit, source.read_from)).collect()
}

fn finding(edit: &EditedFile, read_from: Trust) -> Finding {
    let severity =
        if edit.kind == ConfigKind::Conclave || !edit.commands.is_empty() { Severity::Major } else { Severity::Minor };
    Finding {
        agent: LANE.to_string(),
        raised_by: Some(LANE.to_string()),
        file: edit.path.clone(),
        line: edit.line.max(1),
        severity: Some(severity),
        stance: Some(Stance::Concern),
        description: describe(edit, read_from),
        evidence: None,
        anchor: None,
        cited_line: None,
        fingerprint: None,
        dismissed: None,
        baseline: None,
        support: None,
        stability: None,
    }
}

/// What the finding says: what the file configures, what the review did with the
/// edit, the command nodes it adds, and what to do.
pub fn describe(edit: &EditedFile, read_from: Trust) -> String {
    let verb = match edit.status.as_str() {
        "added" => "adds",
        "deleted" => "deletes",
        "renamed" => "renames",
        _ => "edits",
    };
    let applied = match read_from {
        Trust::Base => "This review read the base's version and did not apply the change's.",
        Trust::Head => "The head was trusted, so the change configured its own review with it.",
    };
    let commands = match edit.commands.as_slice() {
        [] => String::new(),
        ids => format!(
            " It adds or changes the command node(s) {}, which would run programs in every later review.",
            ids.iter().map(|id| code_span(id)).collect::<Vec<_>>().join(", ")
        ),
    };
    format!(
        "This change {verb} {}, {} of Conclave's review. {applied}{commands} Have a person look at this edit \
         before merging: once merged, it configures every later review.",
        code_span(&edit.path),
        edit.kind.describe()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn edit(path: &str, kind: ConfigKind, commands: &[&str]) -> EditedFile {
        let commands = commands.iter().map(|c| c.to_string()).collect();
        EditedFile { path: path.into(), kind, status: "added".into(), commands, line: 3 }
    }

    #[test]
    fn a_conclave_edit_is_major_and_names_its_commands_and_a_rules_edit_is_minor() {
        let source = ConfigurationSource {
            read_from: Trust::Base,
            commit: Some("abc".into()),
            edited: vec![
                edit("conclaves/light-code-review.conclave.json", ConfigKind::Conclave, &["evil"]),
                edit("AGENTS.md", ConfigKind::Rules, &[]),
            ],
        };
        let found = edit_findings(&source);
        assert_eq!(
            found.iter().map(|f| f.severity).collect::<Vec<_>>(),
            [Some(Severity::Major), Some(Severity::Minor)]
        );
        assert_eq!(found[0].line, 3);
        assert_eq!(
            found[0].description,
            "This change adds `conclaves/light-code-review.conclave.json`, a review conclave of Conclave's review. \
             This review read the base's version and did not apply the change's. It adds or changes the command \
             node(s) `evil`, which would run programs in every later review. Have a person look at this edit before \
             merging: once merged, it configures every later review."
        );
        assert!(found[1].description.contains("a rules file for the reviewers"));
    }
}
