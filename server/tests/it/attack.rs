//! Conclave's attack suite against `conclave serve` and the CLI, as a hostile web page
//! or a hostile input would try it: each case asserts the exact outcome and that
//! nothing was written, started or leaked. The sandbox's cases are in the review
//! crate's tests (`tools_sandbox.rs`), the secrets' in `providers_cli.rs`.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_conclave");

/// A running `conclave serve` in a temporary workspace; killed when dropped.
struct Served {
    child: Child,
    port: u16,
    token: String,
    dir: tempfile::TempDir,
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").expect("bind").local_addr().expect("addr").port()
}

fn serve(extra: &[&str]) -> Served {
    serve_by(Command::new(BIN), extra)
}

/// `conclave serve` started by `command` (the binary, or a program that runs it).
fn serve_by(mut command: Command, extra: &[&str]) -> Served {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::create_dir_all(dir.path().join("conclaves")).expect("mkdir");
    std::fs::write(dir.path().join("secret.json"), r#"{"password": "planted-value-9931"}"#).expect("write");
    let port = free_port();
    let mut child = command
        .args(["serve", "--bind", &format!("127.0.0.1:{port}")])
        .args(extra)
        .current_dir(dir.path())
        .env("CONCLAVE_DB", dir.path().join("runs.db"))
        .env_remove("CONCLAVE_TOKEN")
        .stderr(Stdio::piped())
        .spawn()
        .expect("serve starts");
    let mut banner = String::new();
    let mut stderr = std::io::BufReader::new(child.stderr.take().expect("stderr"));
    while !banner.contains("serving on") {
        banner.clear();
        assert!(std::io::BufRead::read_line(&mut stderr, &mut banner).expect("read") > 0, "serve printed no URL");
    }
    std::thread::spawn(move || std::io::copy(&mut stderr, &mut std::io::sink()));
    let token = banner.split_once("#token=").map(|(_, t)| t.split_whitespace().next().unwrap_or("").to_string());
    Served { child, port, token: token.unwrap_or_default(), dir }
}

/// One raw HTTP/1.1 exchange: the status and the body.
fn raw(port: u16, request: &str) -> (u16, String) {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).expect("connect");
    stream.set_read_timeout(Some(Duration::from_secs(10))).expect("timeout");
    stream.write_all(request.as_bytes()).expect("send");
    let mut response = Vec::new();
    let _ = stream.read_to_end(&mut response);
    let text = String::from_utf8_lossy(&response).into_owned();
    let status = text.split_whitespace().nth(1).and_then(|s| s.parse().ok()).unwrap_or(0);
    let body = text.split_once("\r\n\r\n").map(|(_, b)| b.to_string()).unwrap_or_default();
    (status, body)
}

fn request(method: &str, path: &str, headers: &[(&str, &str)], body: &str) -> String {
    let mut text = format!("{method} {path} HTTP/1.1\r\nConnection: close\r\nContent-Length: {}\r\n", body.len());
    for (k, v) in headers {
        text.push_str(&format!("{k}: {v}\r\n"));
    }
    text + "\r\n" + body
}

/// A request (method, headers, path) and what must come back (status, a phrase).
type Case<'a> = (&'a str, Vec<(&'a str, &'a str)>, &'a str, u16, &'a str);

const CONCLAVE: &str = r#"{"version":1,"id":"planted","name":"p","nodes":[{"id":"t","kind":"trigger","label":"t","position":{"x":0,"y":0}}],"edges":[]}"#;

