//! Test doubles, behind the `testing` feature: a scripted fake provider, an
//! in-memory run store and queue, and the conformance suites every
//! [`RunStore`](crate::RunStore) (`conformance.rs`) and [`RunQueue`](crate::RunQueue)
//! (`queue.rs`) implementation must pass. Never compiled into a release build.

pub mod conformance;
pub mod fake;
pub mod memory;
pub mod queue;

pub use fake::{CallSpan, FakeProvider, FakeStep};
pub use memory::MemoryStore;
