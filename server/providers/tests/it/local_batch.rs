//! The local provider's batcher with the real default model: agents that run at once
//! share one context, their common prompt prefix decoded once, and answer what each
//! would answer alone (`CONCLAVE_LOCAL_BATCH=off`); a cancelled agent leaves the
//! others' answers as they were.

use conclave_core::ProviderError;
use conclave_providers::local::model::DEFAULT_MODEL_FILE;
use conclave_providers::local::{LocalProvider, LocalRequest, Running};
use serde_json::{Value, json};

/// The model's threads: other tests run beside these on two cores.
const THREADS: &str = "1";

/// The tests here take turns: each keeps a core busy, two at once only slow both.
static MODEL_CORES: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

fn provider(batched: bool) -> LocalProvider {
    let provider = LocalProvider::from_env(&|k| match k {
        "CONCLAVE_LOCAL_THREADS" => Some(THREADS.to_string()),
        "CONCLAVE_LOCAL_BATCH" => Some(if batched { "on" } else { "off" }.to_string()),
        _ => std::env::var(k).ok(),
    });
    let model = provider.model_dir().join(DEFAULT_MODEL_FILE);
    assert!(
        model.is_file(),
        "the default model is not installed at {}: run `bash scripts/fetch-model.sh`",
        model.display()
    );
    assert_eq!(provider.batched(), batched);
    provider
}

/// A change under review, about 1,700 tokens: the system text every agent shares.
fn shared_system() -> String {
    let mut text = String::from(
        "You review code changes. Report each problem you find in the change below as a finding with its severity, \
         its line and a short description. The change:\n\n",
    );
    for i in 0..36 {
        text.push_str(&format!(
            "@@ -{a},6 +{a},7 @@\n fn handler_{i}(request: &Request) -> Response {{\n-    let name = request.param(\"name_{i}\");\n+    let name = request.param(\"name_{i}\").unwrap();\n+    std::fs::write(format!(\"/tmp/{{name}}\"), request.body())?;\n     respond(format!(\"hello {{}}\", name))\n }}\n",
            a = i * 10 + 1
        ));
    }
    text
}

/// What each agent is asked after the shared text. They begin with different words, so
/// the prefix one copies from another ends where its own tokens begin (see the first test).
const FOCUS: [&str; 4] = [
    "Security: look for paths built from request input.",
    "Correctness: look for unwrap on a missing parameter.",
    "Style: look at naming and formatting.",
    "Summary: write the final list of the findings.",
];

fn findings_schema() -> Value {
    json!({
        "type": "object",
        "properties": {"findings": {"type": "array", "maxItems": 2, "items": {
            "type": "object",
            "properties": {
                "severity": {"enum": ["low", "medium", "high"]},
                "line": {"type": "integer"},
                "description": {"type": "string", "maxLength": 80}
            },
            "required": ["severity", "line", "description"],
            "additionalProperties": false
        }}},
        "required": ["findings"],
        "additionalProperties": false
    })
}

fn request(focus: &str) -> LocalRequest {
    LocalRequest {
        model: String::new(),
        turns: vec![("system".into(), shared_system()), ("user".into(), focus.to_string())],
        schema: Some(findings_schema()),
        max_tokens: 200,
    }
}

/// Runs `request` to its answer's text.
async fn answer(provider: &LocalProvider, request: LocalRequest) -> String {
    let mut running = provider.submit(request).await.unwrap_or_else(|e| panic!("submits: {e}"));
    let mut streamed = String::new();
    while let Some(piece) = running.pieces.recv().await {
        streamed.push_str(&piece);
    }
    let generation = running.outcome().await.unwrap_or_else(|e| panic!("generates: {e}"));
    assert!(generation.finished, "the answer should close within its budget: {}", generation.text);
    assert_eq!(streamed, generation.text, "the streamed text is the answer");
    generation.text
}

