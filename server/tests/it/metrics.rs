//! `GET /metrics` through the app without a socket: after a run that succeeds and one
//! whose provider fails, the Prometheus exposition parses and its counters for runs,
//! provider calls, retries, tokens and cost have exactly the values of those runs; the
//! endpoint is refused without the token like any API request.
//!
//! The recorder is the process's one global recorder (installed once, shared by every
//! test of this binary), so these runs use a provider name and conclave ids no other
//! test uses and read only their own series.

use axum::http::StatusCode;
use conclave_core::{PriceTable, RetryPolicy};
use conclave_doubles::FakeProvider;
use conclave_engine::EngineConfig;
use conclave_server::observe::prometheus;
use serde_json::json;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use crate::api::{Api, api_over, conclave, sse_events};

const TOKEN: &str = "metrics-test-token";
/// The answer of the run that succeeds: 40 characters, so 10 tokens by the fake's count.
const ANSWER: &str = "the change looks right to me, approved!!";

/// One sample of the exposition: its labels and value.
type Samples = BTreeMap<String, Vec<(BTreeMap<String, String>, f64)>>;

/// Parses the Prometheus text format, failing on any line that is not a comment, a
/// blank, or `name{labels} value`; also returns the `# TYPE` of each metric.
pub(crate) fn parse(text: &str) -> (Samples, BTreeMap<String, String>) {
    let (mut samples, mut types) = (Samples::new(), BTreeMap::new());
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        if let Some(rest) = line.strip_prefix("# TYPE ") {
            let (name, kind) = rest.split_once(' ').unwrap_or_else(|| panic!("bad TYPE line: {line}"));
            assert!(["counter", "gauge", "histogram", "summary", "untyped"].contains(&kind), "{line}");
            types.insert(name.to_string(), kind.to_string());
            continue;
        }
        if line.starts_with('#') {
            continue;
        }
        let (series, value) = line.rsplit_once(' ').unwrap_or_else(|| panic!("no value: {line}"));
        let value: f64 = value.parse().unwrap_or_else(|_| panic!("value is not a number: {line}"));
        let (name, labels) = match series.split_once('{') {
            Some((name, labels)) => (name, parse_labels(labels.strip_suffix('}').expect("closing brace"))),
            None => (series, BTreeMap::new()),
        };
        assert!(name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':'), "bad name: {line}");
        samples.entry(name.to_string()).or_default().push((labels, value));
    }
    (samples, types)
}

/// `a="x",b="y"` with `\"` and `\\` escapes in values.
fn parse_labels(text: &str) -> BTreeMap<String, String> {
    let mut labels = BTreeMap::new();
    let mut rest = text;
    while !rest.is_empty() {
        let (name, after) = rest.split_once("=\"").unwrap_or_else(|| panic!("bad labels: {text}"));
        let mut value = String::new();
        let mut chars = after.char_indices();
        let end = loop {
            match chars.next() {
                Some((_, '\\')) => value.extend(chars.next().map(|(_, c)| if c == 'n' { '\n' } else { c })),
                Some((i, '"')) => break i,
                Some((_, c)) => value.push(c),
                None => panic!("unterminated label value: {text}"),
            }
        };
        labels.insert(name.trim_start_matches(',').to_string(), value);
        rest = after[end + 1..].trim_start_matches(',');
    }
    labels
}

/// The value of the one sample of `name` with exactly these labels.
pub(crate) fn value(samples: &Samples, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
    let wanted: BTreeMap<String, String> = labels.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
    samples.get(name)?.iter().find(|(l, _)| *l == wanted).map(|(_, v)| *v)
}

