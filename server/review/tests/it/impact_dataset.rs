//! The symbol index and the review's impact measured on the shipped dataset
//! `evals/injected-bugs/`, against the callers written by hand in its `callers/`
//! (each function the change touches, and the lines of the head version that call
//! it): `find_references`' precision and recall of the call sites, and `impact`'s
//! recall of the callers under the default caps. The figures are printed (`cargo
//! test -p conclave-review --test it impact_dataset -- --nocapture`; with
//! `IMPACT_DEBUG=1`, every caller missed or added too) and must not fall below what
//! docs/benchmarks.md reports.

use conclave_review::diff::collect_change;
use conclave_review::eval::dataset::{Dataset, check_out};
use conclave_review::impact::{ChangeImpact, ImpactRequest, build_impact};
use conclave_shared::ImpactSettings;
use conclave_symbols::{Index, IndexOptions, SymbolKind};
use serde::Deserialize;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

#[derive(Debug, Deserialize)]
struct HandList {
    case: String,
    functions: Vec<HandFunction>,
}

#[derive(Debug, Deserialize)]
struct HandFunction {
    name: String,
    file: String,
    #[serde(default)]
    constructs: Option<String>,
    callers: Vec<HandCaller>,
}

#[derive(Debug, Deserialize)]
struct HandCaller {
    file: String,
    line: u32,
    #[serde(default)]
    test: bool,
    #[serde(default)]
    value: bool,
}

/// True and false positives and negatives, pooled.
#[derive(Debug, Default, Clone, Copy)]
struct Tally {
    tp: u32,
    fp: u32,
    fn_: u32,
}

impl Tally {
    fn precision(&self) -> f64 {
        f64::from(self.tp) / f64::from((self.tp + self.fp).max(1))
    }
    fn recall(&self) -> f64 {
        f64::from(self.tp) / f64::from((self.tp + self.fn_).max(1))
    }
    fn add(&mut self, expected: &BTreeSet<(String, u32)>, got: &BTreeSet<(String, u32)>) {
        self.tp += expected.intersection(got).count() as u32;
        self.fp += got.difference(expected).count() as u32;
        self.fn_ += expected.difference(got).count() as u32;
    }
}

fn dataset() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../evals/injected-bugs")
}

fn hand_list(case: &str) -> HandList {
    let path = dataset().join("callers").join(format!("{case}.json"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let list: HandList = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    assert_eq!(list.case, case, "{}", path.display());
    list
}

/// `find_references`' call sites of a hand-listed function: its class's references
/// for a constructor, else its name's, qualified as the tools accept
/// (`Type::name`) by the container of a method's definition in its file; the
/// references that are calls, one per line.
fn call_sites(index: &Index, function: &HandFunction) -> BTreeSet<(String, u32)> {
    let query = match &function.constructs {
        Some(class) => class.clone(),
        None => index
            .definitions(&function.name, Some(&function.file))
            .into_iter()
            .find(|d| *d.file == *function.file && d.kind == SymbolKind::Method)
            .and_then(|d| d.container.as_ref())
            .map_or_else(|| function.name.clone(), |container| format!("{container}::{}", function.name)),
    };
    index
        .references(&query, Some(&function.file))
        .into_iter()
        .filter(|r| r.call)
        .map(|r| (r.file.to_string(), r.line))
        .collect()
}

/// What the figures are measured from, one case at a time.
struct Measured {
    find_references: Tally,
    impact: Tally,
    /// Hand-listed callers in tests that impact listed as tests, of those it listed.
    tests_placed: (u32, u32),
    functions: (u32, u32),
}

fn measure_case(list: &HandList, index: &Index, impact: &ChangeImpact, measured: &mut Measured) {
    let given = impact.impact.as_ref().map(|i| i.functions.as_slice()).unwrap_or_default();
    for function in &list.functions {
        let expected: BTreeSet<(String, u32)> =
            function.callers.iter().filter(|c| !c.value).map(|c| (c.file.clone(), c.line)).collect();
        measured.find_references.add(&expected, &call_sites(index, function));
        let listed = given.iter().find(|f| f.name == function.name && f.file == function.file);
        measured.functions.1 += 1;
        measured.functions.0 += u32::from(listed.is_some());
        let all: BTreeSet<(String, u32)> = function.callers.iter().map(|c| (c.file.clone(), c.line)).collect();
        let Some(listed) = listed else {
            measured.impact.fn_ += all.len() as u32;
            continue;
        };
        let sites = listed.callers.iter().chain(&listed.tests);
        let got: BTreeSet<(String, u32)> = sites.map(|s| (s.file.clone(), s.line)).collect();
        measured.impact.add(&all, &got);
        if std::env::var_os("IMPACT_DEBUG").is_some() {
            for miss in all.difference(&got) {
                println!("MISS {} {} {:?}", list.case, function.name, miss);
            }
            for extra in got.difference(&all) {
                println!("EXTRA {} {} {:?}", list.case, function.name, extra);
            }
            let calls = call_sites(index, function);
            for miss in expected.difference(&calls) {
                println!("REFMISS {} {} {:?}", list.case, function.name, miss);
            }
            for extra in calls.difference(&expected) {
                println!("REFEXTRA {} {} {:?}", list.case, function.name, extra);
            }
        }
        for caller in function.callers.iter().filter(|c| c.test) {
            if got.contains(&(caller.file.clone(), caller.line)) {
                measured.tests_placed.1 += 1;
                let placed = listed.tests.iter().any(|s| s.file == caller.file && s.line == caller.line);
                measured.tests_placed.0 += u32::from(placed);
            }
        }
    }
}

#[test]
fn find_references_and_impact_find_the_hand_written_callers_of_the_dataset() {
    let dataset_dir = dataset();
    let dataset = Dataset::load(&dataset_dir).expect("the dataset loads");
    let checkouts = tempfile::tempdir().expect("tempdir");
    let mut measured = Measured {
        find_references: Tally::default(),
        impact: Tally::default(),
        tests_placed: (0, 0),
        functions: (0, 0),
    };
    for case in &dataset.cases {
        let checkout = check_out(&dataset_dir, case, checkouts.path()).expect("checks out");
        let options = IndexOptions { cache_dir: None, threads: Some(1), ..IndexOptions::default() };
        let index = Index::build(&checkout.root, &options).expect("indexes");
        let change = collect_change(&checkout.root, Some(&checkout.base)).expect("git").expect("a change");
        let request = ImpactRequest {
            root: &checkout.root,
            base_commit: Some(&checkout.base),
            files: &change.files,
            allow: &[],
            settings: ImpactSettings::default(),
        };
        let impact = build_impact(&request, Ok(&index));
        measure_case(&hand_list(&case.id), &index, &impact, &mut measured);
    }
    let (refs, impact) = (measured.find_references, measured.impact);
    println!(
        "find_references call sites: precision {:.3} recall {:.3} ({} right, {} wrong, {} missed)",
        refs.precision(),
        refs.recall(),
        refs.tp,
        refs.fp,
        refs.fn_
    );
    println!(
        "impact, default caps: recall {:.3} precision {:.3} ({} of {} callers; {} other lines); {} of {} functions; \
         {} of {} test callers listed as tests",
        impact.recall(),
        impact.precision(),
        impact.tp,
        impact.tp + impact.fn_,
        impact.fp,
        measured.functions.0,
        measured.functions.1,
        measured.tests_placed.0,
        measured.tests_placed.1
    );
    assert!(impact.recall() >= 0.9, "impact's recall of the hand-written callers fell: {:.3}", impact.recall());
}
