//! The callers and tests of one touched function, from the head version's symbol
//! index: the references to its name (to its class's name for a constructor), less
//! imports, its own body, and the calls that cannot reach it by how they are
//! written (`Other::name(…)` for a method of another type, `module.name(…)` for a
//! free function of another module, a bare `name(…)` for a method); each then
//! sorted into tests (a test file or a test function) and callers.

use conclave_symbols::{Definition, Index, Lang, Reference, SymbolKind, language_of};
use std::collections::HashSet;

use super::model::Site;

/// The callers and tests of a function.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Sites {
    pub callers: Vec<Site>,
    pub tests: Vec<Site>,
}

/// Where `definition`'s name is called or used in the head version, one entry per
/// line; `removed` when the definition is gone from the head (its body is then no
/// longer there to leave out).
pub fn sites_of(definition: &Definition, removed: bool, index: &Index) -> Sites {
    let constructor = constructed_class(definition);
    let query = constructor.unwrap_or(&definition.name);
    let modules = module_names(&definition.file);
    let others = other_owners(definition, index);
    let mut seen = HashSet::new();
    let mut sites = Sites::default();
    for reference in index.references(query, Some(&definition.file)) {
        if constructor.is_some() && !reference.call {
            continue;
        }
        if !reference.call && looks_like_import(&reference.text) {
            continue;
        }
        let own_body = reference.file == definition.file
            && (definition.start_line..=definition.end_line).contains(&reference.line);
        if own_body && !removed {
            continue;
        }
        if constructor.is_none() && !may_reach(definition, reference, &modules, &others) {
            continue;
        }
        if !seen.insert((&*reference.file, reference.line)) {
            continue;
        }
        let site = Site {
            file: reference.file.to_string(),
            line: reference.line,
            text: reference.text.to_string(),
            within: reference.enclosing.as_deref().map(str::to_string),
        };
        if is_test_path(&reference.file) || in_test_code(index, reference) {
            sites.tests.push(site);
        } else {
            sites.callers.push(site);
        }
    }
    sites
}

/// Whether a definition is itself a test: in a test file, in a test module, or named
/// as a test function.
pub fn is_test_definition(definition: &Definition) -> bool {
    is_test_path(&definition.file)
        || definition.container.as_deref().is_some_and(is_test_module)
        || is_test_function_name(&definition.file, &definition.name)
}

/// Whether a path is a test file by its language's conventions: Rust's `tests/`,
/// Python's `test_*.py` and `*_test.py`, Go's `*_test.go`, JavaScript's and
/// TypeScript's `*.test.*` and `*.spec.*`, and any file under a `tests`, `test` or
/// `__tests__` directory.
pub fn is_test_path(path: &str) -> bool {
    let mut components: Vec<&str> = path.split('/').collect();
    let name = components.pop().unwrap_or_default();
    if components.iter().any(|c| matches!(*c, "tests" | "test" | "__tests__")) {
        return true;
    }
    match language_of(path) {
        Some(Lang::Python) => name.starts_with("test_") || name.ends_with("_test.py"),
        Some(Lang::Go) => name.ends_with("_test.go"),
        Some(Lang::TypeScript | Lang::Tsx | Lang::JavaScript) => name.contains(".test.") || name.contains(".spec."),
        _ => false,
    }
}

/// The class a constructor builds (`__init__`, `constructor`), called by its name.
fn constructed_class(definition: &Definition) -> Option<&str> {
    match &*definition.name {
        "__init__" | "constructor" if definition.kind == SymbolKind::Method => definition.container.as_deref(),
        _ => None,
    }
}

/// The names a module-qualified call of a function of `file` may use: the file's stem
/// and its directory's name (a Go package, a Python package's `__init__.py`).
fn module_names(file: &str) -> Vec<String> {
    let mut parts = file.rsplit('/');
    let name = parts.next().unwrap_or_default();
    let stem = name.split('.').next().unwrap_or_default().to_string();
    let mut names = vec![stem];
    names.extend(parts.next().map(str::to_string));
    names
}

