//! The checks of route and command nodes: a route's cases, predicates and the
//! edges that carry its cases; a command's program (against the allowed programs,
//! when a server limits them), its output schema, its analyzer block (its globs and
//! its severity map's levels and rule keys) and (through `sandbox_block.rs`) its
//! sandbox block.

use conclave_shared::command::{FILES_PLACEHOLDER, SEMGREP_RULES_PLACEHOLDER};
use conclave_shared::route::pointer_head;
use conclave_shared::{CommandParse, Diagnostic, NodeKind, PredicateOp, Subject};
use serde_json::Value;
use std::collections::{BTreeMap, HashMap, HashSet};

use super::context::CatalogContext;
use super::output_schema::{AgentOutput, check_output_schema};
use super::pointer;
use super::sandbox_block::check_sandbox;
use super::views::{EdgeView, NodeView, article, did_you_mean};

/// Checks a command's configuration; returns its output schema when `json` output
/// has a usable one.
pub(crate) fn check_command(node: &NodeView, ctx: &CatalogContext, out: &mut Vec<Diagnostic>) -> Option<AgentOutput> {
    let command = node.value.get("command").filter(|c| c.is_object())?;
    let base = pointer(&node.path(), "command");
    let program = command.get("argv").and_then(|a| a.get(0)).and_then(Value::as_str);
    match program {
        Some(program) if program.trim().is_empty() => out.push(
            Diagnostic::error(
                "empty-program",
                node.subject(),
                format!("{base}/argv/0"),
                "the command's program is empty",
            )
            .with_help("put the program first in `argv`, such as [\"git\", \"diff\", \"--check\"]"),
        ),
        Some(program) if ctx.programs.as_ref().is_some_and(|list| !list.iter().any(|p| p == program)) => {
            let allowed = ctx.programs.as_deref().unwrap_or_default();
            out.push(
                Diagnostic::error(
                    "command-not-allowed",
                    node.subject(),
                    format!("{base}/argv/0"),
                    format!("`{program}` is not among the programs this server may run"),
                )
                .with_help(if allowed.is_empty() {
                    "this server runs no commands: start it with `conclave serve --allow-commands PROGRAM`, or run the conclave from its file with `conclave run`".to_string()
                } else {
                    format!("allowed programs: {}; a server allows more with `--allow-commands`", allowed.join(", "))
                }),
            );
        }
        _ => {}
    }
    let parse = command.get("parse").and_then(Value::as_str).unwrap_or("text");
    check_analyzer(node, command, &base, parse, out);
    check_sandbox(node, command, &base, out);
    let has_schema = command.get("output_schema").is_some() || command.get("output_schema_ref").is_some();
    if has_schema && parse != "json" {
        out.push(
            Diagnostic::warning(
                "schema-unused",
                node.subject(),
                pointer(&base, "parse"),
                format!("the command's output is read as `{parse}`, so its output schema is never checked"),
            )
            .with_help("set \"parse\": \"json\", or remove the schema"),
        );
        return None;
    }
    check_output_schema(node, command, &base, &ctx.schemas, out)
}

