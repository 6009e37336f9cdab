//! Git over HTTP on the fake GitHub and the fake GitLab: git's own `git http-backend`
//! run as a CGI program for each request under `/{owner}/{name}.git/`, serving the
//! bare repositories of a directory, once the fake has checked the request's Basic
//! credentials (a token as the password) as the forge's git endpoint does. Any
//! commit can be fetched by its sha, reachable from a ref or not, as a forge serves a
//! pull request's commits.

use axum::body::Body;
use axum::http::{Request, Response};
use base64::Engine;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use tokio::io::AsyncWriteExt;

/// How a forge's git endpoint asks for credentials: its realm and the text of its 401.
pub(crate) struct Realm {
    /// `GitHub`, `GitLab`.
    pub(crate) name: &'static str,
    /// The body of the 401.
    pub(crate) refusal: &'static str,
}

/// Whether a request path is git's (`/owner/name.git/...`).
pub(crate) fn is_git(path: &str) -> bool {
    path.split('/').any(|segment| segment.ends_with(".git"))
}

/// The user and password of a Basic `Authorization` header, if any.
pub(crate) fn basic_credentials(request: &Request<Body>) -> Option<(String, String)> {
    let value = request.headers().get("authorization")?.to_str().ok()?;
    let encoded = value.strip_prefix("Basic ")?;
    let decoded = base64::engine::general_purpose::STANDARD.decode(encoded.trim()).ok()?;
    let text = String::from_utf8(decoded).ok()?;
    let (user, password) = text.split_once(':')?;
    Some((user.to_string(), password.to_string()))
}

/// Answers a git request the fake has judged: 404 when it serves no repositories
/// (`root` is `None`), 401 asking for Basic credentials when they were refused, else
/// `git http-backend` serving the repositories under `root`.
pub(crate) async fn answer(
    root: Option<PathBuf>,
    accepted: bool,
    realm: &Realm,
    request: Request<Body>,
) -> Response<Body> {
    match (root, accepted) {
        (None, _) => status(404, "Not Found"),
        (Some(_), false) => Response::builder()
            .status(401)
            .header("www-authenticate", format!("Basic realm=\"{}\"", realm.name))
            .body(Body::from(realm.refusal))
            .expect("response"),
        (Some(root), true) => serve(&root, request).await,
    }
}

/// Answers `request` with `git http-backend` serving the repositories under `root`.
/// The backend may send any object asked for (`uploadpack.allowAnySHA1InWant`), so
/// that a commit is fetched by its sha over every protocol version.
async fn serve(root: &Path, request: Request<Body>) -> Response<Body> {
    let user = basic_credentials(&request).map(|(user, _)| user).unwrap_or_default();
    let (parts, body) = request.into_parts();
    let body = axum::body::to_bytes(body, 256 * 1024 * 1024).await.unwrap_or_default();
    let header = |name: &str| parts.headers.get(name).and_then(|v| v.to_str().ok()).unwrap_or("").to_string();
    let mut command = tokio::process::Command::new("git");
    command
        .arg("http-backend")
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("GIT_PROJECT_ROOT", root)
        .env("GIT_HTTP_EXPORT_ALL", "1")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_COUNT", "1")
        .env("GIT_CONFIG_KEY_0", "uploadpack.allowAnySHA1InWant")
        .env("GIT_CONFIG_VALUE_0", "true")
        .env("REQUEST_METHOD", parts.method.as_str())
        .env("PATH_INFO", parts.uri.path())
        .env("QUERY_STRING", parts.uri.query().unwrap_or(""))
        .env("CONTENT_TYPE", header("content-type"))
        .env("CONTENT_LENGTH", body.len().to_string())
        .env("HTTP_CONTENT_ENCODING", header("content-encoding"))
        .env("HTTP_GIT_PROTOCOL", header("git-protocol"))
        .env("REMOTE_USER", user)
        .env("REMOTE_ADDR", "127.0.0.1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let Ok(mut child) = command.spawn() else { return status(500, "cannot run git http-backend") };
    if let Some(mut stdin) = child.stdin.take() {
        let _ = stdin.write_all(&body).await;
    }
    let Ok(output) = child.wait_with_output().await else { return status(500, "git http-backend failed") };
    cgi_response(&output.stdout)
}

/// The HTTP response of a CGI program's output: headers (with `Status:`), a blank
/// line, the body.
fn cgi_response(output: &[u8]) -> Response<Body> {
    let split = output.windows(4).position(|w| w == b"\r\n\r\n").map(|i| (i, 4));
    let split = split.or_else(|| output.windows(2).position(|w| w == b"\n\n").map(|i| (i, 2)));
    let Some((end, gap)) = split else { return status(502, "git http-backend wrote no headers") };
    let mut builder = Response::builder().status(200);
    for line in String::from_utf8_lossy(&output[..end]).lines() {
        let Some((name, value)) = line.split_once(':') else { continue };
        let value = value.trim();
        if name.eq_ignore_ascii_case("status") {
            let code = value.split_whitespace().next().and_then(|c| c.parse::<u16>().ok()).unwrap_or(500);
            builder = builder.status(code);
        } else {
            builder = builder.header(name.trim(), value);
        }
    }
    builder.body(Body::from(output[end + gap..].to_vec())).unwrap_or_else(|_| status(502, "bad CGI headers"))
}

fn status(code: u16, message: &str) -> Response<Body> {
    Response::builder().status(code).body(Body::from(message.to_string())).expect("response")
}
