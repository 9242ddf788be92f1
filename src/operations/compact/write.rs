//! How a run makes its files: the seam between the protocol and the bytes. [`OutputWriter`]
//! turns one planned output's inputs into the output file, the way the plan chose for it
//! ([`Way`], from [`choose`]); carried files are copied whole by [`crate::operations::file_copy`].
//! The run calls these and knows nothing of how the bytes are made: a stripe copy and a re-encode are two writers behind one call, and what each proves
//! ([`Written`]) is checked by step 5 in the way that fits it.

use anyhow::anyhow;
use bytesize::ByteSize;
use serde::{Deserialize, Serialize};

use super::options::{CompactOptions, Layout, Stripes};
use crate::hdfs::{Hdfs, Location};
use crate::operations::file_copy::{close, copy_stop};
use crate::operations::outcome::Stop;
use crate::orc::{
    self, ClusterOptions, ClusterSummary, MergedOutput, OrcError, OrcTail, OutputPlan, OutputShape,
    ReadAhead, ReencodedOutput, WriterOptions,
};
use crate::snapshot::DataFile;

/// What makes a merged output from its inputs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum OutputWriter {
    /// Stripes copied byte for byte behind one new tail: only files sharing schema,
    /// compression and writer can be merged (the plan's merge groups), and every stripe's
    /// checksum is kept for verification and the journal.
    #[serde(rename = "copy")]
    StripeCopy,
    /// Rows decoded and written again by our ORC writer in stripes of `--stripe-size`, with
    /// the inputs' type tree and user metadata, the first input's bloom filter columns, and
    /// the codec, block size and row index stride the plan chose ([`crate::orc::OutputShape`]);
    /// every column's values are digested on the way, for verification and the journal.
    #[serde(rename = "rewrite")]
    Rewrite,
}

impl OutputWriter {
    /// As `--json` and the text report name it.
    pub fn as_str(self) -> &'static str {
        match self {
            OutputWriter::StripeCopy => "copy",
            OutputWriter::Rewrite => "rewrite",
        }
    }
}

/// Which writer makes an output and why: the policy's decision, carried by the plan.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Way {
    pub writer: OutputWriter,
    pub why: String,
}

/// The way for a merge group whose planned inputs hold `stripes` stripes of `bytes` bytes.
pub(super) fn choose(options: &CompactOptions, stripes: usize, bytes: u64) -> Way {
    let (writer, why) = match options.stripes {
        Stripes::Copy => (OutputWriter::StripeCopy, "--stripes copy".to_string()),
        Stripes::Rewrite => (OutputWriter::Rewrite, "--stripes rewrite".to_string()),
        Stripes::Auto => {
            let mean = bytes / stripes.max(1) as u64;
            let size = |b: u64| ByteSize(b).display().iec().to_string();
            let (shown, min) = (size(mean), size(options.min_stripe_size));
            if stripes > 0 && mean < options.min_stripe_size {
                (
                    OutputWriter::Rewrite,
                    format!("mean input stripe {shown} is under --min-stripe-size {min}"),
                )
            } else {
                (
                    OutputWriter::StripeCopy,
                    format!("mean input stripe {shown} is at least --min-stripe-size {min}"),
                )
            }
        }
    };
    Way { writer, why }
}

/// What a writer made, with what step 5 checks it against.
pub(super) enum Written {
    Copied(MergedOutput),
    Reencoded(ReencodedOutput),
}

impl Written {
    pub fn length(&self) -> u64 {
        match self {
            Written::Copied(m) => m.length,
            Written::Reencoded(r) => r.length,
        }
    }

    pub fn stripes(&self) -> usize {
        match self {
            Written::Copied(m) => m.stripe_checksums.len(),
            Written::Reencoded(r) => r.stripes,
        }
    }
}

/// How `why` says that a group of tiny stripes was copied because its values cannot be
/// re-encoded exactly: `analyze --deep` counts such groups.
pub const NOT_RE_ENCODABLE: &str = "cannot be re-encoded exactly";

