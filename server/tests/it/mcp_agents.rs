//! Agents calling real MCP servers through the real `conclave` binary: mcp-server-git
//! (PyPI) and server-everything (npm), installed by `scripts/fetch-mcp-servers.sh`,
//! and a small hostile stdio server (`tests/fixtures/mcp/fixture_server.py`). The
//! fake provider asks for the tool calls in the Anthropic and the OpenAI wire
//! formats; the answers must reach the model's next request, the calls must be
//! events, a recorded run must replay with no server started, a crashing server
//! must fail its agent with its stderr line, a slow tool must be cut at the node's
//! timeout, an unlisted tool must be refused, and the sandbox must hold.

use conclave_testkit::FakeServer;
use conclave_testkit::wire::Vendor;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

/// Conclave's cache of the servers `scripts/fetch-mcp-servers.sh` installs.
fn cache() -> PathBuf {
    let base = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(std::env::var_os("HOME").expect("a home directory")).join(".cache"));
    base.join("conclave")
}

/// mcp-server-git's virtual environment, installed.
fn git_venv() -> PathBuf {
    let venv = cache().join("mcp-servers-venv");
    assert!(venv.join("bin/mcp-server-git").is_file(), "run scripts/fetch-mcp-servers.sh first");
    venv
}

/// server-everything's npm directory, installed.
fn everything_dir() -> PathBuf {
    let dir = cache().join("mcp-servers-npm");
    assert!(dir.join(EVERYTHING_MAIN).is_file(), "run scripts/fetch-mcp-servers.sh first");
    dir
}

const EVERYTHING_MAIN: &str = "node_modules/@modelcontextprotocol/server-everything/dist/index.js";

/// The directory of the fixture server, which its entries let it read.
fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("root").join("tests/fixtures/mcp")
}

/// The fixture server, run by the system's Python (no virtual environment to read).
fn fixture() -> String {
    fixtures().join("fixture_server.py").display().to_string()
}

/// The real directory behind the interpreter a virtual environment runs.
fn interpreter_home(venv: &Path) -> PathBuf {
    let python = std::fs::canonicalize(venv.join("bin/python3")).expect("the venv's python");
    python.parent().and_then(Path::parent).expect("its prefix").to_path_buf()
}

/// The server-everything entry, reading its npm directory through the sandbox.
fn everything() -> Value {
    let dir = everything_dir();
    json!({"command": ["node", dir.join(EVERYTHING_MAIN), "stdio"], "sandbox": {"read": [dir]}})
}

/// The mcp-server-git entry, reading its virtual environment and interpreter.
fn git_server() -> Value {
    let venv = git_venv();
    json!({
        "command": [venv.join("bin/mcp-server-git"), "--repository", "."],
        "sandbox": {"read": [venv.clone(), interpreter_home(&venv)]}
    })
}

/// The fixture server's entry, with `env`.
fn fixture_server(env: Value) -> Value {
    json!({"command": ["/usr/bin/python3", fixture()], "sandbox": {"env": env, "read": [fixtures()]}})
}

/// A conclave `mcp` of one agent on `provider` listing `tools`, with `servers`.
fn conclave(provider: &str, servers: Value, tools: &[&str], timeout_secs: Option<u64>) -> Value {
    let mut agent =
        json!({"provider": provider, "model": "test-model", "system_prompt": "Use your tools.", "tools": tools});
    if let Some(secs) = timeout_secs {
        agent["timeout_secs"] = json!(secs);
    }
    json!({
        "id": "mcp", "name": "MCP agents",
        "settings": {"mcp_servers": servers},
        "nodes": [
            {"id": "in", "kind": "trigger", "label": "Input", "position": {"x": 0, "y": 0}},
            {"id": "agent", "kind": "agent", "label": "Agent", "position": {"x": 200, "y": 0}, "agent": agent},
            {"id": "out", "kind": "output", "label": "Output", "position": {"x": 400, "y": 0}}
        ],
        "edges": [{"from": "in", "to": "agent"}, {"from": "agent", "to": "out"}]
    })
}

