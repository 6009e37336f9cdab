//! The index over the fixture repositories of `tests/fixtures/symbols/` (one per
//! language, the same tiny shop in each): definitions with their kinds, containers
//! and line ranges, call sites apart from other uses (imports, re-exports, type
//! uses), methods, nested functions, and `near_file` picking the right one of two
//! same-named functions. Every expected line is read off the fixture by hand.

use conclave_symbols::{Index, IndexOptions};
use std::path::PathBuf;

pub fn fixture(lang: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/symbols").join(lang)
}

fn index(lang: &str) -> Index {
    Index::build(&fixture(lang), &IndexOptions::default()).expect("the fixture indexes")
}

/// `file:start-end kind[ in container]` of each definition, best first.
fn defs(index: &Index, name: &str, near: Option<&str>) -> Vec<String> {
    index
        .definitions(name, near)
        .into_iter()
        .map(|d| {
            let within = d.container.as_deref().map(|c| format!(" in {c}")).unwrap_or_default();
            format!("{}:{}-{} {}{within}", d.file, d.start_line, d.end_line, d.kind.name())
        })
        .collect()
}

/// `file:line[ in function]` of each reference that is (or is not) a call.
fn refs(index: &Index, name: &str, call: bool) -> Vec<String> {
    index
        .references(name, None)
        .into_iter()
        .filter(|r| r.call == call)
        .map(|r| {
            let within = r.enclosing.as_deref().map(|f| format!(" in {f}")).unwrap_or_default();
            format!("{}:{}{within}", r.file, r.line)
        })
        .collect()
}

/// What each language's fixture must give.
struct Expected<'a> {
    lang: &'a str,
    price: &'a str,
    price_def: &'a str,
    price_calls: &'a [&'a str],
    price_uses: &'a [&'a str],
    total_def: &'a str,
    total_calls: &'a [&'a str],
    nested: Option<(&'a str, &'a str)>,
    render: [(&'a str, &'a str); 2],
    constant: (&'a str, &'a str),
}

fn check(e: &Expected) {
    let index = index(e.lang);
    let lang = e.lang;
    assert_eq!(defs(&index, e.price, None), [e.price_def], "{lang}: the price formatter's definition");
    assert_eq!(refs(&index, e.price, true), e.price_calls, "{lang}: its call sites");
    assert_eq!(refs(&index, e.price, false), e.price_uses, "{lang}: its imports and re-exports");
    let total = if lang == "go" { "Total" } else { "total" };
    assert_eq!(defs(&index, total, None), [e.total_def], "{lang}: the method");
    assert_eq!(refs(&index, total, true), e.total_calls, "{lang}: the method's call sites");
    let qualified = if lang == "rust" { format!("Cart::{total}") } else { format!("Cart.{total}") };
    assert_eq!(defs(&index, &qualified, None), [e.total_def], "{lang}: the method by its qualified name");
    if let Some((name, def)) = e.nested {
        assert_eq!(defs(&index, name, None), [def], "{lang}: the nested function");
    }
    for (near, first) in e.render {
        let render = if lang == "go" { "Render" } else { "render" };
        let found = defs(&index, render, Some(near));
        assert_eq!(found.len(), 2, "{lang}: both {render} functions: {found:?}");
        assert_eq!(found[0], first, "{lang}: near {near}, the nearest {render} comes first");
    }
    assert_eq!(defs(&index, e.constant.0, None), [e.constant.1], "{lang}: the constant");
    assert_eq!(index.report().skipped.values().sum::<usize>(), 0, "{lang}: {:?}", index.report());
}

