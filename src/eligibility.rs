//! The refusal rules: which tables and partitions the tool must never touch, and why.
//!
//! Every rule reads typed metastore fields (never DDL text). A refusal carries a stable rule name
//! for scripts (`--json`) and a one-line reason for humans. The rules are conservative: a table
//! that merely *might* be managed by something else (an ACID writer, a storage handler, a table
//! format that keeps its own file list) is refused, because rewriting its files behind that
//! owner's back corrupts it.

use serde::{Deserialize, Serialize};

use crate::table::{StorageInfo, TableInfo};

/// Hive's ORC input format and serde. Both must match: a table can claim ORC files while its
/// serde reads something else, and then our byte-level merge would not be what readers read.
pub const ORC_INPUT_FORMAT: &str = "org.apache.hadoop.hive.ql.io.orc.OrcInputFormat";
pub const ORC_SERDE: &str = "org.apache.hadoop.hive.ql.io.orc.OrcSerde";

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Rule {
    View,
    Transactional,
    InsertOnly,
    NonNative,
    TableFormat,
    Bucketed,
    SkewedSubdirs,
    NotOrc,
    NotHdfs,
    Subdirectories,
    UnreadableFile,
    PartitionSpec,
    NoSuchPartition,
    /// `rollback`: the partition is not in a run's directory, or the run's old files are gone.
    NotRollbackable,
    /// `rollback`: something was written to the partition after the swap (files in the run's
    /// directory no journal names, or changed parameters); swapping back would hide those rows.
    RowsAfterSwap,
    /// `compact`: the data files differ in owner, group or mode.
    MixedPermissions,
    /// `iceberg`: the table is an Iceberg table already.
    AlreadyMigrated,
    /// `iceberg`: a column type Iceberg cannot hold as Hive reads it.
    ColumnType,
    /// `iceberg`: a partition value Iceberg cannot express exactly.
    PartitionValue,
    /// `iceberg`: files whose ORC types the table's schema cannot read through a name mapping.
    FileSchema,
    /// `iceberg migrate`: the name the Hive table would be kept under is taken.
    BackupExists,
    /// `iceberg migrate --to`: the new table's name is taken.
    TargetExists,
    /// `iceberg revert`: the table is not as an in-place `migrate` of this tool left it.
    NotRevertible,
    /// `compact`: new files in the partition's directory would be erasure coded with a policy
    /// hdfs-native cannot write (it computes Reed-Solomon parity whatever the policy's codec).
    ErasureCoding,
}

impl Rule {
    /// The stable name scripts match on; the same string `--json` prints.
    pub fn as_str(self) -> &'static str {
        match self {
            Rule::View => "view",
            Rule::Transactional => "transactional",
            Rule::InsertOnly => "insert_only",
            Rule::NonNative => "non_native",
            Rule::TableFormat => "table_format",
            Rule::Bucketed => "bucketed",
            Rule::SkewedSubdirs => "skewed_subdirs",
            Rule::NotOrc => "not_orc",
            Rule::NotHdfs => "not_hdfs",
            Rule::Subdirectories => "subdirectories",
            Rule::UnreadableFile => "unreadable_file",
            Rule::PartitionSpec => "partition_spec",
            Rule::NoSuchPartition => "no_such_partition",
            Rule::NotRollbackable => "not_rollbackable",
            Rule::RowsAfterSwap => "rows_after_swap",
            Rule::MixedPermissions => "mixed_permissions",
            Rule::AlreadyMigrated => "already_migrated",
            Rule::ColumnType => "column_type",
            Rule::PartitionValue => "partition_value",
            Rule::FileSchema => "file_schema",
            Rule::BackupExists => "backup_exists",
            Rule::TargetExists => "target_exists",
            Rule::NotRevertible => "not_revertible",
            Rule::ErasureCoding => "erasure_coding",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, thiserror::Error)]
#[error("{reason}")]
pub struct Refusal {
    pub rule: Rule,
    pub reason: String,
}

impl Refusal {
    pub fn new(rule: Rule, reason: impl Into<String>) -> Self {
        Refusal {
            rule,
            reason: reason.into(),
        }
    }
}

fn param_is_true(value: Option<&String>) -> bool {
    value.is_some_and(|v| v.trim().eq_ignore_ascii_case("true"))
}

