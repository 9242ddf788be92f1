//! From a Hive table's columns to an Iceberg schema, an identity partition spec and the name
//! mapping that lets Iceberg readers find columns in files written without Iceberg field ids;
//! and whether an ORC file's own types can be read through that schema.

use std::sync::Arc;

use iceberg::spec::{
    ListType, MapType, MappedField, NameMapping, NestedField, NestedFieldRef, PrimitiveType,
    Schema, StructType, Type,
};
use orc_rust::proto;
use orc_rust::proto::r#type::Kind;
use serde::Serialize;

use super::hive_type::HiveType;

/// Something about one column an operator must know before migrating.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ColumnNote {
    pub column: String,
    pub hive_type: String,
    /// The Iceberg type it becomes, when it can become one.
    pub iceberg_type: Option<String>,
    pub note: String,
}

/// The Iceberg view of a Hive table's columns.
#[derive(Debug, Clone)]
pub struct Converted {
    /// Data columns, then partition keys (Iceberg keeps partition values as columns).
    pub schema: Schema,
    pub partition_keys: Vec<String>,
    /// Lossless changes of type (tinyint becomes int, varchar becomes string).
    pub conversions: Vec<ColumnNote>,
}

/// Why a table's columns have no Iceberg schema, with the lossless changes found on the way.
#[derive(Debug, Clone)]
pub struct Blocked {
    /// Columns Iceberg cannot hold as Hive reads them.
    pub blocks: Vec<ColumnNote>,
    pub conversions: Vec<ColumnNote>,
}

struct Ids(i32);

impl Ids {
    fn next(&mut self) -> i32 {
        self.0 += 1;
        self.0
    }
}

/// The Iceberg type of a Hive type, or why there is none. `path` names the column in notes.
fn convert(
    t: &HiveType,
    path: &str,
    ids: &mut Ids,
    conversions: &mut Vec<ColumnNote>,
) -> Result<Type, String> {
    let note = |to: &str, why: &str, conversions: &mut Vec<ColumnNote>| {
        conversions.push(ColumnNote {
            column: path.to_owned(),
            hive_type: t.to_string(),
            iceberg_type: Some(to.to_owned()),
            note: why.to_owned(),
        })
    };
    Ok(match t {
        HiveType::Boolean => Type::Primitive(PrimitiveType::Boolean),
        HiveType::TinyInt | HiveType::SmallInt => {
            note("int", "widened to int: every value is kept", conversions);
            Type::Primitive(PrimitiveType::Int)
        }
        HiveType::Int => Type::Primitive(PrimitiveType::Int),
        HiveType::BigInt => Type::Primitive(PrimitiveType::Long),
        HiveType::Float => Type::Primitive(PrimitiveType::Float),
        HiveType::Double => Type::Primitive(PrimitiveType::Double),
        HiveType::String => Type::Primitive(PrimitiveType::String),
        HiveType::Varchar(n) => {
            note(
                "string",
                &format!("becomes string: the {n}-character limit is no longer enforced on writes"),
                conversions,
            );
            Type::Primitive(PrimitiveType::String)
        }
        HiveType::Char(n) => {
            return Err(format!(
                "char({n}) has no Iceberg type: Iceberg would read it as string with the \
                 padding ORC stores, Hive strips it, so values would change; \
                 ALTER TABLE ... CHANGE COLUMN to varchar or string first"
            ))
        }
        HiveType::Binary => Type::Primitive(PrimitiveType::Binary),
        HiveType::Date => Type::Primitive(PrimitiveType::Date),
        HiveType::Timestamp => Type::Primitive(PrimitiveType::Timestamp),
        HiveType::Decimal { precision, scale } => {
            if *precision > 38 || scale > precision {
                return Err(format!("{t} is outside Iceberg's decimal range"));
            }
            Type::Primitive(PrimitiveType::Decimal {
                precision: *precision,
                scale: *scale,
            })
        }
        HiveType::Array(e) => {
            let id = ids.next();
            let e = convert(e, &format!("{path}.element"), ids, conversions)?;
            Type::List(ListType::new(Arc::new(NestedField::list_element(
                id, e, false,
            ))))
        }
        HiveType::Map(k, v) => {
            let (kid, vid) = (ids.next(), ids.next());
            let k = convert(k, &format!("{path}.key"), ids, conversions)?;
            let v = convert(v, &format!("{path}.value"), ids, conversions)?;
            Type::Map(MapType::new(
                Arc::new(NestedField::map_key_element(kid, k)),
                Arc::new(NestedField::map_value_element(vid, v, false)),
            ))
        }
        HiveType::Struct(fields) => {
            let ids_of: Vec<i32> = fields.iter().map(|_| ids.next()).collect();
            let mut out: Vec<NestedFieldRef> = vec![];
            for ((name, ft), id) in fields.iter().zip(ids_of) {
                let ft = convert(ft, &format!("{path}.{name}"), ids, conversions)?;
                out.push(Arc::new(NestedField::optional(id, name, ft)));
            }
            Type::Struct(StructType::new(out))
        }
        HiveType::Union(_) => {
            return Err(format!("{t}: Iceberg has no union type"));
        }
        HiveType::Other(name) => return Err(format!("{name} has no Iceberg type")),
    })
}

