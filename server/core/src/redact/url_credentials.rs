//! Credentials in URLs, the one place that reads them: the user information of
//! `scheme://user:password@host` and a `password` query parameter (as libpq takes
//! it), wherever a URL appears in a text. The redactor masks them in everything a
//! provider says and learns them from the environment's URLs; the PostgreSQL store
//! masks them in its messages.
//!
//! Each URL is parsed with the `url` crate, which decodes what it holds. Where the
//! credentials sit in the text is read the way that parser reads a URL (the
//! authority ends at the first `/`, `?`, `#` or `\`, the user information at its
//! last `@`), so the text around them is kept byte for byte; a URL the parser
//! refuses (a stray character after the port) still has its user information masked.

use regex::Regex;
use std::borrow::Cow;
use std::ops::Range;
use std::sync::LazyLock;
use url::Url;

/// The start of a URL: a scheme and `://`.
static SCHEME: LazyLock<Option<Regex>> = LazyLock::new(|| Regex::new(r"(?i)\b[a-z][a-z0-9+.-]*://").ok());

/// The schemes whose URLs name a database's role as their user.
const DATABASE_SCHEMES: [&str; 2] = ["postgres", "postgresql"];

/// The query parameter that carries a password.
const PASSWORD_PARAMETER: &str = "password";

/// One URL's credentials in a text.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct UrlCredentials {
    /// Where they are in the text: the user information, and the value of a
    /// `password` parameter.
    pub spans: Vec<Range<usize>>,
    /// What they are, percent-decoded: the password and the parameter's value, and
    /// the user where it stands alone for a token (not beside a password, not a
    /// database's role), each one that is not empty.
    pub secrets: Vec<String>,
}

/// The credentials of every URL in `text`.
pub fn find_url_credentials(text: &str) -> Vec<UrlCredentials> {
    let Some(scheme) = SCHEME.as_ref() else { return Vec::new() };
    scheme.find_iter(text).filter_map(|found| in_url(text, found.start(), found.end())).collect()
}

/// `text` with the credentials of every URL in it replaced by `mask`.
pub fn mask_url_credentials<'t>(text: &'t str, mask: &str) -> Cow<'t, str> {
    let mut spans: Vec<Range<usize>> = find_url_credentials(text).into_iter().flat_map(|c| c.spans).collect();
    if spans.is_empty() {
        return Cow::Borrowed(text);
    }
    spans.sort_by_key(|s| s.start);
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    for span in spans {
        if span.start < at {
            continue;
        }
        out.push_str(&text[at..span.start]);
        out.push_str(mask);
        at = span.end;
    }
    out.push_str(&text[at..]);
    Cow::Owned(out)
}

/// The credentials of the URL starting at `start` in `text`, whose authority starts at
/// `authority` (just after `://`).
fn in_url(text: &str, start: usize, authority: usize) -> Option<UrlCredentials> {
    let end = text[authority..].find(ends_url).map_or(text.len(), |i| authority + i);
    let authority_end = text[authority..end].find(['/', '?', '#', '\\']).map_or(end, |i| authority + i);
    let user_info = text[authority..authority_end].rfind('@').map(|at| authority..authority + at);
    let parameter = password_parameter(text, authority_end, end);
    if user_info.is_none() && parameter.is_none() {
        return None;
    }
    let spans: Vec<Range<usize>> =
        user_info.iter().chain(parameter.iter()).filter(|s| !s.is_empty()).cloned().collect();
    let secrets = match Url::parse(&text[start..end]) {
        Ok(url) => parsed_secrets(&url),
        Err(_) => spans.iter().flat_map(|s| raw_secrets(&text[s.clone()])).collect(),
    };
    Some(UrlCredentials { spans, secrets: secrets.into_iter().filter(|s| !s.is_empty()).collect() })
}

/// Where a URL written in running text ends: at white space or a quote.
fn ends_url(c: char) -> bool {
    c.is_whitespace() || matches!(c, '"' | '\'' | '`' | '<' | '>')
}

/// The value of a `password` parameter in the query of the URL between
/// `authority_end` and `end`, if it has one.
fn password_parameter(text: &str, authority_end: usize, end: usize) -> Option<Range<usize>> {
    let query_start = authority_end + text[authority_end..end].find('?')? + 1;
    let query_end = text[query_start..end].find('#').map_or(end, |i| query_start + i);
    let mut at = query_start;
    for pair in text[query_start..query_end].split('&') {
        if let Some(value) = pair.strip_prefix(PASSWORD_PARAMETER).and_then(|rest| rest.strip_prefix('=')) {
            let value_start = at + PASSWORD_PARAMETER.len() + 1;
            return Some(value_start..value_start + value.len());
        }
        at += pair.len() + 1;
    }
    None
}

