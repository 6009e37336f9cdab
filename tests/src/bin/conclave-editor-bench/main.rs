//! Measures the editor: the wasm bundle's size (raw, gzip -9, Brotli as served), the
//! time from navigation to an opened conclave drawn on a throttled link
//! (`first_render.rs`), the time from navigation to a usable editor, the time to open
//! and render a 300-node conclave, to auto-lay it out, and to handle one typed
//! character of a field name while it is open, in headless Chromium, over several runs. Run with
//! `bash scripts/build-editor.sh && cargo build -p conclave-tests --bins && cargo run
//! -p conclave-tests --bin conclave-editor-bench` (the testbed serves the editor built
//! into it, so it is rebuilt after the bundle).

mod first_render;

use conclave_tests::browser::{Editor, node, tid, workspace_root};
use serde_json::{Value, json};
use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;
use thirtyfour::Key;

const NODES: usize = 300;
const SAMPLES: usize = 5;

/// A layered conclave: a trigger, then layers of 10 agents each fed by the layer before.
fn big_conclave() -> Value {
    let schema = json!({"type": "object", "properties": {"summary": {"type": "string"}, "line": {"type": "integer"}}});
    let mut nodes = vec![json!({"id": "n0", "kind": "trigger", "label": "n0", "position": {"x": 0, "y": 0}})];
    let mut edges = Vec::new();
    for i in 1..NODES {
        let (layer, slot) = ((i - 1) / 10, (i - 1) % 10);
        nodes.push(json!({"id": format!("n{i}"), "kind": "agent", "label": format!("n{i}"),
            "position": {"x": 260 * (layer + 1), "y": 110 * slot as i64},
            "agent": {"provider": "fake", "model": "json={}", "output_schema": schema}}));
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
    let size = |path: &std::path::Path| std::fs::metadata(path).map(|m| m.len()).unwrap_or(0);
    let gzip = Command::new("sh")
        .arg("-c")
        .arg(format!("gzip -9 -c '{}' | wc -c", wasm.display()))
        .output()
        .ok()
        .and_then(|o| String::from_utf8_lossy(&o.stdout).trim().parse::<u64>().ok())
        .unwrap_or(0);
    // The copies conclave serves (tests check it sends exactly these bytes).
    let (brotli, zopfli) = (size(&wasm.with_extension("wasm.br")), size(&wasm.with_extension("wasm.gz")));
    println!(
        "bundle: {} bytes of wasm, {gzip} with gzip -9; served: {brotli} with Brotli (budget: 300 KB, {}), {zopfli} with gzip (zopfli)",
        size(&wasm),
        300 * 1024
    );

    let testbed: PathBuf = std::env::current_exe()
        .ok()
        .and_then(|p| Some(p.parent()?.join("conclave-testbed")))
        .expect("the testbed binary sits beside this one");
    // The testbed serves the editor built into it, so it must be newer than the bundle
    // measured above, or the timings would be of an older editor.
    let modified = |p: &std::path::Path| std::fs::metadata(p).and_then(|m| m.modified()).ok();
    if modified(&testbed) < modified(&wasm) {
        eprintln!(
            "the testbed's built-in editor is older than client/dist: run `cargo build -p conclave-tests --bins` first"
        );
        std::process::exit(2);
    }
    let editor = Editor::start(&testbed).await;
    first_render(&editor).await;
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
        // From a blank page, so each sample is a whole page load (the editor's URL
        // differs from the loaded page's only in its fragment).
        editor.driver.goto("about:blank").await.expect("navigate away");
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
    auto_layout(&editor).await;
    typing(&editor).await;
    editor.driver.clone().quit().await.ok();
}

/// The first render on the throttled link, as the browser asks for the files and with
/// them asked for uncompressed.
async fn first_render(editor: &Editor) {
    for (asked, accept) in [("as Chromium asks", None), ("uncompressed (identity)", Some("identity"))] {
        let (took, wasm) = first_render::first_renders(editor, accept, SAMPLES).await;
        println!(
            "first render on 10 Mbit/s, 40 ms, no cache, {asked}: median {:.0} ms over {SAMPLES} runs (target: under 1.5 s), wasm {} bytes on the wire",
            median(took.clone()),
            wasm
        );
        println!("  samples: {:?}", took.iter().map(|r| format!("{r:.0}")).collect::<Vec<_>>());
    }
}

/// Installs a probe named `name` that times the work one user event causes: from
/// `start`'s dispatch (a capturing listener on `window`, so before the editor's own)
/// to the end of `end`'s dispatch (a bubbling listener on `window`, so after the
/// editor's own and after every microtask they queued, which is where Leptos runs
/// its effects), plus the style and layout the changed DOM needs, forced there by
/// reading a layout property. Painting and waiting for the next frame are not
/// included: they depend on the display, not on the editor. Each sample in
/// `window.__took[name]` is `[total, script]`, script being the part before style
/// and layout.
async fn install_probe(editor: &Editor, name: &str, start: &str, end: &str) {
    let script = format!(
        "window.__took = window.__took || {{}};
         window.__took['{name}'] = [];
         let t0 = 0;
         window.addEventListener('{start}', () => {{ t0 = performance.now(); }}, true);
         window.addEventListener('{end}', () => {{
           const script = performance.now() - t0;
           void document.body.offsetHeight;
           window.__took['{name}'].push([performance.now() - t0, script]);
         }}, false);"
    );
    editor.driver.execute(&script, Vec::new()).await.expect("probe");
}

/// The samples of probe `name` collected since the last call, as (total, script) in
/// milliseconds.
async fn samples(editor: &Editor, name: &str) -> Vec<(f64, f64)> {
    let script = format!("const took = window.__took['{name}']; window.__took['{name}'] = []; return took;");
    let took = editor.driver.execute(&script, Vec::new()).await.expect("samples").json().clone();
    let pair = |v: &Value| Some((v.get(0)?.as_f64()?, v.get(1)?.as_f64()?));
    took.as_array().map(|v| v.iter().filter_map(pair).collect()).unwrap_or_default()
}

fn summary(v: &[(f64, f64)]) -> String {
    let stats = |mut sorted: Vec<f64>| {
        sorted.sort_by(f64::total_cmp);
        let at = |q: f64| sorted[((sorted.len() - 1) as f64 * q).round() as usize];
        (at(0.5), at(0.9), at(1.0))
    };
    let (median, p90, max) = stats(v.iter().map(|s| s.0).collect());
    let (script, _, _) = stats(v.iter().map(|s| s.1).collect());
    format!(
        "median {median:.1} ms (script {script:.1} ms, the rest style and layout), p90 {p90:.1} ms, max {max:.1} ms over {} samples",
        v.len()
    )
}

/// Clicks Auto-layout (a real click) on the open 300-node conclave, then Undo, several
/// times, timing each layout from the click to a laid-out page.
async fn auto_layout(editor: &Editor) {
    install_probe(editor, "click", "click", "click").await;
    let layout = editor.wait_for(tid("auto-layout")).await;
    let undo = editor.wait_for(tid("undo")).await;
    let mut took = Vec::new();
    for _ in 0..SAMPLES {
        layout.click().await.expect("auto-layout");
        tokio::time::sleep(Duration::from_millis(300)).await;
        took.extend(samples(editor, "click").await);
        undo.click().await.expect("undo");
        tokio::time::sleep(Duration::from_millis(300)).await;
        samples(editor, "click").await;
    }
    println!(
        "auto-layout of {NODES} nodes (layout, one undo step, {NODES} cards moved): {} (target: under 100 ms)",
        summary(&took)
    );
}

/// Types into the first field name of agent n1's builder, key by key, with the
/// 300-node conclave open, timing each key: its `keydown` and its `input` (two
/// tasks when the key comes over WebDriver), added up.
async fn typing(editor: &Editor) {
    editor.wait_for(node("n1")).await.click().await.expect("select n1");
    let name = editor.wait_for(tid("field-name")).await;
    name.click().await.expect("focus");
    name.send_keys(Key::End).await.expect("end");
    install_probe(editor, "keydown", "keydown", "keydown").await;
    install_probe(editor, "input", "beforeinput", "input").await;
    for c in "abcdefghijklmnopqrstuvwxyz".chars() {
        name.send_keys(c.to_string()).await.expect("typing");
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    let keys = samples(editor, "keydown").await;
    let inputs = samples(editor, "input").await;
    let took: Vec<(f64, f64)> = keys.iter().zip(&inputs).map(|(k, i)| (k.0 + i.0, k.1 + i.1)).collect();
    println!("typing one character of a field name, {NODES} nodes open: {} (target: under 16 ms)", summary(&took));
}