/// A workspace with `conclave` in `conclaves/`, in a git repository.
fn workspace(conclave: &Value) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().expect("tempdir");
    let workdir = dir.path().canonicalize().expect("canonical");
    std::fs::create_dir_all(workdir.join("conclaves")).expect("mkdir");
    let text = serde_json::to_string_pretty(conclave).expect("json");
    std::fs::write(workdir.join("conclaves/mcp.conclave.json"), text).expect("write");
    std::fs::write(workdir.join("README.md"), "hello\n").expect("write");
    let git = |args: &[&str]| {
        let out = Command::new("git").args(args).current_dir(&workdir).output().expect("git");
        assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    };
    git(&["init", "-q", "-b", "main"]);
    git(&["-c", "user.name=t", "-c", "user.email=t@e", "add", "."]);
    git(&["-c", "user.name=t", "-c", "user.email=t@e", "commit", "-qm", "first"]);
    (dir, workdir)
}

/// `conclave ARGS` in `workdir`, its providers at `base` (or a closed port).
fn conclave_cmd(workdir: &Path, vendor: Vendor, base: &str, args: &[String]) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_conclave"));
    command
        .args(args)
        .current_dir(workdir)
        .env("CONCLAVE_DB", workdir.join("runs.db"))
        .env("CONCLAVE_CONFIG_DIR", workdir.join("config"))
        .env_remove("CI");
    for (name, value) in vendor.env(base, "sk-test-key-0123456789") {
        command.env(name, value);
    }
    command.output().expect("conclave runs")
}

/// `conclave run mcp` with `extra` arguments, off the async threads.
async fn run(workdir: &Path, vendor: Vendor, base: &str, extra: &[&str]) -> (Output, Duration) {
    let mut args: Vec<String> = vec!["run".into(), "mcp".into(), "--input".into(), "look".into()];
    args.extend(extra.iter().map(|s| s.to_string()));
    let (workdir, base) = (workdir.to_path_buf(), base.to_string());
    tokio::task::spawn_blocking(move || {
        let started = Instant::now();
        let out = conclave_cmd(&workdir, vendor, &base, &args);
        (out, started.elapsed())
    })
    .await
    .expect("joined")
}

/// The id of the last run.
fn last_run_id(workdir: &Path) -> String {
    let list = conclave_cmd(workdir, Vendor::Anthropic, "http://127.0.0.1:9", &to_args(&["runs", "list", "--json"]));
    let runs: Value = serde_json::from_slice(&list.stdout).expect("runs json");
    runs[0]["id"].as_str().expect("a run").to_string()
}

/// The last run's record and events, as `conclave runs show --json` prints them.
fn last_run(workdir: &Path) -> Value {
    let id = last_run_id(workdir);
    let show =
        conclave_cmd(workdir, Vendor::Anthropic, "http://127.0.0.1:9", &to_args(&["runs", "show", &id, "--json"]));
    serde_json::from_slice(&show.stdout).expect("run json")
}

/// `conclave runs show` as text, for the last run.
fn shown(workdir: &Path) -> String {
    let id = last_run_id(workdir);
    let show = conclave_cmd(workdir, Vendor::Anthropic, "http://127.0.0.1:9", &to_args(&["runs", "show", &id]));
    String::from_utf8_lossy(&show.stdout).to_string()
}

fn to_args(args: &[&str]) -> Vec<String> {
    args.iter().map(|s| s.to_string()).collect()
}

/// The events of `kind` in a run.
fn events_of<'a>(run: &'a Value, kind: &str) -> Vec<&'a Value> {
    run["events"].as_array().into_iter().flatten().filter(|e| e["type"] == kind).collect()
}

/// The node failure of a run: its error.
fn node_error(run: &Value) -> String {
    events_of(run, "node_failed").first().map(|e| e["message"].to_string()).unwrap_or_default()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).to_string()
}

/// A fake model that asks for `calls` first, then answers "done".
async fn model(vendor: Vendor, calls: &[(&str, &str, Value)]) -> FakeServer {
    FakeServer::start(vec![vendor.tool_calls(calls), vendor.answer("done"), vendor.answer("done")]).await
}

/// The second request's body as text: what the model read after its tool calls.
fn second_request(server: &FakeServer) -> String {
    let requests = server.requests();
    assert!(requests.len() >= 2, "the model was asked again after its tool calls: {} request(s)", requests.len());
    requests[1].body.to_string()
}

