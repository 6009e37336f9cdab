//! `conclave providers [--probe]`: each provider and whether it is configured; with
//! `--probe`, each configured one is asked a tiny structured question, and the line
//! says which structured-output dialect its server speaks (and which it rejected).
//! For a server whose dialect varies, what the probe found is remembered in the run
//! store, so later runs start with it.

use clap::Args;
use conclave_core::{ProviderError, RunStore};
use conclave_engine::probe::probe;
use conclave_shared::OutputDialect;
use conclave_shared::api::ProviderProbe;

use super::exit;
use crate::workspace::Workspace;

/// Options of `conclave providers`.
#[derive(Debug, Args)]
pub struct ProvidersArgs {
    /// Ask each configured provider which structured-output dialect its server speaks
    /// (one tiny request each).
    #[arg(long)]
    pub probe: bool,
    /// Only this provider.
    #[arg(long)]
    pub provider: Option<String>,
    /// With --probe: the model to ask (default: each provider's default model).
    #[arg(long, requires = "probe")]
    pub model: Option<String>,
}

/// Lists (and probes) the providers, remembering what a probe found in `store`.
/// Exits 3 when a probe failed.
pub async fn run(args: ProvidersArgs, workspace: &Workspace, store: Option<&dyn RunStore>) -> u8 {
    let registry = &workspace.providers;
    let mut statuses = registry.status();
    if let Some(only) = &args.provider {
        statuses.retain(|(name, _)| name == only);
        if statuses.is_empty() {
            eprintln!("error: unknown provider `{only}`; known providers: {}", registry.known_names().join(", "));
            return exit::CONFIG;
        }
    }
    let mut failed = false;
    for (name, status) in statuses {
        match (status, registry.get(&name)) {
            (Ok(()), Some(provider)) if args.probe => {
                let found = probe(provider.clone(), args.model.as_deref()).await;
                failed |= found.error.is_some();
                println!("{}", describe(&found));
                if let Some(store) = store {
                    remember(store, &found).await;
                }
            }
            (Ok(()), _) => println!("{name:<12} configured"),
            (Err(ProviderError::Config { message, .. }), _) => println!("{name:<12} not configured: {message}"),
            (Err(e), _) => println!("{name:<12} not usable: {e}"),
        }
    }
    if failed { exit::PROVIDER } else { exit::OK }
}

/// Remembers the dialect a server accepted, for later runs against it.
async fn remember(store: &dyn RunStore, found: &ProviderProbe) {
    let (Some(endpoint), Some(dialect)) = (&found.endpoint, found.dialect.as_deref().and_then(OutputDialect::parse))
    else {
        return;
    };
    match store.remember_endpoint_dialect(&found.provider, endpoint, dialect).await {
        Ok(()) => println!("{:<12}   remembered: runs against {endpoint} start with {dialect}", ""),
        Err(e) => eprintln!("warning: the dialect found for {endpoint} is not remembered: {e}"),
    }
}

/// One probed provider's line, with its rejections indented below it.
fn describe(found: &ProviderProbe) -> String {
    let seconds = found.duration_ms as f64 / 1000.0;
    let server = match &found.endpoint {
        Some(endpoint) => format!("{endpoint}, model {}", found.model),
        None => format!("model {}", found.model),
    };
    let mut line = match (&found.dialect, &found.error) {
        (Some(dialect), _) => {
            let checked = if found.valid { "answer valid" } else { "answer did not match the schema" };
            format!("{:<12} dialect {dialect:<18} {server}; {checked}; {seconds:.1} s", found.provider)
        }
        (None, Some(error)) => format!("{:<12} probe failed       {server}: {error}", found.provider),
        (None, None) => format!("{:<12} probe failed       {server}", found.provider),
    };
    for rejection in &found.rejected {
        line.push_str(&format!("\n{:<12}   rejected {}: {}", "", rejection.dialect, rejection.message));
    }
    line
}
