//! The canvas: node cards (`node_card.rs`) at their stored positions, edges as SVG
//! curves, the edge being drawn, the selection band, pan (drag the background), zoom
//! (wheel), Fit (the whole graph in view, as when a conclave opens; `edit/fit.rs`)
//! and the minimap (`minimap.rs`). Drags are followed on the window by
//! `edit/pointer.rs`; the geometry they share is in `edit/canvas.rs`.
//!
//! The node list is a memo of the node ids, and each card and edge reads its own
//! memos, so an edit to one node re-renders only that node's card and edges.

use conclave_shared::Edge;
use conclave_shared::number::{fixed, px, shortest};
use leptos::prelude::*;
use wasm_bindgen::JsCast;
use wasm_bindgen::closure::Closure;

use super::minimap::Minimap;
use super::node_card::NodeCard;
use crate::edit::canvas::{CanvasGraph, canvas_offset};
use crate::edit::fit::{MAX_ZOOM, MIN_ZOOM, fit_view, fit_when_drawn, refit_if_fitted};
use crate::state::{Drag, Editor, NODE_WIDTH, Selection};

/// The canvas.
#[component]
pub fn Canvas() -> impl IntoView {
    let editor = expect_context::<Editor>();
    let graph = CanvasGraph::new(editor);
    provide_context(graph);
    let transform = move || {
        let v = editor.view.get();
        format!("translate({}, {}) scale({})", px(v.x), px(v.y), shortest(v.zoom))
    };
    let edges = Memo::new(move |_| editor.conclave.with(|c| c.as_ref().map(|c| c.edges.clone()).unwrap_or_default()));
    let canvas = NodeRef::<leptos::html::Div>::new();
    canvas.on_load(move |element| observe_size(&element, graph.size));
    // A conclave just opened is fitted once the canvas knows its size; a resized
    // canvas whose view is still the fitted one is fitted again.
    Effect::new(move |_| {
        if graph.size.with(Option::is_none) {
            return;
        }
        if editor.fit_pending.get() {
            editor.fit_pending.set(false);
            fit_when_drawn(editor);
        } else {
            refit_if_fitted(editor);
        }
    });
    view! {
        <div class="canvas" data-testid="canvas" node_ref=canvas
            on:pointerdown=move |ev: web_sys::PointerEvent| press_background(editor, &ev)
            on:wheel=move |ev: web_sys::WheelEvent| {
                ev.prevent_default();
                let Some((cx, cy)) = canvas_offset(ev.client_x() as f64, ev.client_y() as f64) else { return };
                editor.view.update(|v| {
                    let zoom = (v.zoom * (1.0 - ev.delta_y() * 0.0015)).clamp(MIN_ZOOM, MAX_ZOOM);
                    v.x = cx - (cx - v.x) * zoom / v.zoom;
                    v.y = cy - (cy - v.y) * zoom / v.zoom;
                    v.zoom = zoom;
                });
            }
            on:scroll=move |ev| scroll_to_pan(editor, &event_target::<web_sys::Element>(&ev))>
            <div class="world" style:transform=transform>
                <svg class="edges" width="1" height="1">
                    <For each=move || edges.get() key=|e| (e.from.clone(), e.to.clone(), e.case.clone()) children=move |e| view! { <EdgePath edge=e/> }/>
                    <PendingEdge/>
                </svg>
                <LoopGroups/>
                <For each=move || graph.ids.get() key=|id| id.clone() children=move |id| view! { <NodeCard id=id/> }/>
            </div>
            <Band/>
            <div class="zoom-hint">
                <button data-testid="fit-view" title="Fit the whole graph in view (F)"
                    on:pointerdown=|ev: web_sys::PointerEvent| ev.stop_propagation()
                    on:click=move |_| fit_view(editor)>"Fit"</button>
                <span data-testid="zoom">{move || format!("{}%", fixed(editor.view.get().zoom * 100.0, 0))}</span>
            </div>
        </div>
        <Minimap/>
        <Ghost/>
    }
}

/// A press on the empty canvas: with Shift, starts a selection band; otherwise clears
/// the selection and starts panning.
fn press_background(editor: Editor, ev: &web_sys::PointerEvent) {
    if ev.button() != 0 {
        return;
    }
    let (x, y) = (ev.client_x() as f64, ev.client_y() as f64);
    if ev.shift_key() {
        let before = editor.selection.get_untracked().nodes();
        editor.drag.set(Some(Drag::Band { start: (x, y), end: (x, y), before }));
    } else {
        let v = editor.view.get_untracked();
        editor.selection.set(Selection::None);
        editor.drag.set(Some(Drag::Pan { sx: x, sy: y, px: v.x, py: v.y }));
    }
}

/// The browser scrolls the canvas to show a card that gets focus (Tab); the canvas
/// never stays scrolled, the scroll becomes a pan, so coordinates stay simple.
fn scroll_to_pan(editor: Editor, canvas: &web_sys::Element) {
    let (left, top) = (canvas.scroll_left(), canvas.scroll_top());
    if left != 0 || top != 0 {
        canvas.set_scroll_left(0);
        canvas.set_scroll_top(0);
        editor.view.update(|v| {
            v.x -= left as f64;
            v.y -= top as f64;
        });
    }
}

fn curve((x1, y1): (f64, f64), (x2, y2): (f64, f64)) -> String {
    let bend = ((x2 - x1).abs() / 2.0).max(60.0);
    let [x1, y1, c1, c2, x2, y2] = [x1, y1, x1 + bend, x2 - bend, x2, y2].map(shortest);
    format!("M {x1} {y1} C {c1} {y1}, {c2} {y2}, {x2} {y2}")
}

