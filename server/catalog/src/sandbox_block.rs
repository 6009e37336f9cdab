//! The checks of a command's `sandbox` block beyond its shape (which the format
//! schema checks, unknown keys included): each path to read or write is absolute or
//! in the home directory (`~/…`) and never climbs with `..`; each variable has a
//! name a program can read, and a value whose placeholders are known.

use conclave_shared::Diagnostic;
use conclave_shared::sandbox::SCRATCH_PLACEHOLDER;
use serde_json::Value;

use super::views::NodeView;

/// Checks `command`'s `sandbox` block, found at `base` (the command's pointer).
pub(crate) fn check_sandbox(node: &NodeView, command: &Value, base: &str, out: &mut Vec<Diagnostic>) {
    let Some(sandbox) = command.get("sandbox").filter(|s| s.is_object()) else { return };
    for key in ["read", "write"] {
        let paths = sandbox.get(key).and_then(Value::as_array).into_iter().flatten();
        for (i, path) in paths.enumerate().filter_map(|(i, p)| Some((i, p.as_str()?))) {
            if let Some(problem) = path_problem(path) {
                out.push(
                    Diagnostic::error(
                        "sandbox-path",
                        node.subject(),
                        format!("{base}/sandbox/{key}/{i}"),
                        format!("`{path}` {problem}"),
                    )
                    .with_help("write an absolute path (/opt/tool) or one in the home directory (~/.rustup)"),
                );
            }
        }
    }
    let variables = sandbox.get("env").and_then(Value::as_object).into_iter().flatten();
    for (name, value) in variables {
        let at = format!("{base}/sandbox/env/{}", name.replace('~', "~0").replace('/', "~1"));
        if !is_variable_name(name) {
            out.push(
                Diagnostic::error(
                    "sandbox-env",
                    node.subject(),
                    at.clone(),
                    format!("`{name}` is not a variable name"),
                )
                .with_help("use letters, digits and `_`, not starting with a digit, such as CARGO_TARGET_DIR"),
            );
        }
        if let Some(unknown) = value.as_str().and_then(unknown_placeholder) {
            out.push(
                Diagnostic::warning(
                    "sandbox-env",
                    node.subject(),
                    at,
                    format!("`{unknown}` is not a placeholder and is passed as it is"),
                )
                .with_help(format!("`{SCRATCH_PLACEHOLDER}` is the node's scratch directory, the only one there is")),
            );
        }
    }
}

/// What is wrong with a sandbox path, if anything.
fn path_problem(path: &str) -> Option<&'static str> {
    if path.trim().is_empty() {
        return Some("is empty");
    }
    if !(path.starts_with('/') || path == "~" || path.starts_with("~/")) {
        return Some("is relative: it would depend on where Conclave runs");
    }
    if path.split('/').any(|part| part == "..") {
        return Some("climbs with `..`");
    }
    None
}

fn is_variable_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// The first `{…}` in `value` that is not `{scratch}`.
fn unknown_placeholder(value: &str) -> Option<String> {
    let mut rest = value;
    while let Some(start) = rest.find('{') {
        let end = rest[start..].find('}')? + start;
        let found = &rest[start..=end];
        if found != SCRATCH_PLACEHOLDER {
            return Some(found.to_string());
        }
        rest = &rest[end + 1..];
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_are_absolute_or_in_home_and_never_climb() {
        assert_eq!(path_problem("~/.rustup"), None);
        assert_eq!(path_problem("/opt/tool"), None);
        assert_eq!(path_problem("~"), None);
        assert_eq!(path_problem("target"), Some("is relative: it would depend on where Conclave runs"));
        assert_eq!(path_problem("~user/x"), Some("is relative: it would depend on where Conclave runs"));
        assert_eq!(path_problem("/opt/../etc"), Some("climbs with `..`"));
        assert_eq!(path_problem(" "), Some("is empty"));
    }

    #[test]
    fn placeholders_other_than_scratch_are_named() {
        assert_eq!(unknown_placeholder("{scratch}/target"), None);
        assert_eq!(unknown_placeholder("{scratch}/{home}"), Some("{home}".into()));
        assert!(is_variable_name("CARGO_TARGET_DIR") && !is_variable_name("1X") && !is_variable_name("A-B"));
    }
}
