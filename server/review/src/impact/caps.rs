//! The impact within its caps: the functions ordered most-changed first (tests
//! last), then, in that order, each function with its callers, then the tests that
//! reference them, while the entries (callers and tests) and the bytes of JSON
//! allow; what is left out is counted. Pure.

use super::model::{Counts, Impact, ImpactFunction, LeftOut, Site};

/// A function with every caller and test found, before the caps.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Found {
    /// The function, its `callers` and `tests` empty.
    pub function: ImpactFunction,
    pub callers: Vec<Site>,
    pub tests: Vec<Site>,
}

/// The caps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Caps {
    /// The most callers and tests listed, all functions together.
    pub entries: usize,
    /// The most bytes of the impact's JSON.
    pub bytes: usize,
}

/// One step of filling: a function, or one of its callers or tests.
#[derive(Debug, Clone, Copy)]
enum Item {
    Function(usize),
    Caller(usize, usize),
    Test(usize, usize),
}

/// The impact of `found` within `caps`, and how much of each kind it gives.
pub fn within_caps(mut found: Vec<Found>, caps: Caps) -> (Impact, Counts) {
    found.sort_by(|a, b| {
        let key = |f: &Found| (f.function.test, std::cmp::Reverse(f.function.changed_lines));
        key(a)
            .cmp(&key(b))
            .then_with(|| (&a.function.file, a.function.lines).cmp(&(&b.function.file, b.function.lines)))
    });
    let mut order = Vec::new();
    for (f, function) in found.iter().enumerate() {
        order.push(Item::Function(f));
        order.extend((0..function.callers.len()).map(|c| Item::Caller(f, c)));
    }
    for (f, function) in found.iter().enumerate() {
        order.extend((0..function.tests.len()).map(|t| Item::Test(f, t)));
    }
    let mut taken: Vec<Item> = Vec::new();
    let mut entries = 0;
    let mut bytes = EMPTY_BYTES;
    let mut has_function = vec![false; found.len()];
    for item in order {
        let (size, entry) = match item {
            Item::Function(f) => (function_bytes(&found[f].function), 0),
            Item::Caller(f, c) => (site_bytes(&found[f].callers[c]), 1),
            Item::Test(f, t) => (site_bytes(&found[f].tests[t]), 1),
        };
        let owner = match item {
            Item::Function(f) | Item::Caller(f, _) | Item::Test(f, _) => f,
        };
        if (entry == 1 && (!has_function[owner] || entries >= caps.entries)) || bytes + size > caps.bytes {
            continue;
        }
        if let Item::Function(f) = item {
            has_function[f] = true;
        }
        entries += entry;
        bytes += size;
        taken.push(item);
    }
    let mut impact = assemble(&found, &taken);
    // The sizes above are close estimates; drop from the end until the JSON fits.
    while json_len(&impact) > caps.bytes && !taken.is_empty() {
        taken.pop();
        impact = assemble(&found, &taken);
    }
    let given = count(&impact);
    let total = Counts {
        functions: found.len() as u32,
        callers: found.iter().map(|f| f.callers.len() as u32).sum(),
        tests: found.iter().map(|f| f.tests.len() as u32).sum(),
    };
    let left = LeftOut {
        functions: total.functions - given.functions,
        callers: total.callers - given.callers,
        tests: total.tests - given.tests,
    };
    if left != LeftOut::default() {
        impact.left_out = Some(left);
        if json_len(&impact) > caps.bytes {
            // The note of what was left out must fit too: the last function goes.
            while json_len(&impact) > caps.bytes && !taken.is_empty() {
                taken.pop();
                let mut smaller = assemble(&found, &taken);
                let given = count(&smaller);
                smaller.left_out = Some(LeftOut {
                    functions: total.functions - given.functions,
                    callers: total.callers - given.callers,
                    tests: total.tests - given.tests,
                });
                impact = smaller;
            }
        }
    }
    let given = count(&impact);
    (impact, given)
}

/// `{"functions":[]}`, and room for the note of what was left out.
const EMPTY_BYTES: usize = 16 + 64;

fn function_bytes(function: &ImpactFunction) -> usize {
    // The comma before it, and room for `"callers":[]`, `"tests":[]` and `"more"`.
    json_len(function) + 1 + 12 + 10 + 12
}

