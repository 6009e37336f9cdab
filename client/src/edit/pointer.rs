//! Pointer drags on the canvas, followed on the window: moving the selected cards
//! together (one undo step), drawing an edge from an output port to an input port,
//! the Shift selection band, panning, the minimap, and dropping palette items.

use std::cell::Cell;
use std::collections::HashMap;

use conclave_shared::graph::edge_problem;
use conclave_shared::{
    AgentConfig, ApprovalConfig, ChildConclave, CommandConfig, Conclave, Edge, LoopConfig, Node, NodeKind, Position,
    Predicate, PredicateOp, RouteCase, RouteConfig, empty_schema,
};
use leptos::prelude::*;

use super::canvas::{canvas_element, to_canvas};
use super::minimap::pan_to_minimap_point;
use crate::state::{Drag, Editor, NODE_WIDTH, Selection, fresh_id};

/// How far (screen pixels) the pointer moves before a press on a card becomes a move.
const MOVE_THRESHOLD: f64 = 3.0;

thread_local! {
    /// Whether the pointer is pressed on a card, so the focus it gives the card does
    /// not select it a second time (a Shift press may just have removed it).
    static PRESSING: Cell<bool> = const { Cell::new(false) };
}

/// Whether a card is being pressed with the pointer.
pub fn pressing() -> bool {
    PRESSING.with(Cell::get)
}

/// A press on a card: with Shift, adds the node to the selection or removes it;
/// otherwise selects it (keeping a selection it belongs to) and starts moving every
/// selected card.
pub fn press_node(editor: Editor, id: &str, ev: &web_sys::PointerEvent) {
    if ev.button() != 0 {
        return;
    }
    PRESSING.with(|p| p.set(true));
    let selection = editor.selection.get_untracked();
    if ev.shift_key() {
        let mut ids = selection.nodes();
        match ids.iter().position(|n| n == id) {
            Some(i) => drop(ids.remove(i)),
            None => ids.push(id.to_string()),
        }
        editor.selection.set(Selection::of_nodes(ids));
        return;
    }
    if !selection.has_node(id) {
        editor.selection.set(Selection::Node(id.to_string()));
    }
    let Some(start) = to_canvas(editor, ev.client_x() as f64, ev.client_y() as f64) else { return };
    let ids = editor.selection.get_untracked().nodes();
    let origins = editor.conclave.with_untracked(|c| {
        let nodes = c.as_ref().map(|c| c.nodes.as_slice()).unwrap_or_default();
        nodes.iter().filter(|n| ids.contains(&n.id)).map(|n| (n.id.clone(), n.position)).collect()
    });
    editor.checkpoint();
    editor.drag.set(Some(Drag::Nodes { grabbed: id.to_string(), start, origins, moved: false }));
}

/// A press on a node's output port starts drawing an edge from it.
pub fn press_output_port(editor: Editor, from: &str, ev: &web_sys::PointerEvent) {
    if ev.button() != 0 {
        return;
    }
    // The press focuses the card; that focus must not change the selection.
    PRESSING.with(|p| p.set(true));
    if let Some((x, y)) = to_canvas(editor, ev.client_x() as f64, ev.client_y() as f64) {
        editor.drag.set(Some(Drag::Edge { from: from.to_string(), x, y, over: None }));
    }
}

