//! The forge repository's web URL (`https://host/owner/repo`), whose pages are the
//! only links sanitized text keeps: derived from the repository's `origin` remote
//! (HTTPS, SSH and scp-like forms, parsed with the `url` crate) when the review is
//! not posted to a forge that names it.

use std::path::Path;
use std::process::Command;
use url::Url;

/// The web URL of the repository at `root`, from its `origin` remote; `None` when it
/// has none, or one that names no web page (a local path). Runs git: call it on a
/// blocking thread.
pub fn origin_web_url(root: &Path) -> Option<String> {
    let out = Command::new("git").arg("-C").arg(root).args(["config", "--get", "remote.origin.url"]).output().ok()?;
    if !out.status.success() {
        return None;
    }
    web_url_of_remote(String::from_utf8_lossy(&out.stdout).trim())
}

/// The web URL a git remote stands for: `https://host/owner/repo` for
/// `https://host/owner/repo.git`, `ssh://git@host/owner/repo.git` and
/// `git@host:owner/repo.git`; credentials, ports of SSH and `.git` dropped.
pub fn web_url_of_remote(remote: &str) -> Option<String> {
    let remote = remote.trim();
    let url = match Url::parse(remote) {
        Ok(url) => url,
        // `git@host:owner/repo.git`, git's scp-like syntax.
        Err(_) => {
            let (user_host, path) = remote.split_once(':')?;
            let host = user_host.rsplit('@').next()?;
            if host.is_empty() || host.contains('/') || path.starts_with('/') {
                return None;
            }
            Url::parse(&format!("ssh://{host}/{path}")).ok()?
        }
    };
    let scheme = match url.scheme() {
        "http" => "http",
        "https" | "ssh" | "git" | "git+ssh" | "ssh+git" => "https",
        _ => return None,
    };
    let host = url.host_str()?;
    let port = match (url.scheme(), url.port()) {
        ("http" | "https", Some(port)) => format!(":{port}"),
        _ => String::new(),
    };
    let path = url.path().trim_matches('/');
    let path = path.strip_suffix(".git").unwrap_or(path);
    if path.is_empty() {
        return None;
    }
    let web = format!("{scheme}://{host}{port}/{path}");
    crate::inert::LinkPolicy::repository(&web).map(|_| web)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_form_of_a_remote_names_the_same_web_page() {
        for remote in [
            "https://github.com/acme/app.git",
            "https://x-access-token:ghs_secret@github.com/acme/app",
            "git@github.com:acme/app.git",
            "ssh://git@github.com:22/acme/app.git",
            "git://github.com/acme/app/",
        ] {
            assert_eq!(web_url_of_remote(remote).as_deref(), Some("https://github.com/acme/app"), "{remote}");
        }
        assert_eq!(
            web_url_of_remote("https://gitlab.example:8443/group/sub/app.git").as_deref(),
            Some("https://gitlab.example:8443/group/sub/app")
        );
        for none in ["/srv/git/app.git", "file:///srv/git/app.git", "../app", "https://github.com/", "C:\\repo"] {
            assert_eq!(web_url_of_remote(none), None, "{none}");
        }
    }
}
