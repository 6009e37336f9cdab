//! No blocking call on an async thread: in the server's crates, no `async fn` or
//! `async` block touches the file system, starts or waits for a process, sleeps the
//! thread or reads the terminal, either itself or through a synchronous function of
//! the workspace that does, unless the work is handed to `spawn_blocking` or
//! `block_in_place`. Calls are resolved by name (a path's last two segments, a
//! method's name when only one type of the workspace has it), so this is a guard
//! rather than a proof.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use syn::spanned::Spanned;
use syn::visit::Visit;

/// The source trees checked: every crate that runs on tokio.
const CRATES: &[&str] = &[
    "server/src",
    "server/core/src",
    "server/engine/src",
    "server/providers/src",
    "server/review/src",
    "server/store/src",
    "server/catalog/src",
    "server/schema/src",
];

/// Paths that block the calling thread.
const BLOCKING_PATHS: &[&str] =
    &["std::fs::", "std::process::Command", "std::thread::sleep", "std::io::stdin", "std::net::TcpStream"];

/// Methods of `std::path::Path` that ask the file system; flagged unless awaited.
const BLOCKING_METHODS: &[&str] = &[
    "exists",
    "try_exists",
    "is_file",
    "is_dir",
    "is_symlink",
    "metadata",
    "symlink_metadata",
    "canonicalize",
    "read_dir",
    "read_link",
];

/// Whether `receiver.method()` only reads metadata already fetched: `is_file` and
/// `is_dir` of a `Metadata` or `FileType` (a variable named `meta…` or `…_type`, or
/// the result of `metadata()` or `file_type()`) ask the file system nothing.
fn asks_metadata(receiver: &syn::Expr, method: &str) -> bool {
    if !matches!(method, "is_file" | "is_dir" | "is_symlink") {
        return false;
    }
    match receiver {
        syn::Expr::Path(p) => p.path.get_ident().is_some_and(|i| {
            let name = i.to_string();
            name.starts_with("meta") || name.ends_with("_type")
        }),
        syn::Expr::MethodCall(call) => call.method == "file_type",
        syn::Expr::Await(_) => true,
        _ => false,
    }
}

/// Functions whose argument runs off the async threads (besides the workspace's own
/// helpers that hand theirs to one of these, found by `Wrappers`).
const OFFLOADING: &[&str] = &["spawn_blocking", "block_in_place"];

/// Method names that the standard library, tokio or a dependency also use, so that a
/// call of one is never taken for a call of the workspace's method of that name.
const FOREIGN_METHODS: &[&str] = &[
    "new",
    "default",
    "from",
    "into",
    "get",
    "set",
    "insert",
    "remove",
    "push",
    "pop",
    "len",
    "is_empty",
    "clone",
    "iter",
    "map",
    "read",
    "write",
    "open",
    "close",
    "run",
    "send",
    "recv",
    "next",
    "load",
    "store",
    "apply",
    "call",
    "build",
    "parse",
    "check",
    "finish",
    "start",
    "wait",
    "join",
    "contains",
    "extend",
    "take",
    "replace",
    "as_str",
    "to_string",
    "fmt",
    "eq",
    "cmp",
    "hash",
    "drop",
    "flush",
    "lock",
    "with",
    "update",
    "render",
    "name",
    "kind",
    "status",
    "spawn",
    "output",
    "text",
    "json",
    "bytes",
    "body",
    "headers",
    "error",
    "kill",
    "shutdown",
    "connect",
    "execute",
    "query",
    "prepare",
    "commit",
    "merge",
];

/// A function of the workspace: `Type::name` for a method, `name` for a free
/// function (with its file's module name beside it), whether it is async, where it
/// is, and what it blocks on or calls outside any offloaded argument.
#[derive(Debug, Default)]
struct Function {
    name: String,
    module: String,
    is_async: bool,
    at: String,
    blocks_on: Vec<String>,
    calls: BTreeSet<Call>,
}

/// The qualifier of a call through a crate root or a relative path (`crate::x`,
/// `conclave_review::x`): re-exports may hide the defining module, so any free
/// function of that name may be meant.
const ANY_MODULE: &str = "*";

/// A call as written: `Path(qualifier, name)` for `name(…)` or `qualifier::name(…)`,
/// `Method(name, receiver)` for `receiver.name(…)`, with the receiver's name when it
/// is a plain variable or field (`baseline.compare()` is taken for `Baseline`'s
/// method when the workspace has a type of that name).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
enum Call {
    Path(Option<String>, String),
    Method(String, Option<String>),
}

