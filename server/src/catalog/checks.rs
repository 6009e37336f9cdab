//! Every check `conclave validate` makes on one conclave file, collecting all
//! problems before reporting.
//!
//! The checks work on the raw JSON value rather than the typed struct, so that one
//! broken node does not hide problems elsewhere in the file.

use conclave_shared::NodeKind;
use petgraph::graph::{DiGraph, NodeIndex};
use serde_json::Value;
use std::collections::{HashMap, HashSet, VecDeque};

use super::diagnostic::{Diagnostic, Subject, pointer};
use super::format::format_validator;
use crate::review::findings_field;
use crate::schema::{SchemaCatalog, check_schema};

/// What a file is checked against: schema search roots, known providers and tools.
#[derive(Debug, Clone)]
pub struct CatalogContext {
    /// Where `output_schema_ref`s resolve.
    pub schemas: SchemaCatalog,
    /// Provider names an agent may use.
    pub providers: Vec<String>,
    /// Built-in tool ids an agent may list.
    pub tools: Vec<String>,
}

/// Checks the text of one conclave file; `file` is only used to label diagnostics.
pub fn check_conclave_text(file: &str, text: &str, ctx: &CatalogContext) -> Vec<Diagnostic> {
    let mut out = match serde_json::from_str::<Value>(text) {
        Ok(value) => check_conclave_value(file, &value, ctx),
        Err(err) => {
            let mut d = Diagnostic::error(
                "malformed-json",
                Subject::File,
                "",
                format!("not valid JSON: {}", strip_position(&err)),
            )
            .with_help("fix the JSON syntax at the line and column shown");
            d.line_col = Some((err.line(), err.column()));
            vec![d]
        }
    };
    for d in &mut out {
        d.file = file.to_string();
    }
    out
}

/// A node as far as it could be read.
struct NodeView<'a> {
    index: usize,
    id: Option<&'a str>,
    kind: Option<NodeKind>,
    value: &'a Value,
}

impl NodeView<'_> {
    fn subject(&self) -> Subject {
        Subject::Node(self.id.unwrap_or("?").to_string())
    }
    fn path(&self) -> String {
        format!("/nodes/{}", self.index)
    }
}

fn check_conclave_value(file: &str, value: &Value, ctx: &CatalogContext) -> Vec<Diagnostic> {
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
    for node in &nodes {
        check_agent(node, ctx, &mut out);
    }
    note_contradiction_checks(&nodes, &edges, ctx, &mut out);
    out
}

/// Notes each node that will get the engine's comparison of its upstream reviewers:
/// two or more upstream agents whose output schema is findings-shaped.
fn note_contradiction_checks(nodes: &[NodeView], edges: &[EdgeView], ctx: &CatalogContext, out: &mut Vec<Diagnostic>) {
    let shaped: HashSet<&str> = nodes
        .iter()
        .filter(|n| n.kind == Some(NodeKind::Agent))
        .filter_map(|n| {
            let agent = n.value.get("agent")?;
            let schema = match (agent.get("output_schema"), agent.get("output_schema_ref").and_then(Value::as_str)) {
                (Some(inline), _) => inline.clone(),
                (None, Some(reference)) => ctx.schemas.resolve(reference).ok()?.schema,
                _ => return None,
            };
            findings_field(&schema).and(n.id)
        })
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
            ["nodes", _, "kind"] => Diagnostic::error(
                "unknown-kind",
                subject,
                path,
                format!("unknown node kind `{}`", err.instance().as_str().unwrap_or("?")),
            )
            .with_help("use one of: trigger, agent, output"),
            _ => Diagnostic::error("format", subject, path, err.to_string())
                .with_help("see docs/conclave-file.schema.json for the file format"),
        };
        out.push(diagnostic);
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

