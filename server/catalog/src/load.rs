//! Loading a conclave for a run: the file is read and parsed once, checked, and
//! handed out as a [`CheckedConclave`] with the output schema of each agent already
//! resolved. The engine plans from that and never checks the graph again.

use conclave_shared::{Conclave, Diagnostic, Subject};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::checks::{CatalogContext, Checked, check_conclave_value, malformed};
use crate::display;
pub use crate::ids::is_valid_id;
use crate::ids::list_ids;
use crate::output_schema::AgentOutput;

/// A conclave that passed every check, with what checking resolved.
#[derive(Debug, Clone)]
pub struct CheckedConclave {
    conclave: Conclave,
    outputs: BTreeMap<String, AgentOutput>,
    diagnostics: Vec<Diagnostic>,
    /// The conclaves its `conclave` nodes run, checked, by id.
    children: BTreeMap<String, Arc<CheckedConclave>>,
}

/// Why a conclave could not be loaded for a run.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// Neither a file nor a known id.
    #[error("no conclave `{given}`: it is neither a file nor an id in {dir}/ (ids there: {known})")]
    NotFound {
        /// What the user gave.
        given: String,
        /// The catalog directory searched.
        dir: String,
        /// Ids found there.
        known: String,
    },
    /// The file has errors.
    #[error("{file} has {} error(s)", .diagnostics.iter().filter(|d| d.is_error()).count())]
    Invalid {
        /// The file.
        file: String,
        /// All diagnostics, errors and warnings.
        diagnostics: Vec<Diagnostic>,
    },
}

impl CheckedConclave {
    /// The conclave.
    pub fn conclave(&self) -> &Conclave {
        &self.conclave
    }

    /// The output schema of agent `node_id`, when it has one.
    pub fn output(&self, node_id: &str) -> Option<&AgentOutput> {
        self.outputs.get(node_id)
    }

    /// The checked conclave `id` that one of its `conclave` nodes runs.
    pub fn child(&self, id: &str) -> Option<&Arc<CheckedConclave>> {
        self.children.get(id)
    }

    /// The warnings and notes checking found (a checked conclave has no errors).
    pub fn diagnostics(&self) -> &[Diagnostic] {
        &self.diagnostics
    }

    /// The agents whose output is findings-shaped, in conclave order.
    pub fn findings_agents(&self) -> Vec<String> {
        self.conclave
            .nodes
            .iter()
            .filter(|n| self.outputs.get(&n.id).is_some_and(|o| o.findings_field.is_some()))
            .map(|n| n.id.clone())
            .collect()
    }

    /// Moves agent `node_id` onto `provider` and `model` (for `--provider` and the
    /// local fallback). The caller has checked that the provider is known; nothing
    /// else about the conclave changes, so it stays checked.
    pub fn reassign(&mut self, node_id: &str, provider: &str, model: &str) {
        if let Some(agent) = self.conclave.nodes.iter_mut().find(|n| n.id == node_id).and_then(|n| n.agent.as_mut()) {
            agent.provider = provider.to_string();
            agent.model = model.to_string();
        }
    }
}

impl CheckedConclave {
    /// Leaves out node `node_id` and its edges: a review's analyzer lane that does not
    /// run. The nodes it fed keep their other inputs; the review removes only lanes
    /// that feed nodes with agents upstream as well, so the conclave stays checked.
    pub fn remove_node(&mut self, node_id: &str) {
        self.conclave.nodes.retain(|n| n.id != node_id);
        self.conclave.edges.retain(|e| e.from != node_id && e.to != node_id);
        self.outputs.remove(node_id);
    }

    /// Sets the `argv` of command node `node_id` (a review puts in an analyzer's
    /// files and where its program is installed); the program stays the one checked.
    pub fn set_argv(&mut self, node_id: &str, argv: Vec<String>) {
        if let Some(command) = self.conclave.nodes.iter_mut().find(|n| n.id == node_id).and_then(|n| n.command.as_mut())
        {
            command.argv = argv;
        }
    }

