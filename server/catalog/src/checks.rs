//! Every check `conclave validate` makes on one conclave file, collecting all
//! problems before reporting, and resolving each agent's output schema once on the
//! way.
//!
//! The checks work on the raw JSON value rather than the typed struct, so that one
//! broken node does not hide problems elsewhere in the file. The graph rules
//! themselves are `conclave_shared::graph`, which the editor applies too.

use conclave_shared::graph::{EdgeRule, Graph, kind_rule};
use conclave_shared::{Diagnostic, MAX_LOOP_ITERATIONS, NodeKind, Subject};
use serde_json::Value;
use std::collections::{BTreeMap, HashMap, HashSet};

use super::children;
pub use super::context::CatalogContext;
use super::format::format_validator;
use super::kinds;
use super::mcp_checks;
use super::output_schema::{AgentOutput, check_output_schema};
use super::pointer;
use super::views::{EdgeView, NodeView, article, did_you_mean};
use conclave_shared::mcp::MCP_TOOL_PREFIX;

/// What checking one conclave found: every diagnostic, and the output schemas that
/// resolved and are valid, by agent node id.
#[derive(Debug, Clone, Default)]
pub struct Checked {
    /// Errors, warnings and notes, in the order found.
    pub diagnostics: Vec<Diagnostic>,
    /// Usable output schemas by agent node id.
    pub outputs: BTreeMap<String, AgentOutput>,
}

/// Checks the text of one conclave file; `file` is only used to label diagnostics.
pub fn check_conclave_text(file: &str, text: &str, ctx: &CatalogContext) -> Vec<Diagnostic> {
    match serde_json::from_str::<Value>(text) {
        Ok(value) => check_conclave_value(file, &value, ctx).diagnostics,
        Err(err) => vec![malformed(file, &err)],
    }
}

/// The diagnostic of text that is not JSON.
pub fn malformed(file: &str, err: &serde_json::Error) -> Diagnostic {
    let mut d =
        Diagnostic::error("malformed-json", Subject::File, "", format!("not valid JSON: {}", strip_position(err)))
            .with_help("fix the JSON syntax at the line and column shown");
    d.line_col = Some((err.line(), err.column()));
    d.file = file.to_string();
    d
}

/// Checks one conclave document; `file` labels the diagnostics.
pub fn check_conclave_value(file: &str, value: &Value, ctx: &CatalogContext) -> Checked {
    let mut out = Vec::new();
    let nodes: Vec<NodeView> = value
        .get("nodes")
        .and_then(Value::as_array)
        .map(|arr| {
            arr.iter()
                .enumerate()
                .map(|(index, v)| NodeView {
                    index,
                    id: v.get("id").and_then(Value::as_str),
                    kind: v.get("kind").and_then(|k| serde_json::from_value(k.clone()).ok()),
                    value: v,
                })
                .collect()
        })
        .unwrap_or_default();
    check_format(value, &nodes, &mut out);
    check_file_name(file, value, &mut out);
    let ids = check_node_ids(&nodes, &mut out);
    let edges = check_edges(value, &ids, &nodes, &mut out);
    check_cycles(&nodes, &ids, &edges, &mut out);
    check_triggers(&nodes, &ids, &edges, &mut out);
    mcp_checks::check_servers(value, &mut out);
    let servers = mcp_checks::declared_servers(value);
    let mut outputs = BTreeMap::new();
    for node in &nodes {
        check_configs(node, &mut out);
        let output = match node.kind {
            Some(NodeKind::Agent) => check_agent(node, ctx, &servers, &mut out),
            Some(NodeKind::Command) => kinds::check_command(node, ctx, &mut out),
            _ => None,
        };
        if let Some(output) = output
            && let Some(id) = node.id.filter(|id| ids.get(id) == Some(&node.index))
        {
            outputs.insert(id.to_string(), output);
        }
    }
    kinds::check_routes(&nodes, &ids, &edges, &outputs, &mut out);
    kinds::check_loops(&nodes, &ids, &edges, &outputs, &mut out);
    children::check_children(value, &nodes, ctx, &mut out);
    note_contradiction_checks(&nodes, &edges, &outputs, &mut out);
    for d in &mut out {
        d.file = file.to_string();
    }
    Checked { diagnostics: out, outputs }
}

