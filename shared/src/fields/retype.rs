//! What a type change keeps: [`Field::retype`] turns a field into another type,
//! keeping its name, `required`, description and every constraint that still applies,
//! and a [`Shelf`] remembers the constraints the new type does not use, so switching
//! back brings them back.

use serde_json::{Map, Value};

use super::{Field, FieldType, field_schema};

/// Constraints a field's type no longer uses, remembered so that switching back to a
/// type that uses them brings them back (a mis-clicked type never loses a typed
/// `maxLength`). Each slot is `None` until a field of a type that uses it was seen.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Shelf {
    bounds: Option<(Option<f64>, Option<f64>)>,
    lengths: Option<(Option<u64>, Option<u64>)>,
    items: Option<(Option<FieldType>, Option<u64>, Option<u64>)>,
    enum_values: Option<Vec<String>>,
    fields: Option<Vec<Field>>,
    /// Kept keywords with the type they were written for.
    keywords: Vec<(FieldType, String, Value)>,
}

impl Field {
    /// The field as type `to`, with what the author has for it in `shelf`: the name,
    /// `required` and the description stay; every constraint that still applies stays
    /// (integer ⇄ number keep their bounds, as far as an integer can take them; an enum
    /// turned into an array becomes an array of that enum); the rest goes to the
    /// returned shelf, and what the shelf holds for `to` comes back.
    pub fn retype(&self, to: FieldType, shelf: &Shelf) -> (Field, Shelf) {
        if to == self.field_type {
            return (self.clone(), shelf.clone());
        }
        let pool = shelf.pooled(self);
        let mut f = Field {
            required: self.required,
            description: self.plain_description(),
            item_type: None,
            ..Field::new(self.name.clone(), to)
        };
        match to {
            FieldType::Integer | FieldType::Number => {
                let fits = |v: &f64| to == FieldType::Number || v.fract() == 0.0;
                if let Some((lo, hi)) = pool.bounds {
                    (f.minimum, f.maximum) = (lo.filter(fits), hi.filter(fits));
                }
            }
            FieldType::String => (f.min_length, f.max_length) = pool.lengths.unwrap_or_default(),
            FieldType::Array => match pool.items {
                Some((item_type, lo, hi)) => (f.item_type, f.min_items, f.max_items) = (item_type, lo, hi),
                None => f.item_type = Some(item_type_like(self.field_type)),
            },
            FieldType::Custom => {
                let kept: Map<String, Value> = pool
                    .keywords
                    .iter()
                    .filter(|(origin, ..)| *origin == FieldType::Custom)
                    .map(|(_, k, v)| (k.clone(), v.clone()))
                    .collect();
                f.description.clear();
                f.extra =
                    if kept.is_empty() { field_schema(self).as_object().cloned().unwrap_or_default() } else { kept };
                return (f, pool);
            }
            FieldType::Boolean | FieldType::Enum | FieldType::Object => {}
        }
        pool.restore_shared(&mut f);
        (f, pool)
    }

    /// An array field with items of `item_type`: enum values and nested fields follow
    /// the items as [`Field::retype`] has them follow the type.
    pub fn retype_items(&self, item_type: Option<FieldType>, shelf: &Shelf) -> (Field, Shelf) {
        let pool = shelf.pooled(self);
        let mut f = Field { item_type, enum_values: Vec::new(), fields: Vec::new(), ..self.clone() };
        pool.restore_shared(&mut f);
        (f, pool)
    }

    /// The description, also for a `custom` field (which keeps it in its raw schema).
    fn plain_description(&self) -> String {
        match self.field_type {
            FieldType::Custom => self.extra.get("description").and_then(Value::as_str).unwrap_or_default().to_string(),
            _ => self.description.clone(),
        }
    }

    fn uses_enum_values(&self) -> bool {
        self.field_type == FieldType::Enum
            || (self.field_type == FieldType::Array && self.item_type == Some(FieldType::Enum))
    }

    fn uses_fields(&self) -> bool {
        self.field_type == FieldType::Object
            || (self.field_type == FieldType::Array && self.item_type == Some(FieldType::Object))
    }
}

impl Shelf {
    /// This shelf with `current`'s constraints put on it: a slot `current`'s type uses
    /// takes `current`'s value (a cleared constraint stays cleared); the others keep
    /// what the shelf remembered.
    fn pooled(&self, current: &Field) -> Shelf {
        let mut pool = self.clone();
        match current.field_type {
            FieldType::Integer => {
                // A fractional bound an integer could not take stays remembered for
                // when the field becomes a number again.
                let (lo, hi) = self.bounds.unwrap_or_default();
                let keep = |now: Option<f64>, before: Option<f64>| match (now, before) {
                    (None, Some(v)) if v.fract() != 0.0 => Some(v),
                    _ => now,
                };
                pool.bounds = Some((keep(current.minimum, lo), keep(current.maximum, hi)));
            }
            FieldType::Number => pool.bounds = Some((current.minimum, current.maximum)),
            FieldType::String => pool.lengths = Some((current.min_length, current.max_length)),
            FieldType::Array => pool.items = Some((current.item_type, current.min_items, current.max_items)),
            _ => {}
        }
        if current.uses_enum_values() {
            pool.enum_values = Some(current.enum_values.clone());
        }
        if current.uses_fields() {
            pool.fields = Some(current.fields.clone());
        }
        let t = current.field_type;
        pool.keywords.retain(|(origin, k, _)| !keyword_applies(k, *origin, t) && !current.extra.contains_key(k));
        let now = current.extra.iter().map(|(k, v)| (t, k.clone(), v.clone()));
        pool.keywords = now.chain(std::mem::take(&mut pool.keywords)).collect();
        pool
    }

    /// Gives `f` the enum values, nested fields and kept keywords its type uses.
    fn restore_shared(&self, f: &mut Field) {
        if f.uses_enum_values() {
            f.enum_values = self.enum_values.clone().unwrap_or_default();
        }
        if f.uses_fields() {
            f.fields = self.fields.clone().unwrap_or_default();
        }
        for (origin, k, v) in &self.keywords {
            if keyword_applies(k, *origin, f.field_type) && !f.extra.contains_key(k) {
                f.extra.insert(k.clone(), v.clone());
            }
        }
    }
}

/// The item type an array gets when a field of type `from` becomes one: a list of
/// what it was.
fn item_type_like(from: FieldType) -> FieldType {
    match from {
        FieldType::Array | FieldType::Custom => FieldType::String,
        other => other,
    }
}

/// Whether a kept keyword written for a field of type `from` still means something
/// for type `to`. Keywords the builder does not know stay with their own type only.
fn keyword_applies(keyword: &str, from: FieldType, to: FieldType) -> bool {
    use FieldType as T;
    if from == T::Custom || to == T::Custom {
        return from == to;
    }
    match keyword {
        "title" | "$comment" | "deprecated" | "readOnly" | "writeOnly" => true,
        "multipleOf" | "exclusiveMinimum" | "exclusiveMaximum" => matches!(to, T::Integer | T::Number),
        "pattern" | "format" | "contentEncoding" | "contentMediaType" => matches!(to, T::String | T::Enum),
        "uniqueItems" | "contains" | "minContains" | "maxContains" | "prefixItems" | "unevaluatedItems" => {
            to == T::Array
        }
        "additionalProperties"
        | "patternProperties"
        | "propertyNames"
        | "minProperties"
        | "maxProperties"
        | "dependentRequired"
        | "dependentSchemas"
        | "unevaluatedProperties" => to == T::Object,
        _ => from == to,
    }
}
