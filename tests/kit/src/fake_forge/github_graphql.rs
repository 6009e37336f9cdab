//! The fake GitHub's GraphQL endpoint (`POST /graphql`): a request's query is
//! parsed with `graphql-parser` and answered from the pull requests' review threads
//! (each keyed by its first comment, replies joining it): a pull request's
//! `reviewThreads`, paginated by cursor in the fake's page size, and the
//! `resolveReviewThread` mutation, which is recorded. A field this schema does not
//! have, or a query that does not parse, is answered as GitHub answers it: HTTP 200
//! with an `errors` array.

use graphql_parser::query::{Definition, Field, OperationDefinition, Selection, SelectionSet, Value as Gql};
use serde_json::{Map, Value, json};
use std::collections::BTreeSet;

/// One review thread: its comments' ids, the first one naming the thread.
#[derive(Debug, Clone, PartialEq)]
pub struct Thread {
    /// The comments, first one first.
    pub comments: Vec<u64>,
}

impl Thread {
    /// The thread's node id, as GitHub's look: `PRRT_` and its first comment's id.
    pub fn id(&self) -> String {
        format!("PRRT_{}", self.comments.first().copied().unwrap_or_default())
    }
}

/// One pull request's review threads.
pub(crate) struct PullThreads {
    /// The pull request's number.
    pub(crate) number: u64,
    /// Its review threads, in order.
    pub(crate) threads: Vec<Thread>,
}

/// What a GraphQL request sees and may change.
pub(crate) struct Graph<'a> {
    /// `owner/name`.
    pub(crate) repository: &'a str,
    /// The pull requests, each with its review threads.
    pub(crate) pulls: Vec<PullThreads>,
    /// The ids of resolved threads.
    pub(crate) resolved: &'a mut BTreeSet<String>,
    /// The threads `resolveReviewThread` was asked to resolve, in order.
    pub(crate) mutations: &'a mut Vec<String>,
    /// Threads per page, at most.
    pub(crate) page_size: usize,
}

type Fields<'q> = SelectionSet<'q, String>;

/// The answer to a GraphQL request's JSON body (`query`, `variables`).
pub(crate) fn answer(body: &Value, graph: &mut Graph<'_>) -> Value {
    let Some(query) = body["query"].as_str() else { return error("A query attribute must be specified") };
    let variables = body["variables"].as_object().cloned().unwrap_or_default();
    let document = match graphql_parser::parse_query::<String>(query) {
        Ok(document) => document,
        Err(e) => return error(&format!("Parse error: {e}")),
    };
    let operation = document.definitions.iter().find_map(|d| match d {
        Definition::Operation(operation) => Some(operation),
        Definition::Fragment(_) => None,
    });
    let result = match operation {
        Some(OperationDefinition::Query(q)) => query_root(&q.selection_set, &variables, graph),
        Some(OperationDefinition::SelectionSet(s)) => query_root(s, &variables, graph),
        Some(OperationDefinition::Mutation(m)) => mutation_root(&m.selection_set, &variables, graph),
        _ => Err("only queries and mutations are answered".to_string()),
    };
    match result {
        Ok(data) => json!({"data": data}),
        Err(message) => error(&message),
    }
}

fn error(message: &str) -> Value {
    json!({"errors": [{"message": message, "locations": [{"line": 1, "column": 1}]}]})
}

fn undefined(field: &str, on: &str) -> String {
    format!("Field '{field}' doesn't exist on type '{on}'")
}

/// The fields of a selection set, fragments refused.
fn fields<'s, 'q>(set: &'s Fields<'q>) -> Result<Vec<&'s Field<'q, String>>, String> {
    set.items
        .iter()
        .map(|s| match s {
            Selection::Field(f) => Ok(f),
            _ => Err("fragments are not answered by this fake".to_string()),
        })
        .collect()
}

/// A field's argument as JSON, variables resolved.
fn argument(field: &Field<'_, String>, name: &str, variables: &Map<String, Value>) -> Value {
    field.arguments.iter().find(|(n, _)| n == name).map_or(Value::Null, |(_, v)| value(v, variables))
}

fn value(v: &Gql<'_, String>, variables: &Map<String, Value>) -> Value {
    match v {
        Gql::Variable(name) => variables.get(name).cloned().unwrap_or(Value::Null),
        Gql::Int(n) => json!(n.as_i64()),
        Gql::Float(f) => json!(f),
        Gql::String(s) | Gql::Enum(s) => json!(s),
        Gql::Boolean(b) => json!(b),
        Gql::Null => Value::Null,
        Gql::List(items) => Value::Array(items.iter().map(|i| value(i, variables)).collect()),
        Gql::Object(map) => Value::Object(map.iter().map(|(k, v)| (k.clone(), value(v, variables))).collect()),
    }
}

fn key(field: &Field<'_, String>) -> String {
    field.alias.clone().unwrap_or_else(|| field.name.clone())
}

fn query_root(set: &Fields<'_>, variables: &Map<String, Value>, graph: &Graph<'_>) -> Result<Value, String> {
    let mut data = Map::new();
    for field in fields(set)? {
        if field.name != "repository" {
            return Err(undefined(&field.name, "Query"));
        }
        let named = format!(
            "{}/{}",
            argument(field, "owner", variables).as_str().unwrap_or_default(),
            argument(field, "name", variables).as_str().unwrap_or_default()
        );
        let repository = match named == graph.repository {
            true => repository(&field.selection_set, variables, graph)?,
            false => Value::Null,
        };
        data.insert(key(field), repository);
    }
    Ok(Value::Object(data))
}

