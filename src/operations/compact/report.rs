//! What `compact` reports for one partition: the plan as the dry run shows it, and the outcome.

use std::collections::BTreeMap;
use std::fmt;

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
    pub reason: CarryReason,
}

/// Why a file is carried over unchanged rather than merged. `--json` and the text report give
/// it as one sentence ([`Display`](fmt::Display)), the one a YARN task's report is read back
/// from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(into = "String", from = "String")]
pub enum CarryReason {
    /// No merge group takes it: its merge key or user metadata says why (the ORC reader's words).
    Unmergeable(String),
    /// The planner left it where it is: large already, or with nothing to merge with (its
    /// words).
    LeftAlone(String),
    /// Every file of its group already has the layout asked for, this marker.
    LaidOut(String),
}

impl CarryReason {
    const UNMERGEABLE: &'static str = "cannot be merged: ";
    const LAID_OUT: &'static str = "already laid out as ";
}

impl fmt::Display for CarryReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CarryReason::Unmergeable(why) => write!(f, "{}{why}", Self::UNMERGEABLE),
            CarryReason::LeftAlone(why) => f.write_str(why),
            CarryReason::LaidOut(marker) => write!(f, "{}{marker}", Self::LAID_OUT),
        }
    }
}

impl From<CarryReason> for String {
    fn from(reason: CarryReason) -> String {
        reason.to_string()
    }
}

/// The sentence read back: the planner's own sentences never open as the others do.
impl From<String> for CarryReason {
    fn from(sentence: String) -> Self {
        if let Some(why) = sentence.strip_prefix(Self::UNMERGEABLE) {
            CarryReason::Unmergeable(why.to_string())
        } else if let Some(marker) = sentence.strip_prefix(Self::LAID_OUT) {
            CarryReason::LaidOut(marker.to_string())
        } else {
            CarryReason::LeftAlone(sentence)
        }
    }
}

impl From<&str> for CarryReason {
    fn from(sentence: &str) -> Self {
        CarryReason::from(sentence.to_string())
    }
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
    /// Of those, the partition's own work: its planning, and its staging through verification
    /// (steps 4 to 6), not the waits for its batch's locks, swap and other partitions. What
    /// the autopilot learns its rates from.
    #[serde(default)]
    pub work_seconds: f64,
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
            work_seconds: 0.0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn carry_reasons_read_as_today_and_read_back_as_they_were() {
        let reasons = [
            (
                CarryReason::Unmergeable("its footer names no compression".into()),
                "cannot be merged: its footer names no compression",
            ),
            (
                CarryReason::LeftAlone("the only small file of its merge group".into()),
                "the only small file of its merge group",
            ),
            (
                CarryReason::LaidOut("sort(k ASC NULLS FIRST)".into()),
                "already laid out as sort(k ASC NULLS FIRST)",
            ),
        ];
        for (reason, sentence) in reasons {
            assert_eq!(reason.to_string(), sentence);
            let json = serde_json::to_string(&reason).unwrap();
            assert_eq!(json, serde_json::to_string(sentence).unwrap());
            assert_eq!(serde_json::from_str::<CarryReason>(&json).unwrap(), reason);
        }
    }
}
