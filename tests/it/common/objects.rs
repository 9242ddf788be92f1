//! Metastore objects as a client creates them: the given parts, every other field unset. Never
//! `Default::default()`, whose generated defaults ("" catalog, write id 0) the server acts on.

use std::collections::BTreeMap;

use hive_orc_compactor::metastore::{
    Database, FieldSchema, Partition, PrincipalType, SerDeInfo, StorageDescriptor, Table,
};

pub fn external_table(
    db: &str,
    name: &str,
    owner: &str,
    sd: StorageDescriptor,
    partition_keys: Vec<FieldSchema>,
    parameters: BTreeMap<String, String>,
) -> Table {
    Table {
        table_name: Some(name.into()),
        db_name: Some(db.into()),
        owner: Some(owner.into()),
        create_time: Some(0),
        last_access_time: Some(0),
        retention: Some(0),
        sd: Some(sd),
        partition_keys: Some(partition_keys),
        parameters: Some(parameters),
        view_original_text: None,
        view_expanded_text: None,
        table_type: Some("EXTERNAL_TABLE".into()),
        privileges: None,
        temporary: None,
        rewrite_enabled: None,
        creation_metadata: None,
        cat_name: None,
        owner_type: Some(PrincipalType::USER),
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

pub fn new_partition(
    db: &str,
    table: &str,
    values: &[&str],
    sd: StorageDescriptor,
    parameters: BTreeMap<String, String>,
) -> Partition {
    Partition {
        values: Some(values.iter().map(|v| v.to_string()).collect()),
        db_name: Some(db.into()),
        table_name: Some(table.into()),
        create_time: Some(0),
        last_access_time: Some(0),
        sd: Some(sd),
        parameters: Some(parameters),
        privileges: None,
        cat_name: None,
        write_id: None,
        is_stats_compliant: None,
        col_stats: None,
        file_metadata: None,
    }
}

pub fn database(name: &str, location: &str, owner: &str, description: Option<&str>) -> Database {
    Database {
        name: Some(name.into()),
        description: description.map(Into::into),
        location_uri: Some(location.into()),
        parameters: Some(BTreeMap::new()),
        privileges: None,
        owner_name: Some(owner.into()),
        owner_type: Some(PrincipalType::USER),
        catalog_name: None,
        create_time: None,
        managed_location_uri: None,
        type_: None,
        connector_name: None,
        remote_dbname: None,
    }
}

pub fn column(name: &str, ty: &str) -> FieldSchema {
    FieldSchema {
        name: Some(name.into()),
        type_: Some(ty.into()),
        comment: None,
    }
}

/// An ORC storage descriptor as Hive writes one for `STORED AS ORC`.
pub fn orc_storage(location: &str, cols: Vec<FieldSchema>) -> StorageDescriptor {
    StorageDescriptor {
        cols: Some(cols),
        location: Some(location.into()),
        input_format: Some("org.apache.hadoop.hive.ql.io.orc.OrcInputFormat".into()),
        output_format: Some("org.apache.hadoop.hive.ql.io.orc.OrcOutputFormat".into()),
        compressed: Some(false),
        num_buckets: Some(-1),
        serde_info: Some(SerDeInfo {
            name: None,
            serialization_lib: Some("org.apache.hadoop.hive.ql.io.orc.OrcSerde".into()),
            parameters: Some(BTreeMap::from([(
                "serialization.format".to_string(),
                "1".to_string(),
            )])),
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
    }
}
