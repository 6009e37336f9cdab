//! The first render on a slow link: from navigation to an opened conclave drawn on
//! the canvas, with the browser throttled through DevTools and its cache off, so each
//! sample downloads the whole editor as a first visit does.

use conclave_tests::browser::{Editor, workspace_root};
use conclave_tests::devtools::Link;
use serde_json::{Value, json};
use std::time::{Duration, Instant};

/// The conclave opened: the shipped `verified-review`, 17 cards.
const OPENED: &str = "verified-review";

/// The link of issue 35's measurement: 10 Mbit/s each way, 40 ms added latency.
const LINK: Link = Link { bits_per_second: 10_000_000, latency_ms: 40 };

/// Run in every document the tab opens, before the page's own scripts: once the
/// catalog lists the conclave it opens it (a click on its item), then records when
/// every card is on the page and a frame has been drawn, in milliseconds since the
/// navigation started (`performance.now()` counts from there).
const PROBE: &str = r#"
if (location.protocol.startsWith('http')) {
  const item = "[data-testid='conclave-item'][data-conclave-id='ID']";
  let clicked = false;
  const seen = new MutationObserver(() => {
    if (!clicked) {
      const found = document.querySelector(item);
      if (found) { clicked = true; found.click(); }
    } else if (document.querySelectorAll("[data-testid='node']").length >= CARDS) {
      seen.disconnect();
      requestAnimationFrame(() => { window.__firstRender = performance.now(); });
    }
  });
  seen.observe(document, {childList: true, subtree: true});
}"#;

/// The times of `samples` first renders, each with `accept_encoding` sent (or the
/// browser's own when `None`), and what the wasm bundle took on the wire in the last.
pub async fn first_renders(editor: &Editor, accept_encoding: Option<&str>, samples: usize) -> (Vec<f64>, u64) {
    let file = workspace_root().join(format!("conclaves/{OPENED}.conclave.json"));
    let text = std::fs::read_to_string(&file).expect("the shipped verified-review conclave");
    let cards = serde_json::from_str::<Value>(&text).expect("json")["nodes"].as_array().map_or(0, Vec::len);
    editor.ws.write_conclave(OPENED, &text).expect("write the conclave");
    if let Some(value) = accept_encoding {
        editor.accept_encoding(value).await;
    }
    editor.throttle(LINK).await;
    let probe = PROBE.replace("ID", OPENED).replace("CARDS", &cards.to_string());
    let added = editor.cdp("Page.addScriptToEvaluateOnNewDocument", json!({"source": probe})).await;
    let mut took = Vec::new();
    for _ in 0..samples {
        editor.driver.goto("about:blank").await.expect("navigate away");
        editor.driver.goto(&editor.url).await.expect("navigate");
        took.push(rendered_at(editor).await);
    }
    let wasm =
        editor.transferred().await.into_iter().find(|(path, _)| path.ends_with(".wasm")).map_or(0, |(_, bytes)| bytes);
    editor.cdp("Page.removeScriptToEvaluateOnNewDocument", json!({"identifier": added["identifier"]})).await;
    editor
        .cdp(
            "Network.emulateNetworkConditions",
            json!({"offline": false, "latency": 0, "downloadThroughput": -1, "uploadThroughput": -1}),
        )
        .await;
    editor.cdp("Network.setExtraHTTPHeaders", json!({"headers": {}})).await;
    (took, wasm)
}

/// Waits for the probe's mark and returns it.
async fn rendered_at(editor: &Editor) -> f64 {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let mark = editor.driver.execute("return window.__firstRender ?? null;", Vec::new()).await;
        if let Some(ms) = mark.ok().and_then(|m| m.json().as_f64()) {
            return ms;
        }
        assert!(Instant::now() < deadline, "the opened conclave was not drawn within a minute");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}