#[tokio::test]
async fn the_answers_of_real_servers_reach_the_model_in_both_wire_formats_and_are_events() {
    let servers = json!({"git": git_server(), "everything": everything()});
    let tools = ["mcp:git/git_status", "mcp:everything/*"];
    for vendor in [Vendor::Anthropic, Vendor::OpenAiChat] {
        let (_dir, workdir) = workspace(&conclave(vendor.provider(), servers.clone(), &tools, None));
        std::fs::write(workdir.join("untracked.txt"), "new\n").expect("write");
        let calls = [
            ("call_1", "mcp__git__git_status", json!({"repo_path": workdir.display().to_string()})),
            ("call_2", "mcp__everything__echo", json!({"message": "hello from the model"})),
        ];
        let server = model(vendor, &calls).await;
        let (out, _) = run(&workdir, vendor, &server.base, &[]).await;
        assert_eq!(out.status.code(), Some(0), "{vendor:?}: {}", stderr(&out));
        let first = server.requests()[0].body.to_string();
        assert!(
            first.contains("mcp__git__git_status") && first.contains("mcp__everything__get-sum"),
            "offered: {first:.2000}"
        );
        assert!(!first.contains("mcp__git__git_log"), "only the listed git tool is offered");
        let second = second_request(&server);
        assert!(second.contains("untracked.txt"), "{vendor:?}: git status reached the model: {second:.3000}");
        assert!(second.contains("Echo: hello from the model"), "{vendor:?}: the echo reached the model");

        let record = last_run(&workdir);
        let called: Vec<&str> = events_of(&record, "tool_call").iter().filter_map(|e| e["tool"].as_str()).collect();
        assert_eq!(called, ["mcp:git/git_status", "mcp:everything/echo"], "{vendor:?}");
        let results = events_of(&record, "tool_result");
        assert_eq!(results.len(), 2, "{vendor:?}: {results:?}");
        assert_eq!(results[1]["tool"], "mcp:everything/echo");
        assert_eq!(results[1]["content"], "Echo: hello from the model");
        assert!(results.iter().all(|r| r["is_error"].is_null() && r["duration_ms"].is_u64()), "{results:?}");
        let text = shown(&workdir);
        assert!(text.contains("agent: mcp:everything/echo answered"), "runs show: {text}");
    }
}

#[tokio::test]
async fn a_recorded_run_replays_the_same_with_no_server_started() {
    let (_dir, workdir) = workspace(&conclave("anthropic", json!({}), &[], None));
    let marker = workdir.join("started.log");
    let servers = json!({"fx": {
        "command": ["/usr/bin/python3", fixture()],
        "sandbox": {"env": {"MARKER": marker}, "write": [workdir.clone()], "read": [fixtures()]}
    }});
    let text = serde_json::to_string_pretty(&conclave("anthropic", servers, &["mcp:fx/echo", "mcp:fx/fail"], None))
        .expect("json");
    std::fs::write(workdir.join("conclaves/mcp.conclave.json"), text).expect("write");
    let calls = [("c1", "mcp__fx__echo", json!({"message": "recorded"})), ("c2", "mcp__fx__fail", json!({}))];
    let server = model(Vendor::Anthropic, &calls).await;
    let recordings = workdir.join("recordings");
    let dir = recordings.display().to_string();
    let (out, _) = run(&workdir, Vendor::Anthropic, &server.base, &["--record", &dir]).await;
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(std::fs::read_to_string(&marker).unwrap_or_default(), "started\n", "one server start for the run");
    let recorded = last_run(&workdir);
    let mcp_files = std::fs::read_dir(&recordings)
        .expect("recordings")
        .flatten()
        .filter(|f| f.file_name().to_string_lossy().starts_with("mcp-"))
        .count();
    assert_eq!(mcp_files, 3, "the listing and both calls are recorded");

    // Replayed with the model's port closed: no server starts, the run is the same.
    let (out, _) = run(&workdir, Vendor::Anthropic, "http://127.0.0.1:9", &["--replay", &dir]).await;
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(std::fs::read_to_string(&marker).unwrap_or_default(), "started\n", "the replay started no server");
    let replayed = last_run(&workdir);
    let steady = |run: &Value| -> Vec<Value> {
        events_of(run, "tool_result")
            .into_iter()
            .map(|e| json!([e["tool"], e["content"], e["is_error"]]))
            .chain(events_of(run, "node_completed").into_iter().map(|e| e["output"].clone()))
            .collect()
    };
    assert_eq!(steady(&recorded), steady(&replayed));
    assert_eq!(
        steady(&replayed)[1],
        json!(["mcp:fx/fail", "the tool failed on purpose", true]),
        "a tool error is a result"
    );
}

