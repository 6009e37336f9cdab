//! The import graph of a crate's source files, for tidy's check that no two files
//! import each other: file A imports file B when A refers, in a `use` or in a path in
//! its code (macro bodies included), to an item *defined* in B. `crate::`, `self::`,
//! `super::`, child modules, `use` renames and globs are resolved, and re-exports are
//! followed to the file that defines the item; a `mod x;` declaration and a `pub use`
//! that only passes an item on are not imports.

use super::words::{Word, is_test_code, macro_words};
use petgraph::graph::{DiGraph, NodeIndex};
use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};
use std::path::{Path, PathBuf};
use syn::visit::Visit;

/// How deep re-exports and globs are followed before giving up (a loop of globs).
const MAX_DEPTH: usize = 24;

/// One edge of the graph: the items through which a file imports another.
pub type Edges = BTreeMap<(PathBuf, PathBuf), BTreeSet<String>>;

/// The imports between the files of every compilation unit (library, binaries,
/// integration tests, benchmarks, build script) of the crate in `dir`.
pub fn crate_imports(dir: &Path) -> Result<Edges, String> {
    let mut edges = Edges::new();
    for root in unit_roots(dir) {
        let mut unit = Unit::default();
        unit.load(&root, None, None, false)?;
        unit.add_edges(&mut edges);
    }
    Ok(edges)
}

/// The files of a crate's library and binary (the module trees of `src/lib.rs` and
/// `src/main.rs`), without the modules only tests compile (`#[cfg(test)]`,
/// `#[cfg(feature = "testing")]`).
pub fn production_files(dir: &Path) -> Result<Vec<PathBuf>, String> {
    let mut files = BTreeSet::new();
    for root in ["src/lib.rs", "src/main.rs"].iter().map(|r| dir.join(r)).filter(|p| p.is_file()) {
        let mut unit = Unit::default();
        unit.load(&root, None, None, false)?;
        files.extend(unit.modules.into_iter().filter(|m| !m.test_only).map(|m| m.file));
    }
    Ok(files.into_iter().collect())
}

/// The cycles of `edges`: for each file that lies on one, the shortest circle
/// through it, each circle given once, starting at its smallest file.
pub fn cycles(edges: &Edges) -> Vec<Vec<PathBuf>> {
    let mut graph = DiGraph::<&Path, ()>::new();
    let mut nodes: BTreeMap<&Path, NodeIndex> = BTreeMap::new();
    for (from, to) in edges.keys() {
        let [from, to] = [from, to].map(|p| *nodes.entry(p.as_path()).or_insert_with(|| graph.add_node(p.as_path())));
        graph.add_edge(from, to, ());
    }
    let mut found = BTreeSet::new();
    for component in petgraph::algo::tarjan_scc(&graph) {
        if component.len() < 2 {
            continue;
        }
        let inside: BTreeSet<NodeIndex> = component.iter().copied().collect();
        for &start in &inside {
            if let Some(circle) = shortest_circle(&graph, &inside, start) {
                let mut circle: Vec<PathBuf> = circle.into_iter().map(|n| graph[n].to_path_buf()).collect();
                let smallest = circle.iter().enumerate().min_by_key(|(_, p)| *p).map_or(0, |(i, _)| i);
                circle.rotate_left(smallest);
                found.insert(circle);
            }
        }
    }
    found.into_iter().collect()
}

/// The shortest path from `start` back to itself within `inside` (breadth first),
/// without repeating `start` at the end.
fn shortest_circle(
    graph: &DiGraph<&Path, ()>,
    inside: &BTreeSet<NodeIndex>,
    start: NodeIndex,
) -> Option<Vec<NodeIndex>> {
    let mut came_from: HashMap<NodeIndex, NodeIndex> = HashMap::new();
    let mut queue = VecDeque::from([start]);
    while let Some(at) = queue.pop_front() {
        let mut next_nodes: Vec<NodeIndex> = graph.neighbors(at).filter(|n| inside.contains(n)).collect();
        next_nodes.sort();
        for next in next_nodes {
            if next == start {
                let mut path = vec![at];
                while let Some(&before) = came_from.get(&path[path.len() - 1]) {
                    path.push(before);
                }
                path.reverse();
                return Some(path);
            }
            if next != start && !came_from.contains_key(&next) {
                came_from.insert(next, at);
                queue.push_back(next);
            }
        }
    }
    None
}

