//! Fitting the graph to the view: the zoom (never above 100%) and pan that show every
//! card and loop box, centred in the canvas. A conclave being opened asks for it
//! ([`Editor::open`] sets `fit_pending`; the canvas fits once it knows its size and
//! has drawn the cards), the Fit button and the F key fit at once, and a canvas
//! resized while its view is still the fitted one fits again ([`refit_if_fitted`]).

use leptos::prelude::*;
use wasm_bindgen::JsCast;

use super::canvas::{canvas_element, canvas_size};
use super::minimap::{MARGIN, bounds_of};
use crate::state::{Editor, Viewport};

/// The least zoom, for fitting and for the wheel: at 5% a graph 20 screens wide fits.
pub const MIN_ZOOM: f64 = 0.05;
/// The most the wheel zooms in.
pub const MAX_ZOOM: f64 = 2.5;
/// Room left between the graph and the canvas's edges, in screen pixels.
const PADDING: f64 = 24.0;

/// Fits the graph to the canvas now, if a conclave with nodes is open and the canvas
/// is on the page; an empty conclave gets the starting view.
pub fn fit_view(editor: Editor) {
    let Some((width, height)) = canvas_size().filter(|(w, h)| *w > 0.0 && *h > 0.0) else { return };
    let Some((left, top, right, bottom)) = drawn_box().or_else(|| positions_box(editor)) else {
        editor.view.set(Viewport::default());
        return;
    };
    let (w, h) = ((right - left).max(1.0), (bottom - top).max(1.0));
    let zoom = ((width - 2.0 * PADDING) / w).min((height - 2.0 * PADDING) / h).clamp(MIN_ZOOM, 1.0);
    let fitted =
        Viewport { x: (width - w * zoom) / 2.0 - left * zoom, y: (height - h * zoom) / 2.0 - top * zoom, zoom };
    editor.fitted.set_value(Some(fitted));
    editor.view.set(fitted);
}

/// Fits the graph again after the canvas was resized, if the user has not moved the
/// view since it was last fitted.
pub fn refit_if_fitted(editor: Editor) {
    if editor.fitted.get_value().is_some_and(|fitted| editor.view.get_untracked() == fitted) {
        fit_view(editor);
    }
}

/// Fits the graph at the next frame, once what is being drawn now is on the page
/// (the cards of a conclave just opened), so the first frame shown is fitted.
pub fn fit_when_drawn(editor: Editor) {
    request_animation_frame(move || fit_view(editor));
}

/// The box around the cards and loop boxes as drawn, in canvas coordinates: their
/// offsets within the transformed world are canvas coordinates, and their sizes the
/// real ones (a card grows with its label and chips).
fn drawn_box() -> Option<(f64, f64, f64, f64)> {
    let drawn =
        canvas_element()?.query_selector_all(".world [data-testid='node'], .world [data-testid='loop-group']").ok()?;
    let mut bounds: Option<(f64, f64, f64, f64)> = None;
    for i in 0..drawn.length() {
        let Some(el) = drawn.item(i).and_then(|n| n.dyn_into::<web_sys::HtmlElement>().ok()) else { continue };
        let (x, y) = (el.offset_left() as f64, el.offset_top() as f64);
        let (r, b) = (x + el.offset_width() as f64, y + el.offset_height() as f64);
        bounds = Some(match bounds {
            None => (x, y, r, b),
            Some((l, t, rr, bb)) => (l.min(x), t.min(y), rr.max(r), bb.max(b)),
        });
    }
    bounds
}

/// The box around the cards from their positions and a typical card's size, for when
/// none is drawn yet.
fn positions_box(editor: Editor) -> Option<(f64, f64, f64, f64)> {
    let (x, y, w, h) = editor.conclave.with_untracked(|c| bounds_of(c.as_ref()?.nodes.iter().map(|n| n.position)))?;
    // `bounds_of` adds the minimap's margin; the padding here is on screen instead.
    Some((x + MARGIN, y + MARGIN, x + w - MARGIN, y + h - MARGIN))
}