/// What a hostile page (or a careless client) might send, and what it must get.
fn hostile_requests<'a>(host: &'a str, bearer: &'a str) -> Vec<Case<'a>> {
    let evil_origin = ("Origin", "http://evil.example");
    vec![
        // A cross-site "simple" request: text/plain, a foreign Origin, no token.
        (
            "POST",
            vec![("Host", host), ("Content-Type", "text/plain"), evil_origin],
            "/api/conclaves",
            403,
            "cross-origin",
        ),
        // The same with the token (stolen or not, the Origin is foreign).
        (
            "POST",
            vec![("Host", host), ("Content-Type", "application/json"), evil_origin, ("Authorization", bearer)],
            "/api/conclaves",
            403,
            "cross-origin",
        ),
        // DNS rebinding: the page's own origin, but a foreign Host.
        (
            "GET",
            vec![("Host", "evil.example:7700"), ("Authorization", bearer)],
            "/api/conclaves",
            403,
            "does not answer to that Host",
        ),
        (
            "GET",
            vec![("Host", "evil.example"), ("Origin", "http://evil.example")],
            "/",
            403,
            "does not answer to that Host",
        ),
        // No token, a wrong token.
        ("GET", vec![("Host", host)], "/api/conclaves", 401, "requires its token"),
        ("GET", vec![("Host", host), ("Authorization", "Bearer 0000")], "/api/runs", 401, "requires its token"),
        (
            "POST",
            vec![("Host", host), ("Content-Type", "application/json")],
            "/api/conclaves",
            401,
            "requires its token",
        ),
        // A form post with the token but not JSON.
        (
            "POST",
            vec![("Host", host), ("Content-Type", "text/plain"), ("Authorization", bearer)],
            "/api/conclaves",
            415,
            "Content-Type: application/json",
        ),
        (
            "POST",
            vec![("Host", host), ("Content-Type", "application/x-www-form-urlencoded"), ("Authorization", bearer)],
            "/api/runs",
            415,
            "Content-Type: application/json",
        ),
        (
            "POST",
            vec![("Host", host), ("Authorization", bearer)],
            "/api/runs/x/cancel",
            415,
            "Content-Type: application/json",
        ),
    ]
}

#[test]
fn a_hostile_page_can_neither_write_nor_read() {
    let s = serve(&[]);
    assert_eq!(s.token.len(), 64, "a random token is printed in the URL");
    let host = format!("127.0.0.1:{}", s.port);
    let bearer = format!("Bearer {}", s.token);
    for (method, headers, path, status, says) in hostile_requests(&host, &bearer) {
        let body = if method == "POST" { CONCLAVE } else { "" };
        let (got, text) = raw(s.port, &request(method, path, &headers, body));
        assert_eq!(got, status, "{method} {path} {headers:?}: {text}");
        assert!(text.contains(says), "{method} {path}: {text}");
        let json: serde_json::Value = serde_json::from_str(&text).expect("the error body is JSON");
        assert_eq!(json["error"]["status"], status);
    }
    // A token one character off, at either end or cut short, is no token.
    let t = &s.token;
    for near in [format!("x{}", &t[1..]), format!("{}x", &t[..t.len() - 1]), t[..t.len() - 3].to_string()] {
        let wrong = format!("Bearer {near}");
        let (got, text) = raw(s.port, &request("GET", "/api/runs", &[("Host", &host), ("Authorization", &wrong)], ""));
        assert_eq!(got, 401, "{near}: {text}");
    }
    assert!(!s.dir.path().join("conclaves/planted.conclave.json").exists(), "nothing was written");
    // The editor's own page, same origin, with the token, works.
    let same = format!("http://{host}");
    let ok = [
        ("Host", host.as_str()),
        ("Origin", same.as_str()),
        ("Authorization", bearer.as_str()),
        ("Content-Type", "application/json"),
    ];
    let (status, text) = raw(s.port, &request("POST", "/api/conclaves", &ok, CONCLAVE));
    assert_eq!(status, 201, "{text}");
    let (status, page) = raw(s.port, &request("GET", "/", &[("Host", &host)], ""));
    assert_eq!(status, 200);
    assert!(page.contains("Conclave"), "{page}");
}

#[test]
fn the_editor_page_forbids_inline_script() {
    let s = serve(&[]);
    let mut stream = TcpStream::connect(("127.0.0.1", s.port)).expect("connect");
    stream.write_all(request("GET", "/", &[("Host", "localhost")], "").as_bytes()).expect("send");
    let mut text = String::new();
    let _ = stream.read_to_string(&mut text);
    let csp = text.lines().find(|l| l.to_ascii_lowercase().starts_with("content-security-policy:")).expect("a CSP");
    assert!(csp.contains("script-src 'self' 'wasm-unsafe-eval'") && !csp.contains("unsafe-inline"), "{csp}");
    assert!(text.to_ascii_lowercase().contains("x-frame-options: deny"));
}

