//! Auto-layout in the editor: measures each card, places the nodes with
//! `conclave_shared::layout::layered` (one undo step), and fits the view to them.

use std::collections::{BTreeMap, HashMap};

use conclave_shared::Position;
use conclave_shared::layout::{Spacing, layered};
use leptos::prelude::*;
use wasm_bindgen::JsCast;

use super::canvas::{canvas_element, canvas_size};
use crate::state::{Editor, NODE_WIDTH};

/// The height of a card that is not on the page.
const CARD_HEIGHT: i32 = 90;

/// Lays the open conclave out left to right in layers.
pub fn auto_layout(editor: Editor) {
    let Some(conclave) = editor.conclave.get_untracked() else { return };
    if conclave.nodes.is_empty() {
        editor.say("Nothing to lay out: the conclave has no nodes", false);
        return;
    }
    // Everything read from the page is read before the edit: a read after it would
    // make the browser lay out all the moved cards at once, and again at the frame.
    let heights = card_heights();
    let canvas = canvas_size();
    // The layout starts where the cards start now, so the graph stays in place.
    let origin = Position {
        x: conclave.nodes.iter().map(|n| n.position.x).min().unwrap_or(0),
        y: conclave.nodes.iter().map(|n| n.position.y).min().unwrap_or(0),
    };
    let spacing = Spacing { width: NODE_WIDTH as i32, origin, ..Spacing::default() };
    let height = |id: &str| heights.get(id).copied().unwrap_or(CARD_HEIGHT);
    let positions = layered(&conclave, spacing, |n| height(&n.id));
    editor.edit(|c| {
        for n in &mut c.nodes {
            if let Some(p) = positions.get(&n.id) {
                n.position = *p;
            }
        }
    });
    if let Some(canvas) = canvas {
        fit_view(editor, canvas, &positions, height);
    }
    editor.say(format!("Laid out {} nodes from left to right", positions.len()), false);
}

/// Each card's height on the page, by node id (layout pixels, unaffected by zoom).
fn card_heights() -> HashMap<String, i32> {
    // Cards are the elements of class `node` (see `node_card.rs`).
    let Some(cards) = canvas_element().map(|c| c.get_elements_by_class_name("node")) else {
        return HashMap::new();
    };
    (0..cards.length())
        .filter_map(|i| cards.item(i)?.dyn_into::<web_sys::HtmlElement>().ok())
        .filter_map(|card| Some((card.get_attribute("data-node-id")?, card.offset_height())))
        .collect()
}

/// Pans and zooms (out, never in past 100%) so every card is in view.
/// `canvas` is the canvas box's size on screen.
fn fit_view(
    editor: Editor,
    (width, tall): (f64, f64),
    positions: &BTreeMap<String, Position>,
    height: impl Fn(&str) -> i32,
) {
    let (mut left, mut top, mut right, mut bottom) = (f64::MAX, f64::MAX, f64::MIN, f64::MIN);
    for (id, p) in positions {
        left = left.min(p.x as f64);
        top = top.min(p.y as f64);
        right = right.max(p.x as f64 + NODE_WIDTH);
        bottom = bottom.max((p.y + height(id)) as f64);
    }
    if left > right {
        return;
    }
    const PAD: f64 = 40.0;
    let zoom = ((width - 2.0 * PAD) / (right - left)).min((tall - 2.0 * PAD) / (bottom - top)).clamp(0.25, 1.0);
    editor.view.update(|v| {
        v.zoom = zoom;
        v.x = ((width - (right - left) * zoom) / 2.0).max(PAD) - left * zoom;
        v.y = ((tall - (bottom - top) * zoom) / 2.0).max(PAD) - top * zoom;
    });
}
