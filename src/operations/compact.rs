//! `compact`: merge one partition's small ORC files into a few large ones and swap the partition
//! to them with one metastore call. The compaction protocol (docs/compaction-protocol.md) reads
//! top to bottom in [`compact_partition`].
//!
//! Promises:
//! 1. Before the swap nothing readers can see changes: any error, refusal, crash or kill before
//!    it leaves the partition's files, location and metadata as they were (at most a hidden
//!    directory under `<home>/.hive-orc-compactor/` remains).
//! 2. The swap is one `alter_partition`: readers see the old files or the new ones.
//! 3. The new files hold exactly the old rows: stripes are copied byte for byte, and every
//!    output is re-read from HDFS and checked (rows per file and per stripe, offsets, checksums
//!    of every stripe's bytes) before it may be published; with `--verify tail`, only its tail
//!    is re-read, the bytes being proven in process and by HDFS's own checksums (see
//!    [`VerifyLevel`]).
//! 4. After the swap the partition's basic statistics are true (`numFiles`, `totalSize`,
//!    `numRows`); statistics we cannot vouch for are dropped, never guessed.
//! 5. Old files stay where they were, so the swap can be rolled back until cleanup.
//! 6. Running it twice is safe: the second run finds nothing to do.
//!
//! [`plan`] computes, without side effects, exactly what `--dry-run` prints; [`execute`] does
//! the I/O; both return a [`CompactReport`], which is what `--json` prints.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Instant;

use anyhow::anyhow;
use serde::Serialize;
use tokio_util::sync::CancellationToken;

use crate::eligibility::{self, Refusal, Rule};
use crate::exit::ExitCode;
use crate::hdfs::{Access, FsError, Hdfs, Location, NotKept};
use crate::journal::{self, Journal, JournalInput, JournalOutput};
use crate::lock::{self, LockError, LockOptions, PartitionLock};
use crate::metastore::Metastore;
use crate::operations::resolve;
use crate::orc::{
    self, copy_pieces, group_tails, plan_group, read_tail, verify_output, verify_tail, Discard,
    OrcError, OrcTail, OutputPlan, Piece, PlanOptions, ReadAhead,
};
use crate::partition_spec::PartitionSpec;
use crate::relocate::{set_location, RelocateError};
use crate::snapshot::{DataFile, Snapshot, SnapshotError};
use crate::table::TableInfo;

/// The hidden directory, inside the partition's home, that holds staging and published runs
/// and their journals. Hidden, so no engine listing the partition's directory reads it.
pub const WORK_DIR: &str = ".hive-orc-compactor";
/// Partition parameters recording where the partition was before our swap, and which run did it.
pub const PARAM_PREVIOUS_LOCATION: &str = "hive-orc-compactor.previous-location";
pub const PARAM_RUN_ID: &str = "hive-orc-compactor.run-id";

#[derive(Debug, Clone)]
pub struct CompactOptions {
    pub target_size: u64,
    /// Files at least this fraction of the target are left as they are.
    pub large_file_fraction: f64,
    pub dry_run: bool,
    /// Chunk size and read-ahead of every copy and re-read: bounds memory per output.
    pub read_ahead: ReadAhead,
    /// How much of each new file step 5 reads back from HDFS.
    pub verify: VerifyLevel,
    /// Cancelled on SIGINT/SIGTERM: a run checks it between the steps before the swap and
    /// stops there, cleaning up as after any failure; past the swap it finishes.
    pub cancel: CancellationToken,
    /// The metastore lock held from the snapshot to the journal (not taken by a dry run).
    pub lock: LockOptions,
    /// Held from the final re-check through the swap, so a batch swaps one partition at a time:
    /// concurrent `alter_partition` calls on one table deadlock in the metastore's database
    /// (seen on Derby: minutes of internal retries), and a swap is quick anyway.
    pub swap_gate: Arc<tokio::sync::Mutex<()>>,
}

impl Default for CompactOptions {
    fn default() -> Self {
        let plan = PlanOptions::default();
        CompactOptions {
            target_size: plan.target_size,
            large_file_fraction: plan.large_file_fraction,
            dry_run: false,
            read_ahead: ReadAhead::default(),
            verify: VerifyLevel::default(),
            cancel: CancellationToken::new(),
            lock: LockOptions::default(),
            swap_gate: Arc::default(),
        }
    }
}

/// How step 5 (verify) proves the new files before the swap. Both levels re-read every output's
/// tail from HDFS and check rows per output and per stripe, stripe count, offsets and lengths as
/// planned, that stripes and tail cover the file exactly, and the file length; both check the
/// total rows against the snapshot; and every copy checks in process, chunk by chunk, that the
/// bytes handed to the HDFS writer are the bytes read from the input.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum VerifyLevel {
    /// The design's bar: every stripe (every carried file) is re-read from HDFS and its XXH3
    /// compared with the input's. Reads the partition's bytes a second time.
    #[default]
    Full,
    /// Only tails are re-read; the stripe bytes rest on the in-process check and on HDFS's
    /// end-to-end CRC32C of the write pipeline (computed by the client, verified by the
    /// DataNode). Carried files: length from a status call, plus the in-process check.
    Tail,
}

impl VerifyLevel {
    pub fn as_str(self) -> &'static str {
        match self {
            VerifyLevel::Full => "full",
            VerifyLevel::Tail => "tail",
        }
    }
}