/// Checks a command's `analyzer` block: an analyzer's output must be read as findings,
/// its globs must parse, and `{files}` in `argv` means something only in an analyzer.
fn check_analyzer(node: &NodeView, command: &Value, base: &str, parse: &str, out: &mut Vec<Diagnostic>) {
    let argv = command.get("argv").and_then(Value::as_array);
    let position = |placeholder: &str| argv.and_then(|argv| argv.iter().position(|a| a.as_str() == Some(placeholder)));
    let Some(analyzer) = command.get("analyzer").filter(|a| a.is_object()) else {
        let placeholders = [
            (FILES_PLACEHOLDER, "files-placeholder-unused", "the changed files"),
            (SEMGREP_RULES_PLACEHOLDER, "rules-placeholder-unused", "the directory of Conclave's Semgrep rules"),
        ];
        for (placeholder, code, what) in placeholders {
            let Some(at) = position(placeholder) else { continue };
            out.push(
                Diagnostic::warning(
                    code,
                    node.subject(),
                    format!("{base}/argv/{at}"),
                    format!("`{placeholder}` is replaced by {what} only in an analyzer lane"),
                )
                .with_help(r#"add "analyzer": {"files": ["**/*.sh"]} to the command, or remove the argument"#),
            );
        }
        return;
    };
    if matches!(parse, "text" | "json") {
        out.push(
            Diagnostic::error(
                "analyzer-not-findings",
                node.subject(),
                pointer(base, "parse"),
                format!("an analyzer's output must be read as findings, but this one is read as `{parse}`"),
            )
            .with_help(r#"set "parse" to "sarif", "diagnostics", "shellcheck" or "cargo""#),
        );
    }
    let globs = analyzer.get("files").and_then(Value::as_array).into_iter().flatten();
    for (i, glob) in globs.enumerate().filter_map(|(i, g)| Some((i, g.as_str()?))) {
        if let Err(e) = globset::Glob::new(glob) {
            out.push(
                Diagnostic::error(
                    "analyzer-glob",
                    node.subject(),
                    format!("{base}/analyzer/files/{i}"),
                    format!("`{glob}` is not a glob: {}", e.kind()),
                )
                .with_help("write globs such as \"**/*.sh\" or \"*.py\""),
            );
        }
    }
    if let Some(map) = analyzer.get("severity").filter(|m| m.is_object()) {
        check_severity_map(node, map, &format!("{base}/analyzer/severity"), parse, out);
    }
}

/// Checks an analyzer's `severity` map beyond its shape (which the format schema
/// checks): each key of `levels` a level its reader gives, each key of `rules` a rule
/// id or prefix (not empty, no spaces).
fn check_severity_map(node: &NodeView, map: &Value, at: &str, parse: &str, out: &mut Vec<Diagnostic>) {
    let reading = CommandParse::ALL.into_iter().find(|p| p.as_str() == parse);
    let levels = reading.map(CommandParse::levels).unwrap_or_default();
    for key in map.get("levels").and_then(Value::as_object).into_iter().flat_map(|m| m.keys()) {
        if reading.is_some() && !levels.contains(&key.as_str()) {
            out.push(
                Diagnostic::error(
                    "analyzer-severity-level",
                    node.subject(),
                    pointer(&pointer(at, "levels"), key),
                    format!("`{key}` is not a level of `{parse}` output, so this entry would never apply"),
                )
                .with_help(if levels.is_empty() {
                    "an analyzer's output must be read as findings first".to_string()
                } else {
                    format!("`{parse}` output has the levels {}", levels.join(", "))
                }),
            );
        }
    }
    for key in map.get("rules").and_then(Value::as_object).into_iter().flat_map(|m| m.keys()) {
        if key.trim().is_empty() || key.chars().any(char::is_whitespace) {
            out.push(
                Diagnostic::error(
                    "analyzer-severity-rule",
                    node.subject(),
                    pointer(&pointer(at, "rules"), key),
                    format!("`{key}` is not a rule id or prefix: it is empty or holds a space"),
                )
                .with_help("write a rule id (\"F401\") or a prefix of rule ids (\"F\", \"E9\", \"SC2\")"),
            );
        }
    }
}

/// Checks every route: unique case names, predicates that read an upstream node's
/// output at a path it can have, operands that suit their operator, an edge for
/// every case; and every edge's `case`: present on the edges out of a route, naming
/// one of its cases, and absent elsewhere.
pub(crate) fn check_routes(
    nodes: &[NodeView],
    ids: &HashMap<&str, usize>,
    edges: &[EdgeView],
    outputs: &BTreeMap<String, AgentOutput>,
    out: &mut Vec<Diagnostic>,
) {
    for node in nodes.iter().filter(|n| n.kind == Some(NodeKind::Route)) {
        let Some(route) = node.value.get("route").filter(|r| r.is_object()) else { continue };
        let Some(id) = node.id else { continue };
        let base = pointer(&node.path(), "route");
        let upstream: Vec<&str> = edges.iter().filter(|e| e.to == id).map(|e| e.from).collect();
        let mut names: Vec<(&str, String)> = Vec::new();
        for (i, case) in route.get("cases").and_then(Value::as_array).into_iter().flatten().enumerate() {
            let at = format!("{base}/cases/{i}");
            if let Some(name) = case.get("name").and_then(Value::as_str) {
                names.push((name, at.clone()));
            }
            if let Some(when) = case.get("when").filter(|w| w.is_object()) {
                let readable = Readable { ids: &upstream, of: "upstream of this route" };
                check_predicate(node, when, &format!("{at}/when"), &readable, nodes, ids, outputs, out);
            }
        }
        if let Some(name) = route.get("otherwise").and_then(Value::as_str) {
            names.push((name, pointer(&base, "otherwise")));
        }
        let mut seen = HashSet::new();
        for (name, at) in &names {
            if !seen.insert(*name) {
                out.push(
                    Diagnostic::error(
                        "duplicate-case",
                        node.subject(),
                        at.clone(),
                        format!("case `{name}` is named twice"),
                    )
                    .with_help("give every case of a route its own name"),
                );
            } else if !edges.iter().any(|e| e.from == id && e.case == Some(*name)) {
                out.push(
                    Diagnostic::error(
                        "route-case-without-edge",
                        node.subject(),
                        at.clone(),
                        format!("no edge leaves route `{id}` for case `{name}`, so taking it would run nothing"),
                    )
                    .with_help(format!("connect `{id}` to the node that case `{name}` should run, with \"case\": \"{name}\" on the edge, or remove the case")),
                );
            }
        }
        check_route_edges(id, &names, edges, out);
    }
    for edge in edges.iter().filter(|e| e.case.is_some()) {
        let from_route = ids.get(edge.from).is_some_and(|&i| nodes[i].kind == Some(NodeKind::Route));
        if !from_route {
            let label = format!("{} -> {}", edge.from, edge.to);
            out.push(
                Diagnostic::error(
                    "case-on-plain-edge",
                    Subject::Edge(label.clone()),
                    format!("/edges/{}/case", edge.index),
                    format!("edge `{label}` has a `case`, but `{}` is not a route", edge.from),
                )
                .with_help("remove `case`: only edges out of a route node carry one"),
            );
        }
    }
}

/// Checks the edges out of route `id`, whose cases are `names`: each carries one of
/// them.
fn check_route_edges(id: &str, names: &[(&str, String)], edges: &[EdgeView], out: &mut Vec<Diagnostic>) {
    for edge in edges.iter().filter(|e| e.from == id) {
        let label = format!("{} -> {}", edge.from, edge.to);
        let known = names.iter().map(|(n, _)| *n);
        match edge.case {
            None => out.push(
                Diagnostic::error(
                    "edge-without-case",
                    Subject::Edge(label.clone()),
                    format!("/edges/{}", edge.index),
                    format!("edge `{label}` leaves route `{id}` without a `case`, so no case ever takes it"),
                )
                .with_help(format!(
                    "add \"case\" with one of: {}",
                    names.iter().map(|(n, _)| *n).collect::<Vec<_>>().join(", ")
                )),
            ),
            Some(case) if !names.iter().any(|(n, _)| *n == case) => {
                let help = match did_you_mean(case, known) {
                    Some(near) => format!("did you mean `{near}`?"),
                    None => format!(
                        "route `{id}` has the cases: {}",
                        names.iter().map(|(n, _)| *n).collect::<Vec<_>>().join(", ")
                    ),
                };
                out.push(
                    Diagnostic::error(
                        "unknown-case",
                        Subject::Edge(label.clone()),
                        format!("/edges/{}/case", edge.index),
                        format!("edge `{label}` names case `{case}`, which route `{id}` does not have"),
                    )
                    .with_help(help),
                );
            }
            Some(_) => {}
        }
    }
}

/// Checks one predicate: its pointer reads an upstream node (and a property that
/// node's output schema has), and its `value` suits its operator.
#[allow(clippy::too_many_arguments)]
fn check_predicate(
    node: &NodeView,
    when: &Value,
    at: &str,
    readable: &Readable,
    nodes: &[NodeView],
    ids: &HashMap<&str, usize>,
    outputs: &BTreeMap<String, AgentOutput>,
    out: &mut Vec<Diagnostic>,
) {
    let upstream = readable.ids;
    if let Some(path) = when.get("pointer").and_then(Value::as_str) {
        let at = pointer(at, "pointer");
        match pointer_head(path) {
            None => out.push(
                Diagnostic::error(
                    "unknown-predicate-path",
                    node.subject(),
                    at,
                    format!("pointer `{path}` does not start with `/` and the id of an upstream node"),
                )
                .with_help(format!("start it with one of: {}", slash_list(upstream))),
            ),
            Some(head) if !upstream.contains(&head.as_str()) => {
                let help = match did_you_mean(&head, upstream.iter().copied()) {
                    Some(near) => format!("did you mean `/{near}`?"),
                    None if upstream.is_empty() => format!("no node is {} yet", readable.of),
                    None => format!("the nodes {} are: {}", readable.of, slash_list(upstream)),
                };
                out.push(
                    Diagnostic::error(
                        "unknown-predicate-path",
                        node.subject(),
                        at,
                        format!("pointer `{path}` reads `{head}`, which is not {}", readable.of),
                    )
                    .with_help(help),
                );
            }
            Some(head) => {
                let kind = ids.get(head.as_str()).and_then(|&i| nodes[i].kind);
                if let Some(schema) = outputs.get(&head).map(|o| &o.schema)
                    && kind != Some(NodeKind::Trigger)
                    && let Some((missing, known)) = missing_property(schema, path)
                {
                    let help = match did_you_mean(&missing, known.iter().map(String::as_str)) {
                        Some(near) => format!("did you mean `{near}`? `{head}` outputs: {}", known.join(", ")),
                        None => format!("`{head}`'s output schema has: {}", known.join(", ")),
                    };
                    out.push(
                        Diagnostic::error(
                            "unknown-predicate-path",
                            node.subject(),
                            at,
                            format!("pointer `{path}` reads `{missing}`, which `{head}`'s output schema does not have"),
                        )
                        .with_help(help),
                    );
                }
            }
        }
    }
    let Some(op) = when.get("op").and_then(|o| serde_json::from_value::<PredicateOp>(o.clone()).ok()) else { return };
    let value = when.get("value");
    let problem = match (op.operand(), value) {
        (None, Some(_)) => Some(format!("`{}` takes no `value`", op.as_str())),
        (Some(operand), None) => Some(format!("`{}` needs a `value`: {}", op.as_str(), operand.describe())),
        (Some(operand), Some(v)) if !operand.accepts(v) => {
            Some(format!("`{}` compares with {}, not {v}", op.as_str(), operand.describe()))
        }
        _ => None,
    };
    if let Some(problem) = problem {
        out.push(
            Diagnostic::error("predicate-value", node.subject(), pointer(at, "value"), problem)
                .with_help("equals takes any value, one_of an array, gt/gte/lt/lte a number, exists and missing none"),
        );
    }
}

/// The nodes a predicate may read, and how messages say where they are.
struct Readable<'a> {
    ids: &'a [&'a str],
    of: &'a str,
}

