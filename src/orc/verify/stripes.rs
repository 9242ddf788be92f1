//! Verifying a written output against its plan, from bytes read back from storage.

use crate::orc::error::{OrcError, VerifyFailure};
use crate::orc::io::copy::{copy_pieces, Discard, Piece, ReadAhead};
use crate::orc::io::storage::{read_checked, RangeRead};
use crate::orc::merge::plan::OutputPlan;
use crate::orc::merge::writer::MergedOutput;
use crate::orc::tail::orc_tail::OrcTail;
use crate::orc::tail::orc_tail::ORC_MAGIC;

/// Checks an output after it was written: `tail` is its tail re-read (with [`read_tail`]) from
/// where it now lives, `reader` reads it from there too (an `Arc` of a reader will do: the
/// stripes are read back by spawned tasks, which share it).
///
/// Passing proves the output holds the planned rows, in the planned stripes at the planned
/// offsets, that the stripes and the tail cover the file exactly, and that every stripe's
/// bytes, read back, hash to what was handed to the writer (itself proven equal to what was
/// read from the input while copying). It decodes no values: a byte-identical stripe needs no
/// decoder to be trusted (docs/design/orc-merge.md, "Verification", says why). The stripes are read back with
/// the same bounded read-ahead as the copy.
///
/// [`read_tail`]: crate::orc::tail::read::read_tail
pub async fn verify_output<R: RangeRead + Clone + Send + 'static>(
    plan: &OutputPlan,
    merged: &MergedOutput,
    tail: &OrcTail,
    reader: &R,
    opts: &ReadAhead,
) -> Result<(), OrcError> {
    verify_tail(plan, merged, tail, reader).await?;
    let pieces: Vec<Piece> = tail
        .stripes
        .iter()
        .map(|s| Piece {
            source: 0,
            range: s.offset..s.end(),
        })
        .collect();
    let found = copy_pieces(
        &pieces,
        &[tail.file_length],
        |_| std::future::ready(Ok(reader.clone())),
        &mut Discard,
        opts,
    )
    .await?;
    for (i, (found, sum)) in found.into_iter().zip(&merged.stripe_checksums).enumerate() {
        if found != sum.xxh3 {
            return Err(OrcError::Verify(VerifyFailure::Checksum {
                stripe: i,
                expected: sum.xxh3,
                found,
            }));
        }
    }
    Ok(())
}

/// The part of [`verify_output`] that reads only the output's tail (and its 3-byte header):
/// length, rows, stripe count, offsets, lengths and rows per stripe as planned, stripes and
/// tail covering the file exactly, and a checksum entry for every stripe. It proves the layout
/// of what landed, not its stripe bytes: those rest on the in-process check of the copy (the
/// bytes handed to the writer are the bytes read) and on the storage's own checksums on the
/// way in (HDFS: CRC32C per 512 bytes, computed by the client, verified by the DataNode).
pub async fn verify_tail<R: RangeRead>(
    plan: &OutputPlan,
    merged: &MergedOutput,
    tail: &OrcTail,
    reader: &R,
) -> Result<(), OrcError> {
    let fail = |f: VerifyFailure| Err(OrcError::Verify(f));
    if tail.file_length != merged.length {
        return fail(VerifyFailure::Length {
            expected: merged.length,
            found: tail.file_length,
        });
    }
    if tail.rows != plan.rows || merged.rows != plan.rows {
        return fail(VerifyFailure::Rows {
            expected: plan.rows,
            found: tail.rows,
        });
    }
    if tail.stripes.len() != plan.stripes.len() {
        return fail(VerifyFailure::StripeCount {
            expected: plan.stripes.len(),
            found: tail.stripes.len(),
        });
    }
    if merged.stripe_checksums.len() != plan.stripes.len() {
        return fail(VerifyFailure::Checksums(format!(
            "{} checksums for {} stripes",
            merged.stripe_checksums.len(),
            plan.stripes.len()
        )));
    }

    let mut expected_offset = ORC_MAGIC.len() as u64;
    for (i, (planned, found)) in plan.stripes.iter().zip(&tail.stripes).enumerate() {
        let layout = |what, expected, found| {
            Err(OrcError::Verify(VerifyFailure::StripeLayout {
                stripe: i,
                what,
                expected,
                found,
            }))
        };
        if found.offset != planned.output_offset {
            return layout("offset", planned.output_offset, found.offset);
        }
        if found.length() != planned.length {
            return layout("length", planned.length, found.length());
        }
        if found.rows != planned.rows {
            return layout("rows", planned.rows, found.rows);
        }
        if found.offset != expected_offset {
            return fail(VerifyFailure::Coverage(format!(
                "stripe {i} starts at {}, the previous data ends at {expected_offset}",
                found.offset
            )));
        }
        expected_offset = found.end();
        let sum = &merged.stripe_checksums[i];
        if sum.output_stripe != i
            || sum.input != planned.input
            || sum.input_stripe != planned.input_stripe
            || sum.length != planned.length
        {
            return fail(VerifyFailure::Checksums(format!(
                "entry {i} describes another stripe than the plan"
            )));
        }
    }
    if expected_offset != tail.content_end() || expected_offset != plan.content_length {
        return fail(VerifyFailure::Coverage(format!(
            "stripes end at {expected_offset}, the tail starts at {} (planned {})",
            tail.content_end(),
            plan.content_length
        )));
    }

    let header = read_checked(
        reader,
        0..ORC_MAGIC.len() as u64,
        tail.file_length,
        "header",
    )
    .await?;
    if header.as_ref() != ORC_MAGIC.as_slice() {
        return fail(VerifyFailure::Coverage(
            "the file does not start with \"ORC\"".into(),
        ));
    }
    Ok(())
}
