//! How a delivery proves it comes from the forge, checked before anything in it is
//! read: GitHub's `X-Hub-Signature-256`, the HMAC-SHA256 of the raw body under the
//! webhook secret, verified by the `hmac` crate in constant time; GitLab's
//! `X-Gitlab-Token`, the secret itself, compared in constant time (as SHA-256
//! digests, so not even its length shows in the time taken).

use conclave_core::Secret;
use hmac::{Hmac, KeyInit, Mac};
use sha2_mac::{Digest, Sha256};
use subtle::ConstantTimeEq;

/// Why a delivery was not admitted. The messages name the header and what to do,
/// never a secret or what was sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// No signature header at all.
    Missing,
    /// A signature by another algorithm (GitHub's older `sha1=`).
    Algorithm,
    /// A signature that is not hex of the right length.
    Malformed,
    /// A signature (or token) that does not match.
    Mismatch,
}

impl Refusal {
    /// What the forge's delivery log shows.
    pub fn message(self, header: &str) -> String {
        match self {
            Refusal::Missing => format!("the delivery has no {header} header: set the webhook's secret"),
            Refusal::Algorithm => {
                format!(
                    "{header} must be `sha256=` and the hex of the body's HMAC-SHA256; other algorithms are refused"
                )
            }
            Refusal::Malformed => format!("{header} is not `sha256=` followed by 64 hex digits"),
            Refusal::Mismatch => {
                format!("{header} does not match: the webhook's secret differs from the one this server was given")
            }
        }
    }
}

/// The prefix of GitHub's SHA-256 signature.
const SHA256_PREFIX: &str = "sha256=";

/// Checks `X-Hub-Signature-256` (`header`, as sent) against the HMAC-SHA256 of `body`
/// under `secret`.
pub fn verify_github(secret: &Secret, header: Option<&[u8]>, body: &[u8]) -> Result<(), Refusal> {
    let header = header.ok_or(Refusal::Missing)?;
    let Some(hex_tag) = header.strip_prefix(SHA256_PREFIX.as_bytes()) else {
        return Err(if header.contains(&b'=') { Refusal::Algorithm } else { Refusal::Malformed });
    };
    let mut tag = [0u8; 32];
    hex::decode_to_slice(hex_tag, &mut tag).map_err(|_| Refusal::Malformed)?;
    let mut mac =
        <Hmac<Sha256> as KeyInit>::new_from_slice(secret.expose().as_bytes()).map_err(|_| Refusal::Mismatch)?;
    mac.update(body);
    mac.verify_slice(&tag).map_err(|_| Refusal::Mismatch)
}

/// Checks `X-Gitlab-Token` (`header`, as sent) against `secret`.
pub fn verify_gitlab(secret: &Secret, header: Option<&[u8]>) -> Result<(), Refusal> {
    let header = header.ok_or(Refusal::Missing)?;
    let given = Sha256::digest(header);
    let expected = Sha256::digest(secret.expose().as_bytes());
    match bool::from(given.as_slice().ct_eq(expected.as_slice())) {
        true => Ok(()),
        false => Err(Refusal::Mismatch),
    }
}

/// The `X-Hub-Signature-256` value of `body` under `secret`: what GitHub sends. For
/// tests and benchmarks that play the forge.
pub fn github_signature(secret: &str, body: &[u8]) -> String {
    // HMAC takes a key of any length, so this never fails.
    let Ok(mut mac) = <Hmac<Sha256> as KeyInit>::new_from_slice(secret.as_bytes()) else { return String::new() };
    mac.update(body);
    format!("{SHA256_PREFIX}{}", hex::encode(mac.finalize().into_bytes()))
}
