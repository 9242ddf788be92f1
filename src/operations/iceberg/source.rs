//! The Hive table as a migration reads it from the metastore, and the reasons, known before any
//! file is read, not to move it.

use anyhow::{anyhow, Context};

use crate::eligibility::{self, Refusal, Rule};
use crate::hdfs::Location;
use crate::iceberg::catalog;
use crate::iceberg::hive_type::HiveType;
use crate::iceberg::schema::{self, Converted};
use crate::metastore::{FieldSchema, Metastore, MetastoreError, Partition, Table};
use crate::partition_spec::PartitionSpec;
use crate::table::TableInfo;

/// A Hive table read from the metastore with everything a migration needs.
pub(super) struct Source {
    pub(super) raw: Table,
    pub(super) info: TableInfo,
    /// Data columns then partition keys, with their Hive types.
    pub(super) columns: Vec<(String, HiveType)>,
    pub(super) data_columns: usize,
    pub(super) converted: Result<Converted, schema::Blocked>,
    /// Every partition's name, sorted; the partitions themselves are read a page at a time
    /// ([`Source::partition_pages`]), so a table of many partitions is never held whole.
    pub(super) partition_names: Vec<String>,
}

impl Source {
    pub(super) fn location(&self) -> anyhow::Result<Location> {
        let l = self
            .info
            .storage
            .location
            .as_deref()
            .ok_or_else(|| anyhow!("table {} has no location", self.info.qualified_name()))?;
        Ok(Location::parse(l)?)
    }

    pub(super) fn partition_keys(&self) -> Vec<String> {
        self.info.partition_keys.clone()
    }

    /// The partitions, read from the metastore in pages of `page_size` names
    /// ([`Metastore::page_size`]), in the order of the names. A name the metastore no longer
    /// holds is left out, as the page it was in says.
    pub(super) fn partition_pages(&self, page_size: usize) -> std::slice::Chunks<'_, String> {
        self.partition_names.chunks(page_size.max(1))
    }

    pub(super) async fn partition_page(
        &self,
        metastore: &Metastore,
        names: &[String],
    ) -> anyhow::Result<Vec<Partition>> {
        let (db, name) = (&self.info.db, &self.info.name);
        metastore
            .partitions_by_names(db, name, names)
            .await
            .with_context(|| format!("reading the partitions of {db}.{name}; run again"))
    }

    pub(super) fn partition_name(&self, p: &Partition) -> String {
        PartitionSpec::from_values(
            &self.info.partition_keys,
            p.values.as_deref().unwrap_or_default(),
        )
        .name()
    }
}

fn columns_of(fields: Option<&Vec<FieldSchema>>) -> Vec<(String, String)> {
    fields
        .into_iter()
        .flatten()
        .map(|f| {
            (
                f.name.clone().unwrap_or_default(),
                f.type_.clone().unwrap_or_default(),
            )
        })
        .collect()
}

pub(super) async fn load(metastore: &Metastore, db: &str, name: &str) -> anyhow::Result<Source> {
    let raw = metastore
        .get_table(db, name)
        .await
        .with_context(|| format!("reading table {db}.{name}"))?;
    let info = TableInfo::from(&raw);
    let data = columns_of(raw.sd.as_ref().and_then(|sd| sd.cols.as_ref()));
    let keys = columns_of(raw.partition_keys.as_ref());
    let converted = schema::convert_table(&data, &keys);
    let columns = data
        .iter()
        .chain(&keys)
        .map(|(n, t)| {
            (
                n.clone(),
                HiveType::parse(t).unwrap_or(HiveType::Other(t.clone())),
            )
        })
        .collect();
    let mut partition_names = vec![];
    if !keys.is_empty() && eligibility::check_table(&info).is_ok() {
        partition_names = metastore
            .partition_names(db, name)
            .await
            .with_context(|| format!("listing the partitions of {db}.{name}"))?;
        partition_names.sort();
    }
    Ok(Source {
        raw,
        info,
        columns,
        data_columns: data.len(),
        converted,
        partition_names,
    })
}

/// The table-level reasons not to migrate, before any file is read.
pub(super) fn table_blocks(source: &Source) -> Vec<Refusal> {
    if source
        .info
        .params
        .get(catalog::TABLE_TYPE)
        .is_some_and(|t| t.eq_ignore_ascii_case(catalog::ICEBERG))
    {
        return vec![Refusal::new(
            Rule::AlreadyMigrated,
            "it is already an Iceberg table",
        )];
    }
    if let Err(r) = eligibility::check_table(&source.info) {
        if r.rule == Rule::Bucketed {
            return vec![Refusal::new(
                Rule::Bucketed,
                "it is bucketed: Iceberg would drop the bucketing, and readers relying on it \
                 (bucketed joins, sampling) would change",
            )];
        }
        return vec![r];
    }
    match &source.converted {
        Ok(_) => vec![],
        Err(blocked) => blocked
            .blocks
            .iter()
            .map(|n| {
                Refusal::new(
                    Rule::ColumnType,
                    format!("column {} ({}): {}", n.column, n.hive_type, n.note),
                )
            })
            .collect(),
    }
}

pub(super) async fn table_exists(
    metastore: &Metastore,
    db: &str,
    name: &str,
) -> anyhow::Result<bool> {
    match metastore.get_table(db, name).await {
        Ok(_) => Ok(true),
        Err(MetastoreError::NotFound { .. }) => Ok(false),
        Err(e) => Err(anyhow!("reading {db}.{name}: {e}")),
    }
}
