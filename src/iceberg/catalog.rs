//! The metastore side of an Iceberg table, as Iceberg's `HiveCatalog` keeps it: an external
//! table whose parameters point at the current metadata JSON, with Iceberg's storage handler so
//! Hive can read it; and the backup of the Hive definition an in-place migration replaces.

use std::collections::BTreeMap;

use iceberg::spec::{PrimitiveType, Schema, Type};
use thrift::protocol::{TBinaryInputProtocol, TBinaryOutputProtocol, TSerializable};

use crate::metastore::{FieldSchema, SerDeInfo, StorageDescriptor, Table};

pub const TABLE_TYPE: &str = "table_type";
pub const ICEBERG: &str = "ICEBERG";
pub const METADATA_LOCATION: &str = "metadata_location";
pub const PREVIOUS_METADATA_LOCATION: &str = "previous_metadata_location";
pub const STORAGE_HANDLER: &str = "org.apache.iceberg.mr.hive.HiveIcebergStorageHandler";
const SERDE: &str = "org.apache.iceberg.mr.hive.HiveIcebergSerDe";
const INPUT_FORMAT: &str = "org.apache.iceberg.mr.hive.HiveIcebergInputFormat";
const OUTPUT_FORMAT: &str = "org.apache.iceberg.mr.hive.HiveIcebergOutputFormat";

/// Set on a table this tool migrated in place: the renamed Hive table that `revert` restores,
/// and the metadata JSON the migration committed (`revert` refuses once it is not current).
pub const BACKUP_TABLE: &str = "hive-orc-compactor.hive-backup-table";
pub const BACKUP_FILE: &str = "hive-orc-compactor.hive-backup-file";
pub const MIGRATED_METADATA: &str = "hive-orc-compactor.migrated-metadata-location";

/// Table parameters that describe the Hive layout, not the data, and are not carried over
/// (Spark's `migrate` drops the first three as well).
const NOT_CARRIED: [&str; 12] = [
    "path",
    "transient_lastDdlTime",
    "serialization.format",
    "numFiles",
    "numRows",
    "totalSize",
    "rawDataSize",
    "numFilesErasureCoded",
    "COLUMN_STATS_ACCURATE",
    "EXTERNAL",
    "bucketing_version",
    "storage_handler",
];

/// The name the Hive table is kept under while its data is an Iceberg table.
pub fn backup_name(table: &str) -> String {
    format!("{table}__hive_backup")
}

/// Hive's spelling of an Iceberg type, as `HiveSchemaUtil` converts it for the metastore.
pub fn hive_type(t: &Type) -> String {
    match t {
        Type::Primitive(p) => match p {
            PrimitiveType::Boolean => "boolean".into(),
            PrimitiveType::Int => "int".into(),
            PrimitiveType::Long => "bigint".into(),
            PrimitiveType::Float => "float".into(),
            PrimitiveType::Double => "double".into(),
            PrimitiveType::Decimal { precision, scale } => format!("decimal({precision},{scale})"),
            PrimitiveType::Date => "date".into(),
            PrimitiveType::Timestamp => "timestamp".into(),
            PrimitiveType::Binary => "binary".into(),
            // Not produced from Hive columns; named as HiveSchemaUtil names them.
            PrimitiveType::Timestamptz => "timestamp with local time zone".into(),
            _ => "string".into(),
        },
        Type::List(l) => format!("array<{}>", hive_type(&l.element_field.field_type)),
        Type::Map(m) => format!(
            "map<{},{}>",
            hive_type(&m.key_field.field_type),
            hive_type(&m.value_field.field_type)
        ),
        Type::Struct(s) => format!(
            "struct<{}>",
            s.fields()
                .iter()
                .map(|f| format!("{}:{}", f.name, hive_type(&f.field_type)))
                .collect::<Vec<_>>()
                .join(",")
        ),
    }
}

