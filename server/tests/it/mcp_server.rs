//! Conclave as an MCP server, driven by real clients: the official MCP Python SDK
//! over stdio (`conclave mcp`, protocol 2026-07-28) and over Streamable HTTP (`/mcp`
//! on a real `conclave serve` with a token, protocol 2025-11-25) calls every tool,
//! reads the resources and receives progress during a review through the fake
//! Anthropic server; the review's findings are those of `conclave review` on the
//! same change; the MCP Inspector's CLI lists the tools. Hostile requests to `/mcp`
//! are in `attack_mcp.rs`.

use conclave_testkit::{FakeServer, cached_tool};
use serde_json::Value;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Child, Command};

use crate::review_e2e::{fixture_workspace, review, routes};

const BIN: &str = env!("CARGO_BIN_EXE_conclave");

/// The tools every client must see.
const TOOLS: [&str; 8] =
    ["approve", "get_review", "get_run", "list_conclaves", "list_runs", "review", "run_conclave", "validate_conclave"];

/// The approval conclave the clients run and approve.
const GATE: &str = r#"{"version": 1, "id": "gate", "name": "Gate",
  "nodes": [{"id": "in", "kind": "trigger"}, {"id": "approve", "kind": "approval", "approval": {"prompt": "Go on?"}},
            {"id": "out", "kind": "output"}],
  "edges": [{"from": "in", "to": "approve"}, {"from": "approve", "to": "out"}]}"#;

/// The Python of the virtual environment `scripts/fetch-mcp-sdk.sh` installs the SDK in.
pub(crate) fn python() -> PathBuf {
    cached_tool("mcp-sdk-venv/bin/python", "scripts/fetch-mcp-sdk.sh")
}

/// The MCP Inspector installed by `scripts/fetch-mcp-sdk.sh`.
fn inspector() -> PathBuf {
    cached_tool("mcp-inspector/node_modules/.bin/mcp-inspector", "scripts/fetch-mcp-sdk.sh")
}

fn driver() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/it/mcp_client.py")
}

/// The environment `conclave` runs in: its own store and config, the fake Anthropic.
fn conclave_env(workdir: &Path, server: &FakeServer) -> Vec<(String, String)> {
    vec![
        ("CONCLAVE_DB".into(), workdir.join("runs.db").display().to_string()),
        ("CONCLAVE_CONFIG_DIR".into(), workdir.join("config").display().to_string()),
        ("ANTHROPIC_BASE_URL".into(), server.base.clone()),
        ("ANTHROPIC_API_KEY".into(), "sk-ant-test".into()),
        // No analyzer lane's linter: the findings are the agents' alone.
        ("CONCLAVE_TOOLS_DIR".into(), conclave_testkit::no_tools().display().to_string()),
    ]
}

/// A workspace with the fixture repository, the gate conclave, and a working directory.
fn workspace() -> (tempfile::TempDir, PathBuf, PathBuf) {
    let (dir, repo, workdir) = fixture_workspace();
    std::fs::create_dir_all(workdir.join("conclaves")).expect("mkdir");
    std::fs::write(workdir.join("conclaves/gate.conclave.json"), GATE).expect("write");
    (dir, repo, workdir)
}

/// Runs the Python driver off the async runtime (the fake server keeps serving); what it saw.
async fn drive(args: Vec<String>, workdir: &Path) -> Value {
    drive_scenario(args, workdir, "all").await
}

/// [`drive`] with the driver's `MCP_SCENARIO`.
async fn drive_scenario(args: Vec<String>, workdir: &Path, scenario: &'static str) -> Value {
    let workdir = workdir.to_path_buf();
    let out = tokio::task::spawn_blocking(move || {
        let mut command = Command::new(python());
        command.arg(driver()).args(&args).current_dir(&workdir).env("MCP_SCENARIO", scenario);
        command.output().expect("python runs")
    })
    .await
    .expect("joined");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "the MCP client failed: {stderr}");
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("the client printed no JSON ({e}): {stderr}"))
}

