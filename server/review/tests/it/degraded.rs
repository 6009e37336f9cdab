//! A run whose store reported an error is a degraded review: its report says so in
//! its first lines, with the store's message, even when every agent answered.

use async_trait::async_trait;
use conclave_core::{CachedOutput, NewRun, ProviderRegistry, ReviewOf, RunStore, StoreError, StoredDismissal};
use conclave_doubles::{FakeProvider, FakeStep, MemoryStore};
use conclave_engine::{Engine, EngineConfig, RunOptions};
use conclave_review::ReportFormat;
use conclave_review::report::build_report;
use conclave_shared::delivery::{Delivery, Forge, PullRequestReviews};
use conclave_shared::eval::{EvalListing, StoredEval};
use conclave_shared::{
    AgentConfig, Conclave, Edge, EventKind, Node, NodeKind, OutputDialect, RunEvent, RunRecord, RunStatus, RunSummary,
    Settings,
};
use conclave_testkit::checked;
use serde_json::json;
use std::sync::Arc;

/// A memory store that refuses the agent's first streamed text, once.
#[derive(Debug, Default)]
struct FlakyStore {
    inner: MemoryStore,
}

#[async_trait]
impl RunStore for FlakyStore {
    async fn create_run(&self, run: &NewRun) -> Result<(), StoreError> {
        self.inner.create_run(run).await
    }
    async fn append_event(&self, event: &RunEvent) -> Result<(), StoreError> {
        if matches!(event.kind, EventKind::TextDelta { .. }) {
            return Err(StoreError::Backend("disk I/O error".into()));
        }
        self.inner.append_event(event).await
    }
    async fn get_run(&self, run_id: &str) -> Result<Option<RunRecord>, StoreError> {
        self.inner.get_run(run_id).await
    }
    async fn list_runs(&self, limit: usize) -> Result<Vec<RunSummary>, StoreError> {
        self.inner.list_runs(limit).await
    }
    async fn latest_review(&self, review: &ReviewOf) -> Result<Option<String>, StoreError> {
        self.inner.latest_review(review).await
    }
    async fn events(&self, run_id: &str, after_seq: u64) -> Result<Vec<RunEvent>, StoreError> {
        self.inner.events(run_id, after_seq).await
    }
    async fn events_page(&self, run_id: &str, after_seq: u64, limit: usize) -> Result<Vec<RunEvent>, StoreError> {
        self.inner.events_page(run_id, after_seq, limit).await
    }
    async fn put_report(&self, run_id: &str, format: &str, content: &str) -> Result<(), StoreError> {
        self.inner.put_report(run_id, format, content).await
    }
    async fn get_report(&self, run_id: &str, format: &str) -> Result<Option<String>, StoreError> {
        self.inner.get_report(run_id, format).await
    }
    async fn endpoint_dialect(&self, provider: &str, endpoint: &str) -> Result<Option<OutputDialect>, StoreError> {
        self.inner.endpoint_dialect(provider, endpoint).await
    }
    async fn remember_endpoint_dialect(
        &self,
        provider: &str,
        endpoint: &str,
        dialect: OutputDialect,
    ) -> Result<(), StoreError> {
        self.inner.remember_endpoint_dialect(provider, endpoint, dialect).await
    }
    async fn cached_output(&self, key: &str, now_ms: u64) -> Result<Option<CachedOutput>, StoreError> {
        self.inner.cached_output(key, now_ms).await
    }
    async fn cache_output(&self, key: &str, entry: &CachedOutput) -> Result<(), StoreError> {
        self.inner.cache_output(key, entry).await
    }
    async fn put_eval(&self, eval: &StoredEval) -> Result<(), StoreError> {
        self.inner.put_eval(eval).await
    }
    async fn list_evals(&self, conclave: Option<&str>, limit: usize) -> Result<Vec<EvalListing>, StoreError> {
        self.inner.list_evals(conclave, limit).await
    }
    async fn get_eval(&self, id: &str) -> Result<Option<StoredEval>, StoreError> {
        self.inner.get_eval(id).await
    }
    async fn put_dismissal(&self, dismissal: &StoredDismissal) -> Result<bool, StoreError> {
        self.inner.put_dismissal(dismissal).await
    }
    async fn dismissals(&self, repository: Option<&str>) -> Result<Vec<StoredDismissal>, StoreError> {
        self.inner.dismissals(repository).await
    }
    async fn put_delivery(&self, delivery: &Delivery) -> Result<bool, StoreError> {
        self.inner.put_delivery(delivery).await
    }
    async fn pending_deliveries(&self, limit: usize) -> Result<Vec<Delivery>, StoreError> {
        self.inner.pending_deliveries(limit).await
    }
    async fn mark_delivery_dispatched(&self, forge: Forge, id: &str, at_ms: u64) -> Result<bool, StoreError> {
        self.inner.mark_delivery_dispatched(forge, id, at_ms).await
    }
    async fn pull_request(
        &self,
        forge: Forge,
        repository: &str,
        number: u64,
    ) -> Result<Option<PullRequestReviews>, StoreError> {
        self.inner.pull_request(forge, repository, number).await
    }
    async fn put_pull_request(&self, reviews: &PullRequestReviews) -> Result<(), StoreError> {
        self.inner.put_pull_request(reviews).await
    }
    async fn busy_pull_requests(&self, limit: usize) -> Result<Vec<PullRequestReviews>, StoreError> {
        self.inner.busy_pull_requests(limit).await
    }
    async fn mark_interrupted(
        &self,
        owner_alive: &(dyn for<'s> Fn(&'s str) -> bool + Sync),
        now_ms: u64,
    ) -> Result<Vec<String>, StoreError> {
        self.inner.mark_interrupted(owner_alive, now_ms).await
    }
}

