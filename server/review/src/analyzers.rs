//! Analyzer lanes: the command nodes of a review conclave that carry an `analyzer`
//! block (shellcheck, ruff, semgrep, clippy, `git diff --check`). Before a review
//! starts, [`plan_lanes`] decides which of them run (selected, installed, the change
//! touches files they read) and [`apply_lanes`] leaves the others out of the conclave
//! and gives the running ones their files; the decisions, with why each lane is off,
//! go into the run input (`analyzers`) so that the report can say them.
//!
//! A lane's node id is its name everywhere: in a selection, in `raisedBy` of its
//! findings and in the report. The built-in conclaves name each lane after its tool.
//!
//! A program is found on `PATH` or in Conclave's tool directory ([`tool_dir`]:
//! `CONCLAVE_TOOLS_DIR`, else `$XDG_CACHE_HOME/conclave/bin`, else
//! `~/.cache/conclave/bin`, where the set-up script links the tools it installs); a
//! program found only there runs by its full path. A lane whose `argv` names
//! `{semgrep-rules}` gets the directory [`provide_rules`] wrote Conclave's Semgrep
//! rules to (`semgrep_rules.rs`), and its sandbox may read it.

use conclave_catalog::CheckedConclave;
use conclave_shared::command::{AnalyzerConfig, BASE_PLACEHOLDER, FILES_PLACEHOLDER, SEMGREP_RULES_PLACEHOLDER};
use conclave_shared::{CommandConfig, Node};
use globset::{Glob, GlobSet, GlobSetBuilder};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::path::{Path, PathBuf};

use crate::semgrep_rules;

/// Which analyzer lanes a review runs.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum AnalyzerSelection {
    /// Every lane that is on by default (installed, with files to read).
    #[default]
    Default,
    /// None.
    None,
    /// Exactly these lanes, by node id, those off by default included.
    Only(Vec<String>),
}

impl AnalyzerSelection {
    /// Reads `none` or a comma-separated list of lane names.
    pub fn parse(text: &str) -> AnalyzerSelection {
        let names: Vec<String> = text.split(',').map(str::trim).filter(|n| !n.is_empty()).map(str::to_string).collect();
        match names.as_slice() {
            [only] if only == "none" => AnalyzerSelection::None,
            _ => AnalyzerSelection::Only(names),
        }
    }
}

/// Why a lane does not run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LaneOff {
    /// The selection does not name it.
    NotSelected,
    /// It runs only when the selection names it.
    OffByDefault,
    /// Its program is neither on `PATH` nor in the tool directory.
    NotInstalled,
    /// The change touches no file it reads.
    NoMatchingFiles,
    /// The kernel cannot confine it, and a change under review is not trusted to
    /// run unconfined (unless the caller allows unsandboxed runs).
    SandboxUnavailable,
    /// It reads Conclave's Semgrep rules (`{semgrep-rules}`), and they could not be
    /// written to the tool directory.
    RulesUnavailable,
}

/// One analyzer lane of a review and what was decided about it. The run input
/// carries its name, program, file count and why it is off (short: every agent reads
/// the run input); the rest is for the command line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AnalyzerLane {
    /// Its node id: its name in a selection and in `raisedBy`.
    pub name: String,
    /// Its program, as the conclave names it.
    pub program: String,
    /// Whether the program was found.
    #[serde(skip)]
    pub installed: bool,
    /// Whether it runs when not named (its `analyzer.default`).
    #[serde(skip)]
    pub default: bool,
    /// The changed files it reads (what `{files}` becomes).
    #[serde(skip)]
    pub files: Vec<String>,
    /// How many they are.
    pub file_count: usize,
    /// Why it does not run; `None` when it runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub off: Option<LaneOff>,
    /// The full path of its program when it was found only in the tool directory.
    #[serde(skip)]
    pub path: Option<PathBuf>,
    /// Where Conclave's Semgrep rules are, when its `argv` names `{semgrep-rules}`.
    #[serde(skip)]
    pub rules: Option<PathBuf>,
    /// In a report: why the lane failed when it ran and failed (the run went on
    /// without it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failed: Option<String>,
    /// In a report: how many findings it raised.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub raised: usize,
    /// In a report: how many of them the result left out and the report added.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub added: usize,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

impl AnalyzerLane {
    /// Whether it runs.
    pub fn runs(&self) -> bool {
        self.off.is_none()
    }

