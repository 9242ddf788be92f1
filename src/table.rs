//! The engine's view of a metastore table and partition: the few typed fields the rules and
//! reports need, lifted out of the Thrift structs once so the rest of the code (and its unit
//! tests) does not depend on generated types.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::metastore;

/// What a storage descriptor says about where and how the files are stored.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct StorageInfo {
    pub location: Option<String>,
    pub input_format: Option<String>,
    pub output_format: Option<String>,
    pub serde_lib: Option<String>,
    pub num_buckets: i32,
    pub bucket_cols: Vec<String>,
    pub skewed_cols: Vec<String>,
    pub stored_as_subdirs: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TableInfo {
    pub db: String,
    pub name: String,
    pub table_type: String,
    pub owner: Option<String>,
    pub partition_keys: Vec<String>,
    pub params: BTreeMap<String, String>,
    pub storage: StorageInfo,
}

impl TableInfo {
    pub fn qualified_name(&self) -> String {
        format!("{}.{}", self.db, self.name)
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PartitionInfo {
    pub values: Vec<String>,
    pub params: BTreeMap<String, String>,
    pub storage: StorageInfo,
}

impl From<&metastore::StorageDescriptor> for StorageInfo {
    fn from(sd: &metastore::StorageDescriptor) -> Self {
        let skewed_cols = sd
            .skewed_info
            .as_ref()
            .and_then(|s| s.skewed_col_names.clone())
            .unwrap_or_default();
        StorageInfo {
            location: sd.location.clone().filter(|l| !l.is_empty()),
            input_format: sd.input_format.clone(),
            output_format: sd.output_format.clone(),
            serde_lib: sd
                .serde_info
                .as_ref()
                .and_then(|s| s.serialization_lib.clone()),
            // Hive writes -1 for "not bucketed"; an absent field means the same.
            num_buckets: sd.num_buckets.unwrap_or(-1),
            bucket_cols: sd.bucket_cols.clone().unwrap_or_default(),
            skewed_cols,
            stored_as_subdirs: sd.stored_as_sub_directories.unwrap_or(false),
        }
    }
}

impl StorageInfo {
    /// No storage at all: what a table or partition sent without a storage descriptor has.
    pub fn none() -> Self {
        StorageInfo {
            location: None,
            input_format: None,
            output_format: None,
            serde_lib: None,
            num_buckets: -1,
            bucket_cols: vec![],
            skewed_cols: vec![],
            stored_as_subdirs: false,
        }
    }
}

/// A table or partition sent without a storage descriptor (views do this) has no storage.
fn storage(sd: Option<&metastore::StorageDescriptor>) -> StorageInfo {
    sd.map(StorageInfo::from).unwrap_or_else(StorageInfo::none)
}

impl From<&metastore::Table> for TableInfo {
    fn from(t: &metastore::Table) -> Self {
        TableInfo {
            db: t.db_name.clone().unwrap_or_default(),
            name: t.table_name.clone().unwrap_or_default(),
            table_type: t.table_type.clone().unwrap_or_default(),
            owner: t.owner.clone(),
            partition_keys: t
                .partition_keys
                .iter()
                .flatten()
                .filter_map(|k| k.name.clone())
                .collect(),
            params: t.parameters.clone().unwrap_or_default(),
            storage: storage(t.sd.as_ref()),
        }
    }
}

impl From<&metastore::Partition> for PartitionInfo {
    fn from(p: &metastore::Partition) -> Self {
        PartitionInfo {
            values: p.values.clone().unwrap_or_default(),
            params: p.parameters.clone().unwrap_or_default(),
            storage: storage(p.sd.as_ref()),
        }
    }
}