/// Follows drags on the window: moves cards, draws edges and bands, pans, and drops
/// palette items.
pub fn install_pointer_handlers(editor: Editor) {
    let moved = window_event_listener(leptos::ev::pointermove, move |ev: web_sys::PointerEvent| {
        let (x, y) = (ev.client_x() as f64, ev.client_y() as f64);
        match editor.drag.get_untracked() {
            Some(Drag::Palette { item, .. }) => editor.drag.set(Some(Drag::Palette { item, x, y })),
            Some(Drag::Nodes { grabbed, start, origins, moved }) => {
                move_nodes(editor, (x, y), grabbed, start, origins, moved)
            }
            Some(Drag::Edge { from, over, .. }) => follow_edge(editor, from, over, x, y),
            Some(Drag::Band { start, before, .. }) => {
                editor
                    .selection
                    .set(Selection::of_nodes(before.iter().cloned().chain(nodes_in_band(start, (x, y))).collect()));
                editor.drag.set(Some(Drag::Band { start, end: (x, y), before }));
            }
            Some(Drag::Pan { sx, sy, px, py }) => editor.view.update(|v| {
                v.x = px + x - sx;
                v.y = py + y - sy;
            }),
            Some(Drag::Minimap) => pan_to_minimap_point(editor, x, y),
            None => {}
        }
    });
    let released = window_event_listener(leptos::ev::pointerup, move |ev: web_sys::PointerEvent| {
        PRESSING.with(|p| p.set(false));
        let (x, y) = (ev.client_x() as f64, ev.client_y() as f64);
        match editor.drag.get_untracked() {
            Some(Drag::Palette { item, .. }) => drop_item(editor, &item, x, y),
            Some(Drag::Edge { from, .. }) => finish_edge(editor, &from, x, y),
            Some(Drag::Nodes { grabbed, moved: false, .. }) => {
                // A click without movement leaves an empty undo step; drop it. A click on
                // one card of several selected selects just that card.
                editor.undo_stack.update(|u| {
                    if u.last() == editor.conclave.get_untracked().as_ref() {
                        u.pop();
                    }
                });
                editor.selection.set(Selection::Node(grabbed));
            }
            _ => {}
        }
        editor.drag.set(None);
    });
    let cancelled = window_event_listener(leptos::ev::pointercancel, move |_| {
        PRESSING.with(|p| p.set(false));
        editor.drag.set(None);
    });
    // These live as long as the page.
    std::mem::forget((moved, released, cancelled));
}

/// Moves every card of a [`Drag::Nodes`] by the pointer's travel since the press.
fn move_nodes(
    editor: Editor,
    pointer: (f64, f64),
    grabbed: String,
    start: (f64, f64),
    origins: Vec<(String, Position)>,
    moved: bool,
) {
    let Some((cx, cy)) = to_canvas(editor, pointer.0, pointer.1) else { return };
    let (dx, dy) = (cx - start.0, cy - start.1);
    let zoom = editor.view.get_untracked().zoom;
    if !moved && dx.hypot(dy) * zoom < MOVE_THRESHOLD {
        return;
    }
    let by_id: HashMap<&str, Position> = origins.iter().map(|(id, p)| (id.as_str(), *p)).collect();
    editor.edit_silently(|c| {
        for n in &mut c.nodes {
            if let Some(p) = by_id.get(n.id.as_str()) {
                n.position = Position { x: p.x + dx.round() as i32, y: p.y + dy.round() as i32 };
            }
        }
    });
    if !moved {
        editor.drag.set(Some(Drag::Nodes { grabbed, start, origins, moved: true }));
    }
}

/// Follows the pointer while an edge is drawn, noting the input port under it and
/// whether that node would accept the edge.
fn follow_edge(editor: Editor, from: String, over: Option<(String, bool)>, x: f64, y: f64) {
    let Some((cx, cy)) = to_canvas(editor, x, y) else { return };
    let over = match input_port_at(x, y) {
        Some(to) if over.as_ref().is_some_and(|(o, _)| *o == to) => over,
        Some(to) => {
            let accepted =
                editor.conclave.with_untracked(|c| c.as_ref().is_some_and(|c| edge_problem(c, &from, &to).is_none()));
            Some((to, accepted))
        }
        None => None,
    };
    editor.drag.set(Some(Drag::Edge { from, x: cx, y: cy, over }));
}

fn element_at(x: f64, y: f64) -> Option<web_sys::Element> {
    web_sys::window()?.document()?.element_from_point(x as f32, y as f32)
}

/// The node under the screen point (x, y).
pub fn node_at(x: f64, y: f64) -> Option<String> {
    element_at(x, y)?.closest("[data-testid=node]").ok()??.get_attribute("data-node-id")
}

/// The node whose input port is under the screen point (x, y).
fn input_port_at(x: f64, y: f64) -> Option<String> {
    let port = element_at(x, y)?.closest("[data-testid=port-in]").ok()??;
    port.closest("[data-testid=node]").ok()??.get_attribute("data-node-id")
}

/// The nodes whose cards touch the band between screen points `a` and `b`.
fn nodes_in_band(a: (f64, f64), b: (f64, f64)) -> Vec<String> {
    let (left, right, top, bottom) = (a.0.min(b.0), a.0.max(b.0), a.1.min(b.1), a.1.max(b.1));
    let Some(cards) = canvas_element().map(|c| c.get_elements_by_class_name("node")) else {
        return Vec::new();
    };
    (0..cards.length())
        .filter_map(|i| cards.item(i))
        .filter(|card| {
            let r = card.get_bounding_client_rect();
            r.left() <= right && r.right() >= left && r.top() <= bottom && r.bottom() >= top
        })
        .filter_map(|card| card.get_attribute("data-node-id"))
        .collect()
}