/// A readable edge: its index and endpoints (both known to exist).
struct EdgeView<'a> {
    index: usize,
    from: &'a str,
    to: &'a str,
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
        if !seen.insert((from, to)) {
            out.push(
                Diagnostic::warning(
                    "duplicate-edge",
                    Subject::Edge(label.clone()),
                    format!("/edges/{index}"),
                    format!("edge `{label}` appears more than once"),
                )
                .with_help("remove the repeated edge"),
            );
            continue;
        }
        let kind_of = |id: &str| ids.get(id).and_then(|&i| nodes[i].kind);
        if kind_of(to) == Some(NodeKind::Trigger) {
            out.push(
                Diagnostic::error(
                    "trigger-has-input",
                    Subject::Edge(label.clone()),
                    format!("/edges/{index}/to"),
                    format!("edge `{label}` leads into trigger `{to}`; a trigger only receives the run input"),
                )
                .with_help("point the edge at an agent or output node"),
            );
        }
        if kind_of(from) == Some(NodeKind::Output) {
            out.push(
                Diagnostic::error(
                    "output-has-output",
                    Subject::Edge(label.clone()),
                    format!("/edges/{index}/from"),
                    format!("edge `{label}` leaves output node `{from}`; an output node ends the graph"),
                )
                .with_help("connect from an agent instead"),
            );
        }
        edges.push(EdgeView { index, from, to });
    }
    edges
}

fn check_cycles(nodes: &[NodeView], ids: &HashMap<&str, usize>, edges: &[EdgeView], out: &mut Vec<Diagnostic>) {
    let mut graph: DiGraph<usize, usize> = DiGraph::new();
    let index_of: HashMap<usize, NodeIndex> = ids.values().map(|&i| (i, graph.add_node(i))).collect();
    for e in edges {
        graph.add_edge(index_of[&ids[e.from]], index_of[&ids[e.to]], e.index);
    }
    let mut components: Vec<Vec<NodeIndex>> = petgraph::algo::tarjan_scc(&graph)
        .into_iter()
        .filter(|c| c.len() > 1 || graph.contains_edge(c[0], c[0]))
        .collect();
    for c in &mut components {
        c.sort_by_key(|n| graph[*n]);
    }
    components.sort_by_key(|c| graph[c[0]]);
    for component in components {
        let members: HashSet<NodeIndex> = component.iter().copied().collect();
        let start = component[0];
        let (path, closing_edge) = shortest_cycle(&graph, start, &members);
        let names: Vec<&str> = path.iter().map(|n| nodes[graph[*n]].id.unwrap_or("?")).collect();
        let edge = &edges
            .iter()
            .find(|e| e.index == closing_edge)
            .map(|e| format!("{} -> {}", e.from, e.to))
            .unwrap_or_default();
        out.push(
            Diagnostic::error(
                "cycle",
                Subject::Edge(edge.clone()),
                format!("/edges/{closing_edge}"),
                format!("the graph has a cycle: {}", names.join(" -> ")),
            )
            .with_help("remove one of the edges in the cycle; a conclave must be acyclic"),
        );
    }
}

/// Shortest cycle through `start` inside one strongly connected component, as the node
/// path (starting and ending at `start`) and the index of the edge that closes it.
fn shortest_cycle(
    graph: &DiGraph<usize, usize>,
    start: NodeIndex,
    members: &HashSet<NodeIndex>,
) -> (Vec<NodeIndex>, usize) {
    let mut parent: HashMap<NodeIndex, NodeIndex> = HashMap::new();
    let mut queue = VecDeque::from([start]);
    let sorted_edges = |n: NodeIndex| {
        let mut es: Vec<_> = graph.edges(n).map(|e| (petgraph::visit::EdgeRef::target(&e), *e.weight())).collect();
        es.sort_by_key(|(_, w)| *w);
        es
    };
    while let Some(n) = queue.pop_front() {
        for (next, edge_index) in sorted_edges(n) {
            if next == start {
                let mut path = vec![n];
                let mut cur = n;
                while cur != start {
                    cur = parent[&cur];
                    path.push(cur);
                }
                path.reverse();
                path.push(start);
                return (path, edge_index);
            }
            if members.contains(&next) && next != start && !parent.contains_key(&next) {
                parent.insert(next, n);
                queue.push_back(next);
            }
        }
    }
    (vec![start, start], 0)
}

