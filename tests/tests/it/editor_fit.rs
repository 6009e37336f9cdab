//! Fitting the graph to the view, in headless Chromium: opening a large conclave
//! shows every card within the canvas (zoomed out, centred), a small one opens at
//! 100% in the middle and stays whole when the dock below the canvas opens, and after
//! the user zooms in with the wheel or pans away, the Fit button and the F key bring
//! the whole graph back. Real clicks, keys, drags and
//! wheel turns only.

use conclave_tests::browser::{Editor, tid, wait_until};
use serde_json::{Value, json};
use std::path::Path;

async fn start() -> Editor {
    Editor::start(Path::new(env!("CARGO_BIN_EXE_conclave-testbed"))).await
}

/// `count` agents in rows of ten, 320 px apart across and 220 down, after a trigger.
fn grid(id: &str, count: i64) -> Value {
    let mut nodes = vec![json!({"id": "n0", "kind": "trigger", "label": "n0", "position": {"x": 0, "y": 0}})];
    for i in 1..count {
        nodes.push(json!({"id": format!("n{i}"), "kind": "agent", "label": format!("n{i}"),
            "position": {"x": (i % 10) * 320, "y": (i / 10) * 220},
            "agent": {"provider": "fake", "model": "text=ok"}}));
    }
    json!({"version": 1, "id": id, "name": id, "nodes": nodes, "edges": []})
}

/// How many cards are drawn wholly within the canvas, of how many.
async fn cards_in_view(e: &Editor) -> (usize, usize) {
    let (cx, cy, cw, ch) = e.drawn_rect(&e.find(tid("canvas")).await.expect("canvas")).await;
    let cards = e.driver.find_all(tid("node")).await.expect("cards");
    let mut inside = 0;
    for card in &cards {
        let (x, y, w, h) = e.drawn_rect(card).await;
        let within = x >= cx - 0.5 && y >= cy - 0.5 && x + w <= cx + cw + 0.5 && y + h <= cy + ch + 0.5;
        inside += usize::from(within);
    }
    (inside, cards.len())
}

async fn zoom_percent(e: &Editor) -> f64 {
    let text = e.find(tid("zoom")).await.expect("zoom").text().await.expect("text");
    text.trim_end_matches('%').parse().unwrap_or_else(|_| panic!("zoom reads {text}"))
}

async fn wait_all_in_view(e: &Editor, what: &str) {
    wait_until(what, || async {
        let (inside, all) = cards_in_view(e).await;
        all > 0 && inside == all
    })
    .await;
}

/// Zooms in with the wheel over the canvas's top-left part until some card is out of
/// view.
async fn zoom_in_away(e: &Editor) {
    let (x, y, w, h) = e.drawn_rect(&e.find(tid("canvas")).await.expect("canvas")).await;
    for _ in 0..5 {
        e.wheel(x + w / 4.0, y + h / 4.0, -300.0).await;
    }
    wait_until("cards out of view after zooming in", || async {
        let (inside, all) = cards_in_view(e).await;
        inside < all
    })
    .await;
}

/// Drags the canvas's empty top-left corner right and down, panning the graph away.
async fn pan_away(e: &Editor) {
    let canvas = e.find(tid("canvas")).await.expect("canvas");
    let r = canvas.rect().await.expect("rect");
    let corner = (-(r.width / 2.0) as i64 + 6, -(r.height / 2.0) as i64 + 6);
    e.driver
        .action_chain()
        .move_to_element_with_offset(&canvas, corner.0, corner.1)
        .click_and_hold()
        .move_by_offset(200, 150)
        .move_by_offset(300, 200)
        .release()
        .perform()
        .await
        .expect("pan");
    let (inside, all) = cards_in_view(e).await;
    assert!(inside < all, "panning moved cards out of view ({inside} of {all} in view)");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn opening_a_large_conclave_fits_it_and_fit_brings_it_back() {
    let e = start().await;
    e.create_conclave(&grid("large", 60)).await;
    e.open_conclave("large").await;
    wait_all_in_view(&e, "every card of the opened conclave in view").await;
    let fitted = zoom_percent(&e).await;
    assert!((5.0..100.0).contains(&fitted), "zoomed out to fit: {fitted}%");
    e.find(tid("minimap")).await.expect("the minimap stays beside the fitted graph");

    zoom_in_away(&e).await;
    assert!(zoom_percent(&e).await > fitted);
    e.find(tid("fit-view")).await.expect("Fit").click().await.expect("click Fit");
    wait_all_in_view(&e, "Fit after zooming in").await;
    assert_eq!(zoom_percent(&e).await, fitted, "Fit gives the zoom of opening");

    pan_away(&e).await;
    e.press("f").await;
    wait_all_in_view(&e, "the F key after panning away").await;

    // In a text field, F is typed, not taken.
    pan_away(&e).await;
    let name = e.find(tid("conclave-name")).await.expect("name");
    name.click().await.expect("focus the name");
    name.send_keys("f").await.expect("type f");
    let (inside, all) = cards_in_view(&e).await;
    assert!(inside < all, "F in a text field fits nothing");
    assert!(name.value().await.expect("value").unwrap_or_default().ends_with('f'), "the f was typed");
    e.driver.clone().quit().await.ok();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_small_conclave_opens_at_full_size_in_the_middle() {
    let e = start().await;
    e.create_conclave(&grid("small", 2)).await;
    e.open_conclave("small").await;
    wait_all_in_view(&e, "the small conclave in view").await;
    assert_eq!(zoom_percent(&e).await, 100.0, "never zoomed in beyond 100%");
    let (cx, cy, cw, ch) = e.drawn_rect(&e.find(tid("canvas")).await.expect("canvas")).await;
    let mut xs = Vec::new();
    let mut ys = Vec::new();
    for card in e.driver.find_all(tid("node")).await.expect("cards") {
        let (x, y, w, h) = e.drawn_rect(&card).await;
        xs.extend([x, x + w]);
        ys.extend([y, y + h]);
    }
    let middle =
        |v: &[f64]| (v.iter().copied().fold(f64::MAX, f64::min) + v.iter().copied().fold(f64::MIN, f64::max)) / 2.0;
    assert!((middle(&xs) - (cx + cw / 2.0)).abs() < 2.0, "centred across: {xs:?} in {cx} + {cw}");
    assert!((middle(&ys) - (cy + ch / 2.0)).abs() < 2.0, "centred down: {ys:?} in {cy} + {ch}");

    // The dock opening below the canvas makes it shorter; the graph, still as fitted,
    // is fitted again and stays whole in view.
    e.find(tid("settings")).await.expect("Settings").click().await.expect("open the dock");
    e.wait_for(tid("settings-form")).await;
    wait_until("the canvas to shrink", || async {
        e.drawn_rect(&e.find(tid("canvas")).await.expect("canvas")).await.3 < ch - 50.0
    })
    .await;
    wait_all_in_view(&e, "the graph in the shorter canvas").await;
    e.driver.clone().quit().await.ok();
}
