//! The repository tools refuse every way out of the root, leak nothing, cap their
//! output, and a refused call is an error the model sees while the run goes on.

use conclave_core::{Message, ProviderRegistry, ToolCall, ToolOutcome, ToolRunner};
use conclave_doubles::{FakeProvider, FakeStep, MemoryStore};
use conclave_engine::{Engine, EngineConfig, RunOptions};
use conclave_review::tools::RepoTools;
use conclave_shared::{AgentConfig, Conclave, Edge, Node, NodeKind, RunStatus, Settings};
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
    let tools = RepoTools::new(root, &[]).expect("tools");
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
        read.content.ends_with("  800 | line 800 needle\n[stopped before line 801 (at most 800 lines or 64 KiB a call); read on with start_line 801]"),
        "{}",
        read.content
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
    let options = RunOptions { tools: Some(Arc::new(f.tools.clone())), ..RunOptions::default() };
    let mut agent = AgentConfig::new("fake");
    agent.tools = vec!["read_file".into()];
    let node = |id: &str, kind, agent| Node { agent, ..Node::new(id, kind) };
    let conclave = Conclave {
        version: 1,
        id: "t".into(),
        name: "t".into(),
        description: String::new(),
        settings: Settings::default(),
        nodes: vec![node("input", NodeKind::Trigger, None), node("reviewer", NodeKind::Agent, Some(agent))],
        edges: vec![Edge { from: "input".into(), to: "reviewer".into(), case: None }],
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

/// A git repository with a checkout token in `.git/config`, an ignored `.env`, a
/// symlink to `.git/config`, and a symlinked directory that stays inside.
fn git_fixture() -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().expect("tempdir");
    let repo = dir.path().join("repo");
    std::fs::create_dir_all(repo.join("src")).expect("mkdir");
    conclave_testkit::git(&repo, &["init", "-q", "-b", "main"]);
    conclave_testkit::git(&repo, &["config", "http.extraheader", &format!("AUTHORIZATION: basic {SECRET}")]);
    std::fs::write(repo.join(".gitignore"), ".env\ntarget/\n").expect("write");
    std::fs::write(repo.join(".env"), format!("API_KEY={SECRET}\n")).expect("write");
    std::fs::create_dir_all(repo.join("target")).expect("mkdir");
    std::fs::write(repo.join("target/out.txt"), SECRET).expect("write");
    std::fs::write(repo.join("src/lib.rs"), "pub fn one() -> i32 {\n    1\n}\n").expect("write");
    std::fs::create_dir_all(repo.join(".github")).expect("mkdir");
    std::fs::write(repo.join(".github/ci.yml"), "on: push\n").expect("write");
    std::os::unix::fs::symlink(".git/config", repo.join("config-link")).expect("symlink");
    std::os::unix::fs::symlink("src", repo.join("source")).expect("symlink");
    (dir, repo)
}

#[tokio::test]
async fn git_internals_and_ignored_files_are_refused_by_every_tool() {
    let (_dir, repo) = git_fixture();
    let tools = RepoTools::new(&repo, &[]).expect("tools");
    let read = |path: &str| json!({"path": path, "start_line": null, "end_line": null});
    let cases = [
        (".git/config", "is inside `.git/`"),
        ("./.git/config", "is inside `.git/`"),
        ("src/../.git/config", "is inside `.git/`"),
        ("config-link", "is inside `.git/`"),
        (".git", "is inside `.git/`"),
        (".env", "is ignored by the repository's .gitignore"),
        ("target/out.txt", "is ignored by the repository's .gitignore"),
        ("target", "is ignored by the repository's .gitignore"),
    ];
    for (path, expected) in cases {
        let outcome = call(&tools, "read_file", read(path)).await;
        assert!(outcome.is_error && outcome.content.contains(expected), "{path}: {}", outcome.content);
        assert!(!outcome.content.contains(SECRET), "{path} leaked");
    }
    let listed = call(&tools, "list_files", json!({"glob": null})).await.content;
    assert_eq!(listed, ".github/ci.yml\n.gitignore\nsrc/lib.rs", "dotfiles yes, .git/ and ignored files no");
    let grep = call(&tools, "grep", json!({"pattern": SECRET, "glob": null})).await.content;
    assert_eq!(grep, format!("no matches for `{SECRET}`"));
    let through_dir = call(&tools, "read_file", json!({"path": "source/lib.rs", "start_line": 2, "end_line": 2})).await;
    assert_eq!(through_dir.content, "    2 |     1\n", "a symlinked directory that stays inside is fine");
    let hidden_ok = call(&tools, "read_file", read(".github/ci.yml")).await;
    assert_eq!(hidden_ok.content, "    1 | on: push\n");
}

