//! The merge writer: stripes copied byte for byte, a new tail written after them.

use std::collections::BTreeMap;
use std::future::Future;

use bytes::{Bytes, BytesMut};
use orc_rust::proto;
use prost::Message;
use tokio::sync::mpsc;

use crate::orc::encoding::compress::{compress, Compression};
use crate::orc::error::OrcError;
use crate::orc::io::copy::{copy_pieces, Piece, ReadAhead};
use crate::orc::io::storage::{Prefetched, RangeRead, Sink};
use crate::orc::merge::key::{merge_key, user_metadata};
use crate::orc::merge::plan::{layout, OutputPlan};
use crate::orc::statistics::fold::StatisticsFold;
use crate::orc::tail::orc_tail::ORC_MAGIC;
use crate::orc::tail::orc_tail::{OrcTail, TailStatistics};
use crate::orc::tail::read::read_statistics_again;

/// The checksum of one copied stripe: the XXH3 of the bytes handed to the writer, proven equal
/// chunk by chunk to the input's bytes as they were read (see [`copy_pieces`]), so a re-read of
/// the output proves the bytes landed unchanged.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StripeChecksum {
    pub output_stripe: usize,
    /// Index into [`OutputPlan::inputs`].
    pub input: usize,
    pub input_stripe: usize,
    pub length: u64,
    /// XXH3-64 of the stripe's bytes.
    pub xxh3: u64,
}

#[derive(Clone, Debug)]
pub struct MergedOutput {
    pub length: u64,
    pub rows: u64,
    pub stripe_checksums: Vec<StripeChecksum>,
}

/// Writes one planned output to `sink`: header, every stripe, then Metadata, Footer, PostScript
/// and its length byte. The caller closes the sink.
///
/// `tails[i]` is the tail of the plan's input `i` as planned; `open(i)` opens that input when
/// its stripes come near (a few inputs ahead, never all at once). Stripes are copied in chunks
/// with reads running ahead of writes, as [`ReadAhead`] bounds them; an input whose length is
/// no longer the planned one is [`OrcError::Changed`].
///
/// Everything that can be refused (incompatible inputs, a plan that does not match the tails)
/// is checked before the first byte is written. The statistics are not held with the tails:
/// each input's are read again when it is opened, from its end read once for the stripe copy
/// too ([`Prefetched`]: a small file whole), and folded into the output's in output order, so
/// memory holds those of the few inputs open ahead, never all of them.
pub async fn write_merged<R, O, F, S>(
    plan: &OutputPlan,
    tails: &[&OrcTail],
    open: O,
    sink: &mut S,
    opts: &ReadAhead,
) -> Result<MergedOutput, OrcError>
where
    R: RangeRead + Send + 'static,
    O: Fn(usize) -> F,
    F: Future<Output = Result<R, OrcError>> + Send + 'static,
    S: Sink,
{
    check_plan(plan, tails)?;
    let head = TailHead::new(plan, tails)?;

    sink.write(Bytes::from_static(ORC_MAGIC)).await?;
    let pieces: Vec<Piece> = plan
        .stripes
        .iter()
        .map(|s| Piece {
            source: s.input,
            range: s.source_offset..s.source_offset + s.length,
        })
        .collect();
    let lengths: Vec<u64> = tails.iter().map(|t| t.file_length).collect();
    let (found, statistics) = mpsc::unbounded_channel();
    let with_stripes = head.stripe_statistics;
    let open_and_read_statistics = move |i: usize| {
        let opening = open(i);
        let planned = tails[i].clone();
        let found = found.clone();
        async move {
            let reader = Prefetched::open(opening.await?).await?;
            let statistics = read_statistics_again(&reader, &planned, with_stripes)
                .await
                .map_err(|e| match e {
                    OrcError::Changed(what) => OrcError::Changed(format!("input {i}: {what}")),
                    other => other,
                })?;
            // The fold has stopped only when the copy has failed.
            let _ = found.send((i, statistics));
            Ok(reader)
        }
    };
    let copy = copy_pieces(&pieces, &lengths, open_and_read_statistics, sink, opts);
    let fold = fold_statistics(statistics, tails, head.stripe_statistics);
    let (sums, (file_statistics, metadata)) = tokio::try_join!(copy, fold)?;
    let tail_bytes = head.finish(file_statistics, &metadata)?;
    let stripe_checksums = plan
        .stripes
        .iter()
        .zip(sums)
        .enumerate()
        .map(|(output_stripe, (stripe, xxh3))| StripeChecksum {
            output_stripe,
            input: stripe.input,
            input_stripe: stripe.input_stripe,
            length: stripe.length,
            xxh3,
        })
        .collect();
    let length = plan.content_length + tail_bytes.len() as u64;
    sink.write(tail_bytes).await?;
    Ok(MergedOutput {
        length,
        rows: plan.rows,
        stripe_checksums,
    })
}

