//! MCP in the editor, in headless Chromium: declaring servers in the Settings panel
//! (with the form's inline errors), the palette listing a real MCP server's tools
//! through the real API and a tool dragged onto an agent, and a node's tool calls with
//! their results in the run view. Everything a user does is a real click, key press
//! or pointer drag; files are read from disk.

use conclave_testkit::wire::Vendor;
use conclave_testkit::{FakeServer, Route, git};
use conclave_tests::browser::{Editor, PATIENCE, node, tid, wait_until};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use thirtyfour::prelude::*;

use crate::editor_runs::{agent, open, plain, put, start_from_dialog, text_of, wait_for_status};

const TESTBED: &str = env!("CARGO_BIN_EXE_conclave-testbed");

/// The conclave file `id` as it is on disk.
fn on_disk(e: &Editor, id: &str) -> Value {
    let path = e.ws.root().join("conclaves").join(format!("{id}.conclave.json"));
    serde_json::from_slice(&std::fs::read(&path).expect("the file")).expect("JSON")
}

/// Clicks the element with test id `testid` inside `scope`.
async fn click_in(scope: &WebElement, testid: &str) {
    scope.find(tid(testid)).await.expect(testid).click().await.expect("click");
}

/// The texts of the form's inline errors.
async fn form_errors(e: &Editor) -> Vec<String> {
    let mut texts = Vec::new();
    for el in e.driver.find_all(tid("mcp-error")).await.unwrap_or_default() {
        texts.push(el.text().await.unwrap_or_default());
    }
    texts
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn servers_added_in_the_settings_form_are_saved_in_the_file_and_a_bad_entry_says_why() {
    let e = Editor::start_serving(Path::new(TESTBED), None, &[], &["--allow-commands", "mcp-server-git"]).await;
    put(
        &e,
        &plain("tooling", vec![agent("helper", 300, 150, "text=ok")], &[("input", "helper"), ("helper", "out")]),
        true,
    )
    .await;
    open(&e, "tooling").await;
    e.find(tid("settings")).await.expect("settings").click().await.expect("open settings");
    let servers = e.wait_for(tid("mcp-servers")).await;
    assert!(e.find(tid("settings-form")).await.is_ok(), "the settings panel is open");
    click_in(&servers, "mcp-add").await;

    // A name with a space breaks the name rule; the form says so as it is typed.
    let name = e.wait_for(tid("mcp-name")).await;
    e.clear_and_type(&name, "my docs").await;
    wait_until("the name's error", || async { form_errors(&e).await.iter().any(|t| t.contains("`my docs`")) }).await;
    let errors = form_errors(&e).await;
    assert!(errors.iter().any(|t| t.contains("letters, digits, `-` and `_`")), "{errors:?}");
    // Without a program the entry has no transport: McpServerConfig::problem says so.
    assert!(errors.iter().any(|t| t.contains("needs `command` (stdio) or `url` (HTTP)")), "{errors:?}");
    e.find(tid("mcp-apply")).await.expect("apply").click().await.expect("click");
    assert_eq!(e.count(tid("mcp-server")).await, 0, "a bad entry is not put in");

    e.clear_and_type(&name, "docs").await;
    let program = e.find(tid("mcp-program")).await.expect("program");
    e.clear_and_type(&program, "mcp-server-git").await;
    let args = e.find(tid("mcp-args")).await.expect("arguments");
    e.clear_and_type(&args, "--repository\n.").await;
    wait_until("no errors", || async { form_errors(&e).await.is_empty() }).await;
    e.find(tid("mcp-apply")).await.expect("apply").click().await.expect("click");
    let row = e.wait_for(By::Css("[data-testid='mcp-server'][data-server='docs']")).await;
    assert!(row.text().await.unwrap_or_default().contains("stdio: mcp-server-git --repository ."));

    // An HTTP server whose header's value comes from an environment variable.
    click_in(&servers, "mcp-add").await;
    e.clear_and_type(&e.wait_for(tid("mcp-name")).await, "tracker").await;
    e.find(By::Css("[data-testid='mcp-transport'] option[value='http']"))
        .await
        .expect("http")
        .click()
        .await
        .expect("pick");
    e.clear_and_type(&e.wait_for(tid("mcp-url")).await, "https://tracker.example/mcp").await;
    e.find(tid("mcp-header-add")).await.expect("add header").click().await.expect("click");
    e.clear_and_type(&e.wait_for(tid("mcp-header-name")).await, "Authorization").await;
    wait_until("the half header's error", || async {
        form_errors(&e).await.iter().any(|t| t.contains("Each header needs its name and the environment variable"))
    })
    .await;
    e.clear_and_type(&e.find(tid("mcp-header-env")).await.expect("variable"), "TRACKER_TOKEN").await;
    e.find(tid("mcp-apply")).await.expect("apply").click().await.expect("click");
    e.wait_for(By::Css("[data-testid='mcp-server'][data-server='tracker']")).await;

    e.save_as("tooling").await;
    let servers = &on_disk(&e, "tooling")["settings"]["mcp_servers"];
    assert_eq!(servers["docs"], json!({"command": ["mcp-server-git", "--repository", "."]}));
    assert_eq!(
        servers["tracker"],
        json!({"url": "https://tracker.example/mcp", "headers_from_env": {"Authorization": "TRACKER_TOKEN"}})
    );

    // Edit renames the server and opens its sandbox's network, in one undoable step.
    let docs = e.find(By::Css("[data-testid='mcp-server'][data-server='docs']")).await.expect("row");
    click_in(&docs, "mcp-edit").await;
    e.clear_and_type(&e.wait_for(tid("mcp-name")).await, "git").await;
    e.find(tid("mcp-network")).await.expect("network").click().await.expect("tick");
    e.find(tid("mcp-apply")).await.expect("apply").click().await.expect("click");
    let git = e.wait_for(By::Css("[data-testid='mcp-server'][data-server='git']")).await;
    assert!(git.text().await.unwrap_or_default().contains("network"), "the row says the network is open");
    assert_eq!(e.count(By::Css("[data-testid='mcp-server'][data-server='docs']")).await, 0);
    e.find(tid("undo")).await.expect("undo").click().await.expect("click");
    e.wait_for(By::Css("[data-testid='mcp-server'][data-server='docs']")).await;
    assert_eq!(e.count(By::Css("[data-testid='mcp-server'][data-server='git']")).await, 0);

    // Removing is one edit like any other: Undo brings the server back.
    let docs = e.find(By::Css("[data-testid='mcp-server'][data-server='docs']")).await.expect("row");
    click_in(&docs, "mcp-remove").await;
    wait_until("the removal", || async { e.count(By::Css("[data-server='docs']")).await == 0 }).await;
    e.find(tid("undo")).await.expect("undo").click().await.expect("click");
    e.wait_for(By::Css("[data-testid='mcp-server'][data-server='docs']")).await;
    e.driver.clone().quit().await.ok();
}

/// Where `scripts/fetch-mcp-servers.sh` installs `@modelcontextprotocol/server-everything`.
fn server_everything() -> PathBuf {
    let cache = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(std::env::var_os("HOME").expect("HOME")).join(".cache"));
    let npm = cache.join("conclave/mcp-servers-npm");
    assert!(
        npm.join("node_modules/@modelcontextprotocol/server-everything/package.json").is_file(),
        "server-everything is not installed: run `bash scripts/fetch-mcp-servers.sh`"
    );
    npm
}