/// The kinds a loop's body may hold.
const BODY_KINDS: [NodeKind; 3] = [NodeKind::Agent, NodeKind::Command, NodeKind::Route];

/// Checks every loop: its body names nodes that exist, of a kind a body may hold, in
/// no other loop's body; no edge crosses into or out of a body; and its predicate
/// reads a body node's output at a path it can have.
pub(crate) fn check_loops(
    nodes: &[NodeView],
    ids: &HashMap<&str, usize>,
    edges: &[EdgeView],
    outputs: &BTreeMap<String, AgentOutput>,
    out: &mut Vec<Diagnostic>,
) {
    let mut owner: HashMap<&str, &str> = HashMap::new();
    for node in nodes.iter().filter(|n| n.kind == Some(NodeKind::Loop)) {
        let Some(config) = node.value.get("loop").filter(|r| r.is_object()) else { continue };
        let Some(id) = node.id else { continue };
        let base = pointer(&node.path(), "loop");
        let mut body: Vec<&str> = Vec::new();
        for (i, member) in config.get("body").and_then(Value::as_array).into_iter().flatten().enumerate() {
            let Some(member) = member.as_str() else { continue };
            let at = format!("{base}/body/{i}");
            let problem = member_problem(member, id, ids, nodes, &mut owner);
            match problem {
                Some((code, message, help)) => {
                    out.push(Diagnostic::error(code, node.subject(), at, message).with_help(help))
                }
                None => body.push(member),
            }
        }
        if let Some(until) = config.get("until").filter(|u| u.is_object()) {
            let readable = Readable { ids: &body, of: "in the loop's body" };
            check_predicate(node, until, &pointer(&base, "until"), &readable, nodes, ids, outputs, out);
        }
    }
    check_loop_edges(&owner, edges, out);
}

