//! The conclave file format: the published schema matches the types, and files
//! round-trip byte for byte.

use conclave_catalog::format::{format_schema, format_schema_text};
use conclave_catalog::format_reference::{format_reference_markdown, reference_from_schema};
use conclave_shared::{
    AgentConfig, CommandConfig, CommandDir, CommandParse, Conclave, Edge, Node, NodeKind, Position, Predicate,
    PredicateOp, RouteCase, RouteConfig, Settings,
};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn conclave_files() -> Vec<PathBuf> {
    let mut files = Vec::new();
    for dir in ["conclaves", "tests/fixtures/valid"] {
        for entry in std::fs::read_dir(workspace_root().join(dir)).expect("dir exists") {
            let path = entry.expect("entry").path();
            if path.to_string_lossy().ends_with(".conclave.json") {
                files.push(path);
            }
        }
    }
    assert!(files.len() >= 2, "expected sample conclaves, found {files:?}");
    files
}

#[test]
fn the_published_schema_is_the_generated_one() {
    let published =
        std::fs::read_to_string(workspace_root().join("docs/conclave-file.schema.json")).expect("published");
    assert!(
        published == format_schema_text(),
        "docs/conclave-file.schema.json is stale: regenerate it with `conclave schema format > docs/conclave-file.schema.json`"
    );
}

#[test]
fn the_published_reference_is_the_generated_one() {
    let published =
        std::fs::read_to_string(workspace_root().join("docs/reference/conclave-file.md")).expect("published");
    assert!(
        published == format_reference_markdown(),
        "docs/reference/conclave-file.md is stale: regenerate it with `conclave docs format > docs/reference/conclave-file.md`"
    );
}

#[test]
fn the_reference_renders_fields_enumerations_and_references() {
    let schema = json!({
        "title": "T", "type": "object", "required": ["a"], "additionalProperties": false,
        "properties": {
            "a": {"description": "The | first.", "$ref": "#/$defs/Kind"},
            "b": {"type": ["integer", "null"], "minimum": 1, "default": 2}
        },
        "$defs": {"Kind": {"oneOf": [{"const": "x", "description": "An x."}, {"const": "y"}]}}
    });
    let markdown = reference_from_schema(&schema);
    assert!(markdown.contains("| `a` | [Kind](#kind) | yes |  | The \\| first. |"), "{markdown}");
    assert!(markdown.contains("| `b` | integer (≥ 1) or null |  | `2` |  |"), "{markdown}");
    assert!(markdown.contains("## Kind\n\n- `\"x\"`: An x.\n- `\"y\"`\n"), "{markdown}");
    assert!(markdown.contains("No other field is allowed."), "{markdown}");
}