fn site_bytes(site: &Site) -> usize {
    json_len(site) + 1
}

fn json_len<T: serde::Serialize>(value: &T) -> usize {
    serde_json::to_vec(value).map_or(usize::MAX / 4, |v| v.len())
}

/// The impact holding the `taken` items, each function's `more` counting what of it
/// was left out.
fn assemble(found: &[Found], taken: &[Item]) -> Impact {
    let mut functions: Vec<Option<ImpactFunction>> = vec![None; found.len()];
    for item in taken {
        match *item {
            Item::Function(f) => functions[f] = Some(found[f].function.clone()),
            Item::Caller(f, c) => {
                if let Some(function) = &mut functions[f] {
                    function.callers.push(found[f].callers[c].clone());
                }
            }
            Item::Test(f, t) => {
                if let Some(function) = &mut functions[f] {
                    function.tests.push(found[f].tests[t].clone());
                }
            }
        }
    }
    let functions = functions
        .into_iter()
        .zip(found)
        .filter_map(|(function, all)| {
            let mut function = function?;
            let listed = function.callers.len() + function.tests.len();
            function.more = (all.callers.len() + all.tests.len() - listed) as u32;
            Some(function)
        })
        .collect();
    Impact { functions, left_out: None }
}

fn count(impact: &Impact) -> Counts {
    Counts {
        functions: impact.functions.len() as u32,
        callers: impact.functions.iter().map(|f| f.callers.len() as u32).sum(),
        tests: impact.functions.iter().map(|f| f.tests.len() as u32).sum(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::impact::model::ChangeKind;

    fn site(file: &str, line: u32) -> Site {
        Site { file: file.into(), line, text: format!("call_it({line});"), within: Some("caller".into()) }
    }

    fn found(name: &str, changed: u32, callers: u32, tests: u32) -> Found {
        Found {
            function: ImpactFunction {
                name: name.into(),
                kind: "function".into(),
                container: None,
                file: "src/lib.rs".into(),
                lines: [changed, changed + 5],
                change: ChangeKind::Modified,
                changed_lines: changed,
                signature: format!("fn {name}()"),
                test: false,
                callers: Vec::new(),
                tests: Vec::new(),
                more: 0,
            },
            callers: (0..callers).map(|l| site("src/main.rs", l + 1)).collect(),
            tests: (0..tests).map(|l| site("tests/it.rs", l + 1)).collect(),
        }
    }

    #[test]
    fn the_callers_of_the_most_changed_functions_come_first_and_tests_after_callers() {
        let caps = Caps { entries: 5, bytes: 1 << 20 };
        let (impact, given) = within_caps(vec![found("small", 2, 3, 1), found("big", 9, 3, 1)], caps);
        let names: Vec<&str> = impact.functions.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(names, ["big", "small"]);
        assert_eq!((impact.functions[0].callers.len(), impact.functions[1].callers.len()), (3, 2));
        assert!(impact.functions.iter().all(|f| f.tests.is_empty()), "callers before tests");
        assert_eq!(given, Counts { functions: 2, callers: 5, tests: 0 });
        assert_eq!(impact.left_out, Some(LeftOut { functions: 0, callers: 1, tests: 2 }));
        assert_eq!((impact.functions[0].more, impact.functions[1].more), (1, 2));
    }

    #[test]
    fn the_json_never_passes_the_byte_cap() {
        let many: Vec<Found> = (0..200).map(|i| found(&format!("f{i}"), i % 17, 30, 30)).collect();
        for bytes in [0, 100, 500, 2_000, 8_192] {
            let (impact, given) = within_caps(many.clone(), Caps { entries: 40, bytes });
            // An impact with no function is not given at all.
            let len = serde_json::to_vec(&impact).expect("json").len();
            assert!(impact.functions.is_empty() || len <= bytes, "{len} bytes over a cap of {bytes}");
            assert_eq!(impact.functions.is_empty(), bytes < 500, "{bytes}: {impact:?}");
            assert!(given.callers + given.tests <= 40);
        }
    }

    #[test]
    fn nothing_is_left_out_when_everything_fits() {
        let (impact, given) = within_caps(vec![found("a", 1, 2, 2)], Caps { entries: 40, bytes: 8192 });
        assert_eq!(impact.left_out, None);
        assert_eq!(given, Counts { functions: 1, callers: 2, tests: 2 });
    }
}
