//! What the tests of the sanitizer check a text with: rendered as GitHub renders it
//! (comrak, GFM's extensions, autolinks on, raw HTML passed through so any that
//! survived shows), and the HTML searched for anything live.

use comrak::{Options, markdown_to_html};
use conclave_shared::invisible::is_invisible;
use regex::Regex;

/// HTML as GitHub would render `markdown`.
pub fn render_gfm(markdown: &str) -> String {
    let mut options = Options::default();
    options.extension.strikethrough = true;
    options.extension.table = true;
    options.extension.autolink = true;
    options.extension.tasklist = true;
    options.extension.footnotes = true;
    options.render.r#unsafe = true;
    markdown_to_html(markdown, &options)
}

/// Everything live in rendered `html`, as complaints: an element other than text
/// markup (an image, a raw tag), an HTML comment, a link or source outside
/// `allowed` (a repository's web URL) and the page's own anchors, an `@` mention
/// outside code and links, an invisible character.
pub fn live_parts(html: &str, allowed: &str) -> Vec<String> {
    let mut found = Vec::new();
    let text_markup = [
        "p",
        "a",
        "code",
        "pre",
        "em",
        "strong",
        "del",
        "ul",
        "ol",
        "li",
        "blockquote",
        "h1",
        "h2",
        "h3",
        "h4",
        "h5",
        "h6",
        "hr",
        "br",
        "table",
        "thead",
        "tbody",
        "tr",
        "th",
        "td",
        "input",
        "section",
        "sup",
    ];
    let tag = Regex::new(r"<(/?)([A-Za-z][A-Za-z0-9-]*)").expect("regex");
    for t in tag.captures_iter(html) {
        if !text_markup.contains(&t[2].to_ascii_lowercase().as_str()) {
            found.push(format!("a <{}{}> element", &t[1], &t[2]));
        }
    }
    if html.contains("<!--") {
        found.push("an HTML comment".into());
    }
    let attribute = Regex::new(r#"\b(href|src|srcset)="([^"]*)""#).expect("regex");
    for a in attribute.captures_iter(html) {
        let url = &a[2];
        let ours = url == allowed || url.starts_with(&format!("{allowed}/")) || url.starts_with('#');
        if &a[1] != "href" || !ours {
            found.push(format!("{}={url}", &a[1]));
        }
    }
    let code = Regex::new(r"(?s)<code[^>]*>.*?</code>|<pre[^>]*>.*?</pre>|<a [^>]*>").expect("regex");
    let outside_code = code.replace_all(html, " ");
    let mention = Regex::new(r"(^|[^A-Za-z0-9])@[A-Za-z0-9_]").expect("regex");
    if let Some(m) = mention.find(&outside_code) {
        found.push(format!("a mention `{}` outside code", m.as_str()));
    }
    if let Some(c) = html.chars().find(|c| is_invisible(*c)) {
        found.push(format!("the invisible U+{:04X}", c as u32));
    }
    found
}
