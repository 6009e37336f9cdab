//! The attack suite against `/mcp` on a real `conclave serve`: a request without the
//! token, with a wrong one, from a foreign page or to a foreign Host is refused before
//! MCP sees it; a repository outside the roots, a base that is not a commit (or is a
//! git option), an unknown run and a path in a resource URI are refused with clear
//! messages as tool or JSON-RPC errors, and the same keep-alive connection goes on
//! answering.

use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::time::Duration;

use crate::mcp_server::serve;

const TOKEN: &str = "attack-mcp-token-8123";

/// A JSON-RPC request to `/mcp` as HTTP/1.1 bytes, kept alive.
fn post(host: &str, headers: &[(&str, &str)], body: &Value) -> String {
    let body = body.to_string();
    let mut text = format!(
        "POST /mcp HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2025-11-25\r\nContent-Length: {}\r\n",
        body.len()
    );
    for (k, v) in headers {
        text.push_str(&format!("{k}: {v}\r\n"));
    }
    text + "\r\n" + &body
}

/// Sends `request` on `stream` and reads one response: its status and body.
fn exchange(stream: &mut TcpStream, request: &str) -> (u16, String) {
    let (status, _, body) = exchange_with_headers(stream, request);
    (status, body)
}

/// [`exchange`], with the response's header lines (lowercased).
fn exchange_with_headers(stream: &mut TcpStream, request: &str) -> (u16, String, String) {
    stream.write_all(request.as_bytes()).expect("send");
    let mut reader = BufReader::new(stream.try_clone().expect("clone"));
    let mut line = String::new();
    reader.read_line(&mut line).expect("status line");
    let status = line.split_whitespace().nth(1).and_then(|s| s.parse().ok()).unwrap_or(0);
    let mut length = 0;
    let mut headers = String::new();
    loop {
        line.clear();
        reader.read_line(&mut line).expect("header");
        if line.trim().is_empty() {
            break;
        }
        headers.push_str(&line.to_ascii_lowercase());
        if let Some((name, value)) = line.split_once(':')
            && name.eq_ignore_ascii_case("content-length")
        {
            length = value.trim().parse().expect("a length");
        }
    }
    let mut body = vec![0; length];
    reader.read_exact(&mut body).expect("body");
    (status, headers, String::from_utf8_lossy(&body).into_owned())
}

fn connect(port: u16) -> TcpStream {
    let stream = TcpStream::connect(("127.0.0.1", port)).expect("connect");
    stream.set_read_timeout(Some(Duration::from_secs(120))).expect("timeout");
    stream
}

fn call(id: u64, name: &str, arguments: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": name, "arguments": arguments}})
}

/// A git repository with one commit on `main`, in `dir`.
fn repository(dir: &Path) -> std::path::PathBuf {
    let repo = dir.join("repo");
    std::fs::create_dir_all(&repo).expect("mkdir");
    conclave_testkit::git(&repo, &["init", "-q", "-b", "main"]);
    std::fs::write(repo.join("a.txt"), "a\n").expect("write");
    conclave_testkit::git(&repo, &["add", "."]);
    conclave_testkit::git(&repo, &["commit", "-q", "-m", "a"]);
    repo
}

/// A request's Host and headers, and the status and phrase it must get.
type Refused<'a> = (&'a str, Vec<(&'a str, &'a str)>, u16, &'a str);

