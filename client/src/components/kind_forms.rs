//! The inspector's forms for the kinds beside agents: a route's cases (name, JSON
//! pointer, operator, value) and its `otherwise`, a command's arguments (one per
//! line), output parsing, timeout and exit codes, a loop's body, predicate and
//! iterations, an approval's prompt and timeout, the conclave a `conclave` node
//! runs; and the cache switch agents and commands share.
//!
//! Text inputs commit like every inspector input (`commit_on_change`), so a click
//! right after typing lands; selects and checkboxes commit at once.

use conclave_shared::{CacheSetting, CommandParse, Node, Predicate, PredicateOp, RouteCase};
use leptos::prelude::*;
use serde_json::Value;
use std::sync::Arc;

use crate::edit::agent::node_value;
use crate::edit::press::commit_on_change;
use crate::state::Editor;

/// Reads one text value of a node.
type Reader = Arc<dyn Fn(&Node) -> String + Send + Sync>;
/// Writes one text value into a node.
type Writer = Arc<dyn Fn(&mut Node, String) + Send + Sync>;
/// Reads a predicate's operator from a node.
type OpReader = Arc<dyn Fn(&Node) -> Option<PredicateOp> + Send + Sync>;
/// Writes a predicate's operator into a node.
type OpWriter = Arc<dyn Fn(&mut Node, PredicateOp) + Send + Sync>;

/// Applies `change` to node `id` as one undoable edit.
fn edit_node(editor: Editor, id: &str, change: impl FnOnce(&mut Node)) {
    editor.edit(|c| {
        if let Some(n) = c.nodes.iter_mut().find(|n| n.id == id) {
            change(n);
        }
    });
}

/// A text input (or, `lines`, a text area) bound to one value of node `id`.
#[component]
fn NodeText(
    id: String,
    #[prop(into)] testid: String,
    label: &'static str,
    read: Reader,
    write: Writer,
    #[prop(optional)] lines: bool,
) -> impl IntoView {
    let editor = expect_context::<Editor>();
    let value = {
        let read = read.clone();
        node_value(editor, &id, move |n| read(n))
    };
    let (on_input, on_change) = {
        let (read_id, write_id) = (id.clone(), id);
        let current = move || editor.conclave.with_untracked(|c| c.as_ref()?.node(&read_id).map(|n| read(n)));
        commit_on_change(current, move |v| {
            let write = write.clone();
            edit_node(editor, &write_id, move |n| write(n, v));
        })
    };
    let shown = move || value.get().unwrap_or_default();
    if lines {
        view! { <label>{label}<textarea data-testid=testid rows="3" prop:value=shown on:input=on_input on:change=on_change></textarea></label> }.into_any()
    } else {
        view! { <label>{label}<input data-testid=testid prop:value=shown on:input=on_input on:change=on_change/></label> }.into_any()
    }
}

/// An operator select bound to one predicate of node `id`.
#[component]
fn OpSelect(id: String, #[prop(into)] testid: String, read: OpReader, write: OpWriter) -> impl IntoView {
    let editor = expect_context::<Editor>();
    let value = node_value(editor, &id, move |n| read(n));
    let on_change = move |ev: web_sys::Event| {
        let chosen = event_target_value(&ev);
        let Some(op) = PredicateOp::ALL.into_iter().find(|op| op.as_str() == chosen) else { return };
        let write = write.clone();
        edit_node(editor, &id, move |n| write(n, op));
    };
    view! {
        <label>"Test"
            <select data-testid=testid on:change=on_change>
                {PredicateOp::ALL.into_iter().map(|op| view! {
                    <option value=op.as_str() selected=move || value.get().flatten() == Some(op)>{op.as_str()}</option>
                }).collect_view()}
            </select>
        </label>
    }
}

/// A predicate's value as typed: JSON when it reads as JSON, else the text itself;
/// nothing when empty.
fn typed_value(text: &str) -> Option<Value> {
    let text = text.trim();
    if text.is_empty() {
        return None;
    }
    Some(serde_json::from_str(text).unwrap_or_else(|_| Value::String(text.to_string())))
}

/// A predicate's value as the form shows it.
fn shown_value(value: &Option<Value>) -> String {
    match value {
        None => String::new(),
        Some(Value::String(s)) => s.clone(),
        Some(other) => other.to_string(),
    }
}

