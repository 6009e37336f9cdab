//! The repository tools refuse every way out of the root, leak nothing, cap their
//! output, and a refused call is an error the model sees while the run goes on.

use conclave_core::testing::{FakeProvider, FakeStep, MemoryStore};
use conclave_core::{Message, ProviderRegistry, ToolCall, ToolOutcome, ToolRunner};
use conclave_engine::{Engine, EngineConfig, RunOptions};
use conclave_review::tools::RepoTools;
use conclave_shared::{AgentConfig, Conclave, Edge, Node, NodeKind, Position, RunStatus, Settings};
use conclave_testkit::checked;
use serde_json::{Value, json};
use std::sync::Arc;

const SECRET: &str = "TOP-SECRET-VALUE-7731";

struct Fixture {
    _outside: tempfile::TempDir,
    repo: tempfile::TempDir,
    tools: RepoTools,
}

fn fixture() -> Fixture {
    let outside = tempfile::tempdir().expect("tempdir");
    std::fs::write(outside.path().join("secret.txt"), SECRET).expect("write");
    let repo = tempfile::tempdir().expect("tempdir");
    let root = repo.path();
    std::fs::create_dir_all(root.join("src")).expect("mkdir");
    std::fs::write(root.join("src/lib.rs"), "pub fn add(a: i32, b: i32) -> i32 {\n    a + b\n}\n").expect("write");
    std::os::unix::fs::symlink(outside.path().join("secret.txt"), root.join("link-out")).expect("symlink");
    std::os::unix::fs::symlink(outside.path(), root.join("dir-out")).expect("symlink");
    std::os::unix::fs::symlink("src/lib.rs", root.join("link-in")).expect("symlink");
    std::fs::write(root.join("\u{2025}\u{2215}secret.txt"), SECRET).expect("look-alike file");
    let tools = RepoTools::new(root).expect("tools");
    Fixture { _outside: outside, repo, tools }
}

async fn call(tools: &RepoTools, name: &str, arguments: Value) -> ToolOutcome {
    tools.run(&ToolCall { id: "c1".into(), name: name.into(), arguments }).await
}

#[tokio::test]
async fn hostile_paths_are_refused_without_leaking_anything() {
    let f = fixture();
    let outside_abs = f._outside.path().join("secret.txt").display().to_string();
    let cases: Vec<(String, &str)> = vec![
        (outside_abs, "is outside the repository"),
        ("/etc/passwd".into(), "is outside the repository"),
        ("../secret.txt".into(), "climbs out of the repository"),
        ("src/../../secret.txt".into(), "climbs out of the repository"),
        ("./../../../../../../etc/passwd".into(), "climbs out of the repository"),
        ("link-out".into(), "leads outside the repository (through a symlink)"),
        ("dir-out/secret.txt".into(), "leads outside the repository (through a symlink)"),
        ("/proc/self/environ".into(), "is a system path"),
        ("/dev/zero".into(), "is a system path"),
        ("\u{2025}\u{2215}secret.txt".into(), "looks like a path separator or dot"),
        ("src\u{FF0F}..\u{FF0F}..\u{FF0F}secret.txt".into(), "looks like a path separator or dot"),
        ("".into(), "the path is empty"),
    ];
    for (path, expected) in cases {
        let outcome = call(&f.tools, "read_file", json!({"path": path, "start_line": null, "end_line": null})).await;
        assert!(outcome.is_error, "{path:?} must be refused, got {:?}", outcome.content);
        assert!(outcome.content.contains(expected), "{path:?}: {:?}", outcome.content);
        assert!(!outcome.content.contains(SECRET) && !outcome.content.contains("root:x:0"), "{path:?} leaked content");
    }
}

#[tokio::test]
async fn reading_inside_the_root_works_with_line_numbers_and_ranges() {
    let f = fixture();
    let all = call(&f.tools, "read_file", json!({"path": "src/lib.rs", "start_line": null, "end_line": null})).await;
    assert!(!all.is_error, "{}", all.content);
    assert_eq!(all.content, "    1 | pub fn add(a: i32, b: i32) -> i32 {\n    2 |     a + b\n    3 | }\n");
    let part = call(&f.tools, "read_file", json!({"path": "./src/lib.rs", "start_line": 2, "end_line": 2})).await;
    assert_eq!(part.content, "    2 |     a + b\n");
    let via_link = call(&f.tools, "read_file", json!({"path": "link-in", "start_line": 1, "end_line": 1})).await;
    assert!(!via_link.is_error, "a symlink that stays inside is fine: {}", via_link.content);
    let absolute_inside = f.repo.path().canonicalize().expect("canon").join("src/lib.rs").display().to_string();
    assert!(
        !call(&f.tools, "read_file", json!({"path": absolute_inside, "start_line": 1, "end_line": 1})).await.is_error
    );
}

