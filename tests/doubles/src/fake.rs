//! An in-tree fake provider for tests and benchmarks: scripted replies, latency and
//! failures, with a record of every call and of how calls overlapped in time.
//!
//! It is a test double. It lives in `conclave-doubles`, which the `conclave` binary never
//! depends on; it is never in the built-in registry and never listed to users; tests and the `conclave-testbed`
//! harness register it by hand.
//!
//! Without a script for a node, the fake reads its behaviour from the agent's `model`
//! string, a `;`-separated list: `delay=<ms>`, `fail=<message>`, `text=<reply>`, and
//! `json=<value>` (last, as it may contain `;`). An empty model echoes the input keys.

use async_trait::async_trait;
use conclave_shared::Usage;
use serde_json::{Value, json};
use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use conclave_core::{
    AgentReply, AgentRequest, Capabilities, Provider, ProviderError, StopReason, StreamSink, ToolCall,
};

/// One scripted answer.
#[derive(Debug, Clone)]
pub enum FakeStep {
    /// Answer after `delay`.
    Reply {
        /// Text streamed back.
        text: String,
        /// Structured answer, if any.
        json: Option<Value>,
        /// Latency before the answer.
        delay: Duration,
    },
    /// Ask for tool calls.
    Tools(Vec<ToolCall>),
    /// Fail after `delay`.
    Fail {
        /// The error returned.
        error: ProviderError,
        /// Latency before failing.
        delay: Duration,
    },
}

impl FakeStep {
    /// A JSON answer (also sent as its text) with no latency.
    pub fn json(value: Value) -> FakeStep {
        FakeStep::Reply { text: value.to_string(), json: Some(value), delay: Duration::ZERO }
    }

    /// A text answer with no latency.
    pub fn text(text: impl Into<String>) -> FakeStep {
        FakeStep::Reply { text: text.into(), json: None, delay: Duration::ZERO }
    }

    /// A failure with no latency.
    pub fn fail(error: ProviderError) -> FakeStep {
        FakeStep::Fail { error, delay: Duration::ZERO }
    }

    /// The same step after `delay`.
    pub fn after(self, delay: Duration) -> FakeStep {
        match self {
            FakeStep::Reply { text, json, .. } => FakeStep::Reply { text, json, delay },
            FakeStep::Fail { error, .. } => FakeStep::Fail { error, delay },
            tools @ FakeStep::Tools(_) => tools,
        }
    }
}

/// When one call ran, for overlap measurements.
#[derive(Debug, Clone)]
pub struct CallSpan {
    /// The node.
    pub node_id: String,
    /// When the call began.
    pub start: Instant,
    /// When it returned (`None` while running or if it was aborted).
    pub end: Option<Instant>,
}

/// The fake provider.
#[derive(Debug)]
pub struct FakeProvider {
    name: String,
    scripts: Mutex<HashMap<String, VecDeque<FakeStep>>>,
    calls: Mutex<Vec<AgentRequest>>,
    spans: Mutex<Vec<CallSpan>>,
    active: AtomicUsize,
    peak: AtomicUsize,
    capabilities: Capabilities,
}

impl FakeProvider {
    /// A fake registered under `name` (tests usually use `fake`), with no native
    /// structured output (so schemas travel as the prompt contract) and tool support.
    pub fn new(name: impl Into<String>) -> FakeProvider {
        FakeProvider {
            capabilities: Capabilities { native_schema: None, tools: true, context_window: None },
            name: name.into(),
            scripts: Mutex::default(),
            calls: Mutex::default(),
            spans: Mutex::default(),
            active: AtomicUsize::new(0),
            peak: AtomicUsize::new(0),
        }
    }

    /// The same fake claiming other capabilities. With a `context_window`, it counts
    /// a prompt as a token per four bytes of its system text and messages.
    pub fn with_capabilities(mut self, capabilities: Capabilities) -> FakeProvider {
        self.capabilities = capabilities;
        self
    }

    /// Queues answers for `node_id`, used one per call in order.
    pub fn script(&self, node_id: &str, steps: impl IntoIterator<Item = FakeStep>) {
        lock(&self.scripts).entry(node_id.to_string()).or_default().extend(steps);
    }

    /// Every request received, in arrival order.
    pub fn calls(&self) -> Vec<AgentRequest> {
        lock(&self.calls).clone()
    }

    /// Requests received for one node.
    pub fn calls_for(&self, node_id: &str) -> Vec<AgentRequest> {
        self.calls().into_iter().filter(|c| c.node_id == node_id).collect()
    }