#[test]
fn mcp_is_refused_without_the_token_from_foreign_pages_and_to_foreign_hosts() {
    let dir = tempfile::tempdir().expect("tempdir");
    let served = serve(dir.path(), &[], TOKEN, dir.path());
    let host = format!("127.0.0.1:{}", served.port);
    let list = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"});
    let bearer = format!("Bearer {TOKEN}");
    let cases: Vec<Refused> = vec![
        (&host, vec![], 401, "requires its token"),
        (&host, vec![("Authorization", "Bearer wrong-token")], 401, "requires its token"),
        (&host, vec![("Authorization", &bearer), ("Origin", "http://evil.example")], 403, "cross-origin"),
        ("evil.example", vec![("Authorization", &bearer)], 403, "does not answer to that Host"),
    ];
    for (host, headers, status, phrase) in cases {
        let (got, answer_headers, body) =
            exchange_with_headers(&mut connect(served.port), &post(host, &headers, &list));
        assert_eq!(got, status, "{headers:?} to {host}: {body}");
        if status == 401 {
            assert!(answer_headers.contains("www-authenticate: bearer"), "a 401 names its scheme: {answer_headers}");
        }
        assert!(body.contains(phrase), "{headers:?}: {body}");
        assert!(!body.contains("review"), "no tool is listed to a refused request: {body}");
    }
    let (got, body) = exchange(&mut connect(served.port), &post(&host, &[("Authorization", &bearer)], &list));
    assert_eq!(got, 200, "{body}");
    assert!(body.contains("\"review\""), "{body}");
}

#[test]
fn mcp_refuses_bad_input_as_errors_and_keeps_the_connection() {
    let dir = tempfile::tempdir().expect("tempdir");
    let roots = dir.path().join("roots");
    std::fs::create_dir_all(&roots).expect("mkdir");
    let repo = repository(&roots);
    let elsewhere = repository(&dir.path().join("elsewhere"));
    let served = serve(dir.path(), &[], TOKEN, &roots);
    let host = format!("127.0.0.1:{}", served.port);
    let bearer = format!("Bearer {TOKEN}");
    let auth = [("Authorization", bearer.as_str())];
    let repo = repo.display().to_string();
    let read = |id, uri: &str| json!({"jsonrpc": "2.0", "id": id, "method": "resources/read", "params": {"uri": uri}});
    let cases = [
        (
            call(1, "review", json!({"repository": elsewhere, "base": "main"})),
            "is not a repository under this server's allowed roots",
        ),
        (
            call(2, "review", json!({"repository": "/etc", "base": "main"})),
            "`/etc` is not a repository under this server's allowed roots",
        ),
        (
            call(3, "review", json!({"repository": format!("{repo}/../../elsewhere/repo"), "base": "main"})),
            "is not a repository under this server's allowed roots",
        ),
        (
            call(4, "review", json!({"repository": repo, "base": "no-such-commit"})),
            "`no-such-commit` is not a commit in this repository",
        ),
        (call(5, "review", json!({"repository": repo, "base": "--output=/tmp/pwned"})), "is not a commit"),
        (call(6, "get_review", json!({"run": "no-such-run"})), "no run `no-such-run`"),
        (call(7, "approve", json!({"run": "no-such-run", "node": "n", "decision": "approve"})), "no-such-run"),
        (read(8, "conclave://conclaves/../../secret"), "is not a conclave id"),
        (read(9, "conclave://conclaves/%2e%2e%2fsecret"), "is not a conclave id"),
        (read(10, "conclave://runs/../x/report.md"), "is not a run id"),
        (read(11, "file:///etc/passwd"), "no resource `file:///etc/passwd`"),
    ];
    // One keep-alive connection for every refusal: none closes it.
    let mut stream = connect(served.port);
    for (request, phrase) in &cases {
        let (status, body) = exchange(&mut stream, &post(&host, &auth, request));
        assert_eq!(status, 200, "{request}: {body}");
        let answer: Value = serde_json::from_str(&body).unwrap_or_else(|e| panic!("{e}: {body}"));
        let refused = answer["result"]["isError"] == true || answer["error"].is_object();
        assert!(refused, "{request} is refused: {answer}");
        assert!(body.contains(phrase), "{request} says `{phrase}`: {body}");
    }
    assert!(!Path::new("/tmp/pwned").exists(), "a git option never reached git");
    let (status, body) =
        exchange(&mut stream, &post(&host, &auth, &json!({"jsonrpc": "2.0", "id": 99, "method": "tools/list"})));
    assert_eq!(status, 200, "the connection still answers: {body}");
    assert!(body.contains("\"review\""), "{body}");
}
