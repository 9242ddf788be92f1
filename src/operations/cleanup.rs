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
//! [`plan`] decides without side effects (`--dry-run` prints it); [`execute`] does it; both
//! give a [`CleanupReport`].

use futures::StreamExt;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{anyhow, Context};
use serde::Serialize;
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use crate::binary_cache;
use crate::exit::ExitCode;
use crate::fleet::{self, Partitions, Selection, Tables};
use crate::hdfs::{Hdfs, Location, Probe};
use crate::journal::{self, file_name, Journal, JournalOutput};
use crate::lock::{self, LockOptions};
use crate::metastore::{Metastore, MetastoreError};
use crate::operations::compact::write::{copy_file, hash_file};
use crate::operations::outcome::{Outcome, Status, Stop};
use crate::operations::verify;
use crate::orc::ReadAhead;
use crate::partition_spec::PartitionSpec;
use crate::relocate::{set_location, RelocateError};
use crate::run_dirs::{self, PARAM_PREVIOUS_LOCATION, PARAM_RUN_ID};
use crate::snapshot::{Reads, Snapshot};
use crate::table::{PartitionInfo, TableInfo};

#[derive(Debug, Clone)]
pub struct CleanupOptions {
    /// Journals younger than this are kept (engines' metadata caches may still read old files).
    pub older_than: Duration,
    /// Staging and unreferenced run directories younger than this may belong to a live run.
    pub staging_older_than: Duration,
    /// The cache of binaries `compact --on-yarn` ships (`binary_cache`).
    pub binaries: Location,
    /// Cached binaries no run used for this long go.
    pub binaries_older_than: Duration,
    pub trash: bool,
    pub adopt_late_files: bool,
    /// Remove late files instead of listing them (never together with `adopt_late_files`).
    pub discard_late_files: bool,
    /// Bring partitions whose run's inputs are gone back to their canonical directory.
    pub rehome: bool,
    pub dry_run: bool,
    /// The lock taken on each partition before acting on it.
    pub lock: LockOptions,
}

/// What happens to one journal's run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum RunAction {
    /// The swap stands: the replaced files go.
    DeleteInputs,
    /// The partition is back on the old files: the run's own outputs go.
    DeleteOutputs,
    /// Younger than the retention, or its outputs are not all where the partition reads:
    /// nothing yet.
    Kept,
    /// Cleaned by an earlier cleanup; files no journal names are still there (late files in
    /// its old location, unknown files in its run directory) and stay listed until settled.
    Settled,
}

#[derive(Debug, Serialize)]
pub struct RunCleanup {
    pub run_id: String,
    pub action: RunAction,
    /// Files or directories removed (or, in a dry run, to be removed).
    pub removed: Vec<String>,
    /// Files the journal names that are gone already, or changed (then left alone).
    pub left: Vec<String>,
    /// Outputs the journal names that the partition's directory lacks: the inputs are then
    /// the only copy of their rows and stay.
    pub missing_outputs: Vec<String>,
    /// Files in the old location no journal names: written after the swap.
    pub late_files: Vec<String>,
    /// Late files renamed into the current location (`--adopt-late-files`).
    pub adopted: Vec<String>,
    /// Late files removed (`--discard-late-files`).
    pub discarded: Vec<String>,
    /// Files in the run's directory its journal does not name: never removed by cleanup.
    pub unknown_files: Vec<String>,
    #[serde(skip)]
    journal_path: Location,
    /// The journal as read, to update it only if nobody changed it meanwhile.
    #[serde(skip)]
    journal_read: Journal,
    #[serde(skip)]
    journal: Journal,
    #[serde(skip)]
    old_location: Option<Location>,
    /// The run's directory, removed (non-recursively) once its outputs are.
    #[serde(skip)]
    run_dir: Option<Location>,
    /// The partition reads the run's directory.
    #[serde(skip)]
    partition_reads_it: bool,
}