/// The modules and types that hold another definition of the same name.
fn other_owners(definition: &Definition, index: &Index) -> HashSet<String> {
    let mut owners = HashSet::new();
    for other in index.definitions(&definition.name, None) {
        if other.file == definition.file && other.start_line == definition.start_line {
            continue;
        }
        owners.extend(other.container.as_deref().map(str::to_string));
        owners.extend(module_names(&other.file).into_iter().take(1));
    }
    for own in module_names(&definition.file) {
        owners.remove(&own);
    }
    if let Some(container) = &definition.container {
        owners.remove(&**container);
    }
    owners
}

/// How a reference's line qualifies the name.
#[derive(Debug, PartialEq, Eq)]
enum Qualifier<'a> {
    /// `name(…)`.
    Bare,
    /// `Owner::name(…)`.
    Path(&'a str),
    /// `receiver.name(…)`; empty when the receiver is an expression.
    Dot(&'a str),
}

/// Whether a reference, by how its line writes the name, may be one to `definition`.
fn may_reach(definition: &Definition, reference: &Reference, modules: &[String], others: &HashSet<String>) -> bool {
    let qualifier = qualifier_of(&reference.text, &reference.name);
    let rust = language_of(&definition.file) == Some(Lang::Rust);
    match (definition.kind, qualifier) {
        (SymbolKind::Method, Qualifier::Bare) => false,
        (SymbolKind::Method, Qualifier::Path(owner)) => {
            definition.container.as_deref() == Some(owner) || owner == "Self"
        }
        // `x.Store.Search(…)` is not a call of `Server.Search` when a `Store` holds one too.
        (SymbolKind::Method, Qualifier::Dot(owner)) => !others.contains(owner),
        (_, Qualifier::Bare) => true,
        (_, Qualifier::Path(owner)) => {
            matches!(owner, "crate" | "self" | "super")
                || (!owner.starts_with(char::is_uppercase) && !others.contains(owner))
        }
        (_, Qualifier::Dot(owner)) => !rust && modules.iter().any(|m| m == owner),
    }
}

/// How `text` qualifies its first use of `name` (its first call, if it calls it).
fn qualifier_of<'a>(text: &'a str, name: &str) -> Qualifier<'a> {
    let uses: Vec<usize> = whole_word_uses(text, name).collect();
    let called = |&&at: &&usize| text[at + name.len()..].trim_start().starts_with(['(', '<', '!']);
    let Some(&at) = uses.iter().find(called).or(uses.first()) else { return Qualifier::Bare };
    let before = text[..at].trim_end();
    let owner = |rest: &'a str| {
        let rest = rest.trim_end();
        let start = rest.rfind(|c: char| !(c.is_alphanumeric() || c == '_')).map_or(0, |i| i + 1);
        &rest[start..]
    };
    if let Some(rest) = before.strip_suffix("::") {
        let rest = rest.trim_end();
        // `Type::<T>::name` and `<T as Trait>::name`: the owner is before the generics.
        let rest = rest.strip_suffix('>').map_or(rest, |r| r.rsplit_once('<').map_or(r, |(o, _)| o.trim_end()));
        let rest = rest.strip_suffix("::").unwrap_or(rest);
        return Qualifier::Path(owner(rest));
    }
    if let Some(rest) = before.strip_suffix("?.").or_else(|| before.strip_suffix('.')) {
        return Qualifier::Dot(owner(rest));
    }
    Qualifier::Bare
}

/// Where `name` occurs in `text` as a whole identifier.
fn whole_word_uses<'a>(text: &'a str, name: &'a str) -> impl Iterator<Item = usize> + 'a {
    let ident = |c: char| c.is_alphanumeric() || c == '_' || c == '$';
    text.match_indices(name).map(|(at, _)| at).filter(move |&at| {
        let before = text[..at].chars().next_back().is_none_or(|c| !ident(c));
        let after = text[at + name.len()..].chars().next().is_none_or(|c| !ident(c));
        before && after
    })
}

