//! The webhook endpoints of the real `conclave serve` against an attacker who knows
//! the URL but not the secret: a bad signature, none, one over another body, GitHub's
//! older `sha1=` algorithm, a replayed delivery, an oversized body, malformed JSON
//! under a valid signature, a wrong GitLab token, and the endpoints absent when their
//! secrets are unset. Each case asserts the exact status, that nothing reached the
//! run store, and that no secret shows in any answer or in the server's log.

use conclave_core::RunStore;
use conclave_server::api::webhooks::signature::github_signature;
use conclave_store::SqliteStore;
use std::io::{BufRead, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::webhooks::{GITHUB_SECRET, GITLAB_SECRET, pull_request};

const BIN: &str = env!("CARGO_BIN_EXE_conclave");

/// A running `conclave serve` with its log kept; killed when dropped.
struct Served {
    child: Child,
    port: u16,
    log: Arc<Mutex<String>>,
    dir: tempfile::TempDir,
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `conclave serve` with the webhook secrets of `secrets` set in its environment.
fn serve(secrets: &[(&str, &str)]) -> Served {
    serve_with(secrets, &[])
}

/// [`serve`] with more arguments.
fn serve_with(secrets: &[(&str, &str)], extra: &[&str]) -> Served {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::create_dir_all(dir.path().join("conclaves")).expect("mkdir");
    let port = std::net::TcpListener::bind("127.0.0.1:0").expect("bind").local_addr().expect("addr").port();
    let mut command = Command::new(BIN);
    command
        .args(["serve", "--bind", &format!("127.0.0.1:{port}"), "--workers", "0"])
        .args(extra)
        .current_dir(dir.path())
        .env("CONCLAVE_DB", dir.path().join("runs.db"))
        .env("CONCLAVE_LOG", "debug")
        .env_remove("CONCLAVE_TOKEN")
        .env_remove("CONCLAVE_GITHUB_WEBHOOK_SECRET")
        .env_remove("CONCLAVE_GITLAB_WEBHOOK_SECRET")
        .stderr(Stdio::piped());
    for (name, value) in secrets {
        command.env(name, value);
    }
    let mut child = command.spawn().expect("serve starts");
    let mut stderr = std::io::BufReader::new(child.stderr.take().expect("stderr"));
    let log = Arc::new(Mutex::new(String::new()));
    loop {
        let mut line = String::new();
        assert!(stderr.read_line(&mut line).expect("read") > 0, "serve printed no URL: {}", log.lock().expect("log"));
        log.lock().expect("log").push_str(&line);
        if line.contains("serving on") {
            break;
        }
    }
    let keeping = log.clone();
    std::thread::spawn(move || {
        let mut chunk = [0u8; 4096];
        while let Ok(n @ 1..) = stderr.read(&mut chunk) {
            keeping.lock().expect("log").push_str(&String::from_utf8_lossy(&chunk[..n]));
        }
    });
    Served { child, port, log, dir }
}

/// One raw HTTP/1.1 POST: the status and the whole answer. A server that answers
/// before the body is all sent (a 413) may close while it is being written.
fn post(port: u16, path: &str, headers: &[(&str, &str)], body: &[u8]) -> (u16, String) {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).expect("connect");
    stream.set_read_timeout(Some(Duration::from_secs(20))).expect("timeout");
    let mut head = format!(
        "POST {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\n",
        body.len()
    );
    for (k, v) in headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str("\r\n");
    let _ = stream.write_all(head.as_bytes()).and_then(|()| stream.write_all(body));
    let mut response = Vec::new();
    let _ = stream.read_to_end(&mut response);
    let text = String::from_utf8_lossy(&response).into_owned();
    let status = text.split_whitespace().nth(1).and_then(|s| s.parse().ok()).unwrap_or(0);
    (status, text)
}

/// Every delivery the server kept, pending or ignored, read from its SQLite file.
async fn kept(served: &Served) -> usize {
    let store = SqliteStore::open(&served.dir.path().join("runs.db")).expect("open the server's store");
    store.pending_deliveries(1000).await.expect("pending").len()
}

/// A forged delivery: what it is, its headers, and a phrase of the refusal.
type Forgery<'a> = (&'a str, Vec<(&'a str, &'a str)>, &'a str);

fn github_headers<'a>(id: &'a str, signature: &'a str) -> Vec<(&'a str, &'a str)> {
    vec![("X-GitHub-Event", "pull_request"), ("X-GitHub-Delivery", id), ("X-Hub-Signature-256", signature)]
}