/// One output as staged: what was written and, when the plan's way could not be followed, the
/// way it was made instead.
pub(super) struct StagedOutput {
    pub written: Written,
    pub way: Way,
}

impl OutputWriter {
    /// Writes `target` (with `permission`) from `inputs`, the output's input files in output
    /// order; `output.inputs` index the planner's tail list and are re-indexed here. With
    /// `--stripes auto`, inputs whose values cannot be re-encoded exactly are copied instead.
    #[allow(clippy::too_many_arguments)]
    pub(super) async fn write(
        hdfs: &Hdfs,
        way: &Way,
        shape: &OutputShape,
        inputs: &[&DataFile],
        output: &OutputPlan,
        target: &Location,
        permission: u16,
        options: &CompactOptions,
        layout: Option<&Layout>,
    ) -> Result<StagedOutput, Stop> {
        let read_ahead = &options.read_ahead;
        let copy = || stripe_copy(hdfs, inputs, output, target, permission, read_ahead);
        let written = match way.writer {
            OutputWriter::StripeCopy => Written::Copied(copy().await?),
            OutputWriter::Rewrite => {
                let rewritten = rewrite(hdfs, inputs, shape, target, permission, options, layout);
                match rewritten.await {
                    Ok(r) => Written::Reencoded(r),
                    Err(Rewrite::Values(e))
                        if options.stripes == Stripes::Auto
                            && layout.is_none()
                            && one_merge_key(inputs) =>
                    {
                        tracing::warn!(%target, error = %e, "re-encoding failed: copying stripes");
                        hdfs.delete(target, false).await?;
                        let merged = copy().await?;
                        return Ok(StagedOutput {
                            written: Written::Copied(merged),
                            way: Way {
                                writer: OutputWriter::StripeCopy,
                                why: format!("{NOT_RE_ENCODABLE} ({e})"),
                            },
                        });
                    }
                    Err(Rewrite::Values(e)) => {
                        return Err(Stop::Failed(anyhow!(
                            "re-encoding {target}: {e}; compact with --stripes copy to copy \
                             these inputs' stripes instead (a copy merges only files of one \
                             codec and writer)"
                        )))
                    }
                    Err(Rewrite::Stop(stop)) => return Err(stop),
                }
            }
        };
        Ok(StagedOutput {
            written,
            way: way.clone(),
        })
    }
}