/// Whether a line only imports or re-exports names.
fn looks_like_import(text: &str) -> bool {
    let text = text.trim_start();
    ["use ", "pub use ", "pub(crate) use ", "import ", "from ", "export {", "export * ", "mod ", "pub mod "]
        .iter()
        .any(|p| text.starts_with(p))
        || text.contains("require(")
}

/// Whether a reference sits in test code: a test module (Rust's `mod tests`), a test
/// function (`def test_*`, Go's `Test*`), or a method of a test class (`Test*`).
fn in_test_code(index: &Index, reference: &Reference) -> bool {
    let Some(definitions) = index.outline(&reference.file) else { return false };
    let holding = |d: &&Definition| d.start_line <= reference.line && reference.line <= d.end_line;
    definitions.iter().filter(holding).any(|d| match d.kind {
        SymbolKind::Module => is_test_module(&d.name),
        SymbolKind::Function | SymbolKind::Method => {
            is_test_function_name(&reference.file, &d.name)
                || d.container.as_deref().is_some_and(|c| is_test_module(c) || c.starts_with("Test"))
        }
        SymbolKind::Type => d.name.starts_with("Test") && language_of(&d.file) == Some(Lang::Python),
        _ => false,
    })
}

fn is_test_module(name: &str) -> bool {
    matches!(name, "tests" | "test")
}

fn is_test_function_name(file: &str, name: &str) -> bool {
    match language_of(file) {
        Some(Lang::Python) => name.starts_with("test_"),
        Some(Lang::Go) => file.ends_with("_test.go") && name.starts_with("Test"),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn qualifiers_are_read_from_the_calling_line() {
        assert_eq!(qualifier_of("let s = Site::new(root, downloads);", "new"), Qualifier::Path("Site"));
        assert_eq!(qualifier_of("x = Vec::<u8>::new()", "new"), Qualifier::Path("Vec"));
        assert_eq!(qualifier_of("result = length.convert(a, b, c)", "convert"), Qualifier::Dot("length"));
        assert_eq!(qualifier_of("await this.store?.get(id)", "get"), Qualifier::Dot("store"));
        assert_eq!(qualifier_of("json.NewEncoder(w).Encode(events.Last(n))", "Last"), Qualifier::Dot("events"));
        assert_eq!(qualifier_of("return foo(a).bar(b)", "bar"), Qualifier::Dot(""));
        assert_eq!(qualifier_of("total = sum(load_file(conn, p) for p in files)", "load_file"), Qualifier::Bare);
        // The call is what counts, not a mention of the name before it.
        assert_eq!(qualifier_of("let tail = x.tail; tail(lines)", "tail"), Qualifier::Bare);
    }

    #[test]
    fn test_paths_follow_each_language() {
        for path in [
            "tests/it/main.rs",
            "pkg/ring_test.go",
            "tests/test_units.py",
            "app/test_db.py",
            "src/a.test.ts",
            "web/b.spec.js",
            "src/__tests__/c.tsx",
        ] {
            assert!(is_test_path(path), "{path}");
        }
        for path in ["src/lib.rs", "ring/ring.go", "app/db.py", "src/contest.ts", "src/testing.rs"] {
            assert!(!is_test_path(path), "{path}");
        }
    }

    #[test]
    fn imports_are_not_uses() {
        assert!(looks_like_import("use logtail::{filter, last_lines};"));
        assert!(looks_like_import("from exportjob.batching import chunks"));
        assert!(looks_like_import("import { retry, type RetryOptions } from \"./retry.js\";"));
        assert!(!looks_like_import("http.HandleFunc(\"/events\", list)"));
    }
}
