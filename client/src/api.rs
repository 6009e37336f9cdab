//! Every call the editor makes to the server: conclaves, validation, schemas,
//! lowering previews, providers, runs, their events (Server-Sent Events) and reports.

use conclave_shared::{Conclave, RunEvent, RunSummary};
use gloo_net::http::{Request, Response};
use serde::Deserialize;
use serde_json::{Value, json};
use wasm_bindgen::JsCast;
use wasm_bindgen::closure::Closure;

/// A conclave in the catalog listing.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct Summary {
    /// Its id.
    pub id: String,
    /// Its name, when the file parses.
    pub name: Option<String>,
    /// Errors in the file.
    pub errors: usize,
}

/// One diagnostic, as `conclave validate` reports it.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct Diagnostic {
    /// error, warning or note.
    pub severity: String,
    /// Short code.
    pub code: String,
    /// What it is about: `{"kind": "node", "id": ...}` and so on.
    pub subject: Value,
    /// JSON pointer.
    pub path: String,
    /// What is wrong.
    pub message: String,
    /// What to do.
    pub help: Option<String>,
}

impl Diagnostic {
    /// The node the diagnostic is about, if any.
    pub fn node_id(&self) -> Option<String> {
        (self.subject["kind"] == "node").then(|| self.subject["id"].as_str().map(str::to_string)).flatten()
    }
}

/// A provider the editor can offer.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct Provider {
    /// Its name.
    pub name: String,
    /// Whether it is configured on the server.
    pub configured: bool,
    /// Its default model.
    pub default_model: String,
}

/// A lowering preview.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct Lowering {
    /// `openai`, `anthropic`, ... or `prompt`.
    pub target: String,
    /// Whether native structured output is used.
    pub native: bool,
    /// The changes.
    pub notes: Vec<Note>,
}

/// One lowering change.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct Note {
    /// JSON pointer.
    pub path: String,
    /// Kind of change.
    pub kind: String,
    /// What changed.
    pub message: String,
}

/// A failed call: the server's message and, for invalid conclaves, the diagnostics.
#[derive(Debug, Clone, PartialEq)]
pub struct ApiError {
    /// What went wrong.
    pub message: String,
    /// Every problem, when the server sent them.
    pub diagnostics: Vec<Diagnostic>,
}

impl ApiError {
    fn network(e: impl std::fmt::Display) -> ApiError {
        ApiError { message: format!("cannot reach the server: {e}"), diagnostics: Vec::new() }
    }
}

type Result<T> = std::result::Result<T, ApiError>;

/// The bearer token, when the page was opened with `#token=...`.
fn token() -> Option<String> {
    let hash = web_sys::window()?.location().hash().ok()?;
    hash.strip_prefix("#token=").map(str::to_string)
}

fn authorized(request: gloo_net::http::RequestBuilder) -> gloo_net::http::RequestBuilder {
    match token() {
        Some(t) => request.header("Authorization", &format!("Bearer {t}")),
        None => request,
    }
}

async fn decode<T: for<'de> Deserialize<'de>>(response: Response) -> Result<T> {
    if response.ok() {
        return response.json().await.map_err(ApiError::network);
    }
    let body: Value = response.json().await.unwrap_or(Value::Null);
    let message =
        body.pointer("/error/message").and_then(Value::as_str).unwrap_or("the server refused the request").to_string();
    let diagnostics =
        body.pointer("/error/diagnostics").and_then(|d| serde_json::from_value(d.clone()).ok()).unwrap_or_default();
    Err(ApiError { message, diagnostics })
}

async fn get<T: for<'de> Deserialize<'de>>(url: &str) -> Result<T> {
    decode(authorized(Request::get(url)).send().await.map_err(ApiError::network)?).await
}

async fn send<T: for<'de> Deserialize<'de>>(method: &str, url: &str, body: &Value) -> Result<T> {
    let builder = match method {
        "PUT" => Request::put(url),
        "DELETE" => Request::delete(url),
        _ => Request::post(url),
    };
    let request = authorized(builder).json(body).map_err(ApiError::network)?;
    decode(request.send().await.map_err(ApiError::network)?).await
}

