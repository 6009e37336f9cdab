//! The run timeline in the run panel: each node a bar on one time axis, from its
//! start to its end, so fan-out (bars side by side) and joins (a bar starting where
//! others end) show; running bars grow live, reused nodes are marked, and each bar
//! says its attempts, tokens and cost. A finished run's timeline comes from its
//! record alone.

use conclave_shared::number::fixed;
use leptos::prelude::*;
use std::time::Duration;

use crate::run_view::span_label;
use crate::state::Editor;

/// How often running bars grow.
const TICK: Duration = Duration::from_millis(250);

/// The timeline of the watched run.
#[component]
pub fn Timeline() -> impl IntoView {
    let editor = expect_context::<Editor>();
    let now = RwSignal::new(js_sys::Date::now());
    // The clock only ticks while the run runs, so a finished run's panel stays still.
    if let Ok(handle) = set_interval_with_handle(
        move || {
            if editor.run.with_untracked(|r| r.as_ref().is_some_and(|r| r.is_running())) {
                now.set(js_sys::Date::now());
            }
        },
        TICK,
    ) {
        on_cleanup(move || handle.clear());
    }
    move || {
        editor.run.with(|run| {
            let run = run.as_ref()?;
            let server_now = (now.get() as i64).saturating_add(run.clock_offset_ms).max(0) as u64;
            let timeline = run.timeline(server_now);
            let label = span_label(timeline.span_ms);
            Some(view! {
                <div class="timeline" data-testid="run-timeline">
                    <div class="timeline-rows" data-testid="timeline">
                        {timeline.bars.into_iter().map(|bar| {
                            let state = bar.state.as_str();
                            // Labels of long bars sit inside them, so they stay in the track.
                            let inside = bar.left + bar.width > 55.0;
                            view! {
                                <div class="timeline-row" data-node-id=bar.node_id.clone()>
                                    <span class="timeline-node" title=bar.node_id.clone()>{bar.node_id.clone()}</span>
                                    <span class="timeline-track">
                                        <span class=format!("timeline-bar state-{state}") class:reused=bar.reused class:label-inside=inside
                                            data-testid="timeline-bar" data-node-id=bar.node_id.clone() data-state=state
                                            style:left=format!("{}%", fixed(bar.left, 3)) style:width=format!("{}%", fixed(bar.width, 3))>
                                            <span class="timeline-label">{bar.detail.clone()}</span>
                                        </span>
                                    </span>
                                </div>
                            }
                        }).collect_view()}
                    </div>
                    <div class="timeline-axis"><span>"0"</span><span>{label}</span></div>
                </div>
            })
        })
    }
}
