//! Conclave as an MCP server: `conclave mcp` over stdio and `/mcp` (Streamable HTTP,
//! stateless) on `conclave serve`, through the official Rust SDK (rmcp).
//!
//! Layout: `transport.rs` (the two ways in), `server.rs` (the handler: tools,
//! resources, tasks), `tools.rs` (each tool's name, description and schemas),
//! `review.rs` (`review`, `get_review`), `runs.rs` (`run_conclave`, `get_run`,
//! `list_runs`, `approve`), `catalog.rs` (`list_conclaves`, `validate_conclave`),
//! `resources.rs` (conclave files and review reports), `tasks.rs` (a review as a
//! task), `progress.rs` (progress per node state), `findings.rs` (paged findings),
//! `args.rs` and `answers.rs` (the schemas, and the answer cap), `context.rs` (what
//! a request is answered from).
//!
//! **Invariant:** every behaviour goes through the API's functions (the review
//! pipeline's start, plain runs, decisions, cancels, the event follower, the
//! repository roots), never a copy; nothing is kept between requests.

mod answers;
mod args;
mod catalog;
mod context;
mod findings;
mod progress;
mod resources;
mod review;
mod runs;
mod server;
mod tasks;
mod tools;
mod transport;

pub use context::{McpContext, Transport};
pub use server::ConclaveMcp;
pub use transport::{McpService, http_service, serve_stdio};