/// Notes each node that will get the engine's comparison of its upstream reviewers:
/// two or more upstream agents whose output schema is findings-shaped, or analyzer
/// commands.
fn note_contradiction_checks(
    nodes: &[NodeView],
    edges: &[EdgeView],
    outputs: &BTreeMap<String, AgentOutput>,
    out: &mut Vec<Diagnostic>,
) {
    // Analyzer commands (output read as findings) are compared like agents.
    let analyzer = |n: &NodeView| {
        let parse = n.value.get("command").and_then(|c| c.get("parse")).cloned();
        n.kind == Some(NodeKind::Command)
            && parse
                .and_then(|p| serde_json::from_value::<conclave_shared::CommandParse>(p).ok())
                .is_some_and(|p| p.findings_shaped())
    };
    let shaped: HashSet<&str> = nodes
        .iter()
        .filter(|n| n.kind == Some(NodeKind::Agent) || analyzer(n))
        .filter_map(|n| n.id.filter(|id| analyzer(n) || outputs.get(*id).is_some_and(|o| o.findings_field.is_some())))
        .collect();
    for node in nodes {
        let Some(id) = node.id else { continue };
        let upstream: Vec<&str> =
            edges.iter().filter(|e| e.to == id && shaped.contains(e.from)).map(|e| e.from).collect();
        if upstream.len() >= 2 {
            out.push(Diagnostic::note(
                "contradiction-check",
                node.subject(),
                node.path(),
                format!("before `{id}` runs, the engine compares the findings of {} and passes contradictions, disagreements and duplicates to it", upstream.join(", ")),
            ));
        }
    }
}

/// Structural problems, from the published format schema.
fn check_format(value: &Value, nodes: &[NodeView], out: &mut Vec<Diagnostic>) {
    let Some(validator) = format_validator() else { return };
    for err in validator.iter_errors(value) {
        let path = err.instance_path().as_str().to_string();
        let segments: Vec<&str> = path.split('/').skip(1).collect();
        let node = match segments.as_slice() {
            ["nodes", i, ..] => i.parse::<usize>().ok().and_then(|i| nodes.get(i)),
            _ => None,
        };
        let subject = match (segments.as_slice(), node) {
            (_, Some(n)) => n.subject(),
            (["edges", i, ..], _) => Subject::Edge(edge_label_at(value, i)),
            _ => Subject::File,
        };
        let diagnostic = match segments.as_slice() {
            ["nodes", _, "loop"] if err.to_string().contains("\"max_iterations\"") => Diagnostic::error(
                "loop-without-max",
                subject,
                format!("{path}/max_iterations"),
                "the loop has no `max_iterations`, so nothing would stop it",
            )
            .with_help(format!("add \"max_iterations\": a number from 1 to {MAX_LOOP_ITERATIONS}")),
            ["nodes", _, "loop", "max_iterations"] => Diagnostic::error(
                "loop-max-iterations",
                subject,
                path,
                format!("`max_iterations` is {}; a loop runs from 1 to {MAX_LOOP_ITERATIONS} times", err.instance()),
            )
            .with_help(format!("give a number from 1 to {MAX_LOOP_ITERATIONS}")),
            ["nodes", _, "kind"] => Diagnostic::error(
                "unknown-kind",
                subject,
                path,
                format!("unknown node kind `{}`", err.instance().as_str().unwrap_or("?")),
            )
            .with_help(format!("use one of: {}", NodeKind::ALL.map(NodeKind::as_str).join(", "))),
            ["settings", "budget"] => match bad_budget_limit(err.instance()) {
                Some((limit, given)) => budget_error(subject, &format!("{path}/{limit}"), limit, &given),
                None => Diagnostic::error("format", subject, path, err.to_string()),
            },
            ["nodes", _, "command", "analyzer", "severity", ..] => Diagnostic::error(
                "analyzer-severity",
                subject,
                path,
                err.to_string(),
            )
            .with_help("a severity map takes `rules` (rule ids or prefixes to severities), `levels` (the tool's levels to severities) and `default` (a severity); each severity is blocker, major, minor or nit"),
            ["nodes", _, "command", "sandbox", ..] => Diagnostic::error("sandbox", subject, path, err.to_string())
                .with_help("a sandbox block takes `network` (true or false), `read` and `write` (lists of paths), `env` (names to text) and `limits` (cpu_secs, memory_mb, file_size_mb, open_files, processes)"),
            ["nodes", _, "agent", limit @ "max_cost"] => {
                budget_error(subject, &path, limit, &err.instance().to_string())
            }
            _ => Diagnostic::error("format", subject, path, err.to_string())
                .with_help("see docs/conclave-file.schema.json for the file format"),
        };
        out.push(diagnostic);
    }
}