/// An app whose `metered` fake costs $3 and $5 per million input and output tokens,
/// retries once at once, and whose state renders the global recorder.
fn metered_api() -> (Api, Arc<FakeProvider>) {
    let prices = tempfile::tempdir().expect("tempdir");
    let table = json!({"metered": {"text=": {"input": 3.0, "output": 5.0}}});
    std::fs::write(prices.path().join("pricing.json"), table.to_string()).expect("write prices");
    let config = EngineConfig {
        prices: Arc::new(PriceTable::load(Some(prices.path()))),
        retry: RetryPolicy { max_retries: 1, base: Duration::from_millis(1), cap: Duration::from_millis(1) },
        ..EngineConfig::default()
    };
    let fake = Arc::new(FakeProvider::new("metered"));
    let mut api = api_over(Some(TOKEN), fake.clone(), config);
    api.state = api.state.clone().with_metrics(prometheus::install());
    (api, fake)
}

/// Creates conclave `id` on the `metered` provider with `model`, runs it to its end
/// and returns how many events it wrote.
async fn run(api: &Api, id: &str, model: &str) -> usize {
    let bearer = format!("Bearer {TOKEN}");
    let auth = [("authorization", bearer.as_str())];
    let mut definition = conclave(id, model);
    definition["nodes"][1]["agent"]["provider"] = json!("metered");
    let (status, body, _) = api.call("POST", "/api/conclaves", Some(definition.to_string()), &auth).await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    let start = json!({"conclave_id": id, "input": {"change": "metered"}}).to_string();
    let (status, started, _) = api.call("POST", "/api/runs", Some(start), &auth).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{started}");
    let run_id = started["run_id"].as_str().expect("run id");
    let (_, _, events) = api.call("GET", &format!("/api/runs/{run_id}/events"), None, &auth).await;
    let events = sse_events(&events);
    assert_eq!(events.last().map(|e| e.1.as_str()), Some("run_finished"));
    events.len()
}

#[tokio::test]
async fn metrics_count_runs_calls_retries_tokens_and_cost() {
    let (api, fake) = metered_api();
    let model = format!("text={ANSWER}");
    let mut events = run(&api, "metered", &model).await;
    events += run(&api, "metered-failing", "fail=the provider is down").await;

    let bearer = format!("Bearer {TOKEN}");
    let (status, _, text) = api.call("GET", "/metrics", None, &[("authorization", bearer.as_str())]).await;
    assert_eq!(status, StatusCode::OK, "{text}");
    let (samples, types) = parse(&text);
    let v = |name: &str, labels: &[(&str, &str)]| value(&samples, name, labels);

    assert_eq!(v("conclave_runs_started_total", &[("conclave", "metered")]), Some(1.0), "{text}");
    assert_eq!(v("conclave_runs_finished_total", &[("conclave", "metered"), ("status", "succeeded")]), Some(1.0));
    let failed = [("conclave", "metered-failing"), ("status", "failed")];
    assert_eq!(v("conclave_runs_finished_total", &failed), Some(1.0));
    assert_eq!(v("conclave_runs_in_progress", &[("conclave", "metered")]), Some(0.0));

    let ok = [("provider", "metered"), ("model", model.as_str()), ("outcome", "ok")];
    assert_eq!(v("conclave_provider_calls_total", &ok), Some(1.0));
    let down = [("provider", "metered"), ("model", "fail=the provider is down"), ("outcome", "server")];
    assert_eq!(v("conclave_provider_calls_total", &down), Some(2.0), "the first try and one retry");
    assert_eq!(v("conclave_provider_retries_total", &[("provider", "metered"), ("class", "server")]), Some(1.0));

    // The fake counts a quarter of a token per character of the input it was sent.
    let calls = fake.calls_for("a");
    let answered = calls.iter().find(|c| c.model == model).expect("the answered call");
    let input_tokens = answered.input.to_string().len() as u64 / 4;
    let tokens =
        |direction| v("conclave_tokens_total", &[("provider", "metered"), ("model", &model), ("direction", direction)]);
    assert_eq!(tokens("input"), Some(input_tokens as f64));
    assert_eq!(tokens("output"), Some(10.0));
    let cost = v("conclave_cost_micro_usd_total", &[("provider", "metered"), ("model", &model)]);
    assert_eq!(cost, Some((input_tokens * 3 + 10 * 5) as f64), "$3 and $5 per million tokens, in micro-dollars");

    let latency = [("provider", "metered"), ("model", model.as_str())];
    assert_eq!(v("conclave_provider_call_duration_seconds_count", &latency), Some(1.0));
    let le_inf = [("provider", "metered"), ("model", model.as_str()), ("le", "+Inf")];
    assert_eq!(v("conclave_provider_call_duration_seconds_bucket", &le_inf), Some(1.0));
    assert_eq!(types.get("conclave_provider_call_duration_seconds").map(String::as_str), Some("histogram"));
    for counter in ["conclave_runs_started_total", "conclave_tokens_total", "conclave_cost_micro_usd_total"] {
        assert_eq!(types.get(counter).map(String::as_str), Some("counter"), "{counter}");
    }

    let written = v("conclave_events_written_total", &[]).expect("events written");
    assert!(written >= events as f64, "{written} events written, these runs alone wrote {events}");
    let route = [("route", "/api/runs"), ("status", "202")];
    assert!(v("conclave_http_requests_total", &route).is_some_and(|n| n >= 2.0), "{text}");
}

