//! `conclave providers [--probe]`: each provider and whether it is configured; with
//! `--probe`, each configured one is asked a tiny structured question, and the line
//! says which structured-output dialect its server speaks (and which it rejected).

use clap::Args;
use conclave_core::ProviderError;
use conclave_engine::probe::probe;
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

/// Lists (and probes) the providers. Exits 3 when a probe failed.
pub async fn run(args: ProvidersArgs, workspace: &Workspace) -> u8 {
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
                let found = probe(provider.as_ref(), args.model.as_deref()).await;
                failed |= found.error.is_some();
                println!("{}", describe(&found));
            }
            (Ok(()), _) => println!("{name:<12} configured"),
            (Err(ProviderError::Config { message, .. }), _) => println!("{name:<12} not configured: {message}"),
            (Err(e), _) => println!("{name:<12} not usable: {e}"),
        }
    }
    if failed { exit::PROVIDER } else { exit::OK }
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
