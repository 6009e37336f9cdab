//! The boundaries every other server crate meets at: the [`Provider`] trait and the
//! conversation it continues, the [`StreamSink`] providers stream into, the
//! [`ToolRunner`] agents' tool calls go through, the [`RunStore`] runs are kept in,
//! and the [`RunQueue`] workers claim runs from. Also the small pieces every side shares: retry policy, prices, secrets and
//! the one point where they are redacted, recording calls and replaying them (`record.rs`), and the owner tokens that tell live runs
//! from dead ones. The test doubles of these traits live in `conclave-doubles`.
//!
//! **Invariant:** no vendor, no HTTP, no database, no review logic.

pub mod owner;
pub mod pricing;
pub mod provider;
pub mod queue;
pub mod record;
pub mod record_tools;
pub mod redact;
pub mod registry;
pub mod retry;
pub mod secret;
pub mod sink;
pub mod store;
pub mod tool_servers;
pub mod tools;

pub use owner::{owner_alive, owner_token};
pub use pricing::PriceTable;
pub use provider::{
    AgentReply, AgentRequest, Capabilities, EndpointDialects, Message, Provider, ProviderError, SchemaSpec, StopReason,
    ToolCall, ToolSpec,
};
pub use queue::{Cancel, Job, Lease, QueueStats, RunQueue};
pub use redact::{
    REDACTED, RedactingProvider, Redactor, install_process_redactor, mask_url_credentials, process_redactor,
    register_secret,
};
pub use registry::ProviderRegistry;
pub use retry::RetryPolicy;
pub use secret::Secret;
pub use sink::{DiscardSink, StreamSink};
pub use store::{
    CachedOutput, NewRun, REVIEW_BRANCH_PATH, REVIEW_REPOSITORY_KEY, ReviewOf, RunStore, StoreError, StoredDismissal,
    dequeued_event, interrupted_event,
};
pub use tool_servers::{ServerPlace, ToolServer, ToolServerError, ToolServers};
pub use tools::{ToolOutcome, ToolRunner};

/// Built-in tool ids an agent may list in `tools`.
pub const BUILTIN_TOOLS: &[&str] =
    &["read_file", "list_files", "grep", "find_definition", "find_references", "outline"];

/// Milliseconds since the Unix epoch.
pub fn now_ms() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_millis() as u64).unwrap_or(0)
}