fn check_triggers(nodes: &[NodeView], ids: &HashMap<&str, usize>, edges: &[EdgeView], out: &mut Vec<Diagnostic>) {
    let triggers: Vec<&str> = nodes.iter().filter(|n| n.kind == Some(NodeKind::Trigger)).filter_map(|n| n.id).collect();
    if triggers.is_empty() {
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
    let mut reached: HashSet<&str> = triggers.iter().copied().collect();
    let mut queue: VecDeque<&str> = triggers.into_iter().collect();
    while let Some(id) = queue.pop_front() {
        for e in edges.iter().filter(|e| e.from == id) {
            if reached.insert(e.to) {
                queue.push_back(e.to);
            }
        }
    }
    for node in nodes {
        if let Some(id) = node.id
            && ids.get(id) == Some(&node.index)
            && !reached.contains(id)
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

fn check_agent(node: &NodeView, ctx: &CatalogContext, out: &mut Vec<Diagnostic>) {
    let agent = node.value.get("agent").filter(|a| a.is_object());
    let base = pointer(&node.path(), "agent");
    match (node.kind, agent) {
        (Some(NodeKind::Agent), None) => {
            out.push(
                Diagnostic::error(
                    "missing-agent",
                    node.subject(),
                    node.path(),
                    "agent node has no `agent` configuration",
                )
                .with_help("add \"agent\": {\"provider\": \"...\", \"model\": \"...\"}"),
            );
            return;
        }
        (Some(kind @ (NodeKind::Trigger | NodeKind::Output)), Some(_)) => {
            out.push(
                Diagnostic::error(
                    "unexpected-agent",
                    node.subject(),
                    base,
                    format!("a {} node cannot have an `agent` configuration", kind.as_str()),
                )
                .with_help("remove `agent`, or change the node's kind to \"agent\""),
            );
            return;
        }
        _ => {}
    }
    let Some(agent) = agent else { return };
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
                && !ctx.tools.iter().any(|t| t == tool)
            {
                out.push(
                    Diagnostic::error(
                        "unknown-tool",
                        node.subject(),
                        format!("{base}/tools/{i}"),
                        format!("unknown tool `{tool}`"),
                    )
                    .with_help(format!("built-in tools: {}", ctx.tools.join(", "))),
                );
            }
        }
    }
    check_agent_schema(node, agent, &base, ctx, out);
}

fn check_agent_schema(node: &NodeView, agent: &Value, base: &str, ctx: &CatalogContext, out: &mut Vec<Diagnostic>) {
    let inline = agent.get("output_schema");
    let reference = agent.get("output_schema_ref").and_then(Value::as_str);
    if inline.is_some() && reference.is_some() {
        out.push(
            Diagnostic::error(
                "schema-conflict",
                node.subject(),
                base,
                "both `output_schema` and `output_schema_ref` are set",
            )
            .with_help("keep one: remove `output_schema_ref` to use the inline schema, or remove `output_schema`"),
        );
    }
    if let Some(schema) = inline {
        let at = pointer(base, "output_schema");
        for problem in check_schema(schema) {
            out.push(
                Diagnostic::error(
                    "invalid-schema",
                    node.subject(),
                    format!("{at}{}", problem.pointer),
                    format!("output_schema is not a valid JSON Schema: {}", problem.message),
                )
                .with_help("fix the schema, or rebuild it with the field builder"),
            );
        }
    }
    if let Some(reference) = reference {
        let at = pointer(base, "output_schema_ref");
        match ctx.schemas.resolve(reference) {
            Err(err) => out.push(
                Diagnostic::error("unresolved-schema-ref", node.subject(), at, err.to_string())
                    .with_help("create the schema file, or fix the reference"),
            ),
            Ok(resolved) => {
                for problem in check_schema(&resolved.schema) {
                    out.push(Diagnostic::error(
                        "invalid-schema",
                        node.subject(),
                        at.clone(),
                        format!(
                            "schema `{reference}` ({}) is not a valid JSON Schema at {}: {}",
                            resolved.source,
                            if problem.pointer.is_empty() { "/" } else { &problem.pointer },
                            problem.message
                        ),
                    ));
                }
            }
        }
    }
}

/// The closest known name, if one is close enough to be a likely typo.
pub fn did_you_mean<'a>(name: &str, known: impl Iterator<Item = &'a str>) -> Option<&'a str> {
    known
        .map(|k| (strsim::jaro_winkler(name, k), k))
        .filter(|(score, _)| *score >= 0.85)
        .max_by(|a, b| a.0.total_cmp(&b.0).then_with(|| b.1.cmp(a.1)))
        .map(|(_, k)| k)
}

/// serde_json appends " at line X column Y"; the diagnostic carries those separately.
fn strip_position(err: &serde_json::Error) -> String {
    let text = err.to_string();
    match text.rfind(" at line ") {
        Some(i) => text[..i].to_string(),
        None => text,
    }
}