#[tokio::test]
async fn a_crashing_server_fails_its_agent_with_its_last_stderr_line() {
    let servers = json!({"fx": fixture_server(json!({}))});
    let (_dir, workdir) = workspace(&conclave("openai", servers, &["mcp:fx/crash"], None));
    let server = model(Vendor::OpenAiChat, &[("c1", "mcp__fx__crash", json!({}))]).await;
    let (out, _) = run(&workdir, Vendor::OpenAiChat, &server.base, &[]).await;
    assert_ne!(out.status.code(), Some(0));
    let error = node_error(&last_run(&workdir));
    assert!(error.contains("the MCP server `fx` stopped during the run"), "{error}");
    assert!(error.contains("exit status: 3"), "{error}");
    assert!(error.contains("its stderr said: fatal: the index file is corrupt"), "{error}");
}

#[tokio::test]
async fn a_server_that_cannot_start_fails_its_agent_naming_it() {
    let servers = json!({"gone": {"command": ["/usr/bin/python3", "-c", "import sys; sys.stderr.write('cannot open the database\\n'); sys.exit(7)"]}});
    let (_dir, workdir) = workspace(&conclave("anthropic", servers, &["mcp:gone/*"], None));
    let server = model(Vendor::Anthropic, &[]).await;
    let (out, _) = run(&workdir, Vendor::Anthropic, &server.base, &[]).await;
    assert_ne!(out.status.code(), Some(0));
    let error = node_error(&last_run(&workdir));
    assert!(error.contains("the MCP server `gone` could not start"), "{error}");
    assert!(error.contains("exit status: 7") && error.contains("cannot open the database"), "{error}");
    assert!(server.requests().is_empty(), "the model was never asked");
}

#[tokio::test]
async fn a_slow_tool_is_cut_at_the_nodes_timeout() {
    let servers = json!({"everything": everything()});
    let tools = ["mcp:everything/trigger-long-running-operation"];
    let (_dir, workdir) = workspace(&conclave("anthropic", servers, &tools, Some(4)));
    let calls = [("c1", "mcp__everything__trigger-long-running-operation", json!({"duration": 60, "steps": 2}))];
    let server = model(Vendor::Anthropic, &calls).await;
    let (out, took) = run(&workdir, Vendor::Anthropic, &server.base, &[]).await;
    assert_ne!(out.status.code(), Some(0));
    assert!(took < Duration::from_secs(30), "the run ended at the timeout, not the tool: {took:?}");
    let record = last_run(&workdir);
    let failed = events_of(&record, "node_failed");
    assert_eq!(failed[0]["error_kind"], "timeout", "{failed:?}");
    assert_eq!(server.requests().len(), 1, "the model was not asked again");
}

#[tokio::test]
async fn a_tool_the_agent_does_not_list_is_refused() {
    let servers = json!({"fx": fixture_server(json!({}))});
    let (_dir, workdir) = workspace(&conclave("anthropic", servers, &["mcp:fx/echo"], None));
    let server = model(Vendor::Anthropic, &[("c1", "mcp__fx__secret", json!({}))]).await;
    let (out, _) = run(&workdir, Vendor::Anthropic, &server.base, &[]).await;
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let second = second_request(&server);
    assert!(second.contains("`mcp__fx__secret` is not one of your tools"), "{second:.2000}");
    assert!(!second.contains("the secret answer"));
    let record = last_run(&workdir);
    let results = events_of(&record, "tool_result");
    assert_eq!(results[0]["is_error"], true, "{results:?}");
}

#[tokio::test]
async fn a_hostile_server_reaches_neither_the_network_nor_conclaves_environment() {
    let servers = json!({"fx": fixture_server(json!({}))});
    let (_dir, workdir) = workspace(&conclave("anthropic", servers, &["mcp:fx/probe"], None));
    // A port that accepts connections: only the sandbox keeps the server from it.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    let server = model(Vendor::Anthropic, &[("c1", "mcp__fx__probe", json!({"port": port}))]).await;
    let (out, _) = run(&workdir, Vendor::Anthropic, &server.base, &[]).await;
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let second = second_request(&server);
    assert!(second.contains("tcp: blocked"), "the TCP connection was refused: {second:.3000}");
    assert!(second.contains("environ: blocked"), "the parent's environment was not read: {second:.3000}");
    assert!(!second.contains("sk-test-key-0123456789"), "no key leaked");
}