/// The catalog.
pub async fn list_conclaves() -> Result<Vec<Summary>> {
    get("/api/conclaves").await
}

/// One conclave.
pub async fn get_conclave(id: &str) -> Result<Conclave> {
    get(&format!("/api/conclaves/{id}")).await
}

/// Saves a conclave: updates it when it exists, creates it otherwise.
pub async fn save_conclave(conclave: &Conclave, exists: bool) -> Result<Conclave> {
    let body = serde_json::to_value(conclave).unwrap_or(Value::Null);
    if exists {
        send("PUT", &format!("/api/conclaves/{}", conclave.id), &body).await
    } else {
        send("POST", "/api/conclaves", &body).await
    }
}

/// The diagnostics of an unsaved conclave.
pub async fn validate(conclave: &Conclave) -> Result<Vec<Diagnostic>> {
    #[derive(Deserialize)]
    struct Validation {
        diagnostics: Vec<Diagnostic>,
    }
    let body = serde_json::to_value(conclave).unwrap_or(Value::Null);
    send::<Validation>("POST", "/api/validate", &body).await.map(|v| v.diagnostics)
}

/// The providers.
pub async fn providers() -> Result<Vec<Provider>> {
    get("/api/providers").await
}

/// The schema references.
pub async fn schema_refs() -> Result<Vec<String>> {
    #[derive(Deserialize)]
    struct Ref {
        reference: String,
    }
    get::<Vec<Ref>>("/api/schemas").await.map(|r| r.into_iter().map(|r| r.reference).collect())
}

/// A schema by reference.
pub async fn schema(reference: &str) -> Result<Value> {
    get(&format!("/api/schemas/{reference}")).await
}

/// The lowering preview of an inline schema or a reference for a provider.
pub async fn lower(schema: Option<&Value>, reference: Option<&str>, provider: &str) -> Result<Lowering> {
    let body = match (schema, reference) {
        (Some(s), _) => json!({"schema": s, "provider": provider}),
        (None, r) => json!({"schema_ref": r, "provider": provider}),
    };
    send("POST", "/api/lower", &body).await
}

/// Starts a run: a review of a repository, or a run with an input.
pub async fn start_run(conclave_id: &str, input: Value, review: Option<(String, Option<String>)>) -> Result<String> {
    #[derive(Deserialize)]
    struct Started {
        run_id: String,
    }
    let body = match review {
        Some((repository, base)) => {
            json!({"conclave_id": conclave_id, "review": {"repository": repository, "base": base}})
        }
        None => json!({"conclave_id": conclave_id, "input": input}),
    };
    send::<Started>("POST", "/api/runs", &body).await.map(|s| s.run_id)
}

/// One run with its conclave snapshot.
pub async fn get_run(run_id: &str) -> Result<conclave_shared::RunRecord> {
    get(&format!("/api/runs/{run_id}")).await
}

/// Recent runs.
pub async fn runs() -> Result<Vec<RunSummary>> {
    get("/api/runs?limit=30").await
}

/// A run's Markdown report, if it has one.
pub async fn report(run_id: &str) -> Option<String> {
    let response = authorized(Request::get(&format!("/api/runs/{run_id}/report?format=markdown"))).send().await.ok()?;
    if response.ok() { response.text().await.ok() } else { None }
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
    // Every event type arrives under its own SSE name.
    for name in [
        "run_started",
        "schema_lowered",
        "node_started",
        "text_delta",
        "tool_call",
        "provider_retry",
        "attempt_failed",
        "findings_checked",
        "contradiction_detected",
        "count_mismatch",
        "node_completed",
        "node_failed",
        "node_skipped",
        "run_finished",
    ] {
        let _ = source.add_event_listener_with_callback(name, handler.as_ref().unchecked_ref());
    }
    handler.forget();
    Some(source)
}
