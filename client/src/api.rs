//! Every call the editor makes to the server: conclaves, validation, schemas,
//! lowering previews, providers, runs, their events (Server-Sent Events) and reports,
//! the evals kept of a conclave, and the tools of an MCP server a conclave declares.
//! Request and response bodies are the shared API types, so the editor and the server
//! cannot disagree about them.

use conclave_shared::api::{
    ApprovalDecision, ConclaveSummary, DialectPreview, ErrorBody, LowerRequest, LowerResponse, PreviewRequest,
    ProbeRequest, ProviderInfo, ProviderProbe, SchemaRef, StartRun, Started, Validation,
};
use conclave_shared::eval::{EvalListing, StoredEval};
use conclave_shared::mcp::{McpToolsRequest, McpToolsResponse};
use conclave_shared::{Conclave, Diagnostic, EventKind, RunEvent, RunRecord, RunSummary};
use gloo_net::http::{Request, RequestBuilder, Response};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
use wasm_bindgen::JsCast;
use wasm_bindgen::closure::Closure;

/// A failed call: the server's message and, for invalid conclaves, the diagnostics.
#[derive(Debug, Clone, PartialEq)]
pub struct ApiError {
    /// What went wrong.
    pub message: String,
    /// Every problem, when the server sent them.
    pub diagnostics: Vec<Diagnostic>,
    /// The HTTP status of the refusal; `None` when no answer was understood.
    pub status: Option<u16>,
}

impl ApiError {
    fn network(e: impl std::fmt::Display) -> ApiError {
        ApiError { message: format!("cannot reach the server: {e}"), diagnostics: Vec::new(), status: None }
    }

    fn unreadable(e: impl std::fmt::Display) -> ApiError {
        ApiError {
            message: format!("the server's answer was not understood: {e}"),
            diagnostics: Vec::new(),
            status: None,
        }
    }

    /// Whether a save was refused because the file changed on disk since the version
    /// it names (412 Precondition Failed).
    pub fn is_stale(&self) -> bool {
        self.status == Some(412)
    }
}

/// A conclave as its file is on the server, with the file's ETag (which a save sends
/// back in `If-Match`, so it never overwrites a version it has not seen).
#[derive(Debug, Clone, PartialEq)]
pub struct Stored {
    /// The conclave.
    pub conclave: Conclave,
    /// The ETag of its file, when the server sent one.
    pub etag: Option<String>,
}

type Result<T> = std::result::Result<T, ApiError>;

/// The catalog.
pub async fn list_conclaves() -> Result<Vec<ConclaveSummary>> {
    get("/api/conclaves").await
}

/// One conclave, with the ETag of its file.
pub async fn get_conclave(id: &str) -> Result<Stored> {
    let response = authorized(Request::get(&format!("/api/conclaves/{id}"))).send().await.map_err(ApiError::network)?;
    stored(response).await
}

/// Saves a conclave: updates it when it exists, creates it otherwise. An update with
/// `if_match` (the ETag the editor last read or wrote) is refused with 412 when the
/// file has changed since; without it, it replaces whatever is there.
pub async fn save_conclave(conclave: &Conclave, exists: bool, if_match: Option<&str>) -> Result<Stored> {
    let request = match (exists, if_match) {
        (true, Some(etag)) => Request::put(&format!("/api/conclaves/{}", conclave.id)).header("If-Match", etag),
        (true, None) => Request::put(&format!("/api/conclaves/{}", conclave.id)),
        (false, _) => Request::post("/api/conclaves"),
    };
    let request = authorized(request).json(conclave).map_err(ApiError::network)?;
    stored(request.send().await.map_err(ApiError::network)?).await
}

/// The conclave in a response, with the response's ETag.
async fn stored(response: Response) -> Result<Stored> {
    let etag = response.headers().get("etag");
    Ok(Stored { conclave: parse(&body_of(response).await?)?, etag })
}

/// What the server's validation finds in a conclave (saved or not): its diagnostics
/// and which agents review code.
pub async fn validate(conclave: &Conclave) -> Result<Validation> {
    send(Request::post("/api/validate"), conclave).await
}

/// The providers.
pub async fn providers() -> Result<Vec<ProviderInfo>> {
    get("/api/providers").await
}

/// Asks a provider which structured-output dialect its server speaks (one tiny
/// request; a failed probe is an answer, not an error).
pub async fn probe_provider(name: &str, request: &ProbeRequest) -> Result<ProviderProbe> {
    let path = format!("/api/providers/{}/probe", String::from(js_sys::encode_uri_component(name)));
    send(Request::post(&path), request).await
}

/// The schema references.
pub async fn schema_refs() -> Result<Vec<SchemaRef>> {
    get("/api/schemas").await
}

/// A schema by reference.
pub async fn schema(reference: &str) -> Result<Value> {
    get(&format!("/api/schemas/{reference}")).await
}

/// The lowering preview of an inline schema or a reference for a provider.
pub async fn lower(request: &LowerRequest) -> Result<LowerResponse> {
    send(Request::post("/api/lower"), request).await
}

/// What every provider dialect receives for a schema, side by side.
pub async fn lower_preview(request: &PreviewRequest) -> Result<Vec<DialectPreview>> {
    send(Request::post("/api/lower/preview"), request).await
}

/// Starts a run: a review of a repository, a run with an input, or a run from a node
/// of an earlier run.
pub async fn start_run(request: &StartRun) -> Result<Started> {
    send(Request::post("/api/runs"), request).await
}

/// One run with its conclave snapshot.
pub async fn get_run(run_id: &str) -> Result<RunRecord> {
    get(&format!("/api/runs/{run_id}")).await
}