/// Converts `(name, hive type)` data columns and partition keys. Blocks are collected, not
/// returned early, so `check` can list them all; `schema` is only usable when `blocks` is empty.
pub fn convert_table(
    columns: &[(String, String)],
    partition_keys: &[(String, String)],
) -> Result<Converted, Blocked> {
    let mut ids = Ids(columns.len() as i32 + partition_keys.len() as i32);
    let mut conversions = vec![];
    let mut blocks = vec![];
    let mut fields: Vec<NestedFieldRef> = vec![];
    for (i, (name, text)) in columns.iter().chain(partition_keys).enumerate() {
        let parsed = match HiveType::parse(text) {
            Ok(t) => t,
            Err(e) => {
                blocks.push(ColumnNote {
                    column: name.clone(),
                    hive_type: text.clone(),
                    iceberg_type: None,
                    note: e.to_string(),
                });
                continue;
            }
        };
        let is_key = i >= columns.len();
        if is_key && !partition_key_type_supported(&parsed) {
            blocks.push(ColumnNote {
                column: name.clone(),
                hive_type: text.clone(),
                iceberg_type: None,
                note: "partition values of this type cannot be expressed exactly in Iceberg \
                       (supported: string, varchar, int types, bigint, boolean, date, decimal)"
                    .into(),
            });
            continue;
        }
        match convert(&parsed, name, &mut ids, &mut conversions) {
            Ok(t) => fields.push(Arc::new(NestedField::optional(i as i32 + 1, name, t))),
            Err(note) => blocks.push(ColumnNote {
                column: name.clone(),
                hive_type: text.clone(),
                iceberg_type: None,
                note,
            }),
        }
    }
    if !blocks.is_empty() {
        return Err(Blocked {
            blocks,
            conversions,
        });
    }
    let schema = Schema::builder()
        .with_fields(fields)
        .build()
        .map_err(|e| Blocked {
            blocks: vec![ColumnNote {
                column: String::new(),
                hive_type: String::new(),
                iceberg_type: None,
                note: format!("the Iceberg schema is invalid: {e}"),
            }],
            conversions: conversions.clone(),
        })?;
    Ok(Converted {
        schema,
        partition_keys: partition_keys.iter().map(|(n, _)| n.clone()).collect(),
        conversions,
    })
}

fn partition_key_type_supported(t: &HiveType) -> bool {
    matches!(
        t,
        HiveType::String
            | HiveType::Varchar(_)
            | HiveType::TinyInt
            | HiveType::SmallInt
            | HiveType::Int
            | HiveType::BigInt
            | HiveType::Boolean
            | HiveType::Date
            | HiveType::Decimal { .. }
    )
}

