//! A node card on the canvas: its kind, label (never cut short; long labels wrap to
//! two lines, the full text in a tooltip), provider and model, capability chips (an
//! MCP tool's chip names its server and tool), run state, and its ports. Cards are
//! focusable (focus selects) and read only their own node's memos, so an edit
//! elsewhere does not touch them.

use conclave_shared::{AgentConfig, Node, NodeKind, NodeState, NodeSummary};
use leptos::prelude::*;

use crate::edit::agent::TOOLS;
use crate::edit::canvas::CanvasGraph;
use crate::edit::mcp::tool_label;
use crate::edit::pointer::{press_node, press_output_port, pressing};
use crate::edit::watch::decide_and_watch;
use crate::state::{Editor, Selection};

/// What a card shows as chips: whether the agent has Structured Output, and its tools.
#[derive(Debug, Clone, PartialEq)]
struct ChipSet {
    structured: bool,
    tools: Vec<String>,
}

/// A node's state in the watched run, as a class and as its card says it:
/// `skipped (route)`, `cached`, and the iteration a loop's body node last ran in.
fn live_state(n: &NodeSummary) -> (&'static str, String) {
    let (class, text) = match n.state {
        NodeState::Skipped if n.routed_out => ("skipped", "skipped (route)".to_string()),
        NodeState::Succeeded if n.cached_from.is_some() => ("cached", "cached".to_string()),
        state => (state.as_str(), state.as_str().to_string()),
    };
    match n.iteration {
        Some(iteration) => (class, format!("{text} · iteration {iteration}")),
        None => (class, text),
    }
}

fn label_of(n: &Node) -> String {
    if n.label.is_empty() { n.id.clone() } else { n.label.clone() }
}

fn subtitle_of(n: &Node) -> String {
    match &n.agent {
        Some(a) if a.model.is_empty() => a.provider.clone(),
        Some(a) => format!("{} · {}", a.provider, a.model),
        None => n.kind.as_str().to_string(),
    }
}

/// A node card.
#[component]
pub fn NodeCard(id: String) -> impl IntoView {
    let editor = expect_context::<Editor>();
    let graph = expect_context::<CanvasGraph>();
    let position = graph.node(editor, id.clone(), |n| n.position);
    let kind = graph.node(editor, id.clone(), |n| n.kind);
    let label = graph.node(editor, id.clone(), label_of);
    let subtitle = graph.node(editor, id.clone(), subtitle_of);
    let chips = graph.node(editor, id.clone(), |n| {
        n.agent.as_ref().map(|a| ChipSet {
            structured: a.output_schema.is_some() || a.output_schema_ref.is_some(),
            tools: a.tools.clone(),
        })
    });
    let selected = {
        let id = id.clone();
        move || editor.selection.with(|s| s.has_node(&id))
    };
    let class = move || {
        let kind = kind.get().unwrap_or(NodeKind::Agent).as_str();
        format!("node kind-{kind}{}", if selected() { " selected" } else { "" })
    };
    let run_state = {
        let id = id.clone();
        move || editor.run.with(|r| r.as_ref().and_then(|r| r.node(&id)).map(live_state))
    };
    let waiting_in = {
        let id = id.clone();
        move || {
            editor.run.with(|r| {
                let r = r.as_ref()?;
                (r.node(&id)?.state == NodeState::Waiting).then(|| r.record.summary.id.clone())
            })
        }
    };
    let decide_id = id.clone();
    let has_input = move || kind.get().is_some_and(|k| k != NodeKind::Trigger);
    let has_output = move || kind.get().is_some_and(|k| k != NodeKind::Output);
    let (press_id, focus_id, in_id, out_id, status_id, chips_id) =
        (id.clone(), id.clone(), id.clone(), id.clone(), id.clone(), id.clone());
    let text = move || label.get().unwrap_or_default();
    view! {
        <div class=class data-testid="node" data-node-id=id tabindex="0" aria-label=text
            style:left=move || format!("{}px", position.get().unwrap_or_default().x)
            style:top=move || format!("{}px", position.get().unwrap_or_default().y)
            on:pointerdown=move |ev: web_sys::PointerEvent| {
                ev.stop_propagation();
                press_node(editor, &press_id, &ev);
            }
            on:focus=move |_| {
                // A press selects on its own (Shift adds or removes); keyboard focus selects.
                if !pressing() {
                    editor.selection.set(Selection::Node(focus_id.clone()));
                }
            }>
            {move || has_input().then(|| view! { <InPort id=in_id.clone()/> })}
            {move || has_output().then(|| {
                let from = out_id.clone();
                view! {
                    <div class="port out" data-testid="port-out" title="Drag to another node's input port to connect"
                        on:pointerdown=move |ev: web_sys::PointerEvent| {
                            ev.stop_propagation();
                            press_output_port(editor, &from, &ev);
                        }></div>
                }
            })}
            <div class="node-head">
                <span class="kind">{move || kind.get().map(NodeKind::as_str)}</span>
                {move || run_state().map(|(class, text)| view! {
                    <span class=format!("node-status state-{class}") data-testid="node-status" data-node-id=status_id.clone()>{text}</span>
                })}
            </div>
            {move || waiting_in().map(|run_id| {
                let (approve_run, reject_run) = (run_id.clone(), run_id);
                let (approve_node, reject_node) = (decide_id.clone(), decide_id.clone());
                view! {
                    <div class="decide">
                        <button data-testid="approve" on:pointerdown=|ev: web_sys::PointerEvent| ev.stop_propagation()
                            on:click=move |_| decide_and_watch(editor, approve_run.clone(), approve_node.clone(), true)>"Approve"</button>
                        <button data-testid="reject" on:pointerdown=|ev: web_sys::PointerEvent| ev.stop_propagation()
                            on:click=move |_| decide_and_watch(editor, reject_run.clone(), reject_node.clone(), false)>"Reject"</button>
                    </div>
                }
            })}
            <div class="label" title=text>{text}</div>
            <div class="node-sub" title=move || subtitle.get()>{move || subtitle.get()}</div>
            {move || chips.get().flatten().map(|set| view! { <Chips node_id=chips_id.clone() set=set/> })}
        </div>
    }
}