/// The root files of a crate's compilation units.
fn unit_roots(dir: &Path) -> Vec<PathBuf> {
    let mut roots: Vec<PathBuf> =
        ["src/lib.rs", "src/main.rs", "build.rs"].iter().map(|r| dir.join(r)).filter(|p| p.is_file()).collect();
    for folder in ["src/bin", "tests", "benches", "examples"] {
        let Ok(entries) = std::fs::read_dir(dir.join(folder)) else { continue };
        let mut found: Vec<PathBuf> = entries
            .flatten()
            .map(|e| e.path())
            .map(|p| if p.is_dir() { p.join("main.rs") } else { p })
            .filter(|p| p.is_file() && p.extension().is_some_and(|e| e == "rs"))
            .collect();
        found.sort();
        roots.extend(found);
    }
    roots
}

/// A module of one compilation unit.
#[derive(Debug, Default)]
struct Module {
    /// The file its items are written in.
    file: PathBuf,
    /// The enclosing module (`None` for the root).
    parent: Option<usize>,
    /// Whether only tests compile it (it or an enclosing module is `#[cfg(test)]`).
    test_only: bool,
    /// Child modules by name.
    children: HashMap<String, usize>,
    /// Names of the other items it defines.
    items: BTreeSet<String>,
    /// `use` names: the name in scope and the path it stands for.
    imports: HashMap<String, Vec<String>>,
    /// `use path::*` paths.
    globs: Vec<Vec<String>>,
    /// Paths its code refers to (including private `use` paths).
    references: Vec<Vec<String>>,
}

/// What a path names.
#[derive(Debug, Clone, PartialEq)]
enum Named {
    Module(usize),
    /// An item, with the file defining it.
    Item(String, PathBuf),
}

/// The modules of one compilation unit.
#[derive(Debug, Default)]
struct Unit {
    modules: Vec<Module>,
    /// The `(module, name)` lookups under way: a glob whose path starts with a name
    /// only a glob could supply (another crate's) would otherwise look itself up
    /// through every glob of the module again, exponentially in the globs.
    looking: std::cell::RefCell<BTreeSet<(usize, String)>>,
}

impl Unit {
    /// Reads the module in `file` (and its children), as a child of `parent`.
    fn load(
        &mut self,
        file: &Path,
        parent: Option<usize>,
        name: Option<&str>,
        test_only: bool,
    ) -> Result<usize, String> {
        let file = &lexically_normal(file);
        let text = std::fs::read_to_string(file).map_err(|e| format!("{}: {e}", file.display()))?;
        let parsed = syn::parse_file(&text).map_err(|e| format!("{} does not parse: {e}", file.display()))?;
        let is_mod_rs = parent.is_none() || file.file_name().is_some_and(|n| n == "mod.rs");
        let base = file.parent().unwrap_or(Path::new(".")).to_path_buf();
        let children_dir = if is_mod_rs { base.clone() } else { base.join(file.file_stem().unwrap_or_default()) };
        let index = self.new_module(file, parent, name, test_only);
        self.read_items(index, &parsed.items, &children_dir, &base)?;
        Ok(index)
    }

    fn new_module(&mut self, file: &Path, parent: Option<usize>, name: Option<&str>, test_only: bool) -> usize {
        let index = self.modules.len();
        self.modules.push(Module { file: file.to_path_buf(), parent, test_only, ..Module::default() });
        if let (Some(parent), Some(name)) = (parent, name) {
            self.modules[parent].children.insert(name.to_string(), index);
        }
        index
    }

