//! Graph editing in headless Chromium: new conclaves, port-to-port edges, selection,
//! clipboard, keyboard, layout and the minimap, with real pointer events and keys.
//! Conclaves other than new ones are made through the API; outcomes are read back
//! from the API after Save and compared whole.

use conclave_tests::browser::{Editor, node, tid, wait_until};
use serde_json::{Value, json};
use std::path::Path;
use thirtyfour::ElementRect;
use thirtyfour::prelude::*;

async fn start() -> Editor {
    Editor::start(Path::new(env!("CARGO_BIN_EXE_conclave-testbed"))).await
}

fn trigger(id: &str, x: i32, y: i32) -> Value {
    json!({"id": id, "kind": "trigger", "label": id, "position": {"x": x, "y": y}})
}

fn agent(id: &str, x: i32, y: i32) -> Value {
    json!({"id": id, "kind": "agent", "label": id, "position": {"x": x, "y": y},
           "agent": {"provider": "fake", "model": format!("text={id} says ok"), "system_prompt": format!("You are {id}."), "tools": ["grep"]}})
}

fn conclave(id: &str, nodes: Vec<Value>, edges: &[(&str, &str)]) -> Value {
    let edges: Vec<Value> = edges.iter().map(|(from, to)| json!({"from": from, "to": to})).collect();
    json!({"version": 1, "id": id, "name": "Review", "nodes": nodes, "edges": edges})
}

/// change -> security -> writer, and correctness beside them with no edges.
fn review(id: &str) -> Value {
    conclave(
        id,
        vec![
            trigger("change", 0, 120),
            agent("security", 300, 0),
            agent("writer", 600, 120),
            agent("correctness", 300, 240),
        ],
        &[("change", "security"), ("security", "writer")],
    )
}

fn node_of<'a>(conclave: &'a Value, id: &str) -> &'a Value {
    conclave["nodes"].as_array().and_then(|n| n.iter().find(|n| n["id"] == id)).unwrap_or_else(|| panic!("no {id}"))
}

fn position(conclave: &Value, id: &str) -> (i64, i64) {
    let p = &node_of(conclave, id)["position"];
    (p["x"].as_i64().expect("x"), p["y"].as_i64().expect("y"))
}

fn set_position(conclave: &mut Value, id: &str, (x, y): (i64, i64)) {
    for n in conclave["nodes"].as_array_mut().expect("nodes") {
        if n["id"] == id {
            n["position"] = json!({"x": x, "y": y});
        }
    }
}

async fn port(e: &Editor, id: &str, which: &str) -> WebElement {
    e.wait_for(node(id)).await.find(tid(which)).await.expect("port")
}

/// Drags `element` by (dx, dy) screen pixels with real pointer events.
async fn drag_by(e: &Editor, element: &WebElement, dx: i64, dy: i64) {
    e.driver
        .action_chain()
        .move_to_element_center(element)
        .click_and_hold()
        .move_by_offset(5, 5)
        .move_by_offset(dx - 5, dy - 5)
        .release()
        .perform()
        .await
        .expect("drag");
}

/// Clicks the empty canvas 120 px above the centre of the card `id`.
async fn click_above(e: &Editor, id: &str) {
    let card = e.wait_for(node(id)).await;
    e.driver.action_chain().move_to_element_with_offset(&card, 0, -120).click().perform().await.expect("click");
}

