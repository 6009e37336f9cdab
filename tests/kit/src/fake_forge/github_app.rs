//! The GitHub App half of the fake GitHub: `POST /app/installations/{id}/access_tokens`
//! checks the app's JWT as GitHub does (RS256 against the test key's public half,
//! `iss` the app id, at most ten minutes between `iat` and `exp`, not expired) and
//! mints installation tokens with an `expires_at`, which the fake's API and git then
//! accept until they expire.

use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use serde::Deserialize;
use serde_json::json;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use super::Answer;

/// The GitHub App the fake knows, and the tokens it minted.
#[derive(Debug)]
pub struct AppState {
    /// The app's id, the JWT's `iss`.
    pub app_id: String,
    /// The public half of the app's key, PEM.
    pub public_key: Vec<u8>,
    /// The installation on the fake's repository.
    pub installation: u64,
    /// The installation was removed: its tokens are refused (404), as GitHub does.
    pub revoked: bool,
    /// How long a minted token lives.
    pub token_lifetime: Duration,
    /// Every token minted, with its expiry.
    pub minted: Vec<(String, SystemTime)>,
    /// Why JWTs were refused, in order.
    pub refused: Vec<String>,
}

impl AppState {
    /// App `app_id` with the public key `public_key` (PEM), installed as `installation`.
    pub fn new(app_id: &str, public_key: &[u8], installation: u64) -> AppState {
        AppState {
            app_id: app_id.into(),
            public_key: public_key.to_vec(),
            installation,
            revoked: false,
            token_lifetime: Duration::from_secs(3600),
            minted: Vec::new(),
            refused: Vec::new(),
        }
    }

    /// Whether `token` is a minted token that has not expired (nor been revoked).
    pub fn accepts(&self, token: &str) -> bool {
        !self.revoked && self.minted.iter().any(|(t, expires)| t == token && SystemTime::now() < *expires)
    }
}

#[derive(Deserialize)]
struct Claims {
    iat: u64,
    exp: u64,
    iss: String,
}

/// `POST /app/installations/{id}/access_tokens` with `authorization`.
pub(crate) fn access_tokens(app: &mut AppState, installation: &str, authorization: &str) -> Answer {
    if let Err(reason) = check_jwt(app, authorization) {
        app.refused.push(reason.clone());
        return Answer::status(401, &format!("A JSON web token could not be decoded ({reason})"));
    }
    if app.revoked || installation.parse::<u64>().ok() != Some(app.installation) {
        return Answer::status(404, "Not Found");
    }
    let now = SystemTime::now();
    let nanos = now.duration_since(UNIX_EPOCH).unwrap_or_default().as_nanos();
    // Tokens of differing length and shape: the client must not assume either.
    let token = format!("ghs_{nanos:x}{}", "Z".repeat(app.minted.len() % 7));
    let expires = now + app.token_lifetime;
    app.minted.push((token.clone(), expires));
    let mut answer = Answer::ok(json!({
        "token": token,
        "expires_at": humantime::format_rfc3339_seconds(expires).to_string(),
        "permissions": {"contents": "read", "metadata": "read", "pull_requests": "write", "issues": "write"},
        "repository_selection": "selected",
    }));
    answer.status = 201;
    answer
}

/// Checks the app's JWT as GitHub does; why it is refused.
fn check_jwt(app: &AppState, authorization: &str) -> Result<(), String> {
    let jwt = authorization.strip_prefix("Bearer ").ok_or("no Bearer token")?;
    let key = DecodingKey::from_rsa_pem(&app.public_key).map_err(|e| format!("the test key: {e}"))?;
    let mut validation = Validation::new(Algorithm::RS256);
    validation.set_issuer(&[&app.app_id]);
    validation.set_required_spec_claims(&["exp", "iat", "iss"]);
    validation.leeway = 0;
    let claims = jsonwebtoken::decode::<Claims>(jwt, &key, &validation).map_err(|e| e.to_string())?.claims;
    if claims.iss != app.app_id {
        return Err("iss is not the app".into());
    }
    if claims.exp.saturating_sub(claims.iat) > 600 {
        return Err(format!("exp is {}s after iat; at most 600", claims.exp.saturating_sub(claims.iat)));
    }
    let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default().as_secs();
    if claims.iat > now + 60 {
        return Err("iat is in the future".into());
    }
    Ok(())
}
