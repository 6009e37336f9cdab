//! Secrets the process learns after it started (a forge's installation tokens, minted
//! every hour). The process's redactor (`super::process_redactor`) adds them as they
//! arrive, so a report or posted body written later is cleaned of them too.

use std::collections::VecDeque;
use std::sync::{Mutex, PoisonError};

/// How many registered secrets are kept. Short-lived tokens are registered as they are
/// minted; the oldest are forgotten first, long after they expired.
const KEPT: usize = 1024;

/// The registered secrets, and how many times they changed.
struct Registered {
    secrets: VecDeque<String>,
    generation: u64,
}

static REGISTERED: Mutex<Registered> = Mutex::new(Registered { secrets: VecDeque::new(), generation: 0 });

/// Adds `secret` to the secrets every later `process_redactor()` removes.
pub fn register_secret(secret: &str) {
    let mut registered = REGISTERED.lock().unwrap_or_else(PoisonError::into_inner);
    if registered.secrets.iter().any(|known| known == secret) {
        return;
    }
    if registered.secrets.len() >= KEPT {
        registered.secrets.pop_front();
    }
    registered.secrets.push_back(secret.to_string());
    registered.generation += 1;
}

/// The registered secrets, with the generation they are at (0: none ever).
pub(super) fn registered() -> (u64, Vec<String>) {
    let registered = REGISTERED.lock().unwrap_or_else(PoisonError::into_inner);
    (registered.generation, registered.secrets.iter().cloned().collect())
}

/// The generation the registered secrets are at, without copying them.
pub(super) fn generation() -> u64 {
    REGISTERED.lock().unwrap_or_else(PoisonError::into_inner).generation
}