/// Writes the outputs of one merge group put in `layout`'s order (the group's `inputs`, in
/// listing order): every row decoded and sorted, then cut into `outputs` (target, rows) in
/// turn, each with the rows the plan gave it; `closed(k, written)` is told as the `k`th is
/// closed. Returns one [`StagedOutput`] per output and what the sort did; a group whose values
/// cannot be ordered fails the partition, naming why.
#[allow(clippy::too_many_arguments)]
pub(super) async fn write_clustered(
    hdfs: &Hdfs,
    way: &Way,
    shape: &OutputShape,
    inputs: &[&DataFile],
    outputs: &[(Location, u64)],
    permission: u16,
    options: &CompactOptions,
    layout: &Layout,
    closed: impl Fn(usize, &ReencodedOutput),
) -> Result<(Vec<StagedOutput>, ClusterSummary), Stop> {
    let tails = tails_of(inputs);
    let Some(order) = &layout.order else {
        return Err(Stop::Failed(anyhow!("a clustered group needs an order")));
    };
    let cluster_options = ClusterOptions {
        order: order.clone(),
        sort_memory: layout.sort_memory,
        spill_dir: layout.spill_dir.clone(),
        threads: options.threads,
    };
    let first = outputs
        .first()
        .map(|(t, _)| t.to_string())
        .unwrap_or_default();
    let failed = |e: OrcError| match e {
        OrcError::Decode(_) | OrcError::Unsupported(_) => Stop::Failed(anyhow!(
            "cannot put the rows of {first} and the group's other outputs in {order}: {e}; \
             compact this partition without --sort-by/--zorder (or without the table's \
             sort_by/zorder in the config file)"
        )),
        other => copy_stop(&format!("sorting the rows for {first}"), other),
    };
    let mut clustered = orc::cluster(
        &tails,
        |i| inputs[i].open(hdfs),
        &cluster_options,
        &options.read_ahead,
    )
    .await
    .map_err(failed)?;
    let mut staged = Vec::new();
    // A closed output is told of and staged as soon as HDFS has acknowledged it.
    let land = |staged: &mut Vec<StagedOutput>, k, written: ReencodedOutput| {
        closed(k, &written);
        staged.push(StagedOutput {
            written: Written::Reencoded(written),
            way: way.clone(),
        });
    };
    // An output closes while the next is written: hdfs-native's close waits 500 ms whenever the
    // NameNode has not yet heard from the DataNode about the last block (the NameNode log showed
    // it for 5 of 16 sorted outputs in one benchmark run, 4 of 4 in another), and the sort's
    // threads would otherwise wait with it.
    let mut closing = None;
    for (k, (target, rows)) in outputs.iter().enumerate() {
        let writer_options = writer_options(&tails, shape, options, Some(layout));
        let write = async {
            let mut writer = hdfs.create(target, permission).await?;
            let result = clustered
                .write_output(&mut writer, *rows, writer_options)
                .await;
            Ok::<_, Stop>((writer, result))
        };
        let previous = async {
            if let Some((j, was_closed, written)) = closing.take() {
                was_closed.await?;
                land(&mut staged, j, written);
            }
            Ok::<_, Stop>(())
        };
        let (writer, result) = match tokio::join!(write, previous) {
            (Ok((writer, result)), Ok(())) => (writer, result),
            (Ok((writer, _)), Err(stop)) => {
                let _ = close(writer, target).await;
                return Err(stop);
            }
            (Err(stop), _) => return Err(stop),
        };
        match result {
            Ok(written) => closing = Some((k, close(writer, target), written)),
            Err(e) => {
                let _ = close(writer, target).await;
                return Err(failed(e));
            }
        }
    }
    if let Some((j, was_closed, written)) = closing {
        was_closed.await?;
        land(&mut staged, j, written);
    }
    let summary = clustered.finish().await.map_err(failed)?;
    Ok((staged, summary))
}

/// How a re-encoded output of `tails` is written: their shape as the plan chose it, the
/// stripe size asked, their user metadata, and the layout's codec level and record.
fn writer_options(
    tails: &[&OrcTail],
    shape: &OutputShape,
    options: &CompactOptions,
    layout: Option<&Layout>,
) -> WriterOptions {
    let mut writer_options = WriterOptions::from_tail(tails[0]);
    writer_options.stripe_size = options.stripe_size;
    writer_options.compression = shape.compression;
    writer_options.compression_block_size = shape.compression_block_size;
    writer_options.row_index_stride = shape.row_index_stride;
    writer_options.user_metadata = user_metadata_union(tails);
    if let Some(layout) = layout {
        writer_options.compression_level = layout.codec_level;
        writer_options
            .user_metadata
            .push(orc::layout_item(&layout.marker()));
    }
    writer_options
}

async fn stripe_copy(
    hdfs: &Hdfs,
    inputs: &[&DataFile],
    output: &OutputPlan,
    target: &Location,
    permission: u16,
    read_ahead: &ReadAhead,
) -> Result<MergedOutput, Stop> {
    // The planner indexes inputs by their position in its tail list; give the writer its
    // inputs' tails in output order and the same indexing.
    let tails = tails_of(inputs);
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
        read_ahead,
    )
    .await
    .map_err(|e| copy_stop(&format!("writing {target}"), e))?;
    close(writer, target).await?;
    Ok(merged)
}

