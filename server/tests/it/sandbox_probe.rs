//! The sandbox probe of the attack suite (issue 32): Conclave started as CI starts
//! it (`bash -c "conclave …; …"`, so bash stays its parent) with a canary key in its
//! environment, a planted file in its `HOME`, and a TCP and a UDP listener on
//! 127.0.0.1. The probe (`tests/fixtures/sandbox/probe.py`) tries every ancestor's
//! `/proc/PID/environ`, `cmdline` and `mem` (the test's, bash's, Conclave's) and
//! `kill -0` on each, the planted file, writes to the home directory, the repository
//! and `.git/hooks`, a TCP connect and a UDP send, a fork bomb and a 4 GiB
//! allocation (both bounded in the probe). Every attempt fails, the listeners get
//! nothing, nothing is written, and the canary appears nowhere. The probe runs once
//! as a command node of `conclave run`, and once in a clippy lane of `conclave
//! review`, from the change's `build.rs` and from a rustc wrapper its
//! `.cargo/config.toml` sets. And `conclave sandbox check`: the layers and a passing
//! self-test.

use conclave_testkit::wire::Vendor;
use conclave_testkit::{FakeServer, Route, git};
use serde_json::{Value, json};
use std::net::{TcpListener, UdpSocket};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::review_e2e::findings;

const BIN: &str = env!("CARGO_BIN_EXE_conclave");
const PROBE: &str = include_str!("../../../tests/fixtures/sandbox/probe.py");

/// The ancestors whose `/proc` files and signals the probe tries.
const ANCESTORS: [&str; 3] = ["conclave", "bash", "test"];

/// The listeners the probe tries to reach; each must receive nothing.
struct Listeners {
    tcp: TcpListener,
    udp: UdpSocket,
}

impl Listeners {
    fn open() -> Listeners {
        let tcp = TcpListener::bind("127.0.0.1:0").expect("a TCP listener");
        let udp = UdpSocket::bind("127.0.0.1:0").expect("a UDP socket");
        tcp.set_nonblocking(true).expect("non-blocking");
        udp.set_nonblocking(true).expect("non-blocking");
        Listeners { tcp, udp }
    }

    fn ports(&self) -> (u16, u16) {
        let port = |a: std::io::Result<std::net::SocketAddr>| a.expect("an address").port();
        (port(self.tcp.local_addr()), port(self.udp.local_addr()))
    }

    fn assert_nothing_arrived(&self) {
        assert!(self.tcp.accept().is_err(), "the TCP listener accepted a connection from the sandbox");
        assert!(self.udp.recv(&mut [0u8; 64]).is_err(), "the UDP socket received a datagram from the sandbox");
    }
}

/// A home directory with a planted file.
fn planted_home(dir: &Path) -> PathBuf {
    let home = dir.join("home");
    std::fs::create_dir_all(&home).expect("home");
    std::fs::write(home.join("planted"), "planted-in-home").expect("planted");
    home
}

/// The probe and its targets in `at`: the pids of the test, and the files bash
/// writes its own and Conclave's pid into.
fn place_probe(at: &Path, home: &Path, repository: &Path, listeners: &Listeners) {
    std::fs::create_dir_all(at).expect("probe directory");
    std::fs::write(at.join("probe.py"), PROBE).expect("probe");
    let (tcp, udp) = listeners.ports();
    let targets = json!({
        "pids": {"test": std::process::id(), "bash": at.join("bash.pid"), "conclave": at.join("conclave.pid")},
        "home": home, "repository": repository, "tcp": tcp, "udp": udp,
    });
    std::fs::write(at.join("targets.json"), targets.to_string()).expect("targets");
}

/// A fresh canary standing for the provider key.
fn canary() -> String {
    format!("canary-{}-{}", std::process::id(), conclave_core::now_ms())
}