#[tokio::test]
async fn the_everything_servers_environment_is_scrubbed() {
    let servers = json!({"everything": everything()});
    let (_dir, workdir) = workspace(&conclave("openai", servers, &["mcp:everything/get-env"], None));
    let server = model(Vendor::OpenAiChat, &[("c1", "mcp__everything__get-env", json!({}))]).await;
    let (out, _) = run(&workdir, Vendor::OpenAiChat, &server.base, &[]).await;
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let second = second_request(&server);
    assert!(second.contains("PATH"), "the server's environment reached the model: {second:.2000}");
    assert!(!second.contains("sk-test-key-0123456789") && !second.contains("OPENAI_API_KEY"), "{second:.3000}");
}

#[tokio::test]
async fn validate_asks_each_server_for_its_tools() {
    let servers = json!({"fx": fixture_server(json!({})), "down": {"command": ["/nonexistent/mcp-server"]}});
    let (_dir, workdir) = workspace(&conclave("anthropic", servers, &["mcp:fx/ecko", "mcp:down/x"], None));
    let out = tokio::task::spawn_blocking(move || {
        conclave_cmd(&workdir, Vendor::Anthropic, "http://127.0.0.1:9", &to_args(&["validate", "conclaves"]))
    })
    .await
    .expect("joined");
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), stderr(&out));
    assert_eq!(out.status.code(), Some(2), "{text}");
    assert!(text.contains("the MCP server `fx` has no tool `ecko`") && text.contains("did you mean `echo`?"), "{text}");
    assert!(text.contains("warning") && text.contains("`down`"), "an unreachable server is a warning: {text}");
}

/// The API over a workspace whose runs reach MCP servers, `/usr/bin/python3` allowed.
fn mcp_api() -> crate::api::Api {
    let mut api = crate::api::api_with(None);
    let old = &api.state.workspace;
    let providers = old.providers.clone().with_tool_servers(std::sync::Arc::new(conclave_mcp::McpHost::new()));
    let workspace = conclave_server::workspace::Workspace::new(
        old.catalog_dir.clone(),
        conclave_schema::SchemaCatalog::with_roots(vec![]),
        providers,
    );
    api.state.workspace = std::sync::Arc::new(workspace);
    let mut security = (*api.state.security).clone();
    security.allowed_programs = vec!["/usr/bin/python3".into()];
    api.state.security = std::sync::Arc::new(security);
    api
}

#[tokio::test]
async fn the_api_lists_a_servers_tools_under_the_rules_of_commands() {
    use axum::http::StatusCode;
    let api = mcp_api();
    let entry = fixture_server(json!({}));
    // Reading the fixture is more than no sandbox: refused until a file on disk says so.
    let (status, body, _) = api.send("POST", "/api/mcp/tools", json!({"name": "fx", "server": entry})).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
    assert!(body["error"]["message"].as_str().unwrap_or_default().contains("opens its sandbox beyond"), "{body}");
    let on_disk = conclave("anthropic", json!({"fx": entry}), &["mcp:fx/echo"], None);
    let file = api.state.workspace.catalog_dir.join("mcp.conclave.json");
    std::fs::write(&file, serde_json::to_string_pretty(&on_disk).expect("json")).expect("write");
    let (status, body, _) = api.send("POST", "/api/mcp/tools", json!({"name": "fx", "server": entry})).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["name"], "fx");
    assert_eq!(
        body["tools"][0],
        json!({
            "name": "echo", "id": "mcp:fx/echo", "description": "Says the message back.",
            "input_schema": {"type": "object", "properties": {"message": {"type": "string"}}, "required": ["message"]}
        })
    );

    let not_allowed = json!({"name": "git", "server": {"command": ["git", "mcp"]}});
    let (status, body, _) = api.send("POST", "/api/mcp/tools", not_allowed).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
    assert!(body["error"]["message"].as_str().unwrap_or_default().contains("--allow-commands git"), "{body}");
    let (status, body, _) = api.send("POST", "/api/mcp/tools", json!({"name": "a b", "server": entry})).await;
    assert_eq!((status, body["error"]["path"].clone()), (StatusCode::UNPROCESSABLE_ENTITY, json!("/name")), "{body}");
    let both = json!({"name": "x", "server": {"command": ["/usr/bin/python3"], "url": "http://127.0.0.1:9/mcp"}});
    let (status, body, _) = api.send("POST", "/api/mcp/tools", both).await;
    assert_eq!((status, body["error"]["path"].clone()), (StatusCode::UNPROCESSABLE_ENTITY, json!("/server")), "{body}");
    let dying = json!({"name": "dying", "server": {"command": ["/usr/bin/python3", "-c", "import sys; sys.stderr.write('no config\\n'); sys.exit(4)"]}});
    let (status, body, _) = api.send("POST", "/api/mcp/tools", dying).await;
    assert_eq!(status, StatusCode::BAD_GATEWAY, "{body}");
    let message = body["error"]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("`dying` could not start")
            && message.contains("exit status: 4")
            && message.contains("no config"),
        "{message}"
    );
}

