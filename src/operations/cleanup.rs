//! `cleanup`: remove what compactions left behind once readers can no longer need it.
//!
//! Promises:
//! - For each journal past the retention (`--older-than`), exactly the input files it names are
//!   deleted (or moved to the trash), from the old location, and only when that location is no
//!   longer the partition's current one and the file still has the journal's length and mtime.
//!   For a rolled-back run (or one the partition no longer points at while it points at the old
//!   files) its run directory is removed instead.
//! - Files in an old location that no journal names arrived after the swap (no query sees them):
//!   they are reported and left, or with `--adopt-late-files` renamed into the partition's
//!   current location, whose `numFiles`/`totalSize`/`numRows` are then recomputed from the
//!   files and their ORC tails (`rawDataSize` and `COLUMN_STATS_ACCURATE` dropped).
//! - Staging directories of dead runs, and published run directories that no partition points
//!   at and no journal names (runs that died before their swap), are removed once older than
//!   `--staging-older-than` (longer than any run).
//! - A run killed after its swap but before its journal is recognised from the partition
//!   parameters and its journal rebuilt (`journal::rebuild`) and written.
//! - Never a file of a partition's current location. Journals are marked cleaned, so a second
//!   cleanup finds nothing to do.
//!
//! [`plan`] decides without side effects (`--dry-run` prints it); [`execute`] does it; both
//! give a [`CleanupReport`].

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use anyhow::anyhow;
use serde::Serialize;
use tracing::Instrument;

use crate::exit::ExitCode;
use crate::fleet::{self, Partitions, Selection, Tables};
use crate::hdfs::{Hdfs, Location};
use crate::journal::{self, Journal, JournalOutput};
use crate::layout::{self, PARAM_RUN_ID};
use crate::metastore::Metastore;
use crate::partition_spec::PartitionSpec;
use crate::relocate::set_location;
use crate::snapshot::Snapshot;
use crate::table::TableInfo;

#[derive(Debug, Clone)]
pub struct CleanupOptions {
    /// Journals younger than this are kept (engines' metadata caches may still read old files).
    pub older_than: Duration,
    /// Staging and unreferenced run directories younger than this may belong to a live run.
    pub staging_older_than: Duration,
    pub trash: bool,
    pub adopt_late_files: bool,
    pub dry_run: bool,
}

/// What happens to one journal's run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum RunAction {
    /// The swap stands: the replaced files go.
    DeleteInputs,
    /// The partition is back on the old files: the run's own directory goes.
    DeleteOutputs,
    /// Younger than the retention: nothing yet.
    Kept,
}

#[derive(Debug, Serialize)]
pub struct RunCleanup {
    pub run_id: String,
    pub action: RunAction,
    /// Files or directories removed (or, in a dry run, to be removed).
    pub removed: Vec<String>,
    /// Files the journal names that are gone already, or changed (then left alone).
    pub left: Vec<String>,
    /// Files in the old location no journal names: written after the swap.
    pub late_files: Vec<String>,
    /// Late files renamed into the current location (`--adopt-late-files`).
    pub adopted: Vec<String>,
    #[serde(skip)]
    journal_path: Location,
    #[serde(skip)]
    journal: Journal,
    #[serde(skip)]
    old_location: Option<Location>,
}

/// One partition's cleanup.
#[derive(Debug, Serialize)]
pub struct PartitionCleanup {
    pub table: String,
    pub partition: String,
    pub location: String,
    /// Runs killed after their swap whose journal was rebuilt (and written).
    pub journals_rebuilt: Vec<String>,
    pub runs: Vec<RunCleanup>,
    /// Staging and run directories of dead runs removed.
    pub dead_runs_removed: Vec<String>,
    pub errors: Vec<String>,
    /// Where removed things went with `--trash`.
    pub trashed_to: Vec<String>,
    #[serde(skip)]
    table_info: TableInfo,
    #[serde(skip)]
    spec: PartitionSpec,
    #[serde(skip)]
    current: Location,
    #[serde(skip)]
    rebuilt: Vec<(Location, Journal)>,
}

impl PartitionCleanup {
    fn is_empty(&self) -> bool {
        self.journals_rebuilt.is_empty()
            && self.runs.is_empty()
            && self.dead_runs_removed.is_empty()
            && self.errors.is_empty()
    }
}

/// What `--json` prints.
#[derive(Debug, Serialize)]
pub struct CleanupReport {
    pub dry_run: bool,
    /// Partitions with something to report (others had nothing left behind).
    pub partitions: Vec<PartitionCleanup>,
    pub partitions_checked: usize,
    pub files_removed: usize,
    pub errors: usize,
}

impl CleanupReport {
    pub fn exit_code(&self) -> ExitCode {
        if self.errors > 0 {
            ExitCode::Failed
        } else {
            ExitCode::Ok
        }
    }
}

