//! `conclave runs list` and `conclave runs show ID`.

use clap::Subcommand;
use conclave_shared::{CacheRole, EventKind, NodeOutput, RunEvent, RunSummary};
use std::sync::Arc;
use std::time::{Duration, UNIX_EPOCH};

use super::{exit, format_parser};
use conclave_core::RunStore;
use conclave_review::ReportFormat;

/// Subcommands of `conclave runs`.
#[derive(Debug, Subcommand)]
pub enum RunsCommand {
    /// The most recent runs, newest first.
    List {
        /// How many runs to list.
        #[arg(long, default_value_t = 20)]
        limit: usize,
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// One run: status, each node's status and output, and its events.
    Show {
        /// The run id (a unique prefix is enough).
        id: String,
        /// Print JSON (the run record and its events) instead of text.
        #[arg(long)]
        json: bool,
    },
    /// A review run's report, as stored when the run finished.
    Report {
        /// The run id (a unique prefix is enough).
        id: String,
        /// Report format.
        #[arg(long, value_parser = format_parser(), default_value = "markdown")]
        format: ReportFormat,
    },
}

/// Runs the subcommand; returns the exit code.
pub async fn run(cmd: RunsCommand, store: Arc<dyn RunStore>) -> u8 {
    let result = match cmd {
        RunsCommand::List { limit, json } => list(store.as_ref(), limit, json).await,
        RunsCommand::Show { id, json } => show(store.as_ref(), &id, json).await,
        RunsCommand::Report { id, format } => report(store.as_ref(), &id, format).await,
    };
    match result {
        Ok(()) => exit::OK,
        Err((code, message)) => {
            eprintln!("error: {message}");
            code
        }
    }
}

type CmdResult = Result<(), (u8, String)>;

async fn list(store: &dyn RunStore, limit: usize, json: bool) -> CmdResult {
    let runs = store.list_runs(limit).await.map_err(|e| (exit::OTHER, e.to_string()))?;
    if json {
        println!("{}", serde_json::to_string_pretty(&runs).unwrap_or_default());
        return Ok(());
    }
    if runs.is_empty() {
        println!("no runs yet; start one with `conclave run <conclave>`");
        return Ok(());
    }
    println!(
        "{:<36}  {:<24}  {:<11}  {:<20}  {:>9}  REQUEST",
        "RUN", "CONCLAVE", "STATUS", "CREATED (UTC)", "DURATION"
    );
    for r in &runs {
        let line = format!(
            "{:<36}  {:<24}  {:<11}  {:<20}  {:>9}  {}",
            r.id,
            r.conclave_id,
            r.status.as_str(),
            timestamp(r.created_ms),
            duration(r),
            request(r)
        );
        // A run without a pull request leaves the last column empty, without the
        // spaces before it.
        println!("{}", line.trim_end());
    }
    Ok(())
}

/// The pull (merge) request a review from a webhook reviews, as people write it
/// (`owner/name#7`), with any invisible character escaped: the name comes from the
/// forge's delivery; empty for other runs.
fn request(r: &RunSummary) -> String {
    let label = r.pull_request.as_deref().unwrap_or_default();
    conclave_shared::invisible::escape_invisible(label).into_owned()
}

async fn show(store: &dyn RunStore, id: &str, json: bool) -> CmdResult {
    let full_id = resolve_id(store, id).await?;
    let run = store
        .get_run(&full_id)
        .await
        .map_err(|e| (exit::OTHER, e.to_string()))?
        .ok_or((exit::CONFIG, format!("no run `{id}`")))?;
    let events = store.events(&full_id, 0).await.map_err(|e| (exit::OTHER, e.to_string()))?;
    if json {
        let doc = serde_json::json!({"run": run, "events": events});
        println!("{}", serde_json::to_string_pretty(&doc).unwrap_or_default());
        return Ok(());
    }
    let s = &run.summary;
    println!("run       {}", s.id);
    println!("conclave  {}", s.conclave_id);
    if s.pull_request.is_some() {
        println!("request   {}", request(s));
    }
    println!("status    {}", s.status.as_str());
    println!("created   {} UTC", timestamp(s.created_ms));
    if let Some(error) = &s.error {
        println!("error     {error}");
    }
    println!("\nnodes:");
    for node in &run.nodes {
        match &node.reused_from {
            Some(from) => println!("  {:<20} {} (reused from run {from})", node.node_id, node.state.as_str()),
            None => println!("  {:<20} {}", node.node_id, node.state.as_str()),
        }
        if let Some(error) = &node.error {
            println!("    error: {error}");
        }
        if let Some(u) = &node.usage
            && (u.input_tokens > 0 || u.output_tokens > 0)
        {
            let attempts = if node.attempts > 1 { format!(" over {} attempts", node.attempts) } else { String::new() };
            println!("    tokens: {} in, {} out{attempts}", u.input_tokens, u.output_tokens);
        }
        if let (Some(start), Some(end), None) = (node.started_ms, node.finished_ms, &node.reused_from) {
            println!("    time: {} ms", end.saturating_sub(start));
        }
        if let Some(input) = &node.input {
            println!("    input: {}", indent(&truncate(input, 400)));
        }
        match &node.output {
            Some(NodeOutput::Json(v)) => {
                println!("    output: {}", indent(&serde_json::to_string_pretty(v).unwrap_or_default()))
            }
            Some(NodeOutput::Text(t)) => println!("    output: {}", indent(t)),
            None => {}
        }
    }
    println!("\nevents:");
    for line in event_lines(&events) {
        println!("  {line}");
    }
    Ok(())
}

async fn report(store: &dyn RunStore, id: &str, format: ReportFormat) -> CmdResult {
    let full_id = resolve_id(store, id).await?;
    match store.get_report(&full_id, format.as_str()).await.map_err(|e| (exit::OTHER, e.to_string()))? {
        Some(text) => {
            print!("{text}");
            Ok(())
        }
        None => Err((
            exit::CONFIG,
            format!("run {full_id} has no {} report; reports are stored for `conclave review` runs", format.as_str()),
        )),
    }
}

/// One line per event, with consecutive text deltas of a node merged.
fn event_lines(events: &[RunEvent]) -> Vec<String> {
    let mut lines: Vec<String> = Vec::new();
    let mut open_text: Option<(String, u64, String)> = None;
    let flush = |open: &mut Option<(String, u64, String)>, lines: &mut Vec<String>| {
        if let Some((node, seq, text)) = open.take() {
            lines.push(format!("#{seq:<4} text_delta       {node}: {:?}", truncate(&text, 120)));
        }
    };
    for e in events {
        if let EventKind::TextDelta { node_id, text } = &e.kind {
            match &mut open_text {
                Some((node, _, buf)) if node == node_id => buf.push_str(text),
                _ => {
                    flush(&mut open_text, &mut lines);
                    open_text = Some((node_id.clone(), e.seq, text.clone()));
                }
            }
            continue;
        }
        flush(&mut open_text, &mut lines);
        let detail = detail(&e.kind);
        lines.push(format!("#{:<4} {:<16} {detail}", e.seq, e.kind.type_name()));
    }
    flush(&mut open_text, &mut lines);
    lines
}

/// A `tool_result` line: the tool (an MCP tool by its id, `mcp:docs/git_log`), how
/// it ended and the first line of its answer.
fn tool_result(kind: &EventKind) -> String {
    let EventKind::ToolResult { node_id, tool, is_error, content, chars, duration_ms } = kind else {
        return String::new();
    };
    format!(
        "{node_id}: {tool} {} in {duration_ms} ms, {chars} chars: {}",
        if *is_error { "failed" } else { "answered" },
        conclave_shared::invisible::escape_invisible(&first_line(content))
    )
}

/// What a `cache_order` event's line says: how the agent's first call was ordered
/// for the prompt cache, and why.
fn cache_order(kind: &EventKind) -> String {
    let EventKind::CacheOrder { node_id, role, reason, waited_ms, leader } = kind else {
        return String::new();
    };
    let role = match (role, leader) {
        (CacheRole::Led, _) => "led".to_string(),
        (CacheRole::Followed, Some(leader)) => format!("followed {leader} after {waited_ms} ms"),
        (CacheRole::Followed, None) => format!("followed after {waited_ms} ms"),
        (CacheRole::Unordered, _) => "unordered".to_string(),
    };
    format!("{node_id}: {role}: {}", reason.describe())
}

/// What an event's line says after its sequence number and type.
fn detail(kind: &EventKind) -> String {
    match kind {
        EventKind::RunStarted { conclave_id, node_count } => format!("{conclave_id}, {node_count} nodes"),
        EventKind::RunResumed { kept } => {
            format!("kept {}", if kept.is_empty() { "nothing".into() } else { kept.join(", ") })
        }
        EventKind::NodeStarted { node_id, .. } => node_id.clone(),
        EventKind::NodeReused { node_id, from_run, .. } => format!("{node_id} from run {from_run}"),
        EventKind::NodeCached { node_id, from_run, .. } => format!("{node_id} cached, stored by run {from_run}"),
        EventKind::ApprovalRequested { node_id, prompt, .. } => format!("{node_id}: {prompt}"),
        EventKind::ApprovalDecided { node_id, approved, by, comment } => format!(
            "{node_id}: {} by {by}{}",
            if *approved { "approved" } else { "rejected" },
            comment.as_ref().map(|c| format!(": {c}")).unwrap_or_default()
        ),
        EventKind::RunWaiting { nodes } => format!("waiting for a decision at {}", nodes.join(", ")),
        EventKind::ToolCall { node_id, tool, arguments } => format!("{node_id}: {tool} {arguments}"),
        EventKind::ToolResult { .. } => tool_result(kind),
        EventKind::SchemaLowered { node_id, target, native, notes, dialect, .. } => {
            format!(
                "{node_id}: {} via {target}{}, {} note(s)",
                if *native { "native" } else { "prompt contract" },
                dialect.map(|d| format!(" ({d})")).unwrap_or_default(),
                notes.len()
            )
        }
        EventKind::DialectDowngraded { node_id, endpoint, from, to, .. } => {
            format!("{node_id}: {endpoint} rejected {from}; now {to}")
        }
        EventKind::FindingsChecked { node_id, check } => format!(
            "{node_id}: compared {}: {} contradiction(s), {} disagreement(s), {} agreement(s), {} duplicate(s)",
            check.agents.join(", "),
            check.contradictions.len(),
            check.disagreements.len(),
            check.agreements.len(),
            check.duplicates.len()
        ),
        EventKind::ContradictionDetected { node_id, contradiction } => {
            format!("{node_id}: {}:{}: {}", contradiction.file, contradiction.line, contradiction.summary)
        }
        EventKind::InputFitted { node_id, fit } => format!("{node_id}: {fit}"),
        EventKind::CacheOrder { .. } => cache_order(kind),
        EventKind::CountMismatch { node_id, mismatches } => {
            let list: Vec<String> = mismatches
                .iter()
                .map(|m| format!("{} claimed {} listed {}", m.severity.as_str(), m.claimed, m.actual))
                .collect();
            format!("{node_id}: {}", list.join(", "))
        }
        EventKind::ProviderRetry { node_id, retry, error, delay_ms } => {
            format!("{node_id}: retry {retry} in {delay_ms} ms after: {error}")
        }
        EventKind::AttemptFailed { node_id, attempt, errors, .. } => {
            format!("{node_id}: attempt {attempt}: {}", errors.join("; "))
        }
        EventKind::NodeCompleted { node_id, duration_ms, .. } => format!("{node_id} in {duration_ms} ms"),
        EventKind::NodeFailed { node_id, error_kind, message } => format!("{node_id}: {error_kind}: {message}"),
        EventKind::NodeSkipped { node_id, because_of, route: false } => {
            format!("{node_id} (because of {because_of})")
        }
        EventKind::NodeSkipped { node_id, because_of, route: true } => {
            format!("{node_id} (route): `{because_of}` took another branch")
        }
        EventKind::CommandExited {
            node_id, argv, exit_code, stdout_cut_bytes, stderr_cut_bytes, duration_ms, ..
        } => {
            let ended = exit_code.map_or_else(|| "killed by a signal".to_string(), |c| format!("exit {c}"));
            let cut = match stdout_cut_bytes + stderr_cut_bytes {
                0 => String::new(),
                n => format!(", {n} bytes of output cut"),
            };
            format!("{node_id}: `{}` {ended} in {duration_ms} ms{cut}", argv.join(" "))
        }
        EventKind::RunFinished { status, error, .. } => match error {
            Some(error) => format!("{}: {error}", status.as_str()),
            None => status.as_str().to_string(),
        },
        EventKind::TextDelta { .. } => String::new(),
    }
}

/// The full id of the run `id` names: the id itself, or a unique prefix of one.
pub(super) async fn resolve_id(store: &dyn RunStore, id: &str) -> Result<String, (u8, String)> {
    if store.get_run(id).await.map_err(|e| (exit::OTHER, e.to_string()))?.is_some() {
        return Ok(id.to_string());
    }
    let runs = store.list_runs(10_000).await.map_err(|e| (exit::OTHER, e.to_string()))?;
    let matches: Vec<&RunSummary> = runs.iter().filter(|r| r.id.starts_with(id)).collect();
    match matches.as_slice() {
        [one] => Ok(one.id.clone()),
        [] => Err((exit::CONFIG, format!("no run `{id}`; `conclave runs list` shows the recent ones"))),
        _ => Err((exit::CONFIG, format!("`{id}` matches {} runs; give more of the id", matches.len()))),
    }
}

fn timestamp(ms: u64) -> String {
    humantime::format_rfc3339_seconds(UNIX_EPOCH + Duration::from_millis(ms))
        .to_string()
        .replace('T', " ")
        .trim_end_matches('Z')
        .to_string()
}

fn duration(r: &RunSummary) -> String {
    match r.finished_ms {
        Some(end) => format!("{:.1}s", end.saturating_sub(r.created_ms) as f64 / 1000.0),
        None => "-".to_string(),
    }
}

fn indent(text: &str) -> String {
    text.replace('\n', "\n    ")
}

fn truncate(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        text.to_string()
    } else {
        format!("{}…", text.chars().take(max).collect::<String>())
    }
}

/// The first line of a tool's result, cut to 200 characters, for one event line.
fn first_line(content: &str) -> String {
    let line = content.lines().next().unwrap_or_default();
    let cut: String = line.chars().take(200).collect();
    match cut.len() < line.len() || content.lines().nth(1).is_some() {
        true => format!("{cut} …"),
        false => cut,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use conclave_shared::CacheOrderReason;

    #[test]
    fn a_cache_order_line_says_the_role_the_wait_and_why() {
        let followed = EventKind::CacheOrder {
            node_id: "b".into(),
            role: CacheRole::Followed,
            reason: CacheOrderReason::PrefixCached,
            waited_ms: 312,
            leader: Some("a".into()),
        };
        assert_eq!(
            detail(&followed),
            "b: followed a after 312 ms: the leader's response began, so the prefix was cached"
        );
        let unordered = EventKind::CacheOrder {
            node_id: "c".into(),
            role: CacheRole::Unordered,
            reason: CacheOrderReason::ShortPrefix,
            waited_ms: 0,
            leader: None,
        };
        assert_eq!(detail(&unordered), "c: unordered: the shared prefix is below the model's minimum cacheable length");
    }
}