    /// Records `items` as the contents of module `index`; `dir` is where its child
    /// modules' files are, `base` the directory of the file it is written in.
    fn read_items(&mut self, index: usize, items: &[syn::Item], dir: &Path, base: &Path) -> Result<(), String> {
        for item in items {
            match item {
                syn::Item::Mod(module) => self.read_module(index, module, dir, base)?,
                syn::Item::Use(used) => {
                    let private = matches!(used.vis, syn::Visibility::Inherited);
                    self.read_use(index, &used.tree, Vec::new(), private);
                }
                other => {
                    if let Some(name) = item_name(other) {
                        self.modules[index].items.insert(name);
                    }
                    let mut paths = PathCollector::default();
                    paths.visit_item(other);
                    for (tree, private) in paths.uses {
                        self.read_use(index, &tree, Vec::new(), private);
                    }
                    self.modules[index].references.extend(paths.paths);
                }
            }
        }
        Ok(())
    }

    fn read_module(&mut self, parent: usize, module: &syn::ItemMod, dir: &Path, base: &Path) -> Result<(), String> {
        let name = module.ident.to_string();
        let path_attribute = module.attrs.iter().find(|a| a.path().is_ident("path")).and_then(|a| match &a.meta {
            syn::Meta::NameValue(syn::MetaNameValue {
                value: syn::Expr::Lit(syn::ExprLit { lit: syn::Lit::Str(s), .. }),
                ..
            }) => Some(s.value()),
            _ => None,
        });
        let mut collector = PathCollector::default();
        for attribute in &module.attrs {
            collector.visit_attribute(attribute);
        }
        self.modules[parent].references.extend(collector.paths);
        let test_only = self.modules[parent].test_only || is_test_code(&module.attrs);
        match &module.content {
            Some((_, items)) => {
                let file = self.modules[parent].file.clone();
                let index = self.new_module(&file, Some(parent), Some(&name), test_only);
                self.read_items(index, items, &dir.join(&name), base)
            }
            None => {
                let file = match path_attribute {
                    Some(relative) => base.join(relative),
                    None if dir.join(format!("{name}.rs")).is_file() => dir.join(format!("{name}.rs")),
                    None => dir.join(&name).join("mod.rs"),
                };
                self.load(&file, Some(parent), Some(&name), test_only).map(|_| ())
            }
        }
    }

    /// Records a `use` tree under `prefix`: each name it brings into scope, each
    /// glob, and (for a private `use`) each path as a reference.
    fn read_use(&mut self, index: usize, tree: &syn::UseTree, mut prefix: Vec<String>, private: bool) {
        let module = &mut self.modules[index];
        let mut bring = |name: Option<String>, path: Vec<String>| {
            if private {
                module.references.push(path.clone());
            }
            if let Some(name) = name.filter(|n| n != "_") {
                module.imports.insert(name, path);
            }
        };
        match tree {
            syn::UseTree::Path(step) => {
                prefix.push(step.ident.to_string());
                self.read_use(index, &step.tree, prefix, private);
            }
            syn::UseTree::Name(leaf) if leaf.ident == "self" => {
                bring(prefix.last().cloned(), prefix);
            }
            syn::UseTree::Name(leaf) => {
                prefix.push(leaf.ident.to_string());
                bring(Some(leaf.ident.to_string()), prefix);
            }
            syn::UseTree::Rename(leaf) => {
                if leaf.ident != "self" {
                    prefix.push(leaf.ident.to_string());
                }
                bring(Some(leaf.rename.to_string()), prefix);
            }
            syn::UseTree::Glob(_) => {
                if private {
                    module.references.push(prefix.clone());
                }
                module.globs.push(prefix);
            }
            syn::UseTree::Group(group) => {
                for tree in &group.items {
                    self.read_use(index, tree, prefix.clone(), private);
                }
            }
        }
    }

    /// Adds this unit's imports between different files to `edges`.
    fn add_edges(&self, edges: &mut Edges) {
        for (index, module) in self.modules.iter().enumerate() {
            for path in &module.references {
                if let Some(Named::Item(name, file)) = self.resolve(index, path, 0)
                    && file != module.file
                {
                    edges.entry((module.file.clone(), file)).or_default().insert(name);
                }
            }
        }
    }

