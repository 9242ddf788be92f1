//! `--adopt-late-files`: late files renamed into the partition's current directory.

use anyhow::anyhow;

use super::report::RunCleanup;
use crate::hdfs::{Hdfs, Location};
use crate::journal::JournalOutput;
use crate::metastore::Metastore;
use crate::partition_spec::PartitionSpec;
use crate::relocate::set_location;
use crate::snapshot::Snapshot;
use crate::table::TableInfo;

/// Renames the run's late files into the current location and recomputes the partition's basic
/// statistics from the files there (their ORC tails give the rows).
pub(super) async fn adopt(
    metastore: &Metastore,
    hdfs: &Hdfs,
    current: Location,
    table: &TableInfo,
    spec: &PartitionSpec,
    run: &mut RunCleanup,
) -> anyhow::Result<()> {
    for late in std::mem::take(&mut run.late_files) {
        let from = Location::parse(&late)?;
        let to = current.child(from.path.rsplit('/').next().unwrap_or(""));
        if hdfs.status(&to).await?.is_some() {
            run.late_files.push(late);
            return Err(anyhow!(
                "cannot adopt {from}: {to} exists; rename one of them by hand"
            ));
        }
        hdfs.rename(&from, &to).await?;
        run.adopted.push(to.to_string());
    }
    let snapshot = Snapshot::take(hdfs, &current).await?;
    // The journal lists them among the partition's files from now on (without checksums: they
    // were not written by the run), so `verify` accepts them.
    for file in snapshot
        .files
        .iter()
        .filter(|f| run.adopted.contains(&f.location().to_string()))
    {
        run.journal.outputs.push(JournalOutput::adopted(file));
    }
    let location = current.to_string();
    set_location(metastore, table, spec, &current, &location, |before| {
        let mut after = before.clone();
        after.insert("numFiles".into(), snapshot.files.len().to_string());
        after.insert("totalSize".into(), snapshot.bytes().to_string());
        after.insert("numRows".into(), snapshot.rows().to_string());
        // What these describe no longer covers the adopted rows, and cannot be recomputed
        // from the tails alone.
        after.remove("rawDataSize");
        after.remove("COLUMN_STATS_ACCURATE");
        after
    })
    .await?;
    Ok(())
}
