//! Conclave's symbol index: the definitions (functions, methods, types, constants)
//! and references (calls, type uses, imports) of a repository's Rust, Python, Go,
//! TypeScript and JavaScript files, parsed with tree-sitter.
//!
//! `symbol.rs` holds the data (what a definition, a reference and a skipped file
//! are); `lang.rs` the grammars, their tags queries and the node kinds that scope a
//! symbol; `parse.rs` one file's symbols ([`parse_source`]); `cache.rs` the cache
//! of parsed files by git blob id; `record.rs` each repository's record of its files'
//! stats, blob ids and packed symbols (a file whose stat matches is not reopened); `index.rs` the index of a repository
//! ([`Index::build`]) over exactly the files the review tools may read
//! (`conclave_sandbox::paths`), with its caps and its [`IndexReport`]; `rank.rs`
//! orders answers by nearness to a file.
//!
//! **Invariant:** bad input (binary, invalid UTF-8, grammar errors, a corrupt cache
//! entry) is skipped and counted, never a failure; only a root that cannot be opened
//! fails a build.

mod cache;
mod index;
mod lang;
mod parse;
mod rank;
mod record;
mod symbol;

pub use cache::{CACHE_FORMAT, blob_id, default_cache_dir};
pub use index::{Index, IndexError, IndexOptions, IndexReport, LeftOut};
pub use lang::language_of;
pub use parse::parse_source;
pub use symbol::{Definition, FileSymbols, Lang, Reference, Skip, SymbolKind};
