//! A Writer's input fitted to its provider's context window, end to end on the engine
//! with the review policy: a fake provider that states a window and counts a token per
//! four bytes. Too large, the reviewers' findings are cut in the stated order (the
//! longest description shortened step by step, then the nits left out), the Writer is
//! told, and the report says what was cut; cut past its blockers, the review is
//! degraded; with room, nothing changes.

use conclave_core::{Capabilities, ProviderRegistry, RunStore};
use conclave_doubles::{FakeProvider, FakeStep, MemoryStore};
use conclave_engine::fit::{NOTE_ROOM, answer_room};
use conclave_engine::{Engine, EngineConfig, RunOptions};
use conclave_review::input_fit::DESCRIPTION_STEPS;
use conclave_review::report::build_report;
use conclave_review::{ReportFormat, ReviewPolicy};
use conclave_shared::{
    AgentConfig, Conclave, Edge, EventKind, InputCut, InputFit, Node, NodeKind, RunStatus, Settings, Severity,
};
use conclave_testkit::checked;
use serde_json::{Value, json};
use std::sync::Arc;

/// The Writer's `max_tokens`: the room kept for its answer in these windows.
const WRITER_TOKENS: u32 = 300;
/// How many nits the security reviewer raises.
const NITS: usize = 30;

fn agent(id: &str, max_tokens: Option<u32>) -> Node {
    let mut agent = AgentConfig::new("fake");
    agent.output_schema_ref = Some("review.findings.v1".into());
    agent.max_tokens = max_tokens;
    Node { agent: Some(agent), ..Node::new(id, NodeKind::Agent) }
}

fn conclave() -> Conclave {
    let edge = |from: &str, to: &str| Edge { from: from.into(), to: to.into(), case: None };
    Conclave {
        version: 1,
        id: "fit".into(),
        name: "Fit".into(),
        description: String::new(),
        settings: Settings::default(),
        nodes: vec![
            Node::new("change", NodeKind::Trigger),
            agent("security", None),
            agent("correctness", None),
            agent("writer", Some(WRITER_TOKENS)),
            Node::new("report", NodeKind::Output),
        ],
        edges: vec![
            edge("change", "security"),
            edge("change", "correctness"),
            edge("security", "writer"),
            edge("correctness", "writer"),
            edge("writer", "report"),
        ],
    }
}

fn finding(severity: &str, line: u64, description: &str, by: &str) -> Value {
    json!({"severity": severity, "file": "src/upload.rs", "line": line, "description": description, "raisedBy": by})
}

/// Security: a blocker with a 900-character description and 30 short nits;
/// correctness: a nit where security put its blocker (a contradiction).
fn answers() -> (Value, Value) {
    let mut security = vec![finding("blocker", 3, &"the path comes from the request ".repeat(28), "security")];
    security.extend((0..NITS as u64).map(|i| finding("nit", 100 + i, "name this better", "security")));
    let security = json!({"findings": security, "counts": {"blocker": 1, "major": 0, "minor": 0, "nit": NITS}});
    let correctness = json!({
        "findings": [finding("nit", 3, "a style matter", "correctness")],
        "counts": {"blocker": 0, "major": 0, "minor": 0, "nit": 1}
    });
    (security, correctness)
}

/// Runs the review on a fake with `window`; the Writer's request, the fit recorded
/// (if any) and the report in Markdown and JSON.
async fn review(window: u32) -> (conclave_core::AgentRequest, Option<InputFit>, String, Value) {
    let capabilities = Capabilities { native_schema: None, tools: true, context_window: Some(window) };
    let fake = Arc::new(FakeProvider::new("fake").with_capabilities(capabilities));
    let (security, correctness) = answers();
    fake.script("security", [FakeStep::json(security)]);
    fake.script("correctness", [FakeStep::json(correctness)]);
    let merged = json!({"findings": [finding("blocker", 3, "path traversal", "security")],
        "counts": {"blocker": 1, "major": 0, "minor": 0, "nit": 0}});
    fake.script("writer", [FakeStep::json(merged)]);
    let mut providers = ProviderRegistry::default();
    providers.register(fake.clone());
    let store = Arc::new(MemoryStore::new());
    let engine = Engine::new(providers, store.clone(), EngineConfig::default());
    let options = RunOptions { policy: Some(Arc::new(ReviewPolicy::default())), ..RunOptions::default() };
    let input = json!({"diff": "+    std::fs::write(root.join(name), data)?;\n"});
    let outcome = engine.start(checked(conclave()), input, options).await.expect("starts").wait().await;
    assert_eq!(outcome.status, RunStatus::Succeeded, "{:?}", outcome.error);
    let record = store.get_run(&outcome.run_id).await.expect("get").expect("the run");
    let events = store.events(&outcome.run_id, 0).await.expect("events");
    let fit = events.iter().find_map(|e| match &e.kind {
        EventKind::InputFitted { node_id, fit } if node_id == "writer" => Some(fit.clone()),
        _ => None,
    });
    let report = build_report(&record, &events);
    let json = serde_json::from_str(&report.render(ReportFormat::Json)).expect("the envelope is JSON");
    let writer = fake.calls_for("writer").into_iter().next().expect("the Writer was called");
    (writer, fit, report.render(ReportFormat::Markdown), json)
}