    /// Why it is off, in words for any interface; `None` when it runs.
    pub fn why_off(&self) -> Option<String> {
        Some(match self.off? {
            LaneOff::NotSelected => "not in the selection of analyzers".to_string(),
            LaneOff::OffByDefault => "off by default: name it in the selection of analyzers to run it".to_string(),
            LaneOff::NotInstalled => format!("`{}` is not installed", self.program),
            LaneOff::NoMatchingFiles => "the change touches no file it reads".to_string(),
            LaneOff::SandboxUnavailable => {
                "skipped: the sandbox is unavailable here, and the change's code does not run unconfined".to_string()
            }
            LaneOff::RulesUnavailable => {
                "Conclave's Semgrep rules could not be written to the tool directory (`CONCLAVE_TOOLS_DIR`, else \
                 ~/.cache/conclave/bin): make it writable"
                    .to_string()
            }
        })
    }

    /// The lanes recorded in a review's run input (`analyzers`); empty when none.
    pub fn from_run_input(input: &Value) -> Vec<AnalyzerLane> {
        input.get("analyzers").and_then(|a| serde_json::from_value(a.clone()).ok()).unwrap_or_default()
    }
}

/// A selection names a lane the conclave does not have.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("no analyzer `{name}` in conclave `{conclave}`; its analyzers: {known}")]
pub struct UnknownAnalyzer {
    /// The name given.
    pub name: String,
    /// The conclave.
    pub conclave: String,
    /// Its lanes, comma-separated (`none` when it has none).
    pub known: String,
}

/// The analyzer lanes of `conclave` in conclave order, with their command and block.
pub fn analyzer_nodes(conclave: &CheckedConclave) -> Vec<(&Node, &CommandConfig, &AnalyzerConfig)> {
    conclave
        .conclave()
        .nodes
        .iter()
        .filter_map(|n| {
            let command = n.command.as_ref()?;
            Some((n, command, command.analyzer.as_ref()?))
        })
        .collect()
}

/// Decides each lane of `conclave` for a change whose files are `changed` (paths
/// relative to `root`, deleted files left out), under `selection`. `locate` finds a
/// program: `Some(None)` on `PATH`, `Some(Some(path))` only in the tool directory,
/// `None` nowhere ([`locate_program`]). Fails when the selection names no lane.
pub fn plan_lanes(
    conclave: &CheckedConclave,
    changed: &[String],
    selection: &AnalyzerSelection,
    locate: impl Fn(&str) -> Option<Option<PathBuf>>,
) -> Result<Vec<AnalyzerLane>, UnknownAnalyzer> {
    let nodes = analyzer_nodes(conclave);
    if let AnalyzerSelection::Only(names) = selection
        && let Some(name) = names.iter().find(|name| !nodes.iter().any(|(n, _, _)| &n.id == *name))
    {
        let known: Vec<&str> = nodes.iter().map(|(n, _, _)| n.id.as_str()).collect();
        return Err(UnknownAnalyzer {
            name: name.clone(),
            conclave: conclave.conclave().id.clone(),
            known: if known.is_empty() { "none".to_string() } else { known.join(", ") },
        });
    }
    Ok(nodes
        .into_iter()
        .map(|(node, command, analyzer)| {
            let found = locate(command.program());
            let files = matching_files(analyzer, changed);
            let off = match selection {
                AnalyzerSelection::None => Some(LaneOff::NotSelected),
                AnalyzerSelection::Only(names) if !names.contains(&node.id) => Some(LaneOff::NotSelected),
                AnalyzerSelection::Default if !analyzer.default => Some(LaneOff::OffByDefault),
                _ if files.is_empty() => Some(LaneOff::NoMatchingFiles),
                _ if found.is_none() => Some(LaneOff::NotInstalled),
                _ => None,
            };
            AnalyzerLane {
                name: node.id.clone(),
                program: command.program().to_string(),
                installed: found.is_some(),
                default: analyzer.default,
                file_count: files.len(),
                files,
                off,
                path: found.flatten(),
                rules: None,
                failed: None,
                raised: 0,
                added: 0,
            }
        })
        .collect())
}

/// Turns off every lane that would run, saying the sandbox is unavailable, when it
/// is (`confinable` false): a review with a base does not run the change's code
/// unconfined unless the caller allowed it.
pub fn require_sandbox(lanes: &mut [AnalyzerLane], confinable: bool) {
    if confinable {
        return;
    }
    for lane in lanes.iter_mut().filter(|lane| lane.runs()) {
        lane.off = Some(LaneOff::SandboxUnavailable);
    }
}