#[tokio::test]
async fn forged_github_deliveries_are_refused_and_nothing_is_kept() {
    let served = serve(&[("CONCLAVE_GITHUB_WEBHOOK_SECRET", GITHUB_SECRET)]);
    let body = pull_request("opened", 7, false).to_string();
    let other = pull_request("opened", 8, false).to_string();
    let valid = github_signature(GITHUB_SECRET, body.as_bytes());
    let wrong_key = github_signature("guessed-secret", body.as_bytes());
    let other_body = github_signature(GITHUB_SECRET, other.as_bytes());
    let sha1 = format!("sha1={}", &valid["sha256=".len()..][..40]);
    let truncated = valid[..valid.len() - 2].to_string();
    let cases: Vec<Forgery> = vec![
        ("a signature under another key", github_headers("f-1", &wrong_key), "does not match"),
        (
            "no signature",
            vec![("X-GitHub-Event", "pull_request"), ("X-GitHub-Delivery", "f-2")],
            "no X-Hub-Signature-256",
        ),
        ("the signature of another body", github_headers("f-3", &other_body), "does not match"),
        ("the sha1= algorithm", github_headers("f-4", &sha1), "other algorithms are refused"),
        ("a truncated signature", github_headers("f-5", &truncated), "64 hex digits"),
        ("the signature without its prefix", github_headers("f-6", &valid["sha256=".len()..]), "64 hex digits"),
    ];
    for (what, headers, phrase) in &cases {
        let (status, answer) = post(served.port, "/webhooks/github", headers, body.as_bytes());
        assert_eq!(status, 401, "{what}: {answer}");
        assert!(answer.contains(phrase), "{what}: {answer}");
        assert!(!answer.contains(GITHUB_SECRET) && !answer.contains("WWW-Authenticate"), "{what}: {answer}");
    }
    // Valid JSON's signature does not sign malformed JSON; a valid signature over
    // malformed JSON is a 400 that says why, and stores nothing.
    let broken = br#"{"action": "opened", "pull_request": "#;
    let signed = github_signature(GITHUB_SECRET, broken);
    let (status, answer) = post(served.port, "/webhooks/github", &github_headers("f-7", &signed), broken);
    assert_eq!(status, 400, "{answer}");
    assert!(answer.contains("not valid JSON") && answer.contains("line 1"), "{answer}");
    assert_eq!(kept(&served).await, 0, "no refused delivery reached the store");
    // The genuine delivery is kept, once: its replay is acknowledged and does nothing.
    let (status, answer) = post(served.port, "/webhooks/github", &github_headers("f-8", &valid), body.as_bytes());
    assert_eq!(status, 202, "{answer}");
    for _ in 0..3 {
        let (status, answer) = post(served.port, "/webhooks/github", &github_headers("f-8", &valid), body.as_bytes());
        assert_eq!(status, 200, "a replay: {answer}");
        assert!(answer.contains("\"duplicate\""), "{answer}");
    }
    assert_eq!(kept(&served).await, 1, "kept once");
    // No secret in the log, though every refusal was logged.
    let log = served.log.lock().expect("log").clone();
    assert!(log.contains("refused a github webhook delivery"), "{log}");
    assert!(!log.contains(GITHUB_SECRET) && !log.contains(&valid[7..]), "{log}");
}

#[tokio::test]
async fn an_oversized_delivery_is_refused_before_its_signature_is_read() {
    let served = serve(&[("CONCLAVE_GITHUB_WEBHOOK_SECRET", GITHUB_SECRET)]);
    let mut body = pull_request("opened", 7, false).to_string().into_bytes();
    body.pop();
    body.extend(format!(",\"padding\":\"{}\"}}", "x".repeat(2 * 1024 * 1024)).into_bytes());
    let signature = github_signature(GITHUB_SECRET, &body);
    let (status, answer) = post(served.port, "/webhooks/github", &github_headers("big-1", &signature), &body);
    assert_eq!(status, 413, "{}", &answer[..answer.len().min(400)]);
    assert!(answer.contains("larger than 2097152 bytes"), "{answer}");
    assert_eq!(kept(&served).await, 0);
}

