//! The re-encoding writer: inputs decoded row by row and written as one new file by
//! [`OrcWriter`], in stripes of the size asked for, with an order-sensitive digest of every
//! column taken on the way ([`reencode`]); `read_back.rs` proves the new file holds those
//! values.
//!
//! Memory: the decoders opened ahead hold at most a small first stripe each (`ReadAhead`'s
//! `bytes_in_flight` shared among its `opens_in_flight`) and the end of their file read when
//! it was opened (a file of up to 1 MiB whole, see `Prefetched`); the one being read holds one
//! stripe and one decoded batch, and a few more wait for the writer, for each input decoded at
//! once; the writer holds the batch it encodes and one output stripe.

use std::future::Future;

use arrow::record_batch::RecordBatch;
use tokio::sync::mpsc;

use crate::orc::encoding::timestamp::Zone;
use crate::orc::error::{OrcError, VerifyFailure};
use crate::orc::io::copy::{ReadAhead, Task};
use crate::orc::io::storage::{RangeRead, Sink};
use crate::orc::reencode::inputs::{as_written, decode_ahead, next_decoding};
use crate::orc::reencode::write::{OrcWriter, WriterOptions};
use crate::orc::statistics::check::contradictions;
use crate::orc::statistics::fold::StatisticsFold;
use crate::orc::tail::orc_tail::OrcTail;
use crate::orc::verify::value_hash::{Digester, Digests};

/// What a re-encoded file holds, as written.
#[derive(Clone, Debug)]
pub struct ReencodedOutput {
    pub length: u64,
    pub stripes: usize,
    /// The inputs' rows and column digests, as decoded: what the file must read back as.
    pub digests: Digests,
}

impl ReencodedOutput {
    /// The output's tail, read back, against what the writer reported and the plan's rows.
    pub fn check_tail(&self, tail: &OrcTail, planned_rows: u64) -> Result<(), OrcError> {
        let failure = if tail.file_length != self.length {
            VerifyFailure::Length {
                expected: self.length,
                found: tail.file_length,
            }
        } else if tail.rows != planned_rows {
            VerifyFailure::Rows {
                expected: planned_rows,
                found: tail.rows,
            }
        } else if tail.stripes.len() != self.stripes {
            VerifyFailure::StripeCount {
                expected: self.stripes,
                found: tail.stripes.len(),
            }
        } else {
            return Ok(());
        };
        Err(failure.into())
    }
}

