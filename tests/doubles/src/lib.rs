//! Test doubles of Conclave's boundaries: a scripted fake provider (`fake.rs`), a
//! provider answering eval cases from hand-written answers (`answers.rs`), an
//! in-memory run store and queue (`memory.rs`), fake MCP servers (`tool_servers.rs`), and the conformance suites every
//! [`RunStore`](conclave_core::RunStore) (`conformance.rs`) and
//! [`RunQueue`](conclave_core::RunQueue) (`queue.rs`) implementation must pass.
//!
//! **Invariant:** only tests, benchmarks and the `conclave-testbed` harness depend on
//! this crate; the `conclave` binary never does, so no build of it can contain a test
//! double (`tests/tests/it/tidy.rs` reads the built binary to check).

pub mod answers;
pub mod conformance;
pub mod fake;
pub mod memory;
pub mod queue;
pub mod tool_servers;

pub use answers::AnswersProvider;
pub use fake::{CallSpan, FakeProvider, FakeStep};
pub use memory::MemoryStore;
pub use tool_servers::FakeToolServers;
