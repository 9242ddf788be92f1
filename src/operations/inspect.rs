//! `inspect`: what the tool knows about a table, and optionally one partition of it.
//!
//! Promises: read-only (metastore reads and one directory listing, nothing written); reports the
//! same facts whatever the metastore version; says whether the tool would refuse the table or
//! partition, and why, with the same rules `compact` applies.

use serde::Serialize;

use std::collections::BTreeMap;

use crate::eligibility::{self, Refusal};
use crate::hdfs::{Hdfs, Location};
use crate::journal;
use crate::metastore::Metastore;
use crate::operations::outcome::{Outcome, Status, Stop};
use crate::partition_spec::PartitionSpec;
use crate::resolve::{self, TableName};
use crate::snapshot::{FileSizes, Snapshot, SnapshotError};
use crate::table::{PartitionInfo, StorageInfo, TableInfo};

/// What a partition's (or an unpartitioned table's) directory holds.
#[derive(Debug, Default, Serialize)]
pub struct DirectoryReport {
    pub location: Option<String>,
    /// False when the location does not exist on HDFS.
    pub exists: bool,
    pub files: Option<FileSizes>,
    /// Rows, from the ORC footers (absent when the files were not read).
    pub rows: Option<u64>,
    /// Stripes, from the ORC footers (absent when the files were not read): what a reader
    /// pays a footer and stream reads for, file or no file.
    pub stripes: Option<u64>,
    /// Hidden entries (`_SUCCESS`, `.hive-staging*`) that readers skip.
    pub hidden: Vec<String>,
    /// Non-hidden subdirectories: a partition holding any is refused.
    pub subdirectories: Vec<String>,
    /// With `--clustering`: per column, the mean fraction of stripes a point lookup on it
    /// reads, from the files' stripe statistics (1.0: all of them).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub clustering: BTreeMap<String, f64>,
}

#[derive(Debug, Serialize)]
pub struct PartitionReport {
    /// The partition's name as `SHOW PARTITIONS` prints it.
    pub name: String,
    pub values: Vec<String>,
    pub input_format: Option<String>,
    pub serde: Option<String>,
    #[serde(flatten)]
    pub directory: DirectoryReport,
    /// The basic statistics the metastore holds (`numFiles`, `totalSize`, `numRows`, ...).
    pub statistics: BTreeMap<String, String>,
    pub eligible: bool,
    pub refusal: Option<Refusal>,
    /// Files written to a location this partition's runs replaced, after the swap: no query
    /// reads them (`cleanup` adopts or discards them).
    pub late_files: Vec<String>,
}

/// What `--json` prints. The outcome's status is `ready`, or `refused` with the refusal that
/// decides the exit code (the table's, else the partition's) as rule and reason; its `partition`
/// is the partition's name (empty without `--partition`).
#[derive(Debug, Serialize)]
pub struct InspectReport {
    #[serde(flatten)]
    pub outcome: Outcome,
    pub table_type: String,
    pub owner: Option<String>,
    pub input_format: Option<String>,
    pub output_format: Option<String>,
    pub serde: Option<String>,
    pub partition_keys: Vec<String>,
    /// How many partitions the metastore lists (absent for an unpartitioned table).
    pub partitions: Option<usize>,
    pub location: Option<String>,
    /// The table directory's files, for an unpartitioned table.
    pub directory: Option<DirectoryReport>,
    /// The basic statistics the metastore holds for an unpartitioned table.
    pub statistics: BTreeMap<String, String>,
    /// The table's own refusal (for an unpartitioned table, its directory's too).
    pub refusal: Option<Refusal>,
    /// The partition's facts, with `--partition`.
    pub partition_details: Option<PartitionReport>,
}

/// Basic statistics keys Hive keeps per partition; the ones an admin compares with the files.
const STAT_KEYS: &[&str] = &[
    "numFiles",
    "totalSize",
    "numRows",
    "rawDataSize",
    "COLUMN_STATS_ACCURATE",
];

pub async fn inspect(
    metastore: &Metastore,
    hdfs: &Hdfs,
    table: &TableName,
    partition: Option<&str>,
    clustering: &[&str],
) -> anyhow::Result<InspectReport> {
    let info = resolve::table(metastore, table).await?;
    let mut table_refusal = eligibility::check_table(&info).err();
    let (partitions, directory) = if info.partition_keys.is_empty() {
        let (dir, refusal) =
            directory(hdfs, &info.storage, table_refusal.is_none(), clustering).await?;
        table_refusal = table_refusal.or(refusal);
        (None, Some(dir))
    } else {
        (
            Some(resolve::partition_count(metastore, &info).await?),
            None,
        )
    };
    let partition = match partition {
        Some(spec) => Some(inspect_partition(metastore, hdfs, &info, spec, clustering).await?),
        None => None,
    };
    let name = partition.as_ref().map(|p| p.name.as_str()).unwrap_or("");
    let mut outcome = Outcome::new(&info.qualified_name(), name);
    let deciding = table_refusal
        .as_ref()
        .or(partition.as_ref().and_then(|p| p.refusal.as_ref()));
    match deciding {
        Some(refusal) => outcome.stop(Stop::Refused(refusal.clone())),
        None => outcome.status = Status::Ready,
    }
    Ok(InspectReport {
        outcome,
        table_type: info.table_type.clone(),
        owner: info.owner.clone(),
        input_format: info.storage.input_format.clone(),
        output_format: info.storage.output_format.clone(),
        serde: info.storage.serde_lib.clone(),
        partition_keys: info.partition_keys.clone(),
        partitions,
        location: info.storage.location.clone(),
        statistics: directory
            .as_ref()
            .map(|_| statistics(&info.params))
            .unwrap_or_default(),
        directory,
        refusal: table_refusal,
        partition_details: partition,
    })
}

