//! `compact`: merge one partition's small ORC files into a few large ones and swap the partition
//! to them with one metastore call. The compaction protocol (docs/design/compaction-protocol.md) reads
//! top to bottom: steps 1 to 3 in [`plan::plan`], steps 4 to 9 in [`run::Run::steps`], one
//! method per step.
//!
//! Promises:
//! 1. Before the swap nothing readers can see changes: any error, refusal, crash or kill before
//!    it leaves the partition's files, location and metadata as they were (at most a hidden
//!    directory under `<home>/.hive-orc-compactor/` remains).
//! 2. The swap is one `alter_partition`: readers see the old files or the new ones.
//! 3. The new files hold exactly the old rows, and every output is re-read from HDFS and checked
//!    before it may be published. Copied stripes: rows per file and per stripe, offsets,
//!    checksums of every stripe's bytes (with `--verify tail`, only the tail is re-read, the
//!    bytes being proven in process and by HDFS's own checksums, see [`VerifyLevel`]).
//!    Re-encoded rows: the output is decoded again and every column's order-sensitive digest
//!    must equal the one taken while decoding its inputs, rows per file too (whatever
//!    `--verify` says: new bytes have no checksum to compare).
//! 4. After the swap the partition's basic statistics are true (`numFiles`, `totalSize`,
//!    `numRows`); statistics we cannot vouch for are dropped, never guessed.
//! 5. Old files stay where they were, so the swap can be rolled back until cleanup.
//! 6. Running it twice is safe: the second run finds nothing to do.
//!
//! The parts: [`options`] (what a run is told), [`plan`] (the plan as data, computed without
//! side effects, including per output whether its stripes are copied or its rows re-encoded,
//! and why), [`run`] (the I/O), [`stage`] (step 4's files, several outputs at once), [`write`] (how output files are made: the seam where the
//! stripe copy and the re-encode sit side by side), [`report`] (what `--json` prints) and
//! [`record`] (the report made from the plan, which is what `--dry-run` prints, and from each
//! step's result), [`progress`] (what a run tells the progress bar), and the small rules the
//! run applies ([`access`], [`parameters`]).

use crate::hdfs::Hdfs;
use crate::metastore::Metastore;
use crate::table::{PartitionInfo, TableInfo};

/// Test builds can fail or pause at each step (`FAILPOINTS=compact::before-swap=return`), to
/// prove that a failure or a kill there leaves the partition as it was.
macro_rules! failpoint {
    ($name:literal) => {
        fail::fail_point!($name, |_| Err($crate::operations::outcome::Stop::Failed(
            anyhow::anyhow!(concat!("injected failure at ", $name))
        )))
    };
}

mod access;
pub mod batch;
pub mod options;
mod parameters;
mod plan;
mod progress;
mod record;
pub mod report;
mod run;
mod stage;
pub mod write;

pub use batch::{compact_batch, plan_partition, Planned, Planning};
pub use options::{
    CompactOptions, Layout, Stripes, VerifyLevel, DEFAULT_MIN_STRIPE_SIZE, DEFAULT_SORT_MEMORY,
    DEFAULT_STRIPE_SIZE, WRITE_IN_PROGRESS_AGE,
};
pub use progress::{Progress, Quiet};
pub use report::{
    CarriedFile, CarryReason, CompactReport, GroupReport, LayoutReport, OutputReport,
};
pub use write::{OutputWriter, Way, NOT_RE_ENCODABLE};

/// Compacts one partition: plan, then (unless a dry run, or nothing to do) a batch of one.
/// `spec` names the partition; `known` is the partition as the caller already read it from the
/// metastore (else it is read here). Never returns an error: every outcome is a report, whose
/// status gives the exit code.
pub async fn compact_partition(
    metastore: &Metastore,
    hdfs: &Hdfs,
    table: &TableInfo,
    spec: &str,
    known: Option<&PartitionInfo>,
    options: &CompactOptions,
    progress: &dyn Progress,
) -> CompactReport {
    match plan_partition(metastore, hdfs, table, spec, known, options).await {
        Planning::Done(report) => *report,
        Planning::Work(planned) => {
            let lent = |_: &str| -> Box<dyn Progress + '_> { Box::new(Lent(progress)) };
            let mut reports =
                compact_batch(metastore, hdfs, vec![*planned], options, 1, &lent).await;
            reports
                .pop()
                .unwrap_or_else(|| CompactReport::new(&table.qualified_name(), spec))
        }
    }
}

/// A caller's progress display, lent to a batch of one.
struct Lent<'a>(&'a dyn Progress);

impl Progress for Lent<'_> {
    fn planned(&self, bytes_to_write: u64) {
        self.0.planned(bytes_to_write)
    }
    fn written(&self, bytes: u64) {
        self.0.written(bytes)
    }
}