/// The fingerprints of `conclave review --base main` on the fixture, and its messages
/// for a base that is not a commit and a conclave that does not exist.
async fn cli_review(repo: &Path) -> (BTreeSet<String>, String, String) {
    let server = FakeServer::start_routed(routes()).await;
    // Its own store, with the same catalog as the MCP server's.
    let workdir = repo.parent().expect("dir").join("cli");
    std::fs::create_dir_all(workdir.join("conclaves")).expect("mkdir");
    std::fs::write(workdir.join("conclaves/gate.conclave.json"), GATE).expect("write");
    let repo = repo.display().to_string();
    let args = |extra: &[&str]| [vec![repo.clone()], extra.iter().map(|s| s.to_string()).collect()].concat();
    let out = review(&workdir, &server, args(&["--base", "main", "--format", "json"])).await;
    let report: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|_| panic!("conclave review printed JSON: {}", String::from_utf8_lossy(&out.stderr)));
    let bad_base = review(&workdir, &server, args(&["--base", "no-such-commit-anywhere"])).await;
    let unknown = review(&workdir, &server, args(&["--base", "main", "--conclave", "no-such-conclave"])).await;
    let stderr = |o: &std::process::Output| String::from_utf8_lossy(&o.stderr).into_owned();
    (fingerprints(&report["review"]["findings"]), stderr(&bad_base), stderr(&unknown))
}

fn fingerprints(findings: &Value) -> BTreeSet<String> {
    let list = findings.as_array().expect("findings");
    list.iter().map(|f| f["fingerprint"].as_str().expect("a fingerprint").to_string()).collect()
}

/// What every client must have seen, whichever the transport.
fn assert_common(seen: &Value, cli: &(BTreeSet<String>, String, String)) {
    let tools: BTreeSet<&str> = seen["tools"].as_object().expect("tools").keys().map(String::as_str).collect();
    assert_eq!(tools, TOOLS.into_iter().collect(), "{seen}");
    for (name, tool) in seen["tools"].as_object().expect("tools") {
        assert_eq!(tool["input_schema"]["type"], "object", "{name} has an input schema");
        assert_eq!(tool["output_schema"]["type"], "object", "{name} has an output schema");
    }
    for paged in ["review", "get_review"] {
        let description = seen["tools"][paged]["description"].as_str().unwrap_or_default();
        assert!(description.contains("cursor"), "{paged} says how paging works: {description}");
    }
    let review = &seen["review"];
    assert_eq!(review["is_error"], false, "{review}");
    let answer = &review["structured"];
    assert_eq!(answer["status"], "succeeded", "{answer}");
    assert_eq!(fingerprints(&answer["findings"]), cli.0, "the MCP review has the CLI's findings: {answer}");
    assert_eq!(answer["total_findings"], cli.0.len(), "{answer}");
    assert!(answer["totals"]["blocker"].as_u64().unwrap_or(0) >= 1, "{answer}");
    let first = &answer["findings"][0];
    for field in ["severity", "file", "line", "description", "fingerprint"] {
        assert!(!first[field].is_null(), "a compact finding has its {field}: {first}");
    }
    let progress = seen["progress"].as_array().expect("progress");
    let lines: Vec<&str> = progress.iter().filter_map(|p| p["message"].as_str()).collect();
    assert!(lines.contains(&"node `security`: running"), "progress per node state: {lines:?}");
    assert!(
        lines.contains(&"node `writer`: succeeded") || lines.iter().any(|l| l.ends_with(": succeeded")),
        "{lines:?}"
    );
    assert_tools(seen, cli);
    assert_resources(seen);
    assert_eq!(seen["tools_after"], 8, "the connection outlives every refusal");
}