#[test]
fn conclave_ids_are_never_paths_and_repositories_stay_under_the_roots() {
    let s = serve(&[]);
    let host = format!("127.0.0.1:{}", s.port);
    let bearer = format!("Bearer {}", s.token);
    let headers = [("Host", host.as_str()), ("Authorization", bearer.as_str()), ("Content-Type", "application/json")];
    let planted = s.dir.path().join("secret.json").display().to_string();
    for id in [planted.as_str(), "../secret", "secret.json", "/etc/passwd", "..%2Fsecret"] {
        let body = serde_json::json!({"conclave_id": id, "input": "x"}).to_string();
        let (status, text) = raw(s.port, &request("POST", "/api/runs", &headers, &body));
        assert_eq!(status, 404, "{id}: {text}");
        assert!(!text.contains("planted-value"), "{id} echoed a planted file: {text}");
    }
    let outside = tempfile::tempdir().expect("tempdir");
    let body =
        serde_json::json!({"conclave_id": "light-code-review", "review": {"repository": outside.path()}}).to_string();
    let (status, text) = raw(s.port, &request("POST", "/api/runs", &headers, &body));
    assert_eq!(status, 403, "{text}");
    assert!(text.contains("allowed roots"), "{text}");
    let (status, text) = raw(s.port, &request("GET", "/api/runs?limit=lots", &headers[..2], ""));
    assert_eq!(status, 400, "a bad query string gets the JSON error body: {text}");
    assert!(serde_json::from_str::<serde_json::Value>(&text).is_ok(), "{text}");
    let (status, text) = raw(s.port, &request("DELETE", "/api/runs", &headers, ""));
    assert_eq!(status, 405, "{text}");
    assert!(text.contains("does not take that method"), "{text}");
}

#[test]
fn no_token_is_for_loopback_only() {
    let out = Command::new(BIN)
        .args(["serve", "--bind", "0.0.0.0:0", "--no-token"])
        .env_remove("CONCLAVE_TOKEN")
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--no-token is allowed on loopback only"));
    let s = serve(&["--no-token"]);
    assert!(s.token.is_empty(), "no token in the URL");
    let host = format!("127.0.0.1:{}", s.port);
    assert_eq!(raw(s.port, &request("GET", "/api/conclaves", &[("Host", &host)], "")).0, 200);
    let (status, _) = raw(s.port, &request("GET", "/api/conclaves", &[("Host", "evil.example")], ""));
    assert_eq!(status, 403, "Host is still checked without a token");
    let evil = [("Host", host.as_str()), ("Origin", "http://evil.example"), ("Content-Type", "application/json")];
    assert_eq!(raw(s.port, &request("POST", "/api/conclaves", &evil, CONCLAVE)).0, 403, "and Origin too");
}

#[test]
fn silent_connections_are_closed_and_the_server_keeps_serving() {
    let s = serve(&["--max-connections", "8", "--header-timeout", "1"]);
    let silent: Vec<TcpStream> = (0..20).map(|_| TcpStream::connect(("127.0.0.1", s.port)).expect("connect")).collect();
    let started = Instant::now();
    let host = format!("127.0.0.1:{}", s.port);
    let (status, _) = raw(s.port, &request("GET", "/api/openapi.json", &[("Host", &host)], ""));
    assert_eq!(status, 401, "a real request is answered while silent connections wait");
    assert!(started.elapsed() < Duration::from_secs(8), "{:?}", started.elapsed());
    for mut conn in silent {
        conn.set_read_timeout(Some(Duration::from_secs(10))).expect("timeout");
        let mut buf = [0u8; 64];
        assert!(matches!(conn.read(&mut buf), Ok(0)), "the server closed the silent connection");
    }
    // A kept-alive connection that goes quiet after a request is closed too.
    let mut kept = TcpStream::connect(("127.0.0.1", s.port)).expect("connect");
    kept.set_read_timeout(Some(Duration::from_secs(10))).expect("timeout");
    kept.write_all(format!("GET /api/openapi.json HTTP/1.1\r\nHost: {host}\r\n\r\n").as_bytes()).expect("send");
    let mut seen = Vec::new();
    let mut buf = [0u8; 4096];
    let quiet_since = loop {
        match kept.read(&mut buf) {
            Ok(0) => break None,
            Ok(n) => {
                seen.extend_from_slice(&buf[..n]);
                if seen.windows(4).any(|w| w == b"\r\n\r\n") && String::from_utf8_lossy(&seen).contains("}") {
                    break Some(Instant::now());
                }
            }
            Err(e) => panic!("no answer: {e}"),
        }
    };
    let quiet_since = quiet_since.expect("an answer before the close");
    assert!(matches!(kept.read(&mut buf), Ok(0)), "the idle kept-alive connection was closed");
    assert!(
        quiet_since.elapsed() < Duration::from_secs(5),
        "closed after the header timeout: {:?}",
        quiet_since.elapsed()
    );
}