    /// When each call ran.
    pub fn spans(&self) -> Vec<CallSpan> {
        lock(&self.spans).clone()
    }

    /// Most calls in flight at once.
    pub fn peak_concurrency(&self) -> usize {
        self.peak.load(Ordering::SeqCst)
    }

    fn next_step(&self, request: &AgentRequest) -> FakeStep {
        if let Some(step) = lock(&self.scripts).get_mut(&request.node_id).and_then(VecDeque::pop_front) {
            return step;
        }
        step_from_model(request)
    }
}

#[async_trait]
impl Provider for FakeProvider {
    fn name(&self) -> &str {
        &self.name
    }

    fn capabilities(&self) -> Capabilities {
        self.capabilities
    }

    fn default_model(&self) -> &str {
        ""
    }

    fn count_prompt_tokens(&self, request: &AgentRequest) -> Option<Result<usize, ProviderError>> {
        self.capabilities.context_window?;
        let messages: usize = request
            .messages
            .iter()
            .map(|m| match m {
                conclave_core::Message::User(text) | conclave_core::Message::Assistant { text, .. } => text.len(),
                conclave_core::Message::ToolResult { content, .. } => content.len(),
            })
            .sum();
        Some(Ok((request.system_text().len() + messages).div_ceil(4)))
    }

    async fn call(&self, request: &AgentRequest, stream: &dyn StreamSink) -> Result<AgentReply, ProviderError> {
        lock(&self.calls).push(request.clone());
        let span_index = {
            let mut spans = lock(&self.spans);
            spans.push(CallSpan { node_id: request.node_id.clone(), start: Instant::now(), end: None });
            spans.len() - 1
        };
        let now_active = self.active.fetch_add(1, Ordering::SeqCst) + 1;
        self.peak.fetch_max(now_active, Ordering::SeqCst);
        // Decrements even when the engine aborts this future mid-sleep.
        let _guard = ActiveGuard(&self.active);

        let step = self.next_step(request);
        let result = match step {
            FakeStep::Reply { text, json, delay } => {
                if !delay.is_zero() {
                    tokio::time::sleep(delay).await;
                }
                if !text.is_empty() {
                    stream.text(&text).await;
                }
                let usage = Usage::tokens(request.input.to_string().len() as u64 / 4, text.len() as u64 / 4);
                Ok(AgentReply { text, json, tool_calls: Vec::new(), usage, stop: StopReason::EndTurn })
            }
            FakeStep::Tools(calls) => {
                for call in &calls {
                    stream.tool_call(&call.name, call.arguments.clone()).await;
                }
                Ok(AgentReply {
                    text: String::new(),
                    json: None,
                    tool_calls: calls,
                    usage: Usage::default(),
                    stop: StopReason::ToolUse,
                })
            }
            FakeStep::Fail { error, delay } => {
                if !delay.is_zero() {
                    tokio::time::sleep(delay).await;
                }
                Err(error)
            }
        };
        if let Some(span) = lock(&self.spans).get_mut(span_index) {
            span.end = Some(Instant::now());
        }
        result
    }
}

struct ActiveGuard<'a>(&'a AtomicUsize);

impl Drop for ActiveGuard<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Behaviour described by the agent's model string (see the module docs).
fn step_from_model(request: &AgentRequest) -> FakeStep {
    let mut delay = Duration::ZERO;
    let mut rest = request.model.as_str();
    let mut reply: Option<FakeStep> = None;
    while !rest.is_empty() {
        if let Some(value) = rest.strip_prefix("json=") {
            let parsed = serde_json::from_str(value).unwrap_or_else(|_| Value::String(value.to_string()));
            reply = Some(FakeStep::json(parsed));
            break;
        }
        let (item, tail) = rest.split_once(';').unwrap_or((rest, ""));
        rest = tail;
        if let Some(ms) = item.strip_prefix("delay=") {
            delay = Duration::from_millis(ms.trim_end_matches("ms").parse().unwrap_or(0));
        } else if let Some(message) = item.strip_prefix("fail=") {
            reply = Some(FakeStep::fail(ProviderError::Server { status: 500, message: message.to_string() }));
        } else if let Some(text) = item.strip_prefix("text=") {
            reply = Some(FakeStep::text(text));
        }
    }
    let reply = reply.unwrap_or_else(|| {
        let upstream: Vec<&String> =
            request.input.get("upstream").and_then(Value::as_object).map(|m| m.keys().collect()).unwrap_or_default();
        FakeStep::json(json!({"node": request.node_id, "upstream": upstream}))
    });
    reply.after(delay)
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}