#[tokio::test]
async fn a_conclave_saved_through_the_api_may_not_start_other_programs_or_widen_a_servers_sandbox() {
    use axum::http::StatusCode;
    let api = mcp_api();
    let other = conclave("anthropic", json!({"git": {"command": ["mcp-server-git"]}}), &["mcp:git/git_log"], None);
    let (status, body, _) = api.send("POST", "/api/conclaves", other).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
    assert!(body["error"]["message"].as_str().unwrap_or_default().contains("`mcp-server-git`"), "{body}");
    let open = json!({"fx": {"command": ["/usr/bin/python3", fixture()], "sandbox": {"network": true}}});
    let (status, body, _) =
        api.send("POST", "/api/conclaves", conclave("anthropic", open, &["mcp:fx/echo"], None)).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
    assert!(body["error"]["message"].as_str().unwrap_or_default().contains("MCP server `fx`: network"), "{body}");
    let closed = json!({"fx": {"command": ["/usr/bin/python3", fixture()]}});
    let (status, body, _) =
        api.send("POST", "/api/conclaves", conclave("anthropic", closed, &["mcp:fx/echo"], None)).await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
}

/// server-everything over Streamable HTTP on a free port, killed when dropped.
struct HttpEverything {
    child: std::process::Child,
    url: String,
}

impl HttpEverything {
    fn start() -> HttpEverything {
        let port = std::net::TcpListener::bind("127.0.0.1:0").expect("bind").local_addr().expect("addr").port();
        let child = Command::new("node")
            .arg(everything_dir().join(EVERYTHING_MAIN))
            .arg("streamableHttp")
            .env("PORT", port.to_string())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("node runs");
        let started = Instant::now();
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(started.elapsed() < Duration::from_secs(20), "server-everything listens over HTTP");
            std::thread::sleep(Duration::from_millis(50));
        }
        HttpEverything { child, url: format!("http://127.0.0.1:{port}/mcp") }
    }
}

