//! The field builder and the lowering preview in headless Chromium, typed into with
//! real keystrokes: names typed key by key survive type changes and saves, new fields
//! get unique names and take focus, invalid names show errors without losing rows and
//! stop Save, reordering, raw JSON export and import for schema references, and the
//! preview of every provider dialect side by side, and the provider probe.

use conclave_testkit::wire::{Vendor, status};
use conclave_testkit::{FakeServer, Reply};
use conclave_tests::browser::{Editor, node, tid, wait_until};
use serde_json::{Value, json};
use std::path::Path;
use std::time::Duration;
use thirtyfour::components::SelectElement;
use thirtyfour::prelude::*;

/// Starts the editor on a conclave of a trigger and one agent (`agent`) made through
/// the API, and selects the agent.
async fn editor_with_agent(agent: Value) -> Editor {
    editor_with_agent_and_env(agent, &[]).await
}

async fn editor_with_agent_and_env(agent: Value, env: &[(&str, String)]) -> Editor {
    let e = Editor::start_with(Path::new(env!("CARGO_BIN_EXE_conclave-testbed")), None, env).await;
    let conclave = json!({
        "version": 1, "id": "builder", "name": "Builder",
        "nodes": [
            {"id": "input", "kind": "trigger", "label": "Input", "position": {"x": 0, "y": 100}},
            {"id": "agent", "kind": "agent", "label": "Agent", "position": {"x": 300, "y": 100}, "agent": agent}
        ],
        "edges": [{"from": "input", "to": "agent"}]
    });
    let created = reqwest::Client::new()
        .post(format!("{}/api/conclaves", e.base))
        .bearer_auth(&e.token)
        .json(&conclave)
        .send()
        .await
        .expect("create");
    assert_eq!(created.status().as_u16(), 201, "{}", created.text().await.unwrap_or_default());
    e.driver.refresh().await.expect("reload");
    e.wait_for(By::Css("[data-testid='conclave-item'][data-conclave-id='builder']")).await.click().await.expect("open");
    e.wait_for(node("agent")).await.click().await.expect("select the agent");
    e.wait_for(tid("schema-source")).await;
    e
}

fn inline(schema: Value) -> Value {
    json!({"provider": "fake", "model": "json={}", "output_schema": schema})
}

/// The agent's saved `output_schema` after pressing Save.
async fn save_and_read(e: &Editor) -> Value {
    e.find(tid("save")).await.expect("save").click().await.expect("click");
    // The status may still say "Saved" from an earlier save; this one has ended once
    // the unsaved-changes mark is gone too.
    wait_until("the save", || async {
        e.status().await.starts_with("Saved")
            && e.driver.find_all(By::Css(".dirty.visible")).await.is_ok_and(|marks| marks.is_empty())
    })
    .await;
    let saved = e.api("/api/conclaves/builder").await;
    saved["nodes"][1]["agent"].clone()
}

/// Asserts `actual` equals `expected` including the order of every object's keys.
fn assert_same_json(actual: &Value, expected: &Value) {
    assert_eq!(actual, expected);
    assert_eq!(actual.to_string(), expected.to_string(), "the key order differs");
}

async fn rows(e: &Editor) -> Vec<WebElement> {
    e.driver.find_all(tid("field-row")).await.expect("rows")
}

async fn value_of(row: &WebElement, testid: &str) -> String {
    row.find(tid(testid)).await.expect("input").prop("value").await.expect("value").unwrap_or_default()
}

async fn choose(e: &Editor, row: usize, testid: &str, value: &str) {
    let select = rows(e).await[row].find(tid(testid)).await.expect("select");
    SelectElement::new(&select).await.expect("a select").select_by_value(value).await.expect("choose");
    tokio::time::sleep(Duration::from_millis(150)).await;
}