fn repository(set: &Fields<'_>, variables: &Map<String, Value>, graph: &Graph<'_>) -> Result<Value, String> {
    let mut data = Map::new();
    for field in fields(set)? {
        if field.name != "pullRequest" {
            return Err(undefined(&field.name, "Repository"));
        }
        let number = argument(field, "number", variables).as_u64();
        let pull = match graph.pulls.iter().find(|p| Some(p.number) == number) {
            Some(pull) => pull_request(&field.selection_set, variables, pull, graph)?,
            None => Value::Null,
        };
        data.insert(key(field), pull);
    }
    Ok(Value::Object(data))
}

fn pull_request(
    set: &Fields<'_>,
    variables: &Map<String, Value>,
    pull: &PullThreads,
    graph: &Graph<'_>,
) -> Result<Value, String> {
    let mut data = Map::new();
    for field in fields(set)? {
        match field.name.as_str() {
            "number" => data.insert(key(field), json!(pull.number)),
            "reviewThreads" => data.insert(key(field), review_threads(field, variables, &pull.threads, graph)?),
            other => return Err(undefined(other, "PullRequest")),
        };
    }
    Ok(Value::Object(data))
}

/// A page of a pull request's review threads: `first` of them (at most the fake's
/// page size) after the cursor `after`.
fn review_threads(
    field: &Field<'_, String>,
    variables: &Map<String, Value>,
    threads: &[Thread],
    graph: &Graph<'_>,
) -> Result<Value, String> {
    let first = argument(field, "first", variables).as_u64().ok_or("reviewThreads needs `first`")? as usize;
    let start = match argument(field, "after", variables).as_str() {
        Some(cursor) => cursor.strip_prefix("cursor:").and_then(|n| n.parse::<usize>().ok()).ok_or("bad cursor")? + 1,
        None => 0,
    };
    let take = first.min(graph.page_size.max(1));
    let page: Vec<&Thread> = threads.iter().skip(start).take(take).collect();
    let end = start + page.len();
    let mut data = Map::new();
    for part in fields(&field.selection_set)? {
        match part.name.as_str() {
            "totalCount" => data.insert(key(part), json!(threads.len())),
            "pageInfo" => {
                let info = json!({"__typename": "PageInfo", "hasNextPage": end < threads.len(),
                    "endCursor": if page.is_empty() { Value::Null } else { json!(format!("cursor:{}", end - 1)) }});
                data.insert(key(part), project(&info, &part.selection_set)?)
            }
            "nodes" => {
                let nodes = page.iter().map(|t| project(&thread_json(t, graph.resolved), &part.selection_set));
                data.insert(key(part), Value::Array(nodes.collect::<Result<_, _>>()?))
            }
            other => return Err(undefined(other, "PullRequestReviewThreadConnection")),
        };
    }
    Ok(Value::Object(data))
}

fn thread_json(thread: &Thread, resolved: &BTreeSet<String>) -> Value {
    let comments: Vec<Value> =
        thread.comments.iter().map(|id| json!({"__typename": "PullRequestReviewComment", "databaseId": id})).collect();
    json!({"__typename": "PullRequestReviewThread", "id": thread.id(), "isResolved": resolved.contains(&thread.id()),
        "comments": {"__typename": "PullRequestReviewCommentConnection", "totalCount": comments.len(),
            "nodes": comments}})
}

/// The fields `set` selects of an object built whole (its `__typename` names it in
/// errors); a field it does not have is an error.
fn project(object: &Value, set: &Fields<'_>) -> Result<Value, String> {
    let on = object["__typename"].as_str().unwrap_or("Object");
    let mut data = Map::new();
    for field in fields(set)? {
        let Some(v) = object.get(&field.name) else { return Err(undefined(&field.name, on)) };
        let v = match v {
            Value::Object(_) => project(v, &field.selection_set)?,
            Value::Array(items) => {
                Value::Array(items.iter().map(|i| project(i, &field.selection_set)).collect::<Result<_, _>>()?)
            }
            leaf => leaf.clone(),
        };
        data.insert(key(field), v);
    }
    Ok(Value::Object(data))
}

fn mutation_root(set: &Fields<'_>, variables: &Map<String, Value>, graph: &mut Graph<'_>) -> Result<Value, String> {
    let mut data = Map::new();
    for field in fields(set)? {
        if field.name != "resolveReviewThread" {
            return Err(undefined(&field.name, "Mutation"));
        }
        let input = argument(field, "input", variables);
        let id = input["threadId"].as_str().ok_or("resolveReviewThread needs `input: {threadId}`")?;
        let Some(thread) = graph.pulls.iter().flat_map(|p| p.threads.iter()).find(|t| t.id() == id) else {
            return Err(format!("Could not resolve to a node with the global id of '{id}'"));
        };
        graph.mutations.push(id.to_string());
        graph.resolved.insert(id.to_string());
        let payload = json!({"__typename": "ResolveReviewThreadPayload",
            "thread": thread_json(thread, graph.resolved)});
        data.insert(key(field), project(&payload, &field.selection_set)?);
    }
    Ok(Value::Object(data))
}