/// A route's cases and its `otherwise`.
#[component]
pub fn RouteForm(id: String) -> impl IntoView {
    let editor = expect_context::<Editor>();
    let count = node_value(editor, &id, |n| n.route.as_ref().map_or(0, |r| r.cases.len()));
    let case = |i: usize| move |n: &Node| n.route.as_ref().and_then(|r| r.cases.get(i)).cloned();
    let with_case = |i: usize, change: fn(&mut RouteCase, String)| -> Writer {
        Arc::new(move |n: &mut Node, v: String| {
            if let Some(c) = n.route.as_mut().and_then(|r| r.cases.get_mut(i)) {
                change(c, v);
            }
        })
    };
    let rows = {
        let id = id.clone();
        move || {
            (0..count.get().unwrap_or(0))
                .map(|i| {
                    let (id, remove_id) = (id.clone(), id.clone());
                    let read_op = case(i);
                    view! {
                        <fieldset class="case" data-testid="route-case" data-case=i>
                            <NodeText id=id.clone() testid="case-name" label="Case"
                                read=Arc::new(move |n: &Node| case(i)(n).map(|c| c.name).unwrap_or_default())
                                write=with_case(i, |c, v| c.name = v)/>
                            <NodeText id=id.clone() testid="case-pointer" label="When the value at"
                                read=Arc::new(move |n: &Node| case(i)(n).map(|c| c.when.pointer).unwrap_or_default())
                                write=with_case(i, |c, v| c.when.pointer = v)/>
                            <OpSelect id=id.clone() testid="case-op"
                                read=Arc::new(move |n: &Node| read_op(n).map(|c| c.when.op))
                                write=Arc::new(move |n: &mut Node, op| {
                                    if let Some(c) = n.route.as_mut().and_then(|r| r.cases.get_mut(i)) {
                                        c.when.op = op;
                                    }
                                })/>
                            <NodeText id=id testid="case-value" label="Compared with (JSON)"
                                read=Arc::new(move |n: &Node| case(i)(n).map(|c| shown_value(&c.when.value)).unwrap_or_default())
                                write=with_case(i, |c, v| c.when.value = typed_value(&v))/>
                            <button data-testid="case-remove" on:click=move |_| edit_node(editor, &remove_id, move |n| {
                                if let Some(r) = n.route.as_mut() && i < r.cases.len() {
                                    r.cases.remove(i);
                                }
                            })>"Remove case"</button>
                        </fieldset>
                    }
                })
                .collect_view()
        }
    };
    let add_id = id.clone();
    let add = move |_| {
        edit_node(editor, &add_id, |n| {
            if let Some(r) = n.route.as_mut() {
                let name =
                    (1..).map(|k| format!("case{k}")).find(|c| r.case_names().all(|n| n != c)).unwrap_or_default();
                let when = Predicate { pointer: "/".into(), op: PredicateOp::Exists, value: None };
                r.cases.push(RouteCase { name, when });
            }
        })
    };
    view! {
        <h4>"Cases, tried in order"</h4>
        {rows}
        <button data-testid="case-add" on:click=add>"Add case"</button>
        <NodeText id=id testid="route-otherwise" label="Otherwise (when no case holds)"
            read=Arc::new(|n: &Node| n.route.as_ref().and_then(|r| r.otherwise.clone()).unwrap_or_default())
            write=Arc::new(|n: &mut Node, v: String| {
                if let Some(r) = n.route.as_mut() {
                    r.otherwise = Some(v.trim().to_string()).filter(|v| !v.is_empty());
                }
            })/>
    }
}

/// A number typed into a form, or nothing.
fn number<T: std::str::FromStr>(text: &str) -> Option<T> {
    text.trim().parse().ok()
}

/// A command's arguments, output parsing, timeout, exit codes and cache.
#[component]
pub fn CommandForm(id: String) -> impl IntoView {
    let editor = expect_context::<Editor>();
    let parse = node_value(editor, &id, |n| n.command.as_ref().map(|c| c.parse));
    let parse_id = id.clone();
    let on_parse = move |ev: web_sys::Event| {
        let chosen = event_target_value(&ev);
        let Some(parse) = CommandParse::ALL.into_iter().find(|p| p.as_str() == chosen) else {
            return;
        };
        edit_node(editor, &parse_id, move |n| {
            if let Some(c) = n.command.as_mut() {
                c.parse = parse;
            }
        });
    };
    let command = |change: fn(&mut conclave_shared::CommandConfig, String)| -> Writer {
        Arc::new(move |n: &mut Node, v: String| {
            if let Some(c) = n.command.as_mut() {
                change(c, v);
            }
        })
    };
    view! {
        <NodeText id=id.clone() testid="command-argv" label="Program and arguments, one per line (no shell)" lines=true
            read=Arc::new(|n: &Node| n.command.as_ref().map(|c| c.argv.join("\n")).unwrap_or_default())
            write=command(|c, v| c.argv = v.lines().map(str::trim).filter(|a| !a.is_empty()).map(str::to_string).collect())/>
        <label>"Read stdout as"
            <select data-testid="command-parse" on:change=on_parse>
                {CommandParse::ALL.into_iter().map(|p| view! {
                    <option value=p.as_str() selected=move || parse.get().flatten() == Some(p)>{p.as_str()}</option>
                }).collect_view()}
            </select>
        </label>
        <NodeText id=id.clone() testid="command-timeout" label="Timeout (seconds)"
            read=Arc::new(|n: &Node| n.command.as_ref().and_then(|c| c.timeout_secs).map(|t| t.to_string()).unwrap_or_default())
            write=command(|c, v| c.timeout_secs = number(&v))/>
        <NodeText id=id.clone() testid="command-ok-codes" label="Exit codes that mean success (comma-separated)"
            read=Arc::new(|n: &Node| n.command.as_ref().map(|c| c.ok_exit_codes.iter().map(i32::to_string).collect::<Vec<_>>().join(", ")).unwrap_or_default())
            write=command(|c, v| c.ok_exit_codes = v.split(',').filter_map(number).collect())/>
        <CacheSwitch id=id/>
    }
}

