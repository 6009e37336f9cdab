//! Test support shared by every crate's tests: a fake LLM server on a loopback socket
//! that speaks each vendor's real streaming wire format, answers made up from the
//! request's schema, fakes of the GitHub and GitLab REST APIs, conclaves built in code and checked as files are, temporary
//! workspaces with conclave files, git fixtures, a run store that records the reads
//! asked of it (`recording_store.rs`), the vendors' prompt caches as documented
//! (`prompt_cache.rs`), a GFM rendering that tells what of a text is live
//! (`inert_check.rs`), and a real llama-cpp-python server on loopback
//! (`llama_server.rs`).
//!
//! These are test doubles: no crate depends on this one outside its tests.

pub mod answers;
pub mod checked;
pub mod fake_forge;
pub mod fake_server;
pub mod inert_check;
pub mod llama_server;
pub mod prompt_cache;
pub mod recording_store;
pub mod wire;
pub mod workspace;

pub use checked::{check, checked, test_catalog};
pub use fake_forge::{FakeForge, ForgeRequest, ForgeState, github::FakeGitHub, gitlab::FakeGitLab};
pub use fake_server::{FLOOD_CEILING, FakeServer, Recorded, Reply, Route};
pub use inert_check::{live_parts, render_gfm};
pub use prompt_cache::{CacheRules, CacheUsage, PromptCache};
pub use recording_store::{Read, RecordingStore};
pub use workspace::{TempWorkspace, cached_tool, fake_conclave, git, no_tools};