/// A conclave file declaring the real server-everything (stdio, run by node, its
/// package readable in the sandbox) and a server that exits at once.
fn with_everything(npm: &Path) -> Value {
    let mut conclave =
        plain("mcp-tools", vec![agent("helper", 300, 150, "text=ok")], &[("input", "helper"), ("helper", "out")]);
    let package = npm.join("node_modules/@modelcontextprotocol/server-everything");
    conclave["settings"] = json!({"mcp_servers": {
        "everything": {"command": ["node", package.join("dist/index.js").display().to_string(), "stdio"],
                       "sandbox": {"read": [npm.display().to_string()]}},
        "broken": {"command": ["false"]},
    }});
    conclave
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_palette_lists_a_real_servers_tools_and_a_tool_dropped_on_an_agent_is_saved() {
    let npm = server_everything();
    let e = Editor::start_serving(Path::new(TESTBED), None, &[], &["--allow-commands", "node", "false"]).await;
    let text = serde_json::to_string_pretty(&with_everything(&npm)).expect("JSON");
    e.ws.write_conclave("mcp-tools", &text).expect("write the conclave");
    open(&e, "mcp-tools").await;

    let echo = e.wait_for(By::Css("[data-testid='palette-tool-mcp'][data-tool='mcp:everything/echo']")).await;
    let all =
        e.find(By::Css("[data-testid='palette-tool-mcp'][data-tool='mcp:everything/*']")).await.expect("all tools");
    assert_eq!(all.text().await.unwrap_or_default(), "All tools of everything");
    let listed = e
        .count(By::Css("[data-testid='mcp-palette'][data-server='everything'] [data-testid='palette-tool-mcp']"))
        .await;
    assert!(listed >= 4, "server-everything's tools are listed ({listed} items)");
    // A server that cannot be listed says why, under its own name.
    let broken = e.find(By::Css("[data-testid='mcp-palette'][data-server='broken']")).await.expect("broken server");
    let error = wait_for_text(&broken, "mcp-tools-error").await;
    assert!(error.starts_with("Cannot list the tools: "), "{error}");
    assert!(error.contains("broken"), "the error names the server: {error}");
    wait_until("the listings to end", || async { e.count(tid("mcp-loading")).await == 0 }).await;

    let helper = e.find(node("helper")).await.expect("the agent");
    e.drag(&echo, &helper, 0, 0).await;
    e.wait_for(tid("chip-tool-mcp:everything/echo")).await;
    let chip = e.find(tid("chip-tool-mcp:everything/echo")).await.expect("chip");
    assert_eq!(chip.text().await.unwrap_or_default().trim_end_matches('×').trim(), "everything · echo");
    let all =
        e.find(By::Css("[data-testid='palette-tool-mcp'][data-tool='mcp:everything/*']")).await.expect("all tools");
    e.drag(&all, &helper, 0, 0).await;
    e.wait_for(tid("chip-tool-mcp:everything/*")).await;
    let inspector = e.wait_for(By::Css("[data-testid='node-mcp-tool'][data-tool='mcp:everything/*']")).await;
    click_in(&inspector, "chip-remove").await;
    wait_until("the removed chip", || async { e.count(tid("chip-tool-mcp:everything/*")).await == 0 }).await;

    // Refresh lists the tools again.
    let everything = e.find(By::Css("[data-testid='mcp-palette'][data-server='everything']")).await.expect("server");
    click_in(&everything, "mcp-refresh").await;
    e.wait_for(By::Css("[data-testid='palette-tool-mcp'][data-tool='mcp:everything/echo']")).await;

    e.save_as("mcp-tools").await;
    assert_eq!(on_disk(&e, "mcp-tools")["nodes"][1]["agent"]["tools"], json!(["mcp:everything/echo"]));
    e.driver.clone().quit().await.ok();
}

/// The text of the element with test id `testid` in `scope`, once it has one.
async fn wait_for_text(scope: &WebElement, testid: &str) -> String {
    let deadline = std::time::Instant::now() + PATIENCE;
    loop {
        let text = text_of_in(scope, testid).await;
        if !text.is_empty() {
            return text;
        }
        assert!(std::time::Instant::now() < deadline, "timed out waiting for {testid}");
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
}

/// A repository whose working tree changes `upload.rs`.
fn repository(e: &Editor) -> PathBuf {
    let repo = e.ws.root().join("repo");
    std::fs::create_dir_all(&repo).expect("mkdir");
    git(&repo, &["init", "-q"]);
    std::fs::write(repo.join("upload.rs"), "fn save() {}\n").expect("write");
    git(&repo, &["add", "."]);
    git(&repo, &["commit", "-q", "-m", "one"]);
    std::fs::write(repo.join("upload.rs"), "fn save(name: &str) {\n    std::fs::write(name, b\"\").ok();\n}\n")
        .expect("write");
    repo
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_review_run_shows_each_tool_call_with_its_arguments_result_and_time() {
    let a = Vendor::Anthropic;
    let findings = json!({"findings": [{"severity": "major", "file": "upload.rs", "line": 2, "raisedBy": "reader",
        "stance": "concern", "description": "the write is unchecked"}], "counts": {"blocker": 0, "major": 1, "minor": 0, "nit": 0}});
    let replies = vec![
        a.tool_calls(&[("call_1", "read_file", json!({"path": "upload.rs"}))]),
        a.tool_calls(&[("call_2", "read_file", json!({"path": "missing.rs"}))]),
        a.answer(&findings.to_string()),
    ];
    let fake = FakeServer::start_routed(vec![Route { marker: "You read files".into(), replies }]).await;
    let e = Editor::start_with(Path::new(TESTBED), None, &a.env(&fake.base, "sk-ant-test")).await;
    let repo = repository(&e);
    let mut reader = agent("reader", 300, 150, "claude-sonnet-4-5");
    reader["agent"]["provider"] = json!("anthropic");
    reader["agent"]["system_prompt"] = json!("You read files before you judge them.");
    reader["agent"]["tools"] = json!(["read_file"]);
    reader["agent"]["output_schema_ref"] = json!("review.findings.v1");
    put(&e, &plain("reading", vec![reader], &[("input", "reader"), ("reader", "out")]), true).await;
    open(&e, "reading").await;
    start_from_dialog(&e, Some(&repo), "").await;
    wait_for_status(&e, None, "succeeded").await;

    e.find(node("reader")).await.expect("the agent").click().await.expect("select");
    let calls = e.wait_for(tid("tool-calls")).await;
    wait_until("both results", || async {
        e.count(By::Css("[data-testid='tool-call'][data-state='pending']")).await == 0
    })
    .await;
    let all = calls.find_all(tid("tool-call")).await.expect("calls");
    assert_eq!(all.len(), 2, "{}", calls.text().await.unwrap_or_default());
    let first = &all[0];
    assert_eq!(first.attr("data-tool").await.ok().flatten().as_deref(), Some("read_file"));
    assert_eq!(first.attr("data-state").await.ok().flatten().as_deref(), Some("ok"));
    assert_eq!(text_of_in(first, "tool-arguments").await, r#"{"path":"upload.rs"}"#);
    assert!(text_of_in(first, "tool-result").await.contains("fn save(name: &str)"), "the file's first lines");
    assert!(text_of_in(first, "tool-duration").await.ends_with(" ms"));
    let second = &all[1];
    assert_eq!(second.attr("data-state").await.ok().flatten().as_deref(), Some("error"), "a missing file is an error");
    assert!(!text_of_in(second, "tool-result").await.is_empty(), "the error the model read is shown");
    assert!(text_of(&e, tid("run-status")).await == "succeeded");

    // A finished run opened from the history keeps its record and reads its calls
    // from its events.
    e.driver.refresh().await.expect("reload");
    e.wait_for(tid("run-item")).await.click().await.expect("watch the finished run");
    wait_for_status(&e, None, "succeeded").await;
    e.wait_for(node("reader")).await.click().await.expect("select");
    e.wait_for(tid("tool-calls")).await;
    wait_until("the calls of the finished run", || async {
        e.count(By::Css("[data-testid='tool-call'][data-state='ok'][data-tool='read_file']")).await == 1
            && e.count(By::Css("[data-testid='tool-call'][data-state='error']")).await == 1
    })
    .await;
    e.driver.clone().quit().await.ok();
}

/// The text of the element with test id `testid` in `scope`.
async fn text_of_in(scope: &WebElement, testid: &str) -> String {
    match scope.find(tid(testid)).await {
        Ok(el) => el.text().await.unwrap_or_default(),
        Err(_) => String::new(),
    }
}