#[test]
fn no_async_code_blocks_its_thread() {
    let functions = functions();
    let index = Index::new(&functions);
    let blocking = index.blocking();
    let mut found = Vec::new();
    for f in functions.iter().filter(|f| f.is_async) {
        for primitive in &f.blocks_on {
            found.push(format!("{} (`{}`) calls `{primitive}`", f.at, f.name));
        }
        for (callee, why) in f.calls.iter().filter_map(|c| index.blocker(&blocking, f, c)) {
            found.push(format!("{} (`{}`) calls `{}`, which blocks: {why}", f.at, f.name, functions[callee].name));
        }
    }
    assert!(
        found.is_empty(),
        "blocking calls on async threads (use tokio::fs or tokio::process, or hand the work to spawn_blocking):\n{}",
        found.join("\n")
    );
}

/// Where a called name may lead.
struct Index<'a> {
    functions: &'a [Function],
    /// Free functions by name.
    free: BTreeMap<&'a str, Vec<usize>>,
    /// Methods by `Type::name`, and by bare name.
    methods: BTreeMap<&'a str, Vec<usize>>,
    by_method_name: BTreeMap<&'a str, Vec<usize>>,
}

impl<'a> Index<'a> {
    fn new(functions: &'a [Function]) -> Index<'a> {
        let mut index =
            Index { functions, free: BTreeMap::new(), methods: BTreeMap::new(), by_method_name: BTreeMap::new() };
        for (i, f) in functions.iter().enumerate() {
            match f.name.rsplit_once("::") {
                Some((_, bare)) => {
                    index.methods.entry(&f.name).or_default().push(i);
                    index.by_method_name.entry(bare).or_default().push(i);
                }
                None => index.free.entry(&f.name).or_default().push(i),
            }
        }
        index
    }

    /// The functions a call from `from` may reach.
    fn targets(&self, from: &Function, call: &Call) -> Vec<usize> {
        match call {
            Call::Path(None, name) => {
                // Not imported, so a free function of the same file (or a closure).
                let all = self.free.get(name.as_str()).into_iter().flatten();
                all.copied().filter(|i| self.functions[*i].at_file() == from.at_file()).collect()
            }
            Call::Path(Some(qualifier), name) if qualifier == ANY_MODULE => {
                self.free.get(name.as_str()).cloned().unwrap_or_default()
            }
            Call::Path(Some(qualifier), name) => {
                let method = format!("{qualifier}::{name}");
                let mut found = self.methods.get(method.as_str()).cloned().unwrap_or_default();
                let free = self.free.get(name.as_str()).into_iter().flatten();
                found.extend(free.filter(|i| self.functions[**i].module == *qualifier));
                found
            }
            Call::Method(name, _) if FOREIGN_METHODS.contains(&name.as_str()) => Vec::new(),
            Call::Method(name, receiver) => {
                let typed = receiver.as_deref().map(|r| format!("{}::{name}", camel_case(r)));
                match typed.and_then(|t| self.methods.get(t.as_str())) {
                    Some(methods) => methods.clone(),
                    // Any method of that name: a trait method may reach any implementation.
                    None => self.by_method_name.get(name.as_str()).cloned().unwrap_or_default(),
                }
            }
        }
    }

    /// The synchronous functions that block, directly or through another, with why.
    fn blocking(&self) -> BTreeMap<usize, String> {
        let mut blocking = BTreeMap::new();
        for (i, f) in self.functions.iter().enumerate().filter(|(_, f)| !f.is_async) {
            if let Some(primitive) = f.blocks_on.first() {
                blocking.insert(i, format!("{} calls `{primitive}`", f.at));
            }
        }
        loop {
            let mut grew = false;
            for (i, f) in self.functions.iter().enumerate().filter(|(_, f)| !f.is_async) {
                if blocking.contains_key(&i) {
                    continue;
                }
                if let Some((callee, why)) = f.calls.iter().find_map(|c| self.blocker(&blocking, f, c)) {
                    let why = format!("{} calls `{}`; {why}", f.at, self.functions[callee].name);
                    blocking.insert(i, why);
                    grew = true;
                }
            }
            if !grew {
                return blocking;
            }
        }
    }

    /// A blocking function this call may reach, and why it blocks.
    fn blocker(&self, blocking: &BTreeMap<usize, String>, from: &Function, call: &Call) -> Option<(usize, String)> {
        self.targets(from, call).into_iter().find_map(|i| blocking.get(&i).map(|why| (i, why.clone())))
    }
}

/// `snake_case` as a type's name: `baseline` → `Baseline`, `run_store` → `RunStore`.
fn camel_case(name: &str) -> String {
    name.split('_')
        .filter(|part| !part.is_empty())
        .map(|part| {
            let mut chars = part.chars();
            chars.next().map(|c| c.to_uppercase().chain(chars).collect::<String>()).unwrap_or_default()
        })
        .collect()
}

impl Function {
    fn at_file(&self) -> &str {
        self.at.rsplit_once(':').map_or(&self.at, |(file, _)| file)
    }
}

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// Every function and `async` block of the checked crates.
fn functions() -> Vec<Function> {
    let mut parsed = Vec::new();
    for dir in CRATES {
        let mut files = Vec::new();
        collect(&root().join(dir), &mut files);
        for path in files {
            let text = std::fs::read_to_string(&path).expect("readable source");
            let file = syn::parse_file(&text).unwrap_or_else(|e| panic!("{} does not parse: {e}", path.display()));
            let relative = path.strip_prefix(root()).unwrap_or(&path).display().to_string();
            let module = match path.file_stem().and_then(|s| s.to_str()) {
                Some("mod" | "lib" | "main") => path.parent().and_then(|p| p.file_name()),
                _ => path.file_stem(),
            };
            let module = module.and_then(|m| m.to_str()).unwrap_or_default().to_string();
            parsed.push((relative, module, file));
        }
    }
    let mut offloading: BTreeSet<String> = OFFLOADING.iter().map(|s| s.to_string()).collect();
    for (_, _, file) in &parsed {
        let mut wrappers = Wrappers(&mut offloading);
        wrappers.visit_file(file);
    }
    let mut out = Vec::new();
    for (file, module, syntax) in parsed {
        let uses = uses(&syntax);
        let mut visitor = Items { file, module, uses, offloading: &offloading, owner: None, out: &mut out };
        visitor.visit_file(&syntax);
    }
    out
}

/// Finds the workspace's own offloading helpers: functions that hand one of their
/// parameters to `spawn_blocking` or `block_in_place`.
struct Wrappers<'a>(&'a mut BTreeSet<String>);

