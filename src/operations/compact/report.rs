//! What `compact` reports for one partition: the plan as the dry run shows it, and the outcome.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::options::{Stripes, VerifyLevel};
use super::write::OutputWriter;
use crate::eligibility::Rule;
use crate::operations::outcome::{Outcome, Status};

/// One merge group of the plan, as the dry run shows it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct GroupReport {
    /// The ORC schema shared by the group's files.
    pub schema: String,
    pub compression: String,
    pub writer: String,
    pub files: usize,
    pub bytes: u64,
    pub outputs: Vec<OutputReport>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct OutputReport {
    pub name: String,
    pub inputs: Vec<String>,
    /// Planned before the run (for a re-encode, an estimate: one per `--stripe-size` of
    /// input); written after it.
    pub stripes: usize,
    pub rows: u64,
    /// Planned size before the run; the written size after it.
    pub bytes: u64,
    /// How the output's stripes are (or were) made: "copy" or "rewrite".
    pub made_by: OutputWriter,
    /// Why: the policy's reason, or why a re-encode fell back to a copy.
    pub why: String,
}

/// A file carried into the new location unchanged (byte copy), and why it is not merged.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CarriedFile {
    pub name: String,
    pub bytes: u64,
    pub stripes: usize,
    pub reason: String,
}

/// What `--json` prints for one partition.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CompactReport {
    #[serde(flatten)]
    pub outcome: Outcome,
    pub files_before: usize,
    pub files_after: usize,
    pub bytes_before: u64,
    pub bytes_after: u64,
    pub rows: u64,
    /// Stripes of the partition's data files before the run (read from their tails).
    pub stripes_before: usize,
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
    /// The `--stripes` mode the outputs were planned with.
    pub stripes: Option<Stripes>,
    /// The layout the outputs were asked to have (`--sort-by`, `--zorder`, `--codec`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub layout: Option<LayoutReport>,
    pub seconds: f64,
}

/// What a run with a layout did beyond merging.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct LayoutReport {
    /// As the outputs record it: `sort(customer_id ASC NULLS FIRST); codec=ZSTD`.
    pub layout: String,
    /// Sorted runs spilled to local disk (0: sorted in memory), and their bytes.
    pub spilled_runs: usize,
    pub spilled_bytes: u64,
    /// Per key column, the mean fraction of row groups a point lookup on it reads, before and
    /// after the run (1.0: every row group; 1/n: one of n). Measured on the rows as they were
    /// decoded and written; a run that did not sort has none.
    pub before: BTreeMap<String, f64>,
    pub after: BTreeMap<String, f64>,
    /// Per key column, the mean fraction of the partition's stripes a point lookup reads
    /// before the run, from the files' stripe statistics: what a dry run can tell.
    pub stripes_before: BTreeMap<String, f64>,
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
        let mut report = CompactReport::new(table, partition);
        report.outcome.status = status;
        report.outcome.reason = Some(reason);
        report.outcome.rule = rule;
        report
    }

    pub(super) fn new(table: &str, partition: &str) -> Self {
        CompactReport {
            outcome: Outcome::new(table, partition),
            files_before: 0,
            files_after: 0,
            bytes_before: 0,
            bytes_after: 0,
            rows: 0,
            stripes_before: 0,
            groups: vec![],
            carried: vec![],
            dropped_empty: vec![],
            old_location: None,
            new_location: None,
            run_id: None,
            verify: None,
            stripes: None,
            layout: None,
            seconds: 0.0,
        }
    }

    /// Names the planned outputs in plan order (`<run-id>` in a dry run).
    pub(super) fn name_outputs(&mut self, run_id: &str) {
        let outputs = self.groups.iter_mut().flat_map(|g| g.outputs.iter_mut());
        for (n, out) in outputs.enumerate() {
            out.name = crate::run_dirs::output_name(run_id, n);
        }
    }
}