/// Folds the inputs' statistics as [`write_merged`] reads them again, in output order: the
/// file statistics merged, and the stripe statistics' stored entries one after another, each a
/// length-delimited field 1 (the Metadata message, encoded as it comes) when `stripes`.
///
/// They arrive as the inputs' opens finish, a few inputs ahead and not always in order; those
/// ahead of the next one wait. Inputs without stripes are never opened and hold no values:
/// they add nothing.
async fn fold_statistics(
    mut found: mpsc::UnboundedReceiver<(usize, TailStatistics)>,
    tails: &[&OrcTail],
    stripes: bool,
) -> Result<(Vec<proto::ColumnStatistics>, Vec<u8>), OrcError> {
    let mut waiting: BTreeMap<usize, TailStatistics> = BTreeMap::new();
    let mut file = StatisticsFold::default();
    let mut metadata = Vec::new();
    for (i, tail) in tails.iter().enumerate() {
        if tail.stripes.is_empty() {
            continue;
        }
        let statistics = loop {
            if let Some(s) = waiting.remove(&i) {
                break s;
            }
            match found.recv().await {
                Some((j, s)) => waiting.insert(j, s),
                // Every opener is gone: the copy ended without opening input i.
                None => return Err(OrcError::Plan(format!("input {i} was never read"))),
            };
        };
        file.add(&statistics.file);
        if stripes {
            for entry in statistics.stripe_entries() {
                prost::encoding::bytes::encode(1, entry, &mut metadata);
            }
        }
    }
    Ok((file.finish(), metadata))
}

/// The plan must be exactly the layout of its inputs' stripes: file-level statistics are merged
/// from whole files, so an output holding part of a file would claim wrong statistics.
fn check_plan(plan: &OutputPlan, tails: &[&OrcTail]) -> Result<(), OrcError> {
    if plan.inputs.len() != tails.len() {
        return Err(OrcError::Plan(format!(
            "plan has {} inputs, {} were given",
            plan.inputs.len(),
            tails.len()
        )));
    }
    if tails.is_empty() {
        return Err(OrcError::Plan("an output needs at least one input".into()));
    }
    let indices: Vec<usize> = (0..tails.len()).collect();
    let expected = layout(&indices, tails);
    if expected.stripes != plan.stripes
        || expected.rows != plan.rows
        || expected.content_length != plan.content_length
    {
        return Err(OrcError::Plan(
            "planned stripes differ from the inputs' stripes (was a file replaced?)".into(),
        ));
    }
    Ok(())
}

/// The output's tail but for its statistics, made (and the inputs checked to merge) before the
/// first byte is written.
struct TailHead {
    /// The Footer, its `statistics` still empty.
    footer: proto::Footer,
    /// Whether the output carries stripe statistics: when every input does (the merge key).
    stripe_statistics: bool,
    compression: Compression,
    block_size: u64,
    file_version: [u32; 2],
    writer_version: u32,
}

impl TailHead {
    fn new(plan: &OutputPlan, tails: &[&OrcTail]) -> Result<Self, OrcError> {
        let first = tails[0];
        let key = merge_key(first).map_err(OrcError::Incompatible)?;
        for (i, t) in tails.iter().enumerate().skip(1) {
            let other =
                merge_key(t).map_err(|r| OrcError::Incompatible(format!("input {i} {r}")))?;
            if other != key {
                return Err(OrcError::Incompatible(format!(
                    "input {i} has a different merge key than input 0"
                )));
            }
        }

        // User metadata: the union, in first-seen order; one name with two values is a conflict.
        let mut items: Vec<proto::UserMetadataItem> = Vec::new();
        for (i, t) in tails.iter().enumerate() {
            for (name, value) in user_metadata(t).map_err(OrcError::Incompatible)? {
                match items.iter().find(|m| m.name.as_deref() == Some(name)) {
                    Some(m) if m.value.as_deref() != Some(value) => {
                        return Err(OrcError::Incompatible(format!(
                            "input {i} gives user metadata {name:?} another value"
                        )))
                    }
                    Some(_) => {}
                    None => items.push(proto::UserMetadataItem {
                        name: Some(name.to_owned()),
                        value: Some(value.to_vec()),
                    }),
                }
            }
        }

        let stripes = plan
            .stripes
            .iter()
            .map(|s| {
                let src = &tails[s.input].stripes[s.input_stripe];
                proto::StripeInformation {
                    offset: Some(s.output_offset),
                    index_length: Some(src.index_length),
                    data_length: Some(src.data_length),
                    footer_length: Some(src.footer_length),
                    number_of_rows: Some(src.rows),
                    ..Default::default()
                }
            })
            .collect();
        let footer = proto::Footer {
            header_length: Some(ORC_MAGIC.len() as u64),
            content_length: Some(plan.content_length),
            stripes,
            types: first.footer.types.clone(),
            metadata: items,
            number_of_rows: Some(plan.rows),
            statistics: Vec::new(),
            row_index_stride: first.footer.row_index_stride,
            writer: first.footer.writer,
            encryption: None,
            calendar: first.footer.calendar,
            software_version: first.footer.software_version.clone(),
        };
        Ok(TailHead {
            footer,
            stripe_statistics: key.stripe_statistics,
            compression: first.compression,
            block_size: first.compression_block_size,
            file_version: first.file_version,
            writer_version: first.writer_version,
        })
    }

