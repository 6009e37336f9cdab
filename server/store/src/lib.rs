//! The run stores behind `RunStore`. Today: SQLite (`sqlite/`), one file shared by
//! every local process, written by one thread with group commit, each write returning
//! only once it is committed.

mod sqlite;

pub use sqlite::SqliteStore;