/// The user, password and password parameter of a parsed URL, decoded.
fn parsed_secrets(url: &Url) -> Vec<String> {
    let decode = |s: &str| percent_encoding::percent_decode_str(s).decode_utf8_lossy().into_owned();
    let mut secrets = Vec::new();
    // A user is a secret only where it stands for one (`https://TOKEN@host`): beside a
    // password it is a name, and a database's user is a role. Kept as a secret, a role
    // named like a word (`conclave`) would be cut out of every text.
    if url.password().is_none() && !DATABASE_SCHEMES.contains(&url.scheme()) {
        secrets.push(decode(url.username()));
    }
    secrets.extend(url.password().map(decode));
    secrets.extend(url.query_pairs().filter(|(k, _)| k == PASSWORD_PARAMETER).map(|(_, v)| v.into_owned()));
    secrets
}

/// The pieces of user information the parser refused, as written: `user:password`,
/// the user and the password.
fn raw_secrets(user_info: &str) -> Vec<String> {
    let mut secrets = vec![user_info.to_string()];
    if let Some((_, password)) = user_info.split_once(':') {
        secrets.push(password.to_string());
    }
    secrets
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn user_information_is_masked_and_the_rest_kept_as_written() {
        let text = "could not reach HTTP://admin:hunter22pw@10.0.0.5:11434/api/chat? (twice)";
        assert_eq!(mask_url_credentials(text, "***"), "could not reach HTTP://***@10.0.0.5:11434/api/chat? (twice)");
        assert_eq!(mask_url_credentials("https://TOKEN@example.com/x", "*"), "https://*@example.com/x");
        assert_eq!(mask_url_credentials("see https://example.com/a@b", "*"), "see https://example.com/a@b");
        assert!(matches!(mask_url_credentials("no url: user:pass@host", "*"), Cow::Borrowed(_)));
    }

    #[test]
    fn a_password_parameter_is_masked() {
        assert_eq!(
            mask_url_credentials("postgres://u@h/db?sslmode=disable&password=x%20y&a=b#f", "***"),
            "postgres://***@h/db?sslmode=disable&password=***&a=b#f"
        );
        let found = find_url_credentials("postgres://h/db?password=x%20y");
        assert_eq!(
            found,
            vec![UrlCredentials { spans: vec![Range { start: 25, end: 30 }], secrets: vec!["x y".into()] }]
        );
    }

    #[test]
    fn secrets_are_decoded_so_that_every_spelling_of_them_is_caught() {
        let found = find_url_credentials("postgres://me:p%40ss@db.internal:5432/app and http://k@h");
        let secrets: Vec<Vec<String>> = found.into_iter().map(|c| c.secrets).collect();
        assert_eq!(secrets, vec![vec!["p@ss".to_string()], vec!["k".to_string()]]);
    }

    #[test]
    fn a_user_is_a_secret_only_where_it_stands_for_one() {
        let secrets = |text: &str| find_url_credentials(text).remove(0).secrets;
        // A token as the user is one; a database's role, or a user beside a password, is a name.
        assert_eq!(secrets("https://ghp_t0k3n@github.example/o/r.git"), vec!["ghp_t0k3n"]);
        assert_eq!(secrets("postgresql://conclave@127.0.0.1:5432/runs"), Vec::<String>::new());
        assert_eq!(secrets("postgres://conclave:hunter2@db/runs"), vec!["hunter2"]);
        assert_eq!(mask_url_credentials("postgresql://conclave@db/runs", "*"), "postgresql://*@db/runs");
    }

    #[test]
    fn a_url_the_parser_refuses_still_has_its_user_information_masked() {
        let text = "\"http://u:secret-pw@host:80x/\"";
        assert!(Url::parse("http://u:secret-pw@host:80x/").is_err());
        assert_eq!(mask_url_credentials(text, "*"), "\"http://*@host:80x/\"");
        let secrets = find_url_credentials(text).remove(0).secrets;
        assert_eq!(secrets, vec!["u:secret-pw", "secret-pw"]);
    }
}
