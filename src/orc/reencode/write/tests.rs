//! End-to-end: files written by Java ORC decoded with orc-rust, re-encoded with our writer,
//! decoded again, value for value; and synthetic data that reaches every encoding.

use std::sync::Arc;

use arrow::array::Array;
use arrow::array::{
    ArrayRef, BinaryArray, BooleanArray, Date32Array, Decimal128Array, Float64Array, Int16Array,
    Int32Array, Int64Array, Int8Array, StringArray, TimestampNanosecondArray,
};
use arrow::compute::concat;
use arrow::datatypes::{Field, Schema};
use arrow::record_batch::RecordBatch;
use bytes::Bytes;
use orc_rust::proto::{self, r#type::Kind as TypeKind};
use orc_rust::ArrowReaderBuilder;

use super::{OrcWriter, WriterOptions};
use crate::orc::encoding::compress::Compression;
use crate::orc::encoding::timestamp::Zone;
use crate::orc::reencode::decode::Decoder;
use crate::orc::tail::orc_tail::{OrcTail, TailStatistics};
use crate::orc::tail::read::{read_tail, read_tail_with_statistics};
use crate::orc::testutil::{block_on, MemFile, VecSink, ALL_TYPES_LZ4, MULTI_STRIPE_ZSTD};

fn decode(file: &[u8], batch_size: usize) -> Vec<RecordBatch> {
    ArrowReaderBuilder::try_new(Bytes::copy_from_slice(file))
        .expect("orc-rust opens the file")
        .with_batch_size(batch_size)
        .build()
        .collect::<Result<Vec<_>, _>>()
        .expect("orc-rust decodes the file")
}

/// Each column's values over all batches. (orc-rust marks a field nullable only when its
/// batch has nulls, so batches of one file may disagree on their schema.)
fn columns(batches: &[RecordBatch]) -> Vec<ArrayRef> {
    (0..batches[0].num_columns())
        .map(|i| {
            let parts: Vec<&dyn Array> = batches.iter().map(|b| b.column(i).as_ref()).collect();
            concat(&parts).unwrap()
        })
        .collect()
}

fn write(options: WriterOptions, batches: &[RecordBatch]) -> Vec<u8> {
    block_on(async {
        let mut writer = OrcWriter::new(VecSink::default(), options).await.unwrap();
        for b in batches {
            writer.write_batch(b).await.unwrap();
        }
        let (written, sink) = writer.finish().await.unwrap();
        assert_eq!(written.length, sink.data.len() as u64);
        sink.data
    })
}

fn options_like(input: &[u8]) -> WriterOptions {
    let tail = block_on(read_tail(&MemFile::new(input.to_vec())));
    WriterOptions::from_tail(&tail.unwrap().unwrap())
}

/// The statistics a reader can compare across writers: everything but bytes on disk, and
/// collection statistics (Java 1.9 records child counts wrongly).
fn comparable(stats: &[proto::ColumnStatistics]) -> Vec<proto::ColumnStatistics> {
    stats
        .iter()
        .map(|s| proto::ColumnStatistics {
            bytes_on_disk: None,
            collection_statistics: None,
            ..s.clone()
        })
        .collect()
}

/// `file` decoded by our decoder (null union rows marked, timestamps as stored), its batches
/// cut to at most `batch_size` rows, each with its stripe's writer time zone.
fn decode_as_stored(file: &[u8], batch_size: usize) -> Vec<(RecordBatch, Option<Zone>)> {
    block_on(async {
        let tail = read_tail(&MemFile::new(file.to_vec()))
            .await
            .unwrap()
            .unwrap();
        let mut decoder = Decoder::open(MemFile::new(file.to_vec()), &tail, 0)
            .await
            .unwrap();
        let mut out = vec![];
        while let Some(batch) = decoder.next().await.unwrap() {
            for at in (0..batch.num_rows()).step_by(batch_size) {
                let rows = batch_size.min(batch.num_rows() - at);
                out.push((batch.slice(at, rows), decoder.zone().cloned()));
            }
        }
        out
    })
}

/// Re-encodes `input` as the compactor does, and checks that our decoder reads the output as
/// it read the input.
fn round_trip(input: &[u8], batch_size: usize, tweak: impl Fn(&mut WriterOptions)) -> Vec<u8> {
    let batches = decode_as_stored(input, batch_size);
    let mut options = options_like(input);
    tweak(&mut options);
    let output = block_on(async {
        let mut writer = OrcWriter::new(VecSink::default(), options).await.unwrap();
        for (batch, zone) in &batches {
            if let Some(zone) = zone {
                writer.set_zone(zone.clone()).await.unwrap();
            }
            writer.write_batch(batch).await.unwrap();
        }
        let (_, sink) = writer.finish().await.unwrap();
        sink.data
    });
    let only = |b: Vec<(RecordBatch, Option<Zone>)>| b.into_iter().map(|(b, _)| b).collect();
    let (back, went_in): (Vec<RecordBatch>, Vec<RecordBatch>) =
        (only(decode_as_stored(&output, 1024)), only(batches));
    assert_eq!(columns(&back), columns(&went_in));
    output
}

#[test]
fn java_all_types_file_round_trips_with_equal_statistics() {
    let output = round_trip(ALL_TYPES_LZ4, 2, |_| {});
    let (ours, our_statistics) = with_statistics(output);
    let (theirs, their_statistics) = with_statistics(ALL_TYPES_LZ4.to_vec());
    assert_eq!(ours.footer.types, theirs.footer.types);
    assert_eq!(ours.compression, Compression::Lz4);
    assert_eq!(ours.writer, 0);
    let (ours, theirs) = (
        comparable(&our_statistics.file),
        comparable(&their_statistics.file),
    );
    for (i, (a, b)) in ours.iter().zip(&theirs).enumerate() {
        assert_eq!(a, b, "column {i}");
    }
}

#[test]
fn java_multi_stripe_file_round_trips() {
    let output = round_trip(MULTI_STRIPE_ZSTD, 1000, |o| o.stripe_size = 4096);
    let (ours, our_statistics) = with_statistics(output);
    let (_, their_statistics) = with_statistics(MULTI_STRIPE_ZSTD.to_vec());
    assert!(ours.stripes.len() > 1);
    assert_eq!(
        comparable(&our_statistics.file),
        comparable(&their_statistics.file)
    );
}

fn with_statistics(file: Vec<u8>) -> (OrcTail, TailStatistics) {
    block_on(read_tail_with_statistics(&MemFile::new(file)))
        .unwrap()
        .unwrap()
}

fn ty(kind: TypeKind) -> proto::Type {
    proto::Type {
        kind: Some(kind as i32),
        ..Default::default()
    }
}

/// Columns whose values reach every integer sub-encoding, both string encodings, nulls in
/// some stripes only, and values at the types' limits.
fn synthetic(rows: usize) -> (Vec<proto::Type>, RecordBatch) {
    let n = rows as i64;
    let ints: Vec<Option<i64>> = (0..n)
        .map(|i| match (i / 600) % 5 {
            0 => Some(7),                                               // repeats
            1 => Some(i * 3),                                           // delta
            2 => Some(if i % 50 == 0 { i64::MAX - i } else { i % 13 }), // patched base
            3 => Some((i * 7919) % 1_000_003 - 500_000),                // direct
            _ => (i % 3 != 0).then_some(i64::MIN + i),
        })
        .collect();
    let names = [
        "b", "t", "si", "i", "l", "d", "few", "many", "bin", "dec", "dt", "ts",
    ];
    let kinds = [
        TypeKind::Boolean,
        TypeKind::Byte,
        TypeKind::Short,
        TypeKind::Int,
        TypeKind::Long,
        TypeKind::Double,
        TypeKind::String,
        TypeKind::Varchar,
        TypeKind::Binary,
        TypeKind::Decimal,
        TypeKind::Date,
        TypeKind::Timestamp,
    ];
    let mut root = ty(TypeKind::Struct);
    root.subtypes = (1..=kinds.len() as u32).collect();
    root.field_names = names.iter().map(|s| s.to_string()).collect();
    let mut types = vec![root];
    for k in kinds {
        let mut t = ty(k);
        if k == TypeKind::Decimal {
            t.precision = Some(38);
            t.scale = Some(6);
        }
        if k == TypeKind::Varchar {
            t.maximum_length = Some(100);
        }
        types.push(t);
    }
    let columns: Vec<ArrayRef> = vec![
        Arc::new(BooleanArray::from_iter(
            (0..n).map(|i| (i % 7 != 0).then_some(i % 3 == 0)),
        )),
        Arc::new(Int8Array::from_iter(
            (0..n).map(|i| Some((i % 256 - 128) as i8)),
        )),
        Arc::new(Int16Array::from_iter((0..n).map(|i| Some((i * 31) as i16)))),
        Arc::new(Int32Array::from_iter(
            ints.iter().map(|v| v.map(|v| v as i32)),
        )),
        Arc::new(Int64Array::from(ints.clone())),
        Arc::new(Float64Array::from_iter(
            (0..n).map(|i| (i % 11 != 0).then_some(i as f64 / 3.0)),
        )),
        Arc::new(StringArray::from_iter(
            (0..n).map(|i| (i % 5 != 0).then(|| format!("city-{}", i % 20))),
        )),
        Arc::new(StringArray::from_iter_values(
            (0..n).map(|i| format!("id-{i}-é")),
        )),
        Arc::new(BinaryArray::from_iter(
            (0..n).map(|i| (i % 4 != 0).then(|| i.to_le_bytes().to_vec())),
        )),
        Arc::new(
            Decimal128Array::from_iter((0..n).map(|i| {
                Some(
                    i128::from(i)
                        * 1_000_000_007
                        * if i % 2 == 0 { -1 } else { 1 }
                        * 10i128.pow(20),
                )
            }))
            .with_precision_and_scale(38, 6)
            .unwrap(),
        ),
        Arc::new(Date32Array::from_iter(
            (0..n).map(|i| Some((i - n / 2) as i32 * 3)),
        )),
        Arc::new(TimestampNanosecondArray::from_iter((0..n).map(|i| {
            // Whole seconds before 1970 (readers disagree about fractions there), any after.
            let base = (i - n / 2) * 86_417;
            Some(if base < 0 {
                base * 1_000_000_000
            } else {
                base * 1_000_000_000 + i * 1_001
            })
        }))),
    ];
    let fields: Vec<Field> = names
        .iter()
        .zip(&columns)
        .map(|(n, c)| Field::new(*n, c.data_type().clone(), true))
        .collect();
    let batch = RecordBatch::try_new(Arc::new(Schema::new(fields)), columns).unwrap();
    (types, batch)
}

#[test]
fn synthetic_columns_round_trip_through_every_codec_and_stripe_shape() {
    let (types, batch) = synthetic(12_345);
    for (codec, block) in [
        (Compression::None, 262_144),
        (Compression::Zlib, 1_000),
        (Compression::Snappy, 65_536),
        (Compression::Lz4, 4_096),
        (Compression::Zstd, 262_144),
    ] {
        for (stride, stripe_size) in [(1_000, 64 << 20), (0, 64 << 20), (777, 20_000)] {
            let mut o = WriterOptions::new(types.clone(), codec, block);
            o.row_index_stride = stride;
            o.stripe_size = stripe_size;
            o.bloom_filter_columns = vec![4, 7];
            let parts: Vec<RecordBatch> = (0..batch.num_rows())
                .step_by(1_500)
                .map(|s| batch.slice(s, 1_500.min(batch.num_rows() - s)))
                .collect();
            let output = write(o, &parts);
            let back = columns(&decode(&output, 999));
            for (i, (a, b)) in back.iter().zip(batch.columns()).enumerate() {
                assert_eq!(a, b, "{codec:?} stride {stride} column {}", i + 1);
            }
        }
    }
}

/// Prints the writer's throughput on the synthetic columns (12 columns, ZSTD, 64 MiB stripes).
/// A measurement, not a check: `cargo test --release --lib -- --ignored writer_throughput
/// --nocapture`.
#[test]
#[ignore]
fn writer_throughput() {
    let (types, batch) = synthetic(100_000);
    let rounds = 20;
    let mut o = WriterOptions::new(types, Compression::Zstd, 262_144);
    o.bloom_filter_columns = vec![4, 7];
    let start = std::time::Instant::now();
    let parts: Vec<RecordBatch> = (0..rounds).map(|_| batch.clone()).collect();
    let bytes = write(o, &parts).len();
    let secs = start.elapsed().as_secs_f64();
    let rows = (batch.num_rows() * rounds) as f64;
    eprintln!(
        "{rows} rows, {bytes} bytes in {secs:.2}s: {:.0} rows/s, {:.1} MB/s written",
        rows / secs,
        bytes as f64 / secs / 1e6
    );
}

/// The type tree `struct<ts:timestamp>` and its column as the decoder hands it over: a
/// `Decimal128(38, 9)` of nanoseconds marked TIMESTAMP_NANOS.
fn one_timestamp_column() -> (Vec<proto::Type>, Field) {
    use crate::orc::marks::TIMESTAMP_NANOS;
    let mut root = ty(TypeKind::Struct);
    root.subtypes = vec![1];
    root.field_names = vec!["ts".into()];
    let field = Field::new("ts", arrow::datatypes::DataType::Decimal128(38, 9), true)
        .with_metadata([(TIMESTAMP_NANOS.to_string(), String::new())].into());
    (vec![root, ty(TypeKind::Timestamp)], field)
}

/// Timestamps over every year ORC holds, as the decoder hands them over (nanoseconds since
/// 1970 in a decimal marked TIMESTAMP_NANOS), come back from our own file as they went in.
#[test]
fn timestamps_of_years_0001_to_9999_round_trip_as_decimal_nanos() {
    use crate::orc::marks::TIMESTAMP_NANOS;
    const S: i128 = 1_000_000_000;
    let values: Vec<Option<i128>> = vec![
        Some(-62_135_596_800 * S),              // 0001-01-01 00:00:00
        Some(-12_219_292_800 * S - 1),          // 1582-10-14 23:59:59.999999999
        Some(-2_208_988_800 * S + 123_456_789), // 1900-01-01 00:00:00.123456789
        Some(-2 * S + 999_999_999),             // 1969-12-31 23:59:58.999999999
        None,
        Some(0),
        Some(9_224_318_016 * S), // 2262-04-12 00:00:00 (past Timestamp(ns))
        Some(253_402_300_799 * S + 999_999_999), // 9999-12-31 23:59:59.999999999
    ];
    let (types, field) = one_timestamp_column();
    let array = Decimal128Array::from(values.clone())
        .with_precision_and_scale(38, 9)
        .unwrap();
    let batch =
        RecordBatch::try_new(Arc::new(Schema::new(vec![field])), vec![Arc::new(array)]).unwrap();
    let file = write(
        WriterOptions::new(types, Compression::Zlib, 65_536),
        &[batch],
    );
    let back = block_on(async {
        let mem = MemFile::new(file.clone());
        let tail = read_tail(&mem).await.unwrap().unwrap();
        let mut decoder = Decoder::open(mem, &tail, 1 << 20).await.unwrap();
        let schema = decoder.schema();
        assert!(schema.field(0).metadata().contains_key(TIMESTAMP_NANOS));
        let mut values = vec![];
        while let Some(b) = decoder.next().await.unwrap() {
            let column = b
                .column(0)
                .as_any()
                .downcast_ref::<Decimal128Array>()
                .unwrap();
            values.extend(column.iter());
        }
        values
    });
    assert_eq!(back, values);
    // The file's bounds are those of the values, in milliseconds.
    let (_, stats) = with_statistics(file);
    let ts = stats.file[1].timestamp_statistics.clone().unwrap();
    assert_eq!(ts.minimum_utc, Some(-62_135_596_800_000));
    assert_eq!(ts.maximum_utc, Some(253_402_300_799_999));
}

/// Rows of two writer time zones go to stripes of their own, each footer naming its zone;
/// plain timestamps keep their bounds only in the UTC stripe, and so the file has none.
#[test]
fn a_change_of_zone_starts_a_stripe_and_drops_the_bounds_it_cannot_know() {
    let (types, field) = one_timestamp_column();
    let schema = Arc::new(Schema::new(vec![field]));
    let batch = |v: i128| {
        let a = Decimal128Array::from(vec![Some(v), None])
            .with_precision_and_scale(38, 9)
            .unwrap();
        RecordBatch::try_new(Arc::clone(&schema), vec![Arc::new(a) as ArrayRef]).unwrap()
    };
    let file = block_on(async {
        let options = WriterOptions::new(types, Compression::Zstd, 65_536);
        let mut writer = OrcWriter::new(VecSink::default(), options).await.unwrap();
        writer.set_zone(Some("UTC".into())).await.unwrap();
        writer.write_batch(&batch(5_000_000_000)).await.unwrap();
        writer.set_zone(Some("Europe/Paris".into())).await.unwrap();
        writer.write_batch(&batch(7_000_000_000)).await.unwrap();
        writer.write_batch(&batch(8_000_000_000)).await.unwrap();
        let (written, sink) = writer.finish().await.unwrap();
        assert_eq!(written.stripes, 2);
        sink.data
    });
    let tail = block_on(read_tail(&MemFile::new(file.clone())))
        .unwrap()
        .unwrap();
    let zones: Vec<Option<String>> = tail
        .stripes
        .iter()
        .map(|s| {
            let at = (s.offset + s.index_length + s.data_length) as usize;
            let footer = &file[at..s.end() as usize];
            let footer = crate::orc::encoding::compress::decompress(
                Compression::Zstd,
                65_536,
                footer,
                "footer",
            )
            .unwrap();
            <proto::StripeFooter as prost::Message>::decode(footer.as_slice())
                .unwrap()
                .writer_timezone
        })
        .collect();
    assert_eq!(zones, [Some("UTC".into()), Some("Europe/Paris".into())]);
    let (_, stats) = with_statistics(file);
    let stripes = stats.stripe_statistics().unwrap();
    let utc = stripes[0].col_stats[1]
        .timestamp_statistics
        .clone()
        .unwrap();
    assert_eq!(utc.minimum_utc, Some(5_000));
    assert!(stripes[1].col_stats[1].timestamp_statistics.is_none());
    assert_eq!(stripes[1].col_stats[1].number_of_values, Some(2));
    assert!(stats.file[1].timestamp_statistics.is_none());
    assert_eq!(stats.file[1].number_of_values, Some(3));
}
