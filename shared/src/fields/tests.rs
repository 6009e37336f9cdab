//! Tests of the field builder's model: the conversion both ways, type changes with
//! their shelf, names, bounds and counts, and property-tested round trips.

use super::*;

fn field(name: &str, t: FieldType) -> Field {
    Field { item_type: (t == FieldType::Array).then_some(FieldType::String), ..Field::new(name, t) }
}

/// Retypes through `types` in order, carrying the shelf.
fn through(start: &Field, types: &[FieldType]) -> (Field, Shelf) {
    types.iter().fold((start.clone(), Shelf::default()), |(f, shelf), t| f.retype(*t, &shelf))
}

#[test]
fn a_type_change_keeps_name_required_and_description() {
    let f = Field { required: true, description: "where it is".into(), ..field("line", FieldType::String) };
    let (g, _) = f.retype(FieldType::Integer, &Shelf::default());
    assert_eq!((g.name.as_str(), g.required, g.description.as_str()), ("line", true, "where it is"));
    assert_eq!(g.field_type, FieldType::Integer);
}

#[test]
fn integer_and_number_keep_their_bounds() {
    let f = Field { minimum: Some(1.0), maximum: Some(10.0), ..field("line", FieldType::Integer) };
    let (g, shelf) = f.retype(FieldType::Number, &Shelf::default());
    assert_eq!((g.minimum, g.maximum), (Some(1.0), Some(10.0)));
    let (h, _) = g.retype(FieldType::Integer, &shelf);
    assert_eq!(h, f);
}

#[test]
fn a_fractional_bound_waits_while_the_field_is_an_integer() {
    let f = Field { minimum: Some(0.5), maximum: Some(3.0), ..field("score", FieldType::Number) };
    let (g, shelf) = f.retype(FieldType::Integer, &Shelf::default());
    assert_eq!((g.minimum, g.maximum), (None, Some(3.0)), "an integer cannot take 0.5");
    let (h, _) = g.retype(FieldType::Number, &shelf);
    assert_eq!(h, f, "0.5 comes back with the number type");
}

#[test]
fn constraints_of_another_type_come_back_when_the_author_switches_back() {
    let f = Field { max_length: Some(200), min_length: Some(1), ..field("summary", FieldType::String) };
    let (g, shelf) = f.retype(FieldType::Boolean, &Shelf::default());
    assert_eq!(fields_to_schema_of(&g), json!({"type": "boolean"}), "a boolean has no lengths");
    let (h, _) = g.retype(FieldType::String, &shelf);
    assert_eq!(h, f);
}

#[test]
fn a_cleared_constraint_stays_cleared() {
    let f = Field { max_length: Some(200), ..field("summary", FieldType::String) };
    let (g, shelf) = f.retype(FieldType::Integer, &Shelf::default());
    let (mut h, shelf) = g.retype(FieldType::String, &shelf);
    h.max_length = None;
    let (i, shelf) = h.retype(FieldType::Integer, &shelf);
    let (j, _) = i.retype(FieldType::String, &shelf);
    assert_eq!(j.max_length, None);
}

#[test]
fn an_enum_keeps_its_values_while_it_stays_an_enum() {
    let f = Field { enum_values: vec!["high".into(), "low".into()], ..field("level", FieldType::Enum) };
    let (list, shelf) = f.retype(FieldType::Array, &Shelf::default());
    assert_eq!(
        fields_to_schema_of(&list),
        json!({"type": "array", "items": {"type": "string", "enum": ["high", "low"]}}),
        "an enum made a list is a list of that enum"
    );
    let (text, shelf) = list.retype(FieldType::String, &shelf);
    assert!(text.enum_values.is_empty());
    let (back, _) = text.retype(FieldType::Enum, &shelf);
    assert_eq!(back, f);
}

#[test]
fn arrays_keep_their_item_counts_and_items_through_a_change_of_items() {
    let f = Field {
        min_items: Some(1),
        max_items: Some(5),
        item_type: Some(FieldType::Enum),
        enum_values: vec!["a".into()],
        ..field("tags", FieldType::Array)
    };
    let (g, shelf) = f.retype_items(Some(FieldType::Integer), &Shelf::default());
    assert_eq!((g.min_items, g.max_items, g.enum_values.len()), (Some(1), Some(5), 0));
    let (h, _) = g.retype_items(Some(FieldType::Enum), &shelf);
    assert_eq!(h, f, "the enum values come back with enum items");
}