/// Checks the table itself. The first rule that applies wins, in order of how dangerous a
/// rewrite would be.
pub fn check_table(table: &TableInfo) -> Result<(), Refusal> {
    let ty = table.table_type.to_ascii_uppercase();
    if ty == "VIRTUAL_VIEW" || ty == "MATERIALIZED_VIEW" {
        return Err(Refusal::new(
            Rule::View,
            format!(
                "it is a view ({}), it has no files of its own",
                table.table_type
            ),
        ));
    }
    let p = &table.params;
    if param_is_true(p.get("transactional")) {
        let insert_only = p
            .get("transactional_properties")
            .is_some_and(|v| v.trim().eq_ignore_ascii_case("insert_only"));
        return Err(if insert_only {
            Refusal::new(
                Rule::InsertOnly,
                "it is an insert-only ACID table (transactional=true, insert_only): \
                 use Hive's own compaction (ALTER TABLE ... COMPACT 'major')",
            )
        } else {
            Refusal::new(
                Rule::Transactional,
                "it is a full ACID table (transactional=true): its files are deltas managed by \
                 Hive; use ALTER TABLE ... COMPACT 'major'",
            )
        });
    }
    if let Some(handler) = p.get("storage_handler").filter(|v| !v.trim().is_empty()) {
        return Err(Refusal::new(
            Rule::NonNative,
            format!("it is a non-native table (storage handler {handler})"),
        ));
    }
    let format = p
        .get("table_type")
        .map(|s| s.to_ascii_uppercase())
        .filter(|t| t == "ICEBERG" || t == "HUDI" || t == "DELTA");
    let spark_provider = p
        .get("spark.sql.sources.provider")
        .map(|s| s.to_ascii_lowercase())
        .filter(|s| s == "delta" || s == "iceberg" || s == "hudi");
    if let Some(f) = format.or(spark_provider.map(|s| s.to_ascii_uppercase())) {
        return Err(Refusal::new(
            Rule::TableFormat,
            format!("it is a {f} table: the table format tracks its own files, compact it with its own tools"),
        ));
    }
    check_storage(&table.storage, "table")
}

/// Checks a partition's own storage descriptor: partitions can differ from their table
/// (`ALTER TABLE ... PARTITION ... SET FILEFORMAT`, old buckets), and the partition's is the one
/// its readers use.
pub fn check_partition(partition: &StorageInfo) -> Result<(), Refusal> {
    check_storage(partition, "partition")
}

fn check_storage(sd: &StorageInfo, what: &str) -> Result<(), Refusal> {
    if sd.num_buckets > 0 || !sd.bucket_cols.is_empty() {
        return Err(Refusal::new(
            Rule::Bucketed,
            format!(
                "the {what} is bucketed ({} buckets on {}): merging files would break bucket numbering",
                sd.num_buckets,
                if sd.bucket_cols.is_empty() { "no columns".to_string() } else { sd.bucket_cols.join(", ") }
            ),
        ));
    }
    if !sd.skewed_cols.is_empty() && sd.stored_as_subdirs {
        return Err(Refusal::new(
            Rule::SkewedSubdirs,
            format!(
                "the {what} is skewed on {} and stored as subdirectories (list bucketing)",
                sd.skewed_cols.join(", ")
            ),
        ));
    }
    let input = sd.input_format.as_deref().unwrap_or("");
    let serde = sd.serde_lib.as_deref().unwrap_or("");
    if input != ORC_INPUT_FORMAT || serde != ORC_SERDE {
        return Err(Refusal::new(
            Rule::NotOrc,
            format!(
                "the {what} is not stored as ORC (input format {}, serde {})",
                if input.is_empty() { "none" } else { input },
                if serde.is_empty() { "none" } else { serde }
            ),
        ));
    }
    if let Some(location) = sd.location.as_deref() {
        check_location(location, what)?;
    }
    Ok(())
}

