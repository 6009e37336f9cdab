//! Runs one agent node: a tool phase (when the agent has tools), then the answer,
//! constrained natively or by the prompt contract, validated locally against the
//! author's schema, and retried with the validation errors fed back.
//!
//! Provider faults that may pass (rate limits, 5xx, resets) are retried with backoff
//! inside each call; schema failures are retried as new attempts.

use conclave_core::{
    AgentReply, AgentRequest, Message, PriceTable, ProviderError, RetryPolicy, ToolCall, ToolOutcome, ToolRunner,
};
use conclave_schema::OutputContract;
use conclave_schema::contract::{extract_json, render_feedback};
use conclave_shared::{EventKind, LoweringNote, NodeOutput, NoteKind, OutputDialect, Usage};
use serde_json::Value;
use std::sync::Arc;
use std::time::Instant;
use tracing::Instrument;

use crate::bus::{BusSink, EventBus};
use crate::dialects::DialectBook;
use crate::input::AgentInput;
use crate::mcp_servers::AgentMcpTools;
use crate::node_error::NodeError;
use crate::observe;
use crate::plan::{AgentDialects, AgentPlan};
use crate::policy::OutputPolicy;
use crate::policy_call::{self, PolicyFailure};
use crate::warmup::{Announcing, Leader, Warmups};

/// The most of a server's rejection a lowering note quotes.
const NOTE_QUOTE: usize = 400;

/// The most of a tool's result a `tool_result` event carries, in characters.
const TOOL_RESULT_EVENT_CHARS: usize = 2000;

/// What every agent of a run shares.
#[derive(Debug, Clone)]
pub struct AgentContext {
    /// The run's event bus.
    pub bus: Arc<EventBus>,
    /// How provider faults are retried.
    pub retry: RetryPolicy,
    /// Prices for the cost of each call.
    pub prices: Arc<PriceTable>,
    /// The tools, if this run offers any.
    pub tools: Option<Arc<dyn ToolRunner>>,
    /// The run's MCP servers, when an agent of the run lists an MCP tool.
    pub servers: Option<Arc<crate::mcp_servers::RunServers>>,
    /// The run's output policy, if any.
    pub policy: Option<Arc<dyn OutputPolicy>>,
    /// The directory agents work in, if the run has one.
    pub workdir: Option<std::path::PathBuf>,
    /// Whether prompts and answers go into the `chat` spans.
    pub capture_content: bool,
    /// Limits and pauses shared by every process on the database, if any.
    pub fleet: Option<crate::fleet::FleetLimits>,
    /// The structured-output dialect of each server the run's agents call.
    pub dialects: Arc<DialectBook>,
    /// The run's budget ledger, when the run or one of its agents has a budget.
    pub budget: Option<Arc<crate::budget::Ledger>>,
    /// The shared prompt prefixes whose first call was sent, for providers that
    /// cache prompts.
    pub warmups: Arc<Warmups>,
}

/// Runs the agent to its output.
pub async fn run_agent(
    plan: &AgentPlan,
    ctx: &AgentContext,
    node_id: &str,
    input: AgentInput,
) -> Result<(NodeOutput, Usage), NodeError> {
    run_agent_with(plan, ctx, node_id, input, BusSink::new(ctx.bus.clone(), node_id.to_string())).await
}