/// Checks `text` against `findings_schema` by hand (the grammar should make it so).
fn assert_schema_valid(text: &str) {
    let value: Value = serde_json::from_str(text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"));
    let findings = value["findings"].as_array().unwrap_or_else(|| panic!("no findings array: {text}"));
    assert!(findings.len() <= 2, "{text}");
    for finding in findings {
        assert!(matches!(finding["severity"].as_str(), Some("low" | "medium" | "high")), "{text}");
        assert!(finding["line"].is_i64(), "{text}");
        assert!(finding["description"].as_str().is_some_and(|d| d.chars().count() <= 80), "{text}");
        assert_eq!(finding.as_object().map(|o| o.len()), Some(3), "{text}");
    }
}

/// The three specialists' answers, each generated alone.
async fn alone(n: usize) -> (Vec<String>, u64) {
    let provider = provider(false);
    let mut answers = Vec::new();
    for focus in &FOCUS[..n] {
        answers.push(answer(&provider, request(focus)).await);
    }
    (answers, provider.prompt_counts().prefilled_tokens)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_agents_at_once_answer_as_alone_and_read_their_shared_prefix_once() {
    let _serial = MODEL_CORES.lock().await;
    let (expected, prefilled_alone) = alone(3).await;
    let batched = provider(true);
    let (a, b, c) = tokio::join!(
        answer(&batched, request(FOCUS[0])),
        answer(&batched, request(FOCUS[1])),
        answer(&batched, request(FOCUS[2]))
    );
    for text in [&a, &b, &c] {
        assert_schema_valid(text);
    }
    // Measured on this model and CPU: the three answers are the same text as alone (0
    // tokens differ), so the test asserts equality. It is measured, not guaranteed: in
    // the shared context a sequence's cells sit elsewhere and among other sequences'
    // masked cells, so attention sums in another order. Endings that began with the
    // same words (copied cells decoded in another batch) changed the answer of an agent
    // that reused a kept prompt, and a real review's 7,300-token prompts gave longer or
    // shorter (always schema-valid) answers than alone. Should this fail on other
    // hardware, the bound to keep is the schema check above.
    assert_eq!(vec![a, b, c], expected);

    let counts = batched.prompt_counts();
    assert_eq!(counts.jobs, 3);
    assert_eq!(counts.prompt_tokens, prefilled_alone, "alone, every prompt token is decoded");
    // The shared system text (about 1,700 tokens) is decoded for the first agent only;
    // the other two copy it and decode their own ending (a few dozen tokens).
    let one_prompt = counts.prompt_tokens / 3;
    assert!(one_prompt > 1_500, "the prompts are long: {counts:?}");
    assert!(counts.reused_tokens >= 2 * (one_prompt - 40), "the prefix was copied twice: {counts:?}");
    assert!(counts.prefilled_tokens <= one_prompt + 2 * 40, "the prefix was decoded once: {counts:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancelled_agent_leaves_the_others_answers_as_they_were() {
    let _serial = MODEL_CORES.lock().await;
    let (expected, _) = alone(3).await;
    let batched = provider(true);
    let first = batched.submit(request(FOCUS[0]));
    let cancelled = batched.submit(request(FOCUS[1]));
    let third = batched.submit(request(FOCUS[2]));
    let (first, cancelled, third) = tokio::join!(first, cancelled, third);
    let submitted = |r: Result<Running, ProviderError>| r.unwrap_or_else(|e| panic!("submits: {e}"));
    let (first, mut cancelled, third) = (submitted(first), submitted(cancelled), submitted(third));
    // Once its first piece arrives the agent is decoding in the batch; then it is dropped,
    // as the engine drops an aborted node.
    assert!(cancelled.pieces.recv().await.is_some(), "the agent to cancel starts answering");
    drop(cancelled);
    let finish = |mut running: Running| async move {
        while running.pieces.recv().await.is_some() {}
        running.outcome().await.unwrap_or_else(|e| panic!("generates: {e}")).text
    };
    let (first, third) = tokio::join!(finish(first), finish(third));
    assert_eq!(first, expected[0]);
    assert_eq!(third, expected[2]);
    // Its sequence was freed: a later agent runs, and reads the kept prefix.
    let before = batched.prompt_counts();
    let again = answer(&batched, request(FOCUS[1])).await;
    assert_eq!(again, expected[1]);
    let after = batched.prompt_counts();
    assert!(after.reused_tokens - before.reused_tokens > 1_500, "the kept prompt was reused: {after:?}");
}
