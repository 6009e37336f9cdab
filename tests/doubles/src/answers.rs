//! A provider that answers each agent of an eval case from hand-written answers, for
//! writing an eval dataset's recordings (`evals/*/answers/<case>.json`): it stands in
//! for a real provider under that provider's name and capabilities, so the requests
//! the engine makes of it are exactly those it would make of the real one, and
//! `--record` keeps them with these answers.
//!
//! The case is the name of the directory the agent works in (an eval checks each case
//! out at `<scratch>/<case id>`); the answer is the case file's entry for the node.
//! A Writer (an agent with findings-shaped upstream agents) answers only the findings
//! whose `raisedBy` lane ran upstream, so the same answers serve a conclave with a
//! lane fewer. Usage is counted from the text: a quarter of a token per character.

use async_trait::async_trait;
use conclave_core::{AgentReply, AgentRequest, Capabilities, Provider, ProviderError, StopReason, StreamSink};
use conclave_shared::Usage;
use serde_json::{Value, json};
use std::path::PathBuf;

/// Answers from `<dir>/<case>.json`, under another provider's name.
#[derive(Debug)]
pub struct AnswersProvider {
    name: String,
    capabilities: Capabilities,
    caches_prompts: bool,
    default_model: String,
    dir: PathBuf,
}

impl AnswersProvider {
    /// Stands in for `real`, under its name and with what it can do.
    pub fn standing_in_for(real: &dyn Provider, dir: PathBuf) -> AnswersProvider {
        AnswersProvider {
            name: real.name().into(),
            capabilities: real.capabilities(),
            caches_prompts: real.caches_prompts(),
            default_model: real.default_model().into(),
            dir,
        }
    }

    fn answer(&self, request: &AgentRequest) -> Result<Value, String> {
        let case = request
            .workdir
            .as_ref()
            .and_then(|w| w.file_name())
            .and_then(|n| n.to_str())
            .ok_or("the request names no working directory, so no case")?;
        let path = self.dir.join(format!("{case}.json"));
        let text = std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        let answers: Value = serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))?;
        let mut doc = answers
            .get(&request.node_id)
            .cloned()
            .ok_or_else(|| format!("{} has no answer for node `{}`", path.display(), request.node_id))?;
        let upstream: Vec<&str> = request
            .input
            .get("upstream")
            .and_then(Value::as_object)
            .map(|u| u.keys().map(String::as_str).collect())
            .unwrap_or_default();
        if !upstream.is_empty() {
            keep_lanes(&mut doc, &upstream);
        }
        Ok(doc)
    }
}

/// Keeps the findings raised by one of `lanes`, and counts them again.
fn keep_lanes(doc: &mut Value, lanes: &[&str]) {
    let Some(findings) = doc.get_mut("findings").and_then(Value::as_array_mut) else { return };
    findings.retain(|f| f.get("raisedBy").and_then(Value::as_str).is_none_or(|lane| lanes.contains(&lane)));
    let mut counts = json!({"blocker": 0, "major": 0, "minor": 0, "nit": 0});
    for f in findings.iter() {
        if let Some(n) = f.get("severity").and_then(Value::as_str).and_then(|s| counts.get_mut(s)) {
            *n = json!(n.as_u64().unwrap_or(0) + 1);
        }
    }
    doc["counts"] = counts;
}

#[async_trait]
impl Provider for AnswersProvider {
    fn name(&self) -> &str {
        &self.name
    }

    fn capabilities(&self) -> Capabilities {
        self.capabilities
    }

    fn caches_prompts(&self) -> bool {
        self.caches_prompts
    }

    fn default_model(&self) -> &str {
        &self.default_model
    }

    async fn call(&self, request: &AgentRequest, stream: &dyn StreamSink) -> Result<AgentReply, ProviderError> {
        let doc = self.answer(request).map_err(ProviderError::BadRequest)?;
        let text = doc.to_string();
        stream.text(&text).await;
        let asked: usize =
            request.system_prompt.len() + request.messages.iter().map(|m| format!("{m:?}").len()).sum::<usize>();
        let usage = Usage::tokens((asked / 4) as u64, (text.len() / 4) as u64);
        let json = request.output_schema.is_some().then_some(doc);
        Ok(AgentReply { text, json, tool_calls: Vec::new(), usage, stop: StopReason::EndTurn })
    }
}
