//! The editor in a real headless Chromium (Debian's chromium and chromium-driver),
//! driven over WebDriver against the real server: drag-and-drop authoring, the
//! Structured Output chip and field builder, undo, refused cycles, diagnostics, and a
//! run streaming live node states to a report. Needs the editor built
//! (scripts/build-editor.sh) and Chromium installed (scripts/setup.sh); scripts/test.sh
//! does both.

use conclave_testkit::git;
use conclave_tests::browser::{Editor, node, tid, wait_until, workspace_root};
use serde_json::json;
use std::path::Path;
use std::time::Duration;
use thirtyfour::components::SelectElement;
use thirtyfour::prelude::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn authoring_a_conclave_by_drag_and_drop() {
    let e = Editor::start(Path::new(env!("CARGO_BIN_EXE_conclave-testbed"))).await;
    screenshot(&e, "editor-empty.png").await;
    e.wait_for(tid("conclave-new")).await.click().await.expect("new");
    e.wait_for(tid("canvas")).await;
    let name = e.find(tid("conclave-name")).await.expect("name");
    e.clear_and_type(&name, "pr-review").await;
    name.send_keys(Key::Tab).await.expect("leave the name");

    e.drop_on_canvas("palette-trigger", -350, 0).await;
    e.drop_on_canvas("palette-agent", -50, -150).await;
    e.drop_on_canvas("palette-agent", -50, 150).await;
    e.drop_on_canvas("palette-agent", 250, 0).await;
    assert_eq!(e.count(tid("node")).await, 4, "a trigger and three agents on the canvas");
    for (from, to) in [("input", "agent"), ("input", "agent-2"), ("agent", "agent-3"), ("agent-2", "agent-3")] {
        e.connect(from, to).await;
    }
    assert_eq!(e.count(tid("edge")).await, 4);

    e.connect("agent-3", "agent").await;
    assert_eq!(e.count(tid("edge")).await, 4, "the edge closing a cycle is refused");
    assert!(e.status().await.contains("would close a cycle"), "{}", e.status().await);

    let palette = e.wait_for(tid("palette-structured-output")).await;
    let target = e.wait_for(node("agent")).await;
    e.drag(&palette, &target, 0, 0).await;
    e.wait_for(By::Css("[data-node-id='agent'] [data-testid='chip-structured-output']")).await;
    let canvas = e.wait_for(tid("canvas")).await;
    e.drag(&e.wait_for(tid("palette-tool-grep")).await, &canvas, 300, 300).await;
    assert!(e.status().await.contains("Drop capabilities onto an agent node"), "{}", e.status().await);

    e.wait_for(node("agent")).await.click().await.expect("select");
    for _ in 0..4 {
        e.wait_for(tid("field-add")).await.click().await.expect("add field");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(e.count(tid("field-row")).await, 4);
    for (row, name) in ["summary", "line", "severity", "confirmed"].iter().enumerate() {
        e.type_into(row, "field-name", name).await;
    }
    for (row, kind) in [(1usize, "integer"), (2, "enum"), (3, "boolean")] {
        let rows = e.driver.find_all(tid("field-row")).await.expect("rows");
        let select = SelectElement::new(&rows[row].find(tid("field-type")).await.expect("type")).await.expect("select");
        select.select_by_value(kind).await.expect("choose type");
        tokio::time::sleep(Duration::from_millis(150)).await;
    }
    let rows = e.driver.find_all(tid("field-row")).await.expect("rows");
    rows[0].find(tid("field-required")).await.expect("required").click().await.expect("click");
    tokio::time::sleep(Duration::from_millis(150)).await;
    e.type_into(0, "field-max-length", "200").await;
    e.type_into(1, "field-min", "1").await;
    e.type_into(2, "field-enum-values", "blocker, major, minor").await;

    e.find(tid("save")).await.expect("save").click().await.expect("click");
    wait_until("the save", || async { e.status().await.starts_with("Saved") }).await;
    let saved = e.api("/api/conclaves/pr-review").await;
    let schema = &saved["nodes"][1]["agent"]["output_schema"];
    assert_eq!(
        schema,
        &json!({
            "type": "object",
            "properties": {
                "summary": {"type": "string", "maxLength": 200},
                "line": {"type": "integer", "minimum": 1},
                "severity": {"type": "string", "enum": ["blocker", "major", "minor"]},
                "confirmed": {"type": "boolean"}
            },
            "required": ["summary"]
        }),
        "saved: {saved}"
    );
    screenshot(&e, "editor-inspector.png").await;

    let chip = e.wait_for(By::Css("[data-node-id='agent'] [data-testid='chip-structured-output']")).await;
    chip.find(tid("chip-remove")).await.expect("remove").click().await.expect("click");
    e.find(tid("save")).await.expect("save").click().await.expect("click");
    wait_until("the chip's removal to be saved", || async {
        e.api("/api/conclaves/pr-review").await["nodes"][1]["agent"].get("output_schema").is_none()
    })
    .await;

    e.find(tid("undo")).await.expect("undo").click().await.expect("click");
    e.wait_for(By::Css("[data-node-id='agent'] [data-testid='chip-structured-output']")).await;
    e.find(tid("save")).await.expect("save").click().await.expect("click");
    wait_until("the undone removal to be saved", || async {
        e.api("/api/conclaves/pr-review").await["nodes"][1]["agent"].get("output_schema").is_some()
    })
    .await;

    e.drop_on_canvas("palette-agent", 250, 250).await;
    e.find(tid("validate")).await.expect("validate").click().await.expect("click");
    let diagnostic = e.wait_for(By::Css("[data-testid='diagnostic'].warning")).await;
    assert!(diagnostic.text().await.unwrap_or_default().contains("cannot be reached"), "the new agent has no inputs");
    e.find(tid("canvas")).await.expect("canvas").click().await.ok();
    diagnostic.click().await.expect("click the diagnostic");
    let stray = e.wait_for(node("agent-4")).await;
    assert!(
        stray.class_name().await.expect("class").unwrap_or_default().contains("selected"),
        "the diagnostic selected the broken node"
    );
    let inspector = e.find(tid("inspector")).await.expect("inspector").text().await.unwrap_or_default();
    assert!(inspector.to_lowercase().contains("agent · agent-4"), "the inspector shows the broken node: {inspector}");
    e.driver.clone().quit().await.ok();
}

/// Saves a screenshot into docs/ when CONCLAVE_SCREENSHOTS is set (to refresh the
/// README's pictures).
async fn screenshot(e: &Editor, name: &str) {
    if std::env::var_os("CONCLAVE_SCREENSHOTS").is_some() {
        tokio::time::sleep(Duration::from_millis(200)).await;
        e.driver.screenshot(&workspace_root().join("docs").join(name)).await.expect("screenshot");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_review_run_shows_live_node_states_and_ends_with_a_report() {
    let e = Editor::start(Path::new(env!("CARGO_BIN_EXE_conclave-testbed"))).await;
    let repo = e.ws.root().join("repo");
    std::fs::create_dir_all(&repo).expect("mkdir");
    git(&repo, &["init", "-q"]);
    std::fs::write(repo.join("upload.rs"), "fn save() {}\n").expect("write");
    git(&repo, &["add", "."]);
    git(&repo, &["commit", "-q", "-m", "one"]);
    std::fs::write(repo.join("upload.rs"), "fn save(name: &str) { std::fs::write(name, b\"\").ok(); }\n")
        .expect("write");
    let finding = |severity: &str, stance: &str, lane: &str| {
        format!(
            r#"delay=400;json={{"findings":[{{"severity":"{severity}","file":"upload.rs","line":1,"description":"{lane} view of the write","raisedBy":"{lane}","stance":"{stance}"}}],"counts":{{"blocker":{},"major":0,"minor":0,"nit":{}}}}}"#,
            u8::from(severity == "blocker"),
            u8::from(severity == "nit")
        )
    };
    let agent = |id: &str, x: i32, y: i32, model: String| {
        json!({"id": id, "kind": "agent", "label": id, "position": {"x": x, "y": y},
               "agent": {"provider": "fake", "model": model, "output_schema_ref": "review.findings.v1"}})
    };
    let conclave = json!({
        "version": 1, "id": "ui-review", "name": "UI review",
        "nodes": [
            {"id": "change", "kind": "trigger", "label": "Change", "position": {"x": 0, "y": 150}},
            agent("security", 280, 40, finding("blocker", "concern", "security")),
            agent("conventions", 280, 260, finding("nit", "approval", "conventions")),
            agent("writer", 560, 150, finding("blocker", "concern", "writer")),
            {"id": "report", "kind": "output", "label": "Report", "position": {"x": 840, "y": 150}}
        ],
        "edges": [{"from": "change", "to": "security"}, {"from": "change", "to": "conventions"},
                  {"from": "security", "to": "writer"}, {"from": "conventions", "to": "writer"}, {"from": "writer", "to": "report"}]
    });
    let created = reqwest::Client::new()
        .post(format!("{}/api/conclaves", e.base))
        .bearer_auth(&e.token)
        .json(&conclave)
        .send()
        .await
        .expect("create");
    assert_eq!(created.status().as_u16(), 201);
    let shipped = std::fs::read_to_string(workspace_root().join("conclaves/light-code-review.conclave.json"))
        .expect("default conclave");
    std::fs::write(e.ws.root().join("conclaves/light-code-review.conclave.json"), shipped).expect("copy");
    e.driver.refresh().await.expect("reload");
    e.wait_for(By::Css("[data-testid='conclave-item'][data-conclave-id='light-code-review']"))
        .await
        .click()
        .await
        .expect("open");
    e.wait_for(node("writer")).await.click().await.expect("select the writer");
    e.wait_for(tid("lowering-preview")).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    screenshot(&e, "editor-review.png").await;
    e.wait_for(By::Css("[data-testid='conclave-item'][data-conclave-id='ui-review']"))
        .await
        .click()
        .await
        .expect("open");
    e.wait_for(node("writer")).await;
    e.find(tid("run")).await.expect("run").click().await.expect("click");
    let repository = e.wait_for(tid("run-repository")).await;
    repository.clear().await.expect("clear");
    repository.send_keys(repo.display().to_string()).await.expect("type");
    e.find(tid("run-start")).await.expect("start").click().await.expect("click");

    wait_until("a node to be running", || async {
        e.driver
            .find_all(By::Css("[data-testid='node-status'].state-running"))
            .await
            .map(|v| !v.is_empty())
            .unwrap_or(false)
    })
    .await;
    wait_until("the run to succeed", || async {
        match e.find(tid("run-status")).await {
            Ok(el) => el.text().await.unwrap_or_default() == "succeeded",
            Err(_) => false,
        }
    })
    .await;
    for id in ["security", "conventions", "writer"] {
        let status = e.wait_for(By::Css(format!("[data-testid='node-status'][data-node-id='{id}']"))).await;
        assert_eq!(status.text().await.unwrap_or_default(), "succeeded", "{id}");
    }
    let contradictions = e.wait_for(tid("contradictions")).await.text().await.unwrap_or_default();
    assert!(contradictions.contains("upload.rs:1"), "{contradictions}");
    let report = e.wait_for(tid("report")).await.text().await.unwrap_or_default();
    assert!(report.contains("## Contradictions (1)"), "{report}");
    screenshot(&e, "editor-run.png").await;
    e.driver.clone().quit().await.ok();
}