/// Slow clients: more idle connections than the server has files for, some silent,
/// some with half a request, held open longer than the test lasts. A real client's
/// request is still answered: at the connection cap, which stays below the file
/// limit, the connection idle longest is closed for it.
#[test]
fn idle_connections_beyond_the_file_limit_do_not_starve_the_server() {
    let mut limited = Command::new("prlimit");
    limited.args(["--nofile=256:256", "--", BIN]);
    let s = serve_by(limited, &["--header-timeout", "600"]);
    let mut idle = Vec::new();
    for i in 0..300 {
        let mut conn = TcpStream::connect(("127.0.0.1", s.port)).expect("connect");
        if i % 2 == 1 {
            conn.write_all(b"GET /api/runs HTTP/1.1\r\nHost: 127.0.0.1\r\n").expect("half a request");
        }
        idle.push(conn);
    }
    let host = format!("127.0.0.1:{}", s.port);
    let bearer = format!("Bearer {}", s.token);
    let mut client = TcpStream::connect(("127.0.0.1", s.port)).expect("connect");
    // Generous: the machine is shared and busy; without the fix no answer comes until
    // the idle connections' header timeout, 600 s.
    client.set_read_timeout(Some(Duration::from_secs(30))).expect("timeout");
    let asked = request("GET", "/api/runs", &[("Host", &host), ("Authorization", &bearer)], "");
    client.write_all(asked.as_bytes()).expect("send");
    let mut answer = Vec::new();
    let _ = client.read_to_end(&mut answer);
    let answer = String::from_utf8_lossy(&answer);
    assert!(answer.starts_with("HTTP/1.1 200"), "the request is answered: {answer:?}");
    assert!(answer.ends_with("[]"), "with the (empty) list of runs: {answer:?}");
    drop(idle);
}

#[test]
fn git_options_never_pass_as_a_base() {
    let dir = tempfile::tempdir().expect("tempdir");
    let repo: PathBuf = dir.path().join("repo");
    std::fs::create_dir_all(&repo).expect("mkdir");
    conclave_testkit::git(&repo, &["init", "-q", "-b", "main"]);
    std::fs::write(repo.join("a.txt"), "a\n").expect("write");
    conclave_testkit::git(&repo, &["add", "."]);
    conclave_testkit::git(&repo, &["commit", "-q", "-m", "a"]);
    std::fs::write(repo.join("a.txt"), "b\n").expect("write");
    for base in ["--output=pwned", "-p", "--exec=touch pwned2", "HEAD --output=x"] {
        let out = Command::new(BIN)
            .args(["review", &repo.display().to_string(), &format!("--base={base}")])
            .current_dir(dir.path())
            .env("CONCLAVE_DB", dir.path().join("runs.db"))
            .output()
            .expect("runs");
        assert_eq!(out.status.code(), Some(2), "{base}: {}", String::from_utf8_lossy(&out.stderr));
        assert!(String::from_utf8_lossy(&out.stderr).contains("is not a commit in this repository"));
        let written: Vec<String> = std::fs::read_dir(&repo)
            .expect("list")
            .chain(std::fs::read_dir(dir.path()).expect("list"))
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.contains("pwned") || n.starts_with("x") || n.contains("HEAD"))
            .collect();
        assert!(written.is_empty(), "{base} created {written:?}");
    }
}

#[test]
fn absurd_numbers_are_refused_not_panicked_on() {
    let dir = tempfile::tempdir().expect("tempdir");
    for (args, says) in [
        (vec!["run", "x", "--max-concurrency", "99999999999999999999"], "--max-concurrency"),
        (vec!["run", "x", "--max-concurrency", "0"], "--max-concurrency"),
        (vec!["serve", "--max-connections=-1"], "--max-connections"),
        (vec!["review", ".", "--max-diff-bytes", "1e99"], "--max-diff-bytes"),
    ] {
        let out = Command::new(BIN).args(&args).current_dir(dir.path()).output().expect("runs");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(says) && !stderr.contains("panicked"), "{args:?}: {stderr}");
    }
}