#[test]
fn nested_fields_follow_an_object_into_an_array_and_back() {
    let f = Field { fields: vec![field("x", FieldType::Integer)], ..field("point", FieldType::Object) };
    let (list, shelf) = f.retype(FieldType::Array, &Shelf::default());
    assert_eq!((list.item_type, list.fields.len()), (Some(FieldType::Object), 1));
    assert_eq!(list.retype(FieldType::Object, &shelf).0, f);
}

#[test]
fn kept_keywords_stay_where_they_mean_something() {
    let mut f = field("code", FieldType::String);
    f.extra.insert("pattern".into(), json!("^[A-Z]+$"));
    f.extra.insert("default".into(), json!("AB"));
    f.extra.insert("title".into(), json!("Code"));
    let (e, shelf) = f.retype(FieldType::Enum, &Shelf::default());
    assert_eq!(e.kept_keywords(), vec!["pattern".to_string(), "title".into()], "a default string may not be a value");
    let (i, shelf) = e.retype(FieldType::Integer, &shelf);
    assert_eq!(i.kept_keywords(), vec!["title".to_string()]);
    let (back, _) = i.retype(FieldType::String, &shelf);
    assert_eq!(back, f);
}

#[test]
fn a_custom_field_comes_back_whole() {
    let schema =
        json!({"type": "object", "properties": {"either": {"anyOf": [{"type": "string"}], "description": "one"}}});
    let f = schema_to_fields(&schema).expect("object").fields.remove(0);
    let (s, shelf) = f.retype(FieldType::String, &Shelf::default());
    assert_eq!(s.description, "one", "the description is read out of the raw schema");
    assert_eq!(s.retype(FieldType::Custom, &shelf).0, f);
}

#[test]
fn any_trip_through_other_types_comes_back_to_the_same_field() {
    let mut rng = fastrand::Rng::with_seed(7);
    for _ in 0..3000 {
        let f = random_field(&mut rng);
        let mut types: Vec<FieldType> =
            (0..rng.usize(1..6)).map(|_| FieldType::BUILDER[rng.usize(0..FieldType::BUILDER.len())]).collect();
        types.push(f.field_type);
        let (back, _) = through(&f, &types);
        assert_eq!(back, f, "through {types:?}");
    }
}

#[test]
fn item_counts_round_trip_through_the_schema() {
    let f = Field { min_items: Some(0), max_items: Some(20), ..field("tags", FieldType::Array) };
    let schema = fields_to_schema(&FieldsDoc { fields: vec![f.clone()], extra: Map::new() });
    assert_eq!(
        schema["properties"]["tags"],
        json!({"type": "array", "items": {"type": "string"}, "minItems": 0, "maxItems": 20})
    );
    assert_eq!(schema_to_fields(&schema).expect("object").fields, vec![f]);
}

