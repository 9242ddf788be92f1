//! The report of one partition, made from the plan and from what each step of the run did: one
//! `record_*` per step. Only what steps 1 and 2 find before a stop may come (the partition's
//! name and location, the lock's warnings) is written by the planner as it goes.

use std::collections::BTreeMap;

use super::options::{CompactOptions, Layout};
use super::plan::{PartitionPlan, PlannedGroup};
use super::report::{
    CarriedFile, CarryReason, CompactReport, GroupReport, LayoutReport, OutputReport,
};
use super::write::{OutputWriter, StagedOutput};
use crate::hdfs::Location;
use crate::operations::outcome::Status;
use crate::orc::{ClusterSummary, OrcTail};
use crate::snapshot::Snapshot;

impl CompactReport {
    /// Step 3: the partition's files as the snapshot found them.
    pub(super) fn record_snapshot(&mut self, snapshot: &Snapshot) {
        self.files_before = snapshot.files.len();
        self.bytes_before = snapshot.bytes();
        self.rows = snapshot.rows();
    }

    /// The plan as `--dry-run` shows it: the partition's stripes, its merge groups with their
    /// planned outputs (not yet named), and the files carried over or dropped.
    pub(super) fn record_plan(&mut self, plan: &PartitionPlan, options: &CompactOptions) {
        let files = &plan.snapshot.files;
        self.stripes_before = plan
            .with_tail
            .iter()
            .filter_map(|&i| files[i].tail.as_ref())
            .map(|t| t.stripes.len())
            .sum();
        self.groups = (plan.groups.iter().enumerate())
            .map(|(g, group)| group_report(plan, g, group, options))
            .collect();
        self.carried = (plan.carried.iter())
            .map(|(i, reason)| CarriedFile {
                name: files[*i].name.clone(),
                bytes: files[*i].length,
                stripes: files[*i].tail.as_ref().map_or(0, |t| t.stripes.len()),
                reason: reason.clone(),
            })
            .collect();
        self.dropped_empty = (plan.dropped_empty.iter())
            .map(|&i| files[i].name.clone())
            .collect();
        self.files_after = plan.outputs.len() + plan.carried.len();
    }

    /// A plan of no outputs, and why.
    pub(super) fn record_nothing_to_do(&mut self, plan: &PartitionPlan) {
        self.outcome.status = Status::NothingToDo;
        let laid_out = |(_, c): &(usize, CarryReason)| matches!(c, CarryReason::LaidOut(_));
        self.outcome.reason = Some(if plan.snapshot.files.is_empty() {
            "the partition has no data files".to_string()
        } else if !plan.carried.is_empty() && plan.carried.iter().all(laid_out) {
            format!(
                "every file is already laid out as {}",
                plan.layout.as_ref().map(|l| l.marker()).unwrap_or_default()
            )
        } else {
            "no two files can be merged: every file is already large, alone in its merge \
             group, or unmergeable"
                .to_string()
        });
        self.files_after = self.files_before;
        self.bytes_after = self.bytes_before;
    }

    /// The layout asked for, and how its key columns were looked up before the run.
    pub(super) fn record_layout(&mut self, layout: &Layout, stripes_before: BTreeMap<String, f64>) {
        self.layout = Some(LayoutReport {
            layout: layout.marker(),
            stripes_before,
            ..LayoutReport::default()
        });
    }

    /// A dry run's end: what the run would write, its outputs named `<run-id>`.
    pub(super) fn record_dry_run(&mut self, plan: &PartitionPlan, options: &CompactOptions) {
        self.outcome.status = Status::DryRun;
        self.verify = Some(options.verify);
        self.stripes = Some(options.stripes);
        self.name_outputs("<run-id>");
        self.bytes_after = plan.bytes_to_write();
    }

    /// A run's start: its id, and the planned outputs named after it.
    pub(super) fn record_run(&mut self, id: &str, options: &CompactOptions) {
        self.run_id = Some(id.to_string());
        self.verify = Some(options.verify);
        self.stripes = Some(options.stripes);
        self.name_outputs(id);
    }

    /// Names the planned outputs in plan order.
    fn name_outputs(&mut self, run_id: &str) {
        let outputs = self.groups.iter_mut().flat_map(|g| g.outputs.iter_mut());
        for (n, out) in outputs.enumerate() {
            out.name = crate::run_dirs::output_name(run_id, n);
        }
    }

    /// Step 4: what was made of each planned output (a fallback's reason matters even when a
    /// later step stops the run), and what the sorts did.
    pub(super) fn record_staged(
        &mut self,
        outputs: &[(Location, StagedOutput)],
        sorted: &[ClusterSummary],
    ) {
        let planned = self.groups.iter_mut().flat_map(|g| g.outputs.iter_mut());
        for (out, (_, made)) in planned.zip(outputs) {
            out.bytes = made.written.length();
            out.stripes = made.written.stripes();
            out.made_by = made.way.writer;
            out.why = made.way.why.clone();
        }
        if let Some(layout) = &mut self.layout {
            for s in sorted {
                layout.spilled_runs += s.spilled_runs;
                layout.spilled_bytes += s.spilled_bytes;
                // One group per partition in practice (a table has one schema); with more, the
                // last group's measure is kept per column.
                layout.before.extend(s.before.iter().cloned());
                layout.after.extend(s.after.iter().cloned());
            }
        }
    }

    /// Step 8: the partition points at `published`, which holds `files` files of `bytes`
    /// bytes and `rows` rows.
    pub(super) fn record_swapped(
        &mut self,
        published: &Location,
        files: usize,
        bytes: u64,
        rows: u64,
    ) {
        self.outcome.status = Status::Compacted;
        self.new_location = Some(published.to_string());
        self.files_after = files;
        self.bytes_after = bytes;
        self.rows = rows;
    }
}

/// Group `g` of the plan and its planned outputs.
fn group_report(
    plan: &PartitionPlan,
    g: usize,
    group: &PlannedGroup,
    options: &CompactOptions,
) -> GroupReport {
    let files = &plan.snapshot.files;
    let file = |f: usize| &files[plan.with_tail[f]];
    let mut writers: Vec<String> = vec![];
    for &f in &group.files {
        let name = writer_name(file(f).tail.as_ref().expect("planned files have tails"));
        if !writers.contains(&name) {
            writers.push(name);
        }
    }
    let outputs = plan.outputs.iter().filter(|o| o.group == g);
    GroupReport {
        schema: group.schema.clone(),
        compression: format!("{:?}", group.shape.compression).to_ascii_uppercase(),
        writer: writers.join(", "),
        files: group.files.len(),
        bytes: group.files.iter().map(|&f| file(f).length).sum(),
        outputs: outputs
            .map(|o| OutputReport {
                name: String::new(),
                inputs: plan.inputs_of(o).iter().map(|f| f.name.clone()).collect(),
                stripes: match o.way.writer {
                    OutputWriter::StripeCopy => o.plan.stripes.len(),
                    // Encoded sizes are not known before encoding: about one stripe per
                    // --stripe-size of input.
                    OutputWriter::Rewrite => {
                        o.plan.content_length.div_ceil(options.stripe_size).max(1) as usize
                    }
                },
                rows: o.plan.rows,
                bytes: o.plan.content_length,
                made_by: o.way.writer,
                why: o.way.why.clone(),
            })
            .collect(),
    }
}

/// The writer of a file as its footer names it.
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
    match &tail.footer.software_version {
        Some(v) => format!("{who} {v}"),
        None => who.to_string(),
    }
}
