//! The run stores behind `RunStore` (and `RunQueue`): SQLite (`sqlite/`), one file
//! shared by every local process, written by one thread with group commit, each write
//! returning only once it is committed; and PostgreSQL (`postgres/`), for servers
//! sharing one database, with batched commits.

mod sqlite;

pub mod postgres;

pub use postgres::PostgresStore;
pub use sqlite::SqliteStore;
