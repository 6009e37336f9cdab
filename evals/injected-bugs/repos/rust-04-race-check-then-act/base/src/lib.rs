//! An in-memory link shortener shared by the server's worker threads.

pub mod codes;

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

/// Short codes and the URLs they stand for.
#[derive(Default)]
pub struct Links {
    links: Mutex<HashMap<String, String>>,
    counter: AtomicU64,
}

impl Links {
    pub fn new() -> Links {
        Links::default()
    }

    /// Stores `url` under a fresh code and returns the code.
    pub fn shorten(&self, url: &str) -> String {
        let mut links = self.links.lock().unwrap();
        let code = codes::encode(self.counter.fetch_add(1, Ordering::SeqCst));
        links.insert(code.clone(), url.to_string());
        code
    }

    /// The URL stored under `code`.
    pub fn resolve(&self, code: &str) -> Option<String> {
        self.links.lock().unwrap().get(code).cloned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_shortened_url_resolves() {
        let links = Links::new();
        let code = links.shorten("/guides/install");
        assert_eq!(links.resolve(&code).as_deref(), Some("/guides/install"));
    }
}
