//! The canvas: node cards at their stored positions, edges as SVG curves, ports to
//! draw edges, chips for capabilities, live run states, pan (drag the background) and
//! zoom (wheel). Drags use pointer events; [`install_pointer_handlers`] follows them
//! on the window.

use conclave_shared::graph::edge_problem;
use conclave_shared::{AgentConfig, Edge, Node, NodeKind, Position, empty_schema};
use leptos::prelude::*;

use super::sidebar::TOOLS;
use crate::state::{Drag, Editor, NODE_WIDTH, PORT_Y, Selection, fresh_id};

/// The canvas.
#[component]
pub fn Canvas() -> impl IntoView {
    let editor = expect_context::<Editor>();
    let transform = move || {
        let v = editor.view.get();
        format!("translate({}px, {}px) scale({})", v.x, v.y, v.zoom)
    };
    let nodes = move || editor.conclave.with(|c| c.as_ref().map(|c| c.nodes.clone()).unwrap_or_default());
    let edges = move || editor.conclave.with(|c| c.as_ref().map(|c| c.edges.clone()).unwrap_or_default());
    view! {
        <div class="canvas" data-testid="canvas"
            on:pointerdown=move |ev: web_sys::PointerEvent| {
                let v = editor.view.get_untracked();
                editor.selection.set(Selection::None);
                editor.drag.set(Some(Drag::Pan { sx: ev.client_x() as f64, sy: ev.client_y() as f64, px: v.x, py: v.y }));
            }
            on:wheel=move |ev: web_sys::WheelEvent| {
                ev.prevent_default();
                let Some((cx, cy)) = canvas_offset(ev.client_x() as f64, ev.client_y() as f64) else { return };
                editor.view.update(|v| {
                    let zoom = (v.zoom * (1.0 - ev.delta_y() * 0.0015)).clamp(0.25, 2.5);
                    v.x = cx - (cx - v.x) * zoom / v.zoom;
                    v.y = cy - (cy - v.y) * zoom / v.zoom;
                    v.zoom = zoom;
                });
            }>
            <div class="world" style:transform=transform>
                <svg class="edges" width="1" height="1">
                    <For each=edges key=|e| (e.from.clone(), e.to.clone()) children=move |e| view! { <EdgePath edge=e/> }/>
                    <PendingEdge/>
                </svg>
                <For each=nodes key=|n| n.id.clone() children=move |n| view! { <NodeCard id=n.id.clone()/> }/>
            </div>
            <div class="zoom-hint">{move || format!("{:.0}%", editor.view.get().zoom * 100.0)}</div>
        </div>
        <Ghost/>
    }
}

/// Where a node's port is, in canvas coordinates.
fn port(editor: Editor, id: &str, out: bool) -> Option<(f64, f64)> {
    editor.conclave.with(|c| {
        let n = c.as_ref()?.node(id)?;
        Some((n.position.x as f64 + if out { NODE_WIDTH } else { 0.0 }, n.position.y as f64 + PORT_Y))
    })
}

fn curve((x1, y1): (f64, f64), (x2, y2): (f64, f64)) -> String {
    let bend = ((x2 - x1).abs() / 2.0).max(60.0);
    format!("M {x1} {y1} C {} {y1}, {} {y2}, {x2} {y2}", x1 + bend, x2 - bend)
}

#[component]
fn EdgePath(edge: Edge) -> impl IntoView {
    let editor = expect_context::<Editor>();
    let (from, to) = (edge.from.clone(), edge.to.clone());
    let (f2, t2) = (from.clone(), to.clone());
    let d = move || match (port(editor, &f2, true), port(editor, &t2, false)) {
        (Some(a), Some(b)) => curve(a, b),
        _ => String::new(),
    };
    let (f3, t3) = (from.clone(), to.clone());
    let selected = move || editor.selection.get() == Selection::Edge(f3.clone(), t3.clone());
    let (f4, t4) = (from.clone(), to.clone());
    view! {
        <g class="edge" class:selected=selected data-testid="edge" data-from=from data-to=to
            on:pointerdown=move |ev: web_sys::PointerEvent| {
                ev.stop_propagation();
                editor.selection.set(Selection::Edge(f4.clone(), t4.clone()));
            }>
            <path class="hit" d=d.clone()></path>
            <path class="line" d=d></path>
        </g>
    }
}

