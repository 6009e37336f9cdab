//! Test doubles, behind the `testing` feature: a scripted fake provider, an
//! in-memory run store, and the conformance suite every [`RunStore`](crate::RunStore)
//! implementation must pass. Never compiled into a release build.

pub mod conformance;
pub mod fake;
pub mod memory;

pub use fake::{CallSpan, FakeProvider, FakeStep};
pub use memory::MemoryStore;
