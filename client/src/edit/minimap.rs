//! The minimap's geometry: the region of the canvas it shows (every card with a
//! margin) and panning the canvas to the point of it under the pointer.

use leptos::prelude::*;

use super::canvas::canvas_size;
use crate::state::{Editor, NODE_WIDTH};

/// The height a card is drawn with in the minimap (cards vary; this is typical).
pub const CARD_HEIGHT: f64 = 90.0;
/// Room around the cards in the minimap, in canvas pixels.
pub const MARGIN: f64 = 60.0;

/// The region the minimap shows, in canvas coordinates: (x, y, width, height).
pub type Bounds = (f64, f64, f64, f64);

/// The box around cards at `positions`, with a margin; `None` without cards.
pub fn bounds_of(positions: impl Iterator<Item = conclave_shared::Position>) -> Option<Bounds> {
    let (mut left, mut top, mut right, mut bottom) = (f64::MAX, f64::MAX, f64::MIN, f64::MIN);
    for p in positions {
        left = left.min(p.x as f64);
        top = top.min(p.y as f64);
        right = right.max(p.x as f64 + NODE_WIDTH);
        bottom = bottom.max(p.y as f64 + CARD_HEIGHT);
    }
    (left <= right).then_some((left - MARGIN, top - MARGIN, right - left + 2.0 * MARGIN, bottom - top + 2.0 * MARGIN))
}

/// Pans the canvas so the point of the minimap under the screen point (x, y) is in
/// the middle of the view.
pub fn pan_to_minimap_point(editor: Editor, x: f64, y: f64) {
    let minimap = web_sys::window()
        .and_then(|w| w.document())
        .and_then(|d| d.query_selector("[data-testid=minimap]").ok().flatten());
    let Some(minimap) = minimap else { return };
    let Some((bx, by, bw, bh)) =
        editor.conclave.with_untracked(|c| c.as_ref().and_then(|c| bounds_of(c.nodes.iter().map(|n| n.position))))
    else {
        return;
    };
    let rect = minimap.get_bounding_client_rect();
    // `meet`: the whole region is scaled to fit and centred, leaving bands on one axis.
    let scale = (rect.width() / bw).min(rect.height() / bh);
    let (ox, oy) = ((rect.width() - bw * scale) / 2.0, (rect.height() - bh * scale) / 2.0);
    let (cx, cy) = (bx + (x - rect.left() - ox) / scale, by + (y - rect.top() - oy) / scale);
    let Some((cw, ch)) = canvas_size() else { return };
    editor.view.update(|v| {
        v.x = cw / 2.0 - cx * v.zoom;
        v.y = ch / 2.0 - cy * v.zoom;
    });
}
