//! `POST /webhooks/github` and `POST /webhooks/gitlab`: deliveries from forges,
//! authenticated by their signature (not the API's token), each kept in the run
//! store as a typed record of what it asks, for a dispatcher to queue reviews from.
//!
//! A delivery is answered at once: 202 once its record is committed (nothing slow
//! happens in the request: no forge call, no git), 200 for a redelivery of one
//! already kept (recognised by the forge's delivery id, and doing nothing), 401 for a
//! missing or wrong signature, checked before anything in the body is read, 413 over
//! the API's body limit, 400 for a body that is not JSON or not its event's shape.
//!
//! Layout: `settings.rs` (which endpoints exist), `signature.rs` (the checks),
//! `github.rs` and `gitlab.rs` (each forge's events read into a `Delivery`),
//! `command.rs` (the `/conclave` commands of a comment).

pub mod command;
pub mod github;
pub mod gitlab;
pub mod settings;
pub mod signature;

use axum::Json;
use axum::Router;
use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{DefaultBodyLimit, State};
use axum::http::{HeaderMap, StatusCode, header::CONTENT_TYPE};
use axum::response::{IntoResponse, Response};
use axum::routing::{MethodRouter, any, post};
use conclave_core::now_ms;
use conclave_shared::delivery::{Asks, Delivery, DeliveryEvent, Forge};
use serde::Serialize;

use super::error::ApiError;
use super::extract::{BODY_LIMIT, body_bytes};
use super::state::AppState;
use crate::observe::prometheus::WEBHOOK_DELIVERIES;
use settings::{GITHUB_SECRET_VARIABLE, GITLAB_SECRET_VARIABLE, Webhooks};
use signature::Refusal;

/// The longest delivery id kept; forges send UUIDs.
const MAX_DELIVERY_ID: usize = 128;

/// The webhook routes `webhooks` asks for: a forge's endpoint when its secret is
/// set, else a 404 that says how to turn it on.
pub fn routes(webhooks: &Webhooks) -> Router<AppState> {
    let not_post = || async { ApiError::MethodNotAllowed };
    let github: MethodRouter<AppState> = match webhooks.github {
        Some(_) => post(github_delivery).fallback(not_post),
        None => any(|| async { off("GitHub", GITHUB_SECRET_VARIABLE) }),
    };
    let gitlab: MethodRouter<AppState> = match webhooks.gitlab {
        Some(_) => post(gitlab_delivery).fallback(not_post),
        None => any(|| async { off("GitLab", GITLAB_SECRET_VARIABLE) }),
    };
    Router::new()
        .route("/webhooks/github", github)
        .route("/webhooks/gitlab", gitlab)
        .layer(DefaultBodyLimit::max(BODY_LIMIT))
}

fn off(forge: &str, variable: &str) -> ApiError {
    ApiError::NotFound(format!(
        "this server receives no {forge} webhooks: start it with {variable} set to the webhook's secret"
    ))
}

/// What became of a delivery that was admitted.
enum Outcome {
    /// Kept, asking for something.
    Accepted(Delivery),
    /// Kept, asking for nothing.
    Ignored(Delivery),
    /// Already kept: a redelivery.
    Duplicate(String),
}

/// The body of a webhook's answer.
#[derive(Debug, Serialize)]
struct Answer {
    delivery: String,
    outcome: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    command: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    reason: Option<String>,
}

async fn github_delivery(
    State(state): State<AppState>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    let event = github::event_of(header(&headers, "x-github-event").unwrap_or_default());
    let outcome = async {
        let body = body_bytes(body)?;
        let secret = state.webhooks.github.as_ref().ok_or_else(|| off("GitHub", GITHUB_SECRET_VARIABLE))?;
        let signature = headers.get("x-hub-signature-256").map(|v| v.as_bytes());
        signature::verify_github(secret, signature, &body).map_err(|r| refused(r, "X-Hub-Signature-256"))?;
        let id = delivery_id(&headers, &["x-github-delivery"])?;
        required(&headers, "x-github-event", "X-GitHub-Event")?;
        json_body(&headers)?;
        let delivery = github::read(event.clone(), &body, state.webhooks.review_drafts, &id, now_ms())?;
        keep(&state, delivery).await
    }
    .await;
    answer(Forge::Github, &event, outcome)
}

async fn gitlab_delivery(
    State(state): State<AppState>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    let event = gitlab::event_of(header(&headers, "x-gitlab-event").unwrap_or_default());
    let outcome = async {
        let body = body_bytes(body)?;
        let secret = state.webhooks.gitlab.as_ref().ok_or_else(|| off("GitLab", GITLAB_SECRET_VARIABLE))?;
        let token = headers.get("x-gitlab-token").map(|v| v.as_bytes());
        signature::verify_gitlab(secret, token).map_err(|r| refused(r, "X-Gitlab-Token"))?;
        // `Idempotency-Key` stays the same when GitLab retries a delivery;
        // `X-Gitlab-Webhook-UUID` (all that GitLab before 17.4 sends) is new on each try.
        let id = delivery_id(&headers, &["idempotency-key", "x-gitlab-webhook-uuid"])?;
        required(&headers, "x-gitlab-event", "X-Gitlab-Event")?;
        json_body(&headers)?;
        let delivery = gitlab::read(event.clone(), &body, state.webhooks.review_drafts, &id, now_ms())?;
        keep(&state, delivery).await
    }
    .await;
    answer(Forge::Gitlab, &event, outcome)
}