#[test]
fn integer_bounds_are_written_as_integers() {
    let f = Field { minimum: Some(1.0), maximum: Some(-3.0), ..field("line", FieldType::Integer) };
    let text = serde_json::to_string(&fields_to_schema_of(&f)).expect("json");
    assert_eq!(text, r#"{"type":"integer","minimum":1,"maximum":-3}"#);
    let number = Field { minimum: Some(0.25), ..field("score", FieldType::Number) };
    assert_eq!(fields_to_schema_of(&number), json!({"type": "number", "minimum": 0.25}));
}

#[test]
fn typed_bounds_and_counts_are_read_exactly_or_refused() {
    assert_eq!(parse_bound(" 1 ", FieldType::Integer), Ok(Some(1.0)));
    assert_eq!(parse_bound("", FieldType::Integer), Ok(None));
    assert_eq!(parse_bound("1.5", FieldType::Number), Ok(Some(1.5)));
    assert_eq!(
        parse_bound("1.5", FieldType::Integer),
        Err("`1.5` is not a whole number: an integer field's bounds must be whole numbers".into())
    );
    assert_eq!(parse_bound("ten", FieldType::Number), Err("`ten` is not a number".into()));
    assert_eq!(parse_bound("inf", FieldType::Number), Err("`inf` is not a number".into()));
    assert!(parse_bound("1e300", FieldType::Integer).is_err_and(|e| e.contains("too large")));
    assert_eq!(parse_count("200"), Ok(Some(200)));
    assert_eq!(parse_count(""), Ok(None));
    assert_eq!(parse_count("-1"), Err("`-1` is not a count: use a whole number, 0 or more".into()));
}

#[test]
fn moving_a_property_is_a_change() {
    let a = json!({"properties": {"x": {"type": "string"}, "y": {"enum": [1, 2]}}});
    let moved = json!({"properties": {"y": {"enum": [1, 2]}, "x": {"type": "string"}}});
    assert_eq!(a, moved, "serde_json's == ignores key order");
    assert!(!same_json(&a, &moved));
    assert!(same_json(&a, &a.clone()));
    assert!(!same_json(&json!([1, 2]), &json!([2, 1])));
}

#[test]
fn names_must_be_present_and_unique() {
    let names = ["summary", "", "line", "summary"];
    let problems: Vec<Option<String>> = (0..names.len()).map(|i| name_problem(&names, i)).collect();
    assert_eq!(
        problems,
        vec![
            Some("two fields are named `summary`: names must be unique".into()),
            Some("a field needs a name".into()),
            None,
            Some("two fields are named `summary`: names must be unique".into()),
        ]
    );
    assert_eq!(free_field_name(&[]), "field_1");
    assert_eq!(free_field_name(&["field_1", "field_3"]), "field_2");
    assert_eq!(free_field_name(&["field_2", "field_1"]), "field_3");
}

fn fields_to_schema_of(f: &Field) -> Value {
    fields_to_schema(&FieldsDoc { fields: vec![f.clone()], extra: Map::new() })["properties"][&f.name].clone()
}

/// A random field as the builder makes them (only its type's constraints set).
fn random_field(rng: &mut fastrand::Rng) -> Field {
    let types = [FieldType::BUILDER.as_slice(), &[FieldType::Custom]].concat();
    let t = types[rng.usize(0..types.len())];
    let mut f = Field { required: rng.bool(), ..field("f", t) };
    if rng.bool() && t != FieldType::Custom {
        f.description = "what it is".into();
    }
    let maybe = |rng: &mut fastrand::Rng, v: u64| rng.bool().then_some(v);
    match t {
        FieldType::String => (f.min_length, f.max_length) = (maybe(rng, 1), maybe(rng, 80)),
        FieldType::Integer => (f.minimum, f.maximum) = (rng.bool().then_some(-2.0), rng.bool().then_some(9.0)),
        FieldType::Number => (f.minimum, f.maximum) = (rng.bool().then_some(0.5), rng.bool().then_some(9.0)),
        FieldType::Enum => f.enum_values = vec!["a".into(), "b".into()],
        FieldType::Object => f.fields = vec![field("x", FieldType::Boolean)],
        FieldType::Array => {
            let items = [FieldType::String, FieldType::Enum, FieldType::Object, FieldType::Number];
            f.item_type = Some(items[rng.usize(0..items.len())]);
            (f.min_items, f.max_items) = (maybe(rng, 1), maybe(rng, 9));
            if f.item_type == Some(FieldType::Enum) {
                f.enum_values = vec!["c".into()];
            }
            if f.item_type == Some(FieldType::Object) {
                f.fields = vec![field("y", FieldType::String)];
            }
        }
        FieldType::Custom => f.extra = json!({"anyOf": [{"type": "string"}]}).as_object().cloned().unwrap_or_default(),
        FieldType::Boolean => {}
    }
    if rng.bool() && t != FieldType::Custom {
        f.extra.insert("title".into(), json!("T"));
    }
    if rng.bool() && t == FieldType::String {
        f.extra.insert("pattern".into(), json!("^x"));
    }
    f
}