#[test]
fn rust_fixture() {
    check(&Expected {
        lang: "rust",
        price: "format_price",
        price_def: "src/money.rs:4-6 function",
        price_calls: &["src/cart.rs:18 in line", "src/lib.rs:10 in checkout", "src/report.rs:3 in render"],
        price_uses: &["src/lib.rs:6"],
        total_def: "src/cart.rs:7-9 method in Cart",
        total_calls: &["src/lib.rs:9 in checkout"],
        nested: Some(("line", "src/cart.rs:17-19 function in render")),
        render: [("src/report.rs", "src/report.rs:2-4 function"), ("src/cart.rs", "src/cart.rs:16-21 function")],
        constant: ("CURRENCY", "src/money.rs:2-2 constant"),
    });
    let index = index("rust");
    assert_eq!(refs(&index, "Cart", false), ["src/cart.rs:6", "src/cart.rs:16 in render", "src/lib.rs:8 in checkout"]);
    assert_eq!(defs(&index, "report", None), ["src/lib.rs:4-4 module"]);
}

#[test]
fn python_fixture() {
    check(&Expected {
        lang: "python",
        price: "format_price",
        price_def: "shop/money.py:5-6 function",
        price_calls: &["main.py:8 in checkout", "shop/cart.py:18 in line", "shop/report.py:6 in render"],
        price_uses: &["main.py:2", "shop/__init__.py:2", "shop/cart.py:2"],
        total_def: "shop/cart.py:9-10 method in Cart",
        total_calls: &["main.py:7 in checkout"],
        nested: Some(("line", "shop/cart.py:17-18 function in render")),
        render: [("shop/report.py", "shop/report.py:5-6 function"), ("shop/cart.py", "shop/cart.py:16-20 function")],
        constant: ("CURRENCY", "shop/money.py:2-2 constant"),
    });
    let index = index("python");
    assert_eq!(defs(&index, "__init__", None), ["shop/cart.py:6-7 method in Cart"]);
    assert_eq!(refs(&index, "Cart", false), ["main.py:3", "main.py:6 in checkout", "shop/cart.py:16 in render"]);
}

#[test]
fn go_fixture() {
    check(&Expected {
        lang: "go",
        price: "FormatPrice",
        price_def: "money/money.go:10-12 function",
        price_calls: &["cart/cart.go:29 in Render", "main.go:13 in checkout", "report/report.go:8 in Render"],
        price_uses: &[],
        total_def: "cart/cart.go:12-18 method in Cart",
        total_calls: &["main.go:13 in checkout"],
        nested: None,
        render: [
            ("report/report.go", "report/report.go:7-9 function"),
            ("cart/cart.go", "cart/cart.go:26-32 function"),
        ],
        constant: ("Currency", "money/money.go:7-7 constant"),
    });
    let index = index("go");
    // The alias re-exports the cart's type under another name.
    assert_eq!(defs(&index, "Basket", None), ["main.go:10-10 type"]);
    assert!(refs(&index, "Cart", false).contains(&"main.go:10".to_string()));
    // From the root, the nearer `Render` is the one fewer directories away; a tie
    // goes by path.
    assert_eq!(defs(&index, "Render", Some("main.go"))[0], "cart/cart.go:26-32 function");
}

#[test]
fn typescript_fixture() {
    check(&Expected {
        lang: "typescript",
        price: "formatPrice",
        price_def: "src/money.ts:6-8 function",
        price_calls: &["src/cart.ts:22 in line", "src/index.ts:9 in checkout", "src/report.ts:5 in render"],
        price_uses: &["src/cart.ts:2", "src/index.ts:3", "src/index.ts:5", "src/report.ts:2"],
        total_def: "src/cart.ts:11-13 method in Cart",
        total_calls: &["src/index.ts:8 in checkout"],
        nested: Some(("line", "src/cart.ts:21-23 function in render")),
        render: [("src/report.ts", "src/report.ts:4-6 function"), ("src/cart.ts", "src/cart.ts:20-25 function")],
        constant: ("CURRENCY", "src/money.ts:2-2 constant"),
    });
    let index = index("typescript");
    assert_eq!(defs(&index, "Cents", None), ["src/money.ts:4-4 type"]);
    assert_eq!(defs(&index, "Priced", None), ["src/cart.ts:4-6 type"]);
    assert_eq!(defs(&index, "price", None), ["src/cart.ts:5-5 method in Priced"]);
    assert_eq!(refs(&index, "Cents", false), ["src/money.ts:6 in formatPrice"]);
    let signature = &index.definitions("render", Some("src/report.ts"))[0].signature;
    assert_eq!(&**signature, "export function render(total: number): string {");
}

