//! Workspace-level end-to-end tests: the real binaries as a user runs them, the
//! editor in headless Chromium, and the code's own rules (`tidy`). One binary, a
//! module per concern.

mod blocking;
mod cli_run_from;
mod cli_runs;
mod docs_links;
mod editor_browser;
mod editor_builder;
mod editor_delivery;
mod editor_embedded;
mod editor_evals;
mod editor_fit;
mod editor_graph;
mod editor_kinds;
mod editor_mcp;
mod editor_run_dialog;
mod editor_runs;
mod editor_settings;
mod editor_split;
mod eval_recordings;
mod eval_report;
mod review_answered;
mod review_paths;
mod tidy;