/// Runs `conclave ARGS` from `bash -c` as a CI step does (bash forks it and stays
/// its parent), bash's and Conclave's pids written into `pids`.
fn from_bash(cwd: &Path, pids: &Path, args: &str, env: &[(&str, &str)]) -> Output {
    let script = format!(
        "echo $$ > {pids}/bash.pid; \"$CONCLAVE\" {args} & echo $! > {pids}/conclave.pid; wait $!; echo \"conclave exited $?\"",
        pids = pids.display()
    );
    let mut command = Command::new("bash");
    command.args(["-c", &script]).current_dir(cwd).env("CONCLAVE", BIN).env_remove("OPENAI_API_KEY");
    for (name, value) in env {
        command.env(name, value);
    }
    command.output().expect("bash runs")
}

/// Asserts each attempt the probe makes against `ANCESTORS` and the rest failed, by
/// name, and that the limits stopped the fork bomb and the allocation.
fn assert_every_attempt_failed(label: &str, results: &Value) {
    let mut names: Vec<String> = Vec::new();
    for who in ANCESTORS {
        for entry in ["environ", "cmdline", "mem"] {
            names.push(format!("read /proc/{who}/{entry}"));
        }
        names.push(format!("kill -0 {who}"));
    }
    names.extend(
        [
            "read the planted file in the real home",
            "write the real home",
            "write the repository",
            "write .git/hooks",
            "tcp connect to 127.0.0.1",
            "udp send to 127.0.0.1",
            "fork bomb",
            "allocate 4 GiB",
        ]
        .map(String::from),
    );
    for name in &names {
        let verdict = results[name].as_str().unwrap_or("missing");
        assert!(verdict.starts_with("denied"), "{label}: `{name}` was {verdict}: {results:#}");
    }
    let fork = results["fork bomb"].as_str().unwrap_or_default();
    assert!(
        fork.contains("Resource temporarily unavailable"),
        "{label}: the process limit stopped the fork bomb: {fork}"
    );
    let allocation = results["allocate 4 GiB"].as_str().unwrap_or_default();
    assert!(allocation.contains("MemoryError"), "{label}: the memory limit stopped the allocation: {allocation}");
}

/// Asserts `canary` is in none of `texts` and no file of `dir` whose name starts with
/// `prefix` (the run store and its journal).
fn assert_canary_nowhere(canary: &str, texts: &[&str], dir: &Path, prefix: &str) {
    for text in texts {
        assert!(!text.contains(canary), "the canary leaked: {text}");
    }
    for entry in std::fs::read_dir(dir).expect("dir").flatten() {
        if entry.file_name().to_string_lossy().starts_with(prefix) {
            let bytes = std::fs::read(entry.path()).unwrap_or_default();
            let found = bytes.windows(canary.len()).any(|w| w == canary.as_bytes());
            assert!(!found, "the canary is in {}", entry.path().display());
        }
    }
}

