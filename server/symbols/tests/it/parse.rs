//! `parse_source` alone: every grammar's query compiles, and bad input is a skip
//! with its reason.

use conclave_symbols::{Lang, Skip, parse_source};

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
        assert!(!matches!(symbols, Err(Skip::Query(..))), "{path}: {symbols:?}");
    }
}

#[test]
fn bad_input_is_a_skip_with_its_reason() {
    assert_eq!(parse_source("a.rs", b"fn a() {}\0"), Err(Skip::Binary));
    assert_eq!(parse_source("a.py", b"x = '\xff'"), Err(Skip::InvalidUtf8));
    assert_eq!(parse_source("a.go", b")))) }}}}"), Err(Skip::ParseError));
    assert_eq!(parse_source("a.c", b"int x;"), Err(Skip::UnknownLanguage("c".into())));
    assert_eq!(parse_source("Makefile", b"all:"), Err(Skip::UnknownLanguage("(none)".into())));
    let half = parse_source("a.js", b"function ok() {}\nfunction (((").expect("what parsed is kept");
    assert!(half.parse_errors);
    assert_eq!(&*half.definitions[0].name, "ok");
}
