//! Probing a provider: a probe that gets no answer in time says so and returns,
//! instead of holding its caller (an HTTP request with its own deadline).

use conclave_doubles::{FakeProvider, FakeStep};
use conclave_engine::probe::probe_within;
use serde_json::json;
use std::sync::Arc;
use std::time::Duration;

#[tokio::test]
async fn a_probe_that_gets_no_answer_in_time_says_so_and_returns() {
    let fake = Arc::new(FakeProvider::new("fake"));
    // A model still loading: the answer would come after a minute.
    fake.script("probe", [FakeStep::json(json!({"ok": true})).after(Duration::from_secs(60))]);
    let report = probe_within(fake.clone(), None, Duration::from_millis(200)).await;
    assert_eq!(report.provider, "fake");
    assert_eq!((report.dialect, report.valid), (None, false));
    assert_eq!(
        report.error.as_deref(),
        Some("no answer within 200 ms; a server still loading its model may answer later, so probe again")
    );
    assert_eq!(fake.calls_for("probe").len(), 1, "the probe asked once");
}
