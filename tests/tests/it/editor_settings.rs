//! The Settings panel's form for what people otherwise edit in a conclave's file, in
//! headless Chromium: a user types the budget key by key, turns the rules and diff
//! tightening off and writes a shared prompt; Save writes exactly that into the file,
//! Undo takes each change back, and a cost that is not one is refused with why.

use conclave_tests::browser::{Editor, tid, wait_until};
use serde_json::{Value, json};
use std::path::Path;
use thirtyfour::prelude::*;

fn conclave() -> Value {
    json!({"version": 1, "id": "tuned", "name": "Tuned", "nodes": [
        {"id": "input", "kind": "trigger", "label": "input", "position": {"x": 0, "y": 0}},
        {"id": "a", "kind": "agent", "label": "a", "position": {"x": 300, "y": 0}, "agent": {"provider": "fake", "model": "text=ok"}}
    ], "edges": [{"from": "input", "to": "a"}]})
}

/// Clears the field with this test id, types `text` key by key and leaves it.
async fn type_into(e: &Editor, id: &str, text: &str) {
    let field = e.wait_for(tid(id)).await;
    e.clear_and_type(&field, text).await;
    field.send_keys(Key::Tab).await.expect("leave the field");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_settings_form_edits_the_budget_rules_tightening_and_shared_prompt() {
    let e = Editor::start(Path::new(env!("CARGO_BIN_EXE_conclave-testbed"))).await;
    e.create_conclave(&conclave()).await;
    e.open_conclave("tuned").await;
    e.find(tid("settings")).await.expect("Settings").click().await.expect("open Settings");
    e.wait_for(tid("run-settings")).await;
    for (id, on) in [("settings-rules", true), ("settings-diff-tightening", true)] {
        assert_eq!(e.find(tid(id)).await.expect(id).is_selected().await.expect("state"), on, "{id} starts on");
    }

    type_into(&e, "settings-max-cost", "2.5").await;
    type_into(&e, "settings-max-tokens", "120000").await;
    e.find(tid("settings-rules")).await.expect("rules").click().await.expect("untick");
    e.find(tid("settings-diff-tightening")).await.expect("tightening").click().await.expect("untick");
    type_into(&e, "settings-shared-prompt", "Cite the line.").await;
    let saved = e.save_as("tuned").await;
    let expected = json!({"diff_tightening": false, "shared_prompt": "Cite the line.",
                          "budget": {"max_cost_usd": 2.5, "max_tokens": 120000}, "rules": false});
    assert_eq!(saved["settings"], expected);

    // Each change is one undo step: the prompt, then diff tightening go back.
    e.find(tid("undo")).await.expect("undo").click().await.expect("undo the prompt");
    e.find(tid("undo")).await.expect("undo").click().await.expect("undo tightening");
    let undone = e.save_as("tuned").await;
    assert_eq!(undone["settings"], json!({"budget": {"max_cost_usd": 2.5, "max_tokens": 120000}, "rules": false}));
    let prompt = e.find(tid("settings-shared-prompt")).await.expect("prompt");
    assert_eq!(prompt.prop("value").await.expect("value").unwrap_or_default(), "", "the form follows the undo");
    assert!(e.find(tid("settings-diff-tightening")).await.expect("box").is_selected().await.expect("state"));

    // A cost that is not one is refused and the file keeps the last one.
    type_into(&e, "settings-max-cost", "two dollars").await;
    wait_until("the refusal", || async { e.status().await.contains("not an amount of US dollars") }).await;
    // Emptied, a limit is left out of the file, and with no limit left the budget too.
    type_into(&e, "settings-max-cost", "").await;
    type_into(&e, "settings-max-tokens", "").await;
    e.find(tid("settings-rules")).await.expect("rules").click().await.expect("tick again");
    let cleared = e.save_as("tuned").await;
    assert!(cleared.get("settings").is_none(), "default settings are left out of the file: {cleared}");
    e.driver.clone().quit().await.ok();
}