/// The metastore definition of an Iceberg table named `db.name` at `location`, carrying the
/// parameters and owner of the Hive table `from`.
pub fn iceberg_table(
    from: &Table,
    db: &str,
    name: &str,
    location: &str,
    metadata_location: &str,
    schema: &Schema,
    extra: BTreeMap<String, String>,
) -> Table {
    let mut params: BTreeMap<String, String> = from
        .parameters
        .clone()
        .unwrap_or_default()
        .into_iter()
        .filter(|(k, _)| !NOT_CARRIED.contains(&k.as_str()))
        .collect();
    params.insert("EXTERNAL".into(), "TRUE".into());
    params.insert(TABLE_TYPE.into(), ICEBERG.into());
    params.insert(METADATA_LOCATION.into(), metadata_location.into());
    params.insert("storage_handler".into(), STORAGE_HANDLER.into());
    params.extend(extra);
    let cols = schema
        .as_struct()
        .fields()
        .iter()
        .map(|f| FieldSchema {
            name: Some(f.name.clone()),
            type_: Some(hive_type(&f.field_type)),
            comment: None,
        })
        .collect();
    let from_sd = from.sd.clone();
    let comments: BTreeMap<String, String> = from_sd
        .iter()
        .flat_map(|sd| sd.cols.iter().flatten())
        .chain(from.partition_keys.iter().flatten())
        .filter_map(|c| Some((c.name.clone()?, c.comment.clone()?)))
        .collect();
    let cols = with_comments(cols, &comments);
    Table {
        table_name: Some(name.to_owned()),
        db_name: Some(db.to_owned()),
        owner: from.owner.clone(),
        owner_type: from.owner_type,
        create_time: None,
        last_access_time: None,
        retention: from.retention,
        sd: Some(StorageDescriptor {
            cols: Some(cols),
            location: Some(location.to_owned()),
            input_format: Some(INPUT_FORMAT.into()),
            output_format: Some(OUTPUT_FORMAT.into()),
            compressed: Some(false),
            num_buckets: Some(-1),
            serde_info: Some(SerDeInfo {
                name: None,
                serialization_lib: Some(SERDE.into()),
                parameters: Some(BTreeMap::new()),
                description: None,
                serializer_class: None,
                deserializer_class: None,
                serde_type: None,
            }),
            bucket_cols: Some(vec![]),
            sort_cols: Some(vec![]),
            parameters: Some(BTreeMap::new()),
            skewed_info: None,
            stored_as_sub_directories: Some(false),
        }),
        partition_keys: Some(vec![]),
        parameters: Some(params),
        view_original_text: None,
        view_expanded_text: None,
        table_type: Some("EXTERNAL_TABLE".into()),
        privileges: None,
        temporary: None,
        rewrite_enabled: None,
        creation_metadata: None,
        cat_name: from.cat_name.clone(),
        write_id: None,
        is_stats_compliant: None,
        col_stats: None,
        access_type: None,
        required_read_capabilities: None,
        required_write_capabilities: None,
        id: None,
        file_metadata: None,
        dictionary: None,
        txn_id: None,
    }
}

fn with_comments(cols: Vec<FieldSchema>, comments: &BTreeMap<String, String>) -> Vec<FieldSchema> {
    cols.into_iter()
        .map(|mut c| {
            c.comment = c.name.as_ref().and_then(|n| comments.get(n).cloned());
            c
        })
        .collect()
}

/// The Hive table as the metastore returned it, in Thrift's binary encoding: the exact
/// definition `revert` gives back.
pub fn encode(table: &Table) -> anyhow::Result<Vec<u8>> {
    let mut out = Vec::new();
    {
        let mut protocol = TBinaryOutputProtocol::new(&mut out, true);
        table.write_to_out_protocol(&mut protocol)?;
    }
    Ok(out)
}

pub fn decode(bytes: &[u8]) -> anyhow::Result<Table> {
    let mut reader = bytes;
    let mut protocol = TBinaryInputProtocol::new(&mut reader, true);
    Ok(Table::read_from_in_protocol(&mut protocol)?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use iceberg::spec::{ListType, NestedField};
    use std::sync::Arc;

    #[test]
    fn hive_spelling_of_iceberg_types() {
        let t = Type::List(ListType::new(Arc::new(NestedField::list_element(
            1,
            Type::Primitive(PrimitiveType::Decimal {
                precision: 9,
                scale: 2,
            }),
            false,
        ))));
        assert_eq!(hive_type(&t), "array<decimal(9,2)>");
    }

    #[test]
    fn tables_survive_the_backup_encoding() {
        let t = Table {
            table_name: Some("t".into()),
            parameters: Some(BTreeMap::from([("a".into(), "b".into())])),
            create_time: Some(7),
            ..Default::default()
        };
        assert_eq!(decode(&encode(&t).unwrap()).unwrap(), t);
    }
}
