//! The `conclave` command line with the in-tree fake provider registered as `fake`.
//!
//! End-to-end tests drive this binary as a real process (to kill it mid-run, to read
//! its exit codes) without any network provider. It is a test harness: it is not
//! installed and the fake is never offered to users of `conclave`.

use conclave_doubles::FakeProvider;
use std::sync::Arc;

fn main() -> std::process::ExitCode {
    let mut providers = conclave_providers::builtin(conclave_server::SECRET_VARIABLES);
    providers.register(Arc::new(FakeProvider::new("fake")));
    conclave_server::cli::main(providers)
}
