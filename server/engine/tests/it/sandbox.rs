//! Command nodes run in the sandbox: their `HOME` and `TMPDIR` a scratch directory
//! removed afterwards, the repository read-only, `/etc`'s secrets closed, the node's
//! variables set, the layers recorded in `command_exited`, and what they print
//! redacted before it becomes an event or an output.

use conclave_core::{REDACTED, Redactor};
use conclave_doubles::{FakeProvider, MemoryStore};
use conclave_engine::{Commands, Engine, EngineConfig, NodeError, RunOptions};
use conclave_shared::{
    CommandConfig, Edge, EventKind, Node, NodeKind, NodeOutput, RunEvent, RunStatus, SandboxConfig, SandboxLayer,
    SandboxRecord,
};
use conclave_testkit::checked;
use serde_json::json;
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use crate::engine::{engine_with, graph};

/// `in → cmd → out`, `cmd` running `sh -c script`.
async fn run_script(
    engine: &Engine,
    dir: &Path,
    script: &str,
    sandbox: Option<SandboxConfig>,
) -> (NodeOutput, Vec<RunEvent>) {
    let mut config = CommandConfig::new(vec!["sh".into(), "-c".into(), script.into()]);
    config.sandbox = sandbox;
    let mut conclave = graph(&["in:t", "out:o"], &[]);
    conclave.nodes.insert(1, Node { command: Some(config), ..Node::new("cmd", NodeKind::Command) });
    conclave.edges.extend([Edge::new("in", "cmd"), Edge::new("cmd", "out")]);
    let options = RunOptions {
        workdir: Some(dir.to_path_buf()),
        commands: Some(Arc::new(Commands::any(None))),
        ..RunOptions::default()
    };
    let handle = engine.start(checked(conclave), json!({}), options).await.expect("run starts");
    let outcome = handle.wait().await;
    assert_eq!(outcome.status, RunStatus::Succeeded, "{:?}", outcome.error);
    let events = engine.store().events(&outcome.run_id, 0).await.expect("events");
    (outcome.outputs["cmd"].clone(), events)
}

fn exited(events: &[RunEvent]) -> (String, Option<SandboxRecord>) {
    events
        .iter()
        .find_map(|e| match &e.kind {
            EventKind::CommandExited { stdout, sandbox, .. } => Some((stdout.clone(), sandbox.clone())),
            _ => None,
        })
        .expect("a command_exited event")
}

fn engine(config: EngineConfig) -> Engine {
    engine_with(Arc::new(FakeProvider::new("fake")), Arc::new(MemoryStore::new()), config)
}

#[tokio::test]
async fn a_command_runs_confined_with_a_scratch_home_and_the_event_says_how() {
    if conclave_sandbox::probe().can_confine().is_err() {
        return eprintln!("skipped: the sandbox is unavailable here");
    }
    let repository = tempfile::tempdir().expect("tempdir");
    let script = "echo \"home=$HOME tmp=$TMPDIR\"; echo x > \"$HOME/f\" && echo wrote-home; \
        echo y > in-repository 2>/dev/null || echo repository-read-only; cat /etc/shadow 2>/dev/null || echo no-shadow";
    let (output, events) = run_script(&engine(EngineConfig::default()), repository.path(), script, None).await;
    let NodeOutput::Text(text) = output else { panic!("text output") };
    let home = text.lines().next().and_then(|l| l.strip_prefix("home=")).and_then(|l| l.split(" tmp=").next());
    let home = home.expect("the command printed its HOME").to_string();
    assert!(text.contains(&format!("tmp={home}")), "TMPDIR is HOME: {text}");
    assert_ne!(Some(home.as_str()), std::env::var("HOME").ok().as_deref(), "not the real home");
    for line in ["wrote-home", "repository-read-only", "no-shadow"] {
        assert!(text.contains(line), "{line}: {text}");
    }
    assert!(!repository.path().join("in-repository").exists());
    assert!(!Path::new(&home).exists(), "the scratch directory was removed after the run");
    let (_, record) = exited(&events);
    let record = record.expect("the event records the sandbox");
    assert!(record.confined && record.layers.contains(&SandboxLayer::LandlockFiles), "{record:?}");
    assert!(record.layers.contains(&SandboxLayer::SeccompSockets) && !record.network, "{record:?}");
}

#[tokio::test]
async fn a_nodes_variables_take_its_scratch_directory_and_it_may_write_what_it_declares() {
    if conclave_sandbox::probe().can_confine().is_err() {
        return eprintln!("skipped: the sandbox is unavailable here");
    }
    let repository = tempfile::tempdir().expect("tempdir");
    let out = tempfile::tempdir().expect("tempdir");
    let sandbox = SandboxConfig {
        env: BTreeMap::from([("TARGET".to_string(), "{scratch}/target".to_string())]),
        write: vec![out.path().display().to_string()],
        ..SandboxConfig::default()
    };
    let script = format!(
        "mkdir -p \"$TARGET\" && test \"$TARGET\" = \"$HOME/target\" && echo target-in-scratch; echo z > {}/declared",
        out.path().display()
    );
    let (output, _) = run_script(&engine(EngineConfig::default()), repository.path(), &script, Some(sandbox)).await;
    assert_eq!(output, NodeOutput::Text("target-in-scratch\n".into()));
    assert!(out.path().join("declared").exists(), "a declared write path is writable");
}

#[tokio::test]
async fn what_a_command_prints_is_redacted_before_it_becomes_an_event_or_an_output() {
    let repository = tempfile::tempdir().expect("tempdir");
    let secret = "canary-key-0123456789";
    let config = EngineConfig {
        redactor: Some(Arc::new(Redactor::new([secret.to_string()]))),
        allow_unsandboxed: true,
        ..EngineConfig::default()
    };
    let (output, events) = run_script(&engine(config), repository.path(), &format!("echo {secret}"), None).await;
    assert_eq!(output, NodeOutput::Text(format!("{REDACTED}\n")));
    let (stdout, _) = exited(&events);
    assert!(!stdout.contains(secret) && stdout.contains(REDACTED), "{stdout}");
}

#[test]
fn an_unavailable_sandbox_says_why_where_to_learn_more_and_how_to_run_anyway() {
    let error = NodeError::SandboxUnavailable { program: "ruff".into(), reason: "this kernel has no Landlock".into() };
    assert_eq!(
        error.to_string(),
        "`ruff` was not run: the sandbox is unavailable here (this kernel has no Landlock); `conclave sandbox check` tells more, and `--allow-unsandboxed` runs commands unconfined"
    );
    assert_eq!(error.kind(), conclave_shared::ErrorKind::Config);
}
