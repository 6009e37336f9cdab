//! The symbol tools (`find_definition`, `find_references`, `outline`) on the
//! fixture repositories of `tests/fixtures/symbols/`: the answers an agent sees,
//! their caps, the refusals they share with `read_file`, one index per review shared
//! by every agent, and a call through the engine as a model makes it.

use conclave_core::{Message, ProviderRegistry, ToolCall, ToolOutcome, ToolRunner};
use conclave_doubles::{FakeProvider, FakeStep, MemoryStore};
use conclave_engine::{Engine, EngineConfig, RunOptions};
use conclave_review::tools::{RepoTools, SymbolIndex};
use conclave_shared::{AgentConfig, Conclave, Edge, Node, NodeKind, RunStatus, Settings};
use conclave_symbols::IndexOptions;
use conclave_testkit::checked;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::sync::Arc;

struct Fixture {
    tools: RepoTools,
    root: PathBuf,
    _cache: tempfile::TempDir,
}

fn tools_over(root: &Path) -> Fixture {
    let cache = tempfile::tempdir().expect("tempdir");
    let options = IndexOptions { cache_dir: Some(cache.path().to_path_buf()), ..IndexOptions::default() };
    let tools = RepoTools::new(root, &[]).expect("tools").with_symbols(SymbolIndex::with_options(root, options));
    Fixture { tools, root: root.to_path_buf(), _cache: cache }
}

