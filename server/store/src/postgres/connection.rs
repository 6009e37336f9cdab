//! Connecting to PostgreSQL and how its failures read: the connect timeout, where a
//! store connects (for messages, never with the password), and PostgreSQL and pool
//! errors with their causes, as the store's errors.

use conclave_core::StoreError;
use deadpool_postgres::PoolError;
use std::fmt;
use std::time::Duration;
use tokio_postgres::config::Host;

/// How long connecting may take before the server counts as unreachable.
pub(super) const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// Where a store connects, for messages: never the password.
#[derive(Debug, Clone)]
pub(super) struct Target {
    host: String,
    database: String,
    user: String,
}

impl Target {
    pub(super) fn of(config: &tokio_postgres::Config) -> Target {
        let port = config.get_ports().first().copied().unwrap_or(5432);
        let host = match config.get_hosts().first() {
            Some(Host::Tcp(name)) => format!("{name}:{port}"),
            Some(Host::Unix(dir)) => format!("the Unix socket in {} (port {port})", dir.display()),
            None => format!("localhost:{port}"),
        };
        let user = config.get_user().map(str::to_string).unwrap_or_else(|| "(the system user)".into());
        let database = config.get_dbname().map(str::to_string).unwrap_or_else(|| user.clone());
        Target { host, database, user }
    }
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "PostgreSQL at {} (database `{}`, user `{}`)", self.host, self.database, self.user)
    }
}

/// An error with its causes: tokio-postgres keeps the server's message in the source.
pub(super) fn describe(e: &(dyn std::error::Error + 'static)) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

pub(super) fn describe_pool(e: &PoolError) -> String {
    match e {
        PoolError::Backend(e) => describe(e),
        PoolError::Timeout(_) => format!("no answer within {} seconds", CONNECT_TIMEOUT.as_secs()),
        other => describe(other),
    }
}

pub(super) fn backend(e: tokio_postgres::Error) -> StoreError {
    StoreError::Backend(format!("PostgreSQL: {}", describe(&e)))
}

pub(super) fn pool_error(e: PoolError) -> StoreError {
    StoreError::Backend(format!("cannot get a PostgreSQL connection: {}", describe_pool(&e)))
}

pub(super) fn corrupt(run_id: &str, message: String) -> StoreError {
    StoreError::Corrupt { run_id: run_id.to_string(), message }
}
