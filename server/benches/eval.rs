//! `conclave eval`'s own cost: the shipped dataset (`evals/injected-bugs/`, 32 cases)
//! evaluated from its recordings in process, with a SQLite store in a temporary
//! directory, split into setting up the repositories (git) and reviewing and scoring
//! (target: at most 5 s for 30 cases); and matching 10,000 findings against 1,000
//! golden issues (target: at most 200 ms). Medians and minima of several runs.
//!
//! Run with `cargo bench -p conclave-server --bench eval`.

use conclave_review::ConclaveChoice;
use conclave_review::eval::matching::match_by_rule;
use conclave_review::eval::{EvalContext, EvalRequest, run_eval};
use conclave_review::same_issue::SameIssue;
use conclave_schema::SchemaCatalog;
use conclave_server::Workspace;
use conclave_server::workspace::{engine_config, open_store};
use conclave_shared::{Finding, Severity};
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const EVAL_RUNS: usize = 5;
const MATCH_RUNS: usize = 11;

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().expect("runtime");
    let dataset = Path::new(env!("CARGO_MANIFEST_DIR")).join("../evals/injected-bugs");
    let mut setup = Vec::new();
    let mut review = Vec::new();
    for _ in 0..EVAL_RUNS {
        let (s, r) = runtime.block_on(eval_once(&dataset));
        setup.push(s);
        review.push(r);
    }
    let (s_med, s_min) = median_min(setup);
    let (r_med, r_min) = median_min(review);
    println!("eval of {} cases, replayed ({EVAL_RUNS} runs):", cases(&dataset));
    println!("  setting up the repositories: median {:.2} s, min {:.2} s", s_med.as_secs_f64(), s_min.as_secs_f64());
    println!("  reviewing and scoring:       median {:.2} s, min {:.2} s", r_med.as_secs_f64(), r_min.as_secs_f64());

    let (findings, issues) = synthetic(10_000, 1_000);
    let rule = SameIssue::default();
    let times: Vec<Duration> = (0..MATCH_RUNS)
        .map(|_| {
            let start = Instant::now();
            let matched = match_by_rule(&findings, &issues, &rule);
            std::hint::black_box(matched);
            start.elapsed()
        })
        .collect();
    let matched = match_by_rule(&findings, &issues, &rule).iter().flatten().count();
    let (median, min) = median_min(times);
    println!(
        "matching 10,000 findings against 1,000 golden issues: median {:.1} ms, min {:.1} ms ({matched} matched)",
        median.as_secs_f64() * 1e3,
        min.as_secs_f64() * 1e3
    );
}

fn cases(dataset: &Path) -> usize {
    std::fs::read_to_string(dataset.join("cases.jsonl")).map(|t| t.lines().count()).unwrap_or(0)
}

/// One eval from the recordings; the set-up and the review-and-score times, as the
/// eval reports them.
async fn eval_once(dataset: &Path) -> (Duration, Duration) {
    let dir = tempfile::tempdir().expect("tempdir");
    let providers = conclave_providers::builtin(&[]).replaying(&dataset.join("recordings"));
    let workspace = Workspace::new(dir.path().join("conclaves"), SchemaCatalog::for_workspace(dir.path()), providers);
    let store = open_store(&dir.path().join("runs.db")).await.expect("store");
    let store: Arc<dyn conclave_core::RunStore> = store;
    let engine = conclave_engine::Engine::new(workspace.providers.clone(), store.clone(), engine_config(16).await);
    let request = EvalRequest {
        dataset: dataset.to_path_buf(),
        conclave: ConclaveChoice::Default,
        provider: None,
        model: None,
        samples: 1,
        min_support: 0,
        window: 3,
        judge: None,
        jobs: 4,
        max_diff_bytes: 1 << 20,
        no_cache: false,
        analyzers: conclave_review::pipeline::AnalyzerSelection::None,
    };
    let ctx =
        EvalContext { catalog: workspace.catalog(), providers: &workspace.providers, engine: &engine, store: &store };
    let lines = Mutex::new(Vec::new());
    let summary = run_eval(&request, ctx, &|line| lines.lock().expect("lock").push(line.to_string()))
        .await
        .expect("the eval runs");
    assert_eq!(summary.cases, cases(dataset));
    let lines = lines.into_inner().expect("lock");
    let seconds = |prefix: &str| {
        lines
            .iter()
            .find(|l| l.starts_with(prefix))
            .and_then(|l| l.split(" in ").nth(1))
            .and_then(|t| t.trim_end_matches(" s").parse::<f64>().ok())
            .map(Duration::from_secs_f64)
            .expect("the eval reports its times")
    };
    (seconds("set up"), seconds("reviewed and scored"))
}

/// `n` findings and `m` golden issues over 100 files of 2,000 lines, worded from a
/// few defect descriptions, so most findings have an issue within the window.
fn synthetic(n: usize, m: usize) -> (Vec<Finding>, Vec<Finding>) {
    const WORDS: [&str; 8] = [
        "the error returned by write is ignored and the data may be lost",
        "off-by-one: the loop reads one element past the end of the slice",
        "user input is concatenated into the SQL query: injection",
        "the file handle leaks when the function returns early on error",
        "two tasks update the shared counter without a lock: a race",
        "the boundary check uses < where <= is needed, so the limit is rejected",
        "the path from the request is joined to the root without checks: traversal",
        "the timeout is never applied because the deadline is computed after the call",
    ];
    let mut rng = fastrand::Rng::with_seed(23);
    let make = |rng: &mut fastrand::Rng, agent: &str| Finding {
        agent: agent.into(),
        file: format!("src/file{}.rs", rng.usize(0..100)),
        line: rng.u64(1..2_000),
        severity: Some(Severity::ALL[rng.usize(0..4)]),
        description: WORDS[rng.usize(0..WORDS.len())].to_string(),
        ..Finding::default()
    };
    let issues: Vec<Finding> = (0..m).map(|_| make(&mut rng, "golden")).collect();
    let findings = (0..n)
        .map(|k| {
            let mut f = make(&mut rng, "writer");
            if k % 3 == 0 {
                let near = &issues[rng.usize(0..m)];
                f.file = near.file.clone();
                f.line = near.line + rng.u64(0..4);
            }
            f
        })
        .collect();
    (findings, issues)
}

fn median_min(mut times: Vec<Duration>) -> (Duration, Duration) {
    times.sort();
    (times[times.len() / 2], times[0])
}