async fn texts(e: &Editor, testid: &str) -> Vec<String> {
    let mut out = Vec::new();
    for el in e.driver.find_all(tid(testid)).await.expect("elements") {
        out.push(el.text().await.unwrap_or_default());
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn four_fields_typed_key_by_key_are_saved_exactly() {
    let e = editor_with_agent(inline(json!({"type": "object", "properties": {}, "required": []}))).await;
    for _ in 0..4 {
        e.wait_for(tid("field-add")).await.click().await.expect("add field");
    }
    assert_eq!(rows(&e).await.len(), 4);
    for (row, name) in ["summary", "line", "level", "ok"].iter().enumerate() {
        e.type_into(row, "field-name", name).await;
    }
    // `line` is named first and made a number with a bound, then an integer: the name
    // and the bound stay.
    choose(&e, 1, "field-type", "number").await;
    e.type_into(1, "field-min", "1").await;
    choose(&e, 1, "field-type", "integer").await;
    choose(&e, 2, "field-type", "enum").await;
    choose(&e, 3, "field-type", "boolean").await;
    let names: Vec<String> = names_shown(&e).await;
    assert_eq!(names, ["summary", "line", "level", "ok"], "type changes keep the names");
    assert_eq!(value_of(&rows(&e).await[1], "field-min").await, "1", "integer keeps the number's bound");
    rows(&e).await[0].find(tid("field-required")).await.expect("required").click().await.expect("click");
    e.type_into(0, "field-max-length", "200").await;
    e.type_into(2, "field-enum-values", "high, medium, low").await;

    let agent = save_and_read(&e).await;
    assert_same_json(
        &agent["output_schema"],
        &json!({
            "type": "object",
            "properties": {
                "summary": {"type": "string", "maxLength": 200},
                "line": {"type": "integer", "minimum": 1},
                "level": {"type": "string", "enum": ["high", "medium", "low"]},
                "ok": {"type": "boolean"}
            },
            "required": ["summary"]
        }),
    );
    e.driver.clone().quit().await.ok();
}

async fn names_shown(e: &Editor) -> Vec<String> {
    let mut names = Vec::new();
    for row in rows(e).await {
        names.push(value_of(&row, "field-name").await);
    }
    names
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_new_field_takes_focus_with_its_name_selected() {
    let e = editor_with_agent(inline(json!({"type": "object", "properties": {}, "required": []}))).await;
    e.wait_for(tid("field-add")).await.click().await.expect("add field");
    wait_until("the new name to have focus", || async {
        let active = e.driver.active_element().await.expect("active element");
        active.attr("data-testid").await.ok().flatten().as_deref() == Some("field-name")
    })
    .await;
    assert_eq!(names_shown(&e).await, ["field_1"]);
    // Keys go wherever the focus is: the selected default name is replaced.
    e.driver.action_chain().send_keys("verdict").send_keys(Key::Tab).perform().await.expect("typing");
    for _ in 0..2 {
        e.find(tid("field-add")).await.expect("add").click().await.expect("add field");
    }
    wait_until("three rows", || async { rows(&e).await.len() == 3 }).await;
    assert_eq!(names_shown(&e).await, ["verdict", "field_1", "field_2"], "default names are unique");
    let agent = save_and_read(&e).await;
    let keys: Vec<&String> = agent["output_schema"]["properties"].as_object().expect("properties").keys().collect();
    assert_eq!(keys, ["verdict", "field_1", "field_2"]);
    e.driver.clone().quit().await.ok();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn duplicate_and_empty_names_are_errors_and_nothing_is_dropped() {
    let original = json!({
        "type": "object",
        "properties": {"alpha": {"type": "string"}, "beta": {"type": "integer", "minimum": 0}, "gamma": {"type": "boolean"}},
        "required": ["alpha", "beta"]
    });
    let e = editor_with_agent(inline(original.clone())).await;
    e.type_into(1, "field-name", "alpha").await;
    assert_eq!(
        texts(&e, "field-error").await,
        ["two fields are named `alpha`: names must be unique", "two fields are named `alpha`: names must be unique"]
    );
    e.type_into(2, "field-name", "").await;
    assert_eq!(texts(&e, "field-error").await.last().map(String::as_str), Some("a field needs a name"));
    assert_eq!(rows(&e).await.len(), 3, "no row is dropped or merged");
    // Save refuses, naming the first row to fix, and the stored schema is untouched.
    e.find(tid("save")).await.expect("save").click().await.expect("click");
    wait_until("the refusal", || async { e.status().await.starts_with("Not saved") }).await;
    assert_eq!(
        e.status().await,
        "Not saved: The field builder of agent `agent` has input that is not saved: field 1 (`alpha`): \
         two fields are named `alpha`: names must be unique. Fix it there, then save again."
    );
    assert_same_json(&e.api("/api/conclaves/builder").await["nodes"][1]["agent"]["output_schema"], &original);

    // The rows as typed survive selecting another node and coming back.
    e.wait_for(node("input")).await.click().await.expect("select the trigger");
    e.wait_for(tid("node-label")).await;
    e.wait_for(node("agent")).await.click().await.expect("select the agent again");
    e.wait_for(tid("field-row")).await;
    assert_eq!(names_shown(&e).await, ["alpha", "alpha", ""]);
    assert_eq!(texts(&e, "field-error").await.len(), 3);

    e.type_into(1, "field-name", "delta").await;
    e.type_into(2, "field-name", "epsilon").await;
    assert!(texts(&e, "field-error").await.is_empty());
    assert_same_json(
        &save_and_read(&e).await["output_schema"],
        &json!({
            "type": "object",
            "properties": {"alpha": {"type": "string"}, "delta": {"type": "integer", "minimum": 0}, "epsilon": {"type": "boolean"}},
            "required": ["alpha", "delta"]
        }),
    );
    e.driver.clone().quit().await.ok();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reordering_fields_changes_the_saved_property_order() {
    let e = editor_with_agent(inline(json!({
        "type": "object",
        "properties": {"alpha": {"type": "string"}, "beta": {"type": "integer"}, "gamma": {"type": "boolean"}},
        "required": ["gamma"]
    })))
    .await;
    rows(&e).await[0].find(tid("field-down")).await.expect("down").click().await.expect("click");
    wait_until("alpha to move down", || async { names_shown(&e).await == ["beta", "alpha", "gamma"] }).await;
    // The button keeps focus as its row moves, so the keyboard can go on moving it.
    wait_until("the moved button to keep focus", || async {
        let active = e.driver.active_element().await.expect("active element");
        active.attr("data-testid").await.ok().flatten().as_deref() == Some("field-down")
    })
    .await;
    e.driver.action_chain().send_keys(Key::Enter).perform().await.expect("press Enter");
    wait_until("alpha to move to the end", || async { names_shown(&e).await == ["beta", "gamma", "alpha"] }).await;
    rows(&e).await[1].find(tid("field-up")).await.expect("up").click().await.expect("click");
    wait_until("gamma to move up", || async { names_shown(&e).await == ["gamma", "beta", "alpha"] }).await;
    assert_same_json(
        &save_and_read(&e).await["output_schema"],
        &json!({
            "type": "object",
            "properties": {"gamma": {"type": "boolean"}, "beta": {"type": "integer"}, "alpha": {"type": "string"}},
            "required": ["gamma"]
        }),
    );
    // Each move was one undo step, and the rows follow an undo of a move.
    e.find(tid("undo")).await.expect("undo").click().await.expect("click");
    wait_until("the last move to be undone", || async { names_shown(&e).await == ["beta", "gamma", "alpha"] }).await;
    e.driver.clone().quit().await.ok();
}

/// Four fields: `anchor` and three whose rows have every control between them: a
/// string (lengths), an integer (bounds) and an enum (values).
fn four_fields() -> Value {
    inline(json!({
        "type": "object",
        "properties": {
            "anchor": {"type": "string"},
            "title": {"type": "string"},
            "count": {"type": "integer"},
            "level": {"type": "string", "enum": ["low", "high"]}
        },
        "required": []
    }))
}

/// Names row `row` `anchor` like the first row, so both rows say their name is taken,
/// then types `name` into it key by key (cleared first) and at once, without Tab,
/// clicks the row's control `testid`, found before typing as a user sees it. The new
/// name is still a draft when the click arrives, and committing it takes both error
/// messages away, which moves the row up.
async fn rename_then_click(e: &Editor, row: usize, name: &str, testid: &str) -> WebElement {
    e.type_into(row, "field-name", "anchor").await;
    wait_until("both rows to say the name is taken", || async { texts(e, "field-error").await.len() == 2 }).await;
    let row = &rows(e).await[row];
    let (name_box, control) =
        (row.find(tid("field-name")).await.expect("name"), row.find(tid(testid)).await.expect(testid));
    e.clear_and_type(&name_box, name).await;
    control.click().await.unwrap_or_else(|err| panic!("clicking {testid}: {err}"));
    assert!(texts(e, "field-error").await.is_empty(), "the new name is unique");
    control
}

/// Clears whatever has focus, which must be `input`, and types `text` into it key by key.
async fn type_into_focused(e: &Editor, input: &WebElement, text: &str) {
    let focused = e.driver.active_element().await.expect("the focused element");
    assert!(focused == *input, "the click focused the input");
    e.chord(Key::Control, "a").await;
    e.press(Key::Backspace).await;
    for c in text.chars() {
        e.press(c.to_string()).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_click_right_after_typing_a_name_changes_the_type_and_ticks_required() {
    let e = editor_with_agent(four_fields()).await;
    // The type select: the typed name, then the first pick of a type.
    let select = rename_then_click(&e, 2, "total", "field-type").await;
    SelectElement::new(&select).await.expect("a select").select_by_value("number").await.expect("choose number");
    wait_until("a minimum input for the number", || async { rows(&e).await[2].find(tid("field-min")).await.is_ok() })
        .await;
    assert_eq!(names_shown(&e).await, ["anchor", "title", "total", "level"]);
    assert_same_json(
        &save_and_read(&e).await["output_schema"],
        &json!({
            "type": "object",
            "properties": {
                "anchor": {"type": "string"},
                "title": {"type": "string"},
                "total": {"type": "number"},
                "level": {"type": "string", "enum": ["low", "high"]}
            },
            "required": []
        }),
    );

    let required = rename_then_click(&e, 1, "headline", "field-required").await;
    assert!(required.is_selected().await.expect("checked"), "the first click ticked required");
    assert_eq!(names_shown(&e).await, ["anchor", "headline", "total", "level"]);
    assert_same_json(
        &save_and_read(&e).await["output_schema"],
        &json!({
            "type": "object",
            "properties": {
                "anchor": {"type": "string"},
                "headline": {"type": "string"},
                "total": {"type": "number"},
                "level": {"type": "string", "enum": ["low", "high"]}
            },
            "required": ["headline"]
        }),
    );
    e.driver.clone().quit().await.ok();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_click_right_after_typing_a_name_focuses_each_text_input_of_the_row() {
    let e = editor_with_agent(four_fields()).await;
    // (row, new name, the input clicked, what is typed into it)
    let cases = [
        (1, "headline", "field-description", "What the page says"),
        (1, "heading", "field-min-length", "2"),
        (1, "header", "field-max-length", "80"),
        (2, "total", "field-min", "1"),
        (2, "sum", "field-max", "9"),
        (3, "grade", "field-enum-values", "low, mid, high"),
    ];
    for (row, name, testid, text) in cases {
        let input = rename_then_click(&e, row, name, testid).await;
        type_into_focused(&e, &input, text).await;
        e.press(Key::Tab).await;
        assert_eq!(value_of(&rows(&e).await[row], testid).await, text, "{testid} after renaming to {name}");
        assert_eq!(value_of(&rows(&e).await[row], "field-name").await, name);
    }
    assert_same_json(
        &save_and_read(&e).await["output_schema"],
        &json!({
            "type": "object",
            "properties": {
                "anchor": {"type": "string"},
                "header": {"type": "string", "description": "What the page says", "minLength": 2, "maxLength": 80},
                "sum": {"type": "integer", "minimum": 1, "maximum": 9},
                "grade": {"type": "string", "enum": ["low", "mid", "high"]}
            },
            "required": []
        }),
    );
    e.driver.clone().quit().await.ok();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_click_right_after_typing_a_name_moves_or_removes_the_row() {
    let e = editor_with_agent(four_fields()).await;
    rename_then_click(&e, 2, "total", "field-up").await;
    wait_until("total to move up", || async { names_shown(&e).await == ["anchor", "total", "title", "level"] }).await;
    rename_then_click(&e, 2, "headline", "field-down").await;
    wait_until("headline to move down", || async { names_shown(&e).await == ["anchor", "total", "level", "headline"] })
        .await;
    assert_same_json(
        &save_and_read(&e).await["output_schema"],
        &json!({
            "type": "object",
            "properties": {
                "anchor": {"type": "string"},
                "total": {"type": "integer"},
                "level": {"type": "string", "enum": ["low", "high"]},
                "headline": {"type": "string"}
            },
            "required": []
        }),
    );
    rename_then_click(&e, 2, "grade", "field-remove").await;
    wait_until("the row to go", || async { names_shown(&e).await == ["anchor", "total", "headline"] }).await;
    assert_same_json(
        &save_and_read(&e).await["output_schema"],
        &json!({
            "type": "object",
            "properties": {"anchor": {"type": "string"}, "total": {"type": "integer"}, "headline": {"type": "string"}},
            "required": []
        }),
    );
    e.driver.clone().quit().await.ok();
}

/// Replaces the raw JSON with `text`, typed key by key, and presses Apply.
async fn type_raw_json(e: &Editor, text: &str) {
    let area = e.find(tid("schema-json")).await.expect("textarea");
    e.clear_and_type(&area, text).await;
    e.find(tid("schema-json-apply")).await.expect("apply").click().await.expect("click");
    tokio::time::sleep(Duration::from_millis(150)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn raw_json_exports_and_imports_a_schema_reference() {
    let e =
        editor_with_agent(json!({"provider": "fake", "model": "json={}", "output_schema_ref": "review.findings.v1"}))
            .await;
    let referenced = e.api("/api/schemas/review.findings.v1").await;
    assert!(referenced["properties"]["findings"].is_object(), "{referenced}");
    e.wait_for(By::Css("[data-testid='schema-raw'] summary")).await.click().await.expect("open Raw JSON");
    let area = e.wait_for(tid("schema-json")).await;
    let shown = || async {
        let text = e.find(tid("schema-json")).await.expect("textarea").prop("value").await.ok().flatten();
        text.and_then(|t| serde_json::from_str::<Value>(&t).ok())
    };
    wait_until("the referenced schema", || async { shown().await.as_ref() == Some(&referenced) }).await;

    // Export: Copy puts the text on the clipboard; pasting it back gives the same schema.
    e.find(tid("schema-json-copy")).await.expect("copy").click().await.expect("click");
    let copied = e.wait_for(tid("schema-json-copied")).await.text().await.unwrap_or_default();
    assert_eq!(copied, "Copied to the clipboard.");
    area.click().await.expect("focus");
    area.send_keys(Key::Control + "a").await.expect("select all");
    area.send_keys(Key::Backspace).await.expect("clear");
    assert_eq!(shown().await, None);
    area.send_keys(Key::Control + "v").await.expect("paste");
    assert_eq!(shown().await.as_ref(), Some(&referenced), "the clipboard held the schema");

    // Import: errors first, then a schema that makes the agent inline.
    type_raw_json(&e, "{\"type\": ").await;
    let error = e.wait_for(tid("schema-json-error")).await.text().await.unwrap_or_default();
    assert!(error.starts_with("This is not valid JSON ("), "{error}");
    assert!(error.ends_with("Fix it and apply again; nothing was changed."), "{error}");
    type_raw_json(&e, "[1]").await;
    let error = e.wait_for(tid("schema-json-error")).await.text().await.unwrap_or_default();
    assert_eq!(error, "The schema must be a JSON object (`{ \"type\": \"object\", ... }`); nothing was changed.");
    let imported = json!({"type": "object", "properties": {"verdict": {"type": "string"}}, "required": ["verdict"]});
    type_raw_json(&e, &imported.to_string()).await;
    wait_until("the builder of the inline schema", || async { names_shown(&e).await == ["verdict"] }).await;
    let agent = save_and_read(&e).await;
    assert_same_json(&agent["output_schema"], &imported);
    assert_eq!(agent.get("output_schema_ref"), None);

    // One undo brings the reference back.
    e.find(tid("undo")).await.expect("undo").click().await.expect("click");
    wait_until("the reference to come back", || async { rows(&e).await.is_empty() }).await;
    let agent = save_and_read(&e).await;
    assert_eq!(agent["output_schema_ref"], json!("review.findings.v1"));
    assert_eq!(agent.get("output_schema"), None);
    e.driver.clone().quit().await.ok();
}

/// The notes of each dialect card, as `(dialect, [note text])`.
async fn shown_dialects(e: &Editor) -> Vec<(String, Vec<String>)> {
    let mut out = Vec::new();
    for card in e.driver.find_all(tid("dialect")).await.expect("dialects") {
        let name = card.attr("data-dialect").await.ok().flatten().unwrap_or_default();
        let mut notes = Vec::new();
        for note in card.find_all(tid("dialect-note")).await.expect("notes") {
            notes.push(note.text().await.unwrap_or_default());
        }
        out.push((name, notes));
    }
    out
}

async fn marked(e: &Editor) -> Vec<String> {
    let mut out = Vec::new();
    for card in e.driver.find_all(By::Css("[data-testid='dialect'].own")).await.expect("cards") {
        assert!(card.find(tid("dialect-own")).await.is_ok(), "a marked card says so");
        out.push(card.attr("data-dialect").await.ok().flatten().unwrap_or_default());
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_preview_shows_every_dialect_with_its_notes_and_marks_the_agents_own() {
    let schema = json!({
        "type": "object",
        "properties": {
            "code": {"type": "string", "pattern": "^[A-Z]+$", "maxLength": 12},
            "score": {"type": "number", "minimum": 0, "maximum": 1},
            "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 5}
        },
        "required": ["code"]
    });
    let e = editor_with_agent(json!({"provider": "openai", "model": "gpt-4.1", "output_schema": schema})).await;
    let dialects: Vec<Value> = reqwest::Client::new()
        .post(format!("{}/api/lower/preview", e.base))
        .bearer_auth(&e.token)
        .json(&json!({"schema": schema}))
        .send()
        .await
        .expect("preview")
        .json()
        .await
        .expect("json");
    let expected: Vec<(String, Vec<String>)> = dialects
        .iter()
        .map(|d| {
            let notes = d["notes"].as_array().expect("notes").iter().map(|n| {
                let path = n["path"].as_str().filter(|p| !p.is_empty()).unwrap_or("/");
                format!(
                    "{} {path} {}",
                    n["kind"].as_str().unwrap_or_default().to_uppercase(),
                    n["message"].as_str().unwrap_or_default()
                )
            });
            (d["dialect"].as_str().unwrap_or_default().to_string(), notes.collect())
        })
        .collect();
    let losses: Vec<String> = dialects
        .iter()
        .map(|d| match (d["meaning_losses"].as_u64().unwrap_or_default(), d["notes"].as_array().map_or(0, Vec::len)) {
            (0, _) => "no note loses meaning".to_string(),
            (1, 1) => "1 of 1 note loses meaning".to_string(),
            (1, all) => format!("1 of {all} notes loses meaning"),
            (n, all) => format!("{n} of {all} notes lose meaning"),
        })
        .collect();
    let names: Vec<&str> = expected.iter().map(|(d, _)| d.as_str()).collect();
    assert_eq!(names, ["anthropic", "openai-chat", "openai-responses", "ollama", "claude-code", "local"]);
    assert!(expected.iter().any(|(_, notes)| !notes.is_empty()), "some dialect changes this schema");
    e.wait_for(tid("lowering-preview")).await;
    wait_until("six dialects", || async { e.count(tid("dialect")).await == 6 }).await;
    assert_eq!(shown_dialects(&e).await, expected);
    assert_eq!(texts(&e, "dialect-losses").await, losses);
    assert!(losses.iter().any(|l| l != "no note loses meaning"), "some dialect loses meaning: {losses:?}");
    assert_eq!(marked(&e).await, ["openai-chat", "openai-responses"]);
    let own = e.wait_for(tid("own-provider")).await.text().await.unwrap_or_default();
    assert!(own.starts_with("This agent's provider `openai` gets native structured output"), "{own}");

    let provider = SelectElement::new(&e.find(tid("node-provider")).await.expect("provider")).await.expect("select");
    provider.select_by_value("anthropic").await.expect("choose anthropic");
    wait_until("anthropic to be marked", || async { marked(&e).await == ["anthropic"] }).await;

    // Each commit of the schema refreshes the preview: a renamed field shows in every
    // dialect's request.
    e.type_into(0, "field-name", "ticket").await;
    let request = e.find(By::Css("[data-dialect='ollama'] details summary")).await.expect("request toggle");
    request.click().await.expect("open the request");
    wait_until("the renamed field in the request", || async {
        let pre = e.find(By::Css("[data-dialect='ollama'] [data-testid='dialect-request']")).await;
        match pre {
            Ok(pre) => pre.text().await.unwrap_or_default().contains("\"ticket\""),
            Err(_) => false,
        }
    })
    .await;
    e.find(tid("preview-wide")).await.expect("side by side").click().await.expect("click");
    let class = e.find(tid("lowering-preview")).await.expect("preview").class_name().await.ok().flatten();
    assert!(class.unwrap_or_default().contains("wide"));
    e.driver.clone().quit().await.ok();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_mis_clicked_type_loses_nothing_and_bounds_are_exact() {
    let e = editor_with_agent(inline(json!({
        "type": "object",
        "properties": {"summary": {"type": "string", "maxLength": 200}, "score": {"type": "integer"}},
        "required": []
    })))
    .await;
    choose(&e, 0, "field-type", "boolean").await;
    assert!(rows(&e).await[0].find(tid("field-max-length")).await.is_err(), "a boolean has no length");
    choose(&e, 0, "field-type", "string").await;
    assert_eq!(value_of(&rows(&e).await[0], "field-max-length").await, "200", "the length came back");

    e.type_into(1, "field-min", "1.5").await;
    assert_eq!(
        texts(&e, "input-error").await,
        ["`1.5` is not a whole number: an integer field's bounds must be whole numbers"]
    );
    assert_eq!(value_of(&rows(&e).await[1], "field-min").await, "1.5", "the refused text stays as typed");
    choose(&e, 1, "field-type", "number").await;
    assert!(texts(&e, "input-error").await.is_empty(), "a number takes 1.5");

    e.wait_for(tid("field-add")).await.click().await.expect("add field");
    e.type_into(2, "field-name", "tags").await;
    choose(&e, 2, "field-type", "array").await;
    e.type_into(2, "field-min-items", "1").await;
    e.type_into(2, "field-max-items", "3").await;
    assert_same_json(
        &save_and_read(&e).await["output_schema"],
        &json!({
            "type": "object",
            "properties": {
                "summary": {"type": "string", "maxLength": 200},
                "score": {"type": "number", "minimum": 1.5},
                "tags": {"type": "array", "items": {"type": "string"}, "minItems": 1, "maxItems": 3}
            },
            "required": []
        }),
    );
    e.driver.clone().quit().await.ok();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn text_typed_before_selecting_another_node_is_kept() {
    let e = editor_with_agent(inline(
        json!({"type": "object", "properties": {"alpha": {"type": "string"}}, "required": []}),
    ))
    .await;
    // Typed, never left with Tab: selecting another node removes the inputs, and the
    // browser fires no `change` for removed inputs.
    let name = rows(&e).await[0].find(tid("field-name")).await.expect("name");
    e.clear_and_type(&name, "omega").await;
    e.wait_for(node("input")).await.click().await.expect("select the trigger");
    e.wait_for(tid("node-label")).await;
    e.wait_for(node("agent")).await.click().await.expect("select the agent");
    let model = e.wait_for(tid("node-model")).await;
    e.clear_and_type(&model, "json={\"omega\":\"x\"}").await;
    e.wait_for(node("input")).await.click().await.expect("select the trigger");
    e.wait_for(tid("node-label")).await;
    let agent = save_and_read(&e).await;
    assert_eq!(agent["model"], json!("json={\"omega\":\"x\"}"));
    assert_same_json(
        &agent["output_schema"],
        &json!({"type": "object", "properties": {"omega": {"type": "string"}}, "required": []}),
    );
    e.driver.clone().quit().await.ok();
}

/// An OpenAI-compatible server that, like llama-cpp-python's, refuses a nested
/// `json_schema` with HTTP 500 and answers the schema inside `json_object`.
fn like_llama_cpp_python(body: &Value) -> Reply {
    if body.pointer("/response_format/type") == Some(&json!("json_schema")) {
        let message =
            "1 validation error: ('body', 'response_format', 'type'): Input should be 'text' or 'json_object'";
        return status(500, vec![], json!({"error": {"message": message}}));
    }
    Vendor::OpenAiChat.answer(r#"{"ok": true}"#)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_provider_probe_says_which_dialect_the_server_speaks() {
    let server = FakeServer::start_responding(like_llama_cpp_python).await;
    let env = [("OPENAI_BASE_URL", format!("{}/v1", server.base)), ("OPENAI_API_KEY", "sk-test-key".to_string())];
    let agent = json!({"provider": "openai", "model": "smollm2", "output_schema": {"type": "object"}});
    let e = editor_with_agent_and_env(agent, &env).await;
    e.wait_for(tid("node-provider-probe")).await.click().await.expect("probe");
    let result = || async { e.find(tid("node-provider-probe-result")).await.ok()?.text().await.ok() };
    wait_until("the probe's answer", || async { result().await.is_some_and(|t| t.starts_with("Speaks")) }).await;
    assert_eq!(result().await.as_deref(), Some("Speaks json_object_schema (rejected json_schema)"));
    let models: Vec<Value> = server.requests().iter().map(|r| r.body["model"].clone()).collect();
    assert_eq!(models, [json!("smollm2"), json!("smollm2")], "the agent's model is probed, once per dialect tried");

    // The model typed into the inspector is the one probed next.
    let model = e.wait_for(tid("node-model")).await;
    e.clear_and_type(&model, "qwen-tiny").await;
    e.wait_for(tid("node-provider-probe")).await.click().await.expect("probe again");
    wait_until("a second probe", || async { server.requests().len() == 4 }).await;
    assert_eq!(server.requests()[3].body["model"], json!("qwen-tiny"));
    wait_until("the second answer", || async { result().await.is_some_and(|t| t.starts_with("Speaks")) }).await;

    // Another provider clears what was said about this one.
    let provider = SelectElement::new(&e.find(tid("node-provider")).await.expect("provider")).await.expect("select");
    provider.select_by_value("fake").await.expect("choose fake");
    wait_until("the answer cleared", || async { result().await.is_none_or(|t| t.is_empty()) }).await;
    e.driver.clone().quit().await.ok();
}
