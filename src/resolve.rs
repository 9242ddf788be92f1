//! Step 1 of every operation: find the table and the partition in the metastore, through typed
//! calls only, and turn a spec the user typed into exactly one partition.

use anyhow::anyhow;

use crate::eligibility::{Refusal, Rule};
use crate::metastore::{Metastore, MetastoreError};
use crate::partition_spec::PartitionSpec;
use crate::table::{PartitionInfo, TableInfo};

/// `db.table`, lower-cased as Hive stores names. A bare `table` means database `default`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableName {
    pub db: String,
    pub table: String,
}

impl std::str::FromStr for TableName {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let (db, table) = s.split_once('.').unwrap_or(("default", s));
        if db.is_empty() || table.is_empty() || table.contains('.') {
            return Err(format!("'{s}' is not a table name: write db.table"));
        }
        Ok(TableName {
            db: db.to_ascii_lowercase(),
            table: table.to_ascii_lowercase(),
        })
    }
}

impl std::fmt::Display for TableName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}.{}", self.db, self.table)
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ResolveError {
    #[error(transparent)]
    Refused(Refusal),
    #[error(transparent)]
    Other(#[from] anyhow::Error),
}

pub async fn table(metastore: &Metastore, name: &TableName) -> anyhow::Result<TableInfo> {
    match metastore.get_table(&name.db, &name.table).await {
        Ok(t) => Ok(TableInfo::from(&t)),
        Err(MetastoreError::NotFound { .. }) => Err(anyhow!(
            "table {name} does not exist in the metastore ({}): check the name with SHOW TABLES",
            metastore.uri()
        )),
        Err(e) => Err(anyhow!(
            "reading table {name} from the metastore failed: {e}"
        )),
    }
}

pub async fn partition_count(metastore: &Metastore, table: &TableInfo) -> anyhow::Result<usize> {
    let names = metastore
        .partition_names(&table.db, &table.name)
        .await
        .map_err(|e| {
            anyhow!(
                "listing the partitions of {} failed: {e}",
                table.qualified_name()
            )
        })?;
    Ok(names.len())
}

/// Resolves a full spec to one partition. A spec that is not the table's full spec, or names a
/// partition that does not exist, is a refusal: the tool never guesses which partition was meant.
pub async fn partition(
    metastore: &Metastore,
    table: &TableInfo,
    spec: &str,
) -> Result<(PartitionSpec, PartitionInfo), ResolveError> {
    let parsed = PartitionSpec::parse(spec, &table.partition_keys).map_err(|e| {
        ResolveError::Refused(Refusal::new(
            Rule::PartitionSpec,
            format!("partition spec '{spec}': {e}"),
        ))
    })?;
    match metastore
        .get_partition_by_values(&table.db, &table.name, &parsed.values)
        .await
    {
        Ok(p) => Ok((parsed, PartitionInfo::from(&p))),
        Err(MetastoreError::NotFound { .. }) => Err(ResolveError::Refused(Refusal::new(
            Rule::NoSuchPartition,
            format!(
                "partition {} does not exist (list them with SHOW PARTITIONS {})",
                parsed.name(),
                table.qualified_name()
            ),
        ))),
        Err(e) => Err(ResolveError::Other(anyhow!(
            "reading partition {} of {} failed: {e}",
            parsed.name(),
            table.qualified_name()
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_names() {
        let t: TableName = "Sales.Events".parse().unwrap();
        assert_eq!((t.db.as_str(), t.table.as_str()), ("sales", "events"));
        let t: TableName = "events".parse().unwrap();
        assert_eq!(t.db, "default");
        for bad in ["", ".t", "db.", "a.b.c"] {
            assert!(bad.parse::<TableName>().is_err(), "{bad}");
        }
    }
}