/// The Writer's prompt in tokens as the fake counts them.
fn tokens(request: &conclave_core::AgentRequest) -> u32 {
    let message = match &request.messages[0] {
        conclave_core::Message::User(text) => text.len(),
        other => panic!("the first message is the input: {other:?}"),
    };
    (request.system_text().len() + message).div_ceil(4) as u32
}

#[tokio::test]
async fn a_writer_input_too_large_for_the_window_loses_long_descriptions_then_nits() {
    let (roomy, none, markdown, _) = review(1_000_000).await;
    assert_eq!(none, None, "an input with room is not fitted");
    assert!(!markdown.contains("Cut to fit"), "{markdown}");
    let full = tokens(&roomy);
    let conclave_core::Message::User(uncut) = &roomy.messages[0] else { panic!("the input comes first") };
    assert!(uncut.contains("name this better") && !uncut.contains("(`contradictions`)\n\n```json\n[]\n```"));
    // Shortening the one long description cannot save 600 tokens; leaving out the
    // 31 nits (about 30 lines of JSON each way) can.
    let window = full - 600 + WRITER_TOKENS + NOTE_ROOM;
    assert_eq!(answer_room(window, WRITER_TOKENS), WRITER_TOKENS);
    let (writer, fit, markdown, envelope) = review(window).await;
    let fit = fit.expect("the Writer's input was fitted");
    let mut expected: Vec<InputCut> =
        DESCRIPTION_STEPS.iter().map(|&chars| InputCut::Shortened { chars: chars as u32, findings: 1 }).collect();
    expected.push(InputCut::Dropped { severity: Severity::Nit, findings: NITS as u32 + 1 });
    assert_eq!(fit.cuts, expected, "every description step, then the nits, and nothing more");
    assert_eq!((fit.window, fit.answer_room, fit.tokens_before), (window, WRITER_TOKENS, full));
    assert!(fit.fits(), "{fit}");
    assert_eq!(fit.tokens_after, tokens(&writer), "the recorded size is the size sent");

    let conclave_core::Message::User(first) = &writer.messages[0] else { panic!("the input comes first") };
    assert!(
        !first.contains("\"severity\": \"nit\"") && !first.contains("name this better"),
        "no nit reached the Writer"
    );
    assert!(first.contains("\"the path comes from the request the…\""), "the blocker stays, shortened: {first}");
    assert!(first.contains("(`contradictions`)\n\n```json\n[]\n```"), "a blocker alone contradicts nothing: {first}");
    assert!(first.ends_with(&format!("The input above was cut so that it fits: {}.", fit.cuts_text())), "{first}");

    assert!(markdown.contains("## Cut to fit the model's window"), "{markdown}");
    assert!(markdown.contains(&format!("- `writer`: {fit}.")), "{markdown}");
    assert!(!markdown.contains("Degraded review"), "only nits were left out: {markdown}");
    assert_eq!(envelope["review"]["input_fits"][0]["node_id"], "writer");
    assert_eq!(
        envelope["review"]["input_fits"][0]["cuts"][9],
        json!({"cut": "dropped", "severity": "nit", "findings": 31})
    );
}

#[tokio::test]
async fn a_window_the_findings_cannot_fit_leaves_every_one_out_and_the_review_degraded() {
    let (roomy, ..) = review(1_000_000).await;
    // Less than the prompt without any finding: nothing the cut does is enough.
    let window = tokens(&roomy) / 4;
    let (writer, fit, markdown, envelope) = review(window).await;
    let fit = fit.expect("the Writer's input was fitted");
    assert!(!fit.fits(), "{fit}");
    assert!(fit.dropped(Severity::Nit) && fit.dropped(Severity::Blocker), "{fit}");
    let conclave_core::Message::User(first) = &writer.messages[0] else { panic!("the input comes first") };
    assert!(!first.contains("src/upload.rs"), "no finding is left: {first}");
    assert!(markdown.contains("still more than the window leaves"), "{markdown}");
    assert!(
        markdown.contains(&format!(
            "agent `writer` was not given every blocker finding: its input was cut to fit its model's window of {window} tokens"
        )),
        "{markdown}"
    );
    assert_eq!(envelope["review"]["degraded"], true);
}