fn stored_run(cwd: &Path, db: &Path, run_id: &str) -> String {
    let out =
        Command::new(BIN).args(["runs", "show", run_id, "--json"]).current_dir(cwd).env("CONCLAVE_DB", db).output();
    let out = out.expect("runs show");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn skip_without_sandbox() -> bool {
    let unavailable = conclave_sandbox::probe().can_confine().is_err();
    if unavailable {
        eprintln!("skipped: the sandbox is unavailable here (`conclave sandbox check` says why)");
    }
    unavailable
}

#[test]
fn a_command_node_of_conclave_started_from_bash_gets_nowhere() {
    if skip_without_sandbox() {
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let home = planted_home(dir.path());
    let work = dir.path().join("work");
    std::fs::create_dir_all(work.join("conclaves")).expect("workspace");
    git(&work, &["init", "-q", "-b", "main"]);
    let listeners = Listeners::open();
    place_probe(&work, &home, &work, &listeners);
    let conclave = json!({"version": 1, "id": "probe", "name": "Probe",
        "nodes": [{"id": "in", "kind": "trigger"},
                  {"id": "probe", "kind": "command", "command": {"argv": ["/usr/bin/python3", "probe.py", "targets.json"], "parse": "json", "timeout_secs": 120}},
                  {"id": "out", "kind": "output"}],
        "edges": [{"from": "in", "to": "probe"}, {"from": "probe", "to": "out"}]});
    std::fs::write(work.join("conclaves/probe.conclave.json"), conclave.to_string()).expect("conclave");
    let key = canary();
    let db = work.join("runs.db");
    let env = [
        ("HOME", home.to_str().expect("utf-8")),
        ("ANTHROPIC_API_KEY", &key),
        ("CONCLAVE_DB", db.to_str().expect("utf-8")),
    ];
    let out = from_bash(&work, &work, "run probe > result.json", &env);
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(stdout.contains("conclave exited 0"), "the run went on and succeeded: {stdout} {stderr}");
    let printed = std::fs::read_to_string(work.join("result.json")).expect("the run's result");
    let result: Value = serde_json::from_str(&printed).expect("JSON");
    let results = result.get("probe").unwrap_or(&result);
    assert_eq!(results["parent is conclave"], "yes", "the probe's parent is Conclave: {results:#}");
    assert_every_attempt_failed("command node", results);
    listeners.assert_nothing_arrived();
    assert!(!home.join("written-by-probe").exists() && !work.join("written-by-probe").exists());
    assert!(!work.join(".git/hooks/pre-commit").exists());
    let run_id = stderr.lines().find_map(|l| l.strip_prefix("run ")?.strip_suffix(" succeeded")).expect("the run's id");
    let stored = stored_run(&work, &db, run_id);
    assert!(
        stored.contains("\"confined\": true") || stored.contains("\"confined\":true"),
        "the event records the sandbox"
    );
    assert_canary_nowhere(&key, &[&stdout, &stderr, &printed, &stored], &work, "runs.db");
}

/// A crate whose `feature` branch adds a `build.rs` and a `.cargo/config.toml` (a
/// rustc wrapper, and a variable in `[env]`) that run the probe.
fn hostile_crate(repo: &Path) {
    std::fs::create_dir_all(repo.join("src")).expect("src");
    std::fs::write(
        repo.join("Cargo.toml"),
        "[package]\nname = \"probe-fixture\"\nversion = \"0.1.0\"\nedition = \"2021\"\n",
    )
    .expect("manifest");
    let lock = "# This file is automatically @generated by Cargo.\n# It is not intended for manual editing.\nversion = 4\n\n[[package]]\nname = \"probe-fixture\"\nversion = \"0.1.0\"\n";
    std::fs::write(repo.join("Cargo.lock"), lock).expect("lock");
    std::fs::write(repo.join("src/main.rs"), "fn main() {}\n").expect("main");
    git(repo, &["init", "-q", "-b", "main"]);
    git(repo, &["add", "."]);
    git(repo, &["commit", "-q", "-m", "a crate"]);
    git(repo, &["checkout", "-q", "-b", "feature"]);
    let build = "fn main() {\n    let dir = std::env::var(\"CARGO_MANIFEST_DIR\").unwrap_or_default();\n    \
        let out = std::process::Command::new(\"/usr/bin/python3\").arg(format!(\"{dir}/probe/probe.py\")).arg(format!(\"{dir}/probe/targets.json\")).arg(\"build.rs\").output();\n    \
        match out {\n        Ok(o) => eprintln!(\"{}{}\", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr)),\n        Err(e) => eprintln!(\"the probe did not start: {e}\"),\n    }\n    \
        eprintln!(\"PROBE_VIA_CONFIG={:?}\", std::env::var(\"PROBE_VIA_CONFIG\"));\n    std::process::exit(1);\n}\n";
    std::fs::write(repo.join("build.rs"), build).expect("build.rs");
    std::fs::create_dir_all(repo.join(".cargo")).expect(".cargo");
    std::fs::write(
        repo.join(".cargo/config.toml"),
        "[build]\nrustc-wrapper = \"./wrapper.sh\"\n\n[env]\nPROBE_VIA_CONFIG = \"set by the change\"\n",
    )
    .expect("config");
    let wrapper = "#!/bin/sh\ncase \" $* \" in *\" --crate-name build_script_build \"*) /usr/bin/python3 \"$(dirname \"$0\")/probe/probe.py\" \"$(dirname \"$0\")/probe/targets.json\" wrapper >&2;; esac\nexec \"$@\"\n";
    std::fs::write(repo.join("wrapper.sh"), wrapper).expect("wrapper");
    std::fs::set_permissions(repo.join("wrapper.sh"), std::os::unix::fs::PermissionsExt::from_mode(0o755))
        .expect("chmod");
    std::fs::write(repo.join("src/main.rs"), "fn main() {\n    println!(\"built\");\n}\n").expect("main");
    git(repo, &["add", "."]);
    git(repo, &["commit", "-q", "-m", "build script and cargo config"]);
}

/// A home with the planted file, and the real home's toolchains linked in, as the
/// clippy lane reads them (`~/.rustup`, `~/.cargo`).
fn home_with_toolchains(dir: &Path) -> PathBuf {
    let home = planted_home(dir);
    let real = PathBuf::from(std::env::var("HOME").expect("HOME"));
    for name in [".rustup", ".cargo"] {
        std::os::unix::fs::symlink(real.join(name), home.join(name)).expect("link");
    }
    home
}

/// Every reviewer and the Writer find nothing: the review is about the lane.
fn quiet_reviewers() -> Vec<Route> {
    let a = Vendor::Anthropic;
    let nothing = || a.answer(&findings(json!([]), [0, 0, 0, 0]));
    let reviewer = |role: &str| Route {
        marker: format!("You are the {role} reviewer"),
        replies: vec![a.answer("I read the diff; nothing more to look up."), nothing()],
    };
    let writer = Route { marker: "You are the Writer".into(), replies: vec![nothing()] };
    vec![reviewer("security"), reviewer("correctness"), reviewer("conventions"), writer]
}

/// Each `PROBE-RESULT LABEL {…}` line of `text`, by label.
fn probe_results(text: &str) -> Vec<(String, Value)> {
    text.lines()
        .filter_map(|line| line.split_once("PROBE-RESULT ").map(|(_, rest)| rest))
        .filter_map(|rest| rest.split_once(' '))
        .filter_map(|(label, json)| Some((label.to_string(), serde_json::from_str(json).ok()?)))
        .collect()
}

#[tokio::test]
async fn a_clippy_lane_whose_build_script_and_cargo_config_try_to_get_out_gets_nowhere() {
    if skip_without_sandbox() {
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let home = home_with_toolchains(dir.path());
    let repo = dir.path().join("repo");
    hostile_crate(&repo);
    let listeners = Listeners::open();
    place_probe(&repo.join("probe"), &home, &repo, &listeners);
    let work = dir.path().join("work");
    std::fs::create_dir_all(&work).expect("work");
    let server = FakeServer::start_routed(quiet_reviewers()).await;
    let key = canary();
    let (db, report) = (work.join("runs.db"), work.join("review.json"));
    let args = format!(
        "review {} --base main --analyzers clippy --format json --output-file {}",
        repo.display(),
        report.display()
    );
    let (w, p, h, d, base, k) =
        (work.clone(), repo.join("probe"), home.clone(), db.clone(), server.base.clone(), key.clone());
    let out = tokio::task::spawn_blocking(move || {
        let env = [
            ("HOME", h.to_str().unwrap_or_default()),
            ("ANTHROPIC_API_KEY", &k),
            ("ANTHROPIC_BASE_URL", &base),
            ("CONCLAVE_DB", d.to_str().unwrap_or_default()),
            ("CONCLAVE_CONFIG_DIR", w.to_str().unwrap_or_default()),
        ];
        from_bash(&w, &p, &args, &env)
    })
    .await
    .expect("joined");
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(stdout.contains("conclave exited 0"), "{stdout} {stderr}");
    let printed = std::fs::read_to_string(&report).expect("the report");
    let review: Value = serde_json::from_str(&printed).expect("JSON");
    let run_id = review["run_id"].as_str().expect("run id").to_string();
    let stored = stored_run(&work, &db, &run_id);
    let events: Value = serde_json::from_str(&stored).expect("JSON");
    let clippy = events["events"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|e| e["type"] == "command_exited" && e["node_id"] == "clippy")
        .unwrap_or_else(|| panic!("the clippy lane ran: {stored}"));
    let clippy_stderr = clippy["stderr"].as_str().unwrap_or_default();
    assert!(
        clippy_stderr.contains("PROBE_VIA_CONFIG=Ok(\"set by the change\")"),
        "the change's cargo config applied: {clippy_stderr}"
    );
    let results = probe_results(clippy_stderr);
    let labels: Vec<&str> = results.iter().map(|(l, _)| l.as_str()).collect();
    assert_eq!(labels, ["wrapper", "build.rs"], "both the wrapper and the build script ran the probe: {clippy_stderr}");
    for (label, results) in &results {
        assert_every_attempt_failed(label, results);
    }
    listeners.assert_nothing_arrived();
    assert!(!home.join("written-by-probe").exists() && !repo.join("written-by-probe").exists());
    assert!(!repo.join(".git/hooks/pre-commit").exists());
    let sandboxes = &review["review"]["sandboxes"];
    let lane =
        sandboxes.as_array().into_iter().flatten().find(|s| s["node_id"] == "clippy").expect("the report states it");
    assert_eq!(lane["sandbox"]["confined"], true, "{sandboxes:#}");
    assert_canary_nowhere(&key, &[&stdout, &stderr, &printed, &stored], &work, "runs.db");
}

#[test]
fn conclave_sandbox_check_names_the_layers_and_its_self_test_passes() {
    let out = Command::new(BIN).args(["sandbox", "check"]).output().expect("conclave runs");
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    if skip_without_sandbox() {
        assert_eq!(out.status.code(), Some(1), "{stdout} {stderr}");
        assert!(stderr.contains("the sandbox is unavailable here"), "{stderr}");
        return;
    }
    assert_eq!(out.status.code(), Some(0), "{stdout} {stderr}");
    for expected in [
        "Landlock: ABI ",
        "seccomp: available",
        "layers of a command without network: landlock_files",
        "default limits: CPU 600 s and memory 2048 MiB per process",
        "  denied   read a file outside the sandbox: ",
        "  denied   write outside the scratch directory: ",
        "  denied   connect over TCP to 127.0.0.1: ",
        "  denied   send over UDP to 127.0.0.1: ",
        "  denied   signal the parent (kill -0): ",
        "  denied   read the parent's /proc/PID/environ: ",
        "  denied   read the parent's /proc/PID/cmdline: ",
        "result: commands are confined here",
    ] {
        assert!(stdout.contains(expected), "`{expected}` in: {stdout}");
    }
    assert!(!stdout.contains("ALLOWED"), "{stdout}");
}

#[test]
fn conclave_sandbox_check_passes_as_an_ordinary_user_too() {
    let setpriv = Command::new("setpriv").arg("--version").output().is_ok_and(|o| o.status.success());
    if skip_without_sandbox() || !conclave_sandbox::probe().root || !setpriv {
        return eprintln!("skipped: needs root (to become `nobody`) and setpriv");
    }
    // A copy of the binary that `nobody` may run, in a directory it may enter.
    let dir = tempfile::tempdir().expect("tempdir");
    let mode = |path: &Path, mode: u32| {
        std::fs::set_permissions(path, std::os::unix::fs::PermissionsExt::from_mode(mode)).expect("chmod");
    };
    mode(dir.path(), 0o755);
    let copy = dir.path().join("conclave");
    std::fs::copy(BIN, &copy).expect("copied");
    mode(&copy, 0o755);
    let out = Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
        .arg(&copy)
        .args(["sandbox", "check"])
        .current_dir(dir.path())
        .env("HOME", dir.path())
        .env("CONCLAVE_DB", dir.path().join("runs.db"))
        .output()
        .expect("setpriv runs");
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "{stdout} {stderr}");
    assert!(stdout.contains("processes: bounded by RLIMIT_NPROC"), "{stdout}");
    assert!(stdout.contains("the probe ran under: landlock_files"), "{stdout}");
    assert!(stdout.contains("process_rlimit") && !stdout.contains("ALLOWED"), "{stdout}");
}