fn node(id: &str, kind: NodeKind) -> Node {
    let agent = (kind == NodeKind::Agent).then(|| AgentConfig::new("fake"));
    Node { agent, ..Node::new(id, kind) }
}

#[tokio::test]
async fn a_store_error_makes_the_review_degraded() {
    let fake = Arc::new(FakeProvider::new("fake"));
    fake.script("reviewer", [FakeStep::text("all good")]);
    let mut providers = ProviderRegistry::default();
    providers.register(fake);
    let store = Arc::new(FlakyStore::default());
    let engine = Engine::new(providers, store.clone(), EngineConfig::default());
    let conclave = Conclave {
        version: 1,
        id: "flaky".into(),
        name: "Flaky".into(),
        description: String::new(),
        settings: Settings::default(),
        nodes: vec![
            node("change", NodeKind::Trigger),
            node("reviewer", NodeKind::Agent),
            node("report", NodeKind::Output),
        ],
        edges: vec![
            Edge { from: "change".into(), to: "reviewer".into(), case: None },
            Edge { from: "reviewer".into(), to: "report".into(), case: None },
        ],
    };
    let handle = engine.start(checked(conclave), json!({}), RunOptions::default()).await.expect("starts");
    let outcome = handle.wait().await;
    assert_eq!(outcome.status, RunStatus::Failed, "a run whose events were not all stored does not succeed");
    let record = store.get_run(&outcome.run_id).await.expect("get").expect("the run");
    let events = store.events(&outcome.run_id, 0).await.expect("events");
    let report = build_report(&record, &events);
    assert_eq!(
        report.degraded,
        ["the run failed: the run store reported an error: run store error: disk I/O error"],
        "{:?}",
        report.degraded
    );
    let markdown = report.render(ReportFormat::Markdown);
    let first_lines: String = markdown.lines().take(3).collect::<Vec<_>>().join("\n");
    assert!(first_lines.contains("**Degraded review:** the run failed: the run store reported an error"), "{markdown}");
}
