//! `--max-concurrency`, defined once for every command that runs nodes: `conclave
//! run`, `review`, `worker` and `serve`.

use clap::Args;

/// How many nodes one process runs at once.
#[derive(Debug, Clone, Copy, Args)]
pub struct Concurrency {
    /// Most nodes running at once in this process, over all of its runs (1 to 1024).
    /// Each provider's limit (CONCLAVE_PROVIDER_LIMITS, and 1 for the local model)
    /// holds within it, across every process on the same --db.
    #[arg(long, default_value_t = 16, value_parser = clap::value_parser!(u16).range(1..=1024))]
    pub max_concurrency: u16,
}

impl Concurrency {
    /// The limit, as the engine takes it.
    pub fn nodes(self) -> usize {
        usize::from(self.max_concurrency)
    }
}
