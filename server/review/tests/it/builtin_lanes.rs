//! The analyzer lanes of the built-in review conclaves, as files say them: Ruff with
//! its security rules and the map that keeps every lint below blocker (the same map a
//! Ruff lane without one gets), Semgrep on Conclave's own rules with no network, and
//! a severity map on every lane, so the table of docs/analyzers.md is what the files do.

use conclave_review::pipeline::BUILTIN_REVIEWS;
use conclave_shared::command::SEMGREP_RULES_PLACEHOLDER;
use conclave_shared::{CommandConfig, Conclave, SeverityMap};

fn lane<'a>(conclave: &'a Conclave, id: &str) -> &'a CommandConfig {
    conclave.node(id).and_then(|n| n.command.as_ref()).unwrap_or_else(|| panic!("{}: no lane {id}", conclave.id))
}

#[test]
fn ruff_selects_its_security_rules_and_grades_no_lint_a_blocker() {
    for (id, text) in BUILTIN_REVIEWS {
        let conclave: Conclave = serde_json::from_str(text).expect("a conclave");
        let ruff = lane(&conclave, "ruff");
        assert!(ruff.argv.windows(2).any(|w| w == ["--extend-select", "S"]), "{id}: {:?}", ruff.argv);
        let map = ruff.analyzer.as_ref().and_then(|a| a.severity.clone());
        assert_eq!(map, Some(SeverityMap::ruff()), "{id}: the lane writes out the map a Ruff lane gets anyway");
        let graded = map.unwrap_or_default();
        for rule in ["F401", "I001", "E501", "S602", "SIM118", "invalid-syntax"] {
            let severity = graded.grade(Some(rule), "error", None, conclave_shared::Severity::Blocker);
            assert_ne!(severity, conclave_shared::Severity::Blocker, "{id}: {rule}");
        }
    }
}

#[test]
fn semgrep_runs_conclaves_rules_offline_and_every_lane_has_a_map() {
    for (id, text) in BUILTIN_REVIEWS {
        let conclave: Conclave = serde_json::from_str(text).expect("a conclave");
        let semgrep = lane(&conclave, "semgrep");
        let config = semgrep.argv.iter().position(|a| a == "--config").and_then(|i| semgrep.argv.get(i + 1));
        assert_eq!(config.map(String::as_str), Some(SEMGREP_RULES_PLACEHOLDER), "{id}: {:?}", semgrep.argv);
        for flag in ["--no-rewrite-rule-ids", "--metrics", "--disable-version-check"] {
            assert!(semgrep.argv.iter().any(|a| a == flag), "{id}: {flag} missing from {:?}", semgrep.argv);
        }
        assert!(!semgrep.sandbox.as_ref().is_some_and(|s| s.network), "{id}: the semgrep lane opens no network");
        let lanes = conclave.nodes.iter().filter_map(|n| Some((&n.id, n.command.as_ref()?.analyzer.as_ref()?)));
        for (name, analyzer) in lanes {
            assert!(analyzer.severity.is_some(), "{id}: lane {name} has no severity map");
        }
    }
}