/// The name mapping (`schema.name-mapping.default`) of `schema`, as Iceberg's own
/// `MappingUtil.create` builds it: every field by its name, list elements as `element`, map
/// keys and values as `key` and `value`. `legacy_positions` adds `_colN` aliases to top-level
/// fields for files Hive wrote with positional names.
pub fn name_mapping(schema: &Schema, legacy_positions: bool) -> NameMapping {
    fn fields_of(t: &Type) -> Vec<MappedField> {
        match t {
            Type::Struct(s) => s.fields().iter().map(|f| field(f, None)).collect(),
            Type::List(l) => vec![field(&l.element_field, Some("element"))],
            Type::Map(m) => vec![
                field(&m.key_field, Some("key")),
                field(&m.value_field, Some("value")),
            ],
            Type::Primitive(_) => vec![],
        }
    }
    fn field(f: &NestedField, name: Option<&str>) -> MappedField {
        let name = name.map(str::to_owned).unwrap_or_else(|| f.name.clone());
        MappedField::new(Some(f.id), vec![name], fields_of(&f.field_type))
    }
    let root = schema
        .as_struct()
        .fields()
        .iter()
        .enumerate()
        .map(|(i, f)| {
            let mut names = vec![f.name.clone()];
            if legacy_positions {
                names.push(format!("_col{i}"));
            }
            MappedField::new(Some(f.id), names, fields_of(&f.field_type))
        })
        .collect();
    NameMapping::new(root)
}

/// True when the file's top-level columns carry Hive's positional names (`_col0`, ...), as
/// files written by Hive before 2.0 (and some ACID conversions) do.
pub fn has_positional_names(types: &[proto::Type]) -> bool {
    types.first().is_some_and(|root| {
        !root.field_names.is_empty()
            && root
                .field_names
                .iter()
                .enumerate()
                .all(|(i, n)| *n == format!("_col{i}"))
    })
}

/// The ORC column id of each of the table's data columns in a file (by name, or by position
/// for positional names); `None` where the file lacks the column (Iceberg reads it as null).
pub fn file_columns(types: &[proto::Type], columns: &[String]) -> Vec<Option<u32>> {
    let Some(root) = types.first() else {
        return vec![None; columns.len()];
    };
    let positional = has_positional_names(types);
    columns
        .iter()
        .enumerate()
        .map(|(i, name)| {
            let at = if positional {
                (i < root.field_names.len()).then_some(i)
            } else {
                root.field_names
                    .iter()
                    .position(|n| n.eq_ignore_ascii_case(name))
            };
            at.and_then(|at| root.subtypes.get(at).copied())
        })
        .collect()
}

/// Why Iceberg's ORC reader cannot open a file at all, if it cannot: it converts the whole file
/// schema, unread columns included, and has no union type.
pub fn unreadable_by_iceberg(types: &[proto::Type]) -> Option<String> {
    types
        .iter()
        .any(|t| t.kind == Some(Kind::Union as i32))
        .then(|| "the file holds a uniontype column, which Iceberg's ORC reader cannot open even when the table does not read it".to_string())
}

