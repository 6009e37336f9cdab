//! Diagnostics: one problem in one conclave or schema file, located by node or edge
//! id and JSON path, rendered like a compiler message. `conclave validate`, the API
//! and the editor all show these.

use serde::{Deserialize, Serialize};
use std::borrow::Cow;
use std::fmt;

/// How bad a problem is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum Level {
    /// Blocks running the conclave; `validate` exits 2.
    Error,
    /// Worth fixing; does not block.
    Warning,
    /// Information, such as which nodes get a check.
    Note,
}

/// What a diagnostic is about.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(tag = "kind", content = "id", rename_all = "snake_case")]
pub enum Subject {
    /// The file as a whole.
    File,
    /// A node, by id.
    Node(String),
    /// An edge, as `from -> to`.
    Edge(String),
}

/// One problem found in a file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Diagnostic {
    /// Error, warning or note.
    pub severity: Level,
    /// Stable short code, such as `cycle` or `unknown-provider`.
    #[cfg_attr(feature = "openapi", schema(value_type = String))]
    pub code: Cow<'static, str>,
    /// The file, as given on the command line or found in a directory.
    pub file: String,
    /// Line and column, where known (malformed JSON).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<Vec<usize>>))]
    pub line_col: Option<(usize, usize)>,
    /// The node, edge or schema concerned.
    pub subject: Subject,
    /// JSON pointer to the offending value in the file.
    pub path: String,
    /// What is wrong.
    pub message: String,
    /// What to do about it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub help: Option<String>,
}

impl Diagnostic {
    /// An error about `subject` at `path`.
    pub fn error(code: &'static str, subject: Subject, path: impl Into<String>, message: impl Into<String>) -> Self {
        Diagnostic {
            severity: Level::Error,
            code: Cow::Borrowed(code),
            file: String::new(),
            line_col: None,
            subject,
            path: path.into(),
            message: message.into(),
            help: None,
        }
    }

    /// A warning about `subject` at `path`.
    pub fn warning(code: &'static str, subject: Subject, path: impl Into<String>, message: impl Into<String>) -> Self {
        Diagnostic { severity: Level::Warning, ..Diagnostic::error(code, subject, path, message) }
    }

    /// A note about `subject` at `path`.
    pub fn note(code: &'static str, subject: Subject, path: impl Into<String>, message: impl Into<String>) -> Self {
        Diagnostic { severity: Level::Note, ..Diagnostic::error(code, subject, path, message) }
    }

    /// Adds advice on what to do.
    pub fn with_help(mut self, help: impl Into<String>) -> Self {
        self.help = Some(help.into());
        self
    }

    /// True for errors.
    pub fn is_error(&self) -> bool {
        self.severity == Level::Error
    }

    /// The node the diagnostic is about, if any.
    pub fn node_id(&self) -> Option<&str> {
        match &self.subject {
            Subject::Node(id) => Some(id),
            Subject::File | Subject::Edge(_) => None,
        }
    }
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let severity = match self.severity {
            Level::Error => "error",
            Level::Warning => "warning",
            Level::Note => "note",
        };
        writeln!(f, "{severity}[{}]: {}", self.code, self.message)?;
        write!(f, "  --> {}", self.file)?;
        if let Some((line, col)) = self.line_col {
            write!(f, ":{line}:{col}")?;
        }
        match &self.subject {
            Subject::File => {}
            Subject::Node(id) => write!(f, ", node `{id}`")?,
            Subject::Edge(id) => write!(f, ", edge `{id}`")?,
        }
        if self.line_col.is_none() || !self.path.is_empty() {
            let path = if self.path.is_empty() { "/" } else { &self.path };
            write!(f, ", at {path}")?;
        }
        if let Some(help) = &self.help {
            write!(f, "\n  help: {help}")?;
        }
        Ok(())
    }
}

/// Appends `segment` to a JSON pointer, escaping `~` and `/` as RFC 6901 requires.
pub fn pointer(base: &str, segment: impl fmt::Display) -> String {
    let seg = segment.to_string().replace('~', "~0").replace('/', "~1");
    format!("{base}/{seg}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_like_a_compiler_message() {
        let mut d = Diagnostic::error(
            "cycle",
            Subject::Edge("b -> a".into()),
            "/edges/1",
            "the graph has a cycle: a -> b -> a",
        )
        .with_help("remove one of these edges");
        d.file = "x.conclave.json".into();
        assert_eq!(
            d.to_string(),
            "error[cycle]: the graph has a cycle: a -> b -> a\n  --> x.conclave.json, edge `b -> a`, at /edges/1\n  help: remove one of these edges"
        );
    }

    #[test]
    fn pointer_segments_are_escaped() {
        assert_eq!(pointer("/properties", "a/b~c"), "/properties/a~1b~0c");
    }
}