fn fixture(lang: &str) -> Fixture {
    tools_over(&Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/symbols").join(lang))
}

async fn call(tools: &RepoTools, name: &str, arguments: Value) -> ToolOutcome {
    tools.run(&ToolCall { id: "c1".into(), name: name.into(), arguments }).await
}

#[tokio::test]
async fn definitions_ranked_near_the_file_given() {
    let f = fixture("python");
    let near_report =
        call(&f.tools, "find_definition", json!({"symbol": "render", "near_file": "shop/report.py"})).await;
    assert!(!near_report.is_error, "{}", near_report.content);
    assert_eq!(
        near_report.content,
        "2 definition(s) of `render`, nearest to shop/report.py first:\n\
         shop/report.py:5-6 function: def render(total):\n\
         shop/cart.py:16-20 function: def render(cart: Cart):"
    );
    let near_cart = call(&f.tools, "find_definition", json!({"symbol": "render", "near_file": "shop/cart.py"})).await;
    assert!(
        near_cart.content.lines().nth(1).is_some_and(|l| l.starts_with("shop/cart.py:16-20")),
        "{}",
        near_cart.content
    );
    let method = call(&f.tools, "find_definition", json!({"symbol": "Cart.total", "near_file": null})).await;
    assert_eq!(method.content, "1 definition(s) of `Cart.total`:\nshop/cart.py:9-10 method in Cart: def total(self):");
    let nested = call(&f.tools, "find_definition", json!({"symbol": "line", "near_file": null})).await;
    assert_eq!(nested.content, "1 definition(s) of `line`:\nshop/cart.py:17-18 function in render: def line(price):");
    let none = call(&f.tools, "find_definition", json!({"symbol": "nope", "near_file": null})).await;
    assert_eq!((none.is_error, none.content.as_str()), (false, "no definition of `nope` in the indexed files"));
    let empty = call(&f.tools, "find_definition", json!({"symbol": " ", "near_file": null})).await;
    assert!(empty.is_error && empty.content.starts_with("find_definition needs `symbol`"), "{}", empty.content);
}

#[tokio::test]
async fn call_sites_are_listed_apart_from_other_uses() {
    let f = fixture("typescript");
    let found = call(&f.tools, "find_references", json!({"symbol": "formatPrice", "near_file": null})).await;
    assert_eq!(
        found.content,
        "Call sites of `formatPrice` (3):\n\
         src/cart.ts:22 in line: return formatPrice(price);\n\
         src/index.ts:9 in checkout: return formatPrice(total);\n\
         src/report.ts:5 in render: return formatPrice(total);\n\
         Other uses (types, imports, values) of `formatPrice` (4):\n\
         src/cart.ts:2: import { formatPrice } from \"./money\";\n\
         src/index.ts:3: import { formatPrice } from \"./money\";\n\
         src/index.ts:5: export { formatPrice } from \"./money\";\n\
         src/report.ts:2: import { formatPrice } from \"./money\";"
    );
    let go = fixture("go");
    let total = call(&go.tools, "find_references", json!({"symbol": "Total", "near_file": "main.go"})).await;
    assert_eq!(
        total.content,
        "Call sites of `Total` (1), nearest to main.go first:\nmain.go:13 in checkout: return money.FormatPrice(c.Total())"
    );
}

#[tokio::test]
async fn outlines_and_the_refusals_read_file_makes() {
    let f = fixture("rust");
    let outline = call(&f.tools, "outline", json!({"path": "src/cart.rs"})).await;
    assert_eq!(
        outline.content,
        "`src/cart.rs`: 5 symbol(s)\n    2-4     type Cart\n    7-9     method Cart::total\n   11-13    method Cart::add\n   16-21    function render\n   17-19    function render::line"
    );
    for (path, says) in [
        ("../python/main.py", "climbs out of the repository with `..`"),
        ("/etc/passwd", "is outside the repository"),
        ("src", "is a directory"),
        ("Cargo.toml", "`Cargo.toml` is not in a language the index parses"),
        ("src/nope.rs", "does not exist in the repository"),
    ] {
        let refused = call(&f.tools, "outline", json!({"path": path})).await;
        assert!(refused.is_error && refused.content.contains(says), "{path}: {}", refused.content);
    }
}

#[tokio::test]
async fn symlinks_out_are_refused_and_lists_are_capped() {
    let dir = tempfile::tempdir().expect("tempdir");
    let outside = tempfile::tempdir().expect("tempdir");
    std::fs::write(outside.path().join("secret.rs"), "pub fn secret() {}\n").expect("write");
    std::os::unix::fs::symlink(outside.path().join("secret.rs"), dir.path().join("link.rs")).expect("symlink");
    let callers: String = (0..130).map(|i| format!("fn c{i}() {{ target(); }}\n")).collect();
    std::fs::write(dir.path().join("lib.rs"), format!("fn target() {{}}\n{callers}")).expect("write");
    std::fs::write(dir.path().join("blob.rs"), b"\0\x01binary").expect("write");
    let f = tools_over(dir.path());
    let link = call(&f.tools, "outline", json!({"path": "link.rs"})).await;
    assert!(
        link.is_error && link.content.contains("leads outside the repository (through a symlink)"),
        "{}",
        link.content
    );
    let secret = call(&f.tools, "find_definition", json!({"symbol": "secret", "near_file": null})).await;
    assert!(secret.content.starts_with("no definition of `secret`"), "{}", secret.content);
    let many = call(&f.tools, "find_references", json!({"symbol": "target", "near_file": null})).await;
    let lines: Vec<&str> = many.content.lines().collect();
    assert_eq!(lines[0], "Call sites of `target` (130):");
    assert_eq!(lines[100], "lib.rs:101 in c99: fn c99() { target(); }");
    assert_eq!(lines[101], "[30 more not shown; give near_file to see the nearest first]");
    assert_eq!(
        lines[102],
        "[the index does not cover 1 file(s) (skipped or left out by its caps); grep searches them]"
    );
    let binary = call(&f.tools, "outline", json!({"path": "blob.rs"})).await;
    assert_eq!(binary.content, "`blob.rs` is not in the symbol index (skipped: a binary file); read_file shows it");
    assert_eq!(f.root, dir.path());
}

#[tokio::test]
async fn one_index_per_review_shared_by_every_agent() {
    let f = fixture("javascript");
    let clones: Vec<RepoTools> = (0..8).map(|_| f.tools.clone()).collect();
    let built = futures::future::join_all(clones.iter().map(|t| t.symbols().get())).await;
    let first = built[0].as_ref().expect("built").clone();
    assert!(built.iter().all(|b| b.as_ref().is_ok_and(|i| Arc::ptr_eq(i, &first))), "one build, shared");
    assert_eq!(first.report().parsed, 4);
    let missing = SymbolIndex::with_options(Path::new("/nonexistent/repo"), IndexOptions::default());
    let tools = RepoTools::new(&f.root, &[]).expect("tools").with_symbols(missing);
    let failed = call(&tools, "find_definition", json!({"symbol": "x", "near_file": null})).await;
    assert!(
        failed.is_error
            && failed.content.starts_with("the symbol index is not available: cannot index `/nonexistent/repo`"),
        "{}",
        failed.content
    );
}

#[tokio::test]
async fn a_model_calls_find_references_through_the_engine() {
    let f = fixture("go");
    let fake = Arc::new(FakeProvider::new("fake"));
    fake.script(
        "reviewer",
        [
            FakeStep::Tools(vec![ToolCall {
                id: "t1".into(),
                name: "find_references".into(),
                arguments: json!({"symbol": "FormatPrice", "near_file": "report/report.go"}),
            }]),
            FakeStep::text("done looking"),
        ],
    );
    let mut providers = ProviderRegistry::default();
    providers.register(fake.clone());
    let engine = Engine::new(providers, Arc::new(MemoryStore::new()), EngineConfig::default());
    let options = RunOptions { tools: Some(Arc::new(f.tools.clone())), ..RunOptions::default() };
    let mut agent = AgentConfig::new("fake");
    agent.tools = vec!["find_definition".into(), "find_references".into(), "outline".into()];
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
    let first = &fake.calls_for("reviewer")[0];
    let offered: Vec<&str> = first.tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(offered, ["find_definition", "find_references", "outline"]);
    let result = fake.calls_for("reviewer")[1].messages.iter().find_map(|m| match m {
        Message::ToolResult { content, is_error, .. } => Some((content.clone(), *is_error)),
        _ => None,
    });
    let (content, is_error) = result.expect("the tool result went back to the model");
    assert!(!is_error, "{content}");
    assert!(
        content.starts_with(
            "Call sites of `FormatPrice` (3), nearest to report/report.go first:\nreport/report.go:8 in Render:"
        ),
        "{content}"
    );
}
