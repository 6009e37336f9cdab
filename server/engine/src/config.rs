//! What an engine is given ([`EngineConfig`], shared by all its runs) and what each
//! run brings besides its conclave and input ([`RunOptions`], with the agents it
//! samples: [`Samples`], and the agents that run once per part of a partitioned
//! input: [`Parts`]).

use conclave_core::{PriceTable, Redactor, RetryPolicy, ToolRunner};
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use crate::fleet::FleetLimits;
use crate::policy::OutputPolicy;
use crate::reuse::Reuse;

/// Engine-wide settings.
#[derive(Debug, Clone)]
pub struct EngineConfig {
    /// Nodes running at once across every run of the engine (a conclave may lower
    /// it for its own runs, never raise it).
    pub max_concurrency: usize,
    /// Concurrent calls per provider across every run (a conclave may lower them).
    pub provider_limits: HashMap<String, usize>,
    /// Timeout for nodes that set none.
    pub node_timeout: Option<Duration>,
    /// How provider faults are retried.
    pub retry: RetryPolicy,
    /// Prices for the cost of each call.
    pub prices: Arc<PriceTable>,
    /// Whether prompts and answers go into the `chat` spans (off unless the operator
    /// asks: they may hold code and secrets of the repository under review).
    pub capture_message_content: bool,
    /// Provider limits held across every process sharing the run store's database
    /// (servers and workers), when there are any.
    pub fleet: Option<FleetLimits>,
    /// Whether command nodes may run unconfined where the kernel cannot confine
    /// them (`--allow-unsandboxed`); otherwise such a node fails, saying why.
    pub allow_unsandboxed: bool,
    /// Redacts what commands print before it becomes an event (the keys and tokens
    /// the process knows).
    pub redactor: Option<Arc<Redactor>>,
}

impl Default for EngineConfig {
    fn default() -> Self {
        EngineConfig {
            max_concurrency: 16,
            provider_limits: HashMap::new(),
            node_timeout: Some(Duration::from_secs(600)),
            retry: RetryPolicy::default(),
            prices: Arc::new(PriceTable::builtin()),
            capture_message_content: false,
            fleet: None,
            allow_unsandboxed: false,
            redactor: None,
        }
    }
}

/// What one run brings besides its conclave and input.
#[derive(Debug, Clone, Default)]
pub struct RunOptions {
    /// The tools agents may call, if this run offers any.
    pub tools: Option<Arc<dyn ToolRunner>>,
    /// How structured outputs are shaped and compared, if at all.
    pub policy: Option<Arc<dyn OutputPolicy>>,
    /// The directory agents work in (a review's repository), for providers that
    /// run in one.
    pub workdir: Option<std::path::PathBuf>,
    /// Run from a node, reusing an earlier run's other outputs.
    pub reuse: Option<Reuse>,
    /// Run these agents several times each and merge their answers.
    pub samples: Option<Samples>,
    /// Ignore the cache for this run (`--no-cache`): cached nodes run, and what they
    /// answer is not stored.
    pub no_cache: bool,
    /// Whether command nodes may run, and which programs; without it a conclave
    /// with a command node is refused.
    pub commands: Option<Arc<Commands>>,
    /// A budget given for this run besides the conclave's own (the command line, the
    /// API): the tighter of the two holds, limit by limit, and is stored with the run.
    pub budget: Option<conclave_shared::Budget>,
    /// The run input is partitioned (its array field [`PARTS_FIELD`]) and these
    /// agents run once per part, their answers merged by the policy.
    pub parts: Option<Parts>,
}

/// The run input's field holding its parts, when a run is partitioned.
pub const PARTS_FIELD: &str = "parts";

/// Which agents run once per part of a partitioned run input. Each part is an object
/// whose fields override the run input's for those agents (the run input without
/// [`PARTS_FIELD`]; a null field removes the run input's); every other node receives
/// the run input without the parts. The
/// parts live in the run input, so a worker or a resumed run finds the same ones.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Parts {
    /// The agents that run once per part.
    pub nodes: Vec<String>,
}

impl Parts {
    /// Whether `node_id` runs once per part.
    pub fn covers(&self, node_id: &str) -> bool {
        self.nodes.iter().any(|n| n == node_id)
    }
}

/// The programs a run's command nodes may start, and the workspace they may run in.
/// Commands do anything their user can, so a run allows them only for a conclave
/// that is the user's own file on disk (any program), or for the programs a server
/// was told to allow.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Commands {
    /// The programs allowed; `None` allows any.
    pub programs: Option<Vec<String>>,
    /// The workspace, where `cwd: workspace` runs and where commands run when the
    /// run has no repository.
    pub workspace: Option<std::path::PathBuf>,
}

impl Commands {
    /// Any program, in `workspace`.
    pub fn any(workspace: Option<std::path::PathBuf>) -> Commands {
        Commands { programs: None, workspace }
    }

    /// Whether `program` may start.
    pub fn allows(&self, program: &str) -> bool {
        self.programs.as_ref().is_none_or(|list| list.iter().any(|p| p == program))
    }
}

/// The most samples of one agent.
pub const MAX_SAMPLES: u32 = 16;

/// Which agents run several times, and how many times.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Samples {
    /// Runs of each agent (2 to [`MAX_SAMPLES`]; 1 runs it once).
    pub count: u32,
    /// The agents sampled; each must have a findings-shaped output.
    pub nodes: Vec<String>,
}

impl Samples {
    /// How many times `node_id` runs.
    pub fn count_for(&self, node_id: &str) -> u32 {
        if self.nodes.iter().any(|n| n == node_id) { self.count } else { 1 }
    }
}
