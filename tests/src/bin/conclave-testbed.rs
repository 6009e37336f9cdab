//! The `conclave` command line with the in-tree fake provider registered as `fake`.
//!
//! End-to-end tests drive this binary as a real process (to kill it mid-run, to read
//! its exit codes) without any network provider. With `CONCLAVE_TESTBED_ANSWERS=DIR`
//! and `CONCLAVE_TESTBED_STAND_IN=PROVIDER`, that provider is replaced by one
//! answering eval cases from `DIR` (see `conclave_doubles::answers`), to write an eval
//! dataset's recordings with `--record`. It is a test harness: it is not
//! installed and the fake is never offered to users of `conclave`.

use conclave_doubles::{AnswersProvider, FakeProvider};
use std::sync::Arc;

fn main() -> std::process::ExitCode {
    let mut providers = conclave_providers::builtin(conclave_server::SECRET_VARIABLES);
    providers.register(Arc::new(FakeProvider::new("fake")));
    if let (Ok(dir), Ok(name)) = (std::env::var("CONCLAVE_TESTBED_ANSWERS"), std::env::var("CONCLAVE_TESTBED_STAND_IN"))
        && let Some(real) = providers.get(&name)
    {
        let stand_in = AnswersProvider::standing_in_for(real.as_ref(), dir.into());
        providers.register(Arc::new(stand_in));
    }
    conclave_server::cli::main(providers)
}