/// Puts Conclave's Semgrep rules in place for every running lane whose `argv` names
/// `{semgrep-rules}` (`install` writes them once and says where), or turns the lane
/// off as [`LaneOff::RulesUnavailable`] when that fails.
pub fn provide_rules(
    conclave: &CheckedConclave,
    lanes: &mut [AnalyzerLane],
    install: impl Fn() -> Result<PathBuf, String>,
) {
    let mut installed: Option<Result<PathBuf, String>> = None;
    for lane in lanes.iter_mut().filter(|lane| lane.runs()) {
        let command = conclave.conclave().node(&lane.name).and_then(|n| n.command.as_ref());
        if !command.is_some_and(|c| c.argv.iter().any(|a| a == SEMGREP_RULES_PLACEHOLDER)) {
            continue;
        }
        match installed.get_or_insert_with(&install) {
            Ok(dir) => lane.rules = Some(dir.clone()),
            Err(error) => {
                tracing::warn!(lane = %lane.name, "{error}");
                lane.off = Some(LaneOff::RulesUnavailable);
            }
        }
    }
}

/// Writes Conclave's Semgrep rules into the tool directory ([`provide_rules`]'s
/// `install` for a review). Blocking.
pub fn install_rules() -> Result<PathBuf, String> {
    let tools = tool_dir().ok_or("there is no tool directory: set CONCLAVE_TOOLS_DIR, XDG_CACHE_HOME or HOME")?;
    semgrep_rules::install(&tools).map_err(|e| e.to_string())
}

/// Leaves the lanes that do not run out of `conclave`, and gives each running lane
/// its program's path, its files (for `{files}`), `base` (for `{base}`) and the
/// directory of Conclave's Semgrep rules (for `{semgrep-rules}`, which its sandbox
/// may then read).
pub fn apply_lanes(conclave: &mut CheckedConclave, lanes: &[AnalyzerLane], base: &str) {
    for lane in lanes {
        if !lane.runs() {
            conclave.remove_node(&lane.name);
            continue;
        }
        let Some(command) = conclave.conclave().node(&lane.name).and_then(|n| n.command.as_ref()) else { continue };
        let rules = lane.rules.as_ref().map(|dir| dir.display().to_string());
        let mut argv = Vec::with_capacity(command.argv.len() + lane.files.len());
        for (i, arg) in command.argv.iter().enumerate() {
            match arg.as_str() {
                FILES_PLACEHOLDER => argv.extend(lane.files.iter().map(|f| as_argument(f))),
                BASE_PLACEHOLDER => argv.push(base.to_string()),
                SEMGREP_RULES_PLACEHOLDER => argv.push(rules.clone().unwrap_or_else(|| arg.clone())),
                _ if i == 0 => argv.push(lane.path.as_ref().map_or_else(|| arg.clone(), |p| p.display().to_string())),
                _ => argv.push(arg.clone()),
            }
        }
        conclave.set_argv(&lane.name, argv);
        if let Some(rules) = rules {
            conclave.allow_reading(&lane.name, rules);
        }
    }
}

/// A repository path as a program's argument: one that starts with `-` (a file the
/// change added may be named anything) is written `./-name`, so that no program takes
/// it for an option.
fn as_argument(path: &str) -> String {
    if path.starts_with('-') { format!("./{path}") } else { path.to_string() }
}

/// The changed files a lane reads: those a glob of its `files` matches, whole or by
/// file name; every one when it lists none. Globs that do not parse match nothing
/// (catalog validation reports them).
fn matching_files(analyzer: &AnalyzerConfig, changed: &[String]) -> Vec<String> {
    if analyzer.files.is_empty() {
        return changed.to_vec();
    }
    let mut builder = GlobSetBuilder::new();
    for glob in analyzer.files.iter().filter_map(|g| Glob::new(g).ok()) {
        builder.add(glob);
    }
    let set = builder.build().unwrap_or_else(|_| GlobSet::empty());
    changed
        .iter()
        .filter(|path| {
            let name = Path::new(path.as_str()).file_name().map(Path::new);
            set.is_match(path.as_str()) || name.is_some_and(|n| set.is_match(n))
        })
        .cloned()
        .collect()
}

/// Conclave's tool directory: `CONCLAVE_TOOLS_DIR`, else `conclave/bin` in the
/// user's cache (`XDG_CACHE_HOME`, else `~/.cache`).
pub fn tool_dir() -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os("CONCLAVE_TOOLS_DIR").filter(|d| !d.is_empty()) {
        return Some(PathBuf::from(dir));
    }
    let cache = std::env::var_os("XDG_CACHE_HOME")
        .filter(|d| !d.is_empty())
        .map(PathBuf::from)
        .or_else(|| Some(PathBuf::from(std::env::var_os("HOME")?).join(".cache")))?;
    Some(cache.join("conclave").join("bin"))
}

