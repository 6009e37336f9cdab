//! What confined each command of the run, in the report: read from the commands'
//! `command_exited` events (the layers that held, whether the network was open, what
//! this machine could not enforce, or that a command ran unconfined), as a Markdown
//! section and the JSON envelope's `review.sandboxes`.

use conclave_shared::{EventKind, RunEvent, SandboxRecord};
use serde::Serialize;
use serde_json::{Map, Value, json};
use std::fmt::Write as _;

/// One command that ran, and what confined it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CommandSandbox {
    /// Its node (`loop/1/lint` inside a loop).
    pub node_id: String,
    /// Its program's file name.
    pub program: String,
    /// What confined it; `None` in runs stored before commands were sandboxed.
    pub sandbox: Option<SandboxRecord>,
}

/// Every command that ran, by node id: commands that run side by side end in any
/// order, and two reviews of one change must report alike.
pub(super) fn of_events(events: &[RunEvent]) -> Vec<CommandSandbox> {
    let mut commands: Vec<CommandSandbox> = events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::CommandExited { node_id, argv, sandbox, .. } => Some(CommandSandbox {
                node_id: node_id.clone(),
                program: argv.first().map(|p| p.rsplit('/').next().unwrap_or(p).to_string()).unwrap_or_default(),
                sandbox: sandbox.clone(),
            }),
            _ => None,
        })
        .collect();
    commands.sort_by(|a, b| a.node_id.cmp(&b.node_id));
    commands
}

/// The Markdown section; nothing when no command ran.
pub(super) fn markdown(out: &mut String, commands: &[CommandSandbox]) {
    if commands.is_empty() {
        return;
    }
    let _ = writeln!(out, "## Commands and their sandbox\n");
    let _ = writeln!(out, "| Command | Program | Confined by |\n|---|---|---|");
    for c in commands {
        let layers = match &c.sandbox {
            Some(record) if record.confined => record.summary(),
            Some(_) => "**unconfined**: the sandbox was unavailable and unconfined runs were allowed".to_string(),
            None => "not recorded".to_string(),
        };
        let _ = writeln!(out, "| `{}` | `{}` | {layers} |", c.node_id, c.program);
    }
    out.push('\n');
    let mut gaps: Vec<&str> =
        commands.iter().filter_map(|c| c.sandbox.as_ref()).flat_map(|r| &r.gaps).map(String::as_str).collect();
    gaps.sort_unstable();
    gaps.dedup();
    for gap in gaps {
        let _ = writeln!(out, "> Not enforced here: {gap}.\n");
    }
}

/// `review.sandboxes` in the JSON envelope; left out when no command ran.
pub(super) fn json(review: &mut Map<String, Value>, commands: &[CommandSandbox]) {
    if !commands.is_empty() {
        review.insert("sandboxes".into(), json!(commands));
    }
}
