//! Lowering snapshots per provider over a corpus of schemas, and independent checks
//! that lowered schemas follow each provider's rules.

use conclave_schema::{LowerTarget, Lowered, check_schema, lower};
use serde_json::Value;
use std::path::{Path, PathBuf};

fn corpus() -> Vec<(String, Value)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/schemas/corpus");
    let mut files: Vec<PathBuf> =
        std::fs::read_dir(&dir).expect("corpus dir").map(|e| e.expect("entry").path()).collect();
    files.sort();
    let corpus: Vec<(String, Value)> = files
        .into_iter()
        .map(|p| {
            let name = p.file_stem().expect("stem").to_string_lossy().into_owned();
            let schema = serde_json::from_str(&std::fs::read_to_string(&p).expect("read")).expect("json");
            (name, schema)
        })
        .collect();
    assert!(corpus.len() >= 15, "the corpus must have at least 15 schemas");
    corpus
}

fn render(lowered: &Lowered) -> String {
    let mut out = format!("native: {}\nnotes:\n", lowered.native);
    for note in &lowered.notes {
        let kind = serde_json::to_value(note.kind).expect("kind");
        out.push_str(&format!("  [{}] {note}\n", kind.as_str().unwrap_or("?")));
    }
    out.push_str("schema:\n");
    out.push_str(&serde_json::to_string_pretty(&lowered.schema).expect("json"));
    out
}

#[test]
fn corpus_schemas_are_themselves_valid() {
    for (name, schema) in corpus() {
        assert_eq!(check_schema(&schema), vec![], "{name}");
    }
}

#[test]
fn lowering_snapshots() {
    for (name, schema) in corpus() {
        for target in [LowerTarget::OpenAi, LowerTarget::Anthropic, LowerTarget::Ollama, LowerTarget::Local] {
            let lowered = lower(&schema, target).expect("object roots lower");
            insta::assert_snapshot!(format!("{}__{name}", target.as_str()), render(&lowered));
        }
    }
}

/// Strict-mode rules, checked independently of the lowering code.
fn strict_mode_violations(schema: &Value, path: &str, out: &mut Vec<String>) {
    const FORBIDDEN: &[&str] = &[
        "allOf",
        "oneOf",
        "not",
        "if",
        "then",
        "else",
        "dependentRequired",
        "dependentSchemas",
        "default",
        "minLength",
        "maxLength",
        "uniqueItems",
        "patternProperties",
    ];
    const FORMATS: &[&str] = &["date-time", "time", "date", "duration", "email", "hostname", "ipv4", "ipv6", "uuid"];
    let Value::Object(obj) = schema else { return };
    for key in FORBIDDEN {
        if obj.contains_key(*key) {
            out.push(format!("{path}: `{key}` is not allowed"));
        }
    }
    if let Some(Value::String(f)) = obj.get("format")
        && !FORMATS.contains(&f.as_str())
    {
        out.push(format!("{path}: format `{f}` is not allowed"));
    }
    let is_object =
        obj.get("type").is_some_and(|t| t == "object" || t.as_array().is_some_and(|a| a.contains(&"object".into())));
    if is_object {
        if obj.get("additionalProperties") != Some(&Value::Bool(false)) {
            out.push(format!("{path}: object without additionalProperties: false"));
        }
        let props: Vec<&String> =
            obj.get("properties").and_then(Value::as_object).map(|p| p.keys().collect()).unwrap_or_default();
        let required: Vec<&str> = obj
            .get("required")
            .and_then(Value::as_array)
            .map(|r| r.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        for p in props {
            if !required.contains(&p.as_str()) {
                out.push(format!("{path}: property `{p}` is not required"));
            }
        }
    }
    for (key, value) in obj {
        match (key.as_str(), value) {
            ("properties" | "$defs" | "definitions", Value::Object(children)) => {
                for (name, child) in children {
                    strict_mode_violations(child, &format!("{path}/{key}/{name}"), out);
                }
            }
            ("anyOf", Value::Array(items)) => {
                for (i, child) in items.iter().enumerate() {
                    strict_mode_violations(child, &format!("{path}/{key}/{i}"), out);
                }
            }
            ("items" | "additionalProperties", child @ Value::Object(_)) => {
                strict_mode_violations(child, &format!("{path}/{key}"), out)
            }
            _ => {}
        }
    }
}

#[test]
fn every_native_openai_lowering_satisfies_strict_mode() {
    for (name, schema) in corpus() {
        let lowered = lower(&schema, LowerTarget::OpenAi).expect("lowers");
        if !lowered.native {
            continue;
        }
        let mut violations = Vec::new();
        strict_mode_violations(&lowered.schema, "", &mut violations);
        assert!(violations.is_empty(), "{name}: {violations:?}");
        assert_eq!(lowered.schema["type"], "object", "{name}: strict mode needs an object root");
        jsonschema::validator_for(&lowered.schema)
            .unwrap_or_else(|e| panic!("{name}: lowered schema does not compile: {e}"));
    }
}

#[test]
fn anthropic_lowerings_close_objects_and_drop_bounds() {
    for (name, schema) in corpus() {
        let lowered = lower(&schema, LowerTarget::Anthropic).expect("lowers");
        if !lowered.native {
            assert_eq!(name, "15-recursive", "only recursive schemas fall back to the prompt contract");
            continue;
        }
        let text = lowered.schema.to_string();
        for forbidden in [
            "\"minimum\"",
            "\"maximum\"",
            "\"minLength\"",
            "\"maxLength\"",
            "\"maxItems\"",
            "\"uniqueItems\"",
            "\"oneOf\"",
        ] {
            assert!(!text.contains(forbidden), "{name}: {forbidden} survived lowering");
        }
        let mut violations = Vec::new();
        strict_mode_violations(&lowered.schema, "", &mut violations);
        let unclosed: Vec<&String> = violations.iter().filter(|v| v.contains("additionalProperties")).collect();
        assert!(unclosed.is_empty(), "{name}: {unclosed:?}");
    }
}

#[test]
fn ollama_lowering_never_changes_the_schema() {
    for (name, schema) in corpus() {
        let lowered = lower(&schema, LowerTarget::Ollama).expect("lowers");
        assert_eq!(
            lowered.schema,
            conclave_schema::normalize(&schema).expect("normalizes"),
            "{name}: Ollama gets the normalized schema as is"
        );
    }
}