/// What is wrong with `member` in the body of loop `id`, if anything, as a code, a
/// message and a hint; `owner` records the loop of each body node.
fn member_problem<'a>(
    member: &'a str,
    id: &'a str,
    ids: &HashMap<&str, usize>,
    nodes: &[NodeView],
    owner: &mut HashMap<&'a str, &'a str>,
) -> Option<(&'static str, String, String)> {
    match ids.get(member).map(|&i| nodes[i].kind) {
        None => Some((
            "missing-node",
            format!("the loop's body names `{member}`, which is not a node of this conclave"),
            did_you_mean(member, ids.keys().copied()).map_or_else(
                || "add the node, or remove it from the body".to_string(),
                |n| format!("did you mean `{n}`?"),
            ),
        )),
        _ if member == id => Some((
            "loop-in-own-body",
            "a loop cannot be part of its own body".to_string(),
            "remove it from `body`".into(),
        )),
        Some(Some(kind)) if !BODY_KINDS.contains(&kind) => Some((
            "loop-body-kind",
            format!(
                "`{member}` is {} {} node; a loop's body holds agents, commands and routes",
                article(kind.as_str()),
                kind.as_str()
            ),
            "remove it from `body`".into(),
        )),
        _ => match owner.get(member) {
            Some(other) if *other != id => Some((
                "loop-body-shared",
                format!("`{member}` is in the body of loop `{other}` already"),
                "a node belongs to one loop's body: copy it for the other loop".into(),
            )),
            _ => {
                owner.insert(member, id);
                None
            }
        },
    }
}

