//! Route nodes and the predicates they test: the configuration in the file, and
//! the one definition of which case a route takes, which the engine runs and the
//! editor can show.
//!
//! A route's input is one JSON object holding each upstream node's output under the
//! node's id (a trigger's is the run input), so a predicate's pointer starts with an
//! upstream id: `/classify/touches_auth`.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The cases of a route, tried in order: the first whose predicate holds is taken.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[cfg_attr(feature = "json-schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct RouteConfig {
    /// The cases with a predicate, in the order they are tried.
    pub cases: Vec<RouteCase>,
    /// The case taken when no predicate holds. Without one, a route that matches
    /// nothing takes no branch and every branch is skipped.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub otherwise: Option<String>,
}

/// One case of a route: its name, which edges out of the route carry, and when it
/// is taken.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[cfg_attr(feature = "json-schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct RouteCase {
    /// The case's name, unique within the route.
    pub name: String,
    /// When it is taken.
    pub when: Predicate,
}

/// A test on one value of a JSON document, found by a JSON pointer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[cfg_attr(feature = "json-schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct Predicate {
    /// Where the value is (RFC 6901), such as `/classify/touches_auth`.
    pub pointer: String,
    /// How it is tested.
    pub op: PredicateOp,
    /// What it is compared with: any JSON value for `equals`, an array for `one_of`,
    /// a number for the bounds; absent for `exists` and `missing`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<Value>,
}

/// How a predicate tests its value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[cfg_attr(feature = "json-schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum PredicateOp {
    /// The value equals `value` (numbers by value: 2 equals 2.0).
    Equals,
    /// The value equals one of the items of `value`.
    OneOf,
    /// The pointer finds a value (`null` included).
    Exists,
    /// The pointer finds nothing.
    Missing,
    /// The value is a number greater than `value`.
    Gt,
    /// The value is a number at least `value`.
    Gte,
    /// The value is a number less than `value`.
    Lt,
    /// The value is a number at most `value`.
    Lte,
}

impl PredicateOp {
    /// Every operator, in the order the editor offers them.
    pub const ALL: [PredicateOp; 8] = [
        PredicateOp::Equals,
        PredicateOp::OneOf,
        PredicateOp::Exists,
        PredicateOp::Missing,
        PredicateOp::Gt,
        PredicateOp::Gte,
        PredicateOp::Lt,
        PredicateOp::Lte,
    ];

    /// The name used in files.
    pub fn as_str(self) -> &'static str {
        match self {
            PredicateOp::Equals => "equals",
            PredicateOp::OneOf => "one_of",
            PredicateOp::Exists => "exists",
            PredicateOp::Missing => "missing",
            PredicateOp::Gt => "gt",
            PredicateOp::Gte => "gte",
            PredicateOp::Lt => "lt",
            PredicateOp::Lte => "lte",
        }
    }

    /// What `value` must be for this operator, or `None` when it must be absent.
    pub fn operand(self) -> Option<Operand> {
        match self {
            PredicateOp::Equals => Some(Operand::Any),
            PredicateOp::OneOf => Some(Operand::Array),
            PredicateOp::Exists | PredicateOp::Missing => None,
            PredicateOp::Gt | PredicateOp::Gte | PredicateOp::Lt | PredicateOp::Lte => Some(Operand::Number),
        }
    }
}

/// The kind of `value` an operator compares with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Operand {
    /// Any JSON value.
    Any,
    /// An array of candidates.
    Array,
    /// A number.
    Number,
}

impl Operand {
    /// Whether `value` is of this kind.
    pub fn accepts(self, value: &Value) -> bool {
        match self {
            Operand::Any => true,
            Operand::Array => value.is_array(),
            Operand::Number => value.is_number(),
        }
    }

    /// How the file should give it, for messages.
    pub fn describe(self) -> &'static str {
        match self {
            Operand::Any => "a JSON value",
            Operand::Array => "an array of candidate values",
            Operand::Number => "a number",
        }
    }
}

impl Predicate {
    /// Whether the predicate holds for `document`. A value of the wrong type (a
    /// string compared with a bound) does not hold.
    pub fn holds(&self, document: &Value) -> bool {
        let found = document.pointer(&self.pointer);
        let operand = self.value.as_ref();
        match self.op {
            PredicateOp::Exists => found.is_some(),
            PredicateOp::Missing => found.is_none(),
            PredicateOp::Equals => matches!((found, operand), (Some(a), Some(b)) if same(a, b)),
            PredicateOp::OneOf => match (found, operand.and_then(Value::as_array)) {
                (Some(a), Some(candidates)) => candidates.iter().any(|b| same(a, b)),
                _ => false,
            },
            PredicateOp::Gt | PredicateOp::Gte | PredicateOp::Lt | PredicateOp::Lte => {
                let (Some(a), Some(b)) = (found.and_then(Value::as_f64), operand.and_then(Value::as_f64)) else {
                    return false;
                };
                match self.op {
                    PredicateOp::Gt => a > b,
                    PredicateOp::Gte => a >= b,
                    PredicateOp::Lt => a < b,
                    _ => a <= b,
                }
            }
        }
    }
}