    /// Metadata, Footer, PostScript and the length byte, with the statistics folded from the
    /// inputs: the file's, and `metadata`, the Metadata message's encoding.
    fn finish(
        mut self,
        statistics: Vec<proto::ColumnStatistics>,
        metadata: &[u8],
    ) -> Result<Bytes, OrcError> {
        self.footer.statistics = statistics;
        let (kind, block) = (self.compression, self.block_size);
        let metadata_bytes = compress(kind, block, metadata)?;
        let footer_bytes = compress(kind, block, &self.footer.encode_to_vec())?;
        let postscript = proto::PostScript {
            footer_length: Some(footer_bytes.len() as u64),
            compression: Some(kind.to_proto()),
            // Written even where the first input left them to their defaults: same meaning.
            compression_block_size: Some(block),
            version: self.file_version.to_vec(),
            metadata_length: Some(metadata_bytes.len() as u64),
            writer_version: Some(self.writer_version),
            stripe_statistics_length: None,
            magic: Some("ORC".into()),
        };
        let ps_bytes = postscript.encode_to_vec();
        let ps_len = u8::try_from(ps_bytes.len())
            .map_err(|_| OrcError::Plan(format!("PostScript of {} bytes", ps_bytes.len())))?;

        let mut out =
            BytesMut::with_capacity(metadata_bytes.len() + footer_bytes.len() + ps_bytes.len() + 1);
        out.extend_from_slice(&metadata_bytes);
        out.extend_from_slice(&footer_bytes);
        out.extend_from_slice(&ps_bytes);
        out.extend_from_slice(&[ps_len]);
        Ok(out.freeze())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::orc::tail::read::{read_tail, read_tail_with_statistics};
    use crate::orc::testutil::{block_on, MemFile, VecSink, ALL_TYPES_LZ4, MULTI_STRIPE_ZSTD};
    use crate::orc::verify::stripes::{verify_output, verify_tail};
    use crate::orc::{group_tails, plan_group, PlanOptions, VerifyFailure};
    use std::sync::Arc;

    /// An opener over in-memory files, as `write_merged` takes one.
    fn opener<'a>(
        files: &'a [&'a [u8]],
    ) -> impl Fn(usize) -> std::future::Ready<Result<MemFile, OrcError>> + 'a {
        move |i| std::future::ready(Ok(MemFile::new(files[i].to_vec())))
    }

    fn chunks(chunk_size: u64) -> ReadAhead {
        ReadAhead {
            chunk_size,
            ..ReadAhead::default()
        }
    }

    fn merge_copies(file: &[u8], copies: usize, chunk: u64) -> (Vec<u8>, MergedOutput, OutputPlan) {
        let reader = MemFile::new(file.to_vec());
        let tail = block_on(read_tail(&reader)).unwrap().unwrap();
        let tails: Vec<&OrcTail> = (0..copies).map(|_| &tail).collect();
        let grouping = group_tails(&tails);
        assert_eq!(grouping.groups.len(), 1);
        let plan = plan_group(&grouping.groups[0].files, &tails, &PlanOptions::default());
        assert_eq!(plan.outputs.len(), 1);
        let out = plan.outputs[0].clone();
        let inputs: Vec<&OrcTail> = out.inputs.iter().map(|&f| tails[f]).collect();
        let files: Vec<&[u8]> = out.inputs.iter().map(|_| file).collect();
        let mut sink = VecSink::default();
        let merged = block_on(write_merged(
            &out,
            &inputs,
            opener(&files),
            &mut sink,
            &chunks(chunk),
        ))
        .unwrap();
        assert!(
            sink.largest_write as u64 <= chunk.max(4096),
            "bounded writes"
        );
        (sink.data, merged, out)
    }

    fn with_statistics(file: Vec<u8>) -> (OrcTail, TailStatistics) {
        block_on(read_tail_with_statistics(&MemFile::new(file)))
            .unwrap()
            .unwrap()
    }

    /// A file's Metadata section decoded straight from its bytes.
    fn metadata_section(file: &[u8], tail: &OrcTail) -> Vec<proto::StripeStatistics> {
        let ps_len = usize::from(file[file.len() - 1]);
        let ps = proto::PostScript::decode(&file[file.len() - 1 - ps_len..file.len() - 1]).unwrap();
        let end = file.len() - 1 - ps_len - ps.footer_length.unwrap() as usize;
        let start = end - ps.metadata_length.unwrap_or(0) as usize;
        let plain = crate::orc::encoding::compress::decompress(
            tail.compression,
            tail.compression_block_size,
            &file[start..end],
            "Metadata",
        )
        .unwrap();
        proto::Metadata::decode(plain.as_slice())
            .unwrap()
            .stripe_stats
    }

    /// The stored entries, each encoded as a field 1, are the message encoded whole.
    #[test]
    fn metadata_encoded_entry_by_entry_is_the_whole_message() {
        let (_, statistics) = with_statistics(MULTI_STRIPE_ZSTD.to_vec());
        let stripe_stats = statistics.stripe_statistics().unwrap();
        assert!(stripe_stats.len() > 1);
        let mut streamed = Vec::new();
        for entry in statistics.stripe_entries() {
            prost::encoding::bytes::encode(1, entry, &mut streamed);
        }
        assert_eq!(streamed, proto::Metadata { stripe_stats }.encode_to_vec());
    }

    /// Stripe statistics folded one input at a time are the inputs' entries in stripe order,
    /// identical to those decoded whole from each input's Metadata section.
    #[test]
    fn output_stripe_statistics_are_the_inputs_in_order() {
        for file in [ALL_TYPES_LZ4, MULTI_STRIPE_ZSTD] {
            let (input, statistics) = with_statistics(file.to_vec());
            let decoded = metadata_section(file, &input);
            assert_eq!(decoded.len(), input.stripes.len());
            assert_eq!(statistics.stripe_statistics().unwrap(), decoded);
            let (bytes, _, _) = merge_copies(file, 3, 4096);
            let (_, output) = with_statistics(bytes);
            let expected: Vec<_> = (0..3).flat_map(|_| decoded.clone()).collect();
            assert_eq!(output.stripe_statistics().unwrap(), expected);
        }
    }

    #[test]
    fn merged_output_reads_back_and_verifies() {
        for file in [ALL_TYPES_LZ4, MULTI_STRIPE_ZSTD] {
            let (bytes, merged, plan) = merge_copies(file, 3, 100);
            assert_eq!(merged.length, bytes.len() as u64);
            let reader = MemFile::new(bytes.clone());
            let (tail, statistics) = with_statistics(bytes);
            let (input, input_statistics) = with_statistics(file.to_vec());
            assert_eq!(tail.rows, 3 * input.rows);
            assert_eq!(tail.stripes.len(), 3 * input.stripes.len());
            assert_eq!(statistics.stripe_entries().len(), tail.stripes.len());
            assert_eq!(tail.compression, input.compression);
            assert_eq!(tail.writer_version, input.writer_version);
            assert_eq!(tail.footer.software_version, input.footer.software_version);
            assert_eq!(
                statistics.file[0].number_of_values,
                Some(3 * input_statistics.file[0].number_of_values.unwrap())
            );
            block_on(verify_output(&plan, &merged, &tail, &reader, &chunks(64))).unwrap();
            block_on(verify_tail(&plan, &merged, &tail, &reader)).unwrap();
        }
    }

    #[test]
    fn verification_catches_a_changed_byte_and_wrong_checksums() {
        let (mut bytes, merged, plan) = merge_copies(MULTI_STRIPE_ZSTD, 2, 1 << 20);
        let reader = MemFile::new(bytes.clone());
        let tail = block_on(read_tail(&reader)).unwrap().unwrap();
        let mut wrong = merged.clone();
        wrong.stripe_checksums[1].xxh3 ^= 1;
        assert!(matches!(
            block_on(verify_output(
                &plan,
                &wrong,
                &tail,
                &reader,
                &chunks(1 << 20)
            )),
            Err(OrcError::Verify(VerifyFailure::Checksum { stripe: 1, .. }))
        ));
        bytes[10] ^= 0xff;
        let reader = MemFile::new(bytes);
        assert!(matches!(
            block_on(verify_output(
                &plan,
                &merged,
                &tail,
                &reader,
                &chunks(1 << 20)
            )),
            Err(OrcError::Verify(VerifyFailure::Checksum { stripe: 0, .. }))
        ));
        // The tail level reads no stripe bytes: a changed stripe byte is not its to find (the
        // in-process check and HDFS's write checksums are), but the layout is.
        block_on(verify_tail(&plan, &merged, &tail, &reader)).unwrap();
        let mut short = plan.clone();
        short.rows += 1;
        assert!(matches!(
            block_on(verify_output(
                &short,
                &merged,
                &tail,
                &reader,
                &chunks(1 << 20)
            )),
            Err(OrcError::Verify(VerifyFailure::Rows { .. }))
        ));
        assert!(matches!(
            block_on(verify_tail(&short, &merged, &tail, &reader)),
            Err(OrcError::Verify(VerifyFailure::Rows { .. }))
        ));
        let mut moved = plan.clone();
        moved.stripes[1].output_offset += 1;
        assert!(matches!(
            block_on(verify_tail(&moved, &merged, &tail, &reader)),
            Err(OrcError::Verify(VerifyFailure::StripeLayout {
                stripe: 1,
                ..
            }))
        ));
        let mut longer = merged.clone();
        longer.length += 1;
        assert!(matches!(
            block_on(verify_tail(&plan, &longer, &tail, &reader)),
            Err(OrcError::Verify(VerifyFailure::Length { .. }))
        ));
    }

    #[test]
    fn an_input_of_another_length_than_planned_is_a_change() {
        let reader = MemFile::new(MULTI_STRIPE_ZSTD.to_vec());
        let a = block_on(read_tail(&reader)).unwrap().unwrap();
        let plan = plan_group(&[0, 1], &[&a, &a], &PlanOptions::default())
            .outputs
            .remove(0);
        let mut longer = MULTI_STRIPE_ZSTD.to_vec();
        longer.push(0);
        let files: [&[u8]; 2] = [MULTI_STRIPE_ZSTD, &longer];
        let err = block_on(write_merged(
            &plan,
            &[&a, &a],
            opener(&files),
            &mut VecSink::default(),
            &ReadAhead::default(),
        ));
        assert!(matches!(err, Err(OrcError::Changed(_))), "{err:?}");
    }

    #[test]
    fn mismatched_plans_and_inputs_are_refused_before_writing() {
        let reader = MemFile::new(MULTI_STRIPE_ZSTD.to_vec());
        let a = block_on(read_tail(&reader)).unwrap().unwrap();
        let other = MemFile::new(ALL_TYPES_LZ4.to_vec());
        let b = block_on(read_tail(&other)).unwrap().unwrap();
        let tails = [&a, &a];
        let plan = plan_group(&[0, 1], &tails, &PlanOptions::default())
            .outputs
            .remove(0);
        let mut sink = VecSink::default();
        let files: [&[u8]; 2] = [MULTI_STRIPE_ZSTD, ALL_TYPES_LZ4];
        let err = block_on(write_merged(
            &plan,
            &[&a, &b],
            opener(&files),
            &mut sink,
            &ReadAhead::default(),
        ));
        assert!(matches!(err, Err(OrcError::Plan(_))), "{err:?}");
        assert!(sink.data.is_empty());

        let mut conflicting = a.clone();
        Arc::make_mut(&mut conflicting.footer)
            .metadata
            .push(proto::UserMetadataItem {
                name: Some("k".into()),
                value: Some(b"1".to_vec()),
            });
        let mut conflicting2 = a.clone();
        Arc::make_mut(&mut conflicting2.footer)
            .metadata
            .push(proto::UserMetadataItem {
                name: Some("k".into()),
                value: Some(b"2".to_vec()),
            });
        let files: [&[u8]; 2] = [MULTI_STRIPE_ZSTD, MULTI_STRIPE_ZSTD];
        let err = block_on(write_merged(
            &plan,
            &[&conflicting, &conflicting2],
            opener(&files),
            &mut sink,
            &ReadAhead::default(),
        ));
        assert!(matches!(err, Err(OrcError::Incompatible(_))), "{err:?}");
        assert!(sink.data.is_empty());
    }
}