impl<'ast> Visit<'ast> for Wrappers<'_> {
    fn visit_item_fn(&mut self, item: &'ast syn::ItemFn) {
        let params: BTreeSet<String> = item
            .sig
            .inputs
            .iter()
            .filter_map(|input| match input {
                syn::FnArg::Typed(t) => match &*t.pat {
                    syn::Pat::Ident(i) => Some(i.ident.to_string()),
                    _ => None,
                },
                syn::FnArg::Receiver(_) => None,
            })
            .collect();
        let mut hands = HandsOver { params: &params, found: false };
        hands.visit_block(&item.block);
        if hands.found {
            self.0.insert(item.sig.ident.to_string());
        }
    }
}

/// Whether a body passes one of `params` to `spawn_blocking` or `block_in_place`.
struct HandsOver<'a> {
    params: &'a BTreeSet<String>,
    found: bool,
}

impl<'ast> Visit<'ast> for HandsOver<'_> {
    fn visit_expr_call(&mut self, call: &'ast syn::ExprCall) {
        if let syn::Expr::Path(p) = &*call.func
            && p.path.segments.last().is_some_and(|s| OFFLOADING.contains(&s.ident.to_string().as_str()))
            && let Some(syn::Expr::Path(arg)) = call.args.first()
            && arg.path.get_ident().is_some_and(|i| self.params.contains(&i.to_string()))
        {
            self.found = true;
        }
        syn::visit::visit_expr_call(self, call);
    }
}

fn collect(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("readable directory").flatten() {
        let path = entry.path();
        if path.is_dir() {
            // Test doubles and test modules run on test threads, not the server's.
            if !matches!(entry.file_name().to_str(), Some("testing" | "tests")) {
                collect(&path, out);
            }
        } else if path.extension().is_some_and(|e| e == "rs") && !path.ends_with("tests.rs") {
            out.push(path);
        }
    }
}

