//! The editor's files: built into the binary at compile time from `client/dist`
//! (so `conclave serve` shows the editor from any directory, with no other files),
//! or served from a directory for editor development (`--editor-dir`). Each file is
//! stored beside its Brotli and gzip copies (`scripts/build-editor.sh` makes them),
//! and the request's `Accept-Encoding` chooses which is sent (`encoding.rs`). A binary
//! built before the editor was has no files to embed; it serves a page saying how to
//! get the editor, and `conclave serve` says the same on standard error.

use axum::Router;
use axum::body::Body;
use axum::http::header::{CACHE_CONTROL, CONTENT_ENCODING, CONTENT_LENGTH, CONTENT_TYPE, ETAG, VARY};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, Uri};
use axum::response::{Html, IntoResponse, Response};
use rust_embed::{Embed, EmbeddedFile};
use std::path::{Path, PathBuf};

use super::ApiError;
use super::encoding::{self, Coding};
use super::precondition::none_match_names;

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
            // The precompressed copies build-editor.sh made, chosen by Accept-Encoding.
            let page =
                tower_http::services::ServeFile::new(dir.join("index.html")).precompressed_br().precompressed_gzip();
            let files = tower_http::services::ServeDir::new(dir).precompressed_br().precompressed_gzip().fallback(page);
            Router::new().fallback_service(files).layer(axum::middleware::map_response(vary_by_encoding))
        }
        EditorSource::Missing => Router::new().fallback(|| async { Html(missing_page()) }),
    }
}

/// Answers a request for one of the embedded files in the coding the request accepts
/// best, with its type, an entity tag of exactly the bytes sent (so each coding has
/// its own, and an unchanged file is not sent again), and caching that never serves a
/// stale editor after an upgrade: files are revalidated on every load. A HEAD gets
/// the same headers as a GET, `Content-Length` included.
async fn embedded(method: Method, uri: Uri, headers: HeaderMap) -> Response {
    if method != Method::GET && method != Method::HEAD {
        return ApiError::MethodNotAllowed.into_response();
    }
    let path = uri.path().trim_start_matches('/');
    let name = if !path.is_empty() && Bundle::get(path).is_some() { path } else { "index.html" };
    let (Some(original), Some((coding, file))) = (Bundle::get(name), stored(name, &headers)) else {
        return Html(missing_page()).into_response();
    };
    let tag = format!("\"{}\"", hex::encode(file.metadata.sha256_hash()));
    let mut response = Response::new(Body::empty());
    let h = response.headers_mut();
    if let Ok(value) = HeaderValue::from_str(&tag) {
        h.insert(ETAG, value);
    }
    h.insert(CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    h.insert(VARY, HeaderValue::from_static("accept-encoding"));
    if none_match_names(&headers, &tag) {
        *response.status_mut() = StatusCode::NOT_MODIFIED;
        return response;
    }
    // The type is the original file's, whichever coding carries it.
    if let Ok(value) = HeaderValue::from_str(original.metadata.mimetype()) {
        h.insert(CONTENT_TYPE, value);
    }
    if coding != Coding::Identity {
        h.insert(CONTENT_ENCODING, HeaderValue::from_static(coding.token()));
    }
    h.insert(CONTENT_LENGTH, HeaderValue::from(file.data.len()));
    if method == Method::GET {
        *response.body_mut() = Body::from(file.data);
    }
    response
}

/// The file `name` in the coding the request accepts best among those it is stored
/// in, or `None` when there is no such file.
fn stored(name: &str, headers: &HeaderMap) -> Option<(Coding, EmbeddedFile)> {
    let copy = |coding: Coding| Bundle::get(&format!("{name}{}", coding.suffix()));
    let mut codings: Vec<Coding> =
        [Coding::Brotli, Coding::Gzip].into_iter().filter(|&coding| copy(coding).is_some()).collect();
    codings.push(Coding::Identity);
    let coding = encoding::choose(headers, &codings);
    Some((coding, copy(coding)?))
}

/// Adds `Vary: Accept-Encoding` to a file of `--editor-dir`, which tower-http's file
/// service chose by that header but does not say so.
async fn vary_by_encoding(mut response: Response) -> Response {
    response.headers_mut().append(VARY, HeaderValue::from_static("accept-encoding"));
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
