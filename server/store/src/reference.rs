//! The in-memory store of `conclave-doubles` passes the same conformance suites as
//! the real stores, so the suites stay honest about what a store must do and the
//! engine's tests run on a store that behaves like these.

use conclave_doubles::MemoryStore;
use std::sync::Arc;

#[tokio::test]
async fn memory_store_conforms() {
    conclave_doubles::conformance::run_all(&|| Arc::new(MemoryStore::new())).await;
}

#[tokio::test]
async fn memory_queue_conforms() {
    conclave_doubles::queue::run_all(&|| Arc::new(MemoryStore::new())).await;
}
