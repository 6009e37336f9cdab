//! Live per-node progress for `conclave run`: spinners on a terminal, plain lines
//! otherwise. Progress goes to standard error so standard output stays the result.

use conclave_shared::{Conclave, EventKind, RunEvent};
use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::collections::HashMap;
use std::io::IsTerminal;
use std::time::Duration;
use tokio::sync::broadcast;

/// Renders a run's events as they arrive.
#[derive(Debug)]
pub struct Progress {
    run_id: String,
    bars: Option<(MultiProgress, HashMap<String, ProgressBar>)>,
}

impl Progress {
    /// Progress for one run of `conclave`: spinners when standard output is a terminal.
    pub fn new(conclave: &Conclave, run_id: &str) -> Progress {
        let bars = std::io::stdout().is_terminal().then(|| {
            let multi = MultiProgress::with_draw_target(ProgressDrawTarget::stderr());
            let width = conclave.nodes.iter().map(|n| n.id.len()).max().unwrap_or(4);
            let style =
                ProgressStyle::with_template(&format!("{{spinner}} {{prefix:<{width}}} {{msg}} {{elapsed:>4}}"))
                    .unwrap_or_else(|_| ProgressStyle::default_spinner());
            let bars = conclave
                .nodes
                .iter()
                .map(|n| {
                    let bar = multi.add(
                        ProgressBar::new_spinner()
                            .with_style(style.clone())
                            .with_prefix(n.id.clone())
                            .with_message("queued"),
                    );
                    (n.id.clone(), bar)
                })
                .collect();
            (multi, bars)
        });
        Progress { run_id: run_id.to_string(), bars }
    }

    /// Follows the events until the run finishes.
    pub async fn follow(mut self, events: Option<broadcast::Receiver<std::sync::Arc<RunEvent>>>) {
        let Some(mut events) = events else { return };
        if self.bars.is_none() {
            eprintln!("run {} started", self.run_id);
        }
        loop {
            match events.recv().await {
                Ok(event) => {
                    let done = matches!(event.kind, EventKind::RunFinished { .. });
                    self.show(&event.kind);
                    if done {
                        break;
                    }
                }
                Err(broadcast::error::RecvError::Lagged(_)) => continue,
                Err(broadcast::error::RecvError::Closed) => break,
            }
        }
        // Bars of nodes that never finished (cancelled runs) stop where they were; the
        // finished ones stay on screen as the run's summary.
        if let Some((_, bars)) = &self.bars {
            for bar in bars.values().filter(|b| !b.is_finished()) {
                bar.abandon();
            }
        }
    }

    fn show(&mut self, kind: &EventKind) {
        let line = match kind {
            EventKind::NodeStarted { node_id, .. } => Some((node_id, "running".to_string(), false)),
            EventKind::NodeReused { node_id, from_run, .. } => {
                Some((node_id, format!("reused from run {from_run}"), true))
            }
            EventKind::ApprovalRequested { node_id, .. } => {
                Some((node_id, "waiting for a decision (conclave approve RUN NODE [--reject])".to_string(), true))
            }
            EventKind::NodeCached { node_id, from_run, .. } => {
                Some((node_id, format!("cached (stored by run {from_run})"), true))
            }
            EventKind::NodeCompleted { node_id, duration_ms, .. } => {
                Some((node_id, format!("succeeded in {duration_ms} ms"), true))
            }
            EventKind::NodeFailed { node_id, error_kind, message } => {
                Some((node_id, format!("failed ({error_kind}): {message}"), true))
            }
            EventKind::NodeSkipped { node_id, because_of, route: false } => {
                Some((node_id, format!("skipped (upstream `{because_of}` did not succeed)"), true))
            }
            EventKind::NodeSkipped { node_id, because_of, route: true } => {
                Some((node_id, format!("skipped (route): `{because_of}` took another branch"), true))
            }
            EventKind::CommandExited { node_id, exit_code, .. } => Some((
                node_id,
                exit_code.map_or_else(|| "killed by a signal".to_string(), |c| format!("exited with {c}")),
                false,
            )),
            EventKind::AttemptFailed { node_id, attempt, errors, .. } => {
                Some((node_id, format!("attempt {attempt} failed validation: {}", errors.join("; ")), false))
            }
            _ => None,
        };
        let Some((node_id, message, finished)) = line else { return };
        match &self.bars {
            Some((_, bars)) => {
                if let Some(bar) = bars.get(node_id) {
                    if !finished {
                        bar.enable_steady_tick(Duration::from_millis(120));
                    }
                    bar.set_message(message.clone());
                    if finished {
                        bar.finish();
                    }
                }
            }
            None => eprintln!("node {node_id}: {message}"),
        }
    }
}
