//! `parse_source` on one file of each language: definitions with their kinds,
//! containers and line ranges, references with their enclosing function.

use conclave_symbols::{Lang, SymbolKind, parse_source};

#[test]
fn every_grammar_query_compiles() {
    for (path, lang) in [
        ("a.rs", Lang::Rust),
        ("a.py", Lang::Python),
        ("a.go", Lang::Go),
        ("a.ts", Lang::TypeScript),
        ("a.tsx", Lang::Tsx),
        ("a.js", Lang::JavaScript),
    ] {
        assert_eq!(conclave_symbols::language_of(path), Some(lang));
        let symbols = parse_source(path, b"x\n");
        assert!(!matches!(symbols, Err(conclave_symbols::Skip::Query(..))), "{path}: {symbols:?}");
    }
}

#[test]
fn rust_smoke() {
    let src = b"struct Foo;\nimpl Foo {\n    fn bar(&self) -> u32 {\n        helper(1)\n    }\n}\nfn helper(x: u32) -> u32 {\n    fn inner() {}\n    inner();\n    x\n}\n";
    let symbols = parse_source("src/a.rs", src).expect("parses");
    eprintln!("{symbols:#?}");
    let bar = symbols.definitions.iter().find(|d| d.name == "bar").expect("bar");
    assert_eq!(
        (bar.kind, bar.container.as_deref(), bar.start_line, bar.end_line),
        (SymbolKind::Method, Some("Foo"), 3, 5)
    );
}