/// The first limit of a `settings.budget` that is not one, with its value.
fn bad_budget_limit(budget: &Value) -> Option<(&'static str, String)> {
    let cost = budget.get("max_cost_usd").filter(|v| !v.is_null());
    if let Some(v) = cost.filter(|v| v.as_f64().is_none_or(|usd| usd < 0.0)) {
        return Some(("max_cost_usd", v.to_string()));
    }
    let tokens = budget.get("max_tokens").filter(|v| !v.is_null());
    if let Some(v) = tokens.filter(|v| v.as_u64().is_none_or(|n| n < 1)) {
        return Some(("max_tokens", v.to_string()));
    }
    let calls = budget.get("max_tool_calls").filter(|v| !v.is_null());
    calls.filter(|v| v.as_u64().is_none()).map(|v| ("max_tool_calls", v.to_string()))
}

/// A budget limit that is not one.
fn budget_error(subject: Subject, path: &str, limit: &str, given: &str) -> Diagnostic {
    Diagnostic::error("budget", subject, path, format!("`{limit}` is {given}: {}", budget_rule(limit)))
        .with_help(format!("give {}, or remove `{limit}` for no limit", budget_rule(limit)))
}

/// What a budget limit must be.
fn budget_rule(limit: &str) -> &'static str {
    match limit {
        "max_tokens" => "a whole number of tokens from 1",
        "max_tool_calls" => "a whole number of tool calls from 0",
        _ => "an amount of US dollars from 0, such as 0.5",
    }
}

fn edge_label_at(value: &Value, index: &str) -> String {
    let edge = index.parse::<usize>().ok().and_then(|i| value.get("edges")?.get(i));
    let end = |k: &str| edge.and_then(|e| e.get(k)).and_then(Value::as_str).unwrap_or("?").to_string();
    format!("{} -> {}", end("from"), end("to"))
}

fn check_file_name(file: &str, value: &Value, out: &mut Vec<Diagnostic>) {
    let stem =
        std::path::Path::new(file).file_name().and_then(|n| n.to_str()).and_then(|n| n.strip_suffix(".conclave.json"));
    if let (Some(stem), Some(id)) = (stem, value.get("id").and_then(Value::as_str))
        && stem != id
    {
        out.push(
            Diagnostic::warning(
                "id-mismatch",
                Subject::File,
                "/id",
                format!("id `{id}` does not match the file name `{stem}.conclave.json`"),
            )
            .with_help(format!("rename the file to `{id}.conclave.json` or set \"id\": \"{stem}\"")),
        );
    }
}

