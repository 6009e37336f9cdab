//! The grammars: which file is in which language, each language's tags query (the
//! grammar crate's own `TAGS_QUERY` plus the captures it lacks: scoped calls,
//! constants, type uses, imports and re-exports), and the node kinds that scope a
//! symbol (functions, classes, modules).

use std::collections::HashSet;
use std::sync::OnceLock;
use tree_sitter::{Language, Query};

use crate::symbol::{Lang, SymbolKind};

/// The language of a path, by its extension.
pub fn language_of(path: &str) -> Option<Lang> {
    let name = path.rsplit('/').next().unwrap_or(path);
    let (_, extension) = name.rsplit_once('.')?;
    Some(match extension {
        "rs" => Lang::Rust,
        "py" | "pyi" => Lang::Python,
        "go" => Lang::Go,
        "ts" | "mts" | "cts" => Lang::TypeScript,
        "tsx" => Lang::Tsx,
        "js" | "mjs" | "cjs" | "jsx" => Lang::JavaScript,
        _ => return None,
    })
}

/// What a capture of a query stands for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Role {
    /// The symbol's name.
    Name,
    /// The whole definition, of this kind.
    Definition(SymbolKind),
    /// A use; `true` for a call.
    Reference(bool),
    /// Anything else (a doc comment).
    Other,
}

/// What a node scopes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ScopeKind {
    Function,
    Class,
    Module,
}

/// One language's grammar, query and scoping node kinds.
#[derive(Debug)]
pub(crate) struct Grammar {
    pub language: Language,
    pub query: Query,
    /// The role of each capture of `query`, by capture index.
    pub roles: Vec<Role>,
    functions: HashSet<u16>,
    classes: HashSet<u16>,
    modules: HashSet<u16>,
    /// Rust's `token_tree` (a macro's arguments), 0 in the other grammars.
    pub token_tree: u16,
}

impl Grammar {
    /// What a node of this kind scopes, if anything.
    pub fn scope(&self, kind_id: u16) -> Option<ScopeKind> {
        if self.functions.contains(&kind_id) {
            Some(ScopeKind::Function)
        } else if self.classes.contains(&kind_id) {
            Some(ScopeKind::Class)
        } else if self.modules.contains(&kind_id) {
            Some(ScopeKind::Module)
        } else {
            None
        }
    }
}

/// The grammar of `lang`, its query compiled once per process.
pub(crate) fn grammar(lang: Lang) -> Result<&'static Grammar, String> {
    static GRAMMARS: [OnceLock<Result<Grammar, String>>; 6] =
        [OnceLock::new(), OnceLock::new(), OnceLock::new(), OnceLock::new(), OnceLock::new(), OnceLock::new()];
    let slot = &GRAMMARS[Lang::ALL.iter().position(|l| *l == lang).unwrap_or(0)];
    slot.get_or_init(|| compile(lang)).as_ref().map_err(Clone::clone)
}

/// Every query source, for the cache's format key: a changed query changes what a
/// file's entry holds.
pub(crate) fn query_sources() -> String {
    Lang::ALL.iter().map(|lang| query_source(*lang)).collect::<Vec<_>>().join("\n")
}

fn compile(lang: Lang) -> Result<Grammar, String> {
    let language: Language = match lang {
        Lang::Rust => tree_sitter_rust::LANGUAGE.into(),
        Lang::Python => tree_sitter_python::LANGUAGE.into(),
        Lang::Go => tree_sitter_go::LANGUAGE.into(),
        Lang::TypeScript => tree_sitter_typescript::LANGUAGE_TYPESCRIPT.into(),
        Lang::Tsx => tree_sitter_typescript::LANGUAGE_TSX.into(),
        Lang::JavaScript => tree_sitter_javascript::LANGUAGE.into(),
    };
    let query = Query::new(&language, &query_source(lang)).map_err(|e| e.to_string())?;
    let roles = query.capture_names().iter().map(|name| role(name)).collect();
    let (functions, classes, modules) = scopes(lang);
    let ids = |kinds: &[&str]| -> HashSet<u16> {
        kinds.iter().map(|k| language.id_for_node_kind(k, true)).filter(|id| *id != 0).collect()
    };
    let token_tree = language.id_for_node_kind("token_tree", true);
    Ok(Grammar {
        functions: ids(functions),
        classes: ids(classes),
        modules: ids(modules),
        token_tree,
        language,
        query,
        roles,
    })
}

fn role(capture: &str) -> Role {
    if capture == "name" {
        return Role::Name;
    }
    if let Some(kind) = capture.strip_prefix("definition.") {
        return Role::Definition(match kind {
            "method" => SymbolKind::Method,
            "class" | "interface" | "type" | "struct" | "enum" => SymbolKind::Type,
            "constant" => SymbolKind::Constant,
            "module" => SymbolKind::Module,
            "macro" => SymbolKind::Macro,
            _ => SymbolKind::Function,
        });
    }
    match capture.strip_prefix("reference.") {
        Some(kind) => Role::Reference(kind == "call"),
        None => Role::Other,
    }
}