fn assert_tools(seen: &Value, cli: &(BTreeSet<String>, String, String)) {
    let run = seen["review"]["structured"]["run_id"].as_str().expect("run id");
    let full = &seen["get_review_full"]["structured"];
    assert_eq!(fingerprints(&full["findings"]), cli.0, "{full}");
    assert!(full["findings"][0]["details"]["agent"].is_string(), "full detail: {full}");
    assert!(full["next_cursor"].is_null(), "one page: {full}");
    refused(seen, "get_review_bad_cursor", "`not-a-cursor` is not a cursor of this review");
    refused(seen, "get_review_unknown", "no run `no-such-run`");
    refused(seen, "get_run_unknown", "no run `no-such-run`");
    refused(seen, "run_unknown", "no conclave `no-such-conclave`");
    let runs = seen["list_runs"]["structured"]["runs"].as_array().expect("runs").clone();
    assert!(runs.iter().any(|r| r["run_id"] == run), "{runs:?}");
    assert_eq!(seen["get_run"]["structured"]["status"], "succeeded", "{}", seen["get_run"]);
    let conclaves = &seen["list_conclaves"]["structured"]["conclaves"];
    assert!(conclaves.as_array().expect("list").iter().any(|c| c["id"] == "gate" && c["errors"] == 0), "{conclaves}");
    assert_eq!(seen["validate_good"]["structured"]["valid"], true, "{}", seen["validate_good"]);
    let bad = &seen["validate_bad"]["structured"];
    assert_eq!(bad["valid"], false, "{bad}");
    assert!(bad["errors"].as_u64().unwrap_or(0) >= 1 && !bad["diagnostics"][0]["message"].is_null(), "{bad}");
    assert_eq!(seen["run_gate"]["structured"]["status"], "waiting", "{}", seen["run_gate"]);
    assert_eq!(seen["approve"]["is_error"], false, "{}", seen["approve"]);
    assert!(
        seen["approve_again"]["is_error"] == true,
        "a decided node is not decided again: {}",
        seen["approve_again"]
    );
    assert_eq!(seen["gate_after"]["structured"]["status"], "succeeded", "{}", seen["gate_after"]);
    // The same words as `conclave review` for the same mistakes.
    let bad_base = refused(seen, "review_bad_base", "no-such-commit-anywhere");
    assert!(cli.1.contains(&format!("error: {bad_base}")), "the CLI says the same: {}\nMCP: {bad_base}", cli.1);
    let unknown = refused(seen, "review_unknown_conclave", "no conclave `no-such-conclave`");
    assert!(cli.2.contains(&format!("error: {unknown}")), "the CLI says the same: {}\nMCP: {unknown}", cli.2);
    // Only what is new since the review above (a commit to the README): the earlier
    // findings on the code it did not touch are carried, unchanged.
    // (The fake reviewers answer about src/upload.rs, which is not in the new commit:
    // their output is refused, which shows they were given only the README.)
    let since = &seen["review_since"]["structured"];
    assert_eq!(seen["review_since"]["is_error"], false, "{}", seen["review_since"]);
    let degraded = since["degraded"].to_string();
    assert!(degraded.contains(r#"is not one of \"README.md\""#), "only the new commit is reviewed: {degraded}");
    assert_eq!(fingerprints(&since["findings"]), cli.0, "the earlier findings are carried: {since}");
    let carried = seen["review_since_full"]["structured"]["findings"].as_array().expect("findings").clone();
    assert!(carried.iter().all(|f| f["details"]["baseline"] == "unchanged"), "{carried:?}");
    let later = &seen["review_nowait"]["structured"];
    assert_eq!(later["status"], "queued", "wait: false answers at once: {later}");
    assert!(later["run_id"].as_str().is_some_and(|id| id != run), "{later}");
}

fn assert_resources(seen: &Value) {
    let run = seen["review"]["structured"]["run_id"].as_str().expect("run id");
    let resources: Vec<&str> = seen["resources"].as_array().expect("list").iter().filter_map(Value::as_str).collect();
    assert!(resources.contains(&"conclave://conclaves/gate"), "{resources:?}");
    assert!(resources.contains(&format!("conclave://runs/{run}/report.md").as_str()), "{resources:?}");
    let templates = seen["templates"].as_array().expect("templates");
    assert_eq!(templates.len(), 2, "{templates:?}");
    assert!(
        seen["read_conclave"]["text"].as_str().is_some_and(|t| t.contains("\"Gate\"")),
        "{}",
        seen["read_conclave"]
    );
    let report = seen["read_report"]["text"].as_str().unwrap_or_default();
    assert!(report.contains("src/upload.rs"), "the Markdown report: {report}");
    for traversal in ["read_traversal", "read_run_traversal"] {
        assert_eq!(seen[traversal]["ok"], false, "{traversal} is refused: {}", seen[traversal]);
        assert!(seen[traversal]["error"].as_str().is_some_and(|e| e.contains("is not a")), "{}", seen[traversal]);
    }
}

/// The message of a tool error, which must contain `expected`.
fn refused(seen: &Value, call: &str, expected: &str) -> String {
    let result = &seen[call];
    assert_eq!(result["is_error"], true, "{call} is a tool error: {result}");
    let text = result["text"].as_str().unwrap_or_default().to_string();
    assert!(text.contains(expected), "{call} says `{expected}`: {text}");
    text
}

#[tokio::test]
async fn the_python_sdk_drives_conclave_mcp_over_stdio() {
    let (_dir, repo, workdir) = workspace();
    let server = FakeServer::start_routed(routes()).await;
    let cli = cli_review(&repo).await;
    let seen = drive(stdio_args(&repo, &workdir, &server), &workdir).await;
    assert_eq!(seen["protocol"], "2026-07-28", "the newest protocol is negotiated: {}", seen["protocol"]);
    assert_common(&seen, &cli);
    // Over stdio any repository may be named: `/` is refused as git refuses it.
    refused(&seen, "review_outside", "not a git repository");
}

/// The arguments that make the driver start `conclave mcp` over stdio on the fixture.
fn stdio_args(repo: &Path, workdir: &Path, server: &FakeServer) -> Vec<String> {
    let mut args: Vec<String> =
        ["stdio", "auto", &repo.display().to_string(), "main", "--", "/usr/bin/env"].map(String::from).to_vec();
    args.extend(conclave_env(workdir, server).into_iter().map(|(k, v)| format!("{k}={v}")));
    args.extend([BIN.to_string(), "mcp".into()]);
    args
}

#[tokio::test]
async fn many_findings_come_in_pages_that_each_fit_the_cap() {
    let (_dir, repo, workdir) = workspace();
    // 130 findings of 1,200 characters each: more than one page by count and by size.
    let items: Vec<Value> = (0..130)
        .map(|i| {
            let description = format!("finding #{i}: {}", "the join of a client name onto the root ".repeat(30));
            let (severity, lane) = (["blocker", "major", "minor", "nit"][i % 4], ["security", "correctness"][i % 2]);
            serde_json::json!({"severity": severity, "file": "src/upload.rs", "line": 7 + i % 3,
                "description": description, "raisedBy": lane, "stance": "concern"})
        })
        .collect();
    let server = FakeServer::start_routed(crate::review_e2e::writer_routes(Value::Array(items))).await;
    let seen = drive_scenario(stdio_args(&repo, &workdir, &server), &workdir, "pages").await;
    let pages = seen["pages"].as_array().expect("pages");
    assert!(pages.len() >= 3, "{} page(s): {seen}", pages.len());
    let mut all = Vec::new();
    for (i, page) in pages.iter().enumerate() {
        assert_eq!(page["is_error"], false, "{page}");
        assert!(page["chars"].as_u64().expect("chars") < 80_000, "page {i} stays under the cap: {}", page["chars"]);
        let on_page = page["descriptions"].as_array().expect("descriptions");
        assert!(!on_page.is_empty() && on_page.len() <= 50, "page {i}: {} finding(s)", on_page.len());
        assert_eq!(page["next_cursor"].is_null(), i + 1 == pages.len(), "only the last page has no cursor: {page}");
        all.extend(
            on_page.iter().filter_map(Value::as_str).map(|d| d.split(':').next().unwrap_or_default().to_string()),
        );
    }
    let expected: Vec<String> = (0..130).map(|i| format!("finding #{i}")).collect();
    assert_eq!(all.len(), 130, "every finding once, in order: {all:?}");
    assert_eq!(all.into_iter().collect::<BTreeSet<_>>(), expected.into_iter().collect(), "every finding once");
    assert!(pages[0]["note"].as_str().is_some_and(|n| n.contains("cursor")), "{}", pages[0]["note"]);
}

/// A running `conclave serve`; killed when dropped.
pub(crate) struct Served {
    child: Child,
    pub(crate) port: u16,
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `conclave serve` in `workdir` with token `token`, reviewing under `root`.
pub(crate) fn serve(workdir: &Path, env: &[(String, String)], token: &str, root: &Path) -> Served {
    let mut command = Command::new(BIN);
    command.current_dir(workdir).envs(env.iter().cloned()).env("CONCLAVE_TOKEN", token);
    let root = root.display().to_string();
    let (child, port, _) = crate::workers_cli::serve_with(command, &["--repo-root", &root]);
    Served { child, port }
}

#[tokio::test]
async fn the_python_sdk_drives_mcp_over_http_with_the_token() {
    let (dir, repo, workdir) = workspace();
    let server = FakeServer::start_routed(routes()).await;
    let cli = cli_review(&repo).await;
    let token = "mcp-test-token-5521";
    let served = serve(&workdir, &conclave_env(&workdir, &server), token, dir.path());
    let url = format!("http://127.0.0.1:{}/mcp", served.port);
    let args = ["http", "legacy", &repo.display().to_string(), "main", &url, token].map(String::from).to_vec();
    let seen = drive(args, &workdir).await;
    assert_eq!(seen["protocol"], "2025-11-25", "the handshake protocol is spoken too: {}", seen["protocol"]);
    assert_common(&seen, &cli);
    refused(&seen, "review_outside", "`/` is not a repository under this server's allowed roots");

    // A second server on the same store answers alike: no session lives in memory.
    let other = serve(&workdir, &conclave_env(&workdir, &server), token, dir.path());
    let run = seen["review"]["structured"]["run_id"].as_str().expect("run id").to_string();
    let listed = inspect(
        &[
            &format!("http://127.0.0.1:{}/mcp", other.port),
            "--transport",
            "http",
            "--header",
            &format!("Authorization: Bearer {token}"),
            "--method",
            "tools/call",
            "--tool-name",
            "get_review",
            "--tool-arg",
            &format!("run={run}"),
        ],
        &workdir,
    )
    .await;
    let again: Value = serde_json::from_str(&listed).unwrap_or_else(|e| panic!("{e}: {listed}"));
    assert_eq!(fingerprints(&again["structuredContent"]["findings"]), cli.0, "{again}");

    // A client with the tasks extension gets the review as a task, started on one
    // server and polled on the other: the task is the run, kept in the store.
    let (first, second) =
        (format!("http://127.0.0.1:{}/mcp", served.port), format!("http://127.0.0.1:{}/mcp", other.port));
    let arguments = serde_json::json!({"repository": repo.display().to_string(), "base": "main"});
    let created =
        modern(&first, token, "tools/call", "review", serde_json::json!({"name": "review", "arguments": arguments}))
            .await;
    let task = created["result"]["taskId"].as_str().unwrap_or_else(|| panic!("a task: {created}")).to_string();
    assert_eq!(created["result"]["status"], "working", "{created}");
    let mut done = Value::Null;
    for _ in 0..1200 {
        done = modern(&second, token, "tasks/get", &task, serde_json::json!({"taskId": task})).await;
        if done["result"]["status"] != "working" {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert_eq!(done["result"]["status"], "completed", "{done}");
    assert_eq!(fingerprints(&done["result"]["result"]["structuredContent"]["findings"]), cli.0, "{done}");
}

/// One request of protocol 2026-07-28 (per-request metadata, a client with the tasks
/// extension) to `url`; the JSON-RPC answer.
async fn modern(url: &str, token: &str, method: &str, name: &str, mut params: Value) -> Value {
    params["_meta"] = serde_json::json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "conclave-tests", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": {"extensions": {"io.modelcontextprotocol/tasks": {}}},
    });
    let body = serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
    let response = reqwest::Client::new()
        .post(url)
        .bearer_auth(token)
        .header("Accept", "application/json, text/event-stream")
        .header("MCP-Protocol-Version", "2026-07-28")
        .header("Mcp-Method", method)
        .header("Mcp-Name", name)
        .json(&body)
        .send()
        .await
        .expect("the server answers");
    let text = response.text().await.expect("a body");
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}: {text}"))
}

/// Runs the MCP Inspector's CLI with `args`; its standard output.
async fn inspect(args: &[&str], workdir: &Path) -> String {
    let (args, workdir): (Vec<String>, PathBuf) = (args.iter().map(|s| s.to_string()).collect(), workdir.to_path_buf());
    let out = tokio::task::spawn_blocking(move || {
        Command::new(inspector())
            .arg("--cli")
            .args(&args)
            .current_dir(&workdir)
            .env("MCP_CATALOG_PATH", workdir.join("inspector-catalog.json"))
            .output()
            .expect("the inspector runs")
    })
    .await
    .expect("joined");
    assert!(out.status.success(), "the inspector failed: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[tokio::test]
async fn the_mcp_inspector_lists_the_tools() {
    let (_dir, _repo, workdir) = workspace();
    let server = FakeServer::start_routed(routes()).await;
    let mut args: Vec<String> = vec!["/usr/bin/env".into()];
    args.extend(conclave_env(&workdir, &server).into_iter().map(|(k, v)| format!("{k}={v}")));
    args.extend([BIN.to_string(), "mcp".into(), "--method".into(), "tools/list".into()]);
    let listed = inspect(&args.iter().map(String::as_str).collect::<Vec<_>>(), &workdir).await;
    let listed: Value = serde_json::from_str(&listed).unwrap_or_else(|e| panic!("{e}: {listed}"));
    let names: BTreeSet<&str> =
        listed["tools"].as_array().expect("tools").iter().filter_map(|t| t["name"].as_str()).collect();
    assert_eq!(names, TOOLS.into_iter().collect());
}
