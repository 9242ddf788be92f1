//! Step 4's writing: every planned output and every carried file into the staging directory.
//! A partition's outputs are independent files, so up to [`OUTPUTS_AT_ONCE`] are written at
//! once: one output's reads and writes wait on HDFS while another's rows are decoded and
//! encoded. A sorted group is one stream cut into files and its sort holds `--sort-memory`, so
//! a partition put in an order writes its groups one after another. Each output's name and
//! bytes depend only on its place in the plan, not on what else runs.

use futures::StreamExt;
use tokio::sync::mpsc::UnboundedSender;

use super::options::{CompactOptions, Layout};
use super::plan::{PartitionPlan, PlannedOutput};
use super::progress::Progress;
use super::write::{write_clustered, OutputWriter, StagedOutput};
use crate::hdfs::{Hdfs, Location};
use crate::operations::file_copy::copy_file;
use crate::operations::outcome::Stop;
use crate::orc::{ClusterSummary, ReencodedOutput};
use crate::run_dirs::output_name;
use crate::snapshot::DataFile;

/// Merged outputs written at once, at most: each holds its read-ahead and, re-encoding, the
/// stripe it builds, so memory grows with it; four keep an edge node's disks and cores busy
/// without a 64-core host holding 64 stripes.
const OUTPUTS_AT_ONCE: usize = 4;

/// The staging directory and what every file written into it shares.
pub(super) struct Staging<'a> {
    pub hdfs: &'a Hdfs,
    pub dir: &'a Location,
    pub run_id: &'a str,
    pub permission: u16,
    pub options: &'a CompactOptions,
    pub progress: &'a dyn Progress,
    /// Told of each output of a sorted group as it is closed, so step 5 can read it back while
    /// the group's next outputs are written (a sorted group writes them one at a time).
    pub closed: UnboundedSender<Closed>,
}

/// An output of a sorted group, closed in the staging directory.
pub(super) struct Closed {
    /// Its place in the plan's outputs.
    pub index: usize,
    pub target: Location,
    pub written: ReencodedOutput,
}

/// What one unit of work wrote: its outputs in plan order, and the sort's summary for a group.
type Made = (Vec<(Location, StagedOutput)>, Option<ClusterSummary>);

/// One unit of step 4: an output on its own, or a sorted group's outputs from its first index.
enum Unit<'p> {
    One(usize, &'p PlannedOutput),
    Sorted(usize, Vec<&'p PlannedOutput>, &'p Layout),
}

impl Staging<'_> {
    /// Writes the plan's merged outputs, in plan order, with the sort's summary of each group
    /// put in an order. `checkpoint` runs after each unit: a stop requested meanwhile ends the
    /// step there.
    pub async fn outputs(
        &self,
        plan: &PartitionPlan,
        checkpoint: impl Fn() -> Result<(), Stop>,
    ) -> Result<(Vec<(Location, StagedOutput)>, Vec<ClusterSummary>), Stop> {
        let ordered = plan.layout.as_ref().filter(|l| l.order.is_some());
        let at_once = match ordered {
            Some(_) => 1,
            None => self.options.threads.clamp(1, OUTPUTS_AT_ONCE),
        };
        let mut made = futures::stream::iter(units(plan, ordered))
            .map(|unit| self.write(plan, unit))
            .buffered(at_once);
        let (mut outputs, mut sorted) = (Vec::new(), Vec::new());
        while let Some(unit) = made.next().await {
            let (written, summary) = unit?;
            outputs.extend(written);
            sorted.extend(summary);
            checkpoint()?;
        }
        Ok((outputs, sorted))
    }

    async fn write(&self, plan: &PartitionPlan, unit: Unit<'_>) -> Result<Made, Stop> {
        let target = |i: usize| self.dir.child(&output_name(self.run_id, i));
        match unit {
            Unit::One(i, output) => {
                let target = target(i);
                let made = OutputWriter::write(
                    self.hdfs,
                    &output.way,
                    &output.shape,
                    &plan.inputs_of(output),
                    &output.plan,
                    &target,
                    self.permission,
                    self.options,
                    plan.layout.as_ref(),
                )
                .await?;
                self.progress.written(output.plan.content_length);
                Ok((vec![(target, made)], None))
            }
            Unit::Sorted(first, group, layout) => {
                let inputs: Vec<&DataFile> = group.iter().flat_map(|o| plan.inputs_of(o)).collect();
                let targets: Vec<(Location, u64)> = (first..first + group.len())
                    .zip(&group)
                    .map(|(i, o)| (target(i), o.plan.rows))
                    .collect();
                let (made, summary) = write_clustered(
                    self.hdfs,
                    &group[0].way,
                    &group[0].shape,
                    &inputs,
                    &targets,
                    self.permission,
                    self.options,
                    layout,
                    |k, written| {
                        // Not listened to any more: step 5 reads it back with the others.
                        let _ = self.closed.send(Closed {
                            index: first + k,
                            target: targets[k].0.clone(),
                            written: written.clone(),
                        });
                    },
                )
                .await?;
                for o in &group {
                    self.progress.written(o.plan.content_length);
                }
                let written = targets.into_iter().map(|(t, _)| t).zip(made).collect();
                Ok((written, Some(summary)))
            }
        }
    }

    /// Copies each carried file whole, one after another (they are few: files already near
    /// the target), with the XXH3 of the bytes handed to the writer.
    pub async fn carried<'p>(
        &self,
        plan: &'p PartitionPlan,
        checkpoint: impl Fn() -> Result<(), Stop>,
    ) -> Result<Vec<(Location, &'p DataFile, u64)>, Stop> {
        let mut copies = Vec::new();
        for source in plan.carried_files() {
            let target = self.dir.child(&source.name);
            let read_ahead = &self.options.read_ahead;
            let hash = copy_file(self.hdfs, source, &target, self.permission, read_ahead).await?;
            self.progress.written(source.length);
            copies.push((target, source, hash));
            checkpoint()?;
        }
        Ok(copies)
    }
}

/// The plan's outputs as units: with an order, a group's re-encoded outputs are one sorted
/// stream, cut where the plan cut its files.
fn units<'p>(plan: &'p PartitionPlan, ordered: Option<&'p Layout>) -> Vec<Unit<'p>> {
    let mut units = Vec::new();
    let mut n = 0;
    while let Some(output) = plan.outputs.get(n) {
        if let (Some(layout), OutputWriter::Rewrite) = (ordered, output.way.writer) {
            let group: Vec<&PlannedOutput> = plan.outputs[n..]
                .iter()
                .take_while(|o| o.group == output.group)
                .collect();
            let len = group.len();
            units.push(Unit::Sorted(n, group, layout));
            n += len;
        } else {
            units.push(Unit::One(n, output));
            n += 1;
        }
    }
    units
}