/// A conclave `trigger → cmd (command) → out` running `argv`, with `settings`
/// merged into the command's configuration.
fn command_conclave(argv: &[&str], settings: serde_json::Value) -> serde_json::Value {
    let mut command = serde_json::json!({"argv": argv});
    if let (Some(command), Some(settings)) = (command.as_object_mut(), settings.as_object()) {
        command.extend(settings.clone());
    }
    serde_json::json!({
        "version": 1, "id": "cmd", "name": "Command",
        "nodes": [
            {"id": "t", "kind": "trigger"},
            {"id": "cmd", "kind": "command", "command": command},
            {"id": "out", "kind": "output"}
        ],
        "edges": [{"from": "t", "to": "cmd"}, {"from": "cmd", "to": "out"}]
    })
}

/// Runs `conclave` from its file with `conclave run` in `dir`, with `env` set; the
/// exit code, stdout and stderr.
fn run_file(dir: &std::path::Path, conclave: &serde_json::Value, env: &[(&str, &str)]) -> (i32, String, String) {
    let file = dir.join("cmd.conclave.json");
    std::fs::write(&file, conclave.to_string()).expect("write");
    let out = Command::new(BIN)
        .args(["run", file.to_str().expect("utf-8"), "--input", "x"])
        .current_dir(dir)
        .env("CONCLAVE_DB", dir.join("runs.db"))
        .envs(env.iter().copied())
        .output()
        .expect("conclave run");
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    (out.status.code().unwrap_or(-1), text(&out.stdout), text(&out.stderr))
}

#[test]
fn a_command_s_arguments_reach_it_literally_with_no_shell() {
    let dir = tempfile::tempdir().expect("tempdir");
    let hostile = [
        "$(touch subst)",
        "`touch backtick`",
        "; touch semicolon",
        "a && touch and",
        "| touch pipe",
        "> redirect",
        "*",
    ];
    let mut argv = vec!["printf", "%s\\n"];
    argv.extend(hostile);
    let (code, stdout, stderr) = run_file(dir.path(), &command_conclave(&argv, serde_json::json!({})), &[]);
    assert_eq!(code, 0, "{stderr}");
    let result: serde_json::Value = serde_json::from_str(&stdout).expect("the result is JSON");
    assert_eq!(result["cmd"], format!("{}\n", hostile.join("\n")), "each argument arrives as it was written");
    for planted in ["subst", "backtick", "semicolon", "and", "pipe", "redirect"] {
        assert!(!dir.path().join(planted).exists(), "a shell ran `{planted}`");
    }
}

#[test]
fn no_provider_key_or_token_reaches_a_command() {
    let dir = tempfile::tempdir().expect("tempdir");
    let secrets = [
        ("ANTHROPIC_API_KEY", "sk-ant-planted-1111"),
        ("OPENAI_API_KEY", "sk-openai-planted-2222"),
        ("CONCLAVE_TOKEN", "conclave-planted-3333"),
        ("GITHUB_TOKEN", "ghp_planted4444"),
        ("GITLAB_TOKEN", "glpat-planted-5555"),
        ("OPENAI_BASE_URL", "http://user:planted-6666@example.invalid/v1"),
    ];
    let (code, stdout, stderr) = run_file(dir.path(), &command_conclave(&["env"], serde_json::json!({})), &secrets);
    assert_eq!(code, 0, "{stderr}");
    let result: serde_json::Value = serde_json::from_str(&stdout).expect("the result is JSON");
    let environment = result["cmd"].as_str().expect("text");
    assert!(environment.contains("PATH="), "the command still finds programs: {environment}");
    for (name, value) in secrets {
        assert!(
            !environment.contains(name) && !environment.contains(value),
            "{name} reached the command:\n{environment}"
        );
    }
}

#[test]
fn output_beyond_the_cap_is_cut_and_the_run_goes_on() {
    let dir = tempfile::tempdir().expect("tempdir");
    let conclave =
        command_conclave(&["head", "-c", "3000000", "/dev/zero"], serde_json::json!({"max_output_bytes": 1000}));
    let (code, stdout, stderr) = run_file(dir.path(), &conclave, &[]);
    assert_eq!(code, 0, "{stderr}");
    let result: serde_json::Value = serde_json::from_str(&stdout).expect("the result is JSON");
    assert_eq!(result["cmd"].as_str().map(str::len), Some(1000), "exactly the cap is kept");
    let shown = Command::new(BIN)
        .args(["runs", "list", "--json"])
        .current_dir(dir.path())
        .env("CONCLAVE_DB", dir.path().join("runs.db"))
        .output()
        .expect("runs list");
    let runs: serde_json::Value = serde_json::from_slice(&shown.stdout).expect("runs as JSON");
    let id = runs[0]["id"].as_str().expect("a run").to_string();
    let events = Command::new(BIN)
        .args(["runs", "show", &id])
        .current_dir(dir.path())
        .env("CONCLAVE_DB", dir.path().join("runs.db"))
        .output()
        .expect("runs show");
    let events = String::from_utf8_lossy(&events.stdout);
    assert!(events.contains("exit 0") && events.contains("2999000 bytes of output cut"), "{events}");
}