/// Keeps `delivery` in the run store; whether it was new decides the outcome.
async fn keep(state: &AppState, delivery: Delivery) -> Result<Outcome, ApiError> {
    if !state.store().put_delivery(&delivery).await? {
        return Ok(Outcome::Duplicate(delivery.id));
    }
    state.webhooks.kept.notify_one();
    Ok(match delivery.asks {
        Asks::Command(_) => Outcome::Accepted(delivery),
        Asks::Nothing(_) => Outcome::Ignored(delivery),
    })
}

/// The response, counted by forge, event and outcome, and logged without anything
/// the delivery's sender chose beyond its verified id.
fn answer(forge: Forge, event: &DeliveryEvent, outcome: Result<Outcome, ApiError>) -> Response {
    let (label, response) = match outcome {
        Ok(Outcome::Accepted(delivery)) => {
            let command = delivery.command().map(|c| c.text());
            tracing::info!(
                "{} webhook delivery {} accepted: {} asks `{}`",
                forge.name(),
                delivery.id,
                event.label(),
                command.as_deref().unwrap_or_default()
            );
            let body = Answer { delivery: delivery.id, outcome: "accepted", command, reason: None };
            ("accepted", (StatusCode::ACCEPTED, Json(body)).into_response())
        }
        Ok(Outcome::Ignored(delivery)) => {
            let reason = delivery.ignored().map(|why| why.reason());
            tracing::debug!("{} webhook delivery {} ignored: {}", forge.name(), delivery.id, event.label());
            let body = Answer { delivery: delivery.id, outcome: "ignored", command: None, reason };
            ("ignored", (StatusCode::ACCEPTED, Json(body)).into_response())
        }
        Ok(Outcome::Duplicate(id)) => {
            tracing::debug!("{} webhook delivery {id} received again; already kept", forge.name());
            let reason = Some("this delivery was received before; it is kept once".to_string());
            let body = Answer { delivery: id, outcome: "duplicate", command: None, reason };
            ("duplicate", (StatusCode::OK, Json(body)).into_response())
        }
        Err(error) => {
            let label = if error.status().is_server_error() { "failed" } else { "refused" };
            if error.status() != StatusCode::NOT_FOUND {
                tracing::warn!("refused a {} webhook delivery ({}): {error}", forge.name(), error.status());
            }
            (label, error.into_response())
        }
    };
    metrics::counter!(WEBHOOK_DELIVERIES, "forge" => forge.name(), "event" => event.label(), "outcome" => label)
        .increment(1);
    response
}

fn refused(refusal: Refusal, header: &str) -> ApiError {
    ApiError::BadSignature(refusal.message(header))
}

fn header<'h>(headers: &'h HeaderMap, name: &str) -> Option<&'h str> {
    headers.get(name).and_then(|v| v.to_str().ok())
}

fn required(headers: &HeaderMap, name: &str, shown: &str) -> Result<(), ApiError> {
    match header(headers, name) {
        Some(value) if !value.trim().is_empty() => Ok(()),
        _ => Err(ApiError::BadRequest { message: format!("the delivery has no {shown} header"), path: None }),
    }
}

/// The delivery's id from the first of `names` that is present: printable ASCII, at
/// most [`MAX_DELIVERY_ID`] characters.
fn delivery_id(headers: &HeaderMap, names: &[&str]) -> Result<String, ApiError> {
    let Some(value) = names.iter().find_map(|name| headers.get(*name)) else {
        return Err(ApiError::BadRequest {
            message: format!("the delivery has no id: it needs a {} header", names.join(" or ")),
            path: None,
        });
    };
    let bytes = value.as_bytes();
    if bytes.is_empty() || bytes.len() > MAX_DELIVERY_ID || !bytes.iter().all(u8::is_ascii_graphic) {
        return Err(ApiError::BadRequest {
            message: format!("the delivery id is not 1 to {MAX_DELIVERY_ID} printable ASCII characters"),
            path: None,
        });
    }
    Ok(String::from_utf8_lossy(bytes).into_owned())
}

/// Refuses a form-encoded body (a webhook set to send `application/x-www-form-urlencoded`):
/// Conclave reads JSON only.
fn json_body(headers: &HeaderMap) -> Result<(), ApiError> {
    let media = header(headers, CONTENT_TYPE.as_str()).and_then(|v| v.split(';').next()).map(str::trim);
    match media {
        Some(m) if m.eq_ignore_ascii_case("application/x-www-form-urlencoded") => Err(ApiError::UnsupportedMediaType),
        _ => Ok(()),
    }
}