    /// What `path`, written in module `index`, names; `None` for what lies outside
    /// the unit (other crates, the prelude, locals, associated items).
    fn resolve(&self, index: usize, path: &[String], depth: usize) -> Option<Named> {
        let (first, rest) = path.split_first()?;
        if depth > MAX_DEPTH {
            return None;
        }
        let mut at = match first.as_str() {
            "crate" => Named::Module(0),
            "self" => Named::Module(index),
            "super" => Named::Module(self.modules[index].parent?),
            "Self" | "" => return None,
            name => self.lookup(index, name, depth)?,
        };
        for segment in rest {
            let Named::Module(module) = at else { break };
            at = match segment.as_str() {
                "super" => Named::Module(self.modules[module].parent?),
                "self" => Named::Module(module),
                name => self.lookup(module, name, depth)?,
            };
        }
        Some(at)
    }

    /// What `name` means in module `index`: a child module, an item, a `use` name, or
    /// a name from one of its globs.
    fn lookup(&self, index: usize, name: &str, depth: usize) -> Option<Named> {
        let module = &self.modules[index];
        if let Some(&child) = module.children.get(name) {
            return Some(Named::Module(child));
        }
        if module.items.contains(name) {
            return Some(Named::Item(name.to_string(), module.file.clone()));
        }
        if let Some(path) = module.imports.get(name) {
            return self.resolve(index, path, depth + 1);
        }
        if !self.looking.borrow_mut().insert((index, name.to_string())) {
            return None;
        }
        let found = module.globs.iter().find_map(|glob| match self.resolve(index, glob, depth + 1)? {
            Named::Module(source) if source != index => self.lookup(source, name, depth + 1),
            _ => None,
        });
        self.looking.borrow_mut().remove(&(index, name.to_string()));
        found
    }
}

/// `path` without `.` and `..` components, so that a file reached through
/// `#[path = "../x.rs"]` is the same file as when reached directly.
fn lexically_normal(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            std::path::Component::CurDir => {}
            std::path::Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

/// The name an item defines in its module's namespace, if any.
fn item_name(item: &syn::Item) -> Option<String> {
    let ident = match item {
        syn::Item::Const(i) => &i.ident,
        syn::Item::Enum(i) => &i.ident,
        syn::Item::Fn(i) => &i.sig.ident,
        syn::Item::Static(i) => &i.ident,
        syn::Item::Struct(i) => &i.ident,
        syn::Item::Trait(i) => &i.ident,
        syn::Item::TraitAlias(i) => &i.ident,
        syn::Item::Type(i) => &i.ident,
        syn::Item::Union(i) => &i.ident,
        syn::Item::Macro(i) => i.ident.as_ref()?,
        _ => return None,
    };
    Some(ident.to_string())
}

/// Collects the paths an item's code refers to, the `use` trees inside its blocks,
/// and the paths written inside macro invocations (`a::b` or longer, since a single
/// word in a macro may be anything).
#[derive(Default)]
struct PathCollector {
    paths: Vec<Vec<String>>,
    uses: Vec<(syn::UseTree, bool)>,
}

impl<'a> Visit<'a> for PathCollector {
    fn visit_path(&mut self, path: &'a syn::Path) {
        if path.leading_colon.is_none() {
            self.paths.push(path.segments.iter().map(|s| s.ident.to_string()).collect());
        }
        syn::visit::visit_path(self, path);
    }

    fn visit_item_use(&mut self, used: &'a syn::ItemUse) {
        self.uses.push((used.tree.clone(), true));
    }

    fn visit_macro(&mut self, mac: &'a syn::Macro) {
        syn::visit::visit_macro(self, mac);
        for (_, word) in macro_words(mac.tokens.clone()) {
            if let Word::Path(path) = word {
                self.paths.push(path);
            }
        }
    }
}