async fn class_of(element: &WebElement) -> String {
    element.class_name().await.expect("class").unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn new_opens_an_untitled_conclave_whose_file_follows_its_name_until_saved() {
    let e = start().await;
    e.create_conclave(&conclave("untitled", vec![trigger("input", 0, 0)], &[])).await;
    e.driver.refresh().await.expect("reload");
    e.wait_for(By::Css("[data-testid='conclave-item'][data-conclave-id='untitled']")).await;
    e.wait_for(tid("conclave-new")).await.click().await.expect("new");
    e.wait_for(tid("canvas")).await;
    let name = e.find(tid("conclave-name")).await.expect("name");
    assert_eq!(name.prop("value").await.expect("value").as_deref(), Some("Untitled"));
    let file = || async { e.find(tid("conclave-file")).await.expect("file").text().await.unwrap_or_default() };
    assert_eq!(file().await, "conclaves/untitled-2.conclave.json", "`untitled` is taken in the catalog");

    e.clear_and_type(&name, "Security Review: Draft").await;
    assert_eq!(file().await, "conclaves/security-review-draft.conclave.json", "the file follows the typing");
    name.send_keys(Key::Tab).await.expect("leave the name");
    assert_eq!(file().await, "conclaves/security-review-draft.conclave.json");
    e.drop_on_canvas("palette-trigger", -200, 0).await;
    let saved = e.save_as("security-review-draft").await;
    let at = &saved["nodes"][0]["position"];
    assert_eq!(
        saved,
        json!({"version": 1, "id": "security-review-draft", "name": "Security Review: Draft",
               "nodes": [{"id": "input", "kind": "trigger", "label": "input", "position": at}], "edges": []})
    );

    // After the first save the id is fixed: a new name changes the name only.
    e.clear_and_type(&name, "Renamed").await;
    name.send_keys(Key::Tab).await.expect("leave the name");
    assert_eq!(file().await, "conclaves/security-review-draft.conclave.json");
    let saved = e.save_as("security-review-draft").await;
    assert_eq!(saved["name"], "Renamed");
    let ids: Vec<Value> =
        e.api("/api/conclaves").await.as_array().expect("list").iter().map(|s| s["id"].clone()).collect();
    assert_eq!(ids, vec![json!("security-review-draft"), json!("untitled")]);
    e.driver.clone().quit().await.ok();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn edges_connect_only_when_released_on_an_input_port() {
    let e = start().await;
    let stored = e.create_conclave(&review("ports")).await;
    e.open_conclave("ports").await;

    // Released on the writer's body, away from its port: nothing is connected.
    let out = port(&e, "change", "port-out").await;
    let writer = e.wait_for(node("writer")).await;
    e.drag(&out, &writer, 40, 20).await;
    assert_eq!(e.count(tid("edge")).await, 2);

    // Held over the writer's input port, the port shows it accepts; released, it connects.
    e.hold_over(&out, &port(&e, "writer", "port-in").await, 0, 0).await;
    wait_until("the port to show it accepts", || async {
        class_of(&port(&e, "writer", "port-in").await).await.split(' ').any(|c| c == "target")
    })
    .await;
    e.release().await;
    e.wait_for(By::Css("[data-testid='edge'][data-from='change'][data-to='writer']")).await;

    // writer -> security would close a cycle: the port refuses it and the status says why.
    e.hold_over(&port(&e, "writer", "port-out").await, &port(&e, "security", "port-in").await, 0, 0).await;
    let refused = class_of(&port(&e, "security", "port-in").await).await;
    assert!(refused.split(' ').any(|c| c == "refused"), "{refused}");
    e.release().await;
    assert_eq!(
        e.status().await,
        "Edge refused: edge `writer -> security` would close a cycle; a conclave must be acyclic"
    );
    let mut expected = stored;
    expected["edges"].as_array_mut().expect("edges").push(json!({"from": "change", "to": "writer"}));
    assert_eq!(e.save_as("ports").await, expected);
    e.driver.clone().quit().await.ok();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shift_click_and_the_band_select_nodes_that_then_move_together() {
    let e = start().await;
    let stored = e.create_conclave(&review("select")).await;
    e.open_conclave("select").await;

    let (security, correctness) = (e.wait_for(node("security")).await, e.wait_for(node("correctness")).await);
    security.click().await.expect("click");
    e.shift_click(&correctness).await;
    assert_eq!(e.selected_nodes().await, ["security", "correctness"]);
    e.shift_click(&correctness).await;
    assert_eq!(e.selected_nodes().await, ["security"], "Shift-click again removes a node");
    e.shift_click(&correctness).await;

    // Dragging one selected card moves both, as one undo step.
    drag_by(&e, &security, 100, 50).await;
    let mut moved = stored.clone();
    for id in ["security", "correctness"] {
        let (x, y) = position(&stored, id);
        set_position(&mut moved, id, (x + 100, y + 50));
    }
    assert_eq!(e.save_as("select").await, moved);
    e.find(tid("undo")).await.expect("undo").click().await.expect("click");
    assert_eq!(e.save_as("select").await, stored);

    // Shift-drag on the empty canvas: the band selects the nodes it touches, and only those.
    e.press(Key::Escape).await;
    assert!(e.selected_nodes().await.is_empty());
    let canvas = e.wait_for(tid("canvas")).await;
    let (c, w) = (e.wait_for(node("change")).await.rect().await.expect("rect"), writer_rect(&e).await);
    let start = ((c.x + c.width + 30.0) as i64, (c.y - 60.0) as i64);
    let end = ((w.x + 20.0) as i64, (w.y + 20.0) as i64);
    let origin = canvas.rect().await.expect("rect");
    let (cx, cy) = ((origin.x + origin.width / 2.0) as i64, (origin.y + origin.height / 2.0) as i64);
    e.driver
        .action_chain()
        .key_down(Key::Shift)
        .move_to_element_with_offset(&canvas, start.0 - cx, start.1 - cy)
        .click_and_hold()
        .move_to_element_with_offset(&canvas, end.0 - cx, end.1 - cy)
        .release()
        .key_up(Key::Shift)
        .perform()
        .await
        .expect("band");
    assert_eq!(e.selected_nodes().await, ["security", "writer"]);
    e.driver.clone().quit().await.ok();
}

async fn writer_rect(e: &Editor) -> ElementRect {
    e.wait_for(node("writer")).await.rect().await.expect("rect")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn copy_paste_and_duplicate_bring_the_edges_among_the_copies() {
    let e = start().await;
    let stored = e.create_conclave(&review("clip")).await;
    e.open_conclave("clip").await;
    e.wait_for(node("security")).await.click().await.expect("click");
    e.shift_click(&e.wait_for(node("writer")).await).await;
    e.chord(Key::Control, "c").await;
    e.chord(Key::Control, "v").await;
    wait_until("the pasted nodes", || async { e.count(tid("node")).await == 6 }).await;
    assert_eq!(e.selected_nodes().await, ["security-2", "writer-2"], "the copies are selected");
    e.chord(Key::Control, "d").await;
    wait_until("the duplicated nodes", || async { e.count(tid("node")).await == 8 }).await;
    assert_eq!(e.selected_nodes().await, ["security-3", "writer-3"]);

    // Copies keep their configuration, get fresh ids (and labels that were their ids),
    // sit 40 px off what they copy, and bring the edge between them but not the one
    // from `change`.
    let mut expected = stored.clone();
    for (copy, of) in
        [("security-2", "security"), ("writer-2", "writer"), ("security-3", "security-2"), ("writer-3", "writer-2")]
    {
        let mut n = node_of(&expected, of).clone();
        let (x, y) = position(&expected, of);
        n["id"] = json!(copy);
        n["label"] = json!(copy);
        n["position"] = json!({"x": x + 40, "y": y + 40});
        expected["nodes"].as_array_mut().expect("nodes").push(n);
    }
    for (from, to) in [("security-2", "writer-2"), ("security-3", "writer-3")] {
        expected["edges"].as_array_mut().expect("edges").push(json!({"from": from, "to": to}));
    }
    assert_eq!(e.save_as("clip").await, expected);

    // One undo step per paste or duplicate.
    e.find(tid("undo")).await.expect("undo").click().await.expect("click");
    wait_until("the duplicate to be undone", || async { e.count(tid("node")).await == 6 }).await;
    e.find(tid("undo")).await.expect("undo").click().await.expect("click");
    wait_until("the paste to be undone", || async { e.count(tid("node")).await == 4 }).await;
    assert_eq!(e.save_as("clip").await, stored);
    e.driver.clone().quit().await.ok();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tab_focuses_nodes_arrows_move_them_delete_removes_and_escape_clears() {
    let e = start().await;
    let stored = e.create_conclave(&review("keys")).await;
    e.open_conclave("keys").await;
    click_above(&e, "change").await;
    e.press(Key::Tab).await;
    let focused =
        || async { e.driver.active_element().await.expect("focus").attr("data-node-id").await.ok().flatten() };
    assert_eq!(focused().await.as_deref(), Some("change"));
    assert_eq!(e.selected_nodes().await, ["change"], "focus selects");
    e.press(Key::Tab).await;
    assert_eq!(focused().await.as_deref(), Some("security"));
    assert_eq!(e.selected_nodes().await, ["security"]);

    // Two steps right (10 px each) and a big step down (50 px with Shift).
    e.press(Key::Right).await;
    e.press(Key::Right).await;
    e.chord(Key::Shift, Key::Down).await;
    let mut moved = stored.clone();
    let (x, y) = position(&stored, "security");
    set_position(&mut moved, "security", (x + 20, y + 50));
    assert_eq!(e.save_as("keys").await, moved);

    // Saving moved the focus to the Save button; a click brings it back to a card.
    e.wait_for(node("security")).await.click().await.expect("click");
    assert_eq!(e.selected_nodes().await, ["security"]);
    e.press(Key::Escape).await;
    assert!(e.selected_nodes().await.is_empty(), "Esc clears the selection");
    e.press(Key::Delete).await;
    assert_eq!(e.count(tid("node")).await, 4, "Delete with nothing selected removes nothing");

    e.press(Key::Tab).await;
    assert_eq!(e.selected_nodes().await, ["writer"]);
    e.press(Key::Delete).await;
    wait_until("the writer to go", || async { e.count(tid("node")).await == 3 }).await;
    let mut deleted = moved.clone();
    deleted["nodes"].as_array_mut().expect("nodes").retain(|n| n["id"] != "writer");
    deleted["edges"] = json!([{"from": "change", "to": "security"}]);
    assert_eq!(e.save_as("keys").await, deleted, "the node went with its edges");
    e.driver.clone().quit().await.ok();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn undo_in_a_text_field_undoes_the_text_and_save_commits_the_field() {
    let e = start().await;
    e.create_conclave(&review("text")).await;
    e.open_conclave("text").await;
    e.drop_on_canvas("palette-agent", -300, 250).await;
    wait_until("the new agent", || async { e.count(tid("node")).await == 5 }).await;

    let name = e.find(tid("conclave-name")).await.expect("name");
    name.click().await.expect("focus");
    name.send_keys(Key::End).await.expect("end");
    for c in " draft".chars() {
        name.send_keys(c.to_string()).await.expect("typing");
    }
    assert_eq!(name.prop("value").await.expect("value").as_deref(), Some("Review draft"));
    e.chord(Key::Control, "z").await;
    assert_eq!(name.prop("value").await.expect("value").as_deref(), Some("Review"), "the field's own undo");
    assert_eq!(e.count(tid("node")).await, 5, "the graph's undo did not run");

    // Ctrl+S while the field still has focus saves what it shows.
    for c in " v2".chars() {
        name.send_keys(c.to_string()).await.expect("typing");
    }
    e.chord(Key::Control, "s").await;
    wait_until("the save", || async { e.api("/api/conclaves/text").await["name"] == "Review v2" }).await;
    assert_eq!(e.api("/api/conclaves/text").await["nodes"].as_array().map(Vec::len), Some(5));
    e.driver.clone().quit().await.ok();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn auto_layout_places_every_node_right_of_its_inputs() {
    let e = start().await;
    // Stacked on one spot, listed out of order, with an edge that skips a layer.
    let nodes = vec![
        agent("writer", 0, 0),
        agent("security", 0, 0),
        trigger("change", 0, 0),
        agent("correctness", 0, 0),
        json!({"id": "report", "kind": "output", "label": "report", "position": {"x": 0, "y": 0}}),
    ];
    let edges = [
        ("change", "security"),
        ("change", "correctness"),
        ("security", "writer"),
        ("correctness", "writer"),
        ("writer", "report"),
        ("change", "report"),
    ];
    let stored = e.create_conclave(&conclave("tidy", nodes, &edges)).await;
    e.open_conclave("tidy").await;
    e.wait_for(tid("auto-layout")).await.click().await.expect("auto-layout");
    let laid = e.save_as("tidy").await;
    for (from, to) in edges {
        let (a, b) = (position(&laid, from), position(&laid, to));
        assert!(a.0 + 200 < b.0, "{from} at {a:?} is left of {to} at {b:?}");
    }
    let columns: Vec<i64> =
        ["change", "security", "correctness", "writer", "report"].iter().map(|id| position(&laid, id).0).collect();
    assert_eq!(columns[1], columns[2], "the two reviewers share a column");
    let (s, c) = (position(&laid, "security"), position(&laid, "correctness"));
    assert!((s.1 - c.1).abs() >= 80, "the reviewers do not overlap: {s:?} {c:?}");
    let mut others = laid.clone();
    for n in others["nodes"].as_array_mut().expect("nodes") {
        n["position"] = json!({"x": 0, "y": 0});
    }
    assert_eq!(others, stored, "only positions changed");

    e.find(tid("undo")).await.expect("undo").click().await.expect("click");
    assert_eq!(e.save_as("tidy").await, stored, "the layout is one undo step");
    e.driver.clone().quit().await.ok();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_minimap_shows_a_large_conclave_and_pans_the_canvas() {
    let e = start().await;
    let mut nodes = vec![trigger("n0", 0, 0)];
    let mut edges = Vec::new();
    for i in 1..40 {
        nodes.push(agent(&format!("n{i}"), (i % 8) * 300, (i / 8) * 200));
        edges.push((format!("n{}", i - 1), format!("n{i}")));
    }
    let edges: Vec<(&str, &str)> = edges.iter().map(|(a, b)| (a.as_str(), b.as_str())).collect();
    e.create_conclave(&conclave("large", nodes, &edges)).await;
    e.open_conclave("large").await;
    let minimap = e.wait_for(tid("minimap")).await;
    assert_eq!(e.count(By::Css("[data-testid='minimap'] rect[data-node-id]")).await, 40);
    let canvas = e.wait_for(tid("canvas")).await.rect().await.expect("rect");
    let far = e.wait_for(node("n39")).await;
    // The opened conclave is fitted to the view; zooming in near the top left with
    // the wheel takes n39, at the bottom right, out of it.
    let out_of_view = || async {
        let (x, y, _, _) = e.drawn_rect(&far).await;
        x > canvas.x + canvas.width || y > canvas.y + canvas.height
    };
    for _ in 0..8 {
        e.wheel(canvas.x + 60.0, canvas.y + 60.0, -300.0).await;
    }
    wait_until("n39 out of view", out_of_view).await;

    // Clicking n39 in the minimap brings n39 to the middle of the canvas.
    let mini_card = minimap.find(By::Css("rect[data-node-id='n39']")).await.expect("n39 in the minimap");
    mini_card.click().await.expect("click the minimap");
    let centre = (canvas.x + canvas.width / 2.0, canvas.y + canvas.height / 2.0);
    wait_until("n39 in the middle of the canvas", || async {
        let (x, y, w, h) = e.drawn_rect(&far).await;
        let (x, y) = (x + w / 2.0, y + h / 2.0);
        (x - centre.0).abs() < 60.0 && (y - centre.1).abs() < 60.0
    })
    .await;
    let viewport = e.find(tid("minimap-viewport")).await.expect("viewport");
    let x: f64 = viewport.attr("x").await.ok().flatten().and_then(|x| x.parse().ok()).expect("x");
    assert!(x > 1000.0, "the viewport rectangle moved right: {x}");
    e.driver.clone().quit().await.ok();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn labels_are_shown_whole_unless_truly_long() {
    let e = start().await;
    let long = "A reviewer that reads every change for security problems and reports them";
    let mut c = review("labels");
    for n in c["nodes"].as_array_mut().expect("nodes") {
        match n["id"].as_str() {
            Some("writer") => n["label"] = json!("correctness-and-conventions"),
            Some("change") => n["label"] = json!(long),
            _ => {}
        }
    }
    e.create_conclave(&c).await;
    e.open_conclave("labels").await;
    for (id, text) in
        [("security", "security"), ("correctness", "correctness"), ("writer", "correctness-and-conventions")]
    {
        let shown = label_of(&e, id).await;
        assert_eq!(shown.text().await.expect("text"), text);
        assert!(!is_cut(&e, &shown).await, "the label of {id} is cut short");
        assert_eq!(shown.attr("title").await.expect("title").as_deref(), Some(text));
    }
    let shown = label_of(&e, "change").await;
    assert!(is_cut(&e, &shown).await, "a truly long label is cut at two lines");
    assert_eq!(shown.attr("title").await.expect("title").as_deref(), Some(long), "with the full text in its title");
    e.driver.clone().quit().await.ok();
}

async fn label_of(e: &Editor, id: &str) -> WebElement {
    e.wait_for(node(id)).await.find(By::Css(".label")).await.expect("label")
}

/// Whether the text of `element` overflows its box (read from the page).
async fn is_cut(e: &Editor, element: &WebElement) -> bool {
    let script = "const l = arguments[0]; return l.scrollWidth > l.clientWidth || l.scrollHeight > l.clientHeight;";
    let answer = e.driver.execute(script, vec![element.to_json().expect("json")]).await.expect("measure");
    answer.convert().expect("a bool")
}
