//! What a reviewer's context window allows: how many diff bytes one call of a
//! reviewer takes (a large change is split into parts of that size), and how large
//! the change's impact may be in every reviewer's request. Both count a byte as a
//! token, which is conservative, and both leave a model whose window is unknown to
//! the configured caps.

use conclave_catalog::CheckedConclave;
use conclave_shared::ImpactSettings;

use crate::diff::Change;
use crate::reviewers::sampled_agents;

/// The most diff bytes one call of a reviewer may take: `max_diff_bytes`, or less
/// when a reviewer's model has a smaller context window than its prompt without the
/// diff, the diff and its answer (`max_tokens`) need. A token is at least one byte,
/// so a window of N tokens holds at least N bytes: counting bytes as tokens is
/// conservative. A model whose window is unknown leaves `max_diff_bytes` alone. It
/// reads the pricing file of the configuration directory: call it on a blocking
/// thread, as [`prepare_change`] is. A
/// part is never made smaller than `MIN_PART_BYTES` for a model (a small window,
/// such as the embedded model's, would leave nothing at a byte per token): its
/// provider says when a call does not fit, as it did before parts.
pub(crate) fn part_bytes(conclave: &CheckedConclave, change: &Change, max_diff_bytes: usize) -> usize {
    /// What the request holds besides the prompts and the input: tool specs, the
    /// output contract's wording, message framing.
    const ALLOWANCE: usize = 2 * 1024;
    /// The smallest part a model's window makes.
    const MIN_PART_BYTES: usize = 8 * 1024;
    // The windows the operator's pricing file gives, over the built-in ones.
    let prices = conclave_core::PriceTable::load(conclave_schema::refs::user_config_dir().as_deref());
    let shared = conclave.conclave().settings.shared_prompt.as_ref().map_or(0, String::len);
    let mut input = change.run_input();
    if let Some(object) = input.as_object_mut() {
        object.remove("diff");
    }
    // The impact joins the input after the split, at most this large.
    let impact = impact_settings(conclave, &prices);
    let impact_bytes = if impact.is_enabled() { impact.bytes() } else { 0 };
    let input_bytes = serde_json::to_string(&input).map_or(0, |s| s.len()) + impact_bytes;
    sampled_agents(conclave)
        .iter()
        .filter_map(|id| {
            let agent = conclave.conclave().node(id)?.agent.as_ref()?;
            let window = prices.context_window(&agent.provider, &agent.model)? as usize;
            let schema = conclave.output(id).map_or(0, |o| o.schema.to_string().len());
            let answer = agent.max_tokens.unwrap_or(4096) as usize;
            let prompt = agent.system_prompt.len() + shared + input_bytes + schema + ALLOWANCE;
            Some(window.saturating_sub(prompt + answer).max(MIN_PART_BYTES))
        })
        .fold(max_diff_bytes, usize::min)
        .max(1)
}

/// The conclave's `settings.impact`, its byte cap lowered to an eighth of the
/// smallest context window among the reviewers whose window is known (a byte per
/// token, as parts count), so that a small model (the embedded one holds 8,192
/// tokens) keeps room for the diff: the impact is in every reviewer's request.
pub(crate) fn impact_settings(conclave: &CheckedConclave, prices: &conclave_core::PriceTable) -> ImpactSettings {
    let settings = conclave.conclave().settings.impact.unwrap_or_default();
    let window = sampled_agents(conclave)
        .iter()
        .filter_map(|id| {
            let agent = conclave.conclave().node(id)?.agent.as_ref()?;
            prices.context_window(&agent.provider, &agent.model)
        })
        .min();
    match window {
        Some(window) if (window / 8) < settings.bytes() as u64 => {
            ImpactSettings { max_bytes: Some((window / 8) as u32), ..settings }
        }
        _ => settings,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use conclave_catalog::{CatalogContext, check_text};
    use conclave_core::PriceTable;
    use conclave_schema::SchemaCatalog;
    use serde_json::json;

    /// Two findings-shaped reviewers before a Writer, on `acme`'s models `small` and
    /// `large`, with `settings.impact` as given.
    fn conclave(impact: serde_json::Value) -> CheckedConclave {
        let agent = |id: &str, model: &str| {
            json!({"id": id, "kind": "agent", "label": id, "position": {"x": 0, "y": 0}, "agent": {
                "provider": "acme", "model": model, "system_prompt": "Review.",
                "output_schema_ref": "review.findings.v1"}})
        };
        let text = json!({"version": 1, "id": "w", "name": "W", "settings": {"impact": impact}, "nodes": [
            {"id": "change", "kind": "trigger", "label": "Change", "position": {"x": 0, "y": 0}},
            agent("a", "small"), agent("b", "large"), agent("writer", "large"),
            {"id": "out", "kind": "output", "label": "Out", "position": {"x": 0, "y": 0}}
        ], "edges": [
            {"from": "change", "to": "a"}, {"from": "change", "to": "b"},
            {"from": "a", "to": "writer"}, {"from": "b", "to": "writer"}, {"from": "writer", "to": "out"}
        ]})
        .to_string();
        let context = CatalogContext {
            schemas: SchemaCatalog::with_roots(vec![]),
            providers: vec!["acme".into()],
            tools: Vec::new(),
            programs: None,
            catalog: None,
        };
        check_text("w.conclave.json", &text, &context).expect("a valid conclave")
    }

    fn prices(small: u64) -> (tempfile::TempDir, PriceTable) {
        let dir = tempfile::tempdir().expect("tempdir");
        let table = json!({"acme": {"small": {"context": small}, "large": {"context": 200_000}}});
        std::fs::write(dir.path().join("pricing.json"), table.to_string()).expect("write");
        let prices = PriceTable::load(Some(dir.path()));
        (dir, prices)
    }

    #[test]
    fn the_impact_takes_at_most_an_eighth_of_the_smallest_reviewer_window() {
        // The embedded model's window: 8,192 tokens give the impact 1,024 bytes.
        let (_dir, small) = prices(8_192);
        assert_eq!(impact_settings(&conclave(json!({})), &small).bytes(), 1_024);
        // A window whose eighth is over the cap leaves the cap alone, and so does a
        // lower cap the conclave sets.
        let (_dir, large) = prices(128_000);
        assert_eq!(impact_settings(&conclave(json!({})), &large).bytes(), 8_192);
        assert_eq!(impact_settings(&conclave(json!({"max_bytes": 512})), &small).bytes(), 512);
        // Unknown windows leave it alone; the setting's other fields are kept.
        let unknown = PriceTable::load(None);
        let settings = impact_settings(&conclave(json!({"max_entries": 3})), &unknown);
        assert_eq!((settings.bytes(), settings.entries()), (8_192, 3));
        assert!(!impact_settings(&conclave(json!({"enabled": false})), &small).is_enabled());
    }
}