fn now_millis() -> i64 {
    chrono::Utc::now().timestamp_millis()
}

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
        partitions_checked: 0,
        files_removed: 0,
        errors: 0,
    };
    for table in fleet::select(metastore, &selection).await? {
        // Refused tables were never compacted; unpartitioned ones are not compacted yet.
        if table.refusal.is_some() || table.table.partition_keys.is_empty() {
            continue;
        }
        if let Some(e) = table.error {
            return Err(anyhow!("{}: {e}", table.table.qualified_name()));
        }
        for c in table.candidates {
            let Some(info) = c.partition else { continue };
            let Some(current) = info
                .storage
                .location
                .as_deref()
                .and_then(|l| Location::parse(l).ok())
            else {
                continue;
            };
            report.partitions_checked += 1;
            let spec = PartitionSpec::from_values(&table.table.partition_keys, &info.values);
            let mut p = PartitionCleanup {
                table: table.table.qualified_name(),
                partition: spec.name(),
                location: current.to_string(),
                journals_rebuilt: vec![],
                runs: vec![],
                dead_runs_removed: vec![],
                errors: vec![],
                trashed_to: vec![],
                table_info: (*table.table).clone(),
                spec,
                current,
                rebuilt: vec![],
            };
            let span = tracing::info_span!("partition", table = %p.table, partition = %p.partition);
            if let Err(e) = plan_partition(hdfs, &info.params, options, &mut p)
                .instrument(span)
                .await
            {
                p.errors.push(format!("{e:#}"));
            }
            if !p.is_empty() {
                report.errors += p.errors.len();
                report.partitions.push(p);
            }
        }
    }
    Ok(report)
}

async fn plan_partition(
    hdfs: &Hdfs,
    params: &BTreeMap<String, String>,
    options: &CleanupOptions,
    p: &mut PartitionCleanup,
) -> anyhow::Result<()> {
    let now = now_millis();
    let retention = options.older_than.as_millis() as i64;
    let dead_after = options.staging_older_than.as_millis() as i64;
    // A run killed after its swap and before its journal: rebuild the journal.
    if let Some(run) = journal::current_run(
        hdfs,
        &p.table,
        &p.partition,
        &p.spec.values,
        params,
        &p.current,
    )
    .await?
    // A run that swapped moments ago is writing its journal right now: leave it the time any
    // run may take.
    .filter(|r| {
        r.rebuilt
            && r.journal
                .finished_millis()
                .is_some_and(|t| now - t >= dead_after)
    }) {
        p.journals_rebuilt.push(run.journal.run_id.clone());
        p.rebuilt.push((run.path, run.journal));
    }
    for home in layout::homes(&p.table_info, &p.spec, &p.current) {
        let work = layout::work_dir(&home);
        let Some(listing) = hdfs.list(&work).await? else {
            continue;
        };
        let journal_names: BTreeSet<&str> = listing
            .files
            .iter()
            .filter_map(|f| layout::journal_run_id(&f.name))
            .collect();
        // Runs that died before their swap: staging, or published but never pointed at.
        for dir in &listing.subdirs {
            let run_dir = work.child(dir);
            let staging = layout::is_staging(dir);
            if !staging && journal_names.contains(dir.as_str())
                || p.current.is_within(&run_dir)
                || params.get(PARAM_RUN_ID) == Some(dir)
            {
                continue;
            }
            let Some(status) = hdfs.status(&run_dir).await? else {
                continue;
            };
            if now - (status.modification_time as i64) >= dead_after {
                p.dead_runs_removed.push(run_dir.to_string());
            }
        }
        let mut journals: Vec<(Location, Journal)> = p
            .rebuilt
            .iter()
            .filter(|(path, _)| path.is_within(&work))
            .cloned()
            .collect();
        for name in &journal_names {
            let path = layout::journal_path(&home, name);
            if let Some(j) = journal::read(hdfs, &path).await? {
                journals.push((path, j));
            }
        }
        for (path, j) in journals {
            if j.cleaned_at.is_some() {
                continue;
            }
            let run = plan_run(hdfs, p, path, j, now - retention).await?;
            p.runs.push(run);
        }
    }
    Ok(())
}