/// Decodes the files of `tails`, in order, and writes their rows to `sink` as one ORC file
/// shaped by `options` (its bloom filter columns are those of the first input's first stripe).
/// `open(i)` opens input `i` a few inputs ahead, in a task of its own (see [`ReadAhead`]);
/// `threads` inputs beyond the one being written are decoded at once (see [`decode_ahead`]).
///
/// Values orc-rust cannot decode, or the writer cannot write, are [`OrcError::Decode`] or
/// [`OrcError::Unsupported`]; an input whose decoded rows are not its footer's count is
/// [`OrcError::Decode`] too. The caller closes the sink (also after an error).
pub async fn reencode<R, O, F, S>(
    tails: &[&OrcTail],
    open: O,
    sink: &mut S,
    mut options: WriterOptions,
    read_ahead: &ReadAhead,
    threads: usize,
) -> Result<ReencodedOutput, OrcError>
where
    R: RangeRead + Send + 'static,
    O: Fn(usize) -> F,
    F: Future<Output = Result<R, OrcError>> + Send + 'static,
    S: Sink,
{
    let (driver, mut decodings) = decode_ahead(tails, open, read_ahead, threads, None);
    let rows: Vec<u64> = tails.iter().map(|t| t.rows).collect();
    // Here, in input order: each batch encoded (its columns at once) while a task of its own
    // digests it (likewise) and the inputs ahead decode in theirs.
    let write = async move {
        let first = next_decoding(&mut decodings).await?;
        options.bloom_filter_columns = first.bloom_columns.clone().unwrap_or_default();
        let mut digester = Digester::new(&first.schema);
        let (to_digest, mut digesting) = mpsc::channel::<(RecordBatch, Option<Zone>)>(2);
        let digested = Task::spawn(async move {
            while let Some((batch, zone)) = digesting.recv().await {
                digester.update(&batch, zone.as_ref())?;
            }
            Ok::<_, OrcError>(digester)
        });
        let mut recorded = StatisticsFold::default();
        let mut writer = OrcWriter::new(sink, options).await?;
        let mut first = Some(first);
        for (i, expected) in rows.into_iter().enumerate() {
            let mut input = match first.take() {
                Some(first) => first,
                None => {
                    // Test builds pause here (`compact::reading-inputs`) once the first input
                    // is decoded, before the next is taken (inputs opened ahead have read
                    // their ends).
                    #[cfg(feature = "failpoints")]
                    if i == 1 {
                        fail::fail_point!("compact::reading-inputs");
                    }
                    next_decoding(&mut decodings).await?
                }
            };
            while let Some((batch, zone, _)) = input.next().await {
                if to_digest.send((batch.clone(), zone.clone())).await.is_err() {
                    // Only a failed digest closes its queue: its error is the one returned.
                    drop(to_digest);
                    digested.join().await?;
                    return Err(OrcError::Decode(
                        "the digest of the rows ended early".into(),
                    ));
                }
                if let Some(zone) = zone {
                    writer.set_zone(zone).await?;
                }
                writer.write_batch(&as_written(batch)?).await?;
            }
            recorded.add(&input.finish(i, expected).await?);
        }
        drop(to_digest);
        let digester = digested.join().await?;
        Ok::<_, OrcError>((writer, digester, recorded.finish()))
    };
    let driver = async {
        driver.await;
        Ok::<_, OrcError>(())
    };
    let ((), (writer, digester, recorded)) = tokio::try_join!(driver, write)?;
    let (written, _) = writer.finish().await?;
    // Independent of our decoder, `recorded`: what the original writers recorded about these
    // values. The table's own columns (the root's children): a union's count of non-null rows
    // checks the null rows the decoder read beside orc-rust.
    let types = &tails[0].footer.types;
    let roots = types.first().map_or(&[][..], |root| &root.subtypes[..]);
    let top_level: Vec<usize> = std::iter::once(0)
        .chain(roots.iter().map(|&t| t as usize))
        .collect();
    let wrong = contradictions(&recorded, &written.statistics, &top_level);
    if !wrong.is_empty() {
        return Err(OrcError::Decode(format!(
            "the decoded values contradict the inputs' recorded statistics: {}",
            wrong.join("; ")
        )));
    }
    let digests = digester.finish();
    if written.rows != digests.rows {
        return Err(OrcError::Decode(format!(
            "{} rows written, {} decoded",
            written.rows, digests.rows
        )));
    }
    Ok(ReencodedOutput {
        length: written.length,
        stripes: written.stripes,
        digests,
    })
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::orc::reencode::decode::Decoder;
    use crate::orc::reencode::read_back::digest_file;
    use crate::orc::tail::read::read_tail;
    use crate::orc::testutil::{
        block_on, MemFile, VecSink, ALL_TYPES_LZ4, CPP_BEFORE_1970_ZSTD, CPP_PRE1970_FRACTION,
        LA_TIMESTAMPS_ZLIB, MULTI_STRIPE_ZSTD,
    };

    fn tail(bytes: &'static [u8]) -> OrcTail {
        block_on(read_tail(&MemFile::new(bytes))).unwrap().unwrap()
    }

    /// Two copies of `input` re-encoded into one file: it reads back with the same digests,
    /// and in fewer stripes than the inputs had. Returns what was written, the digests read
    /// back and the file.
    fn reencode_twice(input: &'static [u8]) -> (ReencodedOutput, Digests, Vec<u8>) {
        let t = tail(input);
        let tails = [&t, &t];
        let mut sink = VecSink::default();
        let written = block_on(reencode(
            &tails,
            move |_| async move { Ok(MemFile::new(input)) },
            &mut sink,
            WriterOptions::from_tail(&t),
            &ReadAhead::default(),
            2,
        ))
        .unwrap();
        assert_eq!(written.length, sink.data.len() as u64);
        assert_eq!(written.digests.rows, 2 * t.rows);
        assert_eq!(written.stripes, 1, "one stripe of a few KiB");

        let out = MemFile::new(sink.data.clone());
        let out_tail = block_on(read_tail(&out)).unwrap().unwrap();
        assert_eq!(out_tail.rows, 2 * t.rows);
        let found = block_on(digest_file(out, &out_tail, 2)).unwrap();
        written.digests.check(&found).unwrap();

        // The digests are those of the inputs' values in order: one input digested twice.
        let mut once = Digester::new(
            &block_on(Decoder::open(MemFile::new(input), &t, 0))
                .unwrap()
                .schema(),
        );
        for _ in 0..2 {
            let mut d = block_on(Decoder::open(MemFile::new(input), &t, 0)).unwrap();
            while let Some(b) = block_on(d.next()).unwrap() {
                once.update(&b, d.zone()).unwrap();
            }
        }
        assert_eq!(once.finish(), written.digests);
        (written, found, sink.data)
    }

    #[test]
    fn every_type_reads_back_with_the_inputs_digests() {
        reencode_twice(ALL_TYPES_LZ4);
    }

    #[test]
    fn many_stripes_become_one() {
        assert!(tail(MULTI_STRIPE_ZSTD).stripes.len() > 1);
        reencode_twice(MULTI_STRIPE_ZSTD);
    }

    /// Plain timestamps stored in Los Angeles, 0001 to 9999: re-encoded, they keep their stored
    /// seconds and zone. orc-rust's own read (which turns them into wall clocks with chrono-tz)
    /// reads the output as it reads the input; and the bounds, unknown here, are left out.
    #[test]
    fn timestamps_keep_their_stored_seconds_and_writer_time_zone() {
        use arrow::array::AsArray;
        use arrow::datatypes::Decimal128Type;
        let la = tail(LA_TIMESTAMPS_ZLIB);
        let (written, found, file) = reencode_twice(LA_TIMESTAMPS_ZLIB);
        let zone = Some("America/Los_Angeles".to_string());
        assert_eq!(written.digests.zones, vec![(zone, 2 * la.rows)]);
        let mut other = found.clone();
        other.zones[0].0 = Some("UTC".into());
        assert!(written.digests.check(&other).is_err(), "another zone fails");

        // The values as orc-rust's own read gives them, turned into wall clocks with its zone
        // database: the same numbers and zone give the same wall clocks.
        let wall_clocks = |bytes: Vec<u8>| -> Vec<Option<i128>> {
            let builder = orc_rust::ArrowReaderBuilder::try_new(bytes::Bytes::from(bytes)).unwrap();
            let wide = arrow::datatypes::Schema::new(vec![
                arrow::datatypes::Field::new("id", arrow::datatypes::DataType::Int64, true),
                arrow::datatypes::Field::new(
                    "ts",
                    arrow::datatypes::DataType::Decimal128(38, 9),
                    true,
                ),
            ]);
            let batches = builder.with_schema(Arc::new(wide)).build();
            batches
                .flat_map(|b| {
                    let b = b.unwrap();
                    let ts = b.column(1).as_primitive::<Decimal128Type>().clone();
                    ts.iter().collect::<Vec<_>>()
                })
                .collect()
        };
        let once = wall_clocks(LA_TIMESTAMPS_ZLIB.to_vec());
        assert_eq!(once.len(), 7);
        assert_eq!(wall_clocks(file.clone()), [once.clone(), once].concat());

        let (_, statistics) = block_on(crate::orc::tail::read::read_tail_with_statistics(
            &MemFile::new(file),
        ))
        .unwrap()
        .unwrap();
        let ts = &statistics.file[2];
        assert_eq!(ts.number_of_values, Some(12), "{ts:?}");
        assert!(ts.timestamp_statistics.is_none(), "no bounds: {ts:?}");
    }

    /// Times before 1970 with fractions, which pyarrow stores with negative nanoseconds, are
    /// healed as they are decoded: the decoder reads the times pyarrow wrote (as ORC C++ reads
    /// them back), and the output stores them in the standard layout, which orc-rust's own
    /// read (the same rule as ORC Java's and ORC C++'s since ORC-763) reads as those times.
    #[test]
    fn negative_nanoseconds_before_1970_are_healed() {
        use arrow::array::AsArray;
        use arrow::datatypes::Decimal128Type;
        let expected: Vec<Option<i128>> = [
            Some(-2_208_988_799_500_000_000),
            Some(-616_975_199_876_543_211),
            Some(-172_800_750_000_000),
            Some(946_684_800_000_000_000),
            None,
        ]
        .repeat(40);
        let t = tail(CPP_BEFORE_1970_ZSTD);
        let decimals = |bytes: Vec<u8>, t: &OrcTail| -> Vec<Option<i128>> {
            let mut d = block_on(Decoder::open(MemFile::new(bytes), t, 0)).unwrap();
            let mut out = vec![];
            while let Some(b) = block_on(d.next()).unwrap() {
                out.extend(b.column(1).as_primitive::<Decimal128Type>().iter());
            }
            out
        };
        assert_eq!(decimals(CPP_BEFORE_1970_ZSTD.to_vec(), &t), expected);
        let (written, _, file) = reencode_twice(CPP_BEFORE_1970_ZSTD);
        assert_eq!(written.digests.rows, 400);
        let out = block_on(read_tail(&MemFile::new(file.clone())))
            .unwrap()
            .unwrap();
        assert_eq!(decimals(file.clone(), &out), expected.repeat(2));
        // orc-rust alone, as Timestamp(ns), without our decoder's healing or zone handling.
        let plain: Vec<Option<i64>> =
            orc_rust::ArrowReaderBuilder::try_new(bytes::Bytes::from(file))
                .unwrap()
                .build()
                .flat_map(|b| {
                    let b = b.unwrap();
                    let ts = b
                        .column(1)
                        .as_primitive::<arrow::datatypes::TimestampNanosecondType>();
                    ts.iter().collect::<Vec<_>>()
                })
                .collect();
        let want: Vec<Option<i64>> = expected.iter().map(|v| v.map(|v| v as i64)).collect();
        assert_eq!(plain, want.repeat(2));
    }

    /// pyarrow stores a pre-1970 time with a fraction of a second with negative nanoseconds
    /// (1969-12-31 23:59:59.5 as second 0 and -0.5 s): a time within the second before 1970,
    /// which the standard layout cannot hold, is not healed, so the decoder stops with a reason
    /// that names the column, and the group is copied. Times further back are healed: see
    /// `timestamp` and the integration test `cpp_timestamps_before_1970_with_fractions_...`.
    #[test]
    fn nanoseconds_out_of_range_near_1970_stop_the_decoder() {
        let t = tail(CPP_PRE1970_FRACTION);
        let mut d = block_on(Decoder::open(MemFile::new(CPP_PRE1970_FRACTION), &t, 0)).unwrap();
        let e = block_on(d.next()).unwrap_err();
        assert!(matches!(e, OrcError::Decode(_)), "{e}");
        let message = e.to_string();
        assert!(message.contains("column 1, a timestamp"), "{message}");
        assert!(message.contains("the second before 1970"), "{message}");
    }

    #[test]
    fn an_input_unlike_its_planned_tail_is_a_change() {
        let mut t = tail(MULTI_STRIPE_ZSTD);
        t.rows += 1;
        let mut sink = VecSink::default();
        let e = block_on(reencode(
            &[&t],
            |_| async { Ok(MemFile::new(MULTI_STRIPE_ZSTD)) },
            &mut sink,
            WriterOptions::from_tail(&t),
            &ReadAhead::default(),
            2,
        ))
        .unwrap_err();
        assert!(matches!(e, OrcError::Changed(_)), "{e}");
    }
}