/// A loop's body, predicate and most iterations.
#[component]
pub fn LoopForm(id: String) -> impl IntoView {
    let repeat = |change: fn(&mut conclave_shared::LoopConfig, String)| -> Writer {
        Arc::new(move |n: &mut Node, v: String| {
            if let Some(l) = n.repeat.as_mut() {
                change(l, v);
            }
        })
    };
    view! {
        <NodeText id=id.clone() testid="loop-body" label="Body: the nodes each iteration runs (ids, comma-separated)"
            read=Arc::new(|n: &Node| n.repeat.as_ref().map(|l| l.body.join(", ")).unwrap_or_default())
            write=repeat(|l, v| l.body = v.split(',').map(str::trim).filter(|b| !b.is_empty()).map(str::to_string).collect())/>
        <NodeText id=id.clone() testid="loop-pointer" label="Until the value at"
            read=Arc::new(|n: &Node| n.repeat.as_ref().map(|l| l.until.pointer.clone()).unwrap_or_default())
            write=repeat(|l, v| l.until.pointer = v)/>
        <OpSelect id=id.clone() testid="loop-op"
            read=Arc::new(|n: &Node| n.repeat.as_ref().map(|l| l.until.op))
            write=Arc::new(|n: &mut Node, op| {
                if let Some(l) = n.repeat.as_mut() {
                    l.until.op = op;
                }
            })/>
        <NodeText id=id.clone() testid="loop-value" label="Compared with (JSON)"
            read=Arc::new(|n: &Node| n.repeat.as_ref().map(|l| shown_value(&l.until.value)).unwrap_or_default())
            write=repeat(|l, v| l.until.value = typed_value(&v))/>
        <NodeText id=id testid="loop-max" label="Most iterations (1 to 100)"
            read=Arc::new(|n: &Node| n.repeat.as_ref().map(|l| l.max_iterations.to_string()).unwrap_or_default())
            write=repeat(|l, v| l.max_iterations = number(&v).unwrap_or(l.max_iterations))/>
    }
}

/// What an approval asks, and how long the approver has.
#[component]
pub fn ApprovalForm(id: String) -> impl IntoView {
    view! {
        <NodeText id=id.clone() testid="approval-prompt" label="What the approver is asked"
            read=Arc::new(|n: &Node| n.approval.as_ref().map(|a| a.prompt.clone()).unwrap_or_default())
            write=Arc::new(|n: &mut Node, v: String| n.approval.get_or_insert_with(Default::default).prompt = v)/>
        <NodeText id=id testid="approval-timeout" label="Time to decide (seconds; empty: no limit)"
            read=Arc::new(|n: &Node| n.approval.as_ref().and_then(|a| a.timeout_secs).map(|t| t.to_string()).unwrap_or_default())
            write=Arc::new(|n: &mut Node, v: String| n.approval.get_or_insert_with(Default::default).timeout_secs = number(&v))/>
    }
}

/// The conclave a `conclave` node runs, by id.
#[component]
pub fn ConclaveForm(id: String) -> impl IntoView {
    let editor = expect_context::<Editor>();
    view! {
        <NodeText id=id testid="conclave-id" label="Runs the conclave (its id in the catalog)"
            read=Arc::new(|n: &Node| n.child.as_ref().map(|c| c.id.clone()).unwrap_or_default())
            write=Arc::new(|n: &mut Node, v: String| {
                if let Some(c) = n.child.as_mut() {
                    c.id = v.trim().to_string();
                }
            })/>
        <p class="hint">{move || format!("In the catalog: {}", editor.catalog.with(|c| c.iter().map(|s| s.id.clone()).collect::<Vec<_>>().join(", ")))}</p>
    }
}

/// Whether an agent's or a command's output is kept for later runs with the same
/// input.
#[component]
pub fn CacheSwitch(id: String) -> impl IntoView {
    let editor = expect_context::<Editor>();
    let cached = node_value(editor, &id, |n| {
        let setting = n.agent.as_ref().map(|a| a.cache).or(n.command.as_ref().map(|c| c.cache)).flatten();
        setting.is_some_and(CacheSetting::enabled)
    });
    let on_change = move |ev: web_sys::Event| {
        let on = event_target_checked(&ev);
        let setting = on.then_some(CacheSetting::On(true));
        edit_node(editor, &id, move |n| {
            if let Some(a) = n.agent.as_mut() {
                a.cache = setting;
            }
            if let Some(c) = n.command.as_mut() {
                c.cache = setting;
            }
        });
    };
    view! {
        <label class="check">
            <input type="checkbox" data-testid="node-cache" prop:checked=move || cached.get().unwrap_or(false) on:change=on_change/>
            "Cache: reuse the output of an earlier run with the same input"
        </label>
    }
}
