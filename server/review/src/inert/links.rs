//! Which links stay live in sanitized text: only those into the forge repository's
//! own web pages (its files, lines and commits), given as a URL prefix.

/// The links sanitized text may keep: none, or those under one repository's web URL.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LinkPolicy {
    /// `https://host/owner/repo`, without a trailing slash.
    prefix: Option<String>,
}

impl LinkPolicy {
    /// No link is kept.
    pub fn none() -> LinkPolicy {
        LinkPolicy::default()
    }

    /// Links under `web_url` (`https://github.com/acme/app`) are kept; `None` when it
    /// is not an `http(s)` URL with a host and a path, which would allow too much.
    pub fn repository(web_url: &str) -> Option<LinkPolicy> {
        let prefix = web_url.trim().trim_end_matches('/');
        let rest = prefix.strip_prefix("https://").or_else(|| prefix.strip_prefix("http://"))?;
        let (host, path) = rest.split_once('/')?;
        let clean = |s: &str| !s.is_empty() && s.chars().all(|c| c.is_ascii_graphic() && !"\\\"'<>`@?#".contains(c));
        let segments_ok = path.split('/').all(|s| !s.is_empty() && s != "." && s != "..");
        (clean(host) && clean(path) && segments_ok).then(|| LinkPolicy { prefix: Some(prefix.to_string()) })
    }

    /// The allowed prefix, if any.
    pub fn prefix(&self) -> Option<&str> {
        self.prefix.as_deref()
    }

    /// Whether a link to `url` may stay live: under the prefix at a path boundary,
    /// of the characters a page's URL needs, and no `..` segment or backslash that a browser would
    /// resolve elsewhere.
    pub fn allows(&self, url: &str) -> bool {
        let Some(prefix) = &self.prefix else { return false };
        let Some(rest) = url.strip_prefix(prefix.as_str()) else { return false };
        let at_boundary = rest.is_empty() || rest.starts_with(['/', '#', '?']);
        // Only what a file, line or commit URL needs, so that no character can end
        // a forge's autolink early and leave the rest of the text live.
        let printable = rest.chars().all(|c| c.is_ascii_alphanumeric() || "-._~/#?=&%+:,;".contains(c));
        // A second URL inside would be linked on its own by GitHub.
        let lower = rest.to_ascii_lowercase();
        let one_url = !lower.contains("://") && !lower.contains("www.");
        let path = rest.split(['#', '?']).next().unwrap_or_default();
        let no_dots = !path.split('/').any(|s| s == ".." || s == "." || s.eq_ignore_ascii_case("%2e%2e"));
        at_boundary && printable && one_url && no_dots && !lower.contains("%2f")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_repository_s_own_pages_are_allowed() {
        let policy = LinkPolicy::repository("https://github.com/acme/app/").expect("a repository URL");
        assert_eq!(policy.prefix(), Some("https://github.com/acme/app"));
        for ok in [
            "https://github.com/acme/app",
            "https://github.com/acme/app/blob/abc/src/a.rs#L3",
            "https://github.com/acme/app/commit/0a1b",
        ] {
            assert!(policy.allows(ok), "{ok}");
        }
        for refused in [
            "https://github.com/acme/app-evil/x",
            "https://github.com/acme/app@evil.example/x",
            "https://github.com/acme/app/../../evil/x",
            "https://github.com/acme/app/%2e%2e/x",
            "https://github.com/acme/app/a\\b",
            "https://github.com/acme/app/x_@1",
            "https://github.com/acme/app/x>y",
            "https://github.com/acme/app/x~~~https://evil.example/x",
            "https://evil.example/acme/app",
            "javascript:alert(1)",
            "data:image/png;base64,AAAA",
            "/acme/app/blob/x",
        ] {
            assert!(!policy.allows(refused), "{refused}");
        }
        assert!(!LinkPolicy::none().allows("https://github.com/acme/app"));
        for bad in
            ["github.com/acme/app", "https://github.com", "javascript://x/y", "https://h/a/../b", "https://u@h/a"]
        {
            assert_eq!(LinkPolicy::repository(bad), None, "{bad}");
        }
    }
}
