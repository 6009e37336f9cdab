//! An eval's charts, in SVG as the HTML report draws them: precision and recall
//! against min-support (a point per support level, a line through each figure's
//! points), and a bar per findings-producing node of what it adds to the union's
//! recall. Coordinates go through `shared::number`, like every number the editor
//! writes.

use conclave_shared::eval::{NodeFigures, SupportFigures};
use conclave_shared::number::fixed;
use leptos::prelude::*;

use super::figures::{figure, signed};

/// The support chart's size and margins, in SVG units.
const WIDTH: f64 = 320.0;
const HEIGHT: f64 = 170.0;
const LEFT: f64 = 34.0;
const RIGHT: f64 = 14.0;
const TOP: f64 = 12.0;
const BOTTOM: f64 = 32.0;

/// Where support level `i` of `n` sits across the plot; a lone level in the middle.
fn level_x(i: usize, n: usize) -> f64 {
    let span = WIDTH - LEFT - RIGHT;
    if n <= 1 { LEFT + span / 2.0 } else { LEFT + span * i as f64 / (n - 1) as f64 }
}

/// Where a figure from 0 to 1 sits up the plot.
fn figure_y(value: f64) -> f64 {
    TOP + (1.0 - value.clamp(0.0, 1.0)) * (HEIGHT - TOP - BOTTOM)
}

fn at(value: f64) -> String {
    fixed(value, 1)
}

/// Precision and recall of the result's findings at each min-support.
#[component]
pub fn SupportChart(levels: Vec<SupportFigures>) -> impl IntoView {
    let n = levels.len();
    let line = |pick: fn(&SupportFigures) -> f64| {
        let points: Vec<String> = levels
            .iter()
            .enumerate()
            .map(|(i, l)| format!("{},{}", at(level_x(i, n)), at(figure_y(pick(l)))))
            .collect();
        points.join(" ")
    };
    let points = |class: &'static str, name: &'static str, pick: fn(&SupportFigures) -> f64| {
        levels
            .iter()
            .enumerate()
            .map(|(i, l)| {
                let title = format!("min support {}: {name} {} ({} findings)", l.min_support, figure(pick(l)), l.findings);
                view! { <circle class=class cx=at(level_x(i, n)) cy=at(figure_y(pick(l))) r="3.5"><title>{title}</title></circle> }
            })
            .collect_view()
    };
    let ticks = levels
        .iter()
        .enumerate()
        .map(|(i, l)| {
            let y = at(HEIGHT - BOTTOM + 14.0);
            view! { <text class="tick" x=at(level_x(i, n)) y=y text-anchor="middle">{l.min_support.to_string()}</text> }
        })
        .collect_view();
    let (left, top, bottom, right) = (at(LEFT), at(TOP), at(HEIGHT - BOTTOM), at(WIDTH - RIGHT));
    let tick_x = at(LEFT - 6.0);
    view! {
        <figure class="eval-chart" data-testid="support-chart">
            <figcaption>"Precision and recall against min-support"</figcaption>
            <svg class="chart" viewBox=format!("0 0 {} {}", at(WIDTH), at(HEIGHT)) width=at(WIDTH) height=at(HEIGHT) role="img">
                <line class="axis" x1=left.clone() y1=top x2=left.clone() y2=bottom.clone()/>
                <line class="axis" x1=left y1=bottom.clone() x2=right y2=bottom/>
                <text class="tick" x=tick_x.clone() y=at(figure_y(1.0) + 4.0) text-anchor="end">"1"</text>
                <text class="tick" x=tick_x.clone() y=at(figure_y(0.5) + 4.0) text-anchor="end">"0.5"</text>
                <text class="tick" x=tick_x y=at(figure_y(0.0) + 4.0) text-anchor="end">"0"</text>
                {ticks}
                <text class="axis-label" x=at(LEFT + (WIDTH - LEFT - RIGHT) / 2.0) y=at(HEIGHT - 4.0) text-anchor="middle">"min support"</text>
                <polyline class="line precision" points=line(|l| l.precision)/>
                <polyline class="line recall" points=line(|l| l.recall)/>
                {points("point precision", "precision", |l| l.precision)}
                {points("point recall", "recall", |l| l.recall)}
            </svg>
            <p class="legend"><span class="key precision"></span>"precision"<span class="key recall"></span>"recall"</p>
        </figure>
    }
}

/// The bars' layout: a row per node, its name left of the axis, bars from the axis
/// on one fixed scale (1 is the whole span), so two evals' charts compare by eye.
const BARS_WIDTH: f64 = 360.0;
const ROW: f64 = 22.0;
const AXIS: f64 = 130.0;
const SPAN: f64 = 180.0;

/// What each findings-producing node adds: the union's recall less the union's
/// recall without it; a negative addition is drawn leftwards from the axis.
#[component]
pub fn AddsChart(nodes: Vec<NodeFigures>) -> impl IntoView {
    let height = nodes.len() as f64 * ROW + 8.0;
    let rows = nodes
        .into_iter()
        .enumerate()
        .map(|(i, node)| {
            let y = i as f64 * ROW + 4.0;
            let width = node.adds.abs().min(1.0) * SPAN;
            // A negative addition grows leftwards, its figure right of the axis.
            let (x, value_x) = if node.adds < 0.0 { (AXIS - width, AXIS + 4.0) } else { (AXIS, AXIS + width + 4.0) };
            let title = format!(
                "{}: adds {} (its own precision {}, recall {})",
                node.node,
                signed(node.adds),
                figure(node.precision),
                figure(node.recall)
            );
            view! {
                <g class="bar-row" data-node=node.node.clone()>
                    <text class="bar-label" x=at(AXIS - 8.0) y=at(y + 12.0) text-anchor="end">{node.node.clone()}</text>
                    <rect class="bar adds" class:result=node.result class:negative={node.adds < 0.0}
                        x=at(x) y=at(y) width=at(width) height="15"><title>{title}</title></rect>
                    <text class="bar-value" x=at(value_x) y=at(y + 12.0)>{signed(node.adds)}</text>
                </g>
            }
        })
        .collect_view();
    view! {
        <figure class="eval-chart" data-testid="adds-chart">
            <figcaption>"What each node adds to the union's recall"</figcaption>
            <svg class="chart" viewBox=format!("0 0 {} {}", at(BARS_WIDTH), at(height)) width=at(BARS_WIDTH) height=at(height) role="img">
                <line class="axis" x1=at(AXIS) y1="0" x2=at(AXIS) y2=at(height)/>
                {rows}
            </svg>
        </figure>
    }
}