#[tokio::test]
async fn list_and_grep_stay_inside_and_are_capped() {
    let f = fixture();
    let listed = call(&f.tools, "list_files", json!({"glob": null})).await;
    assert!(!listed.is_error);
    assert!(listed.content.contains("src/lib.rs"), "{}", listed.content);
    assert!(
        !listed.content.contains("secret.txt") || listed.content.contains("\u{2025}"),
        "no file outside is listed: {}",
        listed.content
    );
    let grep = call(&f.tools, "grep", json!({"pattern": SECRET, "glob": null})).await;
    assert!(
        !grep.content.contains("dir-out") && !grep.content.contains("link-out"),
        "symlinks are not followed: {}",
        grep.content
    );
    let found = call(&f.tools, "grep", json!({"pattern": "a \\+ b", "glob": "src/**"})).await;
    assert_eq!(found.content, "src/lib.rs:2:     a + b\n");
    let bad = call(&f.tools, "grep", json!({"pattern": "(unclosed", "glob": null})).await;
    assert!(bad.is_error && bad.content.contains("is not a valid regex"), "{}", bad.content);

    let big: String = (1..=5000).map(|i| format!("line {i} needle\n")).collect();
    std::fs::write(f.repo.path().join("big.txt"), big).expect("write");
    let read = call(&f.tools, "read_file", json!({"path": "big.txt", "start_line": null, "end_line": null})).await;
    assert!(
        read.content.ends_with(
            "[truncated at line 800: the file has 5000 lines; ask for a range with start_line and end_line]"
        )
    );
    let many = call(&f.tools, "grep", json!({"pattern": "needle", "glob": "big.txt"})).await;
    assert_eq!(many.content.lines().count(), 201, "200 matches and a note");
}

#[tokio::test]
async fn a_fifo_is_not_a_regular_file() {
    let f = fixture();
    let fifo = f.repo.path().join("pipe");
    let made = std::process::Command::new("mkfifo").arg(&fifo).status().expect("mkfifo runs");
    assert!(made.success());
    let outcome = call(&f.tools, "read_file", json!({"path": "pipe", "start_line": null, "end_line": null})).await;
    assert!(outcome.is_error && outcome.content.contains("is not a regular file"), "{}", outcome.content);
}

#[tokio::test]
async fn a_refused_tool_call_is_shown_to_the_model_and_the_run_goes_on() {
    let f = fixture();
    let fake = Arc::new(FakeProvider::new("fake"));
    fake.script(
        "reviewer",
        [
            FakeStep::Tools(vec![ToolCall {
                id: "t1".into(),
                name: "read_file".into(),
                arguments: json!({"path": "../secret.txt"}),
            }]),
            FakeStep::text("done looking"),
        ],
    );
    let mut providers = ProviderRegistry::default();
    providers.register(fake.clone());
    let engine = Engine::new(providers, Arc::new(MemoryStore::new()), EngineConfig::default());
    let options = RunOptions { tools: Some(Arc::new(f.tools.clone())), policy: None };
    let mut agent = AgentConfig::new("fake");
    agent.tools = vec!["read_file".into()];
    let node =
        |id: &str, kind, agent| Node { id: id.into(), kind, label: id.into(), position: Position::default(), agent };
    let conclave = Conclave {
        version: 1,
        id: "t".into(),
        name: "t".into(),
        description: String::new(),
        settings: Settings::default(),
        nodes: vec![node("input", NodeKind::Trigger, None), node("reviewer", NodeKind::Agent, Some(agent))],
        edges: vec![Edge { from: "input".into(), to: "reviewer".into() }],
    };
    let outcome = engine.start(checked(conclave), json!("diff"), options).await.expect("starts").wait().await;
    assert_eq!(outcome.status, RunStatus::Succeeded, "{:?}", outcome.error);
    let second = &fake.calls_for("reviewer")[1];
    let result = second.messages.iter().find_map(|m| match m {
        Message::ToolResult { content, is_error, .. } => Some((content.clone(), *is_error)),
        _ => None,
    });
    let (content, is_error) = result.expect("the tool result went back to the model");
    assert!(is_error && content.contains("climbs out of the repository"), "{content}");
    assert!(!content.contains(SECRET));
}