impl std::str::FromStr for VerifyLevel {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "full" => Ok(VerifyLevel::Full),
            "tail" => Ok(VerifyLevel::Tail),
            _ => Err(format!("'{s}' is not a verification level (full or tail)")),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Status {
    Compacted,
    NothingToDo,
    Refused,
    Busy,
    Failed,
    VerificationFailed,
    DryRun,
    /// Not attempted: a selection threshold or budget left it out (the reason says which).
    Skipped,
}

impl Status {
    pub fn exit_code(self) -> ExitCode {
        match self {
            Status::Compacted | Status::NothingToDo | Status::DryRun | Status::Skipped => {
                ExitCode::Ok
            }
            Status::Refused => ExitCode::Refused,
            Status::Busy => ExitCode::Busy,
            Status::Failed => ExitCode::Failed,
            Status::VerificationFailed => ExitCode::VerificationFailed,
        }
    }
}

/// One merge group of the plan, as the dry run shows it.
#[derive(Debug, Clone, Serialize)]
pub struct GroupReport {
    /// The ORC schema shared by the group's files.
    pub schema: String,
    pub compression: String,
    pub writer: String,
    pub files: usize,
    pub bytes: u64,
    pub outputs: Vec<OutputReport>,
}

#[derive(Debug, Clone, Serialize)]
pub struct OutputReport {
    pub name: String,
    pub inputs: Vec<String>,
    pub stripes: usize,
    pub rows: u64,
    /// Planned size before the run; the written size after it.
    pub bytes: u64,
}

/// A file carried into the new location unchanged (byte copy), and why it is not merged.
#[derive(Debug, Clone, Serialize)]
pub struct CarriedFile {
    pub name: String,
    pub bytes: u64,
    pub reason: String,
}

/// What `--json` prints for one partition.
#[derive(Debug, Clone, Serialize)]
pub struct CompactReport {
    pub table: String,
    pub partition: String,
    pub status: Status,
    pub reason: Option<String>,
    pub rule: Option<Rule>,
    pub files_before: usize,
    pub files_after: usize,
    pub bytes_before: u64,
    pub bytes_after: u64,
    pub rows: u64,
    pub groups: Vec<GroupReport>,
    /// Files copied unchanged: left alone by the plan, or unmergeable.
    pub carried: Vec<CarriedFile>,
    /// Zero-length files: they hold no rows and are not carried.
    pub dropped_empty: Vec<String>,
    pub old_location: Option<String>,
    pub new_location: Option<String>,
    pub run_id: Option<String>,
    /// The verification level the new files were (or, in a dry run, would be) checked with.
    pub verify: Option<VerifyLevel>,
    pub seconds: f64,
    /// Things that did not stop the run but an admin should know (e.g. owner not kept).
    pub warnings: Vec<String>,
}

impl CompactReport {
    /// The report of a partition a batch decided about without running it (skipped, or the
    /// table refused or unreadable as a whole).
    pub fn not_run(
        table: &str,
        partition: &str,
        status: Status,
        reason: String,
        rule: Option<Rule>,
    ) -> Self {
        CompactReport {
            status,
            reason: Some(reason),
            rule,
            ..CompactReport::new(table, partition)
        }
    }

