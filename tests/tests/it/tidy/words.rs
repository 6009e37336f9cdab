//! The words a source file's code holds, for tidy's checks of knowledge in the wrong
//! crate: identifiers, string literals (those inside macros and attributes too) and
//! paths, each with its line. Comments and doc comments are not code and are left
//! out, and so is test code (`#[cfg(test)]` and `#[cfg(feature = "testing")]` items).

use proc_macro2::{TokenStream, TokenTree};
use std::path::Path;
use syn::visit::Visit;

/// One word of code.
#[derive(Debug, Clone, PartialEq)]
pub enum Word {
    /// An identifier.
    Ident(String),
    /// The value of a string literal.
    Str(String),
    /// A path of two or more segments (`LowerTarget::Ollama`).
    Path(Vec<String>),
}

/// The code words of `file` with their lines, test code left out.
pub fn code_words(file: &Path) -> Result<Vec<(usize, Word)>, String> {
    let text = std::fs::read_to_string(file).map_err(|e| format!("{}: {e}", file.display()))?;
    let parsed = syn::parse_file(&text).map_err(|e| format!("{} does not parse: {e}", file.display()))?;
    let mut words = Words::default();
    for item in &parsed.items {
        words.visit_item(item);
    }
    Ok(words.found)
}

/// The words inside a macro's tokens, with their lines.
pub fn macro_words(tokens: TokenStream) -> Vec<(usize, Word)> {
    let mut words = Words::default();
    words.tokens(tokens);
    words.found
}

#[derive(Default)]
struct Words {
    found: Vec<(usize, Word)>,
}

/// Whether `attributes` make an item test code.
pub fn is_test_code(attributes: &[syn::Attribute]) -> bool {
    attributes.iter().any(|a| {
        a.path().is_ident("cfg")
            && a.meta.require_list().is_ok_and(|list| {
                let cfg = list.tokens.to_string().replace(' ', "");
                cfg == "test" || cfg == "feature=\"testing\""
            })
    })
}

fn item_attributes(item: &syn::Item) -> &[syn::Attribute] {
    match item {
        syn::Item::Const(i) => &i.attrs,
        syn::Item::Enum(i) => &i.attrs,
        syn::Item::Fn(i) => &i.attrs,
        syn::Item::Impl(i) => &i.attrs,
        syn::Item::Macro(i) => &i.attrs,
        syn::Item::Mod(i) => &i.attrs,
        syn::Item::Static(i) => &i.attrs,
        syn::Item::Struct(i) => &i.attrs,
        syn::Item::Trait(i) => &i.attrs,
        syn::Item::Type(i) => &i.attrs,
        syn::Item::Use(i) => &i.attrs,
        _ => &[],
    }
}

impl<'a> Visit<'a> for Words {
    fn visit_item(&mut self, item: &'a syn::Item) {
        if !is_test_code(item_attributes(item)) {
            syn::visit::visit_item(self, item);
        }
    }

    fn visit_impl_item_fn(&mut self, item: &'a syn::ImplItemFn) {
        if !is_test_code(&item.attrs) {
            syn::visit::visit_impl_item_fn(self, item);
        }
    }

    /// Doc comments are not code; other attributes are (an error's message in
    /// `#[error("...")]`).
    fn visit_attribute(&mut self, attribute: &'a syn::Attribute) {
        match &attribute.meta {
            syn::Meta::NameValue(_) if attribute.path().is_ident("doc") => {}
            syn::Meta::List(list) => self.tokens(list.tokens.clone()),
            syn::Meta::NameValue(pair) => self.visit_expr(&pair.value),
            syn::Meta::Path(_) => {}
        }
    }

    fn visit_ident(&mut self, ident: &'a proc_macro2::Ident) {
        self.found.push((ident.span().start().line, Word::Ident(ident.to_string())));
    }

    fn visit_lit_str(&mut self, literal: &'a syn::LitStr) {
        self.found.push((literal.span().start().line, Word::Str(literal.value())));
    }

    fn visit_path(&mut self, path: &'a syn::Path) {
        if path.segments.len() > 1 {
            let line = path.segments.first().map_or(0, |s| s.ident.span().start().line);
            self.found.push((line, Word::Path(path.segments.iter().map(|s| s.ident.to_string()).collect())));
        }
        syn::visit::visit_path(self, path);
    }

    fn visit_macro(&mut self, mac: &'a syn::Macro) {
        syn::visit::visit_macro(self, mac);
        self.tokens(mac.tokens.clone());
    }
}

impl Words {
    /// The identifiers, string literals and paths inside a macro's tokens.
    fn tokens(&mut self, tokens: TokenStream) {
        let mut path: Vec<(usize, String)> = Vec::new();
        let mut colons = 0;
        for token in tokens {
            let line = token.span().start().line;
            match token {
                TokenTree::Ident(ident) => {
                    if colons != 2 {
                        self.end_path(&mut path);
                    }
                    self.found.push((line, Word::Ident(ident.to_string())));
                    path.push((line, ident.to_string()));
                }
                TokenTree::Punct(p) if p.as_char() == ':' && !path.is_empty() && colons < 2 => {
                    colons += 1;
                    continue;
                }
                TokenTree::Group(group) => {
                    self.end_path(&mut path);
                    self.tokens(group.stream());
                }
                TokenTree::Literal(literal) => {
                    self.end_path(&mut path);
                    if let Ok(syn::Lit::Str(text)) = syn::parse_str::<syn::Lit>(&literal.to_string()) {
                        self.found.push((line, Word::Str(text.value())));
                    }
                }
                TokenTree::Punct(_) => self.end_path(&mut path),
            }
            colons = 0;
        }
        self.end_path(&mut path);
    }

    fn end_path(&mut self, path: &mut Vec<(usize, String)>) {
        if path.len() > 1 {
            self.found.push((path[0].0, Word::Path(path.iter().map(|(_, s)| s.clone()).collect())));
        }
        path.clear();
    }
}
