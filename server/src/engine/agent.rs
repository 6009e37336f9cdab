//! Runs one agent node: calls its provider, and when the agent has an output schema,
//! validates every answer locally and retries with the errors fed back.

use conclave_shared::{EventKind, NodeOutput, Usage};
use serde_json::Value;
use std::sync::Arc;
use std::time::Duration;

use super::bus::{EventBus, StreamSink};
use super::plan::AgentPlan;
use crate::providers::{AgentRequest, ProviderError};

/// Why a node failed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum NodeError {
    /// The provider failed.
    #[error("{0}")]
    Provider(#[from] ProviderError),
    /// The node ran past its timeout.
    #[error("timed out after {}; raise `timeout_secs` on the agent or `settings.node_timeout_secs`", humanize(*.0))]
    Timeout(Duration),
    /// Every attempt produced output that failed the schema.
    #[error("output still invalid after {attempts} attempt(s): {}", .errors.join("; "))]
    InvalidOutput {
        /// Attempts made.
        attempts: u32,
        /// The last attempt's validation errors.
        errors: Vec<String>,
        /// The last attempt's raw answer.
        raw: String,
    },
    /// A bug in Conclave (a task panicked).
    #[error("internal error: {0}")]
    Internal(String),
}

impl NodeError {
    /// Class name stored with the failure.
    pub fn kind(&self) -> &'static str {
        match self {
            NodeError::Provider(_) => "provider",
            NodeError::Timeout(_) => "timeout",
            NodeError::InvalidOutput { .. } => "invalid_output",
            NodeError::Internal(_) => "internal",
        }
    }
}

fn humanize(d: Duration) -> String {
    if d.as_millis().is_multiple_of(1000) { format!("{}s", d.as_secs()) } else { format!("{}ms", d.as_millis()) }
}

/// Runs the agent to a validated output.
pub async fn run_agent(
    plan: &AgentPlan,
    bus: &Arc<EventBus>,
    node_id: &str,
    input: Value,
) -> Result<(NodeOutput, Usage), NodeError> {
    let sink = StreamSink::new(bus.clone(), node_id.to_string());
    let attempts = if plan.validator.is_some() { 1 + plan.config.retries() } else { 1 };
    let mut usage = Usage::default();
    let mut feedback = Vec::new();
    let mut last = (Vec::new(), String::new());
    for attempt in 1..=attempts {
        let request = AgentRequest {
            run_id: bus.run_id().to_string(),
            node_id: node_id.to_string(),
            model: plan.config.model.clone(),
            system_prompt: plan.config.system_prompt.clone(),
            input: input.clone(),
            output_schema: plan.schema.clone(),
            attempt,
            feedback: std::mem::take(&mut feedback),
        };
        let reply = plan.provider.call(&request, &sink).await?;
        usage.add(&reply.usage);
        let Some(validator) = &plan.validator else {
            let output = match reply.json {
                Some(json) => NodeOutput::Json(json),
                None => NodeOutput::Text(reply.text),
            };
            return Ok((output, usage));
        };
        let candidate = match reply.json {
            Some(json) => Ok(json),
            None => serde_json::from_str::<Value>(reply.text.trim())
                .map_err(|e| vec![format!("the answer is not JSON: {e}")]),
        };
        let errors = match candidate {
            Ok(value) => {
                let errors: Vec<String> = validator
                    .iter_errors(&value)
                    .map(|e| {
                        let path = e.instance_path().as_str().to_string();
                        format!("{}: {e}", if path.is_empty() { "/" } else { &path })
                    })
                    .collect();
                if errors.is_empty() {
                    return Ok((NodeOutput::Json(value), usage));
                }
                errors
            }
            Err(errors) => errors,
        };
        bus.emit(EventKind::AttemptFailed {
            node_id: node_id.to_string(),
            attempt,
            errors: errors.clone(),
            raw: reply.text.clone(),
        })
        .await;
        feedback = errors.clone();
        last = (errors, reply.text);
    }
    Err(NodeError::InvalidOutput { attempts, errors: last.0, raw: last.1 })
}