/// Checks that no edge crosses into or out of a loop's body; `owner` is the loop of
/// each body node.
fn check_loop_edges(owner: &HashMap<&str, &str>, edges: &[EdgeView], out: &mut Vec<Diagnostic>) {
    for edge in edges {
        let (from, to) = (owner.get(edge.from), owner.get(edge.to));
        if from == to {
            continue;
        }
        let label = format!("{} -> {}", edge.from, edge.to);
        let (end, body_of) = match (from, to) {
            (_, Some(loop_id)) => ("to", *loop_id),
            (Some(loop_id), _) => ("from", *loop_id),
            (None, None) => continue,
        };
        out.push(
            Diagnostic::error(
                "edge-crosses-loop",
                Subject::Edge(label.clone()),
                format!("/edges/{}/{end}", edge.index),
                format!("edge `{label}` crosses the edge of loop `{body_of}`'s body"),
            )
            .with_help(format!(
                "connect to and from `{body_of}` instead: its body's first nodes receive the loop's inputs, and the loop passes the last iteration on"
            )),
        );
    }
}

/// `/a, /b` for messages.
fn slash_list(ids: &[&str]) -> String {
    ids.iter().map(|id| format!("/{id}")).collect::<Vec<_>>().join(", ")
}

/// The first property along `path` (after its head) that an object there does not
/// declare, with those it does; `None` when the path may exist: the schema does not
/// list the object's properties, or lets it have others (`additionalProperties` or
/// `patternProperties` given and not `false`).
fn missing_property(schema: &Value, path: &str) -> Option<(String, Vec<String>)> {
    let mut here = schema;
    for raw in path.split('/').skip(2) {
        let segment = raw.replace("~1", "/").replace("~0", "~");
        if let Some(properties) = here.get("properties").and_then(Value::as_object) {
            match properties.get(&segment) {
                Some(next) => here = next,
                None => {
                    let open = here.get("patternProperties").is_some()
                        || here.get("additionalProperties").is_some_and(|a| a != &Value::Bool(false));
                    return (!open).then(|| (segment, properties.keys().cloned().collect()));
                }
            }
        } else if let Some(items) = here.get("items").filter(|_| segment.parse::<usize>().is_ok()) {
            here = items;
        } else {
            return None;
        }
    }
    None
}
