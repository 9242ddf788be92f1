//! Partitions a managed table's `DROP PARTITION` removed from the metastore after a
//! compaction: found by their canonical directories, planned and settled there.

use std::collections::BTreeSet;

use super::delete::{discard, remove, remove_if_empty};
use super::options::CleanupOptions;
use super::plan::outputs_in;
use super::report::{PartitionCleanup, RunAction, RunCleanup};
use crate::hdfs::{Hdfs, Location};
use crate::journal::{self, file_name};
use crate::metastore::{Metastore, MetastoreError};
use crate::partition_spec::PartitionSpec;
use crate::run_dirs;
use crate::table::TableInfo;

/// Partitions of a managed table that the metastore no longer has but whose canonical
/// directory holds this tool's work directory: dropped after a compaction. The metastore's
/// `DROP PARTITION` deleted the directory the partition pointed at (a run's), not the files the
/// run replaced in `<table>/<k=v>`, which `MSCK REPAIR TABLE` would bring back as a partition of
/// stale rows. One listing per partition directory of the table.
pub(super) async fn dropped_homes(
    hdfs: &Hdfs,
    table: &TableInfo,
    existing: &BTreeSet<String>,
) -> anyhow::Result<Vec<PartitionSpec>> {
    let Some(root) = table
        .storage
        .location
        .as_deref()
        .and_then(|l| Location::parse(l).ok())
    else {
        return Ok(vec![]);
    };
    let keys = &table.partition_keys;
    let mut level = vec![(root, String::new())];
    for key in keys {
        let mut next = vec![];
        for (dir, name) in level {
            let Some(listing) = hdfs.list(&dir).await? else {
                continue;
            };
            for sub in listing.subdirs {
                if sub.starts_with(&format!("{key}=")) {
                    let name = if name.is_empty() {
                        sub.clone()
                    } else {
                        format!("{name}/{sub}")
                    };
                    next.push((dir.child(&sub), name));
                }
            }
        }
        level = next;
    }
    let mut dropped = vec![];
    for (dir, name) in level {
        if existing.contains(&name) {
            continue;
        }
        let has_work_dir = hdfs
            .list(&dir)
            .await?
            .is_some_and(|l| l.hidden.iter().any(|h| h == run_dirs::WORK_DIR));
        if let (true, Ok(spec)) = (has_work_dir, PartitionSpec::parse(&name, keys)) {
            dropped.push(spec);
        }
    }
    Ok(dropped)
}

/// What to settle in a dropped partition's canonical directory (`p.current`): each journal's
/// inputs there, and its outputs in run directories the drop did not delete, once past the
/// retention. Files no journal names are reported, never removed (late files go with
/// `--discard-late-files`).
pub(super) async fn plan_dropped(
    hdfs: &Hdfs,
    options: &CleanupOptions,
    p: &mut PartitionCleanup,
) -> anyhow::Result<()> {
    let cutoff = chrono::Utc::now().timestamp_millis() - options.older_than.as_millis() as i64;
    let home = p.current.clone();
    let listing = hdfs.list(&home).await?.unwrap_or_default();
    for path in journal::list(hdfs, &home).await? {
        let Some(j) = journal::read(hdfs, &path).await? else {
            continue;
        };
        let mut run = RunCleanup::new(path, j, RunAction::Kept);
        if run.journal.finished_millis().is_some_and(|t| t <= cutoff) {
            run.action = RunAction::DeleteInputs;
            for input in &run.journal.inputs {
                let name = file_name(&input.path);
                if listing.files.iter().any(|f| {
                    f.name == name
                        && f.length == input.length
                        && f.modification_time == input.modification_time
                }) {
                    run.removed.push(home.child(name).to_string());
                }
            }
            let new = Location::parse(&run.journal.new_location)?;
            outputs_in(hdfs, &new, &mut run).await?;
        }
        run.late_files = journal::late_names(&run.journal, &listing)
            .iter()
            .map(|n| home.child(n).to_string())
            .collect();
        run.old_location = Some(home.clone());
        p.runs.push(run);
    }
    Ok(())
}

/// Whether the metastore has the partition (again).
pub(super) async fn still_there(
    metastore: &Metastore,
    p: &PartitionCleanup,
) -> anyhow::Result<bool> {
    match metastore
        .get_partition_by_values(&p.table_info.db, &p.table_info.name, &p.spec.values)
        .await
    {
        Ok(_) => Ok(true),
        Err(MetastoreError::NotFound { .. }) => Ok(false),
        Err(e) => Err(e.into()),
    }
}

/// Removes what [`plan_dropped`] found, then the journals of runs with nothing left to report,
/// and the emptied run, work and canonical directories (non-recursively: anything unknown stays).
pub(super) async fn settle_dropped(
    hdfs: &Hdfs,
    p: &mut PartitionCleanup,
    options: &CleanupOptions,
) -> anyhow::Result<()> {
    for run in &mut p.runs {
        if run.action == RunAction::Kept {
            continue;
        }
        if options.discard_late_files {
            discard(hdfs, run, options.trash, &mut p.trashed_to).await?;
        }
        for target in &run.removed {
            remove(
                hdfs,
                &Location::parse(target)?,
                options.trash,
                &mut p.trashed_to,
            )
            .await?;
        }
        if let Some(dir) = &run.run_dir {
            remove_if_empty(hdfs, dir).await?;
        }
        if run.late_files.is_empty() && run.unknown_files.is_empty() {
            hdfs.delete(&run.journal_path, false).await?;
        }
    }
    remove_if_empty(hdfs, &run_dirs::work_dir(&p.current)).await?;
    remove_if_empty(hdfs, &p.current).await?;
    Ok(())
}