/// Reports duplicate and empty ids; returns the index of the first node with each id.
fn check_node_ids<'a>(nodes: &[NodeView<'a>], out: &mut Vec<Diagnostic>) -> HashMap<&'a str, usize> {
    let mut ids: HashMap<&str, usize> = HashMap::new();
    for node in nodes {
        let Some(id) = node.id else { continue };
        if id.trim().is_empty() {
            out.push(
                Diagnostic::error("empty-id", node.subject(), pointer(&node.path(), "id"), "node id is empty")
                    .with_help("give the node a short unique id such as `security`"),
            );
            continue;
        }
        if let Some(&first) = ids.get(id) {
            out.push(
                Diagnostic::error(
                    "duplicate-id",
                    node.subject(),
                    pointer(&node.path(), "id"),
                    format!("node id `{id}` is already used by /nodes/{first}"),
                )
                .with_help("give every node a unique id"),
            );
        } else {
            ids.insert(id, node.index);
        }
    }
    ids
}

fn check_edges<'a>(
    value: &'a Value,
    ids: &HashMap<&str, usize>,
    nodes: &[NodeView],
    out: &mut Vec<Diagnostic>,
) -> Vec<EdgeView<'a>> {
    let mut edges = Vec::new();
    let mut seen = HashSet::new();
    let Some(arr) = value.get("edges").and_then(Value::as_array) else { return edges };
    for (index, edge) in arr.iter().enumerate() {
        let (Some(from), Some(to)) = (edge.get("from").and_then(Value::as_str), edge.get("to").and_then(Value::as_str))
        else {
            continue; // Reported by the format check.
        };
        let label = format!("{from} -> {to}");
        let mut ok = true;
        for (end, id) in [("from", from), ("to", to)] {
            if !ids.contains_key(id) {
                ok = false;
                let mut d = Diagnostic::error(
                    "missing-node",
                    Subject::Edge(label.clone()),
                    format!("/edges/{index}/{end}"),
                    format!("edge `{label}` points to missing node `{id}`"),
                );
                d = match did_you_mean(id, ids.keys().copied()) {
                    Some(near) => d.with_help(format!("did you mean `{near}`?")),
                    None => d.with_help("add the node or remove the edge"),
                };
                out.push(d);
            }
        }
        if !ok {
            continue;
        }
        if !seen.insert((from, to, edge.get("case").and_then(Value::as_str))) {
            out.push(
                Diagnostic::warning(
                    "duplicate-edge",
                    Subject::Edge(label.clone()),
                    format!("/edges/{index}"),
                    EdgeRule::Duplicate.message(from, to),
                )
                .with_help("remove the repeated edge"),
            );
            continue;
        }
        let kind_of = |id: &str| ids.get(id).and_then(|&i| nodes[i].kind);
        match kind_rule(kind_of(from), kind_of(to)) {
            Some(rule @ EdgeRule::IntoTrigger) => out.push(
                Diagnostic::error(
                    "trigger-has-input",
                    Subject::Edge(label.clone()),
                    format!("/edges/{index}/to"),
                    rule.message(from, to),
                )
                .with_help("point the edge at an agent or output node"),
            ),
            Some(rule @ EdgeRule::FromOutput) => out.push(
                Diagnostic::error(
                    "output-has-output",
                    Subject::Edge(label.clone()),
                    format!("/edges/{index}/from"),
                    rule.message(from, to),
                )
                .with_help("connect from an agent instead"),
            ),
            _ => {}
        }
        edges.push(EdgeView { index, from, to, case: edge.get("case").and_then(Value::as_str) });
    }
    edges
}

/// The graph of the nodes with valid ids and the readable edges between them.
fn graph_of(nodes: &[NodeView], ids: &HashMap<&str, usize>, edges: &[EdgeView]) -> Graph {
    let mut graph = Graph::new(nodes.len());
    for e in edges {
        graph.add_edge(ids[e.from], ids[e.to], e.index);
    }
    graph
}

fn check_cycles(nodes: &[NodeView], ids: &HashMap<&str, usize>, edges: &[EdgeView], out: &mut Vec<Diagnostic>) {
    for cycle in graph_of(nodes, ids, edges).cycles() {
        let names: Vec<&str> = cycle.path.iter().map(|&n| nodes[n].id.unwrap_or("?")).collect();
        let edge = edges
            .iter()
            .find(|e| e.index == cycle.closing_edge)
            .map(|e| format!("{} -> {}", e.from, e.to))
            .unwrap_or_default();
        out.push(
            Diagnostic::error(
                "cycle",
                Subject::Edge(edge),
                format!("/edges/{}", cycle.closing_edge),
                format!("the graph has a cycle: {}", names.join(" -> ")),
            )
            .with_help("remove one of the edges in the cycle; a conclave must be acyclic"),
        );
    }
}

