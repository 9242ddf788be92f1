//! What `cleanup` reports: per partition, per journal's run, and the binary cache's sweep;
//! what `--json` prints, with the journal and locations the steps act on kept out of it.

use serde::Serialize;

use crate::exit::ExitCode;
use crate::hdfs::Location;
use crate::journal::Journal;
use crate::operations::outcome::{Outcome, Status, Stop};
use crate::partition_spec::PartitionSpec;
use crate::table::TableInfo;

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
    pub(super) journal_path: Location,
    /// The journal as read, to update it only if nobody changed it meanwhile.
    #[serde(skip)]
    pub(super) journal_read: Journal,
    #[serde(skip)]
    pub(super) journal: Journal,
    #[serde(skip)]
    pub(super) old_location: Option<Location>,
    /// The run's directory, removed (non-recursively) once its outputs are.
    #[serde(skip)]
    pub(super) run_dir: Option<Location>,
    /// The partition reads the run's directory.
    #[serde(skip)]
    pub(super) partition_reads_it: bool,
}

impl RunCleanup {
    pub(super) fn new(journal_path: Location, journal: Journal, action: RunAction) -> Self {
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
    pub(super) table_info: TableInfo,
    #[serde(skip)]
    pub(super) spec: PartitionSpec,
    #[serde(skip)]
    pub(super) current: Location,
    #[serde(skip)]
    pub(super) rebuilt: Vec<(Location, Journal)>,
}

impl PartitionCleanup {
    pub(super) fn new(table_info: TableInfo, spec: PartitionSpec, current: Location) -> Self {
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

    pub(super) fn is_empty(&self) -> bool {
        self.journals_rebuilt.is_empty()
            && self.runs.is_empty()
            && self.dead_runs_removed.is_empty()
            && self.outcome.status != Status::Failed
            && self.rehomed_to.is_none()
    }

    pub(super) fn failed(&mut self, e: anyhow::Error) {
        self.outcome.stop_and_go_on(Stop::Failed(e));
    }

    /// The status once planned (or done), unless something failed.
    pub(super) fn settle(&mut self, dry_run: bool) {
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

    pub(super) fn count_errors(&mut self) {
        self.errors = self
            .partitions
            .iter()
            .filter(|p| p.outcome.status == Status::Failed)
            .count()
            + usize::from(self.binaries.error.is_some());
    }
}
