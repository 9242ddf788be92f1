//! `cleanup`: remove what compactions left behind once readers can no longer need it.
//!
//! Promises:
//! - For each journal past the retention (`--older-than`), exactly the input files it names are
//!   deleted (or moved to the trash), from the old location, and only when that location is no
//!   longer the partition's current directory, the directory the partition now reads (when it
//!   is the run's) holds every output the journal names, and the file still has the journal's
//!   length and mtime. For a rolled-back run (or one the partition no longer points at while it
//!   points at the old files) exactly the outputs its journal names are removed from its run
//!   directory; files there no journal names (`unknown_files`: someone wrote into the run
//!   directory while the partition pointed at it) are never deleted, and reported until gone.
//! - A run whose swap another run of the same old location overwrote (two `--no-lock` runs
//!   that both re-read the partition before either altered it) has its outputs removed too,
//!   with its inputs: the partition reads the other run's copy of the same rows.
//! - Files in an old location that no journal names arrived after the swap (no query sees them):
//!   they are reported, by every cleanup (and by `inspect` and `verify`) until settled: with
//!   `--adopt-late-files` renamed into the partition's current location, whose
//!   `numFiles`/`totalSize`/`numRows` are then recomputed from the files and their ORC tails
//!   (`rawDataSize` and `COLUMN_STATS_ACCURATE` dropped); with `--discard-late-files` removed.
//! - Staging directories of dead runs, and published run directories that no partition points
//!   at and no journal names (runs that died before their swap), are removed once older than
//!   `--staging-older-than` (longer than any run).
//! - A run killed after its swap but before its journal is recognised from the partition
//!   parameters and its journal rebuilt (`journal::rebuild`) and written.
//! - Acts on what is true now: before touching a partition it takes the partition's lock (the
//!   staging lock `compact` holds: writers and other runs wait, readers do not), reads the
//!   partition and its journals again and plans that partition anew; right before each run's
//!   removals it reads the partition's location once more and stops if it moved. Directories
//!   are compared as the NameNode sees them, not as spelled (`Hdfs::within`). Journals are
//!   updated only if unchanged since read (`journal::replace_if_unchanged`).
//! - Binaries `compact --on-yarn` cached (`binary_cache`) go once neither the binary nor its
//!   `.used` marker was touched for `--binaries-older-than`, and uploads started as long ago;
//!   the cache is listed again right before removing, so a binary a run just reused stays.
//! - Never a file of a partition's current directory. Journals are marked cleaned, so a second
//!   cleanup removes nothing more (it still lists late and unknown files).
//!
//! [`plan`] decides without side effects (`--dry-run` prints it); [`execute`] does it, each
//! partition under its lock and planned again; both give a [`CleanupReport`]. The steps, a
//! module each: [`mod@plan`] (a partition the metastore has), [`dropped`] (partitions it no
//! longer has), [`delete`] (what a plan names), [`adopt`] (late files), [`rehome`], and the
//! sweep of the [`binaries`] cache; [`report`] is what they fill in.

use std::collections::BTreeSet;

use anyhow::{anyhow, Context};
use futures::StreamExt;
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use crate::fleet::{self, Partitions, Selection, Tables};
use crate::hdfs::{Hdfs, Probe};
use crate::lock;
use crate::metastore::Metastore;
use crate::partition_spec::PartitionSpec;
use crate::run_dirs;

mod adopt;
mod binaries;
mod delete;
mod dropped;
mod options;
mod plan;
mod rehome;
mod report;

use binaries::{execute_binaries, sweep_binaries};
use delete::execute_partition;
use dropped::{dropped_homes, plan_dropped, settle_dropped, still_there};
pub use options::CleanupOptions;
use plan::{current_location, plan_partition, reread};
pub use report::{BinariesCleanup, CleanupReport, PartitionCleanup, RunAction, RunCleanup};

