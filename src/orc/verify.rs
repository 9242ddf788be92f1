//! Verifying a written output against its plan, from bytes read back from storage.

use xxhash_rust::xxh3::Xxh3;

use super::error::{OrcError, VerifyFailure};
use super::io::{read_checked, RangeRead};
use super::merge::MergedOutput;
use super::plan::OutputPlan;
use super::tail::OrcTail;
use super::ORC_MAGIC;

/// Checks an output after it was written: `tail` is its tail re-read (with [`read_tail`]) from
/// where it now lives, `reader` reads it from there too.
///
/// Passing proves the output holds the planned rows, in the planned stripes at the planned
/// offsets, that the stripes and the tail cover the file exactly, and that every stripe's
/// bytes hash to what was read from its input. It decodes no values: a byte-identical stripe
/// needs no decoder to be trusted (see field-notes.md on decoder bugs).
///
/// [`read_tail`]: super::read_tail
pub async fn verify_output<R: RangeRead>(
    plan: &OutputPlan,
    merged: &MergedOutput,
    tail: &OrcTail,
    reader: &R,
    chunk_size: u64,
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
    let chunk = chunk_size.max(1);
    for (i, stripe) in tail.stripes.iter().enumerate() {
        let mut hasher = Xxh3::new();
        let mut pos = stripe.offset;
        while pos < stripe.end() {
            let next = stripe.end().min(pos + chunk);
            hasher.update(&read_checked(reader, pos..next, tail.file_length, "stripe").await?);
            pos = next;
        }
        let found = hasher.digest();
        let expected = merged.stripe_checksums[i].xxh3;
        if found != expected {
            return fail(VerifyFailure::Checksum {
                stripe: i,
                expected,
                found,
            });
        }
    }
    Ok(())
}