#[tokio::test]
async fn the_allowlist_opens_what_a_team_chooses() {
    let (_dir, repo) = git_fixture();
    let tools = RepoTools::new(&repo, &[".env".to_string()]).expect("tools");
    let env = call(&tools, "read_file", json!({"path": ".env", "start_line": null, "end_line": null})).await;
    assert!(!env.is_error, "{}", env.content);
    let git = call(&tools, "read_file", json!({"path": ".git/config", "start_line": null, "end_line": null})).await;
    assert!(git.is_error, "only what is allowed: {}", git.content);
    assert!(RepoTools::new(&repo, &["[".to_string()]).is_err(), "a bad glob is refused when the tools are made");
}

#[tokio::test]
async fn long_lines_are_read_in_pieces_and_big_files_are_streamed() {
    let f = fixture();
    let long: String = "x".repeat(70_000) + "END\nsecond line\n";
    std::fs::write(f.repo.path().join("long.txt"), &long).expect("write");
    let first = call(&f.tools, "read_file", json!({"path": "long.txt", "start_line": null, "end_line": null})).await;
    assert!(!first.is_error);
    let pieces = first.content.lines().filter(|l| l.starts_with("    1 | ")).count();
    assert_eq!(pieces, 15, "15 pieces of 4096 bytes fit in 64 KiB");
    let note = first.content.lines().last().expect("a note");
    assert_eq!(note, "[line 1 goes on; read on with start_line 1 and start_byte 61440]");
    let rest = call(
        &f.tools,
        "read_file",
        json!({"path": "long.txt", "start_line": 1, "end_line": null, "start_byte": 61440}),
    )
    .await;
    assert!(rest.content.contains("END\n    2 | second line\n"), "{}", &rest.content[rest.content.len() - 60..]);

    // A file far larger than any answer: the answer stays capped.
    let big = std::fs::File::create(f.repo.path().join("huge.txt")).expect("create");
    big.set_len(50 * 1024 * 1024).expect("a sparse 50 MB file");
    let answer = call(&f.tools, "read_file", json!({"path": "huge.txt", "start_line": null, "end_line": null})).await;
    assert_eq!(answer.content, "`huge.txt` is a binary file", "NUL bytes make it binary");
    std::fs::write(f.repo.path().join("many.txt"), "a\n".repeat(3_000_000)).expect("write");
    let grep = call(&f.tools, "grep", json!({"pattern": "needle", "glob": null})).await;
    assert!(
        grep.content.contains("[skipped 2 file(s): huge.txt (over 2 MB), many.txt (over 2 MB)]"),
        "{}",
        grep.content
    );
}

#[tokio::test]
async fn catastrophic_patterns_and_odd_paths_cannot_hang_or_leak() {
    let f = fixture();
    std::fs::write(f.repo.path().join("a.txt"), "a".repeat(100_000) + "!").expect("write");
    let started = std::time::Instant::now();
    let redos = call(&f.tools, "grep", json!({"pattern": "(a+)+$", "glob": "a.txt"})).await;
    assert!(!redos.is_error, "{}", redos.content);
    assert!(started.elapsed() < std::time::Duration::from_secs(10), "linear-time regex");
    let nul =
        call(&f.tools, "read_file", json!({"path": "src/lib.rs\0.png", "start_line": null, "end_line": null})).await;
    assert_eq!(nul.content, "`src/lib.rs\\0.png` contains a NUL byte");
    let dir = call(&f.tools, "read_file", json!({"path": "src", "start_line": null, "end_line": null})).await;
    assert_eq!(dir.content, "`src` is a directory; use list_files to see what it holds");
    let past = call(&f.tools, "read_file", json!({"path": "src/lib.rs", "start_line": 9, "end_line": null})).await;
    assert_eq!(past.content, "`src/lib.rs` has 3 lines; start_line 9 is past the end");
}

#[test]
fn swapping_a_file_for_a_symlink_between_check_and_read_never_leaks() {
    let f = fixture();
    let target = f.repo.path().join("swap.txt");
    let outside = f._outside.path().join("secret.txt");
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let swapper = {
        let (target, outside, stop) = (target.clone(), outside.clone(), stop.clone());
        std::thread::spawn(move || {
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let _ = std::fs::remove_file(&target);
                let _ = std::fs::write(&target, "harmless\n");
                let _ = std::fs::remove_file(&target);
                let _ = std::os::unix::fs::symlink(&outside, &target);
            }
        })
    };
    let runtime = tokio::runtime::Builder::new_current_thread().build().expect("runtime");
    let mut read_ok = 0;
    for _ in 0..2000 {
        let outcome = runtime.block_on(call(
            &f.tools,
            "read_file",
            json!({"path": "swap.txt", "start_line": null, "end_line": null}),
        ));
        assert!(!outcome.content.contains(SECRET), "the swap leaked the outside file");
        read_ok += usize::from(!outcome.is_error);
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    swapper.join().expect("swapper");
    assert!(read_ok > 0, "some reads saw the harmless file");
}