    fn new(table: &str, partition: &str) -> Self {
        CompactReport {
            table: table.to_string(),
            partition: partition.to_string(),
            status: Status::Failed,
            reason: None,
            rule: None,
            files_before: 0,
            files_after: 0,
            bytes_before: 0,
            bytes_after: 0,
            rows: 0,
            groups: vec![],
            carried: vec![],
            dropped_empty: vec![],
            old_location: None,
            new_location: None,
            run_id: None,
            verify: None,
            seconds: 0.0,
            warnings: vec![],
        }
    }
}

/// Why a run stopped before compacting; each maps to one status and exit code.
#[derive(Debug, thiserror::Error)]
enum Stop {
    #[error(transparent)]
    Refused(Refusal),
    #[error("{0}")]
    Busy(String),
    #[error("{0}")]
    Verification(String),
    #[error("interrupted before the swap; the partition is as it was")]
    Interrupted,
    #[error(transparent)]
    Failed(#[from] anyhow::Error),
}

impl From<FsError> for Stop {
    fn from(e: FsError) -> Self {
        Stop::Failed(e.into())
    }
}

impl From<RelocateError> for Stop {
    fn from(e: RelocateError) -> Self {
        match e {
            RelocateError::Moved { .. } => Stop::Busy(e.to_string()),
            RelocateError::Unconfirmed(_) => Stop::Failed(anyhow!("{e}")),
            RelocateError::Failed(e) => Stop::Failed(e),
        }
    }
}

impl Stop {
    fn status(&self) -> Status {
        match self {
            Stop::Refused(_) => Status::Refused,
            Stop::Busy(_) => Status::Busy,
            Stop::Verification(_) => Status::VerificationFailed,
            Stop::Interrupted | Stop::Failed(_) => Status::Failed,
        }
    }
}

/// A safe point: nothing readers see has changed yet, so an interrupted run stops here and
/// takes the cleanup path every failure before the swap takes.
fn checkpoint(options: &CompactOptions) -> Result<(), Stop> {
    if options.cancel.is_cancelled() {
        return Err(Stop::Interrupted);
    }
    Ok(())
}

/// Test builds can fail or pause at each step (`FAILPOINTS=compact::before-swap=return`), to
/// prove that a failure or a kill there leaves the partition as it was.
macro_rules! failpoint {
    ($name:literal) => {
        fail::fail_point!($name, |_| Err(Stop::Failed(anyhow!(concat!(
            "injected failure at ",
            $name
        )))))
    };
}

/// Progress events, for the CLI's progress bar; the engine does not know how they are shown.
pub trait Progress: Send + Sync {
    fn planned(&self, _bytes_to_write: u64) {}
    fn written(&self, _bytes: u64) {}
}

/// No progress display.
pub struct Quiet;
impl Progress for Quiet {}

/// The resolved partition and everything the plan is made of.
pub struct PartitionPlan {
    table: TableInfo,
    spec: PartitionSpec,
    /// Where the partition's files are now.
    location: Location,
    /// The partition's own directory: staging and journals live under `<home>/.hive-orc-compactor`.
    home: Location,
    snapshot: Snapshot,
    /// Indices into `snapshot.files` for each output.
    outputs: Vec<OutputPlan>,
    /// Which group each output belongs to, and the group reports.
    output_group: Vec<usize>,
    carried: Vec<(usize, String)>,
    dropped_empty: Vec<usize>,
    /// Indices into `snapshot.files` of files that have a tail, in the order the planner saw.
    with_tail: Vec<usize>,
}

/// Resolves, checks and plans one partition without changing anything. Unless a dry run, it
/// takes the partition's metastore lock into `lock` before the snapshot; the caller releases it.
pub async fn plan(
    metastore: &Metastore,
    hdfs: &Hdfs,
    table: &TableInfo,
    spec: &str,
    options: &CompactOptions,
    lock: &mut Option<PartitionLock>,
    report: &mut CompactReport,
) -> Result<Option<PartitionPlan>, anyhow::Error> {
    match plan_inner(metastore, hdfs, table, spec, options, lock, report).await {
        Ok(p) => Ok(p),
        Err(stop) => {
            finish_stopped(report, stop);
            Ok(None)
        }
    }
}

fn finish_stopped(report: &mut CompactReport, stop: Stop) {
    report.status = stop.status();
    if let Stop::Refused(r) = &stop {
        report.rule = Some(r.rule);
    }
    report.reason = Some(match &stop {
        Stop::Failed(e) => e
            .chain()
            .map(|c| c.to_string())
            .collect::<Vec<_>>()
            .join(": "),
        other => other.to_string(),
    });
}

/// The home of a partition: its canonical `<table>/<k=v>/...` directory when the partition
/// lives there or in one of our run directories below it, else its current location.
fn home_of(table: &TableInfo, spec: &PartitionSpec, location: &Location) -> Location {
    let canonical = table
        .storage
        .location
        .as_deref()
        .and_then(|l| Location::parse(l).ok())
        .map(|t| t.child(&spec.name()));
    match canonical {
        Some(c) if *location == c || location.is_within(&c.child(WORK_DIR)) => c,
        _ => location.clone(),
    }
}

async fn plan_inner(
    metastore: &Metastore,
    hdfs: &Hdfs,
    table: &TableInfo,
    spec: &str,
    options: &CompactOptions,
    lock: &mut Option<PartitionLock>,
    report: &mut CompactReport,
) -> Result<Option<PartitionPlan>, Stop> {
    // Step 1: resolve and refuse.
    eligibility::check_table(table).map_err(Stop::Refused)?;
    let (spec, partition) = match resolve::partition(metastore, table, spec).await {
        Ok(found) => found,
        Err(resolve::ResolveError::Refused(r)) => return Err(Stop::Refused(r)),
        Err(resolve::ResolveError::Other(e)) => return Err(Stop::Failed(e)),
    };
    report.partition = spec.name();
    eligibility::check_partition(&partition.storage).map_err(Stop::Refused)?;
    let location = partition.storage.location.as_deref().ok_or_else(|| {
        Stop::Refused(Refusal::new(Rule::NotHdfs, "the partition has no location"))
    })?;
    report.old_location = Some(location.to_string());
    let location = Location::parse(location)
        .map_err(|e| Stop::Refused(Refusal::new(Rule::NotHdfs, e.to_string())))?;
    let home = home_of(table, &spec, &location);

    // Lock before the snapshot, so what we list is what no lock-taking writer changes until
    // the swap.
    if !options.dry_run {
        let target = lock::Target {
            db: &table.db,
            table: &table.name,
            partition: &spec.name(),
        };
        *lock = lock::acquire(
            metastore,
            &target,
            &options.lock,
            &options.cancel,
            &mut report.warnings,
        )
        .await
        .map_err(|e| match e {
            LockError::Busy { .. } => Stop::Busy(e.to_string()),
            LockError::Interrupted => Stop::Interrupted,
            LockError::Unsupported(_) | LockError::Failed(_) => Stop::Failed(e.into()),
        })?;
    }

    // Steps 2 and 3: snapshot the files and read every tail.
    let snapshot = match Snapshot::take(hdfs, &location).await {
        Ok(s) => s,
        Err(e) => {
            return Err(match e.refusal() {
                Some(r) => Stop::Refused(r),
                None => match e {
                    SnapshotError::Missing(_) => Stop::Failed(anyhow!(
                        "{e}: the metastore points at a directory that is gone; fix the \
                         partition's location (ALTER TABLE ... PARTITION ... SET LOCATION)"
                    )),
                    other => Stop::Failed(other.into()),
                },
            })
        }
    };
    report.files_before = snapshot.files.len();
    report.bytes_before = snapshot.bytes();
    report.rows = snapshot.rows();

    // Group by merge key, plan outputs per group.
    let mut with_tail = Vec::new();
    let mut dropped_empty = Vec::new();
    for (i, f) in snapshot.files.iter().enumerate() {
        if f.tail.is_some() {
            with_tail.push(i);
        } else {
            dropped_empty.push(i);
        }
    }
    let tails: Vec<&OrcTail> = with_tail
        .iter()
        .filter_map(|&i| snapshot.files[i].tail.as_ref())
        .collect();
    let grouping = group_tails(&tails);
    let plan_options = PlanOptions {
        target_size: options.target_size,
        large_file_fraction: options.large_file_fraction,
    };
    let mut outputs = Vec::new();
    let mut output_group = Vec::new();
    let mut carried: Vec<(usize, String)> = grouping
        .unmergeable
        .iter()
        .map(|u| (with_tail[u.file], format!("cannot be merged: {}", u.reason)))
        .collect();
    let mut groups = Vec::new();
    for group in &grouping.groups {
        let group_plan = plan_group(&group.files, &tails, &plan_options);
        for left in &group_plan.left_alone {
            carried.push((with_tail[left.file], left.reason.clone()));
        }
        let first = &snapshot.files[with_tail[group.files[0]]];
        let tail = first.tail.as_ref().expect("grouped files have tails");
        let mut g = GroupReport {
            schema: group.key.schema.clone(),
            compression: format!("{:?}", tail.compression).to_ascii_uppercase(),
            writer: writer_name(tail),
            files: group.files.len(),
            bytes: group
                .files
                .iter()
                .map(|&f| snapshot.files[with_tail[f]].length)
                .sum(),
            outputs: vec![],
        };
        for output in group_plan.outputs {
            g.outputs.push(OutputReport {
                name: String::new(),
                inputs: output
                    .inputs
                    .iter()
                    .map(|&f| snapshot.files[with_tail[f]].name.clone())
                    .collect(),
                stripes: output.stripes.len(),
                rows: output.rows,
                bytes: output.content_length,
            });
            output_group.push(groups.len());
            outputs.push(output);
        }
        groups.push(g);
    }
    carried.sort_by_key(|(i, _)| *i);
    report.carried = carried
        .iter()
        .map(|(i, reason)| CarriedFile {
            name: snapshot.files[*i].name.clone(),
            bytes: snapshot.files[*i].length,
            reason: reason.clone(),
        })
        .collect();
    report.dropped_empty = dropped_empty
        .iter()
        .map(|&i| snapshot.files[i].name.clone())
        .collect();
    report.groups = groups;
    if outputs.is_empty() {
        report.status = Status::NothingToDo;
        report.reason = Some(if snapshot.files.is_empty() {
            "the partition has no data files".to_string()
        } else {
            "no two files can be merged: every file is already large, alone in its merge \
             group, or unmergeable"
                .to_string()
        });
        report.files_after = report.files_before;
        report.bytes_after = report.bytes_before;
        return Ok(None);
    }
    report.files_after = outputs.len() + carried.len();
    Ok(Some(PartitionPlan {
        table: table.clone(),
        spec,
        location,
        home,
        snapshot,
        outputs,
        output_group,
        carried,
        dropped_empty,
        with_tail,
    }))
}

fn writer_name(tail: &OrcTail) -> String {
    let who = match tail.writer {
        0 => "ORC Java",
        1 => "ORC C++",
        2 => "Presto",
        3 => "Scritchley Go",
        4 => "Trino",
        5 => "CUDF",
        _ => "other",
    };
    match &tail.software_version {
        Some(v) => format!("{who} {v}"),
        None => who.to_string(),
    }
}

/// A new run id: sortable by time, unique across hosts.
pub fn new_run_id() -> String {
    let now = chrono::Utc::now().format("%Y%m%dT%H%M%SZ");
    let rand = uuid::Uuid::new_v4().simple().to_string();
    format!("{now}-{}", &rand[..8])
}

/// Compacts one partition: plan, then (unless a dry run) execute. Never returns an error: every
/// outcome is a report, whose status gives the exit code.
pub async fn compact_partition(
    metastore: &Metastore,
    hdfs: &Hdfs,
    table: &TableInfo,
    spec: &str,
    options: &CompactOptions,
    progress: &dyn Progress,
) -> CompactReport {
    let started = Instant::now();
    let mut report = CompactReport::new(&table.qualified_name(), spec);
    let mut lock = None;
    match plan(
        metastore,
        hdfs,
        table,
        spec,
        options,
        &mut lock,
        &mut report,
    )
    .await
    {
        Ok(Some(plan)) if options.dry_run => {
            report.status = Status::DryRun;
            report.run_id = None;
            report.verify = Some(options.verify);
            name_outputs(&mut report, &plan, "<run-id>");
            report.bytes_after = plan.outputs.iter().map(|o| o.content_length).sum::<u64>()
                + plan
                    .carried
                    .iter()
                    .map(|(i, _)| plan.snapshot.files[*i].length)
                    .sum::<u64>();
        }
        Ok(Some(plan)) => {
            tracing::debug!(
                files = plan.snapshot.files.len(),
                seconds = started.elapsed().as_secs_f64(),
                "planned"
            );
            execute(
                metastore,
                hdfs,
                plan,
                options,
                lock.as_ref(),
                progress,
                &mut report,
            )
            .await
        }
        Ok(None) => {}
        Err(e) => finish_stopped(&mut report, Stop::Failed(e)),
    }
    // Every path ends here, so the lock is released whatever happened.
    if let Some(lock) = lock {
        if let Err(e) = lock.release().await {
            report.warnings.push(format!(
                "could not release the metastore lock ({e}); it expires when the metastore \
                 times it out (hive.txn.timeout)"
            ));
        }
    }
    report.seconds = started.elapsed().as_secs_f64();
    report
}

fn output_name(run_id: &str, n: usize) -> String {
    format!("part-{run_id}-{n:05}.orc")
}

fn name_outputs(report: &mut CompactReport, plan: &PartitionPlan, run_id: &str) {
    let mut n = 0;
    for (g, group) in report.groups.iter_mut().enumerate() {
        for out in group.outputs.iter_mut() {
            debug_assert_eq!(plan.output_group[n], g);
            out.name = output_name(run_id, n);
            n += 1;
        }
    }
}

/// Steps 4 to 9, then cleanup of the run directory if anything failed before the swap.
pub async fn execute(
    metastore: &Metastore,
    hdfs: &Hdfs,
    plan: PartitionPlan,
    options: &CompactOptions,
    lock: Option<&PartitionLock>,
    progress: &dyn Progress,
    report: &mut CompactReport,
) {
    let run_id = new_run_id();
    report.run_id = Some(run_id.clone());
    report.verify = Some(options.verify);
    name_outputs(report, &plan, &run_id);
    let work = plan.home.child(WORK_DIR);
    let staging = work.child(&format!("{run_id}.staging"));
    let published = work.child(&run_id);
    let mut swapped = false;
    let result = run_protocol(
        metastore,
        hdfs,
        &plan,
        options,
        lock,
        progress,
        report,
        &run_id,
        &staging,
        &published,
        &mut swapped,
    )
    .await;
    if let Err(stop) = result {
        if !swapped {
            // Nothing readers see points at these directories: remove them. If this fails too,
            // only a hidden directory remains, which cleanup removes later.
            for dir in [&staging, &published] {
                if let Err(e) = hdfs.delete(dir, true).await {
                    report
                        .warnings
                        .push(format!("could not remove {dir}: {e}; cleanup will"));
                }
            }
            report.new_location = None;
        }
        finish_stopped(report, stop);
    }
}

#[allow(clippy::too_many_arguments)]
async fn run_protocol(
    metastore: &Metastore,
    hdfs: &Hdfs,
    plan: &PartitionPlan,
    options: &CompactOptions,
    lock: Option<&PartitionLock>,
    progress: &dyn Progress,
    report: &mut CompactReport,
    run_id: &str,
    staging: &Location,
    published: &Location,
    swapped: &mut bool,
) -> Result<(), Stop> {
    let files = &plan.snapshot.files;
    let vanished = |l: &Location| Stop::Busy(format!("{l} vanished"));
    let dir_access = hdfs
        .access(&plan.location)
        .await?
        .ok_or_else(|| vanished(&plan.location))?;
    // New files get the access of the old ones (the first input's: Hive writes a partition's
    // files with one umask and the directory's default ACL); directories that of the old
    // directory.
    let file_access = match files.first() {
        Some(f) => hdfs
            .access(&f.location)
            .await?
            .ok_or_else(|| vanished(&f.location))?,
        None => dir_access.clone(),
    };
    let file_permission = file_access.permission;
    failpoint!("compact::before-stage");
    checkpoint(options)?;

    // Step 4: stage.
    let staging_started = Instant::now();
    hdfs.mkdirs(staging, dir_access.permission).await?;
    let to_write: u64 = plan.outputs.iter().map(|o| o.content_length).sum::<u64>()
        + plan
            .carried
            .iter()
            .map(|(i, _)| files[*i].length)
            .sum::<u64>();
    progress.planned(to_write);
    let mut written = Vec::new();
    for (n, output) in plan.outputs.iter().enumerate() {
        let target = staging.child(&output_name(run_id, n));
        let merged = write_output(hdfs, plan, output, &target, file_permission, options).await?;
        progress.written(output.content_length);
        written.push((target, merged));
        checkpoint(options)?;
    }
    let mut copies = Vec::new();
    for (i, _) in &plan.carried {
        let source = &files[*i];
        let target = staging.child(&source.name);
        let hash = copy_file(hdfs, source, &target, file_permission, options).await?;
        progress.written(source.length);
        copies.push((target, source, hash));
        checkpoint(options)?;
    }
    failpoint!("compact::after-stage");
    tracing::debug!(
        outputs = written.len(),
        carried = copies.len(),
        bytes = to_write,
        seconds = staging_started.elapsed().as_secs_f64(),
        "staged"
    );

    // Step 5: verify, reading back from HDFS (every byte, or with --verify tail the tails).
    let verify_started = Instant::now();
    let mut rows = 0;
    for ((target, merged), output) in written.iter().zip(&plan.outputs) {
        let reader = Arc::new(hdfs.open(target).await?);
        let tail = read_tail(&reader)
            .await
            .map_err(|e| Stop::Verification(format!("{target}: re-reading its tail: {e}")))?
            .ok_or_else(|| Stop::Verification(format!("{target} is empty after writing")))?;
        match options.verify {
            VerifyLevel::Full => {
                verify_output(output, merged, &tail, &reader, &options.read_ahead).await
            }
            VerifyLevel::Tail => verify_tail(output, merged, &tail, &reader).await,
        }
        .map_err(|e| Stop::Verification(format!("{target}: {e}")))?;
        rows += tail.rows;
    }
    for (target, source, hash) in &copies {
        let found = match options.verify {
            VerifyLevel::Full => {
                hash_file(hdfs, target, source.length, &options.read_ahead).await?
            }
            VerifyLevel::Tail => (hdfs.status(target).await?.map_or(0, |s| s.length), *hash),
        };
        if found != (source.length, *hash) {
            return Err(Stop::Verification(format!(
                "{target}: the copy of {} reads back as {} bytes with checksum {:016x}, \
                 expected {} bytes with {hash:016x}",
                source.location, found.0, found.1, source.length
            )));
        }
        rows += source.rows();
    }
    if rows != plan.snapshot.rows() {
        return Err(Stop::Verification(format!(
            "the new files hold {rows} rows, the old ones {}",
            plan.snapshot.rows()
        )));
    }
    tracing::debug!(
        level = options.verify.as_str(),
        seconds = verify_started.elapsed().as_secs_f64(),
        "verified"
    );
    failpoint!("compact::after-verify");
    checkpoint(options)?;

    // Step 6: publish (same directory, so the rename is atomic) and keep ownership.
    hdfs.rename(staging, published)
        .await
        .map_err(|e| Stop::Failed(anyhow!("publishing {staging}: {e}")))?;
    let new_files: Vec<Location> = written
        .iter()
        .map(|(t, _)| t.clone())
        .chain(copies.iter().map(|(t, _, _)| t.clone()))
        .map(|t| published.child(t.path.rsplit('/').next().unwrap_or("")))
        .collect();
    // Our work directory too: whoever owns the table must be able to use it later.
    let work = plan.home.child(WORK_DIR);
    let mut not_kept = keep_access(
        hdfs,
        &std::iter::once((&work, &dir_access))
            .chain(std::iter::once((published, &dir_access)))
            .chain(new_files.iter().map(|f| (f, &file_access)))
            .collect::<Vec<_>>(),
    )
    .await;
    failpoint!("compact::after-publish");
    checkpoint(options)?;

    // One swap at a time per process, from this re-check on (see `CompactOptions::swap_gate`).
    let _swap_turn = options.swap_gate.lock().await;

    // Step 7: re-check the snapshot: a writer that added or changed files means busy.
    let changes = changes_since_snapshot(hdfs, plan).await?;
    if !changes.is_empty() {
        return Err(Stop::Busy(format!(
            "the partition changed during the run ({}); a writer is active, retry later",
            changes.join(", ")
        )));
    }
    failpoint!("compact::before-swap");
    checkpoint(options)?;
    // A lock the metastore timed out no longer keeps writers away: do not swap without it.
    if let Some(why) = lock.and_then(PartitionLock::lost) {
        return Err(Stop::Busy(format!(
            "the metastore lock was lost during the run ({why}); retry later"
        )));
    }

    // Step 8: swap, with the statistics we can vouch for.
    let bytes_after: u64 = written.iter().map(|(_, m)| m.length).sum::<u64>()
        + copies.iter().map(|(_, s, _)| s.length).sum::<u64>();
    let new_location = published.to_string();
    let swap = set_location(
        metastore,
        &plan.table,
        &plan.spec,
        &plan.location,
        &new_location,
        |p| {
            new_parameters(
                p,
                &plan.location.to_string(),
                new_files.len(),
                bytes_after,
                rows,
                run_id,
            )
        },
    )
    .await;
    let (before, after) = match swap {
        Ok(params) => params,
        Err(RelocateError::Unconfirmed(why)) => {
            // The metastore may still point the partition here: the new files must stay.
            *swapped = true;
            return Err(Stop::Failed(anyhow!(
                "{why}; the new files stay in {new_location} in case the metastore applies the \
                 change later: check with `verify`; `cleanup` settles the run either way"
            )));
        }
        Err(e) => return Err(e.into()),
    };
    *swapped = true;

    // A writer that slipped in between the re-check and the swap wrote where queries no longer
    // look: swap back at once (our directory is then unused and removed) and report busy. Later
    // writers to the old location are cleanup's "late files".
    let changes = changes_since_snapshot(hdfs, plan).await?;
    if !changes.is_empty() {
        let busy = format!(
            "the partition changed during the swap ({}); swapped back, a writer is active, retry later",
            changes.join(", ")
        );
        let published_location = Location::parse(&new_location).map_err(|e| anyhow!("{e}"))?;
        let old = plan.location.to_string();
        return match set_location(
            metastore,
            &plan.table,
            &plan.spec,
            &published_location,
            &old,
            |_| before.clone(),
        )
        .await
        {
            Ok(_) => {
                *swapped = false;
                Err(Stop::Busy(busy))
            }
            Err(e) => Err(Stop::Failed(anyhow!(
                "{busy}, but swapping back failed: {e}; the partition points at {new_location} \
                 without the new files in {old}: point it back at {old} \
                 (ALTER TABLE ... PARTITION ... SET LOCATION) and restore its statistics"
            ))),
        };
    }
    report.status = Status::Compacted;
    report.new_location = Some(new_location.clone());
    report.files_after = new_files.len();
    report.bytes_after = bytes_after;
    report.rows = rows;
    for (out, (_, merged)) in report
        .groups
        .iter_mut()
        .flat_map(|g| g.outputs.iter_mut())
        .zip(&written)
    {
        out.bytes = merged.length;
    }
    tracing::debug!("swapped");
    failpoint!("compact::after-swap");

    // Step 9: the journal rollback and cleanup work from.
    let journal = Journal {
        run_id: run_id.to_string(),
        table: plan.table.qualified_name(),
        partition: plan.spec.name(),
        partition_values: plan.spec.values.clone(),
        old_location: plan.location.to_string(),
        new_location,
        inputs: files
            .iter()
            .map(|f| JournalInput {
                path: f.location.to_string(),
                length: f.length,
                modification_time: f.modification_time,
                rows: f.rows(),
            })
            .collect(),
        outputs: written
            .iter()
            .zip(&plan.outputs)
            .map(|((t, m), o)| JournalOutput {
                path: published
                    .child(t.path.rsplit('/').next().unwrap_or(""))
                    .to_string(),
                length: m.length,
                rows: o.rows,
                inputs: o
                    .inputs
                    .iter()
                    .map(|&f| files[plan.with_tail[f]].name.clone())
                    .collect(),
                stripe_checksums: m.stripe_checksums.iter().map(|c| c.xxh3).collect(),
            })
            .chain(copies.iter().map(|(t, s, h)| {
                JournalOutput {
                    path: published
                        .child(t.path.rsplit('/').next().unwrap_or(""))
                        .to_string(),
                    length: s.length,
                    rows: s.rows(),
                    inputs: vec![s.name.clone()],
                    stripe_checksums: vec![*h],
                }
            }))
            .collect(),
        dropped_empty: plan
            .dropped_empty
            .iter()
            .map(|&i| files[i].location.to_string())
            .collect(),
        parameters_before: before,
        parameters_after: after,
        finished_at: chrono::Utc::now().to_rfc3339(),
        rebuilt: None,
        rolled_back_at: None,
        cleaned_at: None,
    };
    let journal_path = journal::path(&plan.home, run_id);
    if let Err(e) = journal::write(hdfs, &journal_path, &journal).await {
        // The swap is done and correct; only the record is missing. Say so loudly.
        return Err(Stop::Failed(anyhow!(
            "the partition was compacted and now points at {}, but writing the journal {} \
             failed: {e:#}; rollback needs the previous location, recorded in the partition \
             parameter {PARAM_PREVIOUS_LOCATION}",
            journal.new_location,
            journal_path
        )));
    }
    not_kept.extend(hdfs.copy_access(&journal_path, &file_access).await);
    report.warnings.extend(not_kept_warning(&not_kept));
    Ok(())
}

/// What changed in the partition's directory since the snapshot (empty: nothing).
async fn changes_since_snapshot(hdfs: &Hdfs, plan: &PartitionPlan) -> Result<Vec<String>, Stop> {
    match hdfs.list(&plan.location).await? {
        Some(now) => Ok(plan.snapshot.changes(&now)),
        None => Ok(vec![format!("{} vanished", plan.location)]),
    }
}

/// Why a copy or a re-read stopped: a file that changed under the run means a writer is active
/// (busy); bytes that changed between reader and writer fail verification; anything else fails.
fn copy_stop(what: &str, e: OrcError) -> Stop {
    match e {
        OrcError::Changed(_) => Stop::Busy(format!("{what}: {e}; a writer is active, retry later")),
        OrcError::Verify(_) => Stop::Verification(format!("{what}: {e}")),
        other => Stop::Failed(anyhow!("{what}: {other}")),
    }
}

async fn write_output(
    hdfs: &Hdfs,
    plan: &PartitionPlan,
    output: &OutputPlan,
    target: &Location,
    permission: u16,
    options: &CompactOptions,
) -> Result<orc::MergedOutput, Stop> {
    let files = &plan.snapshot.files;
    // The planner indexes inputs by their position in its tail list; give the writer its
    // inputs' tails in output order and the same indexing.
    let inputs: Vec<&DataFile> = output
        .inputs
        .iter()
        .map(|&f| &files[plan.with_tail[f]])
        .collect();
    let tails: Vec<&OrcTail> = inputs
        .iter()
        .map(|f| f.tail.as_ref().expect("planned inputs have tails"))
        .collect();
    let local_plan = OutputPlan {
        inputs: (0..output.inputs.len()).collect(),
        ..output.clone()
    };
    let mut writer = hdfs.create(target, permission).await?;
    let merged = orc::write_merged(
        &local_plan,
        &tails,
        |i| inputs[i].open(hdfs),
        &mut writer,
        &options.read_ahead,
    )
    .await
    .map_err(|e| copy_stop(&format!("writing {target}"), e))?;
    writer
        .close()
        .await
        .map_err(|e| anyhow!("closing {target}: {e}"))?;
    Ok(merged)
}

/// Copies a file byte for byte, with the same read-ahead and in-process check as the stripe
/// copy, returning the XXH3 of the bytes handed to the writer.
async fn copy_file(
    hdfs: &Hdfs,
    source: &DataFile,
    target: &Location,
    permission: u16,
    options: &CompactOptions,
) -> Result<u64, Stop> {
    let mut writer = hdfs.create(target, permission).await?;
    let hash = whole_file(
        |_| source.open(hdfs),
        source.length,
        &mut writer,
        &options.read_ahead,
    )
    .await
    .map_err(|e| copy_stop(&format!("copying {} to {target}", source.location), e))?;
    writer
        .close()
        .await
        .map_err(|e| anyhow!("closing {target}: {e}"))?;
    Ok(hash)
}

/// Length and XXH3 of a file as HDFS returns it now (`expected` is the length it should have).
async fn hash_file(
    hdfs: &Hdfs,
    file: &Location,
    expected: u64,
    read_ahead: &ReadAhead,
) -> Result<(u64, u64), Stop> {
    let reader = Arc::new(hdfs.open(file).await?);
    let len = reader.file_length() as u64;
    if len != expected {
        // Not worth reading: the caller reports the mismatch.
        return Ok((len, 0));
    }
    let hash = whole_file(
        |_| std::future::ready(Ok(Arc::clone(&reader))),
        len,
        &mut Discard,
        read_ahead,
    )
    .await
    .map_err(|e| copy_stop(&format!("re-reading {file}"), e))?;
    Ok((len, hash))
}

/// Reads all `length` bytes of one file, opened by `open`, into `sink` through
/// [`copy_pieces`]; returns their XXH3.
async fn whole_file<R, O, F, S>(
    open: O,
    length: u64,
    sink: &mut S,
    read_ahead: &ReadAhead,
) -> Result<u64, OrcError>
where
    R: orc::RangeRead + Send + 'static,
    O: Fn(usize) -> F,
    F: std::future::Future<Output = Result<R, OrcError>> + Send + 'static,
    S: orc::Sink,
{
    let piece = Piece {
        source: 0,
        range: 0..length,
    };
    let sums = copy_pieces(&[piece], &[length], open, sink, read_ahead).await?;
    Ok(sums[0])
}

/// Gives each new path the owner, group, permission bits and ACL (default entries included) of
/// the original it stands for, as far as the user we act as may (changing the owner needs HDFS
/// superuser rights). Returns what could not be kept, for [`not_kept_warning`].
async fn keep_access(hdfs: &Hdfs, targets: &[(&Location, &Access)]) -> Vec<NotKept> {
    let mut failed = Vec::new();
    for (target, want) in targets {
        failed.extend(hdfs.copy_access(target, want).await);
    }
    failed
}

/// One warning for everything [`keep_access`] could not keep: the data is correct either way,
/// only who may read or change it can differ.
fn not_kept_warning(failed: &[NotKept]) -> Option<String> {
    let first = failed.first()?;
    let mut what: Vec<&str> = failed.iter().map(|f| f.what).collect();
    what.sort_unstable();
    what.dedup();
    let mut paths: Vec<&Location> = failed.iter().map(|f| &f.target).collect();
    paths.dedup();
    Some(format!(
        "could not keep the original {} on {} new path(s) (run as the table's owner, or as an \
         HDFS superuser to keep owners): {}",
        what.join(", "),
        paths.len(),
        first.error
    ))
}

/// Basic statistics this swap makes true; the rest of the parameters are kept as they were,
/// except numbers we can no longer vouch for, which are dropped.
fn new_parameters(
    before: &BTreeMap<String, String>,
    old_location: &str,
    files: usize,
    bytes: u64,
    rows: u64,
    run_id: &str,
) -> BTreeMap<String, String> {
    let mut p = before.clone();
    let old_files = before.get("numFiles").cloned();
    p.insert("numFiles".into(), files.to_string());
    p.insert("totalSize".into(), bytes.to_string());
    p.insert("numRows".into(), rows.to_string());
    // Erasure coding follows the directory: new files are coded exactly when the old ones were
    // all coded or none was. Anything else we cannot tell, so drop it.
    match before.get("numFilesErasureCoded").map(String::as_str) {
        Some("0") | None => {}
        Some(n) if Some(n) == old_files.as_deref() => {
            p.insert("numFilesErasureCoded".into(), files.to_string());
        }
        Some(_) => {
            p.remove("numFilesErasureCoded");
        }
    }
    p.insert(PARAM_PREVIOUS_LOCATION.into(), old_location.to_string());
    p.insert(PARAM_RUN_ID.into(), run_id.to_string());
    p
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(kv: &[(&str, &str)]) -> BTreeMap<String, String> {
        kv.iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn parameters_after_swap() {
        let before = params(&[
            ("numFiles", "300"),
            ("totalSize", "1836751"),
            ("numRows", "104850"),
            ("rawDataSize", "25604602"),
            ("numFilesErasureCoded", "0"),
            ("COLUMN_STATS_ACCURATE", "{\"BASIC_STATS\":\"true\"}"),
            ("transient_lastDdlTime", "1717171717"),
        ]);
        let after = new_parameters(&before, "hdfs://nn/t/dt=1", 2, 1_700_000, 104850, "r1");
        assert_eq!(after["numFiles"], "2");
        assert_eq!(after["totalSize"], "1700000");
        assert_eq!(after["numRows"], "104850");
        assert_eq!(after["rawDataSize"], "25604602", "same rows, same raw size");
        assert_eq!(after["numFilesErasureCoded"], "0");
        assert_eq!(after[PARAM_PREVIOUS_LOCATION], "hdfs://nn/t/dt=1");
        assert_eq!(after[PARAM_RUN_ID], "r1");
        assert_eq!(
            after["COLUMN_STATS_ACCURATE"],
            before["COLUMN_STATS_ACCURATE"]
        );
    }

    #[test]
    fn erasure_coded_counts_follow_or_drop() {
        let all = params(&[("numFiles", "10"), ("numFilesErasureCoded", "10")]);
        assert_eq!(
            new_parameters(&all, "x", 2, 1, 1, "r")["numFilesErasureCoded"],
            "2"
        );
        let some = params(&[("numFiles", "10"), ("numFilesErasureCoded", "3")]);
        assert!(!new_parameters(&some, "x", 2, 1, 1, "r").contains_key("numFilesErasureCoded"));
    }

    #[test]
    fn run_ids_sort_by_time_and_differ() {
        let a = new_run_id();
        let b = new_run_id();
        assert_ne!(a, b);
        assert_eq!(a.len(), "20261130T083000Z-".len() + 8);
        assert!(!a.starts_with('.') && !a.starts_with('_'));
    }

    #[test]
    fn output_names_are_data_names() {
        let n = output_name("20261130T083000Z-abcd1234", 3);
        assert_eq!(n, "part-20261130T083000Z-abcd1234-00003.orc");
        assert!(!crate::hdfs::is_hidden(&n));
    }
}