#[component]
fn PendingEdge() -> impl IntoView {
    let editor = expect_context::<Editor>();
    let d = move || match editor.drag.get() {
        Some(Drag::Edge { from, x, y }) => port(editor, &from, true).map(|a| curve(a, (x, y))).unwrap_or_default(),
        _ => String::new(),
    };
    view! { <path class="pending" d=d></path> }
}

/// A node card.
#[component]
fn NodeCard(id: String) -> impl IntoView {
    let editor = expect_context::<Editor>();
    let node = {
        let id = id.clone();
        Memo::new(move |_| editor.conclave.with(|c| c.as_ref().and_then(|c| c.node(&id).cloned())))
    };
    let position = move || node.with(|n| n.as_ref().map(|n| n.position).unwrap_or_default());
    let kind = node.with_untracked(|n| n.as_ref().map_or(NodeKind::Agent, |n| n.kind));
    let selected = {
        let id = id.clone();
        move || editor.selection.with(|s| *s == Selection::Node(id.clone()))
    };
    let run_state = {
        let id = id.clone();
        move || editor.run.with(|r| r.as_ref().and_then(|r| r.node(&id)).map(|n| n.state.as_str()))
    };
    let label = move || {
        node.with(|n| {
            n.as_ref().map(|n| if n.label.is_empty() { n.id.clone() } else { n.label.clone() }).unwrap_or_default()
        })
    };
    let subtitle = move || {
        node.with(|n| {
            n.as_ref()
                .and_then(|n| {
                    n.agent.as_ref().map(|a| {
                        if a.model.is_empty() { a.provider.clone() } else { format!("{} · {}", a.provider, a.model) }
                    })
                })
                .unwrap_or_else(|| kind.as_str().to_string())
        })
    };
    let (drag_id, port_id, status_id, chips_id) = (id.clone(), id.clone(), id.clone(), id.clone());
    view! {
        <div class=format!("node kind-{}", kind.as_str()) class:selected=selected data-testid="node" data-node-id=id
            style:left=move || format!("{}px", position().x) style:top=move || format!("{}px", position().y)
            on:pointerdown=move |ev: web_sys::PointerEvent| {
                ev.stop_propagation();
                editor.selection.set(Selection::Node(drag_id.clone()));
                let Some((x, y)) = to_canvas(editor, ev.client_x() as f64, ev.client_y() as f64) else { return };
                let p = position();
                editor.checkpoint();
                editor.drag.set(Some(Drag::Node { id: drag_id.clone(), dx: x - p.x as f64, dy: y - p.y as f64 }));
            }>
            {(kind != NodeKind::Trigger).then(|| view! { <div class="port in" data-testid="port-in"></div> })}
            {(kind != NodeKind::Output).then(|| {
                let from = port_id.clone();
                view! {
                    <div class="port out" data-testid="port-out" on:pointerdown=move |ev: web_sys::PointerEvent| {
                        ev.stop_propagation();
                        if let Some((x, y)) = to_canvas(editor, ev.client_x() as f64, ev.client_y() as f64) {
                            editor.drag.set(Some(Drag::Edge { from: from.clone(), x, y }));
                        }
                    }></div>
                }
            })}
            <div class="node-head">
                <span class="kind">{kind.as_str()}</span>
                <span class="label">{label}</span>
                {move || run_state().map(|s| view! {
                    <span class=format!("node-status state-{s}") data-testid="node-status" data-node-id=status_id.clone()>{s}</span>
                })}
            </div>
            <div class="node-sub">{subtitle}</div>
            {move || node.get().and_then(|n| n.agent).map(|a| view! { <Chips node_id=chips_id.clone() agent=a/> })}
        </div>
    }
}

