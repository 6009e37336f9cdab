//! Budgets in validation: a conclave's `settings.budget` and an agent's `max_cost`
//! must be amounts the engine can hold a run to; each problem names the JSON path
//! and what to give instead.

use conclave_catalog::{CatalogContext, check_conclave_text};
use conclave_schema::SchemaCatalog;
use serde_json::{Value, json};

/// A catalog context with the OpenAI provider and nothing else.
pub(crate) fn context() -> CatalogContext {
    CatalogContext {
        schemas: SchemaCatalog::with_roots(vec![]),
        providers: vec!["openai".into()],
        tools: Vec::new(),
        programs: None,
        catalog: None,
    }
}

fn conclave(budget: Value, max_cost: Value) -> String {
    json!({"version": 1, "id": "b", "name": "B", "settings": {"budget": budget},
           "nodes": [{"id": "in", "kind": "trigger"},
                     {"id": "a", "kind": "agent", "agent": {"provider": "openai", "model": "gpt-4.1", "max_cost": max_cost}},
                     {"id": "out", "kind": "output"}],
           "edges": [{"from": "in", "to": "a"}, {"from": "a", "to": "out"}]})
    .to_string()
}

fn errors(text: &str) -> Vec<(String, String, String, String)> {
    check_conclave_text("conclaves/b.conclave.json", text, &context())
        .iter()
        .filter(|d| d.is_error())
        .map(|d| (d.code.to_string(), d.path.clone(), d.message.clone(), d.help.clone().unwrap_or_default()))
        .collect()
}

#[test]
fn a_valid_budget_and_max_cost_pass() {
    let text = conclave(json!({"max_cost_usd": 0.5, "max_tokens": 200000}), json!(0.1));
    assert_eq!(errors(&text), Vec::<(String, String, String, String)>::new());
}

#[test]
fn negative_limits_are_errors_naming_the_path_and_what_to_give() {
    let cost = "`max_cost_usd` is -1: an amount of US dollars from 0, such as 0.5";
    let cost_help = "give an amount of US dollars from 0, such as 0.5, or remove `max_cost_usd` for no limit";
    let tokens = "`max_tokens` is 0: a whole number of tokens from 1";
    let tokens_help = "give a whole number of tokens from 1, or remove `max_tokens` for no limit";
    let agent = "`max_cost` is -0.5: an amount of US dollars from 0, such as 0.5";
    let agent_help = "give an amount of US dollars from 0, such as 0.5, or remove `max_cost` for no limit";
    let error = |path: &str, message: &str, help: &str| {
        ("budget".to_string(), path.to_string(), message.to_string(), help.to_string())
    };
    assert_eq!(
        errors(&conclave(json!({"max_cost_usd": -1, "max_tokens": 100}), json!(-0.5))),
        [error("/settings/budget/max_cost_usd", cost, cost_help), error("/nodes/1/agent/max_cost", agent, agent_help)]
    );
    assert_eq!(
        errors(&conclave(json!({"max_tokens": 0}), json!(1))),
        [error("/settings/budget/max_tokens", tokens, tokens_help)]
    );
}