impl Drop for HttpEverything {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[tokio::test]
async fn an_http_server_is_called_with_headers_from_the_environment_that_never_show() {
    let http = HttpEverything::start();
    let servers =
        json!({"remote": {"url": http.url, "headers_from_env": {"X-Tracker-Token": "TRACKER_TOKEN_FOR_TEST"}}});
    let (_dir, workdir) = workspace(&conclave("anthropic", servers, &["mcp:remote/echo"], None));
    let server = model(Vendor::Anthropic, &[("c1", "mcp__remote__echo", json!({"message": "over http"}))]).await;
    let recordings = workdir.join("recordings");
    let secret = "tracker-secret-0123456789abcdef";
    let (workdir2, base, dir) = (workdir.clone(), server.base.clone(), recordings.display().to_string());
    let out = tokio::task::spawn_blocking(move || {
        let mut command = Command::new(env!("CARGO_BIN_EXE_conclave"));
        command
            .args(["run", "mcp", "--input", "look", "--record", &dir])
            .current_dir(&workdir2)
            .env("CONCLAVE_DB", workdir2.join("runs.db"))
            .env("CONCLAVE_CONFIG_DIR", workdir2.join("config"))
            .env("TRACKER_TOKEN_FOR_TEST", secret);
        for (name, value) in Vendor::Anthropic.env(&base, "sk-test-key-0123456789") {
            command.env(name, value);
        }
        command.output().expect("conclave runs")
    })
    .await
    .expect("joined");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(second_request(&server).contains("Echo: over http"));
    let record = last_run(&workdir).to_string();
    assert!(record.contains("mcp:remote/echo") && !record.contains(secret), "{record:.2000}");
    for file in std::fs::read_dir(&recordings).expect("recordings").flatten() {
        let text = std::fs::read_to_string(file.path()).expect("read");
        assert!(!text.contains(secret), "no header value in {}", file.path().display());
    }

    // Without the variable, the server cannot be reached, and the message names the variable only.
    let (out, _) = run(&workdir, Vendor::Anthropic, &server.base, &[]).await;
    assert_ne!(out.status.code(), Some(0));
    let error = node_error(&last_run(&workdir));
    assert!(error.contains("`TRACKER_TOKEN_FOR_TEST`, which is not set"), "{error}");
}

#[tokio::test]
async fn every_tool_call_counts_against_the_runs_max_tool_calls() {
    let servers = json!({"fx": fixture_server(json!({}))});
    let mut file = conclave("anthropic", servers, &["mcp:fx/echo"], None);
    file["settings"]["budget"] = json!({"max_tool_calls": 1});
    let (_dir, workdir) = workspace(&file);
    let calls =
        [("c1", "mcp__fx__echo", json!({"message": "one"})), ("c2", "mcp__fx__echo", json!({"message": "two"}))];
    let server = model(Vendor::Anthropic, &calls).await;
    let (out, _) = run(&workdir, Vendor::Anthropic, &server.base, &[]).await;
    assert_ne!(out.status.code(), Some(0));
    let record = last_run(&workdir);
    let failed = events_of(&record, "node_failed");
    assert_eq!(failed[0]["error_kind"], "budget", "{failed:?}");
    assert!(node_error(&record).contains("budget of 1 tool calls is spent"), "{}", node_error(&record));
    assert_eq!(events_of(&record, "tool_result").len(), 1, "the first call was made, the second was not");

    // The same limit from the command line, the file's taken away.
    let file = conclave("anthropic", json!({"fx": fixture_server(json!({}))}), &["mcp:fx/echo"], None);
    std::fs::write(workdir.join("conclaves/mcp.conclave.json"), file.to_string()).expect("write");
    let server = model(Vendor::Anthropic, &calls).await;
    let (out, _) = run(&workdir, Vendor::Anthropic, &server.base, &["--max-tool-calls", "1"]).await;
    assert_ne!(out.status.code(), Some(0));
    assert!(stderr(&out).contains("budget: spent") && stderr(&out).contains("1 of 1 tool calls"), "{}", stderr(&out));
    assert_eq!(events_of(&last_run(&workdir), "node_failed")[0]["error_kind"], "budget");
}

#[tokio::test]
async fn a_tool_cut_at_the_timeout_leaves_no_process_of_its_server_behind() {
    let (_dir, workdir) = workspace(&conclave("openai", json!({}), &[], None));
    let pidfile = workdir.join("pids");
    let servers = json!({"fx": {
        "command": ["/usr/bin/python3", fixture()],
        "sandbox": {"env": {"PIDFILE": pidfile}, "write": [workdir.clone()], "read": [fixtures()]}
    }});
    let file = conclave("openai", servers, &["mcp:fx/sleep"], Some(3));
    std::fs::write(workdir.join("conclaves/mcp.conclave.json"), file.to_string()).expect("write");
    let server = model(Vendor::OpenAiChat, &[("c1", "mcp__fx__sleep", json!({"seconds": 120}))]).await;
    let (out, took) = run(&workdir, Vendor::OpenAiChat, &server.base, &[]).await;
    assert_ne!(out.status.code(), Some(0));
    assert!(took < Duration::from_secs(30), "{took:?}");
    assert_eq!(events_of(&last_run(&workdir), "node_failed")[0]["error_kind"], "timeout");
    let pids = std::fs::read_to_string(&pidfile).expect("the tool ran");
    for pid in pids.split_whitespace() {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        // Gone, or a zombie its dead parent left to init: neither runs.
        let state = stat.rsplit(')').next().and_then(|rest| rest.split_whitespace().next()).unwrap_or("gone");
        assert!(matches!(state, "gone" | "Z" | "X"), "process {pid} still runs: {stat}");
    }
}