async fn plan_run(
    hdfs: &Hdfs,
    p: &PartitionCleanup,
    journal_path: Location,
    j: Journal,
    cutoff: i64,
) -> anyhow::Result<RunCleanup> {
    let mut run = RunCleanup {
        run_id: j.run_id.clone(),
        action: RunAction::Kept,
        removed: vec![],
        left: vec![],
        late_files: vec![],
        adopted: vec![],
        journal_path,
        journal: j.clone(),
        old_location: None,
    };
    if j.finished_millis().is_none_or(|t| t > cutoff) {
        return Ok(run);
    }
    let old = Location::parse(&j.old_location)?;
    let new = Location::parse(&j.new_location)?;
    if j.rolled_back_at.is_some() || (p.current == old && p.current != new) {
        run.action = RunAction::DeleteOutputs;
        if !p.current.is_within(&new) && hdfs.status(&new).await?.is_some() {
            run.removed.push(new.to_string());
        }
        return Ok(run);
    }
    if p.current == old {
        // The partition points at the old files: they are live, not leftovers.
        return Ok(run);
    }
    run.action = RunAction::DeleteInputs;
    run.old_location = Some(old.clone());
    let listing = hdfs.list(&old).await?.unwrap_or_default();
    let named: BTreeSet<&str> = j
        .inputs
        .iter()
        .map(|i| i.path.rsplit('/').next().unwrap_or(&i.path))
        .collect();
    for input in &j.inputs {
        let name = input.path.rsplit('/').next().unwrap_or(&input.path);
        match listing.files.iter().find(|f| f.name == name) {
            Some(f)
                if f.length == input.length && f.modification_time == input.modification_time =>
            {
                run.removed.push(old.child(name).to_string())
            }
            Some(_) => run
                .left
                .push(format!("{} changed since the run; left", input.path)),
            None => run.left.push(format!("{} is gone already", input.path)),
        }
    }
    run.late_files = listing
        .files
        .iter()
        .filter(|f| !named.contains(f.name.as_str()))
        .map(|f| old.child(&f.name).to_string())
        .collect();
    Ok(run)
}

/// Does what the plan says. A failure is recorded on its partition and the rest goes on.
pub async fn execute(
    metastore: &Metastore,
    hdfs: &Hdfs,
    mut report: CleanupReport,
    options: &CleanupOptions,
) -> CleanupReport {
    for p in &mut report.partitions {
        if let Err(e) = execute_partition(metastore, hdfs, p, options).await {
            p.errors.push(format!("{e:#}"));
        }
    }
    report.errors = report.partitions.iter().map(|p| p.errors.len()).sum();
    report.files_removed = report
        .partitions
        .iter()
        .flat_map(|p| &p.runs)
        .filter(|r| r.action == RunAction::DeleteInputs)
        .map(|r| r.removed.len())
        .sum();
    report
}

/// Deletes `target` (recursively), or moves it to the trash, recording where it went.
async fn remove(
    hdfs: &Hdfs,
    target: &Location,
    trash: bool,
    trashed_to: &mut Vec<String>,
) -> anyhow::Result<()> {
    if trash {
        trashed_to.push(hdfs.trash(target).await?.to_string());
    } else {
        hdfs.delete(target, true).await?;
    }
    Ok(())
}

async fn execute_partition(
    metastore: &Metastore,
    hdfs: &Hdfs,
    p: &mut PartitionCleanup,
    options: &CleanupOptions,
) -> anyhow::Result<()> {
    for (path, j) in &p.rebuilt {
        journal::write(hdfs, path, j).await?;
    }
    for dir in &p.dead_runs_removed {
        remove(
            hdfs,
            &Location::parse(dir)?,
            options.trash,
            &mut p.trashed_to,
        )
        .await?;
    }
    for run in &mut p.runs {
        if run.action == RunAction::Kept {
            continue;
        }
        if options.adopt_late_files && !run.late_files.is_empty() {
            adopt(
                metastore,
                hdfs,
                p.current.clone(),
                &p.table_info,
                &p.spec,
                run,
            )
            .await?;
        }
        for target in &run.removed {
            let target = Location::parse(target)?;
            // The one rule above all: never a file of the partition's current location.
            if p.current.is_within(&target)
                || target.path.rsplit_once('/').map(|(d, _)| d) == Some(&p.current.path)
            {
                return Err(anyhow!(
                    "refusing to remove {target}: the partition reads it"
                ));
            }
            remove(hdfs, &target, options.trash, &mut p.trashed_to).await?;
        }
        // An old location that was one of our run directories is now empty: remove it too
        // (a non-recursive delete, which fails rather than remove anything left in it).
        if let Some(old) = &run.old_location {
            if layout::is_in_work_dir(old)
                && hdfs.list(old).await?.is_some_and(|l| {
                    l.files.is_empty() && l.subdirs.is_empty() && l.hidden.is_empty()
                })
            {
                hdfs.delete(old, false).await?;
            }
        }
        run.journal.cleaned_at = Some(chrono::Utc::now().to_rfc3339());
        journal::replace(hdfs, &run.journal_path, &run.journal).await?;
    }
    Ok(())
}

/// Renames the run's late files into the current location and recomputes the partition's basic
/// statistics from the files there (their ORC tails give the rows).
async fn adopt(
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
        .filter(|f| run.adopted.contains(&f.location.to_string()))
    {
        run.journal.outputs.push(JournalOutput {
            path: file.location.to_string(),
            length: file.length,
            rows: file.rows(),
            inputs: vec![],
            stripe_checksums: vec![],
            column_digests: vec![],
        });
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
