//! Command nodes: how one runs its program (argv, directory, timeout, output cap,
//! the exit codes that mean success) and how what it printed becomes its output.

use serde::{Deserialize, Serialize};
use serde_json::Value;
#[cfg(feature = "json-schema")]
use std::collections::BTreeMap;

use crate::cache::CacheSetting;
use crate::sandbox::SandboxConfig;
use crate::severity_map::SeverityMap;

/// How a command node runs its program and reads what it printed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[cfg_attr(feature = "json-schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct CommandConfig {
    /// The program and its arguments, passed as they are: no shell reads them.
    #[cfg_attr(feature = "json-schema", schemars(length(min = 1)))]
    pub argv: Vec<String>,
    /// Where it runs: the repository under review (`repository`, the default; the
    /// workspace when the run has no repository) or the workspace (`workspace`).
    #[serde(default, skip_serializing_if = "CommandDir::is_default")]
    pub cwd: CommandDir,
    /// Seconds before the program and every process it started are killed
    /// (default 60).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "json-schema", schemars(range(min = 1)))]
    pub timeout_secs: Option<u64>,
    /// Bytes kept of stdout, and of stderr; the rest is cut (default 1 MiB).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "json-schema", schemars(range(min = 1)))]
    pub max_output_bytes: Option<u64>,
    /// Exit codes that count as success (default `[0]`). Linters that exit non-zero
    /// when they find something list that code too.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ok_exit_codes: Vec<i32>,
    /// How stdout becomes the node's output: `text` (the default), `json` (checked
    /// against the output schema, like an agent's answer), `sarif` (SARIF 2.1.0
    /// results become findings) or `diagnostics` (each `path:line[:column]: message`
    /// line becomes a finding).
    #[serde(default, skip_serializing_if = "CommandParse::is_default")]
    pub parse: CommandParse,
    /// Inline JSON Schema that `json` output must satisfy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "json-schema", schemars(with = "Option<BTreeMap<String, Value>>"))]
    pub output_schema: Option<Value>,
    /// Dotted reference to a schema file that `json` output must satisfy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "json-schema", schemars(regex(pattern = r"^[a-z0-9_-]+(\.[a-z0-9_-]+)+$")))]
    pub output_schema_ref: Option<String>,
    /// Keep the output for later runs whose command, run input and upstream outputs
    /// are the same: `true`, or `{"ttl_secs": N}` to keep it N seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache: Option<CacheSetting>,
    /// Makes the command an analyzer lane of a review: it runs only when its program
    /// is installed and the change touches files it reads; `{files}` in `argv`
    /// becomes those files, `{base}` the review's base (`HEAD` for the working
    /// tree) and `{semgrep-rules}` the directory of Conclave's Semgrep rules. A lane
    /// that fails leaves the nodes it feeds to run without it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "json-schema", schemars(with = "AnalyzerConfig"))]
    pub analyzer: Option<AnalyzerConfig>,
    /// Widens the sandbox the command runs in (network, paths to read or write,
    /// variables, limits); without it the command gets the default confinement.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "json-schema", schemars(with = "SandboxConfig"))]
    pub sandbox: Option<SandboxConfig>,
}

/// The argument of an analyzer's `argv` that the review replaces with the changed
/// files the analyzer reads, one argument each.
pub const FILES_PLACEHOLDER: &str = "{files}";

/// The argument of an analyzer's `argv` that the review replaces with the directory
/// of Conclave's own Semgrep rules, which the binary carries and writes into its
/// tool directory (and which the lane's sandbox may then read):
/// `semgrep scan --config {semgrep-rules} --no-rewrite-rule-ids`.
pub const SEMGREP_RULES_PLACEHOLDER: &str = "{semgrep-rules}";

/// The argument of an analyzer's `argv` that the review replaces with its base: the
/// base ref given, or `HEAD` when it reviews the working tree against HEAD. Analyzers
/// read the working tree, so `git diff --check --merge-base {base}` checks the change
/// as they see it.
pub const BASE_PLACEHOLDER: &str = "{base}";

/// What makes a command node an analyzer lane of a review: the files it reads and
/// whether it runs unless asked for. The review decides before the run which lanes
/// run (installed, files touched, the selection) and leaves the others out, saying why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[cfg_attr(feature = "json-schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct AnalyzerConfig {
    /// Globs of the repository paths it reads (`**/*.sh`); a path matches when the
    /// glob matches it whole or its file name. Empty: every changed file.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub files: Vec<String>,
    /// Whether it runs without being named in the selection (default true). Lanes
    /// that are slow or build the code (clippy) say `false`.
    #[serde(default = "default_true", skip_serializing_if = "is_true")]
    pub default: bool,
    /// How its findings are graded: the tool's rule ids (exactly or by prefix) and
    /// levels mapped to severities, and a default. Without it the reader's table
    /// grades (SARIF `error` blocker, `warning` major, `note` minor), except that a
    /// lane running Ruff gets Ruff's map (no lint is a blocker).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "json-schema", schemars(with = "SeverityMap"))]
    pub severity: Option<SeverityMap>,
}