/// The `conclave` executable that runs Conclave's own lanes, when the process named
/// one ([`use_conclave_executable`]).
static CONCLAVE_EXECUTABLE: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();

/// Names the `conclave` executable that runs Conclave's own analyzer lanes
/// (`conclave scan …`): the `conclave` binary names itself when it starts. A process
/// that embeds the review pipeline without naming one finds `conclave` as it finds
/// any program. The first name given holds.
pub fn use_conclave_executable(path: PathBuf) {
    let _ = CONCLAVE_EXECUTABLE.set(path);
}

/// Where `program` is: `Some(None)` on `PATH` (or a path that exists),
/// `Some(Some(path))` only in the tool directory (or, for `conclave`, the executable
/// the process named), `None` nowhere. It reads the file
/// system: call it on a blocking thread.
pub fn locate_program(program: &str) -> Option<Option<PathBuf>> {
    // Conclave's own lanes (`invisible-text`) run the `conclave` executable this
    // process named, wherever it is; else one found as any program is.
    if let (true, Some(own)) = (program == "conclave", CONCLAVE_EXECUTABLE.get()) {
        return Some(Some(own.clone()));
    }
    let executable = |path: &Path| path.is_file();
    if program.contains('/') {
        return executable(Path::new(program)).then_some(None);
    }
    let on_path = std::env::var_os("PATH")
        .is_some_and(|paths| std::env::split_paths(&paths).any(|dir| executable(&dir.join(program))));
    if on_path {
        return Some(None);
    }
    let in_tools = tool_dir()?.join(program);
    executable(&in_tools).then_some(Some(in_tools))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_selection_is_none_or_a_list_of_names() {
        assert_eq!(AnalyzerSelection::parse("none"), AnalyzerSelection::None);
        assert_eq!(
            AnalyzerSelection::parse("shellcheck, ruff,"),
            AnalyzerSelection::Only(vec!["shellcheck".into(), "ruff".into()])
        );
    }

    #[test]
    fn a_file_named_like_an_option_is_passed_as_a_path() {
        assert_eq!(as_argument("-rf.sh"), "./-rf.sh");
        assert_eq!(as_argument("scripts/-x.sh"), "scripts/-x.sh");
        assert_eq!(as_argument("a.sh"), "a.sh");
    }

    #[test]
    fn globs_match_whole_paths_or_file_names() {
        let analyzer = AnalyzerConfig::new(vec!["*.sh".into(), "scripts/**/*.bash".into()]);
        let changed: Vec<String> =
            ["a.sh", "scripts/lib/x.sh", "scripts/lib/y.bash", "y.bash", "main.rs"].map(String::from).to_vec();
        assert_eq!(matching_files(&analyzer, &changed), ["a.sh", "scripts/lib/x.sh", "scripts/lib/y.bash"]);
        let every = AnalyzerConfig::new(Vec::new());
        assert_eq!(matching_files(&every, &changed).len(), 5);
    }

    #[test]
    fn without_a_sandbox_the_lanes_that_would_run_are_off_and_say_why() {
        let lane = |name: &str, off: Option<LaneOff>| AnalyzerLane {
            name: name.into(),
            program: name.into(),
            installed: true,
            default: true,
            files: vec!["a.py".into()],
            file_count: 1,
            off,
            path: None,
            rules: None,
            failed: None,
            raised: 0,
            added: 0,
        };
        let mut lanes = vec![lane("ruff", None), lane("semgrep", Some(LaneOff::NotSelected))];
        require_sandbox(&mut lanes, true);
        assert!(lanes[0].runs(), "a confinable machine runs the lane");
        require_sandbox(&mut lanes, false);
        assert_eq!(lanes[0].off, Some(LaneOff::SandboxUnavailable));
        assert_eq!(lanes[1].off, Some(LaneOff::NotSelected), "a lane already off keeps its reason");
        assert_eq!(
            lanes[0].why_off().as_deref(),
            Some("skipped: the sandbox is unavailable here, and the change's code does not run unconfined")
        );
        assert_eq!(
            serde_json::to_value(LaneOff::SandboxUnavailable).ok(),
            Some(serde_json::json!("sandbox_unavailable"))
        );
    }
}
