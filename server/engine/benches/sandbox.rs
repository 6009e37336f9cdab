//! What the sandbox adds to a command node: the same program (`true`) started as
//! the engine starts a command (scrubbed environment, its own process group, piped
//! output, waited for), once plainly and once in the sandbox the engine sets up for
//! every command node (`command_sandbox::prepare`: the scratch directory, the
//! Landlock ruleset, the seccomp filter, the limits and, as root, a `pids` cgroup;
//! then the ruleset applied between fork and exec, and the scratch directory and
//! cgroup removed afterwards, each on a blocking thread as the engine does it). The
//! target is at most 10 ms added per command.
//!
//! Run with `cargo bench -p conclave-engine --bench sandbox`. Prints the median
//! time of each over interleaved rounds, and the median added time.

use conclave_engine::command_sandbox::{self, Reach};
use conclave_shared::CommandConfig;
use std::process::Stdio;
use std::time::{Duration, Instant};

const ROUNDS: usize = 200;

fn command(program: &str) -> tokio::process::Command {
    let mut command = tokio::process::Command::new(program);
    command.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped()).process_group(0).kill_on_drop(true);
    command
}

async fn plain(config: &CommandConfig) -> Duration {
    let started = Instant::now();
    let mut command = command(config.program());
    command.env_clear().env("PATH", std::env::var_os("PATH").unwrap_or_default());
    let output = command.output().await.expect("the program runs");
    assert!(output.status.success());
    started.elapsed()
}

async fn sandboxed(config: &CommandConfig, workdir: &std::path::Path) -> Duration {
    let started = Instant::now();
    let mut command = command(config.program());
    let reach = Reach { workdir: workdir.to_path_buf(), workspace: None, allow_unsandboxed: false };
    let prepared = command_sandbox::prepare(config, "bench", reach).await.expect("the sandbox is set up");
    let sandbox = prepared.apply(&mut command, config);
    let output = command.output().await.expect("the program runs");
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    sandbox.end().await;
    started.elapsed()
}

fn median(mut times: Vec<Duration>) -> Duration {
    times.sort_unstable();
    times[times.len() / 2]
}

fn ms(d: Duration) -> String {
    format!("{:.2} ms", d.as_secs_f64() * 1000.0)
}

fn main() {
    if let Err(why) = conclave_sandbox::probe().can_confine() {
        println!("skipped: {why}");
        return;
    }
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().expect("runtime");
    let workdir = tempfile::tempdir().expect("tempdir");
    let config = CommandConfig::new(vec!["true".into()]);
    let (mut plain_times, mut sandboxed_times, mut added) = (Vec::new(), Vec::new(), Vec::new());
    runtime.block_on(async {
        for _ in 0..10 {
            plain(&config).await;
            sandboxed(&config, workdir.path()).await;
        }
        for _ in 0..ROUNDS {
            let (p, s) = (plain(&config).await, sandboxed(&config, workdir.path()).await);
            plain_times.push(p);
            sandboxed_times.push(s);
            added.push(s.saturating_sub(p));
        }
    });
    let layers =
        conclave_sandbox::layer_names(&conclave_sandbox::probe().layers(conclave_sandbox::probe().landlock_abi, false));
    println!("command node `true`, {ROUNDS} interleaved rounds; layers: {layers}");
    println!("  without the sandbox: median {}", ms(median(plain_times)));
    println!("  in the sandbox:      median {}", ms(median(sandboxed_times)));
    println!("  added per command:   median {} (target: at most 10 ms)", ms(median(added)));
}
