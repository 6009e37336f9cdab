//! The run tools: `run_conclave` (through the API's start of a plain run),
//! `get_run`, `list_runs` (read from the store) and `approve` (through the API's
//! decision path), with outputs cut to keep each answer under the cap.

use conclave_engine::Decision;
use conclave_shared::{NodeKind, RunRecord};
use serde_json::Value;

use super::answers::{ApprovalAnswer, MAX_STRUCTURED_CHARS, NodeItem, RunAnswer, RunLine, RunList, cut, json_chars};
use super::args::{ApproveArgs, DecisionWord, ListRunsArgs, RunArgs, RunConclaveArgs};
use super::context::{McpContext, Refusal, message};
use super::progress::{Reporter, follow};
use super::review::unknown_run;
use crate::api::runs::{Launched, follow_live, start_plain};

/// Runs `run_conclave`: starts a catalog conclave with the input and, unless `wait`
/// is false, follows it (with progress) and returns the run.
pub async fn run_conclave(
    context: &McpContext,
    args: RunConclaveArgs,
    reporter: &Reporter,
) -> Result<RunAnswer, Refusal> {
    let state = &context.state;
    let launched = start_plain(state, &args.conclave, args.input, (None, None)).await.map_err(message)?;
    let run_id = match launched {
        Launched::Queued(id) => id,
        Launched::Started(handle) => follow_live(state, handle, false, Vec::new()),
    };
    if args.wait.unwrap_or(true) {
        follow(context, &run_id, reporter).await?;
    }
    get_run(context, RunArgs { run: run_id }).await
}

/// Runs `get_run`: the stored run, its nodes and its output nodes' outputs.
pub async fn get_run(context: &McpContext, args: RunArgs) -> Result<RunAnswer, Refusal> {
    let record = context.state.store().get_run(&args.run).await.map_err(|e| e.to_string())?;
    Ok(run_answer(&record.ok_or_else(|| unknown_run(&args.run))?))
}

/// A run as `get_run` returns it: every output node's output within an equal share
/// of the cap.
fn run_answer(record: &RunRecord) -> RunAnswer {
    let outputs: Vec<&str> =
        record.conclave.nodes.iter().filter(|n| n.kind == NodeKind::Output).map(|n| n.id.as_str()).collect();
    let share = (MAX_STRUCTURED_CHARS - 16_000) / outputs.len().max(1);
    let mut truncated = false;
    let nodes = record
        .nodes
        .iter()
        .map(|node| {
            let output = node.output.as_ref().filter(|_| outputs.contains(&node.node_id.as_str())).map(|o| {
                let (value, was_cut) = cut(&o.to_input_value(), share);
                truncated |= was_cut;
                value
            });
            let error = node.error.as_ref().map(|e| cut(&Value::String(e.clone()), 300).0);
            NodeItem {
                id: node.node_id.clone(),
                state: node.state.as_str().to_string(),
                error: error.and_then(|e| e.as_str().map(str::to_string)),
                output,
            }
        })
        .collect();
    RunAnswer {
        run_id: record.summary.id.clone(),
        conclave: record.summary.conclave_id.clone(),
        status: record.summary.status.as_str().to_string(),
        error: record.summary.error.clone(),
        nodes,
        truncated,
    }
}

/// Runs `list_runs`: the newest runs.
pub async fn list_runs(context: &McpContext, args: ListRunsArgs) -> Result<RunList, Refusal> {
    let limit = args.limit.unwrap_or(20);
    if !(1..=100).contains(&limit) {
        return Err(format!("limit must be 1 to 100, not {limit}"));
    }
    let runs = context.state.store().list_runs(limit as usize).await.map_err(|e| e.to_string())?;
    let mut lines = Vec::new();
    let mut used = 1_000;
    for r in runs {
        let line = RunLine {
            run_id: r.id,
            conclave: r.conclave_id,
            status: r.status.as_str().to_string(),
            created_ms: r.created_ms,
            error: r.error.map(|e| cut(&Value::String(e), 300).0.as_str().unwrap_or_default().to_string()),
        };
        used += json_chars(&line);
        if used > MAX_STRUCTURED_CHARS {
            break;
        }
        lines.push(line);
    }
    Ok(RunList { runs: lines })
}

/// Runs `approve`: the decision recorded as the API records it, and the run taken up
/// again by this server.
pub async fn approve(context: &McpContext, args: ApproveArgs) -> Result<ApprovalAnswer, Refusal> {
    let decision =
        Decision { approved: args.decision == DecisionWord::Approve, by: "mcp".into(), comment: args.comment };
    let started = crate::api::approvals::decide_and_go_on(&context.state, &args.run, &args.node, decision)
        .await
        .map_err(message)?;
    Ok(ApprovalAnswer { run_id: started.run_id, notices: started.notices })
}