    /// Lets command node `node_id` read `path` too (a review's lane reads the rules
    /// Conclave wrote for it): one more entry of its sandbox's `read`.
    pub fn allow_reading(&mut self, node_id: &str, path: String) {
        if let Some(command) = self.conclave.nodes.iter_mut().find(|n| n.id == node_id).and_then(|n| n.command.as_mut())
        {
            command.sandbox.get_or_insert_with(Default::default).read.push(path);
        }
    }
}

/// Checks a conclave already in memory (built in code, or sent to the API).
pub fn check_conclave(file: &str, conclave: Conclave, ctx: &CatalogContext) -> Result<CheckedConclave, LoadError> {
    let value = serde_json::to_value(&conclave).unwrap_or(Value::Null);
    let checked = check_conclave_value(file, &value, ctx);
    accept(file, conclave, checked, ctx)
}

/// Parses and checks the text of a conclave file; `file` labels the diagnostics.
pub fn check_text(file: &str, text: &str, ctx: &CatalogContext) -> Result<CheckedConclave, LoadError> {
    let invalid = |diagnostics| LoadError::Invalid { file: file.to_string(), diagnostics };
    let value: Value = serde_json::from_str(text).map_err(|e| invalid(vec![malformed(file, &e)]))?;
    let checked = check_conclave_value(file, &value, ctx);
    if checked.diagnostics.iter().any(Diagnostic::is_error) {
        return Err(invalid(checked.diagnostics));
    }
    let conclave: Conclave = serde_json::from_value(value).map_err(|e| {
        let mut d = Diagnostic::error("format", Subject::File, "", e.to_string());
        d.file = file.to_string();
        invalid(vec![d])
    })?;
    accept(file, conclave, checked, ctx)
}

/// A conclave whose checks found no error, with the conclaves its `conclave` nodes
/// run, each loaded and checked from the catalog (the checks found no cycle).
fn accept(
    file: &str,
    conclave: Conclave,
    checked: Checked,
    ctx: &CatalogContext,
) -> Result<CheckedConclave, LoadError> {
    let Checked { diagnostics, outputs } = checked;
    if diagnostics.iter().any(Diagnostic::is_error) {
        return Err(LoadError::Invalid { file: file.to_string(), diagnostics });
    }
    let mut children = BTreeMap::new();
    if let Some(dir) = &ctx.catalog {
        for id in conclave.children() {
            children.insert(id.to_string(), Arc::new(load_by_id(id, dir, ctx)?));
        }
    }
    Ok(CheckedConclave { conclave, outputs, diagnostics, children })
}

/// Finds a conclave by id in `catalog_dir` only (never as a path) and checks it.
pub fn load_by_id(id: &str, catalog_dir: &Path, ctx: &CatalogContext) -> Result<CheckedConclave, LoadError> {
    let candidate = catalog_dir.join(format!("{id}.conclave.json"));
    if !is_valid_id(id) || !candidate.is_file() {
        return Err(LoadError::NotFound {
            given: id.to_string(),
            dir: display(catalog_dir),
            known: list_ids(catalog_dir).join(", "),
        });
    }
    load_conclave(&candidate.display().to_string(), catalog_dir, ctx)
}

/// Finds a conclave by path, or by id in `catalog_dir`, and checks it.
pub fn load_conclave(given: &str, catalog_dir: &Path, ctx: &CatalogContext) -> Result<CheckedConclave, LoadError> {
    let as_path = PathBuf::from(given);
    let path = if as_path.is_file() {
        as_path
    } else {
        let candidate = catalog_dir.join(format!("{given}.conclave.json"));
        if !candidate.is_file() {
            return Err(LoadError::NotFound {
                given: given.to_string(),
                dir: display(catalog_dir),
                known: list_ids(catalog_dir).join(", "),
            });
        }
        candidate
    };
    let file = display(&path);
    let text = std::fs::read_to_string(&path).map_err(|e| {
        let mut d = Diagnostic::error("unreadable", Subject::File, "", format!("cannot read the file: {e}"));
        d.file = file.clone();
        LoadError::Invalid { file: file.clone(), diagnostics: vec![d] }
    })?;
    check_text(&file, &text, ctx)
}