impl AnalyzerConfig {
    /// An analyzer reading `files` (every changed file when empty), on by default,
    /// graded by its reader's table.
    pub fn new(files: Vec<String>) -> AnalyzerConfig {
        AnalyzerConfig { files, default: true, severity: None }
    }

    /// The map that grades the findings of a lane running `program`: its own, else
    /// the built-in one for that program ([`SeverityMap::builtin_for`]), else none.
    pub fn severity_for(&self, program: &str) -> Option<SeverityMap> {
        self.severity.clone().or_else(|| SeverityMap::builtin_for(program))
    }
}

fn default_true() -> bool {
    true
}

fn is_true(value: &bool) -> bool {
    *value
}

/// Default seconds before a command is killed.
pub const DEFAULT_COMMAND_TIMEOUT_SECS: u64 = 60;

/// Default bytes kept of a command's stdout, and of its stderr.
pub const DEFAULT_COMMAND_OUTPUT_BYTES: u64 = 1 << 20;

impl CommandConfig {
    /// A command running `argv` with every setting at its default.
    pub fn new(argv: Vec<String>) -> CommandConfig {
        CommandConfig {
            argv,
            cwd: CommandDir::default(),
            timeout_secs: None,
            max_output_bytes: None,
            ok_exit_codes: Vec::new(),
            parse: CommandParse::default(),
            output_schema: None,
            output_schema_ref: None,
            cache: None,
            analyzer: None,
            sandbox: None,
        }
    }

    /// Seconds before the command is killed.
    pub fn timeout(&self) -> u64 {
        self.timeout_secs.unwrap_or(DEFAULT_COMMAND_TIMEOUT_SECS)
    }

    /// Bytes kept of each stream.
    pub fn output_cap(&self) -> u64 {
        self.max_output_bytes.unwrap_or(DEFAULT_COMMAND_OUTPUT_BYTES)
    }

    /// Whether `code` counts as success.
    pub fn exit_ok(&self, code: i32) -> bool {
        if self.ok_exit_codes.is_empty() { code == 0 } else { self.ok_exit_codes.contains(&code) }
    }

    /// The program: the first word of `argv`.
    pub fn program(&self) -> &str {
        self.argv.first().map_or("", String::as_str)
    }
}

/// Where a command runs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[cfg_attr(feature = "json-schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum CommandDir {
    /// The repository under review (the workspace when the run has none).
    #[default]
    Repository,
    /// The workspace the conclave belongs to.
    Workspace,
}

impl CommandDir {
    fn is_default(&self) -> bool {
        *self == CommandDir::default()
    }
}

/// How a command's stdout becomes its output.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[cfg_attr(feature = "json-schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum CommandParse {
    /// The text as printed.
    #[default]
    Text,
    /// One JSON document, checked against the node's output schema when it has one.
    Json,
    /// A SARIF 2.1.0 log whose results become findings.
    Sarif,
    /// Compiler-style lines, `path:line[:column]: message`, each one a finding.
    Diagnostics,
    /// ShellCheck's `json1` report (`shellcheck -f json1`): each comment a finding.
    Shellcheck,
    /// Cargo's JSON messages (`cargo clippy --message-format json`): each compiler
    /// warning or error a finding at its primary span.
    Cargo,
}

impl CommandParse {
    /// Every reading, in the order the editor offers them.
    pub const ALL: [CommandParse; 6] = [
        CommandParse::Text,
        CommandParse::Json,
        CommandParse::Sarif,
        CommandParse::Diagnostics,
        CommandParse::Shellcheck,
        CommandParse::Cargo,
    ];

    fn is_default(&self) -> bool {
        *self == CommandParse::default()
    }

    /// The name used in files.
    pub fn as_str(self) -> &'static str {
        match self {
            CommandParse::Text => "text",
            CommandParse::Json => "json",
            CommandParse::Sarif => "sarif",
            CommandParse::Diagnostics => "diagnostics",
            CommandParse::Shellcheck => "shellcheck",
            CommandParse::Cargo => "cargo",
        }
    }

    /// The levels the reader gives findings, which an analyzer's `severity.levels`
    /// may name; none for `text` and `json`.
    pub fn levels(self) -> &'static [&'static str] {
        match self {
            CommandParse::Text | CommandParse::Json => &[],
            CommandParse::Sarif => &["error", "warning", "note", "none"],
            CommandParse::Diagnostics => &["error", "warning", "note", "other"],
            CommandParse::Shellcheck => &["error", "warning", "info", "style"],
            CommandParse::Cargo => &["error", "warning", "note", "help", "failure-note"],
        }
    }

    /// Whether the output is findings-shaped (`review.findings.v1`, findings in
    /// `findings`): every reading but `text` and `json`.
    pub fn findings_shaped(self) -> bool {
        !matches!(self, CommandParse::Text | CommandParse::Json)
    }
}