/// Decides what to remove, without side effects.
pub async fn plan(
    metastore: &Metastore,
    hdfs: &Hdfs,
    tables: Tables,
    options: &CleanupOptions,
) -> anyhow::Result<CleanupReport> {
    let selection = Selection {
        tables,
        partitions: Partitions::All,
        shard: None,
    };
    let mut report = CleanupReport {
        dry_run: options.dry_run,
        partitions: vec![],
        tables_checked: vec![],
        partitions_checked: 0,
        files_removed: 0,
        errors: 0,
        binaries: BinariesCleanup::default(),
    };
    for table in fleet::select(metastore, &selection).await? {
        // Refused tables were never compacted; unpartitioned ones are not compacted yet.
        if table.refusal.is_some() || table.table.partition_keys.is_empty() {
            continue;
        }
        if let Some(e) = table.error {
            return Err(anyhow!("{}: {e}", table.table.qualified_name()));
        }
        report.tables_checked.push(table.table.qualified_name());
        let existing: BTreeSet<String> = table.candidates.iter().map(|c| c.name.clone()).collect();
        if table.table.table_type.eq_ignore_ascii_case("MANAGED_TABLE") {
            for spec in dropped_homes(hdfs, &table.table, &existing).await? {
                let Some(home) = run_dirs::canonical_home(&table.table, &spec) else {
                    continue;
                };
                report.partitions_checked += 1;
                let mut p = PartitionCleanup::new((*table.table).clone(), spec, home);
                p.dropped = true;
                if let Err(e) = plan_dropped(hdfs, options, &mut p).await {
                    p.failed(e);
                }
                if !p.is_empty() {
                    p.settle(true);
                    report.partitions.push(p);
                }
            }
        }
        let mut candidates = std::pin::pin!(fleet::fetched(metastore, table.candidates));
        while let Some(c) = candidates.next().await {
            // Dropped since it was listed, or its page could not be read (logged).
            let Some(info) = c.partition else { continue };
            let Some(current) = current_location(&info) else {
                continue;
            };
            report.partitions_checked += 1;
            let spec = PartitionSpec::from_values(&table.table.partition_keys, &info.values);
            let mut p = PartitionCleanup::new((*table.table).clone(), spec, current);
            let span = tracing::info_span!(
                "partition",
                table = %p.outcome.table,
                partition = %p.outcome.partition
            );
            if let Err(e) = plan_partition(hdfs, &info.params, options, &mut p, Probe::ReadOnly)
                .instrument(span)
                .await
            {
                p.failed(e);
            }
            if !p.is_empty() {
                p.settle(true);
                report.partitions.push(p);
            }
        }
    }
    report.binaries = sweep_binaries(hdfs, options).await;
    report.count_errors();
    Ok(report)
}

/// Does what the plan says, partition by partition, each under its lock and planned again
/// from what is true once the lock is held. A failure is recorded on its partition and the rest
/// goes on.
pub async fn execute(
    metastore: &Metastore,
    hdfs: &Hdfs,
    mut report: CleanupReport,
    options: &CleanupOptions,
) -> CleanupReport {
    for p in &mut report.partitions {
        let span = tracing::info_span!(
            "partition",
            table = %p.outcome.table,
            partition = %p.outcome.partition
        );
        if let Err(e) = locked(metastore, hdfs, p, options).instrument(span).await {
            p.failed(e);
        }
        p.settle(false);
    }
    report.binaries = execute_binaries(hdfs, options).await;
    report.count_errors();
    report.files_removed = report
        .partitions
        .iter()
        .map(PartitionCleanup::files_removed)
        .sum();
    report
}

/// Takes the partition's lock, plans it again, acts, and lets the lock go.
async fn locked(
    metastore: &Metastore,
    hdfs: &Hdfs,
    p: &mut PartitionCleanup,
    options: &CleanupOptions,
) -> anyhow::Result<()> {
    let name = p.spec.name();
    let target = lock::Target {
        db: &p.table_info.db,
        table: &p.table_info.name,
        partition: &name,
    };
    let mut warnings = vec![];
    let held = lock::acquire_staging(
        metastore,
        &target,
        &options.lock,
        &CancellationToken::new(),
        &mut warnings,
    )
    .await
    .with_context(|| {
        format!(
            "{} partition {}: nothing removed; run cleanup again later",
            p.outcome.table, p.outcome.partition
        )
    })?;
    for w in warnings {
        tracing::warn!("{w}");
    }
    let result = replan_and_execute(metastore, hdfs, p, options).await;
    if let Some(held) = held {
        if let Err(e) = held.release().await {
            tracing::warn!("releasing the metastore lock: {e}");
        }
    }
    result
}

async fn replan_and_execute(
    metastore: &Metastore,
    hdfs: &Hdfs,
    p: &mut PartitionCleanup,
    options: &CleanupOptions,
) -> anyhow::Result<()> {
    if p.dropped {
        // Still dropped now that the lock is held? An ADD PARTITION since may read the files.
        if still_there(metastore, p).await? {
            return Err(anyhow!(
                "{} partition {} exists again; its directory {} is left as it is: run cleanup \
                 again",
                p.outcome.table,
                p.outcome.partition,
                p.current
            ));
        }
        let mut fresh =
            PartitionCleanup::new(p.table_info.clone(), p.spec.clone(), p.current.clone());
        fresh.dropped = true;
        plan_dropped(hdfs, options, &mut fresh).await?;
        let result = settle_dropped(hdfs, &mut fresh, options).await;
        *p = fresh;
        return result;
    }
    let (params, current) = reread(metastore, &p.table_info, &p.spec).await?;
    let mut fresh = PartitionCleanup::new(p.table_info.clone(), p.spec.clone(), current);
    plan_partition(hdfs, &params, options, &mut fresh, Probe::Allowed).await?;
    let result = execute_partition(metastore, hdfs, &mut fresh, options).await;
    *p = fresh;
    result
}
