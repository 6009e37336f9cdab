//! What keeps a browser page from driving `conclave serve`: a Host allowlist (so a
//! DNS-rebinding page cannot read answers), a same-origin check on every API request
//! that says where it comes from, JSON as the only body of a state-changing request
//! (so a cross-site "simple" form post is refused), and the bearer token, which is
//! always required unless the server was started with `--no-token` on loopback.
//! `GET /metrics` and `/mcp` are guarded as the API is; `/webhooks/` only by Host,
//! since a forge authenticates each delivery by its signature.
//! The editor's files get a Content-Security-Policy that forbids inline script.

use axum::http::header::{AUTHORIZATION, CONTENT_LENGTH, CONTENT_TYPE, HOST, ORIGIN, TRANSFER_ENCODING};
use axum::http::{HeaderMap, HeaderValue, Method, Request, Uri};
use axum::response::{IntoResponse, Response};
use conclave_core::Secret;
use conclave_shared::SandboxConfig;
use futures::TryFutureExt;
use futures::future::{Either, MapOk, Ready, ready};
use serde_json::Value;
use std::convert::Infallible;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::task::{Context, Poll};
use subtle::ConstantTimeEq;
use tower::{Layer, Service};

use super::ApiError;

/// Names every loopback server answers to.
const LOOPBACK_HOSTS: &[&str] = &["localhost", "127.0.0.1", "[::1]", "::1"];

/// The Content-Security-Policy of the editor: its own scripts and the wasm module,
/// nothing inline, no frames, no plugins.
pub const EDITOR_CSP: &str = "default-src 'self'; script-src 'self' 'wasm-unsafe-eval'; style-src 'self'; \
img-src 'self' data:; connect-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'; form-action 'none'";

/// How a server admits requests.
#[derive(Debug, Clone)]
pub struct Security {
    /// The bearer token; `None` only with `--no-token` on loopback.
    pub token: Option<Secret>,
    /// Host names (without port) requests may be addressed to, besides loopback's.
    pub allowed_hosts: Vec<String>,
    /// Directories whose repositories may be reviewed.
    pub repo_roots: Vec<PathBuf>,
    /// The programs a conclave saved through the API may run in its command nodes
    /// (`--allow-commands`); none unless listed.
    pub allowed_programs: Vec<String>,
}

impl Security {
    /// Whether `repository` lies under one of the allowed roots (both resolved).
    pub fn allows_repository(&self, repository: &Path) -> bool {
        let Ok(repository) = repository.canonicalize() else { return false };
        self.repo_roots.iter().filter_map(|r| r.canonicalize().ok()).any(|root| repository.starts_with(root))
    }

    /// The programs `conclave` runs that this server may not take through the API:
    /// a command node's program, read from the document as sent.
    pub fn refused_programs(&self, conclave: &Value) -> Vec<String> {
        let mut refused: Vec<String> = Vec::new();
        let nodes = conclave.get("nodes").and_then(Value::as_array).into_iter().flatten();
        for node in
            nodes.filter(|n| n.get("command").is_some() || n.get("kind").and_then(Value::as_str) == Some("command"))
        {
            let program = node.pointer("/command/argv/0").and_then(Value::as_str).unwrap_or_default().to_string();
            if !self.allowed_programs.contains(&program) && !refused.contains(&program) {
                refused.push(program);
            }
        }
        // A stdio MCP server is a command too.
        let servers = conclave.pointer("/settings/mcp_servers").and_then(Value::as_object).into_iter().flatten();
        for program in servers.filter_map(|(_, entry)| entry.pointer("/command/0").and_then(Value::as_str)) {
            if !self.allowed_programs.iter().any(|p| p == program) && !refused.iter().any(|p| p == program) {
                refused.push(program.to_string());
            }
        }
        refused
    }