#[component]
fn EdgePath(edge: Edge) -> impl IntoView {
    let editor = expect_context::<Editor>();
    let graph = expect_context::<CanvasGraph>();
    let Edge { from, to, case } = edge;
    let ends = {
        let (from, to) = (from.clone(), to.clone());
        Memo::new(move |_| Some((graph.port(editor, &from, true)?, graph.port(editor, &to, false)?)))
    };
    let d = move || ends.get().map(|(a, b)| curve(a, b)).unwrap_or_default();
    let (f3, t3) = (from.clone(), to.clone());
    let selected = move || editor.selection.with(|s| matches!(s, Selection::Edge(f, t) if *f == f3 && *t == t3));
    let (f4, t4) = (from.clone(), to.clone());
    view! {
        <g class="edge" class:selected=selected data-testid="edge" data-from=from data-to=to
            on:pointerdown=move |ev: web_sys::PointerEvent| {
                ev.stop_propagation();
                editor.selection.set(Selection::Edge(f4.clone(), t4.clone()));
            }>
            <path class="hit" d=d></path>
            <path class="line" d=d></path>
            {case.map(|case| {
                let middle = move |axis: usize| {
                    ends.get().map(|(a, b)| px(if axis == 0 { (a.0 + b.0) / 2.0 } else { (a.1 + b.1) / 2.0 - 6.0 }))
                };
                view! { <text class="edge-case" data-testid="edge-case" x=move || middle(0) y=move || middle(1)>{case}</text> }
            })}
        </g>
    }
}

/// A dashed box around the body of each loop, named after the loop.
#[component]
fn LoopGroups() -> impl IntoView {
    let editor = expect_context::<Editor>();
    let groups = Memo::new(move |_| {
        editor.conclave.with(|c| {
            let Some(c) = c.as_ref() else { return Vec::new() };
            c.nodes
                .iter()
                .filter_map(|n| {
                    let body: Vec<_> =
                        n.repeat.as_ref()?.body.iter().filter_map(|b| c.node(b)).map(|b| b.position).collect();
                    let (left, top) = (body.iter().map(|p| p.x).min()?, body.iter().map(|p| p.y).min()?);
                    let (right, bottom) = (body.iter().map(|p| p.x).max()?, body.iter().map(|p| p.y).max()?);
                    Some((n.id.clone(), left - 24, top - 40, right - left + NODE_WIDTH as i32 + 48, bottom - top + 140))
                })
                .collect::<Vec<_>>()
        })
    });
    view! {
        <For each=move || groups.get() key=|g| g.clone() children=move |(id, x, y, w, h)| view! {
            <div class="loop-group" data-testid="loop-group" data-loop-id=id.clone()
                style:left=format!("{x}px") style:top=format!("{y}px") style:width=format!("{w}px") style:height=format!("{h}px")>
                <span class="loop-name">{format!("loop {id}")}</span>
            </div>
        }/>
    }
}

#[component]
fn PendingEdge() -> impl IntoView {
    let editor = expect_context::<Editor>();
    let graph = expect_context::<CanvasGraph>();
    let d = move || match editor.drag.get() {
        Some(Drag::Edge { from, x, y, .. }) => {
            graph.port(editor, &from, true).map(|a| curve(a, (x, y))).unwrap_or_default()
        }
        _ => String::new(),
    };
    let refused = move || graph.target.with(|t| matches!(t, Some((_, false))));
    view! { <path class="pending" class:refused=refused d=d></path> }
}

/// The selection band while Shift-dragging on the canvas.
#[component]
fn Band() -> impl IntoView {
    let editor = expect_context::<Editor>();
    move || {
        let Some(Drag::Band { start, end, .. }) = editor.drag.get() else { return ().into_any() };
        let (Some(a), Some(b)) = (canvas_offset(start.0, start.1), canvas_offset(end.0, end.1)) else {
            return ().into_any();
        };
        view! {
            <div class="band" data-testid="selection-band"
                style:left=px(a.0.min(b.0)) style:top=px(a.1.min(b.1))
                style:width=px((a.0 - b.0).abs()) style:height=px((a.1 - b.1).abs())></div>
        }
        .into_any()
    }
}

/// The label following the pointer while an item is dragged from the palette.
#[component]
fn Ghost() -> impl IntoView {
    let editor = expect_context::<Editor>();
    move || match editor.drag.get() {
        Some(Drag::Palette { item, x, y }) => {
            let label = item.strip_prefix("tool:").unwrap_or(&item).replace(['-', '_'], " ");
            view! { <div class="ghost" style:left=px(x + 8.0) style:top=px(y + 8.0)>{label}</div> }.into_any()
        }
        _ => ().into_any(),
    }
}

/// Keeps `size` equal to `element`'s size on screen for as long as the element lives.
fn observe_size(element: &web_sys::HtmlDivElement, size: RwSignal<Option<(f64, f64)>>) {
    let measure = move |entries: js_sys::Array, _: web_sys::ResizeObserver| {
        // Resize observers run after layout, so reading the box here is cheap.
        if let Some(entry) = entries.get(0).dyn_ref::<web_sys::ResizeObserverEntry>() {
            let rect = entry.target().get_bounding_client_rect();
            size.set(Some((rect.width(), rect.height())));
        }
    };
    let callback = Closure::<dyn FnMut(js_sys::Array, web_sys::ResizeObserver)>::new(measure);
    let Ok(observer) = web_sys::ResizeObserver::new(callback.as_ref().unchecked_ref()) else { return };
    observer.observe(element);
    let kept = send_wrapper::SendWrapper::new((observer, callback));
    on_cleanup(move || kept.0.disconnect());
}