type Kinds = &'static [&'static str];

/// The node kinds that are functions, classes (their functions are methods) and
/// modules in `lang`.
fn scopes(lang: Lang) -> (Kinds, Kinds, Kinds) {
    const JS_FUNCTIONS: Kinds = &[
        "function_declaration",
        "function_expression",
        "generator_function_declaration",
        "generator_function",
        "arrow_function",
        "method_definition",
    ];
    match lang {
        Lang::Rust => (&["function_item"], &["impl_item", "trait_item"], &["mod_item"]),
        Lang::Python => (&["function_definition"], &["class_definition"], &[]),
        Lang::Go => (&["function_declaration", "method_declaration"], &[], &[]),
        Lang::JavaScript => (JS_FUNCTIONS, &["class_declaration", "class"], &[]),
        Lang::TypeScript | Lang::Tsx => (
            JS_FUNCTIONS,
            &["class_declaration", "class", "abstract_class_declaration", "interface_declaration"],
            &["internal_module", "module"],
        ),
    }
}

fn query_source(lang: Lang) -> String {
    match lang {
        Lang::Rust => [tree_sitter_rust::TAGS_QUERY, RUST_EXTRA].concat(),
        Lang::Python => [tree_sitter_python::TAGS_QUERY, PYTHON_EXTRA].concat(),
        Lang::Go => [tree_sitter_go::TAGS_QUERY, GO_EXTRA].concat(),
        Lang::JavaScript => [tree_sitter_javascript::TAGS_QUERY, JS_EXTRA].concat(),
        // The TypeScript grammar extends JavaScript's, and so do its tags.
        Lang::TypeScript | Lang::Tsx => {
            [tree_sitter_javascript::TAGS_QUERY, tree_sitter_typescript::TAGS_QUERY, JS_EXTRA, TS_EXTRA].concat()
        }
    }
}

const RUST_EXTRA: &str = r#"
(call_expression function: (scoped_identifier name: (identifier) @name)) @reference.call
(call_expression function: (generic_function function: (identifier) @name)) @reference.call
(call_expression function: (generic_function function: (scoped_identifier name: (identifier) @name))) @reference.call
(call_expression function: (generic_function function: (field_expression field: (field_identifier) @name))) @reference.call
(const_item name: (identifier) @name) @definition.constant
(static_item name: (identifier) @name) @definition.constant
(type_identifier) @name @reference.type
(use_declaration argument: (scoped_identifier name: (identifier) @name)) @reference.use
(use_declaration argument: (identifier) @name) @reference.use
(use_list (identifier) @name) @reference.use
(use_list (scoped_identifier name: (identifier) @name)) @reference.use
(use_as_clause path: (scoped_identifier name: (identifier) @name)) @reference.use
(use_as_clause path: (identifier) @name) @reference.use
(arguments (identifier) @name) @reference.use
(arguments (scoped_identifier name: (identifier) @name)) @reference.use
"#;

const PYTHON_EXTRA: &str = r#"
(import_from_statement name: (dotted_name (identifier) @name .)) @reference.use
(import_from_statement name: (aliased_import name: (dotted_name (identifier) @name .))) @reference.use
(decorator (identifier) @name) @reference.use
(type (identifier) @name) @reference.type
(class_definition superclasses: (argument_list (identifier) @name)) @reference.type
(argument_list (identifier) @name) @reference.use
"#;

const GO_EXTRA: &str = r#"
(type_alias name: (type_identifier) @name) @definition.type
(source_file (const_declaration (const_spec name: (identifier) @name) @definition.constant))
(source_file (var_declaration (var_spec name: (identifier) @name) @definition.constant))
(argument_list (identifier) @name) @reference.use
(argument_list (selector_expression field: (field_identifier) @name)) @reference.use
"#;

const JS_EXTRA: &str = r#"
(import_specifier name: (identifier) @name) @reference.use
(export_specifier name: (identifier) @name) @reference.use
(program (lexical_declaration (variable_declarator name: (identifier) @name value: [(number) (string) (template_string) (object) (array) (true) (false) (null) (new_expression) (call_expression) (binary_expression)]) @definition.constant))
(program (export_statement (lexical_declaration (variable_declarator name: (identifier) @name value: [(number) (string) (template_string) (object) (array) (true) (false) (null) (new_expression) (call_expression) (binary_expression)]) @definition.constant)))
(program (export_statement declaration: (lexical_declaration (variable_declarator name: (identifier) @name value: [(arrow_function) (function_expression)]) @definition.function)))
(arguments (identifier) @name) @reference.use
(method_definition name: (property_identifier) @name (#eq? @name "constructor")) @definition.method
"#;

const TS_EXTRA: &str = r#"
(type_alias_declaration name: (type_identifier) @name) @definition.type
(enum_declaration name: (identifier) @name) @definition.type
(type_identifier) @name @reference.type
"#;