/// [`run_agent`], streaming into `sink`.
pub async fn run_agent_with(
    plan: &AgentPlan,
    ctx: &AgentContext,
    node_id: &str,
    input: AgentInput,
    sink: BusSink,
) -> Result<(NodeOutput, Usage), NodeError> {
    let input_value = input.to_value();
    let shared_prefix = shared_prefix(&plan.shared_prompt, &input);
    let mcp = mcp_tools(plan, ctx).await?;
    let sink = sink.naming(mcp.by_name.iter().map(|(name, target)| (name.clone(), target.id.clone())).collect());
    let mut call = Caller {
        plan,
        ctx,
        mcp: &mcp,
        sink: &sink,
        node_id,
        input: &input_value,
        shared_prefix: &shared_prefix,
        usage: Usage::default(),
        calls: 0,
    };
    let mut messages = vec![Message::User(input.first_message())];
    let Some(contract) = &plan.contract else {
        let reply = call.converse(&mut messages, 1, false).await?;
        let output = match reply.json {
            Some(json) => NodeOutput::Json(json),
            None => NodeOutput::Text(reply.text),
        };
        return Ok((output, call.usage));
    };
    let attempts = 1 + plan.config.retries();
    let mut last = (Vec::new(), String::new());
    for attempt in 1..=attempts {
        let before = call.usage.clone();
        let reply = call.converse(&mut messages, attempt, true).await?;
        let checked = match check_answer(contract, ctx.policy.as_deref(), &reply)? {
            // An agent with tools and retries left hears what the policy rejects.
            Ok(value) if attempt < attempts && plan.has_tools() => match rejections(ctx, contract, &value).await? {
                rejected if rejected.is_empty() => Ok(value),
                rejected => Err((rejected, false)),
            },
            Ok(value) => Ok(value),
            Err(errors) => Err((errors, true)),
        };
        match checked {
            Ok(value) => return Ok((NodeOutput::Json(value), call.usage)),
            Err((errors, schema)) => {
                let usage = call.usage.since(&before);
                let event = EventKind::AttemptFailed {
                    node_id: node_id.to_string(),
                    attempt,
                    errors: errors.clone(),
                    raw: reply.text.clone(),
                    usage,
                };
                ctx.bus.emit(event).await;
                messages.push(Message::Assistant { text: reply.text.clone(), tool_calls: Vec::new() });
                let feedback = if schema { render_feedback(&errors) } else { render_rejections(&errors) };
                messages.push(Message::User(feedback));
                last = (errors, reply.text);
            }
        }
    }
    Err(NodeError::InvalidOutput { attempts, errors: last.0, raw: last.1 })
}

/// The MCP tools of the agent, its servers connected (once for the run).
async fn mcp_tools(plan: &AgentPlan, ctx: &AgentContext) -> Result<AgentMcpTools, NodeError> {
    match &ctx.servers {
        _ if plan.mcp_tools.is_empty() => Ok(AgentMcpTools::default()),
        Some(servers) => servers.agent_tools(&plan.mcp_tools, &plan.mcp_servers).await,
        None => Err(NodeError::ToolServer("the agent lists MCP tools, and this run connects to no MCP server".into())),
    }
}

/// What every agent of the run is told first: the conclave's shared prompt, then the
/// run input.
pub(crate) fn shared_prefix(shared_prompt: &str, input: &AgentInput) -> String {
    let context = input.shared_context();
    if shared_prompt.is_empty() { context } else { format!("{shared_prompt}\n\n{context}") }
}

/// What the run's policy rejects in a valid answer (see
/// [`OutputPolicy::reject_answer`]), asked off the async threads.
async fn rejections(
    ctx: &AgentContext,
    contract: &OutputContract,
    value: &Value,
) -> Result<Vec<String>, PolicyFailure> {
    let Some(policy) = ctx.policy.clone() else { return Ok(Vec::new()) };
    let (value, field) = (value.clone(), contract.findings_field.clone());
    policy_call::off_thread("reject_answer", move || policy.reject_answer(&value, field.as_deref())).await
}

/// The feedback for an answer the policy rejected.
fn render_rejections(problems: &[String]) -> String {
    let list: Vec<String> = problems.iter().map(|p| format!("- {p}")).collect();
    format!(
        "Conclave checked your previous answer against the repository and could not accept all of it:\n{}\nUse your \
         tools to read the code, then answer again with the whole corrected JSON only.",
        list.join("\n")
    )
}

/// The validated value of an answer, or every reason it is not acceptable; an error
/// when the policy failed to normalize it.
fn check_answer(
    contract: &OutputContract,
    policy: Option<&dyn OutputPolicy>,
    reply: &AgentReply,
) -> Result<Result<Value, Vec<String>>, PolicyFailure> {
    let mut value = match &reply.json {
        Some(json) => json.clone(),
        None => match extract_json(&reply.text) {
            Ok(value) => value,
            Err(e) => return Ok(Err(vec![e])),
        },
    };
    contract.restore(&mut value);
    if let Some(policy) = policy {
        let field = contract.findings_field.as_deref();
        policy_call::in_place("normalize_answer", || policy.normalize_answer(&mut value, field))?;
    }
    let errors = contract.violations(&value);
    Ok(if errors.is_empty() { Ok(value) } else { Err(errors) })
}

