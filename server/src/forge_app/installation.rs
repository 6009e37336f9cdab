//! Installation tokens of a GitHub App: the app's JWT exchanged at
//! `POST /app/installations/{id}/access_tokens`, each token kept until shortly before
//! its `expires_at`, and one exchange at a time per installation, however many
//! reviews ask at once.

use conclave_core::Secret;
use reqwest::{Method, Url};
use serde_json::Value;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, SystemTime};

use super::error::AuthError;
use super::jwt::AppKey;
use crate::post::PostError;
use crate::post::http::Api;

/// How long before its `expires_at` a token is replaced, so a review that starts
/// with it does not see it expire (at most half its lifetime, for short ones).
pub const REFRESH_BEFORE: Duration = Duration::from_secs(5 * 60);
/// How long a token whose `expires_at` cannot be read is used: GitHub documents an
/// hour; this stays well inside it.
const UNKNOWN_LIFETIME: Duration = Duration::from_secs(10 * 60);

/// A GitHub App's installation tokens, cached per installation.
#[derive(Debug)]
pub struct InstallationTokens {
    app: AppKey,
    api: Url,
    cache: Mutex<HashMap<u64, Arc<tokio::sync::Mutex<Option<Cached>>>>>,
    exchanges: AtomicU64,
}

#[derive(Debug)]
struct Cached {
    token: Secret,
    refresh_at: SystemTime,
}

impl InstallationTokens {
    /// The installation tokens of `app`, minted by the API at `api`.
    pub fn new(app: AppKey, api: Url) -> InstallationTokens {
        InstallationTokens { app, api, cache: Mutex::new(HashMap::new()), exchanges: AtomicU64::new(0) }
    }

    /// The app's id.
    pub fn app_id(&self) -> &str {
        &self.app.app_id
    }

    /// How many tokens were minted so far (for tests and metrics).
    pub fn exchanges(&self) -> u64 {
        self.exchanges.load(Ordering::Relaxed)
    }

    /// A token of `installation`: the cached one while it is fresh, else a new one.
    /// Concurrent callers for one installation wait for a single exchange. Every
    /// token minted is registered with the process's redactor.
    pub async fn token(&self, installation: u64) -> Result<Secret, AuthError> {
        let slot = {
            let mut cache = self.cache.lock().unwrap_or_else(PoisonError::into_inner);
            cache.entry(installation).or_default().clone()
        };
        let mut slot = slot.lock().await;
        if let Some(cached) = slot.as_ref()
            && SystemTime::now() < cached.refresh_at
        {
            return Ok(cached.token.clone());
        }
        let (token, expires_at) = self.exchange(installation).await?;
        conclave_core::register_secret(token.expose());
        let now = SystemTime::now();
        let refresh_at = match expires_at {
            Some(expires_at) => {
                let left = expires_at.duration_since(now).unwrap_or_default();
                expires_at - REFRESH_BEFORE.min(left / 2)
            }
            None => now + UNKNOWN_LIFETIME,
        };
        *slot = Some(Cached { token: token.clone(), refresh_at });
        Ok(token)
    }

    /// One exchange of a fresh JWT for a token of `installation`, with its expiry.
    async fn exchange(&self, installation: u64) -> Result<(Secret, Option<SystemTime>), AuthError> {
        self.exchanges.fetch_add(1, Ordering::Relaxed);
        let jwt = self.app.jwt(SystemTime::now())?;
        let headers = vec![("accept", "application/vnd.github+json"), ("x-github-api-version", "2022-11-28")];
        let bearer = Secret::new(format!("Bearer {}", jwt.expose()));
        let explain = ("CONCLAVE_GITHUB_APP_KEY_FILE", "the app may not mint tokens for this installation");
        let context = format!("GitHub App {}: installation {installation}", self.app.app_id);
        let api = Api::new(self.api.clone(), ("authorization", bearer), &jwt, headers, explain)
            .map_err(|source| AuthError::Forge { context: context.clone(), source })?;
        let url = api.url(&["app", "installations", &installation.to_string(), "access_tokens"]);
        let answer = match api.send(Method::POST, url, None).await {
            Ok((_, answer)) => answer,
            Err(error) => return Err(self.refused(installation, error, context)),
        };
        let token = answer.get("token").and_then(Value::as_str).filter(|t| usable(t)).ok_or_else(|| {
            AuthError::Malformed { context: context.clone(), message: "no usable `token` in the answer".into() }
        })?;
        let expires_at =
            answer.get("expires_at").and_then(Value::as_str).and_then(|e| humantime::parse_rfc3339_weak(e.trim()).ok());
        Ok((Secret::new(token), expires_at))
    }

    /// The error of a refused exchange, naming the installation and what to do.
    fn refused(&self, installation: u64, error: PostError, context: String) -> AuthError {
        let app = self.app.app_id.clone();
        match error {
            PostError::Unauthorized { message, .. } => AuthError::Installation {
                app,
                installation,
                status: 401,
                message,
                hint: "GitHub refused the app's JWT: check that CONCLAVE_GITHUB_APP_ID is the app of the key in \
                       CONCLAVE_GITHUB_APP_KEY_FILE, that the key was not deleted on the app's settings page, and \
                       that this machine's clock is right",
            },
            PostError::Status { status: 404, message, .. } => AuthError::Installation {
                app,
                installation,
                status: 404,
                message,
                hint: "the installation does not exist: the app was uninstalled (or the event names another app's \
                       installation); install the app on the repository again",
            },
            PostError::Permission { status, message, .. } => AuthError::Installation {
                app,
                installation,
                status,
                message,
                hint: "the installation is suspended or its access was revoked; unsuspend it in the account's \
                       settings (Applications → Installed GitHub Apps)",
            },
            source => AuthError::Forge { context, source },
        }
    }
}

/// Whether a token can be sent in a header. Nothing else about it is assumed: GitHub
/// changes its tokens' length and format.
fn usable(token: &str) -> bool {
    !token.is_empty() && !token.chars().any(|c| c.is_control() || c.is_whitespace())
}