    /// What each command node and stdio MCP server of `conclave` opens in its
    /// sandbox (network, paths to read or write) beyond what the node of the same id
    /// (the server of the same name) opens in `on_disk`, the file already saved, if
    /// any: `(node \`id\`` or `MCP server \`name\``, what)`, each read from the
    /// documents as sent. A block that does not parse is left to validation.
    pub fn widened_sandboxes(&self, conclave: &Value, on_disk: Option<&Value>) -> Vec<(String, Vec<String>)> {
        let sandbox_of = |document: &Value, id: &str| -> Option<SandboxConfig> {
            let nodes = document.get("nodes").and_then(Value::as_array)?;
            let node = nodes.iter().find(|n| n.get("id").and_then(Value::as_str) == Some(id))?;
            serde_json::from_value(node.pointer("/command/sandbox")?.clone()).ok()
        };
        let nodes = conclave.get("nodes").and_then(Value::as_array).into_iter().flatten();
        let mut widened: Vec<(String, Vec<String>)> = nodes
            .filter_map(|node| {
                let id = node.get("id").and_then(Value::as_str)?;
                let asked = sandbox_of(conclave, id)?;
                let before = on_disk.and_then(|file| sandbox_of(file, id));
                let widened = asked.widened_beyond(before.as_ref());
                (!widened.is_empty()).then(|| (format!("node `{id}`"), widened))
            })
            .collect();
        // A stdio MCP server's sandbox, against the same server's on disk.
        let server_sandbox = |document: &Value, name: &str| -> Option<SandboxConfig> {
            let entry = document.pointer("/settings/mcp_servers")?.get(name)?;
            serde_json::from_value(entry.get("sandbox")?.clone()).ok()
        };
        let servers = conclave.pointer("/settings/mcp_servers").and_then(Value::as_object).into_iter().flatten();
        for (name, _) in servers {
            let Some(asked) = server_sandbox(conclave, name) else { continue };
            let before = on_disk.and_then(|file| server_sandbox(file, name));
            let opened = asked.widened_beyond(before.as_ref());
            if !opened.is_empty() {
                widened.push((format!("MCP server `{name}`"), opened));
            }
        }
        widened
    }

    fn allows_host(&self, host: &str) -> bool {
        let name = host_name(host);
        LOOPBACK_HOSTS.iter().any(|h| h.eq_ignore_ascii_case(name))
            || self.allowed_hosts.iter().any(|h| h.eq_ignore_ascii_case(name))
    }
}

/// The host name of a `Host` header value: without the port, brackets kept for IPv6.
fn host_name(host: &str) -> &str {
    if host.starts_with('[') {
        return host.split_once(']').map_or(host, |(name, _)| &host[..name.len() + 1]);
    }
    host.rsplit_once(':').filter(|(_, port)| port.bytes().all(|b| b.is_ascii_digit())).map_or(host, |(name, _)| name)
}

/// The guard as a tower layer around the whole router: checks every request before
/// routing. API requests also need a same-origin `Origin` (when sent),
/// the token, and JSON bodies for state changes; the editor's files get the CSP.
/// It clones nothing and allocates nothing on an admitted request.
#[derive(Debug, Clone)]
pub struct GuardLayer {
    security: Arc<Security>,
}

impl GuardLayer {
    /// A guard that admits requests as `security` says.
    pub fn new(security: Arc<Security>) -> GuardLayer {
        GuardLayer { security }
    }
}

impl<S> Layer<S> for GuardLayer {
    type Service = Guard<S>;

    fn layer(&self, inner: S) -> Guard<S> {
        Guard { inner, security: self.security.clone() }
    }
}

/// A service behind the guard; see [`GuardLayer`].
#[derive(Debug, Clone)]
pub struct Guard<S> {
    inner: S,
    security: Arc<Security>,
}

/// What the guard decided about one request.
enum Verdict {
    /// Answered by the guard itself.
    Refused(ApiError),
    /// An editor page: served, then given the page headers.
    Page,
    /// An admitted API request.
    Api,
}

impl<S, B> Service<Request<B>> for Guard<S>
where
    S: Service<Request<B>, Response = Response, Error = Infallible>,
{
    type Response = Response;
    type Error = Infallible;
    type Future =
        Either<Ready<Result<Response, Infallible>>, Either<MapOk<S::Future, fn(Response) -> Response>, S::Future>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request<B>) -> Self::Future {
        match verdict(&self.security, request.method(), request.uri(), request.headers()) {
            Verdict::Refused(error) => Either::Left(ready(Ok(error.into_response()))),
            Verdict::Page => Either::Right(Either::Left(self.inner.call(request).map_ok(page_headers as fn(_) -> _))),
            Verdict::Api => Either::Right(Either::Right(self.inner.call(request))),
        }
    }
}