/// Recent runs.
pub async fn runs() -> Result<Vec<RunSummary>> {
    get("/api/runs?limit=30").await
}

/// Cancels a run the server is running.
pub async fn cancel_run(run_id: &str) -> Result<Value> {
    send(Request::post(&format!("/api/runs/{run_id}/cancel")), &serde_json::json!({})).await
}

/// Decides at a waiting approval node; the server goes on with the run.
pub async fn decide_approval(run_id: &str, node_id: &str, decision: &ApprovalDecision) -> Result<Started> {
    send(Request::post(&format!("/api/runs/{run_id}/nodes/{node_id}/approval")), decision).await
}

/// A run's JSON report (the envelope with the review's findings).
pub async fn report_json(run_id: &str) -> Result<Value> {
    get(&format!("/api/runs/{run_id}/report?format=json")).await
}

/// A run's Markdown report, if it has one.
pub async fn report(run_id: &str) -> Option<String> {
    let response = authorized(Request::get(&format!("/api/runs/{run_id}/report?format=markdown"))).send().await.ok()?;
    if response.ok() { response.text().await.ok() } else { None }
}

/// The kept evals of a conclave, newest first.
pub async fn evals(conclave_id: &str) -> Result<Vec<EvalListing>> {
    let conclave = String::from(js_sys::encode_uri_component(conclave_id));
    get(&format!("/api/evals?conclave={conclave}&limit=100")).await
}

/// One kept eval, with its whole summary.
pub async fn eval(id: &str) -> Result<StoredEval> {
    get(&format!("/api/evals/{}", String::from(js_sys::encode_uri_component(id)))).await
}

/// The tools of an MCP server as the open conclave declares it (saved or not): the
/// server starts it, lists its tools and stops it.
pub async fn mcp_tools(request: &McpToolsRequest) -> Result<McpToolsResponse> {
    send(Request::post("/api/mcp/tools"), request).await
}

/// Follows a run's events; `on_event` is called for each, in order. Closing the
/// returned source stops the stream.
pub fn follow_run(run_id: &str, on_event: impl Fn(RunEvent) + 'static) -> Option<web_sys::EventSource> {
    let url = match token() {
        Some(t) => format!("/api/runs/{run_id}/events?token={t}"),
        None => format!("/api/runs/{run_id}/events"),
    };
    let source = web_sys::EventSource::new(&url).ok()?;
    let handler = Closure::<dyn Fn(web_sys::MessageEvent)>::new(move |message: web_sys::MessageEvent| {
        if let Some(event) = message.data().as_string().and_then(|d| serde_json::from_str::<RunEvent>(&d).ok()) {
            on_event(event);
        }
    });
    // Every event type arrives under its own SSE name, and an EventSource only hands
    // over the names it listens for, so the list must be the shared one.
    for name in EventKind::TYPE_NAMES {
        let _ = source.add_event_listener_with_callback(name, handler.as_ref().unchecked_ref());
    }
    // The handler must outlive this call: the source calls it until it is closed.
    handler.forget();
    Some(source)
}

/// Where the token is kept for the browser tab's session.
const TOKEN_KEY: &str = "conclave-token";

/// The bearer token: taken from the `#token=...` of the URL `conclave serve` printed,
/// kept in the tab's session storage, and removed from the address bar so it is not
/// copied along with the URL.
fn token() -> Option<String> {
    let window = web_sys::window()?;
    let storage = window.session_storage().ok().flatten();
    let hash = window.location().hash().ok().unwrap_or_default();
    if let Some(token) = hash.strip_prefix("#token=").filter(|t| !t.is_empty()) {
        if let Some(storage) = &storage {
            let _ = storage.set_item(TOKEN_KEY, token);
        }
        let path = window.location().pathname().unwrap_or_else(|_| "/".into());
        if let Ok(history) = window.history() {
            let _ = history.replace_state_with_url(&wasm_bindgen::JsValue::NULL, "", Some(&path));
        }
        return Some(token.to_string());
    }
    storage?.get_item(TOKEN_KEY).ok().flatten()
}

fn authorized(request: RequestBuilder) -> RequestBuilder {
    match token() {
        Some(t) => request.header("Authorization", &format!("Bearer {t}")),
        None => request,
    }
}

async fn get<T: DeserializeOwned>(url: &str) -> Result<T> {
    parse(&body_of(authorized(Request::get(url)).send().await.map_err(ApiError::network)?).await?)
}

async fn send<B: Serialize + ?Sized, T: DeserializeOwned>(request: RequestBuilder, body: &B) -> Result<T> {
    let request = authorized(request).json(body).map_err(ApiError::network)?;
    parse(&body_of(request.send().await.map_err(ApiError::network)?).await?)
}

/// A successful response's body as `T`. Only this is generic: the bundle holds the
/// reading of responses and of the server's errors once, whatever the body's type.
fn parse<T: DeserializeOwned>(text: &str) -> Result<T> {
    serde_json::from_str(text).map_err(ApiError::unreadable)
}

/// The text of a successful response, or the server's error.
async fn body_of(response: Response) -> Result<String> {
    if response.ok() {
        return response.text().await.map_err(ApiError::unreadable);
    }
    let status = Some(response.status());
    match response.json::<ErrorBody>().await {
        Ok(body) => Err(ApiError {
            message: body.error.message,
            diagnostics: body.error.diagnostics.unwrap_or_default(),
            status,
        }),
        // Something in between (a proxy, a crashed server) answered instead of the API.
        Err(_) => Err(ApiError {
            message: format!("the server refused the request (HTTP {})", response.status()),
            diagnostics: Vec::new(),
            status,
        }),
    }
}
