//! The server's integration tests: the HTTP API without a socket, and the real
//! `conclave` binary as a user runs it. One binary, a module per concern.

mod api;
mod api_approvals;
mod api_evals;
mod api_review_twins;
mod api_reviews;
mod api_sandbox;
mod attack;
mod attack_mcp;
mod attack_posting;
mod attack_webhooks;
mod budget;
mod cli_reference;
mod editor_files;
mod eval_cli;
mod eval_injected;
mod fleet;
mod forge_app;
mod local_model;
mod mcp_agents;
mod mcp_server;
mod metrics;
mod openai_local_server;
mod post_plan;
mod provider_claude_code;
mod providers_cli;
mod record_replay;
mod review_analyzers;
mod review_caching;
mod review_e2e;
mod review_history;
mod review_impact;
mod review_incremental;
mod review_invisible_text;
mod review_parts;
mod review_post;
mod review_python_lanes;
mod review_replies;
mod review_rules;
mod review_samples;
mod review_verified;
mod run_events;
mod runs_from_node;
mod sandbox_probe;
mod store_cli;
mod symbols_cli;
mod traces;
mod untrusted_change;
mod validate_cli;
mod webhook_reviews;
mod webhooks;
mod worker;
mod workers_cli;

/// Held by every test that runs a language model on this machine (the embedded local
/// model, the llama-cpp-python server). Each keeps every core busy, and two at once
/// make both many times slower than taking turns: their threads spin against each
/// other for the two cores.
static MODEL_CORES: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());