/// Why the ORC type at `id` cannot be read as `t` by Iceberg's ORC reader (same kind, or a
/// promotion Iceberg allows: int to long, float to double, wider decimal), if it cannot.
pub fn file_type_mismatch(types: &[proto::Type], id: u32, t: &HiveType) -> Option<String> {
    let Some(ft) = types.get(id as usize) else {
        return Some(format!("column {id} is missing from the file's types"));
    };
    let kind = Kind::try_from(ft.kind.unwrap_or_default()).ok();
    let sub = |i: usize| ft.subtypes.get(i).copied();
    let ok = match (t, kind) {
        (HiveType::Boolean, Some(Kind::Boolean)) => true,
        (
            HiveType::TinyInt | HiveType::SmallInt | HiveType::Int,
            Some(Kind::Byte | Kind::Short | Kind::Int),
        ) => true,
        (HiveType::BigInt, Some(Kind::Byte | Kind::Short | Kind::Int | Kind::Long)) => true,
        (HiveType::Float, Some(Kind::Float)) => true,
        (HiveType::Double, Some(Kind::Float | Kind::Double)) => true,
        (HiveType::String | HiveType::Varchar(_), Some(Kind::String | Kind::Varchar)) => true,
        (HiveType::Binary, Some(Kind::Binary)) => true,
        (HiveType::Date, Some(Kind::Date)) => true,
        (HiveType::Timestamp, Some(Kind::Timestamp)) => true,
        (HiveType::Decimal { precision, scale }, Some(Kind::Decimal)) => {
            ft.scale.unwrap_or(0) == *scale && ft.precision.unwrap_or(38) <= *precision
        }
        (HiveType::Array(e), Some(Kind::List)) => {
            return sub(0).and_then(|c| file_type_mismatch(types, c, e))
        }
        (HiveType::Map(k, v), Some(Kind::Map)) => {
            return sub(0)
                .and_then(|c| file_type_mismatch(types, c, k))
                .or_else(|| sub(1).and_then(|c| file_type_mismatch(types, c, v)))
        }
        (HiveType::Struct(fields), Some(Kind::Struct)) => {
            return fields.iter().find_map(|(name, ftype)| {
                let at = ft
                    .field_names
                    .iter()
                    .position(|n| n.eq_ignore_ascii_case(name))?;
                file_type_mismatch(types, sub(at)?, ftype).map(|m| format!("{name}: {m}"))
            })
        }
        _ => false,
    };
    (!ok).then(|| {
        format!(
            "the file holds {} where the table says {t}",
            kind.map(|k| k.as_str_name().to_ascii_lowercase())
                .unwrap_or_else(|| "an unknown type".into())
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cols(v: &[(&str, &str)]) -> Vec<(String, String)> {
        v.iter()
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect()
    }

    #[test]
    fn converts_and_notes_lossless_changes() {
        let c = convert_table(
            &cols(&[
                ("a", "tinyint"),
                ("b", "varchar(5)"),
                ("c", "array<struct<x:int,y:map<string,bigint>>>"),
            ]),
            &cols(&[("dt", "string")]),
        )
        .unwrap();
        assert_eq!(c.schema.as_struct().fields().len(), 4);
        assert_eq!(c.conversions.len(), 2);
        assert_eq!(c.schema.field_by_name("dt").unwrap().id, 4);
        let mapping = serde_json::to_value(name_mapping(&c.schema, true)).unwrap();
        assert_eq!(mapping[0]["names"], serde_json::json!(["a", "_col0"]));
        assert_eq!(
            mapping[2]["fields"][0]["names"],
            serde_json::json!(["element"])
        );
    }

    #[test]
    fn blocks_what_iceberg_cannot_hold() {
        let blocks = convert_table(
            &cols(&[
                ("u", "uniontype<int,string>"),
                ("c", "char(3)"),
                ("ok", "int"),
            ]),
            &cols(&[("ts", "timestamp")]),
        )
        .unwrap_err()
        .blocks;
        let names: Vec<&str> = blocks.iter().map(|b| b.column.as_str()).collect();
        assert_eq!(names, ["u", "c", "ts"]);
    }

    fn ty(kind: Kind, subtypes: Vec<u32>, names: &[&str]) -> proto::Type {
        proto::Type {
            kind: Some(kind as i32),
            subtypes,
            field_names: names.iter().map(|s| s.to_string()).collect(),
            ..Default::default()
        }
    }

    #[test]
    fn file_types_checked_by_name_or_position() {
        let types = vec![
            ty(Kind::Struct, vec![1, 2], &["_col0", "_col1"]),
            ty(Kind::Short, vec![], &[]),
            ty(Kind::String, vec![], &[]),
        ];
        let at = file_columns(&types, &["a".into(), "b".into(), "c".into()]);
        assert_eq!(at, vec![Some(1), Some(2), None]);
        assert!(file_type_mismatch(&types, 1, &HiveType::Int).is_none());
        assert!(file_type_mismatch(&types, 1, &HiveType::BigInt).is_none());
        assert!(file_type_mismatch(&types, 2, &HiveType::Int).is_some());
    }
}