#[test]
fn javascript_fixture() {
    check(&Expected {
        lang: "javascript",
        price: "formatPrice",
        price_def: "src/money.js:4-6 function",
        price_calls: &["src/cart.js:19 in line", "src/index.js:9 in checkout", "src/report.js:4 in render"],
        price_uses: &["src/cart.js:2", "src/index.js:3", "src/index.js:5", "src/report.js:2"],
        total_def: "src/cart.js:9-11 method in Cart",
        total_calls: &["src/index.js:8 in checkout"],
        nested: Some(("line", "src/cart.js:19-19 function in render")),
        render: [("src/report.js", "src/report.js:4-4 function"), ("src/cart.js", "src/cart.js:18-21 function")],
        constant: ("CURRENCY", "src/money.js:2-2 constant"),
    });
    let index = index("javascript");
    assert_eq!(refs(&index, "Cart", false), ["src/index.js:2", "src/index.js:13 in newCart"]);
    let outline: Vec<&str> = index.outline("src/cart.js").expect("indexed").iter().map(|d| &*d.name).collect();
    assert_eq!(outline, ["Cart", "constructor", "total", "add", "render", "line"]);
}

/// Calls inside Rust macro invocations (`assert_eq!`, `vec!`, a `format!` inside a
/// `println!`, arguments over several lines) are call sites; `Type::name` leaves out
/// the paths that name another type (`String::new` for `Till::new`), keeps a
/// method call on a value (its type unknown) and ranks it after the exact ones.
#[test]
fn rust_macro_calls_and_qualified_references() {
    let index = index("rust");
    assert_eq!(defs(&index, "Till::new", None), ["src/till.rs:7-9 method in Till"]);
    let all_news = [
        "src/till.rs:17 in fresh",
        "src/till.rs:22 in label",
        "src/till.rs:23 in label",
        "src/till.rs:35 in opens",
        "src/till.rs:35 in opens",
        "src/till.rs:39 in opens",
    ];
    assert_eq!(refs(&index, "new", true), all_news, "every `new`, macros' arguments too");
    // `Self::new` in the impl is the till's; `String::new` (in code and in `assert!`) is not.
    let tills =
        ["src/till.rs:17 in fresh", "src/till.rs:23 in label", "src/till.rs:35 in opens", "src/till.rs:35 in opens"];
    assert_eq!(refs(&index, "Till::new", true), tills);
    assert_eq!(refs(&index, "String::new", true), ["src/till.rs:22 in label", "src/till.rs:39 in opens"]);
    // Method calls on values, in `format!` and `assert_eq!`: their type is unknown, so kept.
    assert_eq!(refs(&index, "Till::open", true), ["src/till.rs:23 in label", "src/till.rs:34 in opens"]);
    assert_eq!(refs(&index, "label", true), ["src/till.rs:36 in opens", "src/till.rs:38 in opens"]);
    // The path that names the module first, then the bare call (its module unknown).
    assert_eq!(refs(&index, "till::label", true), ["src/till.rs:38 in opens", "src/till.rs:36 in opens"]);
    assert_eq!(refs(&index, "other::label", true), ["src/till.rs:36 in opens"]);
}

/// A TypeScript constructor is a method of its class.
#[test]
fn typescript_constructor_is_a_definition() {
    let index = index("typescript");
    assert_eq!(defs(&index, "constructor", None), ["src/till.ts:5-7 method in Till"]);
    assert_eq!(defs(&index, "Till.constructor", None), ["src/till.ts:5-7 method in Till"]);
}