fn statistics(params: &BTreeMap<String, String>) -> BTreeMap<String, String> {
    params
        .iter()
        .filter(|(k, _)| STAT_KEYS.contains(&k.as_str()))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

async fn inspect_partition(
    metastore: &Metastore,
    hdfs: &Hdfs,
    table: &TableInfo,
    spec: &str,
    clustering: &[&str],
) -> anyhow::Result<PartitionReport> {
    let (spec, found) = match resolve::partition(metastore, table, spec).await {
        Ok(found) => found,
        // A bad spec or a missing partition is a refusal to report, not a failure to inspect.
        Err(resolve::ResolveError::Refused(refusal)) => {
            // Name it as SHOW PARTITIONS would when the spec parses; else as typed.
            let name = PartitionSpec::parse(spec, &table.partition_keys)
                .map(|s| s.name())
                .unwrap_or_else(|_| spec.to_string());
            return Ok(PartitionReport {
                name,
                values: vec![],
                input_format: None,
                serde: None,
                directory: DirectoryReport::default(),
                statistics: BTreeMap::new(),
                eligible: false,
                refusal: Some(refusal),
                late_files: vec![],
            });
        }
        Err(resolve::ResolveError::Other(e)) => return Err(e),
    };
    let PartitionInfo {
        values,
        params,
        storage,
    } = found;
    let mut refusal = eligibility::check_partition(&storage).err();
    let (directory, dir_refusal) = directory(hdfs, &storage, refusal.is_none(), clustering).await?;
    refusal = refusal.or(dir_refusal);
    let late_files = match storage.location.as_deref().map(Location::parse) {
        Some(Ok(current)) => journal::late_files(hdfs, table, &spec, &current).await?,
        _ => vec![],
    };
    Ok(PartitionReport {
        name: spec.name(),
        values,
        input_format: storage.input_format.clone(),
        serde: storage.serde_lib.clone(),
        directory,
        statistics: statistics(&params),
        eligible: refusal.is_none(),
        refusal,
        late_files,
    })
}

/// Reports a directory. When it is meant to hold ORC (`read_tails`), this is the same snapshot
/// `compact` takes, so the same files are refused; otherwise a plain listing.
async fn directory(
    hdfs: &Hdfs,
    storage: &StorageInfo,
    read_tails: bool,
    clustering: &[&str],
) -> anyhow::Result<(DirectoryReport, Option<Refusal>)> {
    let mut report = DirectoryReport {
        location: storage.location.clone(),
        ..Default::default()
    };
    let Some(location) = storage
        .location
        .as_deref()
        .and_then(|l| Location::parse(l).ok())
    else {
        return Ok((report, None));
    };
    if read_tails {
        match Snapshot::take(hdfs, &location).await {
            Ok(snapshot) => {
                report.exists = true;
                report.clustering = snapshot.stripe_lookup_fractions(hdfs, clustering).await?;
                report.rows = Some(snapshot.rows());
                report.stripes = Some(snapshot.stripes());
                report.files = Some(FileSizes::of(
                    &snapshot.files.iter().map(|f| f.length).collect::<Vec<_>>(),
                ));
                report.hidden = snapshot.hidden;
                Ok((report, None))
            }
            Err(SnapshotError::Missing(_)) => Ok((report, None)),
            Err(e) => match e.refusal() {
                // Still show what is there; the refusal says which names are the problem.
                Some(refusal) => fill_from_listing(hdfs, &location, &mut report)
                    .await
                    .map(|()| (report, Some(refusal))),
                None => Err(e.into()),
            },
        }
    } else {
        fill_from_listing(hdfs, &location, &mut report).await?;
        Ok((report, None))
    }
}

async fn fill_from_listing(
    hdfs: &Hdfs,
    location: &Location,
    report: &mut DirectoryReport,
) -> anyhow::Result<()> {
    if let Some(listing) = hdfs.list(location).await? {
        report.exists = true;
        report.files = Some(FileSizes::of(
            &listing.files.iter().map(|f| f.length).collect::<Vec<_>>(),
        ));
        report.hidden = listing.hidden;
        report.subdirectories = listing.subdirs;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_sizes() {
        assert_eq!(
            FileSizes::of(&[5, 1, 3, 100]),
            FileSizes {
                count: 4,
                bytes: 109,
                min: 1,
                median: 3,
                max: 100
            }
        );
        assert_eq!(FileSizes::of(&[]).count, 0);
        assert_eq!(FileSizes::of(&[7]).median, 7);
    }
}
