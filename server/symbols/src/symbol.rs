//! The index's data: a definition, a reference, one file's symbols, and why a file
//! was skipped.

use serde::{Deserialize, Serialize};
use std::sync::Arc;

/// A language the index parses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Lang {
    Rust,
    Python,
    Go,
    TypeScript,
    Tsx,
    JavaScript,
}

impl Lang {
    /// Every language, in a fixed order.
    pub const ALL: [Lang; 6] = [Lang::Rust, Lang::Python, Lang::Go, Lang::TypeScript, Lang::Tsx, Lang::JavaScript];

    /// The language's name as shown to people.
    pub fn name(self) -> &'static str {
        match self {
            Lang::Rust => "rust",
            Lang::Python => "python",
            Lang::Go => "go",
            Lang::TypeScript => "typescript",
            Lang::Tsx => "tsx",
            Lang::JavaScript => "javascript",
        }
    }
}

/// What a definition defines.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SymbolKind {
    /// A free function (or a nested one).
    Function,
    /// A function of an impl, trait, class or interface, or a Go method.
    Method,
    /// A struct, enum, union, class, interface, trait or type alias.
    Type,
    /// A constant, static or module-level variable.
    Constant,
    /// A module or namespace.
    Module,
    /// A macro.
    Macro,
}

impl SymbolKind {
    /// The kind's name as shown to people.
    pub fn name(self) -> &'static str {
        match self {
            SymbolKind::Function => "function",
            SymbolKind::Method => "method",
            SymbolKind::Type => "type",
            SymbolKind::Constant => "constant",
            SymbolKind::Module => "module",
            SymbolKind::Macro => "macro",
        }
    }
}

/// Where a symbol is defined.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Definition {
    pub name: Arc<str>,
    pub kind: SymbolKind,
    /// Relative to the repository root, `/`-separated.
    pub file: Arc<str>,
    /// 1-based, inclusive.
    pub start_line: u32,
    /// 1-based, inclusive.
    pub end_line: u32,
    /// The definition's first line, trimmed and capped.
    pub signature: Arc<str>,
    /// The impl, trait, class, module or function it sits in.
    pub container: Option<Arc<str>>,
}

/// Where a symbol is used.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Reference {
    pub name: Arc<str>,
    /// Relative to the repository root, `/`-separated.
    pub file: Arc<str>,
    /// 1-based.
    pub line: u32,
    /// The line's text, trimmed and capped.
    pub text: Arc<str>,
    /// The function (or method) the reference sits in.
    pub enclosing: Option<Arc<str>>,
    /// A call site; otherwise a type use, an import or a re-export.
    pub call: bool,
    /// The type or module a Rust path names before the symbol (`Site` in
    /// `Site::new(…)` or `crate::site::Site::new(…)`, `Self` resolved to its impl's
    /// type); `None` for a bare name, a method call on a value (its type unknown),
    /// `self::`, `super::` and `crate::` paths, and the other languages.
    #[serde(default)]
    pub qualifier: Option<Arc<str>>,
}

/// One file's symbols.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileSymbols {
    /// In source order.
    pub definitions: Vec<Definition>,
    /// In source order.
    pub references: Vec<Reference>,
    /// Whether the grammar met errors; what parsed is still here.
    #[serde(default)]
    pub parse_errors: bool,
}

/// Why a file gave no symbols.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
#[serde(rename_all = "snake_case")]
pub enum Skip {
    #[error("a binary file")]
    Binary,
    #[error("not valid UTF-8")]
    InvalidUtf8,
    #[error("no grammar for `{0}` files")]
    UnknownLanguage(String),
    #[error("{bytes} bytes, over the cap of {cap}")]
    TooLarge { bytes: u64, cap: u64 },
    #[error("the grammar could not parse it")]
    ParseError,
    #[error("the {0} grammar's query does not compile: {1}")]
    Query(String, String),
    #[error("cannot be read: {0}")]
    Unreadable(String),
}

impl Skip {
    /// A short key for counting skips by reason.
    pub fn reason(&self) -> &'static str {
        match self {
            Skip::Binary => "binary",
            Skip::InvalidUtf8 => "invalid_utf8",
            Skip::UnknownLanguage(_) => "unknown_language",
            Skip::TooLarge { .. } => "too_large",
            Skip::ParseError => "parse_error",
            Skip::Query(..) => "query_error",
            Skip::Unreadable(_) => "unreadable",
        }
    }
}