/// Ends an edge drag: connects when released on an input port the edge may reach.
fn finish_edge(editor: Editor, from: &str, x: f64, y: f64) {
    let Some(to) = input_port_at(x, y) else {
        if node_at(x, y).is_some_and(|n| n != from) {
            editor.say("Release on the node's input port (the dot on its left edge) to connect", false);
        }
        return;
    };
    let Some(conclave) = editor.conclave.get_untracked() else { return };
    match edge_problem(&conclave, from, &to) {
        Some(rule) => editor.say(format!("Edge refused: {}", rule.message(from, &to)), true),
        None => {
            let case = next_case(&conclave, from);
            let said = case.as_ref().map(|c| format!(" for case `{c}`")).unwrap_or_default();
            editor.edit(|c| c.edges.push(Edge { from: from.to_string(), to: to.clone(), case }));
            editor.say(format!("Connected {from} -> {to}{said}"), false);
        }
    }
}

/// The case a new edge out of `from` carries when `from` is a route: the first of its
/// cases no edge carries yet, else its first case.
fn next_case(conclave: &Conclave, from: &str) -> Option<String> {
    let route = conclave.node(from)?.route.as_ref()?;
    let taken: Vec<&str> = conclave.edges.iter().filter(|e| e.from == from).filter_map(|e| e.case.as_deref()).collect();
    let mut names = route.case_names();
    let first = route.case_names().next().map(str::to_string);
    names.find(|n| !taken.contains(n)).map(str::to_string).or(first)
}

/// Drops a palette item: a node kind onto the canvas, a capability onto an agent.
fn drop_item(editor: Editor, item: &str, x: f64, y: f64) {
    let kind = NodeKind::parse(item);
    match kind {
        Some(kind) => add_node(editor, kind, x, y),
        None => attach_capability(editor, item, x, y),
    }
}

/// Adds a node of `kind` centred under the screen point (x, y) and selects it. A new
/// agent gets the first configured provider, so it can run without further setup.
fn add_node(editor: Editor, kind: NodeKind, x: f64, y: f64) {
    // Inside the canvas's box, whatever floats over it there (the minimap).
    let on_canvas = canvas_element().is_some_and(|c| {
        let r = c.get_bounding_client_rect();
        (r.left()..r.right()).contains(&x) && (r.top()..r.bottom()).contains(&y)
    });
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
            NodeKind::Route => "route",
            NodeKind::Command => "command",
            NodeKind::Loop => "loop",
            NodeKind::Approval => "approval",
            NodeKind::Conclave => "conclave",
        };
        new_id = fresh_id(c, base);
        let agent = (kind == NodeKind::Agent).then(|| {
            let (name, model) = provider.clone().unwrap_or_else(|| ("anthropic".into(), "claude-sonnet-4-5".into()));
            let mut a = AgentConfig::new(name);
            a.model = model;
            a
        });
        let position = Position { x: (cx - NODE_WIDTH / 2.0).round() as i32, y: (cy - 20.0).round() as i32 };
        c.nodes.push(Node { position, agent, ..starter(new_id.clone(), kind) });
    });
    editor.selection.set(Selection::Node(new_id));
}

/// A new node of `kind` with the configuration its kind needs, ready to edit in the
/// inspector: a route with the cases `yes` and `otherwise` `no`, `git diff --check` as
/// a command, a loop of three iterations at most, an approval.
fn starter(id: String, kind: NodeKind) -> Node {
    let exists = |pointer: &str| Predicate { pointer: pointer.into(), op: PredicateOp::Exists, value: None };
    let mut node = Node::new(id, kind);
    match kind {
        NodeKind::Route => {
            node.route = Some(RouteConfig {
                cases: vec![RouteCase { name: "yes".into(), when: exists("/") }],
                otherwise: Some("no".into()),
            })
        }
        NodeKind::Command => {
            node.command = Some(CommandConfig::new(["git", "diff", "--check"].map(str::to_string).to_vec()))
        }
        NodeKind::Loop => node.repeat = Some(LoopConfig { body: Vec::new(), until: exists("/"), max_iterations: 3 }),
        NodeKind::Approval => node.approval = Some(ApprovalConfig::default()),
        NodeKind::Conclave => node.child = Some(ChildConclave { id: String::new() }),
        NodeKind::Trigger | NodeKind::Agent | NodeKind::Output => {}
    }
    node
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