#[component]
fn Chips(node_id: String, agent: AgentConfig) -> impl IntoView {
    let editor = expect_context::<Editor>();
    let structured = agent.output_schema.is_some() || agent.output_schema_ref.is_some();
    let chip = move |testid: String, label: String, remove: Box<dyn Fn(&mut AgentConfig) + Send + Sync>| {
        let id = node_id.clone();
        let remove = std::sync::Arc::new(remove);
        view! {
            <span class="chip" data-testid=testid>
                {label}
                <button class="chip-x" data-testid="chip-remove" title="Remove"
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
    if structured {
        chips.push(chip(
            "chip-structured-output".into(),
            "Structured Output".into(),
            Box::new(|a: &mut AgentConfig| {
                a.output_schema = None;
                a.output_schema_ref = None;
            }),
        ));
    }
    for tool in agent.tools.clone() {
        let label = TOOLS.iter().find(|(id, _)| *id == tool).map_or(tool.clone(), |(_, l)| l.to_string());
        let name = tool.clone();
        chips.push(chip(
            format!("chip-tool-{tool}"),
            label,
            Box::new(move |a: &mut AgentConfig| a.tools.retain(|t| *t != name)),
        ));
    }
    view! { <div class="chips">{chips}</div> }
}

/// The label following the pointer while an item is dragged from the palette.
#[component]
fn Ghost() -> impl IntoView {
    let editor = expect_context::<Editor>();
    move || match editor.drag.get() {
        Some(Drag::Palette { item, x, y }) => {
            let label = item.strip_prefix("tool:").unwrap_or(&item).replace(['-', '_'], " ");
            view! { <div class="ghost" style:left=format!("{}px", x + 8.0) style:top=format!("{}px", y + 8.0)>{label}</div> }.into_any()
        }
        _ => ().into_any(),
    }
}

fn canvas_element() -> Option<web_sys::Element> {
    web_sys::window()?.document()?.query_selector("[data-testid=canvas]").ok()?
}

/// A screen point relative to the canvas box.
fn canvas_offset(x: f64, y: f64) -> Option<(f64, f64)> {
    let rect = canvas_element()?.get_bounding_client_rect();
    Some((x - rect.left(), y - rect.top()))
}

/// A screen point in canvas coordinates.
fn to_canvas(editor: Editor, x: f64, y: f64) -> Option<(f64, f64)> {
    let (cx, cy) = canvas_offset(x, y)?;
    let v = editor.view.get_untracked();
    Some(((cx - v.x) / v.zoom, (cy - v.y) / v.zoom))
}

fn element_at(x: f64, y: f64) -> Option<web_sys::Element> {
    web_sys::window()?.document()?.element_from_point(x as f32, y as f32)
}

fn node_at(x: f64, y: f64) -> Option<String> {
    element_at(x, y)?.closest("[data-testid=node]").ok()??.get_attribute("data-node-id")
}

/// Follows drags on the window: moves cards, draws edges, pans, and drops palette items.
pub fn install_pointer_handlers(editor: Editor) {
    let moved = window_event_listener(leptos::ev::pointermove, move |ev: web_sys::PointerEvent| {
        let (x, y) = (ev.client_x() as f64, ev.client_y() as f64);
        match editor.drag.get_untracked() {
            Some(Drag::Palette { item, .. }) => editor.drag.set(Some(Drag::Palette { item, x, y })),
            Some(Drag::Node { id, dx, dy }) => {
                if let Some((cx, cy)) = to_canvas(editor, x, y) {
                    editor.edit_silently(|c| {
                        if let Some(n) = c.nodes.iter_mut().find(|n| n.id == id) {
                            n.position = Position { x: (cx - dx).round() as i32, y: (cy - dy).round() as i32 };
                        }
                    });
                }
            }
            Some(Drag::Edge { from, .. }) => {
                if let Some((cx, cy)) = to_canvas(editor, x, y) {
                    editor.drag.set(Some(Drag::Edge { from, x: cx, y: cy }));
                }
            }
            Some(Drag::Pan { sx, sy, px, py }) => editor.view.update(|v| {
                v.x = px + x - sx;
                v.y = py + y - sy;
            }),
            None => {}
        }
    });
    let released = window_event_listener(leptos::ev::pointerup, move |ev: web_sys::PointerEvent| {
        let (x, y) = (ev.client_x() as f64, ev.client_y() as f64);
        match editor.drag.get_untracked() {
            Some(Drag::Palette { item, .. }) => drop_item(editor, &item, x, y),
            Some(Drag::Edge { from, .. }) => finish_edge(editor, &from, x, y),
            Some(Drag::Node { .. }) => {
                // A click without movement leaves an empty undo step; drop it.
                editor.undo_stack.update(|u| {
                    if u.last() == editor.conclave.get_untracked().as_ref() {
                        u.pop();
                    }
                });
            }
            _ => {}
        }
        editor.drag.set(None);
    });
    // These live as long as the page.
    std::mem::forget((moved, released));
}

fn finish_edge(editor: Editor, from: &str, x: f64, y: f64) {
    let Some(to) = node_at(x, y) else { return };
    let Some(conclave) = editor.conclave.get_untracked() else { return };
    match edge_problem(&conclave, from, &to) {
        Some(rule) => editor.say(format!("Edge refused: {}", rule.message(from, &to)), true),
        None => {
            editor.edit(|c| c.edges.push(Edge { from: from.to_string(), to: to.clone() }));
            editor.say(format!("Connected {from} -> {to}"), false);
        }
    }
}

/// Drops a palette item: a node kind onto the canvas, a capability onto an agent.
fn drop_item(editor: Editor, item: &str, x: f64, y: f64) {
    let kind = match item {
        "trigger" => Some(NodeKind::Trigger),
        "agent" => Some(NodeKind::Agent),
        "output" => Some(NodeKind::Output),
        _ => None,
    };
    match kind {
        Some(kind) => add_node(editor, kind, x, y),
        None => attach_capability(editor, item, x, y),
    }
}

/// Adds a node of `kind` centred under the screen point (x, y) and selects it. A new
/// agent gets the first configured provider, so it can run without further setup.
fn add_node(editor: Editor, kind: NodeKind, x: f64, y: f64) {
    let on_canvas = element_at(x, y).and_then(|e| e.closest("[data-testid=canvas]").ok().flatten()).is_some();
    if !on_canvas {
        editor.say("Drop node kinds onto the canvas", true);
        return;
    }
    let Some((cx, cy)) = to_canvas(editor, x, y) else { return };
    let provider = editor.providers.with_untracked(|p| {
        p.iter().find(|p| p.configured).or(p.first()).map(|p| (p.name.clone(), p.default_model.clone()))
    });
    let mut new_id = String::new();
    editor.edit(|c| {
        let base = match kind {
            NodeKind::Trigger => "input",
            NodeKind::Agent => "agent",
            NodeKind::Output => "output",
        };
        new_id = fresh_id(c, base);
        let agent = (kind == NodeKind::Agent).then(|| {
            let (name, model) = provider.clone().unwrap_or_else(|| ("anthropic".into(), "claude-sonnet-4-5".into()));
            let mut a = AgentConfig::new(name);
            a.model = model;
            a
        });
        let position = Position { x: (cx - NODE_WIDTH / 2.0).round() as i32, y: (cy - 20.0).round() as i32 };
        c.nodes.push(Node { id: new_id.clone(), kind, label: new_id.clone(), position, agent });
    });
    editor.selection.set(Selection::Node(new_id));
}

/// Gives the agent under the screen point (x, y) a capability: `structured-output` or
/// a tool (`tool:<id>`).
fn attach_capability(editor: Editor, item: &str, x: f64, y: f64) {
    let Some(target) = node_at(x, y) else {
        editor.say("Drop capabilities onto an agent node", true);
        return;
    };
    let is_agent = editor
        .conclave
        .with_untracked(|c| c.as_ref().and_then(|c| c.node(&target)).is_some_and(|n| n.kind == NodeKind::Agent));
    if !is_agent {
        editor.say(format!("`{target}` is not an agent; capabilities attach to agents only"), true);
        return;
    }
    let mut note = String::new();
    editor.edit(|c| {
        let Some(agent) = c.nodes.iter_mut().find(|n| n.id == target).and_then(|n| n.agent.as_mut()) else { return };
        if item == "structured-output" {
            if agent.output_schema.is_some() || agent.output_schema_ref.is_some() {
                note = "this agent already has Structured Output".into();
                return;
            }
            agent.output_schema = Some(empty_schema());
        } else if let Some(tool) = item.strip_prefix("tool:") {
            if agent.tools.iter().any(|t| t == tool) {
                note = format!("this agent already has {tool}");
                return;
            }
            agent.tools.push(tool.to_string());
        }
    });
    if note.is_empty() {
        editor.selection.set(Selection::Node(target));
    } else {
        editor.say(note, true);
    }
}