/// JSON equality with numbers compared by value, so that `2` equals `2.0`.
fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x == y || x.as_f64() == y.as_f64(),
        (Value::Array(x), Value::Array(y)) => x.len() == y.len() && x.iter().zip(y).all(|(a, b)| same(a, b)),
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, a)| y.get(k).is_some_and(|b| same(a, b)))
        }
        _ => a == b,
    }
}

impl RouteConfig {
    /// The case taken for `document`: the first whose predicate holds, else
    /// `otherwise`, else none.
    pub fn choose(&self, document: &Value) -> Option<&str> {
        self.cases
            .iter()
            .find(|case| case.when.holds(document))
            .map(|case| case.name.as_str())
            .or(self.otherwise.as_deref())
    }

    /// Every case name, `otherwise` last.
    pub fn case_names(&self) -> impl Iterator<Item = &str> {
        self.cases.iter().map(|c| c.name.as_str()).chain(self.otherwise.as_deref())
    }
}

/// The first segment of a JSON pointer, unescaped: the upstream node a route's
/// predicate reads. `None` for the empty pointer.
pub fn pointer_head(pointer: &str) -> Option<String> {
    let rest = pointer.strip_prefix('/')?;
    let head = rest.split('/').next().unwrap_or_default();
    Some(head.replace("~1", "/").replace("~0", "~"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn predicate(pointer: &str, op: PredicateOp, value: Option<Value>) -> Predicate {
        Predicate { pointer: pointer.into(), op, value }
    }

    #[test]
    fn each_operator_tests_the_value_the_pointer_finds() {
        let doc = json!({"classify": {"touches_auth": true, "lines": 120, "lang": "rust", "none": null}});
        let cases = [
            (predicate("/classify/touches_auth", PredicateOp::Equals, Some(json!(true))), true),
            (predicate("/classify/touches_auth", PredicateOp::Equals, Some(json!(false))), false),
            (predicate("/classify/lines", PredicateOp::Equals, Some(json!(120.0))), true),
            (predicate("/classify/lang", PredicateOp::OneOf, Some(json!(["go", "rust"]))), true),
            (predicate("/classify/lang", PredicateOp::OneOf, Some(json!(["go"]))), false),
            (predicate("/classify/none", PredicateOp::Exists, None), true),
            (predicate("/classify/absent", PredicateOp::Exists, None), false),
            (predicate("/classify/absent", PredicateOp::Missing, None), true),
            (predicate("/classify/lines", PredicateOp::Gt, Some(json!(100))), true),
            (predicate("/classify/lines", PredicateOp::Gte, Some(json!(120))), true),
            (predicate("/classify/lines", PredicateOp::Lt, Some(json!(120))), false),
            (predicate("/classify/lines", PredicateOp::Lte, Some(json!(120))), true),
            // A string is not a number, whatever it spells.
            (predicate("/classify/lang", PredicateOp::Gt, Some(json!(0))), false),
        ];
        for (p, expected) in cases {
            assert_eq!(p.holds(&doc), expected, "{p:?}");
        }
    }

    #[test]
    fn the_first_case_that_holds_wins_else_otherwise_else_none() {
        let route = RouteConfig {
            cases: vec![
                RouteCase { name: "big".into(), when: predicate("/t/lines", PredicateOp::Gt, Some(json!(500))) },
                RouteCase { name: "auth".into(), when: predicate("/t/auth", PredicateOp::Equals, Some(json!(true))) },
                RouteCase { name: "any".into(), when: predicate("/t", PredicateOp::Exists, None) },
            ],
            otherwise: Some("rest".into()),
        };
        assert_eq!(route.choose(&json!({"t": {"lines": 900, "auth": true}})), Some("big"));
        assert_eq!(route.choose(&json!({"t": {"lines": 9, "auth": true}})), Some("auth"));
        assert_eq!(route.choose(&json!({"t": {}})), Some("any"));
        assert_eq!(route.choose(&json!({})), Some("rest"));
        let strict = RouteConfig { otherwise: None, ..route };
        assert_eq!(strict.choose(&json!({})), None);
        assert_eq!(strict.case_names().collect::<Vec<_>>(), ["big", "auth", "any"]);
    }

    #[test]
    fn the_pointer_head_names_the_upstream_node() {
        assert_eq!(pointer_head("/classify/touches_auth").as_deref(), Some("classify"));
        assert_eq!(pointer_head("/a~1b/x").as_deref(), Some("a/b"));
        assert_eq!(pointer_head("/in").as_deref(), Some("in"));
        assert_eq!(pointer_head(""), None);
        assert_eq!(pointer_head("classify"), None);
    }

    #[test]
    fn a_route_reads_and_writes_its_file_form() {
        let text =
            r#"{"cases":[{"name":"auth","when":{"pointer":"/c/auth","op":"equals","value":true}}],"otherwise":"rest"}"#;
        let route: RouteConfig = serde_json::from_str(text).expect("parses");
        assert_eq!(serde_json::to_string(&route).expect("writes"), text);
        let err =
            serde_json::from_str::<RouteConfig>(r#"{"cases":[{"name":"a","when":{"pointer":"/x","op":"like"}}]}"#)
                .expect_err("unknown operator accepted");
        assert!(err.to_string().contains("unknown variant `like`"), "{err}");
    }
}
