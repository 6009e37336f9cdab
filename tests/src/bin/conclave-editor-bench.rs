//! Measures the editor: the wasm bundle's size (raw and gzip -9), the time from
//! navigation to a usable editor, and the time to open and render a 300-node conclave,
//! in headless Chromium, over several runs. Run with
//! `cargo run -p conclave-tests --bin conclave-editor-bench` after
//! `bash scripts/build-editor.sh`.

use conclave_tests::browser::{Editor, workspace_root};
use serde_json::{Value, json};
use std::path::PathBuf;
use std::process::Command;

const NODES: usize = 300;
const SAMPLES: usize = 5;

/// A layered conclave: a trigger, then layers of 10 agents each fed by the layer before.
fn big_conclave() -> Value {
    let mut nodes = vec![json!({"id": "n0", "kind": "trigger", "label": "n0", "position": {"x": 0, "y": 0}})];
    let mut edges = Vec::new();
    for i in 1..NODES {
        let (layer, slot) = ((i - 1) / 10, (i - 1) % 10);
        nodes.push(json!({"id": format!("n{i}"), "kind": "agent", "label": format!("n{i}"),
            "position": {"x": 260 * (layer + 1), "y": 110 * slot as i64},
            "agent": {"provider": "fake", "model": "text=ok"}}));
        let from = if layer == 0 { 0 } else { (layer - 1) * 10 + 1 + slot };
        edges.push(json!({"from": format!("n{from}"), "to": format!("n{i}")}));
    }
    json!({"version": 1, "id": "big", "name": "300 nodes", "nodes": nodes, "edges": edges})
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

#[tokio::main]
async fn main() {
    let wasm = workspace_root().join("client/dist/conclave-client_bg.wasm");
    let raw = std::fs::metadata(&wasm).map(|m| m.len()).unwrap_or(0);
    let gzip = Command::new("sh")
        .arg("-c")
        .arg(format!("gzip -9 -c '{}' | wc -c", wasm.display()))
        .output()
        .ok()
        .and_then(|o| String::from_utf8_lossy(&o.stdout).trim().parse::<u64>().ok())
        .unwrap_or(0);
    println!("bundle: {} KB wasm, {} KB gzip -9 (target: under 400 KB gzip)", raw / 1024, gzip / 1024);

    let testbed: PathBuf = std::env::current_exe()
        .ok()
        .and_then(|p| Some(p.parent()?.join("conclave-testbed")))
        .expect("the testbed binary sits beside this one");
    let editor = Editor::start(&testbed).await;
    let created = reqwest::Client::new()
        .post(format!("{}/api/conclaves", editor.base))
        .bearer_auth(&editor.token)
        .json(&big_conclave())
        .send()
        .await
        .expect("create");
    assert_eq!(created.status().as_u16(), 201, "the 300-node conclave is valid");
    let mut loads = Vec::new();
    let mut renders = Vec::new();
    for _ in 0..SAMPLES {
        editor.driver.goto(&editor.url).await.expect("navigate");
        editor.wait_for(thirtyfour::By::Css("[data-testid='conclave-item'][data-conclave-id='big']")).await;
        let load: Value =
            editor.driver.execute("return performance.now();", Vec::new()).await.expect("script").json().clone();
        loads.push(load.as_f64().unwrap_or(0.0));
        let script = format!(
            "const done = arguments[arguments.length - 1];
             const t0 = performance.now();
             document.querySelector(\"[data-testid='conclave-item'][data-conclave-id='big']\").click();
             (function check() {{
               if (document.querySelectorAll(\"[data-testid='node']\").length >= {NODES}) {{
                 requestAnimationFrame(() => done(performance.now() - t0));
               }} else {{ requestAnimationFrame(check); }}
             }})();"
        );
        let elapsed: Value =
            editor.driver.execute_async(&script, Vec::new()).await.expect("render script").json().clone();
        renders.push(elapsed.as_f64().unwrap_or(f64::NAN));
    }
    println!("page load to a usable editor: median {:.0} ms over {SAMPLES} loads", median(loads));
    println!(
        "open and render {NODES} nodes (fetch, parse, {NODES} cards, {} edges): median {:.0} ms over {SAMPLES} runs (target: under 1 s)",
        NODES - 1,
        median(renders.clone())
    );
    println!("  samples: {:?}", renders.iter().map(|r| format!("{r:.0}")).collect::<Vec<_>>());
}
