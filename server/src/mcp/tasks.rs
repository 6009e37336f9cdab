//! `review` as a task (the tasks extension, SEP-2663) for clients that support
//! tasks: the task is the review run, its id the run's id, so every server on the
//! same store answers `tasks/get` and `tasks/cancel` alike. A task's status is the
//! run's, and a finished review's result is what `review` would have returned.

use conclave_shared::{RunStatus, RunSummary};
use rmcp::ErrorData;
use rmcp::model::{
    CallToolResult, CreateTaskResult, DetailedTask, GetTaskResult, JsonObject, Task, TaskPayload, TaskStatus,
};
use std::time::{Duration, UNIX_EPOCH};

use super::args::{Detail, ReviewArgs};
use super::context::{McpContext, Refusal};
use super::review::{answer, start, unknown_run};

/// How often a client is asked to poll a review task.
const POLL_MS: u64 = 2_000;

/// Starts a review and answers with its task.
pub async fn create(context: &McpContext, args: ReviewArgs) -> Result<CreateTaskResult, Refusal> {
    let started = start(context, args).await?;
    let summary = context.state.store().run_summary(&started.run_id).await.map_err(|e| e.to_string())?;
    let summary = summary.ok_or_else(|| unknown_run(&started.run_id))?;
    Ok(CreateTaskResult::new(task(&summary, TaskStatus::Working)))
}

/// The task of review run `id`, with its result once the review is finished.
pub async fn get(context: &McpContext, id: &str) -> Result<GetTaskResult, ErrorData> {
    let store = context.state.store();
    let summary = store.run_summary(id).await.map_err(internal)?;
    let summary = summary.ok_or_else(|| ErrorData::invalid_params(unknown_run(id), None))?;
    let payload = match summary.status {
        RunStatus::Cancelled => TaskPayload::Cancelled,
        status if !status.is_terminal() => TaskPayload::Working,
        _ => match answer(context, id, None, Detail::Compact, Duration::ZERO).await {
            Ok(answer) if answer.report_uri.is_some() => {
                let value = serde_json::to_value(&answer).map_err(internal)?;
                let result = serde_json::to_value(CallToolResult::structured(value)).map_err(internal)?;
                TaskPayload::Completed { result: as_object(result) }
            }
            // Ended, its report not stored yet.
            Ok(_) => TaskPayload::Working,
            Err(message) => {
                let result = CallToolResult::error(vec![rmcp::model::ContentBlock::text(message)]);
                TaskPayload::Completed { result: as_object(serde_json::to_value(result).map_err(internal)?) }
            }
        },
    };
    let status = payload.status();
    Ok(GetTaskResult::new(DetailedTask::new(task(&summary, status), payload)))
}

/// Cancels review run `id` wherever it runs.
pub async fn cancel(context: &McpContext, id: &str) -> Result<(), ErrorData> {
    crate::api::runs::cancel_run(&context.state, id)
        .await
        .map_err(|e| ErrorData::invalid_params(super::context::message(e), None))
}

fn task(summary: &RunSummary, status: TaskStatus) -> Task {
    let created = timestamp(summary.created_ms);
    let updated = summary.finished_ms.map_or_else(|| created.clone(), timestamp);
    Task::new(summary.id.clone(), status, created, updated).with_poll_interval_ms(POLL_MS).with_status_message(format!(
        "review run {}: {}",
        summary.id,
        summary.status.as_str()
    ))
}

fn timestamp(ms: u64) -> String {
    humantime::format_rfc3339_millis(UNIX_EPOCH + Duration::from_millis(ms)).to_string()
}

fn as_object(value: serde_json::Value) -> JsonObject {
    match value {
        serde_json::Value::Object(object) => object,
        _ => JsonObject::new(),
    }
}

fn internal(error: impl std::fmt::Display) -> ErrorData {
    ErrorData::internal_error(error.to_string(), None)
}
