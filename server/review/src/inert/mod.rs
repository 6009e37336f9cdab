//! Model-authored Markdown made inert: what a model writes is shown, never obeyed,
//! wherever Conclave writes it (a forge's comments, the reports). Parsed as GitHub
//! and GitLab read it (pulldown-cmark, with offsets), it keeps text, emphasis,
//! lists, tables and code as written, and shows as code or plain text every image,
//! raw HTML and HTML comment, link outside the repository's own pages, reference
//! definition and unresolved full reference (`[x][1]`), bare URL, e-mail address and `@` mention;
//! invisible and bidirectional characters are shown escaped (`\u202e`), code
//! included; a fence the text leaves open is closed.
//!
//! Layout: `links.rs` is which links stay live ([`LinkPolicy`]); `code.rs` writes
//! text as code ([`code_span`]); `text.rs` reads runs of plain text; `pass.rs` is one
//! pass over the parsed text. The output is a fixed point: sanitizing it again
//! changes nothing, so a stored report read back and sanitized again stays as it is.
//!
//! **Invariant:** pure; no model text reaches an artifact Conclave writes without
//! passing [`sanitize`] (or, for a path or name, [`code_span`]).

mod code;
mod links;
mod pass;
mod text;

pub use code::code_span;
pub use links::LinkPolicy;

use conclave_shared::invisible::escape_invisible;

/// Passes before a text that keeps changing is given up on and shown as a code block.
const MAX_PASSES: usize = 8;

/// `markdown` made inert under `links` (see the module's header). Idempotent.
pub fn sanitize(markdown: &str, links: &LinkPolicy) -> String {
    let mut text = escape_invisible(markdown).into_owned();
    for _ in 0..MAX_PASSES {
        let next = pass::sanitize_once(&text, links);
        if next == text {
            return text;
        }
        text = next;
    }
    as_code_block(&text)
}

/// Text that did not settle, shown whole as a fenced code block no line in it closes.
fn as_code_block(text: &str) -> String {
    let fence = "`".repeat(code::longest_run(text, '`').max(2) + 1);
    format!("{fence}text\n{}\n{fence}", code::break_markers(text).trim_end_matches(['\n', '\r']))
}
