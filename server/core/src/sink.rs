//! What a provider streams into while it answers: that its response began, then
//! pieces of text and tool calls, as they arrive. The engine implements it over a
//! run's event bus, so providers never see the bus or the store.

use async_trait::async_trait;
use serde_json::Value;

/// Receives one node's streamed output.
#[async_trait]
pub trait StreamSink: Send + Sync {
    /// Says that the vendor began to answer: the response's first streamed event
    /// (Anthropic's `message_start`, OpenAI's first chunk) or, for an answer sent
    /// whole, its headers. From then on the vendor's prompt cache holds what the
    /// call wrote, so sibling calls waiting to read it may go. Calls after the first
    /// say nothing more; a provider that never calls it leaves them waiting until
    /// its call returns.
    fn began(&self) {}

    /// Reports a piece of streamed text.
    async fn text(&self, text: &str);

    /// Reports a tool call the model made.
    async fn tool_call(&self, tool: &str, arguments: Value);
}

/// A sink that keeps nothing, for calls made outside a run (probes, tests).
#[derive(Debug, Clone, Copy, Default)]
pub struct DiscardSink;

#[async_trait]
impl StreamSink for DiscardSink {
    async fn text(&self, _text: &str) {}

    async fn tool_call(&self, _tool: &str, _arguments: Value) {}
}
