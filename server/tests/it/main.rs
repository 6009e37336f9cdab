//! The server's integration tests: the HTTP API without a socket, and the real
//! `conclave` binary as a user runs it. One binary, a module per concern.

mod api;
mod attack;
mod fleet;
mod local_model;
mod metrics;
mod openai_local_server;
mod post_plan;
mod provider_claude_code;
mod providers_cli;
mod review_e2e;
mod review_history;
mod review_post;
mod review_samples;
mod runs_from_node;
mod store_cli;
mod traces;
mod validate_cli;
mod worker;
mod workers_cli;