/// Whether process `pid` still runs (a zombie has stopped).
fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .is_ok_and(|stat| stat.rsplit_once(") ").is_some_and(|(_, rest)| !rest.starts_with('Z')))
}

#[test]
fn a_command_that_never_ends_is_killed_at_its_timeout_with_every_process_it_started() {
    let dir = tempfile::tempdir().expect("tempdir");
    let script = "sleep 300 & echo $! > background.pid; sleep 300";
    // The workspace is read-only in the sandbox: the node may write its directory.
    let sandbox = serde_json::json!({"write": [dir.path()]});
    let conclave = command_conclave(&["sh", "-c", script], serde_json::json!({"timeout_secs": 1, "sandbox": sandbox}));
    let started = Instant::now();
    let (code, _, stderr) = run_file(dir.path(), &conclave, &[]);
    assert_ne!(code, 0, "a timed-out node fails the run: {stderr}");
    assert!(stderr.contains("ran past its timeout of 1s and was killed"), "{stderr}");
    assert!(started.elapsed() < Duration::from_secs(120), "the run waited for the command's 300 s");
    let pid: u32 = std::fs::read_to_string(dir.path().join("background.pid"))
        .expect("the script started its background process")
        .trim()
        .parse()
        .expect("a pid");
    // SIGKILL is delivered at once; the process table may take a moment to show it.
    let deadline = Instant::now() + Duration::from_secs(30);
    while alive(pid) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(!alive(pid), "the command's background process {pid} outlived the timeout");
}

#[test]
fn a_command_node_saved_through_the_api_needs_allow_commands() {
    let conclave = command_conclave(&["git", "diff", "--check"], serde_json::json!({}));
    let s = serve(&[]);
    let host = format!("127.0.0.1:{}", s.port);
    let bearer = format!("Bearer {}", s.token);
    let headers = [("Host", host.as_str()), ("Authorization", bearer.as_str()), ("Content-Type", "application/json")];
    let (status, text) = raw(s.port, &request("POST", "/api/conclaves", &headers, &conclave.to_string()));
    assert_eq!(status, 403, "{text}");
    assert!(text.contains("`git`") && text.contains("--allow-commands"), "{text}");
    assert!(!s.dir.path().join("conclaves/cmd.conclave.json").exists(), "the refused conclave was written");
    // An update of an existing file is refused the same way, and leaves it as it was.
    std::fs::write(s.dir.path().join("conclaves/cmd.conclave.json"), CONCLAVE.replace("planted", "cmd"))
        .expect("write");
    let (status, text) = raw(s.port, &request("PUT", "/api/conclaves/cmd", &headers, &conclave.to_string()));
    assert_eq!(status, 403, "{text}");
    let kept = std::fs::read_to_string(s.dir.path().join("conclaves/cmd.conclave.json")).expect("read");
    assert_eq!(kept, CONCLAVE.replace("planted", "cmd"), "the file changed");
    drop(s);

    let s = serve(&["--allow-commands", "git", "eslint"]);
    let host = format!("127.0.0.1:{}", s.port);
    let bearer = format!("Bearer {}", s.token);
    let headers = [("Host", host.as_str()), ("Authorization", bearer.as_str()), ("Content-Type", "application/json")];
    let (status, text) = raw(s.port, &request("POST", "/api/conclaves", &headers, &conclave.to_string()));
    assert_eq!(status, 201, "an allowed program is saved: {text}");
    let other = command_conclave(&["curl", "http://example.invalid"], serde_json::json!({}))
        .to_string()
        .replace("\"cmd\",\"name\"", "\"cmd2\",\"name\"");
    let (status, text) = raw(s.port, &request("POST", "/api/conclaves", &headers, &other));
    assert_eq!(status, 403, "only the listed programs: {text}");
    assert!(text.contains("`curl`"), "{text}");
}
