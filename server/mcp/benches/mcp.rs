//! What Conclave costs around MCP servers:
//! - starting a stdio server and listing its tools through `McpHost` (in the command
//!   sandbox, as a run starts it): the median over rounds, for the fixture server
//!   (Python, standard library only) and, when `scripts/fetch-mcp-servers.sh`
//!   installed them, server-everything (Node) and mcp-server-git (Python);
//! - one tool call's overhead: the same `echo` of the fixture server called straight
//!   over rmcp (a plain child process, the SDK's client) and through Conclave (the
//!   server started by `McpHost` in its sandbox, the call through `ToolServer::call`,
//!   its answer rendered and capped as a model reads it), interleaved; the target is
//!   at most 2 ms added per call.
//!
//! Run with `cargo bench -p conclave-mcp --bench mcp`.

use conclave_core::{ServerPlace, ToolServer, ToolServers};
use conclave_mcp::McpHost;
use conclave_shared::McpServerConfig;
use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

const START_ROUNDS: usize = 15;
const CALL_ROUNDS: usize = 400;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().expect("the workspace root")
}

fn fixtures() -> PathBuf {
    root().join("tests/fixtures/mcp")
}

fn entry(value: Value) -> McpServerConfig {
    serde_json::from_value(value).expect("an entry")
}

fn fixture() -> McpServerConfig {
    let script = fixtures().join("fixture_server.py");
    entry(json!({"command": ["/usr/bin/python3", script], "sandbox": {"read": [fixtures()]}}))
}

/// The real servers, when installed; mcp-server-git on `repository`.
fn installed(repository: &Path) -> Vec<(&'static str, McpServerConfig)> {
    let home = std::env::var_os("HOME").map(PathBuf::from).unwrap_or_default();
    let cache = std::env::var_os("XDG_CACHE_HOME").map(PathBuf::from).unwrap_or(home.join(".cache")).join("conclave");
    let mut servers = Vec::new();
    let npm = cache.join("mcp-servers-npm");
    let main = npm.join("node_modules/@modelcontextprotocol/server-everything/dist/index.js");
    if main.is_file() {
        servers.push((
            "server-everything",
            entry(json!({"command": ["node", main, "stdio"], "sandbox": {"read": [npm]}})),
        ));
    }
    let venv = cache.join("mcp-servers-venv");
    if let Ok(python) = std::fs::canonicalize(venv.join("bin/python3")) {
        let prefix = python.parent().and_then(Path::parent).map(Path::to_path_buf).unwrap_or_default();
        let command = json!([venv.join("bin/mcp-server-git"), "--repository", repository]);
        servers.push(("mcp-server-git", entry(json!({"command": command, "sandbox": {"read": [venv, prefix]}}))));
    }
    servers
}

fn place() -> ServerPlace {
    let dir = std::env::temp_dir();
    ServerPlace { workdir: Some(dir.clone()), workspace: Some(dir), label: "bench".into(), ..ServerPlace::default() }
}

fn median(mut times: Vec<Duration>) -> Duration {
    times.sort_unstable();
    times[times.len() / 2]
}

fn ms(d: Duration) -> String {
    format!("{:.3} ms", d.as_secs_f64() * 1000.0)
}

async fn start_and_list(host: &McpHost, name: &str, config: &McpServerConfig) -> Duration {
    let started = Instant::now();
    let server = host.connect(name, config, &place()).await.expect("the server starts");
    assert!(!server.tools().is_empty());
    let took = started.elapsed();
    server.stop().await;
    took
}

async fn calls() -> (Duration, Duration) {
    let arguments = json!({"message": "hello"});
    let host = McpHost::new();
    let through = host.connect("fx", &fixture(), &place()).await.expect("the fixture starts");
    let mut child = tokio::process::Command::new("/usr/bin/python3")
        .arg(fixtures().join("fixture_server.py"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("python runs");
    let pipes = (child.stdout.take().expect("stdout"), child.stdin.take().expect("stdin"));
    let direct = ().serve(pipes).await.expect("the handshake");
    let (mut plain, mut conclave) = (Vec::new(), Vec::new());
    for _ in 0..CALL_ROUNDS {
        let started = Instant::now();
        let mut params = CallToolRequestParams::new("echo");
        params.arguments = arguments.as_object().cloned();
        let answer = direct.peer().call_tool(params).await.expect("an answer");
        assert!(!answer.content.is_empty());
        plain.push(started.elapsed());
        let started = Instant::now();
        let outcome = through.call("echo", &arguments).await.expect("an answer");
        assert_eq!(outcome.content, "Echo: hello");
        conclave.push(started.elapsed());
    }
    through.stop().await;
    let _ = direct.cancel().await;
    (median(plain), median(conclave))
}

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().expect("a runtime");
    runtime.block_on(async {
        let host = McpHost::new();
        // A repository of its own: a worktree's `.git` points outside what the sandbox reads.
        let repository = tempfile::tempdir().expect("a directory");
        let git = std::process::Command::new("git").args(["init", "-q"]).current_dir(repository.path()).status();
        assert!(git.is_ok_and(|s| s.success()), "git init");
        let mut servers = vec![("fixture (python)", fixture())];
        servers.extend(installed(repository.path()));
        for (name, config) in &servers {
            let mut times = Vec::new();
            for _ in 0..START_ROUNDS {
                times.push(start_and_list(&host, "bench", config).await);
            }
            println!("start and list tools, {name}: median {} over {START_ROUNDS} starts", ms(median(times)));
        }
        let (plain, conclave) = calls().await;
        let added = conclave.saturating_sub(plain);
        println!("one tool call straight over rmcp:  median {}", ms(plain));
        println!("one tool call through Conclave:    median {}", ms(conclave));
        println!("added per call: {} (target: at most 2 ms)", ms(added));
    });
}