impl RunCleanup {
    fn new(journal_path: Location, journal: Journal, action: RunAction) -> Self {
        RunCleanup {
            run_id: journal.run_id.clone(),
            action,
            removed: vec![],
            left: vec![],
            missing_outputs: vec![],
            late_files: vec![],
            adopted: vec![],
            discarded: vec![],
            unknown_files: vec![],
            journal_path,
            journal_read: journal.clone(),
            journal,
            old_location: None,
            run_dir: None,
            partition_reads_it: false,
        }
    }
}

/// One partition's cleanup. Its status: `cleaned`, `nothing-to-do` (only kept runs), `dry-run`,
/// or `failed` (every failure in the reason; the rest was still done).
#[derive(Debug, Serialize)]
pub struct PartitionCleanup {
    #[serde(flatten)]
    pub outcome: Outcome,
    pub location: String,
    /// Runs killed after their swap whose journal was rebuilt (and written).
    pub journals_rebuilt: Vec<String>,
    pub runs: Vec<RunCleanup>,
    /// Staging and run directories of dead runs removed.
    pub dead_runs_removed: Vec<String>,
    /// Where removed things went with `--trash`.
    pub trashed_to: Vec<String>,
    /// `--rehome`: the canonical directory the partition was (or, in a dry run, would be)
    /// brought back to.
    pub rehomed_to: Option<String>,
    /// The metastore no longer has the partition (a managed table's `DROP PARTITION`): what
    /// the tool left in its canonical directory is settled.
    pub dropped: bool,
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
    fn new(table_info: TableInfo, spec: PartitionSpec, current: Location) -> Self {
        let mut outcome = Outcome::new(&table_info.qualified_name(), &spec.name());
        outcome.status = Status::NothingToDo;
        PartitionCleanup {
            outcome,
            location: current.to_string(),
            journals_rebuilt: vec![],
            runs: vec![],
            dead_runs_removed: vec![],
            trashed_to: vec![],
            rehomed_to: None,
            dropped: false,
            table_info,
            spec,
            current,
            rebuilt: vec![],
        }
    }

    /// The replaced data files removed (or, in a dry run, to be removed).
    pub fn files_removed(&self) -> usize {
        self.runs
            .iter()
            .filter(|r| r.action == RunAction::DeleteInputs)
            .map(|r| r.removed.len())
            .sum()
    }

    fn is_empty(&self) -> bool {
        self.journals_rebuilt.is_empty()
            && self.runs.is_empty()
            && self.dead_runs_removed.is_empty()
            && self.outcome.status != Status::Failed
            && self.rehomed_to.is_none()
    }

    fn failed(&mut self, e: anyhow::Error) {
        self.outcome.stop_and_go_on(Stop::Failed(e));
    }

    /// The status once planned (or done), unless something failed.
    fn settle(&mut self, dry_run: bool) {
        if self.outcome.status == Status::Failed {
            return;
        }
        let acted = !self.journals_rebuilt.is_empty()
            || !self.dead_runs_removed.is_empty()
            || self.rehomed_to.is_some()
            || self
                .runs
                .iter()
                .any(|r| !(r.removed.is_empty() && r.adopted.is_empty() && r.discarded.is_empty()));
        self.outcome.status = match (acted, dry_run) {
            (false, _) => Status::NothingToDo,
            (true, true) => Status::DryRun,
            (true, false) => Status::Cleaned,
        };
    }
}

/// What `--json` prints.
#[derive(Debug, Serialize)]
pub struct CleanupReport {
    pub dry_run: bool,
    /// Partitions with something to report (others had nothing left behind).
    pub partitions: Vec<PartitionCleanup>,
    /// The partitioned tables checked, as `db.table` (refused and unpartitioned ones are not).
    pub tables_checked: Vec<String>,
    pub partitions_checked: usize,
    pub files_removed: usize,
    /// Partitions whose cleanup failed (in part), and the binary cache's sweep if it failed.
    pub errors: usize,
    pub binaries: BinariesCleanup,
}

