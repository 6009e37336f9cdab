//! A node's tool calls in the watched run, under its outcome in the inspector: each
//! call's tool id and arguments, and once it answered, whether it failed, how long it
//! took, and the first lines of its result. Everything the model or a tool wrote is
//! shown as text with invisible and bidirectional characters escaped.

use conclave_shared::invisible::escape_invisible;
use conclave_shared::number::fixed;
use leptos::prelude::*;

use crate::run_view::ToolActivity;

/// How many lines of a result are shown.
const RESULT_LINES: usize = 6;
/// How many characters of a call's arguments are shown.
const ARGUMENT_CHARS: usize = 400;

/// The calls of one node, in the order they were made.
#[component]
pub fn ToolCalls(calls: Vec<ToolActivity>) -> impl IntoView {
    (!calls.is_empty()).then(|| {
        view! {
            <div class="tool-calls" data-testid="tool-calls">
                <h5>{format!("Tool calls ({})", calls.len())}</h5>
                {calls.into_iter().map(|call| view! { <ToolCall call=call/> }).collect_view()}
            </div>
        }
    })
}

/// One call and its result.
#[component]
fn ToolCall(call: ToolActivity) -> impl IntoView {
    let state = match &call.result {
        None => "pending",
        Some(answer) if answer.is_error => "error",
        Some(_) => "ok",
    };
    let arguments = cut(&call.arguments, ARGUMENT_CHARS);
    view! {
        <div class=format!("tool-call {state}") data-testid="tool-call" data-tool=call.tool.clone() data-state=state>
            <div class="tool-head">
                <code data-testid="tool-id">{escape_invisible(&call.tool).into_owned()}</code>
                <span class=format!("badge {state}")>{match state { "pending" => "waiting", "error" => "error", _ => "ok" }}</span>
                {call.result.as_ref().map(|a| view! { <span class="hint" data-testid="tool-duration">{duration(a.duration_ms)}</span> })}
            </div>
            {(!arguments.is_empty()).then(|| view! { <pre class="tool-arguments" data-testid="tool-arguments">{arguments}</pre> })}
            {call.result.map(|answer| {
                let (head, shown_all) = first_lines(&answer.content);
                let more = (!shown_all || answer.chars > answer.content.chars().count() as u64)
                    .then(|| format!("… {} characters in all", answer.chars));
                view! {
                    <pre class="tool-result" data-testid="tool-result">{head}</pre>
                    {more.map(|m| view! { <p class="hint">{m}</p> })}
                }
            })}
        </div>
    }
}

/// The first [`RESULT_LINES`] lines of `text`, escaped, and whether that is all of it.
fn first_lines(text: &str) -> (String, bool) {
    let lines: Vec<&str> = text.lines().take(RESULT_LINES + 1).collect();
    let all = lines.len() <= RESULT_LINES;
    (escape_invisible(&lines[..lines.len().min(RESULT_LINES)].join("\n")).into_owned(), all)
}

/// `text` cut to `max` characters (with `…`), escaped.
fn cut(text: &str, max: usize) -> String {
    let mut kept: String = text.chars().take(max).collect();
    if kept.len() < text.len() {
        kept.push('…');
    }
    escape_invisible(&kept).into_owned()
}

/// A call's duration: milliseconds below a second, seconds above.
fn duration(ms: u64) -> String {
    if ms < 1000 { format!("{ms} ms") } else { format!("{} s", fixed(ms as f64 / 1000.0, 1)) }
}
