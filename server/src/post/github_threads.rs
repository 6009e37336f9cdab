//! Resolving the review threads of fixed findings on GitHub, through its GraphQL
//! API (REST has no way to resolve a thread): the pull request's `reviewThreads`,
//! read a page at a time, map a comment's `databaseId` to its thread's node id;
//! each thread not yet resolved gets one `resolveReviewThread` mutation. GraphQL
//! reports errors with HTTP 200 and an `errors` array, read here as errors.

use reqwest::{Method, Url};
use serde_json::{Value, json};
use std::collections::HashMap;

use super::error::PostError;
use super::http::Api;

/// The most pages of review threads read.
const MAX_PAGES: usize = 100;

const THREADS: &str = "query($owner: String!, $name: String!, $number: Int!, $after: String) {
  repository(owner: $owner, name: $name) {
    pullRequest(number: $number) {
      reviewThreads(first: 100, after: $after) {
        pageInfo { hasNextPage endCursor }
        nodes { id isResolved comments(first: 1) { nodes { databaseId } } }
      }
    }
  }
}";

const RESOLVE: &str = "mutation($thread: ID!) {
  resolveReviewThread(input: {threadId: $thread}) { thread { id isResolved } }
}";

/// The GraphQL endpoint: `GITHUB_GRAPHQL_URL` when given, else beside the REST API
/// (`https://api.github.com` → `…/graphql`; GitHub Enterprise Server's `…/api/v3` →
/// `…/api/graphql`).
pub fn endpoint(api: &Url, given: Option<Url>) -> Url {
    if let Some(url) = given {
        return url;
    }
    let mut url = api.clone();
    let path = api.path().trim_end_matches('/');
    let path = match path.strip_suffix("/api/v3") {
        Some(root) => format!("{root}/api/graphql"),
        None => format!("{path}/graphql"),
    };
    url.set_path(&path);
    url
}

/// Resolves the threads that begin with the review comments `comments` (ids), those
/// not resolved yet; how many it resolved.
pub async fn resolve(
    api: &Api,
    endpoint: &Url,
    repository: &str,
    number: u64,
    comments: &[String],
) -> Result<usize, PostError> {
    if comments.is_empty() {
        return Ok(0);
    }
    let threads = threads(api, endpoint, repository, number).await?;
    let mut resolved = 0;
    for comment in comments {
        let Some((thread, false)) = comment.parse::<u64>().ok().and_then(|id| threads.get(&id)).cloned() else {
            continue;
        };
        send(api, endpoint, RESOLVE, json!({"thread": thread}), "resolveReviewThread").await?;
        resolved += 1;
    }
    Ok(resolved)
}

/// Every review thread of the pull request: its first comment's id → (thread id,
/// whether it is resolved).
async fn threads(
    api: &Api,
    endpoint: &Url,
    repository: &str,
    number: u64,
) -> Result<HashMap<u64, (String, bool)>, PostError> {
    let (owner, name) = repository.split_once('/').unwrap_or((repository, ""));
    let mut threads = HashMap::new();
    let mut after = Value::Null;
    for _ in 0..MAX_PAGES {
        let variables = json!({"owner": owner, "name": name, "number": number, "after": after});
        let data = send(api, endpoint, THREADS, variables, "reviewThreads").await?;
        let page = &data["repository"]["pullRequest"]["reviewThreads"];
        let Some(nodes) = page["nodes"].as_array() else {
            let message = format!("no pull request #{number} in {repository}, or no `reviewThreads`: {data}");
            return Err(PostError::Malformed { request: format!("POST {} (reviewThreads)", endpoint.path()), message });
        };
        for node in nodes {
            let (Some(id), Some(first)) =
                (node["id"].as_str(), node.pointer("/comments/nodes/0/databaseId").and_then(Value::as_u64))
            else {
                continue;
            };
            threads.insert(first, (id.to_string(), node["isResolved"] == true));
        }
        match (page.pointer("/pageInfo/hasNextPage"), page.pointer("/pageInfo/endCursor")) {
            (Some(Value::Bool(true)), Some(cursor @ Value::String(_))) => after = cursor.clone(),
            _ => return Ok(threads),
        }
    }
    Ok(threads)
}

/// One GraphQL request; its `data`, or its `errors` as an error.
async fn send(api: &Api, endpoint: &Url, query: &str, variables: Value, what: &str) -> Result<Value, PostError> {
    let body = json!({"query": query, "variables": variables});
    let (_, answer) = api.send(Method::POST, endpoint.clone(), Some(&body)).await?;
    let request = format!("POST {} ({what})", endpoint.path());
    if let Some(errors) = answer["errors"].as_array().filter(|e| !e.is_empty()) {
        let messages: Vec<String> =
            errors.iter().map(|e| e["message"].as_str().map_or_else(|| e.to_string(), str::to_string)).collect();
        return Err(PostError::GraphQl { request, message: messages.join("; ") });
    }
    Ok(answer["data"].clone())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_endpoint_is_beside_the_rest_api_unless_given() {
        let url = |s: &str| Url::parse(s).expect("url");
        assert_eq!(endpoint(&url("https://api.github.com"), None), url("https://api.github.com/graphql"));
        assert_eq!(endpoint(&url("https://ghe.example.com/api/v3/"), None), url("https://ghe.example.com/api/graphql"));
        assert_eq!(endpoint(&url("http://127.0.0.1:9/"), None), url("http://127.0.0.1:9/graphql"));
        let given = url("https://gql.example.com/q");
        assert_eq!(endpoint(&url("https://api.github.com"), Some(given.clone())), given);
    }
}