/// Makes the calls of one agent node.
struct Caller<'a> {
    plan: &'a AgentPlan,
    ctx: &'a AgentContext,
    /// The agent's MCP tools.
    mcp: &'a AgentMcpTools,
    sink: &'a BusSink,
    node_id: &'a str,
    input: &'a Value,
    shared_prefix: &'a str,
    usage: Usage,
    /// Provider calls made so far (a try retried after a fault counts once).
    calls: u32,
}

impl Caller<'_> {
    /// One attempt: the tool phase when the agent has tools, then (for structured
    /// answers after tool use) an extraction turn without tools.
    async fn converse(
        &mut self,
        messages: &mut Vec<Message>,
        attempt: u32,
        structured: bool,
    ) -> Result<AgentReply, NodeError> {
        let plan = self.plan;
        if !self.has_tools() {
            return self.call(messages, attempt, false, structured).await;
        }
        let mut turns = 0;
        loop {
            let reply = self.call(messages, attempt, true, false).await?;
            turns += 1;
            if reply.tool_calls.is_empty() || turns >= plan.config.turns() {
                if !structured {
                    return Ok(reply);
                }
                messages.push(Message::Assistant { text: reply.text.clone(), tool_calls: reply.tool_calls.clone() });
                for call in &reply.tool_calls {
                    messages.push(self.skipped_tool(call));
                }
                break;
            }
            messages.push(Message::Assistant { text: reply.text.clone(), tool_calls: reply.tool_calls.clone() });
            for call in &reply.tool_calls {
                messages.push(self.run_tool(call).await?);
            }
        }
        messages.push(Message::User("Give your final answer now, as JSON only.".into()));
        self.call(messages, attempt, false, true).await
    }

    /// Whether the agent may call any tool.
    fn has_tools(&self) -> bool {
        !self.plan.tools.is_empty() || !self.mcp.specs.is_empty()
    }

    /// Runs one tool call and says so in a `tool_result` event; a call past the
    /// run's `max_tool_calls`, or to an MCP server that stopped, fails the agent.
    async fn run_tool(&self, call: &ToolCall) -> Result<Message, NodeError> {
        if let Some(ledger) = &self.ctx.budget {
            ledger.count_tool_call()?;
        }
        let started = Instant::now();
        let mcp = self.mcp.by_name.get(&call.name);
        let outcome = match (&self.ctx.tools, mcp) {
            (_, Some(target)) => target
                .server
                .call(&target.tool, &call.arguments)
                .await
                .map_err(|e| NodeError::ToolServer(e.to_string()))?,
            // Offered alike to every agent for the prompt cache, a tool is still run
            // only for an agent that has it.
            _ if !self.plan.tools.iter().any(|t| t.name == call.name) => {
                ToolOutcome::error(format!("`{}` is not one of your tools", call.name))
            }
            (Some(runner), None) => runner.run(call).await,
            (None, None) => ToolOutcome::error("no tools are available in this run"),
        };
        let tool = mcp.map_or_else(|| call.name.clone(), |target| target.id.clone());
        self.ctx
            .bus
            .emit(EventKind::ToolResult {
                node_id: self.node_id.to_string(),
                tool,
                is_error: outcome.is_error,
                content: outcome.content.chars().take(TOOL_RESULT_EVENT_CHARS).collect(),
                chars: outcome.content.chars().count() as u64,
                duration_ms: started.elapsed().as_millis() as u64,
            })
            .await;
        Ok(Message::ToolResult {
            call_id: call.id.clone(),
            name: call.name.clone(),
            content: outcome.content,
            is_error: outcome.is_error,
        })
    }

    fn skipped_tool(&self, call: &ToolCall) -> Message {
        Message::ToolResult {
            call_id: call.id.clone(),
            name: call.name.clone(),
            content: "not run: the turn limit was reached".into(),
            is_error: true,
        }
    }

    /// One provider call, retrying faults that may pass. Each try is its own `chat`
    /// span and counts in the metrics.
    async fn call(
        &mut self,
        messages: &[Message],
        attempt: u32,
        offer_tools: bool,
        structured: bool,
    ) -> Result<AgentReply, NodeError> {
        let plan = self.plan;
        let mut dialect = match &plan.dialects {
            Some(d) => Some(self.ctx.dialects.current(&plan.config.provider, &d.endpoint, d.setting).await),
            None => None,
        };
        let mut request = self.request(messages, attempt, offer_tools, structured, dialect);
        let provider = plan.config.provider.as_str();
        let mut retry = 0;
        let mut backoff = self.ctx.retry.backoff();
        let mut leader = self.first_call(&request).await;
        loop {
            let result = self.try_once(&request, attempt, leader.as_ref()).await?;
            // Siblings wait for the leader's first try only: one that failed before its
            // response began lets them go now, not after its retries.
            if let Some(leader) = leader.take() {
                leader.finish(result.is_ok());
            }
            let error = match result {
                Ok(reply) => {
                    self.usage.add(&reply.usage);
                    return Ok(reply);
                }
                Err(error) => error,
            };
            tracing::warn!(node = self.node_id, provider, class = error.class(), "provider call failed: {error}");
            // A rejected dialect is not a fault that passes: on `auto`, the next one is
            // tried at once; otherwise the call fails.
            if let ProviderError::DialectRejected { dialect: rejected, message, .. } = &error
                && let Some(next) = self.step_down(*rejected, message).await
            {
                dialect = Some(next);
                request = self.request(messages, attempt, offer_tools, structured, dialect);
                continue;
            }
            // The provider's "retry after" holds for every process on the database.
            if let (ProviderError::RateLimited { retry_after: Some(wait) }, Some(fleet)) = (&error, &self.ctx.fleet) {
                fleet.pause(provider, (*wait).min(self.ctx.retry.cap * 2)).await;
            }
            let Some(delay) = backoff.next_delay(&error) else { return Err(error.into()) };
            retry += 1;
            self.wait_to_retry(&error, retry, delay).await;
        }
    }

    /// Before the agent's first call: leads (hold the guard while the call is out),
    /// waits until a sibling writing the same prefix began to be answered, or goes at
    /// once, by the rule of `warmup.rs`; a `cache_order` event says which.
    async fn first_call(&mut self, request: &AgentRequest) -> Option<Leader> {
        let plan = self.plan;
        self.calls += 1;
        if self.calls > 1 {
            return None;
        }
        let order = self.ctx.warmups.order(self.node_id, &plan.config.provider, plan.provider.as_ref(), request).await;
        self.ctx.bus.emit(order.event).await;
        order.leader
    }

    /// One try of a call, inside the run's budget, in its own `chat` span; the
    /// provider's answer, or a `NodeError` when the budget leaves no room for it.
    async fn try_once(
        &self,
        request: &AgentRequest,
        attempt: u32,
        leader: Option<&Leader>,
    ) -> Result<Result<AgentReply, ProviderError>, NodeError> {
        let plan = self.plan;
        let (provider, model) = (plan.config.provider.as_str(), plan.config.model.as_str());
        let capture = self.ctx.capture_content;
        tracing::debug!(
            node = self.node_id,
            provider,
            model,
            attempt,
            messages = request.messages.len(),
            tools = request.tools.len(),
            native_schema = request.output_schema.is_some(),
            "calling the provider"
        );
        if let Some(fleet) = &self.ctx.fleet {
            fleet.wait_while_paused(provider).await;
        }
        let reserved = crate::budget::reserve(self.ctx.budget.as_ref(), self.node_id, provider, request).await?;
        let span = observe::chat_span(provider, request, capture);
        let started = Instant::now();
        let sink = Announcing { inner: self.sink, leader };
        let mut result = plan.provider.call(request, &sink).instrument(span.clone()).await;
        if let Ok(reply) = &mut result
            && reply.usage.cost_usd.is_none()
        {
            self.ctx.prices.apply(provider, model, &mut reply.usage);
        }
        crate::budget::settle(reserved, &result);
        observe::chat_finished(&span, (provider, model), result.as_ref(), started.elapsed(), capture);
        Ok(result)
    }

    /// Waits `delay` before retry number `retry` of a call that failed with `error`,
    /// saying so in an event.
    async fn wait_to_retry(&self, error: &ProviderError, retry: u32, delay: std::time::Duration) {
        let provider = self.plan.config.provider.as_str();
        observe::provider_retried(provider, error);
        self.ctx
            .bus
            .emit(EventKind::ProviderRetry {
                node_id: self.node_id.to_string(),
                retry,
                error: error.to_string(),
                delay_ms: delay.as_millis() as u64,
            })
            .await;
        tokio::time::sleep(delay).await;
    }

    /// After the server rejected `rejected`: on `auto`, the dialect to try next (a
    /// change this agent made is reported as a lowering note and an event); `None`
    /// when the agent's dialect is fixed or none is left.
    async fn step_down(&self, rejected: OutputDialect, message: &str) -> Option<OutputDialect> {
        let plan = self.plan;
        let dialects = plan.dialects.as_ref().filter(|d| d.setting.fixed().is_none())?;
        let provider = plan.config.provider.as_str();
        let step = self.ctx.dialects.step_down(provider, &dialects.endpoint, rejected).await?;
        if step.changed {
            let to = step.to;
            let enforced = if to.sends_schema() {
                "the server still constrains the answer to the schema"
            } else {
                "the schema is rendered into the prompt, and only local validation enforces it"
            };
            tracing::warn!(node = self.node_id, provider, from = %rejected, %to, "the server rejected a dialect");
            // What the server said, on one line and short enough for a report.
            let said: String =
                message.split_whitespace().collect::<Vec<_>>().join(" ").chars().take(NOTE_QUOTE).collect();
            let note = LoweringNote {
                path: String::new(),
                kind: NoteKind::Unsupported,
                message: format!(
                    "the server at {} rejected the `{rejected}` dialect ({said}); Conclave now sends `{to}`: {enforced}",
                    dialects.endpoint
                ),
            };
            let event = EventKind::DialectDowngraded {
                node_id: self.node_id.to_string(),
                provider: provider.to_string(),
                endpoint: dialects.endpoint.clone(),
                from: rejected,
                to,
                note,
            };
            self.ctx.bus.emit(event).await;
        }
        Some(step.to)
    }

    /// The request of one provider call.
    fn request(
        &self,
        messages: &[Message],
        attempt: u32,
        offer_tools: bool,
        structured: bool,
        dialect: Option<OutputDialect>,
    ) -> AgentRequest {
        let plan = self.plan;
        let system_prompt = match (&plan.dialects, dialect) {
            (Some(d), Some(dialect)) if dialect.contract_in_prompt() => d.prompt_with_contract.clone(),
            _ => plan.system_prompt.clone(),
        };
        // A provider that caches prompts gets the same tools in every call of every
        // agent of the conclave (they come first in what it caches), with calls to
        // the agent's own allowed or not.
        let mut tools = match plan.cache_tools.is_empty() {
            false => plan.cache_tools.clone(),
            true if offer_tools => plan.tools.clone(),
            true => Vec::new(),
        };
        // MCP tools come after the built-in ones, which the prompt cache shares.
        if offer_tools || !plan.cache_tools.is_empty() {
            tools.extend(self.mcp.specs.iter().cloned());
        }
        AgentRequest {
            run_id: self.ctx.bus.run_id().to_string(),
            node_id: self.node_id.to_string(),
            model: plan.config.model.clone(),
            shared_prefix: self.shared_prefix.to_string(),
            system_prompt,
            input: self.input.clone(),
            messages: messages.to_vec(),
            tools,
            tool_calls_allowed: offer_tools && self.has_tools(),
            output_schema: match (&plan.dialects, dialect) {
                _ if !structured => None,
                (Some(AgentDialects { object_schema: Some(spec), .. }), Some(OutputDialect::JsonObjectSchema)) => {
                    Some(spec.clone())
                }
                _ => plan.native_schema.clone(),
            },
            max_tokens: plan.config.tokens(),
            agent: plan.config.clone(),
            dialect,
            attempt,
            max_turns: plan.config.turns(),
            workdir: self.ctx.workdir.clone(),
        }
    }
}
