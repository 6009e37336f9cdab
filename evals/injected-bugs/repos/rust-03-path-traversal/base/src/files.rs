//! Serving the pages of the site directory.

use std::fs;
use std::path::{Path, PathBuf};

use crate::{response, Request};

/// Serves the files of one directory.
pub struct Site {
    root: PathBuf,
}

impl Site {
    pub fn new(root: impl Into<PathBuf>) -> Site {
        Site { root: root.into() }
    }

    /// The response to `request`: the page it names, or 404.
    pub fn handle(&self, request: &Request) -> Vec<u8> {
        if request.method != "GET" {
            return response("405 Method Not Allowed", &[], b"");
        }
        let name = match request.path.as_str() {
            "/" => "index.html",
            path => path.trim_start_matches('/'),
        };
        // Only the pages at the top of the site: no directories, no parent references.
        if name.contains('/') || name.starts_with('.') {
            return response("404 Not Found", &[], b"not found");
        }
        self.file(&self.root.join(name), vec![])
    }

    fn file(&self, path: &Path, headers: Vec<(String, String)>) -> Vec<u8> {
        match fs::read(path) {
            Ok(body) => response("200 OK", &headers, &body),
            Err(_) => response("404 Not Found", &[], b"not found"),
        }
    }
}