#[tokio::test]
async fn metrics_are_refused_without_the_token_like_the_api() {
    let (api, _) = metered_api();
    let (status, body, _) = api.get("/metrics").await;
    let (api_status, api_body, _) = api.get("/api/runs").await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    assert_eq!((status, &body), (api_status, &api_body), "the same refusal as the API's");
    let (status, _, _) = api.call("GET", "/metrics", None, &[("authorization", "Bearer wrong")]).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    let bearer = format!("Bearer {TOKEN}");
    let auth = ("authorization", bearer.as_str());
    let (status, _, _) = api.call("GET", "/metrics", None, &[auth, ("host", "evil.example:7700")]).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "a Host the server does not answer to");
    let (status, _, text) = api.call("GET", "/metrics", None, &[auth]).await;
    assert_eq!(status, StatusCode::OK);
    assert!(text.contains("# TYPE conclave_api_live_runs gauge"), "refreshed at every scrape: {text}");
}

#[tokio::test]
async fn the_run_queue_s_depth_and_oldest_wait_are_read_at_each_scrape() {
    use conclave_core::{NewRun, RunQueue, now_ms};
    use conclave_doubles::MemoryStore;
    let (mut api, _) = metered_api();
    let queue = Arc::new(MemoryStore::new());
    for (id, waited_ms) in [("q1", 30_000), ("q2", 1_000)] {
        let run = NewRun {
            id: id.into(),
            conclave: conclave_doubles::conformance::sample_conclave(),
            input: json!({}),
            created_ms: now_ms() - waited_ms,
            owner: "api".into(),
        };
        queue.enqueue(&run, &json!({"kind": "run"})).await.expect("enqueue");
    }
    queue.claim("w", now_ms(), 60_000).await.expect("claim").expect("q1");
    api.state = api.state.clone().with_queue(queue);
    let bearer = format!("Bearer {TOKEN}");
    let (status, _, text) = api.call("GET", "/metrics", None, &[("authorization", bearer.as_str())]).await;
    assert_eq!(status, StatusCode::OK, "{text}");
    let (samples, types) = parse(&text);
    assert_eq!(value(&samples, "conclave_queue_depth", &[]), Some(1.0), "{text}");
    assert_eq!(value(&samples, "conclave_queue_running", &[]), Some(1.0));
    let oldest = value(&samples, "conclave_queue_oldest_age_seconds", &[]).expect("the oldest wait");
    assert!((1.0..30.0).contains(&oldest), "q2 waited about a second: {oldest}");
    assert_eq!(types.get("conclave_queue_depth").map(String::as_str), Some("gauge"));
}
