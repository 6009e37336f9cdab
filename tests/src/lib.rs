//! The workspace-level end-to-end tests' own support: the editor's browser harness,
//! shared by the browser tests and the editor benchmark. Everything the server-side
//! tests share as well (fake LLM server, workspaces, git) is in `conclave-testkit`.

pub mod browser;
pub mod devtools;