/// A node's input port; while an edge is drawn over it, it shows whether it accepts it.
#[component]
fn InPort(id: String) -> impl IntoView {
    let graph = expect_context::<CanvasGraph>();
    let other = id.clone();
    let target = move || graph.target.with(|t| matches!(t, Some((n, true)) if *n == id));
    let refused = move || graph.target.with(|t| matches!(t, Some((n, false)) if *n == other));
    view! { <div class="port in" class:target=target class:refused=refused data-testid="port-in"></div> }
}

#[component]
fn Chips(node_id: String, set: ChipSet) -> impl IntoView {
    let editor = expect_context::<Editor>();
    let chip = move |testid: String, label: String, remove: Box<dyn Fn(&mut AgentConfig) + Send + Sync>| {
        let id = node_id.clone();
        let remove = std::sync::Arc::new(remove);
        view! {
            <span class="chip" data-testid=testid>
                {label}
                <button class="chip-x" data-testid="chip-remove" title="Remove" tabindex="-1"
                    on:pointerdown=|ev: web_sys::PointerEvent| ev.stop_propagation()
                    on:click=move |_| {
                        let remove = remove.clone();
                        let id = id.clone();
                        editor.edit(move |c| {
                            if let Some(a) = c.nodes.iter_mut().find(|n| n.id == id).and_then(|n| n.agent.as_mut()) {
                                remove(a);
                            }
                        });
                    }>"×"</button>
            </span>
        }
    };
    let mut chips = Vec::new();
    if set.structured {
        chips.push(chip(
            "chip-structured-output".into(),
            "Structured Output".into(),
            Box::new(|a: &mut AgentConfig| {
                a.output_schema = None;
                a.output_schema_ref = None;
            }),
        ));
    }
    for tool in set.tools {
        let builtin = TOOLS.iter().find(|(id, _)| *id == tool).map(|(_, l)| l.to_string());
        let label = builtin.or_else(|| tool_label(&tool)).unwrap_or_else(|| tool.clone());
        let name = tool.clone();
        chips.push(chip(
            format!("chip-tool-{tool}"),
            label,
            Box::new(move |a: &mut AgentConfig| a.tools.retain(|t| *t != name)),
        ));
    }
    view! { <div class="chips">{chips}</div> }
}