#[test]
fn checked_in_files_round_trip_byte_for_byte_and_satisfy_the_schema() {
    let validator = jsonschema::validator_for(&format_schema()).expect("format schema compiles");
    for path in conclave_files() {
        let text = std::fs::read_to_string(&path).expect("read");
        let conclave = Conclave::from_json(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        assert_eq!(conclave.to_file_text(), text, "{} is not in canonical form", path.display());
        let value: Value = serde_json::from_str(&text).expect("json");
        let errors: Vec<String> = validator.iter_errors(&value).map(|e| e.to_string()).collect();
        assert!(errors.is_empty(), "{}: {errors:?}", path.display());
    }
}

/// A random but well-formed conclave, exercising every optional field.
fn random_conclave(rng: &mut fastrand::Rng) -> Conclave {
    let word = |rng: &mut fastrand::Rng| (0..rng.usize(1..8)).map(|_| rng.lowercase()).collect::<String>();
    let n = rng.usize(1..12);
    let mut nodes = Vec::new();
    for i in 0..n {
        let kinds = [NodeKind::Agent, NodeKind::Output, NodeKind::Route, NodeKind::Command];
        let kind = if i == 0 { NodeKind::Trigger } else { kinds[rng.usize(0..kinds.len())] };
        let agent = (kind == NodeKind::Agent).then(|| {
            let mut a = AgentConfig::new(["openai", "anthropic", "ollama", "local"][rng.usize(0..4)]);
            a.model = word(rng);
            a.system_prompt = format!("{} \"quoted\" \n line", word(rng));
            if rng.bool() {
                a.tools = vec!["read_file".into(), "grep".into()];
            }
            a.max_turns = rng.bool().then(|| rng.u32(1..20));
            match rng.u8(0..3) {
                0 => a.output_schema = Some(json!({"type": "object", "properties": {word(rng): {"type": "string"}}})),
                1 => a.output_schema_ref = Some("review.findings.v1".into()),
                _ => {}
            }
            a.output_retries = rng.bool().then(|| rng.u32(0..5));
            a.timeout_secs = rng.bool().then(|| rng.u64(1..900));
            a
        });
        nodes.push(Node {
            id: format!("{}-{i}", word(rng)),
            kind,
            label: word(rng),
            position: Position { x: rng.i32(-2000..2000), y: rng.i32(-2000..2000) },
            agent,
            route: (kind == NodeKind::Route).then(|| random_route(rng)),
            command: (kind == NodeKind::Command).then(|| random_command(rng)),
            approval: None,
            child: None,
            repeat: None,
        });
    }
    let edges = (1..n)
        .map(|i| {
            let from = &nodes[rng.usize(0..i)];
            let case = from.route.as_ref().map(|r| r.case_names().next().unwrap_or("none").to_string());
            Edge { case, ..Edge::new(from.id.clone(), nodes[i].id.clone()) }
        })
        .collect();
    let mut settings = Settings::default();
    if rng.bool() {
        settings.max_concurrency = Some(rng.u32(1..64));
        settings.provider_limits.insert("openai".into(), rng.u32(1..8));
    }
    Conclave { version: 1, id: word(rng), name: word(rng), description: word(rng), settings, nodes, edges }
}

fn random_route(rng: &mut fastrand::Rng) -> RouteConfig {
    let cases = (0..rng.usize(1..4))
        .map(|i| {
            let op = PredicateOp::ALL[rng.usize(0..PredicateOp::ALL.len())];
            let value = op.operand().map(|_| match op {
                PredicateOp::OneOf => json!(["a", 2, null]),
                PredicateOp::Equals => json!({"nested": [true]}),
                _ => json!(rng.i32(-100..100)),
            });
            RouteCase { name: format!("case-{i}"), when: Predicate { pointer: format!("/up/field{i}"), op, value } }
        })
        .collect();
    RouteConfig { cases, otherwise: rng.bool().then(|| "otherwise".to_string()) }
}

fn random_command(rng: &mut fastrand::Rng) -> CommandConfig {
    let mut c = CommandConfig::new(vec!["git".into(), "diff".into(), format!("--{}", rng.u32(0..9))]);
    c.cwd = [CommandDir::Repository, CommandDir::Workspace][rng.usize(0..2)];
    c.timeout_secs = rng.bool().then(|| rng.u64(1..600));
    c.max_output_bytes = rng.bool().then(|| rng.u64(1..1 << 30));
    c.ok_exit_codes = if rng.bool() { vec![0, 1] } else { Vec::new() };
    c.parse = [CommandParse::Text, CommandParse::Json, CommandParse::Sarif, CommandParse::Diagnostics][rng.usize(0..4)];
    if c.parse == CommandParse::Json && rng.bool() {
        c.output_schema = Some(json!({"type": "object", "properties": {"ok": {"type": "boolean"}}}));
    }
    if rng.bool() {
        c.sandbox = Some(conclave_shared::SandboxConfig {
            network: rng.bool(),
            read: if rng.bool() { vec!["~/.rustup".into()] } else { Vec::new() },
            write: if rng.bool() { vec!["/var/cache/tool".into()] } else { Vec::new() },
            env: if rng.bool() { [("T".to_string(), "{scratch}/t".to_string())].into() } else { Default::default() },
            limits: rng
                .bool()
                .then(|| conclave_shared::SandboxLimits { memory_mb: Some(rng.u64(1..8192)), ..Default::default() }),
        });
    }
    c
}

#[test]
fn random_conclaves_satisfy_the_schema_and_round_trip() {
    let validator = jsonschema::validator_for(&format_schema()).expect("format schema compiles");
    let mut rng = fastrand::Rng::with_seed(7);
    for _ in 0..300 {
        let conclave = random_conclave(&mut rng);
        let text = conclave.to_file_text();
        let value: Value = serde_json::from_str(&text).expect("json");
        let errors: Vec<String> =
            validator.iter_errors(&value).map(|e| format!("{}: {e}", e.instance_path())).collect();
        assert!(errors.is_empty(), "schema rejects a value the types produce: {errors:?}\n{text}");
        let back = Conclave::from_json(&text).expect("parses");
        assert_eq!(back, conclave);
        assert_eq!(back.to_file_text(), text);
    }
}

#[test]
fn the_schema_rejects_what_the_types_reject() {
    let validator = jsonschema::validator_for(&format_schema()).expect("format schema compiles");
    let cases = [
        json!({"id": "x", "name": "x", "nodes": [{"id": "a", "kind": "router"}]}),
        json!({"id": "x", "name": "x", "nodes": [], "colour": "red"}),
        json!({"id": "x", "name": "x", "nodes": [{"id": "a", "kind": "agent", "agent": {"model": "m"}}]}),
        json!({"id": "x", "name": "x", "nodes": [], "edges": [{"from": "a"}]}),
        json!({"version": 2, "id": "x", "name": "x", "nodes": []}),
    ];
    for case in cases {
        assert!(!validator.is_valid(&case), "schema accepted {case}");
        assert!(
            serde_json::from_value::<Conclave>(case.clone()).is_err() || case["version"] == 2,
            "types accepted {case}"
        );
    }
}