fn check_triggers(nodes: &[NodeView], ids: &HashMap<&str, usize>, edges: &[EdgeView], out: &mut Vec<Diagnostic>) {
    let triggers: Vec<usize> = nodes
        .iter()
        .filter(|n| n.kind == Some(NodeKind::Trigger))
        .filter_map(|n| n.id.and_then(|id| ids.get(id).copied()))
        .collect();
    if !nodes.iter().any(|n| n.kind == Some(NodeKind::Trigger) && n.id.is_some()) {
        out.push(
            Diagnostic::error(
                "no-trigger",
                Subject::File,
                "/nodes",
                "the conclave has no trigger node, so nothing can start a run",
            )
            .with_help("add a node with \"kind\": \"trigger\" and connect it to the first agents"),
        );
        return;
    }
    let mut graph = graph_of(nodes, ids, edges);
    // A loop reaches its body's nodes, which no edge enters from outside.
    for node in nodes.iter().filter(|n| n.kind == Some(NodeKind::Loop)) {
        let body = node.value.pointer("/loop/body").and_then(Value::as_array).into_iter().flatten();
        for member in body.filter_map(Value::as_str).filter_map(|id| ids.get(id)) {
            graph.add_edge(node.index, *member, usize::MAX);
        }
    }
    let reached = graph.reachable(triggers);
    for node in nodes {
        if let Some(id) = node.id
            && ids.get(id) == Some(&node.index)
            && !reached[node.index]
        {
            out.push(
                Diagnostic::warning(
                    "unreachable",
                    node.subject(),
                    node.path(),
                    format!("node `{id}` cannot be reached from any trigger and will never run"),
                )
                .with_help("connect it to the graph or delete it"),
            );
        }
    }
}