/// What each name brought in by a `use` stands for: `fs` → `std::fs`.
fn uses(file: &syn::File) -> BTreeMap<String, String> {
    fn walk(tree: &syn::UseTree, prefix: &str, out: &mut BTreeMap<String, String>) {
        let join = |name: &str| if prefix.is_empty() { name.to_string() } else { format!("{prefix}::{name}") };
        match tree {
            syn::UseTree::Path(p) => walk(&p.tree, &join(&p.ident.to_string()), out),
            syn::UseTree::Name(n) if n.ident == "self" => {
                if let Some(last) = prefix.rsplit("::").next() {
                    out.insert(last.to_string(), prefix.to_string());
                }
            }
            syn::UseTree::Name(n) => {
                out.insert(n.ident.to_string(), join(&n.ident.to_string()));
            }
            syn::UseTree::Rename(r) => {
                out.insert(r.rename.to_string(), join(&r.ident.to_string()));
            }
            syn::UseTree::Group(g) => g.items.iter().for_each(|t| walk(t, prefix, out)),
            syn::UseTree::Glob(_) => {}
        }
    }
    let mut out = BTreeMap::new();
    for item in &file.items {
        if let syn::Item::Use(u) = item {
            walk(&u.tree, "", &mut out);
        }
    }
    out
}

/// Finds the functions of one file.
struct Items<'a> {
    file: String,
    module: String,
    uses: BTreeMap<String, String>,
    offloading: &'a BTreeSet<String>,
    /// The type (or trait) whose `impl` (or definition) is being read.
    owner: Option<String>,
    out: &'a mut Vec<Function>,
}

impl Items<'_> {
    fn add(&mut self, sig: &syn::Signature, block: &syn::Block) {
        let mut body = Body::new(&self.uses, self.offloading, self.owner.clone());
        body.visit_block(block);
        let name = match &self.owner {
            Some(owner) => format!("{owner}::{}", sig.ident),
            None => sig.ident.to_string(),
        };
        for (line, inner) in std::mem::take(&mut body.asyncs) {
            let at = format!("{}:{line}", self.file);
            let name = format!("async block in {name}");
            self.out.push(Function { name, module: self.module.clone(), is_async: true, at, ..inner });
        }
        self.out.push(Function {
            name,
            module: self.module.clone(),
            is_async: sig.asyncness.is_some(),
            at: format!("{}:{}", self.file, sig.ident.span().start().line),
            blocks_on: body.blocks_on,
            calls: body.calls,
        });
    }
}

impl<'ast> Visit<'ast> for Items<'_> {
    fn visit_item_fn(&mut self, item: &'ast syn::ItemFn) {
        self.add(&item.sig, &item.block);
    }

    fn visit_impl_item_fn(&mut self, item: &'ast syn::ImplItemFn) {
        self.add(&item.sig, &item.block);
    }

    fn visit_trait_item_fn(&mut self, item: &'ast syn::TraitItemFn) {
        if let Some(block) = &item.default {
            self.add(&item.sig, block);
        }
    }

    fn visit_item_impl(&mut self, item: &'ast syn::ItemImpl) {
        let owner = match &*item.self_ty {
            syn::Type::Path(p) => p.path.segments.last().map(|s| s.ident.to_string()),
            _ => None,
        };
        let outer = std::mem::replace(&mut self.owner, owner);
        syn::visit::visit_item_impl(self, item);
        self.owner = outer;
    }

    fn visit_item_trait(&mut self, item: &'ast syn::ItemTrait) {
        let outer = self.owner.replace(item.ident.to_string());
        syn::visit::visit_item_trait(self, item);
        self.owner = outer;
    }

    fn visit_item_mod(&mut self, item: &'ast syn::ItemMod) {
        // `#[cfg(test)] mod tests { … }` runs on test threads.
        let is_test = item.attrs.iter().any(|a| a.path().is_ident("cfg") && list_text(a).contains("test"));
        if !is_test {
            syn::visit::visit_item_mod(self, item);
        }
    }
}

fn list_text(attr: &syn::Attribute) -> String {
    match &attr.meta {
        syn::Meta::List(list) => list.tokens.to_string(),
        _ => String::new(),
    }
}

/// What one body blocks on and calls, with its `async` blocks apart.
struct Body<'a> {
    uses: &'a BTreeMap<String, String>,
    offloading: &'a BTreeSet<String>,
    owner: Option<String>,
    blocks_on: Vec<String>,
    calls: BTreeSet<Call>,
    asyncs: Vec<(usize, Function)>,
}

