//! The editor's files: built into the binary at compile time from `client/dist`
//! (so `conclave serve` shows the editor from any directory, with no other files),
//! or served from a directory for editor development (`--editor-dir`). A binary
//! built before the editor was has no files to embed; it serves a page saying how to
//! get the editor, and `conclave serve` says the same on standard error.

use axum::Router;
use axum::body::Body;
use axum::http::header::{CACHE_CONTROL, CONTENT_TYPE, ETAG, IF_NONE_MATCH};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, Uri};
use axum::response::{Html, IntoResponse, Response};
use rust_embed::Embed;
use std::path::{Path, PathBuf};

use super::ApiError;

/// The built editor, as `scripts/build-editor.sh` leaves it in `client/dist`.
#[derive(Embed)]
#[folder = "../client/dist/"]
#[allow_missing = true]
struct Bundle;

/// Where the editor's files come from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EditorSource {
    /// Built into this binary.
    Embedded,
    /// A directory with a built editor (for editor development).
    Directory(PathBuf),
    /// Neither: this binary was built before the editor was.
    Missing,
}

impl EditorSource {
    /// The editor built into this binary, if it was built with one.
    pub fn embedded() -> EditorSource {
        if Bundle::get("index.html").is_some() { EditorSource::Embedded } else { EditorSource::Missing }
    }

    /// The editor in `dir`, which must hold a built editor (`index.html` and the wasm
    /// bundle); the error says what is wrong and what to do.
    pub fn directory(dir: &Path) -> Result<EditorSource, String> {
        if dir.join("index.html").is_file() {
            Ok(EditorSource::Directory(dir.to_path_buf()))
        } else {
            Err(format!(
                "{} holds no built editor (no index.html): build one there with `bash scripts/build-editor.sh`, \
                 or leave --editor-dir out to serve the editor built into conclave",
                dir.display()
            ))
        }
    }

    /// What `conclave serve` should tell its user about this source, if anything.
    pub fn notice(&self) -> Option<String> {
        match self {
            EditorSource::Embedded => None,
            EditorSource::Directory(dir) => Some(format!("serving the editor from {}", dir.display())),
            EditorSource::Missing => Some(MISSING_NOTICE.into()),
        }
    }
}

/// Said when the binary has no editor built in.
const MISSING_NOTICE: &str = "this conclave was built without the editor, so only the API is served: \
build the editor with `bash scripts/build-editor.sh`, then rebuild conclave (`cargo build --bin conclave`, \
or `cargo install --locked --path server`)";

/// The routes of the editor's files from `source`; every path that is not a file is
/// the editor's page, which routes in the browser.
pub fn routes<S: Clone + Send + Sync + 'static>(source: &EditorSource) -> Router<S> {
    match source {
        EditorSource::Embedded => Router::new().fallback(embedded),
        EditorSource::Directory(dir) => {
            let files = tower_http::services::ServeDir::new(dir)
                .fallback(tower_http::services::ServeFile::new(dir.join("index.html")));
            Router::new().fallback_service(files)
        }
        EditorSource::Missing => Router::new().fallback(|| async { Html(missing_page()) }),
    }
}

/// Answers a request for one of the embedded files, with its type, an entity tag
/// (so an unchanged file is not sent again) and caching that never serves a stale
/// editor after an upgrade: files are revalidated on every load.
async fn embedded(method: Method, uri: Uri, headers: HeaderMap) -> Response {
    if method != Method::GET && method != Method::HEAD {
        return ApiError::MethodNotAllowed.into_response();
    }
    let path = uri.path().trim_start_matches('/');
    let Some(file) = Bundle::get(path).filter(|_| !path.is_empty()).or_else(|| Bundle::get("index.html")) else {
        return Html(missing_page()).into_response();
    };
    let tag = format!("\"{}\"", hex::encode(file.metadata.sha256_hash()));
    if headers.get(IF_NONE_MATCH).is_some_and(|given| given.as_bytes() == tag.as_bytes()) {
        return (StatusCode::NOT_MODIFIED, [(ETAG, tag)]).into_response();
    }
    let mut response = Response::new(if method == Method::HEAD { Body::empty() } else { Body::from(file.data) });
    let h = response.headers_mut();
    if let Ok(value) = HeaderValue::from_str(file.metadata.mimetype()) {
        h.insert(CONTENT_TYPE, value);
    }
    if let Ok(value) = HeaderValue::from_str(&tag) {
        h.insert(ETAG, value);
    }
    h.insert(CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    response
}

/// The page served when there is no editor: what runs, and how to get the editor.
fn missing_page() -> String {
    format!(
        "<!doctype html><meta charset=utf-8><title>Conclave</title><body><h1>Conclave</h1>\
         <p>The API is running at <code>/api</code> (see <a href=\"/api/openapi.json\">/api/openapi.json</a>).</p>\
         <p>The editor is not here: {}.</p>",
        MISSING_NOTICE.replace('`', "")
    )
}