/// The configuration object each kind carries, under its kind's name.
/// Each kind's configuration key, the codes of its absence and of its presence on
/// another kind, and how to add it.
const CONFIGS: [(NodeKind, &str, [&str; 2], &str); 5] = [
    (
        NodeKind::Agent,
        "agent",
        ["missing-agent", "unexpected-agent"],
        r#"add "agent": {"provider": "...", "model": "..."}"#,
    ),
    (
        NodeKind::Route,
        "route",
        ["missing-route", "unexpected-route"],
        r#"add "route": {"cases": [{"name": "...", "when": {"pointer": "/...", "op": "exists"}}]}"#,
    ),
    (
        NodeKind::Command,
        "command",
        ["missing-command", "unexpected-command"],
        r#"add "command": {"argv": ["program", "argument"]}"#,
    ),
    (
        NodeKind::Loop,
        "loop",
        ["missing-loop", "unexpected-loop"],
        r#"add "loop": {"body": ["..."], "until": {"pointer": "/...", "op": "exists"}, "max_iterations": 3}"#,
    ),
    (NodeKind::Conclave, "conclave", ["missing-conclave", "unexpected-conclave"], r#"add "conclave": {"id": "..."}"#),
];

/// Each kind's configuration is present on nodes of that kind, and on no other (an
/// approval's is optional).
fn check_configs(node: &NodeView, out: &mut Vec<Diagnostic>) {
    let Some(kind) = node.kind else { return };
    if kind != NodeKind::Approval && node.value.get("approval").is_some() {
        out.push(
            Diagnostic::error(
                "unexpected-approval",
                node.subject(),
                pointer(&node.path(), "approval"),
                format!("{} {} node cannot have an `approval` configuration", article(kind.as_str()), kind.as_str()),
            )
            .with_help("remove `approval`, or change the node's kind to \"approval\""),
        );
    }
    for (owner, key, [missing, unexpected], add) in CONFIGS {
        let present = node.value.get(key).is_some_and(Value::is_object);
        if kind == owner && !present {
            out.push(
                Diagnostic::error(
                    missing,
                    node.subject(),
                    node.path(),
                    format!("{key} node has no `{key}` configuration"),
                )
                .with_help(add),
            );
        } else if kind != owner && node.value.get(key).is_some() {
            out.push(
                Diagnostic::error(
                    unexpected,
                    node.subject(),
                    pointer(&node.path(), key),
                    format!(
                        "{} {} node cannot have {} `{key}` configuration",
                        article(kind.as_str()),
                        kind.as_str(),
                        article(key)
                    ),
                )
                .with_help(format!("remove `{key}`, or change the node's kind to \"{key}\"")),
            );
        }
    }
}

/// Checks an agent's configuration; returns its output schema when it has a usable one.
fn check_agent(
    node: &NodeView,
    ctx: &CatalogContext,
    servers: &[&str],
    out: &mut Vec<Diagnostic>,
) -> Option<AgentOutput> {
    let agent = node.value.get("agent").filter(|a| a.is_object());
    let base = pointer(&node.path(), "agent");
    let agent = agent?;
    if let Some(provider) = agent.get("provider").and_then(Value::as_str)
        && !ctx.providers.iter().any(|p| p == provider)
    {
        let known = ctx.providers.join(", ");
        let help = match did_you_mean(provider, ctx.providers.iter().map(String::as_str)) {
            Some(near) => format!("did you mean `{near}`? known providers: {known}"),
            None => format!("known providers: {known}"),
        };
        out.push(
            Diagnostic::error(
                "unknown-provider",
                node.subject(),
                pointer(&base, "provider"),
                format!("unknown provider `{provider}`"),
            )
            .with_help(help),
        );
    }
    if let Some(tools) = agent.get("tools").and_then(Value::as_array) {
        for (i, tool) in tools.iter().enumerate() {
            if let Some(tool) = tool.as_str()
                && tool.starts_with(MCP_TOOL_PREFIX)
            {
                mcp_checks::check_tool(node, &base, i, tool, servers, out);
            } else if let Some(tool) = tool.as_str()
                && !ctx.tools.iter().any(|t| t == tool)
            {
                out.push(
                    Diagnostic::error(
                        "unknown-tool",
                        node.subject(),
                        format!("{base}/tools/{i}"),
                        format!("unknown tool `{tool}`"),
                    )
                    .with_help(match did_you_mean(tool, ctx.tools.iter().map(String::as_str)) {
                        Some(near) => format!(
                            "did you mean `{near}`? built-in tools: {}; an MCP server's tool is `mcp:SERVER/TOOL`",
                            ctx.tools.join(", ")
                        ),
                        None => format!(
                            "built-in tools: {}; an MCP server's tool is `mcp:SERVER/TOOL`",
                            ctx.tools.join(", ")
                        ),
                    }),
                );
            }
        }
    }
    check_dialect(node, agent, &base, out);
    check_output_schema(node, agent, &base, &ctx.schemas, out)
}

/// Warns about a structured-output `dialect` on an agent whose provider has none.
fn check_dialect(node: &NodeView, agent: &Value, base: &str, out: &mut Vec<Diagnostic>) {
    if let Some(dialect) = agent.get("dialect").and_then(Value::as_str)
        && let Some(provider) = agent.get("provider").and_then(Value::as_str)
        && provider != "openai"
    {
        out.push(
            Diagnostic::warning(
                "dialect-ignored",
                node.subject(),
                pointer(base, "dialect"),
                format!("`dialect` is `{dialect}`, but only `openai` agents use one; `{provider}` ignores it"),
            )
            .with_help("remove `dialect`, or switch the agent to the `openai` provider"),
        );
    }
}

/// serde_json appends " at line X column Y"; the diagnostic carries those separately.
fn strip_position(err: &serde_json::Error) -> String {
    let text = err.to_string();
    match text.rfind(" at line ") {
        Some(i) => text[..i].to_string(),
        None => text,
    }
}