/// The sweep of `compact --on-yarn`'s binary cache.
#[derive(Debug, Default, Serialize)]
pub struct BinariesCleanup {
    /// The cache directory.
    pub dir: String,
    /// Binaries no run used for the retention, each with its `.used` marker, and uploads
    /// abandoned as long ago: removed (in a dry run, to be removed).
    pub removed: Vec<String>,
    /// Binaries some run used within the retention.
    pub kept: Vec<String>,
    /// Where removed files went with `--trash`.
    pub trashed_to: Vec<String>,
    /// Why (part of) the sweep failed.
    pub error: Option<String>,
}

impl CleanupReport {
    pub fn exit_code(&self) -> ExitCode {
        let sweep = self.binaries.error.as_ref().map(|_| ExitCode::Failed);
        ExitCode::worst(
            self.partitions
                .iter()
                .map(|p| p.outcome.exit_code())
                .chain(sweep),
        )
    }

    fn count_errors(&mut self) {
        self.errors = self
            .partitions
            .iter()
            .filter(|p| p.outcome.status == Status::Failed)
            .count()
            + usize::from(self.binaries.error.is_some());
    }
}

fn now_millis() -> i64 {
    chrono::Utc::now().timestamp_millis()
}

/// The partition's current location, if it has one this tool can read.
fn current_location(info: &PartitionInfo) -> Option<Location> {
    info.storage
        .location
        .as_deref()
        .and_then(|l| Location::parse(l).ok())
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

/// Lists the binary cache and decides what goes; reads only.
async fn sweep_binaries(hdfs: &Hdfs, options: &CleanupOptions) -> BinariesCleanup {
    let dir = &options.binaries;
    let mut out = BinariesCleanup {
        dir: dir.to_string(),
        ..BinariesCleanup::default()
    };
    let files = match hdfs.list(dir).await {
        Ok(listing) => listing.map(|l| l.files).unwrap_or_default(),
        Err(e) => {
            out.error = Some(format!("{e}; the cached binaries stay (check --yarn-dir)"));
            return out;
        }
    };
    let now = now_millis() as u64;
    let sweep = binary_cache::sweep(&files, now, options.binaries_older_than);
    out.removed = sweep
        .remove
        .iter()
        .map(|n| dir.child(n).to_string())
        .collect();
    out.kept = sweep
        .keep
        .iter()
        .map(|n| dir.child(n).to_string())
        .collect();
    out
}

/// Removes what a fresh look at the binary cache finds unused for the retention: a run may
/// have reused a binary since the plan was made.
async fn execute_binaries(hdfs: &Hdfs, options: &CleanupOptions) -> BinariesCleanup {
    let mut out = sweep_binaries(hdfs, options).await;
    let mut removed = vec![];
    for target in std::mem::take(&mut out.removed) {
        let done = match Location::parse(&target) {
            Ok(t) => remove(hdfs, &t, options.trash, &mut out.trashed_to).await,
            Err(e) => Err(e.into()),
        };
        match done {
            Ok(()) => removed.push(target),
            Err(e) => {
                out.error = Some(format!("{e:#}; run cleanup again"));
                break;
            }
        }
    }
    out.removed = removed;
    out
}

async fn plan_partition(
    hdfs: &Hdfs,
    params: &BTreeMap<String, String>,
    options: &CleanupOptions,
    p: &mut PartitionCleanup,
    probe: Probe,
) -> anyhow::Result<()> {
    let now = now_millis();
    let retention = options.older_than.as_millis() as i64;
    let dead_after = options.staging_older_than.as_millis() as i64;
    // A run killed after its swap and before its journal: rebuild the journal.
    if let Some(run) = journal::current_run(
        hdfs,
        &p.outcome.table,
        &p.outcome.partition,
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
    let mut journals = p.rebuilt.clone();
    for home in run_dirs::homes(&p.table_info, &p.spec, &p.current) {
        let work = run_dirs::work_dir(&home);
        let Some(listing) = hdfs.list(&work).await? else {
            continue;
        };
        let journal_names: BTreeSet<&str> = listing
            .files
            .iter()
            .filter_map(|f| run_dirs::journal_run_id(&f.name))
            .collect();
        // Runs that died before their swap: staging, or published but never pointed at.
        for dir in &listing.subdirs {
            let run_dir = work.child(dir);
            let staging = run_dirs::is_staging(dir);
            if !staging && journal_names.contains(dir.as_str())
                || params.get(PARAM_RUN_ID) == Some(dir)
                || hdfs.within(&p.current, &run_dir, probe).await?
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
        for name in &journal_names {
            let path = run_dirs::journal_path(&home, name);
            if let Some(j) = journal::read(hdfs, &path).await? {
                journals.push((path, j));
            }
        }
    }
    // A home spelled two ways lists its journals twice.
    let mut seen = BTreeSet::new();
    journals.retain(|(_, j)| seen.insert(j.run_id.clone()));
    // The run whose directory the partition reads, by path; a run of the same old location
    // whose swap it overwrote (two unlocked runs that both re-read before either altered)
    // left a directory nothing needs.
    let reading = journals
        .iter()
        .find(|(_, j)| Location::parse(&j.new_location).is_ok_and(|n| n.path == p.current.path))
        .map(|(_, j)| (j.run_id.clone(), j.old_location.clone()));
    for (path, j) in journals {
        let cutoff = now - retention;
        let superseded = reading
            .as_ref()
            .is_some_and(|(id, old)| *id != j.run_id && *old == j.old_location);
        let wants = Wants {
            cutoff,
            rehome: options.rehome,
            superseded,
        };
        if let Some(run) = plan_run(hdfs, p, path, j, wants, probe).await? {
            if !run.missing_outputs.is_empty() {
                p.failed(anyhow!(
                    "run {}: the partition's directory {} lacks {} of the run's outputs ({}); \
                     its replaced files stay, the only copy of those rows: restore the outputs \
                     or roll back",
                    run.run_id,
                    p.current,
                    run.missing_outputs.len(),
                    run.missing_outputs.join(", ")
                ));
            }
            p.runs.push(run);
        }
    }
    // `--rehome` once the run the partition reads has had its inputs removed (now or before).
    let rehome_ready = p.runs.iter().any(|r| {
        r.partition_reads_it
            && matches!(r.action, RunAction::DeleteInputs | RunAction::Settled)
            && r.journal.rehomed_at.is_none()
    });
    if options.rehome && rehome_ready {
        p.rehomed_to = run_dirs::canonical_home(&p.table_info, &p.spec).map(|h| h.to_string());
    }
    Ok(())
}

/// Partitions of a managed table that the metastore no longer has but whose canonical
/// directory holds this tool's work directory: dropped after a compaction. The metastore's
/// `DROP PARTITION` deleted the directory the partition pointed at (a run's), not the files the
/// run replaced in `<table>/<k=v>`, which `MSCK REPAIR TABLE` would bring back as a partition of
/// stale rows. One listing per partition directory of the table.
async fn dropped_homes(
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
async fn plan_dropped(
    hdfs: &Hdfs,
    options: &CleanupOptions,
    p: &mut PartitionCleanup,
) -> anyhow::Result<()> {
    let cutoff = now_millis() - options.older_than.as_millis() as i64;
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

/// What [`plan_run`] is asked besides the journal.
struct Wants {
    /// Swaps (or rehomes) before this time (milliseconds since the epoch) are past the retention.
    cutoff: i64,
    /// `--rehome`: keep the run the partition reads in the plan.
    rehome: bool,
    /// Another run of the same old location overwrote this run's swap: its directory goes too.
    superseded: bool,
}

/// One journal's run; `None` when nothing about it is left to do or to report (with `rehome`,
/// the run the partition reads is always kept: its directory is what would be rehomed).
async fn plan_run(
    hdfs: &Hdfs,
    p: &PartitionCleanup,
    journal_path: Location,
    j: Journal,
    wants: Wants,
    probe: Probe,
) -> anyhow::Result<Option<RunCleanup>> {
    let Wants {
        cutoff,
        rehome,
        superseded,
    } = wants;
    let old = Location::parse(&j.old_location)?;
    let new = Location::parse(&j.new_location)?;
    let on_old = hdfs.same_dir(&p.current, &old, probe).await?;
    let on_new = hdfs.same_dir(&p.current, &new, probe).await?;
    // The partition left the run's directory: swapped back, or rehomed after its inputs went.
    let rehomed = j.rehomed_at.is_some();
    let left_run_dir = j.rolled_back_at.is_some() || rehomed || (on_old && !on_new);
    // What this cleanup would remove is gone already.
    let done = if rehomed {
        j.run_dir_cleaned_at.is_some()
    } else {
        j.cleaned_at.is_some()
    };
    let since = if rehomed {
        j.rehomed_millis()
    } else {
        j.finished_millis()
    };
    let mut run = RunCleanup::new(journal_path, j, RunAction::Kept);
    run.partition_reads_it = on_new;
    if done {
        run.action = RunAction::Settled;
        if left_run_dir {
            run.unknown_files = unknown_files(hdfs, p, &new, &run.journal, probe).await?;
        } else if !on_old {
            run.late_files = late_files(hdfs, &old, &run.journal).await?;
            run.old_location = Some(old);
        }
        let unsettled = !run.unknown_files.is_empty() || !run.late_files.is_empty();
        return Ok((unsettled || (rehome && on_new)).then_some(run));
    }
    if since.is_none_or(|t| t > cutoff) {
        return Ok(Some(run));
    }
    if left_run_dir {
        run.action = RunAction::DeleteOutputs;
        if hdfs.within(&p.current, &new, probe).await? {
            run.left.push(format!("{new}: the partition reads it"));
            return Ok(Some(run));
        }
        outputs_in(hdfs, &new, &mut run).await?;
        return Ok(Some(run));
    }
    if on_old {
        // The partition points at the old files: they are live, not leftovers.
        return Ok(Some(run));
    }
    let listing = hdfs.list(&old).await?.unwrap_or_default();
    if on_new {
        // The inputs are the only other copy of the outputs' rows: they go only while every
        // output is where the partition reads.
        let live = hdfs.list(&p.current).await?.unwrap_or_default();
        run.missing_outputs = run
            .journal
            .outputs
            .iter()
            .filter(|o| {
                !live
                    .files
                    .iter()
                    .any(|f| f.name == file_name(&o.path) && f.length == o.length)
            })
            .map(|o| o.path.clone())
            .collect();
        if !run.missing_outputs.is_empty() {
            return Ok(Some(run));
        }
    }
    run.action = RunAction::DeleteInputs;
    for input in &run.journal.inputs {
        let name = file_name(&input.path);
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
    run.late_files = journal::late_names(&run.journal, &listing)
        .iter()
        .map(|n| old.child(n).to_string())
        .collect();
    run.old_location = Some(old);
    if superseded && !hdfs.within(&p.current, &new, probe).await? {
        outputs_in(hdfs, &new, &mut run).await?;
    }
    Ok(Some(run))
}

/// Plans the removal of the outputs `run`'s journal names from its directory `new`, then of the
/// directory if nothing else is in it; what else is there is reported, never removed.
async fn outputs_in(hdfs: &Hdfs, new: &Location, run: &mut RunCleanup) -> anyhow::Result<()> {
    let named: BTreeSet<&str> = run
        .journal
        .outputs
        .iter()
        .map(|o| file_name(&o.path))
        .collect();
    if let Some(listing) = hdfs.list(new).await? {
        run.removed.extend(
            listing
                .files
                .iter()
                .filter(|f| named.contains(f.name.as_str()))
                .map(|f| new.child(&f.name).to_string()),
        );
        run.unknown_files = unknown_in(new, &listing, &named);
        run.run_dir = Some(new.clone());
    }
    Ok(())
}

/// The late files in a cleaned run's old location: every visible file its journal does not
/// name as an input.
async fn late_files(hdfs: &Hdfs, old: &Location, j: &Journal) -> anyhow::Result<Vec<String>> {
    Ok(match hdfs.list(old).await? {
        Some(listing) => journal::late_names(j, &listing)
            .iter()
            .map(|n| old.child(n).to_string())
            .collect(),
        None => vec![],
    })
}

/// What is in a rolled-back run's directory that its journal does not name as an output.
async fn unknown_files(
    hdfs: &Hdfs,
    p: &PartitionCleanup,
    run_dir: &Location,
    j: &Journal,
    probe: Probe,
) -> anyhow::Result<Vec<String>> {
    if hdfs.within(&p.current, run_dir, probe).await? {
        return Ok(vec![]);
    }
    let named: BTreeSet<&str> = j.outputs.iter().map(|o| file_name(&o.path)).collect();
    Ok(match hdfs.list(run_dir).await? {
        Some(listing) => unknown_in(run_dir, &listing, &named),
        None => vec![],
    })
}

fn unknown_in(
    dir: &Location,
    listing: &crate::hdfs::Listing,
    named: &BTreeSet<&str>,
) -> Vec<String> {
    listing
        .files
        .iter()
        .map(|f| &f.name)
        .filter(|n| !named.contains(n.as_str()))
        .chain(&listing.subdirs)
        .map(|n| dir.child(n).to_string())
        .collect()
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

/// The partition as the metastore has it now: its parameters and location.
async fn reread(
    metastore: &Metastore,
    table: &TableInfo,
    spec: &PartitionSpec,
) -> anyhow::Result<(BTreeMap<String, String>, Location)> {
    let partition = metastore
        .get_partition_by_values(&table.db, &table.name, &spec.values)
        .await?;
    let info = PartitionInfo::from(&partition);
    let current = current_location(&info).ok_or_else(|| {
        anyhow!(
            "{} partition {} has no HDFS location now; nothing removed",
            table.qualified_name(),
            spec.name()
        )
    })?;
    Ok((info.params, current))
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

/// Whether the metastore has the partition (again).
async fn still_there(metastore: &Metastore, p: &PartitionCleanup) -> anyhow::Result<bool> {
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
async fn settle_dropped(
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

/// Removes a directory only if it holds nothing at all.
async fn remove_if_empty(hdfs: &Hdfs, dir: &Location) -> anyhow::Result<()> {
    if hdfs
        .list(dir)
        .await?
        .is_some_and(|l| l.files.is_empty() && l.subdirs.is_empty() && l.hidden.is_empty())
    {
        hdfs.delete(dir, false).await?;
    }
    Ok(())
}

/// `--discard-late-files`: removes the run's late files, recording them as discarded.
async fn discard(
    hdfs: &Hdfs,
    run: &mut RunCleanup,
    trash: bool,
    trashed_to: &mut Vec<String>,
) -> anyhow::Result<()> {
    for late in std::mem::take(&mut run.late_files) {
        remove(hdfs, &Location::parse(&late)?, trash, trashed_to).await?;
        run.discarded.push(late);
    }
    Ok(())
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
        journal::write(hdfs, path, Arc::new(j.clone())).await?;
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
        // Right before removing anything of this run: is the partition still where it was?
        let (_, now) = reread(metastore, &p.table_info, &p.spec).await?;
        if now != p.current {
            return Err(anyhow!(
                "{} partition {} moved to {now} while cleanup worked (it was at {}); nothing \
                 more removed from it: run cleanup again",
                p.outcome.table,
                p.outcome.partition,
                p.current
            ));
        }
        if !run.late_files.is_empty() {
            if options.adopt_late_files {
                adopt(
                    metastore,
                    hdfs,
                    p.current.clone(),
                    &p.table_info,
                    &p.spec,
                    run,
                )
                .await?;
            } else if options.discard_late_files {
                discard(hdfs, run, options.trash, &mut p.trashed_to).await?;
            }
        }
        for target in &run.removed {
            let target = Location::parse(target)?;
            let dir = Location {
                fs: target.fs.clone(),
                path: target
                    .path
                    .rsplit_once('/')
                    .map_or("/", |(d, _)| d)
                    .to_string(),
            };
            // The one rule above all: never a file of the partition's current directory.
            if hdfs.within(&p.current, &target, Probe::Allowed).await?
                || hdfs.same_dir(&dir, &p.current, Probe::Allowed).await?
            {
                return Err(anyhow!(
                    "refusing to remove {target}: the partition reads it"
                ));
            }
            remove(hdfs, &target, options.trash, &mut p.trashed_to).await?;
        }
        // An emptied run directory goes too (a non-recursive delete, which fails rather than
        // remove anything left in it): an old location that was one, or a rolled-back run's.
        let emptied = run
            .old_location
            .iter()
            .filter(|old| run_dirs::is_in_work_dir(old))
            .chain(&run.run_dir);
        for dir in emptied {
            remove_if_empty(hdfs, dir).await?;
        }
        let now = Some(chrono::Utc::now().to_rfc3339());
        match run.action {
            RunAction::Settled | RunAction::Kept => {}
            _ if run.journal.rehomed_at.is_some() => run.journal.run_dir_cleaned_at = now,
            _ => run.journal.cleaned_at = now,
        }
        if run.journal != run.journal_read {
            journal::replace_if_unchanged(hdfs, &run.journal_path, &run.journal_read, &run.journal)
                .await?;
            run.journal_read = run.journal.clone();
        }
    }
    if let Some(home) = &p.rehomed_to {
        let home = Location::parse(home)?;
        rehome(metastore, hdfs, p, &home).await?;
    }
    Ok(())
}

/// `--rehome`: brings a partition whose run's inputs are gone back to its canonical directory,
/// where readers that go by path (distcp, globs, `spark.read.orc(dir)`, MSCK) look. The run's
/// outputs are copied in under a hidden directory, checked against the journal (lengths, rows,
/// every stripe's checksum) and against the bytes read, renamed in, and then one alter points
/// the partition there; metastore readers see the run's directory until that alter and the same
/// files after it. The run's directory goes with a later cleanup, after the retention.
async fn rehome(
    metastore: &Metastore,
    hdfs: &Hdfs,
    p: &mut PartitionCleanup,
    home: &Location,
) -> anyhow::Result<()> {
    let what = format!(
        "{} partition {}: not rehomed",
        p.outcome.table, p.outcome.partition
    );
    let Some(run) = p.runs.iter_mut().find(|r| r.partition_reads_it) else {
        return Ok(());
    };
    if run.journal.cleaned_at.is_none() || run.journal.rehomed_at.is_some() {
        p.rehomed_to = None;
        return Ok(());
    }
    if let Some(listing) = hdfs.list(home).await? {
        let visible: Vec<&str> = listing
            .files
            .iter()
            .map(|f| f.name.as_str())
            .chain(listing.subdirs.iter().map(String::as_str))
            .collect();
        if !visible.is_empty() {
            return Err(anyhow!(
                "{what}: {home} still holds {} (late files? settle them with \
                 --adopt-late-files or --discard-late-files first)",
                visible.join(", ")
            ));
        }
    }
    let records: BTreeMap<&str, &JournalOutput> = run
        .journal
        .outputs
        .iter()
        .map(|o| (file_name(&o.path), o))
        .collect();
    let to_read = Reads { sources: true };
    let outputs = Snapshot::take_with(hdfs, &p.current, to_read)
        .await
        .with_context(|| format!("{what}: reading {}", p.current))?;
    if let Some(stranger) = outputs
        .files
        .iter()
        .find(|f| !records.contains_key(f.name.as_str()))
    {
        return Err(anyhow!(
            "{what}: {} is not one of run {}'s outputs; check the partition with verify",
            stranger.location(),
            run.run_id
        ));
    }
    let staging = run_dirs::work_dir(home).child(&format!("{}.rehome", run.run_id));
    hdfs.mkdirs(&staging, 0o755).await?;
    let read_ahead = ReadAhead::default();
    let mut sent = BTreeMap::new();
    for f in &outputs.files {
        let hash = copy_file(hdfs, f, &staging.child(&f.name), f.permission, &read_ahead)
            .await
            .map_err(|e| anyhow!("{what}: {e}"))?;
        sent.insert(f.name.clone(), hash);
    }
    let copies = Snapshot::take(hdfs, &staging)
        .await
        .with_context(|| format!("{what}: reading {staging}"))?;
    for c in &copies.files {
        let (_, mut wrong) = verify::check_output(hdfs, c, records[c.name.as_str()], true).await?;
        let (_, hash) = hash_file(hdfs, &c.location(), c.length, &read_ahead)
            .await
            .map_err(|e| anyhow!("{what}: {e}"))?;
        if sent.get(&c.name) != Some(&hash) {
            wrong.push(format!("{} differs from the bytes read", c.name));
        }
        if !wrong.is_empty() {
            return Err(anyhow!(
                "{what}: the copy in {staging} is not the run's output: {}; the copies stay \
                 hidden there (cleanup removes them)",
                wrong.join("; ")
            ));
        }
    }
    if copies.files.len() != outputs.files.len() {
        return Err(anyhow!(
            "{what}: {staging} lacks copies; it stays hidden there"
        ));
    }
    let mut shown = vec![];
    let swapped = async {
        for c in &copies.files {
            let to = home.child(&c.name);
            hdfs.rename(&c.location(), &to).await?;
            shown.push((to, c.location()));
        }
        set_location(
            metastore,
            &p.table_info,
            &p.spec,
            &p.current,
            &home.to_string(),
            |before| {
                let mut after = before.clone();
                after.remove(PARAM_RUN_ID);
                after.remove(PARAM_PREVIOUS_LOCATION);
                after
            },
        )
        .await?;
        anyhow::Ok(())
    }
    .await;
    if let Err(e) = swapped {
        if matches!(e.downcast_ref(), Some(RelocateError::Unconfirmed(_))) {
            return Err(anyhow!(
                "{what} for sure: {e:#}; the copies stay in {home}: check with verify where the \
                 partition points"
            ));
        }
        // The partition still reads the run's directory: hide the copies again.
        for (shown, hidden) in shown {
            hdfs.rename(&shown, &hidden).await?;
        }
        return Err(anyhow!("{what}: {e:#}; the partition is as it was"));
    }
    hdfs.delete(&staging, false).await?;
    run.journal.rehomed_at = Some(chrono::Utc::now().to_rfc3339());
    journal::replace_if_unchanged(hdfs, &run.journal_path, &run.journal_read, &run.journal).await?;
    run.journal_read = run.journal.clone();
    p.current = home.clone();
    p.location = home.to_string();
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
        .filter(|f| run.adopted.contains(&f.location().to_string()))
    {
        run.journal.outputs.push(JournalOutput {
            path: file.location().to_string(),
            length: file.length,
            rows: file.rows(),
            inputs: vec![],
            stripe_checksums: vec![],
            column_digests: vec![],
            zones: vec![],
            modification_time: Some(file.modification_time),
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
