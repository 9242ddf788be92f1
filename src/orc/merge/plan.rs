//! Planning outputs: which files go into which output, and where each stripe lands.

use crate::orc::tail::orc_tail::OrcTail;
use crate::orc::tail::orc_tail::ORC_MAGIC;

#[derive(Clone, Debug)]
pub struct PlanOptions {
    /// Outputs are cut near this size (stripe bytes plus header).
    pub target_size: u64,
    /// A file at least this fraction of the target is already "large" and left alone: copying
    /// it would cost I/O and gain nothing.
    pub large_file_fraction: f64,
    /// Whether a file with nothing to merge with is still rewritten (into an output of its
    /// own): when the outputs must have a layout its file does not.
    pub alone_too: bool,
}

/// The output size compaction aims for unless told otherwise.
pub const DEFAULT_TARGET_SIZE: u64 = 256 << 20;

impl Default for PlanOptions {
    fn default() -> Self {
        Self {
            target_size: DEFAULT_TARGET_SIZE,
            large_file_fraction: 0.75,
            alone_too: false,
        }
    }
}

/// One stripe of an output: where it comes from and where it goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PlannedStripe {
    /// Index into [`OutputPlan::inputs`].
    pub input: usize,
    /// Index of the stripe within that input.
    pub input_stripe: usize,
    pub source_offset: u64,
    pub length: u64,
    pub rows: u64,
    pub output_offset: u64,
}

