//! The run stores behind `RunStore` (and `RunQueue`): SQLite (`sqlite/`), one file
//! shared by every local process, written by one thread with group commit, each write
//! returning only once it is committed; and PostgreSQL (`postgres/`), for servers
//! sharing one database, with batched commits. Both keep a running run's nodes as
//! its event log and store them whole when it ends; `folds.rs` is the writers' fold
//! of the runs they are writing, so that end needs no read of the log;
//! `delivery_row.rs` is a webhook delivery as both stores keep it, and
//! `pull_request_row.rs` a pull request's reviews and a run summary's request.

mod delivery_row;
#[cfg(test)]
mod ended_run;
mod folds;
mod pull_request_row;
#[cfg(test)]
mod reference;
mod sqlite;

pub mod postgres;

pub use postgres::PostgresStore;
pub use sqlite::SqliteStore;