/// Only HDFS (and viewfs over it) gives the atomic renames the protocol relies on.
pub fn check_location(location: &str, what: &str) -> Result<(), Refusal> {
    let scheme = location
        .split_once("://")
        .map(|(s, _)| s.to_ascii_lowercase());
    match scheme.as_deref() {
        Some("hdfs") | Some("viewfs") => Ok(()),
        _ => Err(Refusal::new(
            Rule::NotHdfs,
            format!("the {what}'s location {location} is not on HDFS (hdfs:// or viewfs://)"),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn orc_sd() -> StorageInfo {
        StorageInfo {
            location: Some("hdfs://nn:8020/warehouse/t".into()),
            input_format: Some(ORC_INPUT_FORMAT.into()),
            output_format: Some("org.apache.hadoop.hive.ql.io.orc.OrcOutputFormat".into()),
            serde_lib: Some(ORC_SERDE.into()),
            num_buckets: -1,
            bucket_cols: vec![],
            skewed_cols: vec![],
            stored_as_subdirs: false,
        }
    }

    fn table() -> TableInfo {
        TableInfo {
            db: "db".into(),
            name: "t".into(),
            table_type: "EXTERNAL_TABLE".into(),
            owner: None,
            partition_keys: vec!["dt".into()],
            params: BTreeMap::new(),
            storage: orc_sd(),
        }
    }

    fn rule(t: &TableInfo) -> Option<Rule> {
        check_table(t).err().map(|r| r.rule)
    }

    #[test]
    fn rule_names_match_json() {
        for r in [
            Rule::View,
            Rule::InsertOnly,
            Rule::SkewedSubdirs,
            Rule::NoSuchPartition,
        ] {
            assert_eq!(serde_json::to_value(r).unwrap(), r.as_str());
        }
    }

    #[test]
    fn plain_orc_table_is_eligible() {
        assert_eq!(rule(&table()), None);
        let mut managed = table();
        managed.table_type = "MANAGED_TABLE".into();
        managed
            .params
            .insert("transactional".into(), "false".into());
        assert_eq!(rule(&managed), None);
    }

    #[test]
    fn refuses_views() {
        let mut t = table();
        t.table_type = "VIRTUAL_VIEW".into();
        assert_eq!(rule(&t), Some(Rule::View));
        t.table_type = "MATERIALIZED_VIEW".into();
        assert_eq!(rule(&t), Some(Rule::View));
    }

    #[test]
    fn refuses_acid_of_both_kinds() {
        let mut t = table();
        t.params.insert("transactional".into(), "TRUE".into());
        assert_eq!(rule(&t), Some(Rule::Transactional));
        t.params
            .insert("transactional_properties".into(), "insert_only".into());
        assert_eq!(rule(&t), Some(Rule::InsertOnly));
    }

    #[test]
    fn refuses_non_native_and_table_formats() {
        let mut t = table();
        t.params.insert(
            "storage_handler".into(),
            "org.apache.hadoop.hive.hbase.HBaseStorageHandler".into(),
        );
        assert_eq!(rule(&t), Some(Rule::NonNative));
        let mut t = table();
        t.params.insert("table_type".into(), "ICEBERG".into());
        assert_eq!(rule(&t), Some(Rule::TableFormat));
        let mut t = table();
        t.params
            .insert("spark.sql.sources.provider".into(), "delta".into());
        assert_eq!(rule(&t), Some(Rule::TableFormat));
    }

    #[test]
    fn refuses_buckets_skew_and_other_formats() {
        let mut t = table();
        t.storage.num_buckets = 4;
        t.storage.bucket_cols = vec!["id".into()];
        assert_eq!(rule(&t), Some(Rule::Bucketed));

        let mut t = table();
        t.storage.skewed_cols = vec!["id".into()];
        assert_eq!(rule(&t), None, "skew without subdirectories is plain files");
        t.storage.stored_as_subdirs = true;
        assert_eq!(rule(&t), Some(Rule::SkewedSubdirs));

        let mut t = table();
        t.storage.input_format =
            Some("org.apache.hadoop.hive.ql.io.parquet.MapredParquetInputFormat".into());
        assert_eq!(rule(&t), Some(Rule::NotOrc));
        let mut t = table();
        t.storage.serde_lib = Some("org.apache.hadoop.hive.serde2.lazy.LazySimpleSerDe".into());
        assert_eq!(rule(&t), Some(Rule::NotOrc));
    }

    #[test]
    fn refuses_locations_off_hdfs() {
        let mut t = table();
        t.storage.location = Some("s3a://bucket/t".into());
        assert_eq!(rule(&t), Some(Rule::NotHdfs));
        t.storage.location = Some("viewfs://cluster/t".into());
        assert_eq!(rule(&t), None);
    }

    #[test]
    fn partition_can_differ_from_table() {
        let mut sd = orc_sd();
        assert!(check_partition(&sd).is_ok());
        sd.serde_lib = Some("org.apache.hadoop.hive.ql.io.parquet.serde.ParquetHiveSerDe".into());
        assert_eq!(check_partition(&sd).unwrap_err().rule, Rule::NotOrc);
    }
}
