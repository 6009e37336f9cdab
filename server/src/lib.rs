//! Conclave's outermost crate: the `conclave` command line and the HTTP API, both
//! over the same workspace (the catalog on disk, schema roots, providers) and the same
//! crates below: `conclave-catalog`, `conclave-engine`, `conclave-review`,
//! `conclave-providers` and `conclave-store`.
//!
//! Layout: `workspace.rs` (where conclaves and schemas are found, engine settings from
//! the environment, opening the store), `api/` (axum routes, SSE, errors), `mcp/` (Conclave
//! as an MCP server, over stdio and at `/mcp`, through the API's functions), `cli/` (the
//! commands and their exit codes), `post/` (publishing a review on a pull or merge
//! request), `forge_app/` (Conclave's credentials on the forges as a service: a GitHub
//! App's installation tokens, single-repository and GitLab tokens, who may command a
//! review), `mirrors/` (bare mirrors of the reviewed repositories, fetched with those
//! tokens, and worktrees of them), `forge_service/` (reviews without a CI job: the
//! webhook dispatcher queueing one review per pull request at a time, and a worker's
//! review of one: fetched, reviewed, posted), `observe/` (the metrics recorder and the trace exporter), `worker.rs`
//! (claiming queued runs and running them under a lease).
//!
//! **Invariant:** this is the only crate that knows axum and clap; it owns no engine,
//! review or store logic, and reaches them through their crates' public functions.

pub mod api;
pub mod cli;
pub mod forge_app;
pub mod forge_service;
pub mod mcp;
pub mod mirrors;
pub mod observe;
pub mod post;
pub mod worker;
pub mod workspace;

pub use workspace::Workspace;

/// The server's environment variables whose values are secrets: its token, the
/// forges' tokens and their webhooks' secrets. What providers say is redacted of
/// them, beside the providers' own keys.
pub const SECRET_VARIABLES: &[&str] = &[
    "CONCLAVE_TOKEN",
    "GITHUB_TOKEN",
    "GITLAB_TOKEN",
    "CONCLAVE_GITHUB_TOKEN",
    "CONCLAVE_GITLAB_TOKEN",
    "CONCLAVE_GITHUB_WEBHOOK_SECRET",
    "CONCLAVE_GITLAB_WEBHOOK_SECRET",
];