/// One output file: its inputs (whole files, see [`plan_group`]) and its stripes in order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OutputPlan {
    /// Indices into the tails given to the planner, in output order.
    pub inputs: Vec<usize>,
    pub stripes: Vec<PlannedStripe>,
    pub rows: u64,
    /// Header plus stripes: where the output's tail will start.
    pub content_length: u64,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LeftAlone {
    pub file: usize,
    pub reason: String,
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GroupPlan {
    pub outputs: Vec<OutputPlan>,
    pub left_alone: Vec<LeftAlone>,
}

/// Plans the outputs of one merge group (`files` index into `tails`).
///
/// Cuts fall between files, never inside one: a file's rows then live in exactly one output,
/// so "rows per output = sum of its inputs' rows" can be checked, and each output's file-level
/// statistics can be merged from its inputs' whole-file statistics. Since files here are small
/// (large ones are left alone) that costs little precision in the output sizes. Outputs are
/// balanced: the group is split into as many outputs as the target requires, each aiming at an
/// equal share, so there is no tiny last file. An output may pass the target by about one file.
pub fn plan_group(files: &[usize], tails: &[&OrcTail], opts: &PlanOptions) -> GroupPlan {
    let mut plan = GroupPlan::default();
    let large = (opts.target_size as f64 * opts.large_file_fraction) as u64;
    let mut small = Vec::new();
    for &file in files {
        let Some(tail) = tails.get(file) else {
            continue;
        };
        if tail.file_length >= large {
            plan.left_alone.push(LeftAlone {
                file,
                reason: format!(
                    "already {} bytes, at least {:.0}% of the target size",
                    tail.file_length,
                    opts.large_file_fraction * 100.0
                ),
            });
        } else {
            small.push(file);
        }
    }
    if small.len() < 2 && !(opts.alone_too && small.len() == 1) {
        for file in small {
            plan.left_alone.push(LeftAlone {
                file,
                reason: "the only small file of its merge group: nothing to merge with".into(),
            });
        }
        return plan;
    }

    let body = |f: usize| tails[f].stripes.iter().map(|s| s.length()).sum::<u64>();
    let total: u64 = small.iter().map(|&f| body(f)).sum();
    let target = opts.target_size.max(1);
    let outputs = total.div_ceil(target).max(1);
    let share = total.div_ceil(outputs).max(1);

    // Each file goes to the output its midpoint falls in when the group's bytes are laid end
    // to end and cut into equal shares: cuts land at the file boundary nearest each share's end.
    let mut batches: Vec<Vec<usize>> = vec![Vec::new(); outputs as usize];
    let mut before = 0u64;
    for &file in &small {
        let len = body(file);
        let slot = ((before + len / 2) / share).min(outputs - 1) as usize;
        batches[slot].push(file);
        before += len;
    }

    for batch in batches {
        if batch.len() < 2 && !(opts.alone_too && batch.len() == 1) {
            // A batch of one would only copy that file; leave it in place instead.
            for file in batch {
                plan.left_alone.push(LeftAlone {
                    file,
                    reason: "no other file fits beside it within the target size".into(),
                });
            }
            continue;
        }
        plan.outputs.push(layout(&batch, tails));
    }
    plan
}

/// Places stripes back to back after the header, in input order.
pub(crate) fn layout(inputs: &[usize], tails: &[&OrcTail]) -> OutputPlan {
    let mut offset = ORC_MAGIC.len() as u64;
    let mut stripes = Vec::new();
    let mut rows = 0;
    for (input, &file) in inputs.iter().enumerate() {
        for (input_stripe, s) in tails[file].stripes.iter().enumerate() {
            stripes.push(PlannedStripe {
                input,
                input_stripe,
                source_offset: s.offset,
                length: s.length(),
                rows: s.rows,
                output_offset: offset,
            });
            offset += s.length();
            rows += s.rows;
        }
    }
    OutputPlan {
        inputs: inputs.to_vec(),
        stripes,
        rows,
        content_length: offset,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::orc::tail::read::read_tail;
    use crate::orc::testutil::{block_on, MemFile, MULTI_STRIPE_ZSTD};
    use crate::orc::StripeInfo;

    /// A real tail reshaped to the given stripe sizes: the planner only looks at lengths.
    fn fake(stripe_sizes: &[u64]) -> OrcTail {
        let mut t = block_on(read_tail(&MemFile::new(MULTI_STRIPE_ZSTD.to_vec())))
            .unwrap()
            .unwrap();
        let mut offset = 3;
        t.stripes = stripe_sizes
            .iter()
            .map(|&len| {
                let s = StripeInfo {
                    offset,
                    index_length: 0,
                    data_length: len - 1,
                    footer_length: 1,
                    rows: 10,
                };
                offset += len;
                s
            })
            .collect();
        t.file_length = offset + 100;
        t.tail_length = 100;
        t
    }

    fn opts(target: u64) -> PlanOptions {
        PlanOptions {
            target_size: target,
            large_file_fraction: 0.75,
            alone_too: false,
        }
    }

    #[test]
    fn small_files_become_one_output_with_contiguous_offsets() {
        let t: Vec<OrcTail> = vec![fake(&[100, 50]), fake(&[70]), fake(&[30, 30, 30])];
        let refs: Vec<&OrcTail> = t.iter().collect();
        let plan = plan_group(&[0, 1, 2], &refs, &opts(10_000));
        assert!(plan.left_alone.is_empty());
        assert_eq!(plan.outputs.len(), 1);
        let out = &plan.outputs[0];
        assert_eq!(out.inputs, vec![0, 1, 2]);
        assert_eq!(out.rows, 60);
        let offsets: Vec<u64> = out.stripes.iter().map(|s| s.output_offset).collect();
        assert_eq!(offsets, vec![3, 103, 153, 223, 253, 283]);
        assert_eq!(out.content_length, 313);
        assert_eq!(out.stripes[3].input, 2);
        assert_eq!(out.stripes[3].input_stripe, 0);
        assert_eq!(out.stripes[3].source_offset, 3);
    }

    #[test]
    fn outputs_are_cut_between_files_near_an_even_share() {
        let t: Vec<OrcTail> = (0..10).map(|_| fake(&[100])).collect();
        let refs: Vec<&OrcTail> = t.iter().collect();
        let files: Vec<usize> = (0..10).collect();
        // 1000 bytes, target 450: three outputs of about 333 bytes.
        let plan = plan_group(
            &files,
            &refs,
            &PlanOptions {
                target_size: 450,
                large_file_fraction: 1.0,
                alone_too: false,
            },
        );
        let sizes: Vec<usize> = plan.outputs.iter().map(|o| o.inputs.len()).collect();
        assert_eq!(sizes, vec![3, 4, 3]);
        let all: Vec<usize> = plan.outputs.iter().flat_map(|o| o.inputs.clone()).collect();
        assert_eq!(all, files);
    }

    #[test]
    fn large_and_lonely_files_are_left_alone_with_a_reason() {
        let t: Vec<OrcTail> = vec![fake(&[900]), fake(&[10]), fake(&[10])];
        let refs: Vec<&OrcTail> = t.iter().collect();
        let plan = plan_group(&[0, 1, 2], &refs, &opts(1000));
        assert_eq!(plan.left_alone.len(), 1);
        assert_eq!(plan.left_alone[0].file, 0);
        assert!(plan.left_alone[0].reason.contains("already"));
        assert_eq!(plan.outputs.len(), 1);
        assert_eq!(plan.outputs[0].inputs, vec![1, 2]);

        let plan = plan_group(&[0, 1], &refs, &opts(1000));
        assert!(plan.outputs.is_empty());
        assert_eq!(plan.left_alone.len(), 2);
        assert!(plan.left_alone[1].reason.contains("only small file"));
    }
}
