//! What keeps a browser page from driving `conclave serve`: a Host allowlist (so a
//! DNS-rebinding page cannot read answers), a same-origin check on every API request
//! that says where it comes from, JSON as the only body of a state-changing request
//! (so a cross-site "simple" form post is refused), and the bearer token, which is
//! always required unless the server was started with `--no-token` on loopback.
//! The editor's files get a Content-Security-Policy that forbids inline script.

use axum::extract::{Request, State};
use axum::http::header::{AUTHORIZATION, CONTENT_LENGTH, CONTENT_TYPE, HOST, ORIGIN, TRANSFER_ENCODING};
use axum::http::{HeaderMap, HeaderValue, Method};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use conclave_core::Secret;
use std::path::{Path, PathBuf};
use subtle::ConstantTimeEq;

use super::{ApiError, AppState};

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
}

impl Security {
    /// Whether `repository` lies under one of the allowed roots (both resolved).
    pub fn allows_repository(&self, repository: &Path) -> bool {
        let Ok(repository) = repository.canonicalize() else { return false };
        self.repo_roots.iter().filter_map(|r| r.canonicalize().ok()).any(|root| repository.starts_with(root))
    }

    fn allows_host(&self, host: &str) -> bool {
        let name = host_name(host).to_ascii_lowercase();
        LOOPBACK_HOSTS.contains(&name.as_str()) || self.allowed_hosts.iter().any(|h| h.eq_ignore_ascii_case(&name))
    }
}

/// The host name of a `Host` header value: without the port, brackets kept for IPv6.
fn host_name(host: &str) -> &str {
    if host.starts_with('[') {
        return host.split_once(']').map_or(host, |(name, _)| &host[..name.len() + 1]);
    }
    host.rsplit_once(':').filter(|(_, port)| port.bytes().all(|b| b.is_ascii_digit())).map_or(host, |(name, _)| name)
}

/// Checks every request; API requests also need a same-origin `Origin` (when sent),
/// the token, and JSON bodies for state changes. The editor's files get the CSP.
pub async fn guard(State(state): State<AppState>, request: Request, next: Next) -> Response {
    let security = &state.security;
    let headers = request.headers();
    let Some(host) = headers.get(HOST).and_then(|h| h.to_str().ok()).filter(|h| security.allows_host(h)) else {
        return ApiError::Forbidden(
            "this server does not answer to that Host; start it with --allowed-host NAME to add a name".into(),
        )
        .into_response();
    };
    if !request.uri().path().starts_with("/api/") && request.uri().path() != "/api" {
        let mut response = next.run(request).await;
        let h = response.headers_mut();
        h.insert("content-security-policy", HeaderValue::from_static(EDITOR_CSP));
        h.insert("x-content-type-options", HeaderValue::from_static("nosniff"));
        h.insert("referrer-policy", HeaderValue::from_static("no-referrer"));
        h.insert("x-frame-options", HeaderValue::from_static("DENY"));
        return response;
    }
    if let Some(origin) = headers.get(ORIGIN)
        && !same_origin(origin, host)
    {
        return ApiError::Forbidden("cross-origin request refused: the API answers only pages it serves itself".into())
            .into_response();
    }
    if let Some(token) = &security.token
        && !carries(headers, request.uri().query(), token)
    {
        return ApiError::Unauthorized.into_response();
    }
    // A state change that carries a body must declare it JSON: browsers send form
    // posts and text/plain cross-site without asking first; a JSON body needs CORS.
    let changes_state = matches!(*request.method(), Method::POST | Method::PUT | Method::PATCH | Method::DELETE);
    if changes_state && has_body(headers) && !is_json(headers) {
        return ApiError::UnsupportedMediaType.into_response();
    }
    next.run(request).await
}

fn same_origin(origin: &HeaderValue, host: &str) -> bool {
    let Ok(origin) = origin.to_str() else { return false };
    ["http://", "https://"]
        .iter()
        .any(|scheme| origin.strip_prefix(scheme).is_some_and(|rest| rest.eq_ignore_ascii_case(host)))
}

fn carries(headers: &HeaderMap, query: Option<&str>, token: &Secret) -> bool {
    let header = headers.get(AUTHORIZATION).and_then(|v| v.to_str().ok()).and_then(|v| v.strip_prefix("Bearer "));
    // Browsers cannot set headers on an EventSource, so a `token` query parameter counts too.
    let query = query.and_then(|q| q.split('&').find_map(|p| p.strip_prefix("token=")));
    header.or(query).is_some_and(|given| bool::from(given.as_bytes().ct_eq(token.expose().as_bytes())))
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