impl<'a> Body<'a> {
    fn new(uses: &'a BTreeMap<String, String>, offloading: &'a BTreeSet<String>, owner: Option<String>) -> Body<'a> {
        Body { uses, offloading, owner, blocks_on: Vec::new(), calls: BTreeSet::new(), asyncs: Vec::new() }
    }

    /// The path written, with its first segment expanded through the file's `use`s.
    fn resolve(&self, path: &syn::Path) -> String {
        let segments: Vec<String> = path.segments.iter().map(|s| s.ident.to_string()).collect();
        let Some(first) = segments.first() else { return String::new() };
        let head = self.uses.get(first).cloned().unwrap_or_else(|| first.clone());
        std::iter::once(head).chain(segments[1..].iter().cloned()).collect::<Vec<_>>().join("::")
    }

    /// Whether a call of this function runs its arguments off the async threads.
    fn offloads(&self, func: &syn::Expr) -> bool {
        let syn::Expr::Path(p) = func else { return false };
        let last = p.path.segments.last().map(|s| s.ident.to_string()).unwrap_or_default();
        self.offloading.contains(&last) || self.resolve(&p.path) == "std::thread::spawn"
    }

    fn note_call(&mut self, func: &syn::Expr) {
        let syn::Expr::Path(p) = func else { return };
        let resolved = self.resolve(&p.path);
        let names: Vec<&str> = resolved.split("::").collect();
        let Some(last) = names.last().map(|s| s.to_string()) else { return };
        let qualifier = match names.len() {
            1 => None,
            n if names[n - 2] == "Self" => self.owner.clone(),
            n if matches!(names[n - 2], "crate" | "super" | "self") || names[n - 2].starts_with("conclave_") => {
                Some(ANY_MODULE.to_string())
            }
            n => Some(names[n - 2].to_string()),
        };
        self.calls.insert(Call::Path(qualifier, last));
    }
}

impl<'ast> Visit<'ast> for Body<'_> {
    fn visit_expr_call(&mut self, call: &'ast syn::ExprCall) {
        if self.offloads(&call.func) {
            return;
        }
        self.note_call(&call.func);
        syn::visit::visit_expr_call(self, call);
    }

    fn visit_expr_method_call(&mut self, call: &'ast syn::ExprMethodCall) {
        let name = call.method.to_string();
        if self.offloading.contains(&name) {
            return self.visit_expr(&call.receiver);
        }
        if BLOCKING_METHODS.contains(&name.as_str()) && !asks_metadata(&call.receiver, &name) {
            self.blocks_on.push(format!(".{name}()"));
        }
        let receiver = match &*call.receiver {
            syn::Expr::Path(p) => p.path.get_ident().map(ToString::to_string),
            syn::Expr::Field(f) => match &f.member {
                syn::Member::Named(ident) => Some(ident.to_string()),
                syn::Member::Unnamed(_) => None,
            },
            _ => None,
        };
        self.calls.insert(Call::Method(name, receiver));
        syn::visit::visit_expr_method_call(self, call);
    }

    fn visit_expr_await(&mut self, awaited: &'ast syn::ExprAwait) {
        // An awaited call is asynchronous whatever its name (`tokio::fs::metadata(…).await`).
        match &*awaited.base {
            syn::Expr::MethodCall(call) => {
                self.visit_expr(&call.receiver);
                call.args.iter().for_each(|a| self.visit_expr(a));
            }
            syn::Expr::Call(call) if self.offloads(&call.func) => {}
            syn::Expr::Call(call) => call.args.iter().for_each(|a| self.visit_expr(a)),
            other => self.visit_expr(other),
        }
    }

    fn visit_expr_path(&mut self, path: &'ast syn::ExprPath) {
        let full = self.resolve(&path.path);
        if BLOCKING_PATHS.iter().any(|b| full.starts_with(b) || full == b.trim_end_matches("::")) {
            self.blocks_on.push(full);
        }
    }

    fn visit_expr_async(&mut self, block: &'ast syn::ExprAsync) {
        let mut inner = Body::new(self.uses, self.offloading, self.owner.clone());
        inner.visit_block(&block.block);
        self.asyncs.append(&mut inner.asyncs);
        let f = Function { is_async: true, blocks_on: inner.blocks_on, calls: inner.calls, ..Function::default() };
        self.asyncs.push((block.span().start().line, f));
    }

    fn visit_item_fn(&mut self, _: &'ast syn::ItemFn) {
        // A function declared inside a body runs only where it is called; it is not
        // part of the body's own work.
    }
}
