//! Reading where to post from the CI environment: a required variable, and a base
//! URL of a forge's API, each problem noted so that all are named at once.

/// A variable's value, or a note of what is missing.
pub(super) fn required(
    env: &dyn Fn(&str) -> Option<String>,
    name: &str,
    what: &str,
    problems: &mut Vec<String>,
) -> String {
    match env(name).map(|v| v.trim().to_string()).filter(|v| !v.is_empty()) {
        Some(value) => value,
        None => {
            problems.push(format!("{name} is not set ({what})"));
            String::new()
        }
    }
}

/// A URL variable's value (a base URL of the forge's API), or a note of what is wrong.
pub(super) fn api_url(value: &str, name: &str, problems: &mut Vec<String>) -> Option<reqwest::Url> {
    match reqwest::Url::parse(value) {
        Ok(url) if matches!(url.scheme(), "http" | "https") => Some(url),
        _ => {
            problems.push(format!("{name} `{value}` is not an http(s) URL; set it to the forge's API base URL"));
            None
        }
    }
}
