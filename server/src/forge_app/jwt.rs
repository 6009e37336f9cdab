//! The GitHub App's own credential: an RS256 JWT signed with the app's private key,
//! valid under ten minutes, which GitHub exchanges for installation tokens.

use conclave_core::Secret;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde::Serialize;
use std::fmt;
use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use super::error::AuthError;

/// How far `iat` is set in the past, against the clocks of this machine and
/// GitHub's disagreeing (GitHub's own advice).
pub const BACKDATE: Duration = Duration::from_secs(60);
/// How long a JWT is valid after `now`: GitHub refuses one whose `exp` is more than
/// ten minutes after `iat`; with the backdating this is nine.
pub const LIFETIME: Duration = Duration::from_secs(8 * 60);

/// A GitHub App: its id and private key.
pub struct AppKey {
    /// The app's id (`CONCLAVE_GITHUB_APP_ID`), the JWT's `iss`.
    pub app_id: String,
    key: EncodingKey,
}

impl fmt::Debug for AppKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "AppKey({}, [private key])", self.app_id)
    }
}

#[derive(Serialize)]
struct Claims<'a> {
    iat: u64,
    exp: u64,
    iss: &'a str,
}

impl AppKey {
    /// The app `app_id` with the PEM private key in `pem` (PKCS#1, as GitHub gives it,
    /// or PKCS#8); `source` names where the key came from, for the error.
    pub fn from_pem(app_id: &str, pem: &[u8], source: &str) -> Result<AppKey, AuthError> {
        let app_id = app_id.trim();
        if app_id.is_empty() || !app_id.chars().all(|c| c.is_ascii_alphanumeric()) {
            return Err(AuthError::Config(format!(
                "CONCLAVE_GITHUB_APP_ID `{app_id}` is not an app id: give the App ID (or Client ID) from the app's \
                 settings page"
            )));
        }
        let key = EncodingKey::from_rsa_pem(pem).map_err(|e| {
            AuthError::Config(format!(
                "{source} is not an RSA private key in PEM ({e}): give the `.pem` file generated on the GitHub App's \
                 settings page (Private keys)"
            ))
        })?;
        Ok(AppKey { app_id: app_id.to_string(), key })
    }

    /// The app with the key in the file at `path` (`CONCLAVE_GITHUB_APP_KEY_FILE`).
    pub fn from_file(app_id: &str, path: &Path) -> Result<AppKey, AuthError> {
        let source = format!("CONCLAVE_GITHUB_APP_KEY_FILE `{}`", path.display());
        let pem = std::fs::read(path).map_err(|e| {
            AuthError::Config(format!("{source} cannot be read ({e}): give the path of the app's private key file"))
        })?;
        AppKey::from_pem(app_id, &pem, &source)
    }

    /// A JWT valid from `now - BACKDATE` until `now + LIFETIME`.
    pub fn jwt(&self, now: SystemTime) -> Result<Secret, AuthError> {
        let now = now.duration_since(UNIX_EPOCH).unwrap_or_default();
        let claims =
            Claims { iat: now.saturating_sub(BACKDATE).as_secs(), exp: (now + LIFETIME).as_secs(), iss: &self.app_id };
        jsonwebtoken::encode(&Header::new(Algorithm::RS256), &claims, &self.key)
            .map(Secret::new)
            .map_err(|e| AuthError::Config(format!("cannot sign the GitHub App's JWT with its key: {e}")))
    }
}
