//! The sanitizer against a corpus of Markdown tricks (`tests/fixtures/inert/corpus.md`):
//! each output rendered by comrak with GitHub's extensions, autolinks on, and the HTML
//! checked for anything live (an image, a raw tag, a link elsewhere, a mention
//! outside code, an invisible character); exact outputs for the main cases; and
//! sanitizing every output again changes nothing.

use conclave_review::inert::{LinkPolicy, code_span, sanitize};
use conclave_testkit::{live_parts, render_gfm};
use regex::Regex;

const ALLOWED: &str = "https://github.com/acme/app";

/// One case of the corpus.
struct Case {
    name: String,
    input: String,
    expected: Option<String>,
}

fn corpus() -> Vec<Case> {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/fixtures/inert/corpus.md");
    let text = std::fs::read_to_string(path).expect("the corpus");
    let mut cases = Vec::new();
    for block in text.split("\n=== ").skip(1) {
        let (name, body) = block.split_once('\n').unwrap_or((block, ""));
        let (input, expected) = match body.split_once("\n--- expected\n") {
            Some((input, expected)) => (input, Some(expected.trim_end_matches('\n').to_string())),
            None => (body.trim_end_matches('\n'), None),
        };
        cases.push(Case { name: name.to_string(), input: decode(input), expected });
    }
    cases
}

/// An input with each `\u{…}` replaced by its character.
fn decode(text: &str) -> String {
    let escape = Regex::new(r"\\u\{([0-9a-fA-F]+)\}").expect("regex");
    escape
        .replace_all(text, |c: &regex::Captures<'_>| {
            let code = u32::from_str_radix(&c[1], 16).expect("hex");
            char::from_u32(code).expect("a character").to_string()
        })
        .into_owned()
}

fn render(markdown: &str) -> String {
    render_gfm(markdown)
}

fn live(html: &str) -> Vec<String> {
    live_parts(html, ALLOWED)
}

#[test]
fn every_trick_of_the_corpus_renders_inert_and_settles() {
    let links = LinkPolicy::repository(ALLOWED).expect("a repository URL");
    let cases = corpus();
    assert!(cases.len() >= 35, "the corpus has {} cases", cases.len());
    let mut failures = Vec::new();
    for case in &cases {
        let out = sanitize(&case.input, &links);
        if let Some(expected) = &case.expected
            && &out != expected
        {
            failures.push(format!("{}: expected\n{expected}\ngot\n{out}", case.name));
        }
        let live = live(&render(&out));
        if !live.is_empty() {
            failures.push(format!("{}: {live:?} in the output\n{out}", case.name));
        }
        let again = sanitize(&out, &links);
        if again != out {
            failures.push(format!("{}: not idempotent\n{out}\nthen\n{again}", case.name));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

#[test]
fn the_checks_catch_what_the_corpus_would_post_unsanitized() {
    // A test that cannot fail is a defect: the raw inputs must trip the checks.
    let tripped = corpus().iter().filter(|c| !live(&render(&c.input)).is_empty()).count();
    assert!(tripped >= 25, "only {tripped} raw inputs were caught");
    for raw in ["![x](https://evil.example/p.png)", "<img src=x>", "@everyone", "https://evil.example", "a\u{202e}b"] {
        assert!(!live(&render(raw)).is_empty(), "{raw}");
    }
}

#[test]
fn without_a_repository_no_link_is_kept() {
    let out = sanitize("[a](https://github.com/acme/app/x) https://github.com/acme/app", &LinkPolicy::none());
    assert_eq!(out, "`[a](https://github.com/acme/app/x)` `https://github.com/acme/app`");
}

#[test]
fn composed_fragments_stay_inert_together() {
    // Each fragment alone is harmless; joined, a reference in one could meet a
    // definition in another, or an open fence swallow what follows.
    let links = LinkPolicy::repository(ALLOWED).expect("a repository URL");
    let fragments = ["See [the fix][1].", "[1]: https://evil.example/fix", "```\nopen fence", "@ann please"];
    let joined: Vec<String> = fragments.iter().map(|f| sanitize(f, &links)).collect();
    let body = format!("{}\n\n<!-- conclave:finding fp=1 state=open -->", joined.join("\n\n"));
    let html = render(&body);
    let live: Vec<String> = live(&html).into_iter().filter(|p| p != "an HTML comment").collect();
    assert!(live.is_empty(), "{live:?}\n{body}");
    assert!(
        html.ends_with("<!-- conclave:finding fp=1 state=open -->\n"),
        "the marker is outside every block:\n{html}"
    );
}

#[test]
fn a_path_is_one_code_span_whatever_its_name() {
    for path in ["src/a.rs", "a`![x](https://evil.example/i.png)`b", "x\n# heading\n@ann", "r\u{202e}sr.txt", "``"] {
        let span = code_span(path);
        let html = render(&format!("- {span} line 3"));
        assert!(live(&html).is_empty() && html.matches("<code>").count() == 1, "{path:?}: {span} -> {html}");
    }
}

#[test]
fn random_markdown_settles_inert_without_a_panic() {
    // Pieces of Markdown syntax shuffled together find what a hand-written corpus
    // misses; the seed is fixed so a failure can be replayed.
    let pieces = [
        "[",
        "]",
        "(",
        ")",
        "![",
        "<",
        ">",
        "`",
        "``",
        "```",
        "~~~",
        "*",
        "_",
        "@",
        "\\",
        "&",
        "&#64;",
        "&lt;",
        "#",
        ":",
        "/",
        "\n",
        "\n\n",
        " ",
        "    ",
        "a",
        "1.",
        "- ",
        "> ",
        "|",
        "https://e.example/x",
        "https://github.com/acme/app/x",
        "www.e.example",
        "u@e.example",
        "\u{202e}",
        "\u{200b}",
        "<!--",
        "-->",
        "<img src=x>",
        "[r]: https://e.example",
        "[^1]",
        "ann",
    ];
    let links = LinkPolicy::repository(ALLOWED).expect("a repository URL");
    let mut rng = fastrand::Rng::with_seed(32);
    let mut failures = Vec::new();
    for _ in 0..1500 {
        let len = rng.usize(1..24);
        let input: String = (0..len).map(|_| pieces[rng.usize(..pieces.len())]).collect();
        let out = sanitize(&input, &links);
        let again = sanitize(&out, &links);
        let live = live(&render(&out));
        if again != out || !live.is_empty() {
            failures.push(format!("{input:?}\n -> {out:?}\n -> {again:?}\n {live:?}"));
        }
    }
    assert!(
        failures.is_empty(),
        "{} failures, the first:\n{}",
        failures.len(),
        failures.iter().take(5).cloned().collect::<Vec<_>>().join("\n\n")
    );
}