/// Why a re-encode stopped: values it cannot carry exactly (a stripe copy can), or anything
/// else (which stops the partition as a copy would).
enum Rewrite {
    Values(OrcError),
    Stop(Stop),
}

impl From<Stop> for Rewrite {
    fn from(stop: Stop) -> Self {
        Rewrite::Stop(stop)
    }
}

/// Whether a stripe copy can merge `inputs`: they share one merge key (a re-encode may merge
/// files that do not).
fn one_merge_key(inputs: &[&DataFile]) -> bool {
    let keys: Vec<_> = tails_of(inputs).into_iter().map(orc::merge_key).collect();
    keys.windows(2).all(|w| w[0] == w[1])
}

async fn rewrite(
    hdfs: &Hdfs,
    inputs: &[&DataFile],
    shape: &OutputShape,
    target: &Location,
    permission: u16,
    options: &CompactOptions,
    layout: Option<&Layout>,
) -> Result<ReencodedOutput, Rewrite> {
    let tails = tails_of(inputs);
    let writer_options = writer_options(&tails, shape, options, layout);
    let mut writer = hdfs.create(target, permission).await.map_err(Stop::from)?;
    let result = orc::reencode(
        &tails,
        |i| inputs[i].open(hdfs),
        &mut writer,
        writer_options,
        &options.read_ahead,
        options.threads,
    )
    .await;
    // Closed in every case: a failed file is removed by the caller or with the staging dir.
    let closed = close(writer, target).await;
    match result {
        Ok(r) => closed.map(|()| r).map_err(Rewrite::Stop),
        Err(e @ (OrcError::Decode(_) | OrcError::Unsupported(_))) => Err(Rewrite::Values(e)),
        Err(e) => Err(Rewrite::Stop(copy_stop(
            &format!("re-encoding into {target}"),
            e,
        ))),
    }
}

/// The inputs' user metadata, each name once in first-seen order (the plan merged only inputs
/// whose metadata agrees), but for the layout an input recorded: an output records its own.
fn user_metadata_union(tails: &[&OrcTail]) -> Vec<orc::proto::UserMetadataItem> {
    let mut items: Vec<orc::proto::UserMetadataItem> = Vec::new();
    let theirs = tails.iter().flat_map(|t| &t.footer.metadata);
    for item in theirs.filter(|m| !orc::is_layout_item(m)) {
        if !items.iter().any(|m| m.name == item.name) {
            items.push(item.clone());
        }
    }
    items
}

/// The inputs' tails, in output order.
fn tails_of<'a>(inputs: &[&'a DataFile]) -> Vec<&'a OrcTail> {
    inputs
        .iter()
        .map(|f| f.tail.as_ref().expect("planned inputs have tails"))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn auto_rewrites_groups_of_small_stripes_and_copies_the_others() {
        let options = CompactOptions::default();
        let small = choose(&options, 1000, 4000 * 1024);
        assert_eq!(small.writer, OutputWriter::Rewrite);
        assert_eq!(
            small.why,
            "mean input stripe 4.0 KiB is under --min-stripe-size 8.0 MiB"
        );
        let large = choose(&options, 4, 40 << 20);
        assert_eq!(large.writer, OutputWriter::StripeCopy);
        assert!(large.why.contains("at least"), "{}", large.why);
        let exactly = choose(&options, 1, 8 << 20);
        assert_eq!(exactly.writer, OutputWriter::StripeCopy);

        for (mode, writer) in [
            (Stripes::Copy, OutputWriter::StripeCopy),
            (Stripes::Rewrite, OutputWriter::Rewrite),
        ] {
            let forced = CompactOptions {
                stripes: mode,
                ..CompactOptions::default()
            };
            let way = choose(&forced, 1000, 4000 * 1024);
            assert_eq!(way.writer, writer);
            assert_eq!(way.why, format!("--stripes {}", mode.as_str()));
        }
    }
}