fn verdict(security: &Security, method: &Method, uri: &Uri, headers: &HeaderMap) -> Verdict {
    let Some(host) = headers.get(HOST).and_then(|h| h.to_str().ok()).filter(|h| security.allows_host(h)) else {
        return Verdict::Refused(ApiError::Forbidden(
            "this server does not answer to that Host; start it with --allowed-host NAME to add a name".into(),
        ));
    };
    let path = uri.path();
    // A forge's webhook carries no token: its signature, which the handler checks
    // before it reads anything else, is its authentication. The Host rule above still
    // holds (a forge addresses the name the webhook's URL gives: `--allowed-host`).
    if path.starts_with("/webhooks/") {
        return Verdict::Api;
    }
    // `/metrics` is answered like the API: Prometheus scrapes it with the token; so
    // is `/mcp`, the MCP endpoint.
    if !path.starts_with("/api/") && path != "/api" && path != "/metrics" && path != "/mcp" {
        return Verdict::Page;
    }
    if let Some(origin) = headers.get(ORIGIN)
        && !same_origin(origin, host)
    {
        return Verdict::Refused(ApiError::Forbidden(
            "cross-origin request refused: the API answers only pages it serves itself".into(),
        ));
    }
    if let Some(token) = &security.token
        && !carries(headers, uri.query(), token)
    {
        return Verdict::Refused(ApiError::Unauthorized);
    }
    // A state change that carries a body must declare it JSON: browsers send form
    // posts and text/plain cross-site without asking first; a JSON body needs CORS.
    let changes_state = matches!(*method, Method::POST | Method::PUT | Method::PATCH | Method::DELETE);
    if changes_state && has_body(headers) && !is_json(headers) {
        return Verdict::Refused(ApiError::UnsupportedMediaType);
    }
    Verdict::Api
}

/// The headers of the editor's files: the CSP and its companions.
fn page_headers(mut response: Response) -> Response {
    let h = response.headers_mut();
    h.insert("content-security-policy", HeaderValue::from_static(EDITOR_CSP));
    h.insert("x-content-type-options", HeaderValue::from_static("nosniff"));
    h.insert("referrer-policy", HeaderValue::from_static("no-referrer"));
    h.insert("x-frame-options", HeaderValue::from_static("DENY"));
    response
}

fn same_origin(origin: &HeaderValue, host: &str) -> bool {
    let Ok(origin) = origin.to_str() else { return false };
    ["http://", "https://"]
        .iter()
        .any(|scheme| origin.strip_prefix(scheme).is_some_and(|rest| rest.eq_ignore_ascii_case(host)))
}

fn carries(headers: &HeaderMap, query: Option<&str>, token: &Secret) -> bool {
    let expected = token.expose().as_bytes();
    let header = headers.get(AUTHORIZATION).and_then(|v| v.to_str().ok()).and_then(|v| v.strip_prefix("Bearer "));
    if let Some(given) = header {
        return bool::from(given.as_bytes().ct_eq(expected));
    }
    // Browsers cannot set headers on an EventSource, so a `token` query parameter
    // counts too, compared as it decodes (`%2B` is `+`, `+` and `%20` are spaces).
    let Some(query) = query else { return false };
    form_urlencoded::parse(query.as_bytes())
        .find(|(name, _)| name == "token")
        .is_some_and(|(_, given)| bool::from(given.as_bytes().ct_eq(expected)))
}

fn has_body(headers: &HeaderMap) -> bool {
    headers.contains_key(TRANSFER_ENCODING)
        || headers.get(CONTENT_LENGTH).and_then(|v| v.to_str().ok()).is_some_and(|v| v.trim() != "0")
}

fn is_json(headers: &HeaderMap) -> bool {
    headers
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|media| media.trim().eq_ignore_ascii_case("application/json"))
}