#[tokio::test]
async fn gitlab_deliveries_need_the_token_and_replays_do_nothing() {
    let served = serve(&[("CONCLAVE_GITLAB_WEBHOOK_SECRET", GITLAB_SECRET)]);
    let body = serde_json::json!({
        "object_kind": "merge_request", "user": {"username": "dee"}, "project": {"path_with_namespace": "g/p"},
        "object_attributes": {"iid": 1, "action": "open", "target_branch": "main", "last_commit": {"id": "abc"}}
    })
    .to_string();
    let hook = ("X-Gitlab-Event", "Merge Request Hook");
    let near = &GITLAB_SECRET[..GITLAB_SECRET.len() - 1];
    let longer = format!("{GITLAB_SECRET}x");
    for (what, token) in [
        ("a wrong token", Some("guess")),
        ("almost the token", Some(near)),
        ("a longer one", Some(longer.as_str())),
        ("none", None),
    ] {
        let mut headers = vec![hook, ("Idempotency-Key", "gl-1")];
        headers.extend(token.map(|t| ("X-Gitlab-Token", t)));
        let (status, answer) = post(served.port, "/webhooks/gitlab", &headers, body.as_bytes());
        assert_eq!(status, 401, "{what}: {answer}");
        assert!(answer.contains("X-Gitlab-Token") && !answer.contains(GITLAB_SECRET), "{what}: {answer}");
    }
    assert_eq!(kept(&served).await, 0);
    let genuine = [hook, ("Idempotency-Key", "gl-1"), ("X-Gitlab-Token", GITLAB_SECRET)];
    assert_eq!(post(served.port, "/webhooks/gitlab", &genuine, body.as_bytes()).0, 202);
    assert_eq!(post(served.port, "/webhooks/gitlab", &genuine, body.as_bytes()).0, 200, "a retry");
    assert_eq!(kept(&served).await, 1);
    // GitHub's endpoint is not there: its secret is not set.
    let signature = github_signature(GITHUB_SECRET, body.as_bytes());
    let (status, answer) = post(served.port, "/webhooks/github", &github_headers("x", &signature), body.as_bytes());
    assert_eq!(status, 404, "{answer}");
    let log = served.log.lock().expect("log").clone();
    assert!(!log.contains(GITLAB_SECRET), "{log}");
}

#[tokio::test]
async fn without_secrets_neither_endpoint_exists() {
    let served = serve(&[]);
    for path in ["/webhooks/github", "/webhooks/gitlab"] {
        let (status, answer) = post(served.port, path, &[("X-Gitlab-Token", "")], b"{}");
        assert_eq!(status, 404, "{path}: {answer}");
    }
    assert_eq!(kept(&served).await, 0);
}

#[tokio::test]
async fn the_served_banner_names_the_endpoints_and_review_drafts_takes_drafts() {
    let secrets = [("CONCLAVE_GITHUB_WEBHOOK_SECRET", GITHUB_SECRET)];
    let draft = pull_request("opened", 9, true).to_string();
    let signature = github_signature(GITHUB_SECRET, draft.as_bytes());
    let waiting = serve(&secrets);
    let (status, answer) =
        post(waiting.port, "/webhooks/github", &github_headers("dr-1", &signature), draft.as_bytes());
    assert_eq!(status, 202, "{answer}");
    assert!(answer.contains("\"ignored\"") && answer.contains("draft"), "{answer}");
    // The banner's last line follows the one the start waited for.
    let phrase = "receiving webhook deliveries at POST /webhooks/github,";
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while !waiting.log.lock().expect("log").contains(phrase) && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    let log = waiting.log.lock().expect("log").clone();
    assert!(log.contains(phrase), "{log}");
    let reviewing = serve_with(&secrets, &["--review-drafts"]);
    let (status, answer) =
        post(reviewing.port, "/webhooks/github", &github_headers("dr-1", &signature), draft.as_bytes());
    assert_eq!(status, 202, "{answer}");
    assert!(answer.contains("\"accepted\""), "{answer}");
    assert_eq!(kept(&reviewing).await, 1);
}
