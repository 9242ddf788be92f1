//! Order-sensitive digests of decoded values: how a re-encoded output is proven to hold its
//! inputs' values, in their order, without byte-level checksums (its bytes are new).
//!
//! Each top-level column gets one XXH3-64 over a canonical byte form of its values, row after
//! row: a null is `0`; a value is `1` followed by its fixed-width little-endian bits (floats by
//! their bit pattern, so `-0.0`, `0.0` and every NaN stay distinct), a string or binary by its
//! length and bytes, a list or map by its length and then its elements, a struct by each field
//! in order, a union by its tag and then the value (a null union row by its tag alone, that of
//! the decoder's null-row variant). A timestamp is its nanoseconds since 1970 as
//! 8 bytes after a `1`, or, beyond what 64 bits hold (before 1677 or after 2262), as 16 bytes
//! after a `2`: in range, the same bytes whichever arrow type carried it, so digests journaled
//! when timestamps were decoded as `Timestamp(ns)` still check. The form is self-delimiting and depends on
//! nothing but the values, so the digest is the same however the rows are cut into batches or
//! stripes, and any change of a value, a null, or the order of rows changes it.
//!
//! Arrow's own canonical form, the row format (`arrow-row`), would do for most types but not
//! for unions, and it allocates each row; hashing arrow buffers directly would hash the bytes
//! behind null slots and depend on offsets and slicing.

use std::ops::Range;

use arrow::array::{Array, ArrayRef, AsArray, RecordBatch};
use arrow::datatypes::{
    DataType, Date32Type, Decimal128Type, Field, Float32Type, Float64Type, Int16Type, Int32Type,
    Int64Type, Int8Type, Schema, TimeUnit, TimestampMicrosecondType, TimestampMillisecondType,
    TimestampNanosecondType, TimestampSecondType,
};
use rayon::prelude::*;
use serde::{Deserialize, Serialize};
use xxhash_rust::xxh3::Xxh3;

use crate::orc::encoding::timestamp::Zone;
use crate::orc::encoding::PARALLEL_FROM_ROWS;
use crate::orc::error::{OrcError, VerifyFailure};
use crate::orc::marks::TIMESTAMP_NANOS;

/// The digest of one top-level column of one file.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ColumnDigest {
    pub column: String,
    /// XXH3-64 of the column's values in canonical form, row after row.
    pub xxh3: u64,
}

/// What a file's rows amount to: their number and one digest per top-level column.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Digests {
    pub rows: u64,
    pub columns: Vec<ColumnDigest>,
    /// For a file with plain timestamps, the writer time zone of its rows, as runs of (zone,
    /// rows) in row order: the stored values mean a wall clock only with their zone (see
    /// decode's module docs). Empty when the file has none, and in digests rebuilt from a
    /// journal, which does not keep them.
    pub zones: Vec<(Zone, u64)>,
}

impl Digests {
    /// Checks that `found` (read back) is what `self` (the inputs) says, rows first.
    pub fn check(&self, found: &Digests) -> Result<(), VerifyFailure> {
        if found.rows != self.rows {
            return Err(VerifyFailure::Rows {
                expected: self.rows,
                found: found.rows,
            });
        }
        if found.columns.len() != self.columns.len() {
            return Err(VerifyFailure::Coverage(format!(
                "{} columns read back, {} expected",
                found.columns.len(),
                self.columns.len()
            )));
        }
        for (want, got) in self.columns.iter().zip(&found.columns) {
            if want != got {
                return Err(VerifyFailure::Digest {
                    column: want.column.clone(),
                    expected: want.xxh3,
                    found: got.xxh3,
                });
            }
        }
        if !self.zones.is_empty() && found.zones != self.zones {
            return Err(VerifyFailure::Zones {
                expected: runs(&self.zones),
                found: runs(&found.zones),
            });
        }
        Ok(())
    }
}

/// Zone runs in a message: `UTC x 10, America/Los_Angeles x 5`.
fn runs(zones: &[(Zone, u64)]) -> String {
    let named = zones.iter().map(|(zone, rows)| {
        let zone = zone.as_deref().unwrap_or("(none)");
        format!("{zone} x {rows}")
    });
    named.collect::<Vec<_>>().join(", ")
}

/// Digests batches as they are decoded, in order.
pub struct Digester {
    zones: Vec<(Zone, u64)>,
    columns: Vec<ColumnHasher>,
    rows: u64,
}

/// One top-level column's running digest.
struct ColumnHasher {
    name: String,
    hasher: Xxh3,
    /// Whether it holds timestamps carried as decimals (marks::TIMESTAMP_NANOS).
    timestamp: bool,
    /// Its canonical bytes for one batch, reused.
    buffer: Vec<u8>,
}

impl ColumnHasher {
    fn update(&mut self, column: &ArrayRef) -> Result<(), OrcError> {
        self.buffer.clear();
        encode(
            column.as_ref(),
            self.timestamp,
            0..column.len(),
            &mut self.buffer,
            None,
        )?;
        self.hasher.update(&self.buffer);
        Ok(())
    }
}

impl Digester {
    /// A digester for batches of `schema`.
    pub fn new(schema: &Schema) -> Self {
        Digester {
            zones: Vec::new(),
            columns: schema
                .fields()
                .iter()
                .map(|f| ColumnHasher {
                    name: f.name().clone(),
                    hasher: Xxh3::new(),
                    timestamp: is_timestamp(f),
                    buffer: Vec::new(),
                })
                .collect(),
            rows: 0,
        }
    }

    /// Digests the next batch; `zone` is the writer time zone of its stripe when the file holds
    /// plain timestamps (`Decoder::zone`).
    pub fn update(&mut self, batch: &RecordBatch, zone: Option<&Zone>) -> Result<(), OrcError> {
        if batch.num_columns() != self.columns.len() {
            return Err(OrcError::Decode(format!(
                "a batch of {} columns among batches of {}",
                batch.num_columns(),
                self.columns.len()
            )));
        }
        // Each column has its own hasher: on the encoders' threads at once, the same digests.
        if batch.num_rows() >= PARALLEL_FROM_ROWS && self.columns.len() > 1 {
            self.columns
                .par_iter_mut()
                .zip(batch.columns().par_iter())
                .try_for_each(|(c, column)| c.update(column))?;
        } else {
            self.columns
                .iter_mut()
                .zip(batch.columns())
                .try_for_each(|(c, column)| c.update(column))?;
        }
        self.rows += batch.num_rows() as u64;
        if let Some(zone) = zone {
            let rows = batch.num_rows() as u64;
            match self.zones.last_mut() {
                Some((last, n)) if last == zone => *n += rows,
                _ => self.zones.push((zone.clone(), rows)),
            }
        }
        Ok(())
    }

    pub fn finish(&self) -> Digests {
        Digests {
            zones: self.zones.clone(),
            rows: self.rows,
            columns: self
                .columns
                .iter()
                .map(|c| ColumnDigest {
                    column: c.name.clone(),
                    xxh3: c.hasher.digest(),
                })
                .collect(),
        }
    }
}

/// An order-insensitive digest of rows: the sum, modulo 2^128, of the XXH3-128 of each row's
/// canonical form (every column's, in order, as [`Digester`] writes them). Rows in any order
/// sum alike, and a sum (unlike an XOR) counts a duplicated row twice: Hive tables have them.
/// What proves a sort lost, added or changed no row.
#[derive(Clone, Debug, Default)]
pub struct RowsDigest {
    rows: u64,
    sum: u128,
    timestamps: Vec<bool>,
}

impl RowsDigest {
    pub fn new(schema: &Schema) -> Self {
        RowsDigest {
            timestamps: schema.fields().iter().map(|f| is_timestamp(f)).collect(),
            ..RowsDigest::default()
        }
    }

    pub fn update(&mut self, batch: &RecordBatch) -> Result<(), OrcError> {
        // A sum: slices of the rows summed on the encoders' threads at once add up alike.
        // Each column of a slice is encoded in one call, then each row's bytes are gathered
        // from the columns' and hashed.
        let sum_of = |rows: Range<usize>| {
            let mut columns = Vec::with_capacity(batch.num_columns());
            for (column, &timestamp) in batch.columns().iter().zip(&self.timestamps) {
                let (mut bytes, mut ends) = (Vec::new(), Vec::with_capacity(rows.len()));
                encode(
                    column.as_ref(),
                    timestamp,
                    rows.clone(),
                    &mut bytes,
                    Some(&mut ends),
                )?;
                columns.push((bytes, ends));
            }
            let mut row = Vec::new();
            let mut sum = 0u128;
            for k in 0..rows.len() {
                row.clear();
                for (bytes, ends) in &columns {
                    let start = k.checked_sub(1).map_or(0, |before| ends[before]);
                    row.extend_from_slice(&bytes[start..ends[k]]);
                }
                sum = sum.wrapping_add(xxhash_rust::xxh3::xxh3_128(&row));
            }
            Ok::<_, OrcError>(sum)
        };
        let rows = batch.num_rows();
        let slices: Vec<Range<usize>> = (0..rows)
            .step_by(PARALLEL_FROM_ROWS)
            .map(|start| start..(start + PARALLEL_FROM_ROWS).min(rows))
            .collect();
        let sums = slices
            .into_par_iter()
            .map(sum_of)
            .collect::<Result<Vec<u128>, OrcError>>()?;
        self.sum = sums.into_iter().fold(self.sum, u128::wrapping_add);
        self.rows += batch.num_rows() as u64;
        Ok(())
    }

    /// Rows digested, and their sum.
    pub fn finish(&self) -> (u64, u128) {
        (self.rows, self.sum)
    }
}

/// Whether the field carries timestamps as decimals (marks::TIMESTAMP_NANOS).
fn is_timestamp(field: &Field) -> bool {
    field.metadata().contains_key(TIMESTAMP_NANOS)
}

/// Appends the canonical form of `array`'s values at `rows` to `out`; `timestamp` when the
/// array's field says it holds timestamps. With `ends`, the length of `out` after each row is
/// pushed to it: how [`RowsDigest`] takes a column's rows apart after encoding the column in
/// one call (a call per value, choosing each time how to encode it, took a quarter longer).
fn encode(
    array: &dyn Array,
    timestamp: bool,
    rows: Range<usize>,
    out: &mut Vec<u8>,
    mut ends: Option<&mut Vec<usize>>,
) -> Result<(), OrcError> {
    match array.data_type() {
        DataType::List(item) => {
            let a = array.as_list::<i32>();
            for i in rows {
                if present(a, i, out) {
                    let (start, end) = (a.value_offsets()[i], a.value_offsets()[i + 1]);
                    let (start, end) = (start as usize, end as usize);
                    length(end - start, out);
                    encode(
                        a.values().as_ref(),
                        is_timestamp(item),
                        start..end,
                        out,
                        None,
                    )?;
                }
                ended(&mut ends, out);
            }
        }
        DataType::Map(_, _) => {
            let a = array.as_map();
            for i in rows {
                if present(a, i, out) {
                    let (start, end) = (a.value_offsets()[i], a.value_offsets()[i + 1]);
                    let (start, end) = (start as usize, end as usize);
                    length(end - start, out);
                    encode(a.entries(), false, start..end, out, None)?;
                }
                ended(&mut ends, out);
            }
        }
        DataType::Struct(_) => {
            let a = array.as_struct();
            for i in rows {
                if present(a, i, out) {
                    for (field, column) in a.fields().iter().zip(a.columns()) {
                        encode(column.as_ref(), is_timestamp(field), i..i + 1, out, None)?;
                    }
                }
                ended(&mut ends, out);
            }
        }
        DataType::Union(variants, _) => {
            let a = array.as_union();
            for i in rows {
                let tag = a.type_id(i);
                out.push(tag as u8);
                // A null union row (marks::NULL_UNION_ROW): its tag says it all.
                if a.child(tag).data_type() != &DataType::Null {
                    let at = a.value_offset(i);
                    let timestamp = variants.iter().any(|(id, f)| id == tag && is_timestamp(f));
                    encode(a.child(tag).as_ref(), timestamp, at..at + 1, out, None)?;
                }
                ended(&mut ends, out);
            }
        }
        _ => encode_scalar(array, timestamp, rows, out, ends)?,
    }
    Ok(())
}

/// [`encode`] for the types that hold no other values: each value in a fixed width or, for
/// strings and binaries, behind its length.
fn encode_scalar(
    array: &dyn Array,
    timestamp: bool,
    rows: Range<usize>,
    out: &mut Vec<u8>,
    mut ends: Option<&mut Vec<usize>>,
) -> Result<(), OrcError> {
    macro_rules! fixed {
        ($t:ty, $bits:expr) => {{
            let a = array.as_primitive::<$t>();
            for i in rows {
                if present(a, i, out) {
                    out.extend_from_slice(&$bits(a.value(i)).to_le_bytes());
                }
                ended(&mut ends, out);
            }
        }};
    }
    match array.data_type() {
        DataType::Boolean => {
            let a = array.as_boolean();
            for i in rows {
                if present(a, i, out) {
                    out.push(u8::from(a.value(i)));
                }
                ended(&mut ends, out);
            }
        }
        DataType::Int8 => fixed!(Int8Type, std::convert::identity),
        DataType::Int16 => fixed!(Int16Type, std::convert::identity),
        DataType::Int32 => fixed!(Int32Type, std::convert::identity),
        DataType::Int64 => fixed!(Int64Type, std::convert::identity),
        DataType::Float32 => fixed!(Float32Type, f32::to_bits),
        DataType::Float64 => fixed!(Float64Type, f64::to_bits),
        DataType::Decimal128(_, _) if timestamp => {
            let a = array.as_primitive::<Decimal128Type>();
            for i in rows {
                if present(a, i, out) {
                    let nanos = a.value(i);
                    match i64::try_from(nanos) {
                        Ok(narrow) => out.extend_from_slice(&narrow.to_le_bytes()),
                        Err(_) => {
                            *out.last_mut().expect("the presence byte") = 2;
                            out.extend_from_slice(&nanos.to_le_bytes());
                        }
                    }
                }
                ended(&mut ends, out);
            }
        }
        DataType::Decimal128(_, _) => fixed!(Decimal128Type, std::convert::identity),
        DataType::Date32 => fixed!(Date32Type, std::convert::identity),
        DataType::Timestamp(TimeUnit::Second, _) => {
            fixed!(TimestampSecondType, std::convert::identity)
        }
        DataType::Timestamp(TimeUnit::Millisecond, _) => {
            fixed!(TimestampMillisecondType, std::convert::identity)
        }
        DataType::Timestamp(TimeUnit::Microsecond, _) => {
            fixed!(TimestampMicrosecondType, std::convert::identity)
        }
        DataType::Timestamp(TimeUnit::Nanosecond, _) => {
            fixed!(TimestampNanosecondType, std::convert::identity)
        }
        DataType::Utf8 => {
            let a = array.as_string::<i32>();
            for i in rows {
                if present(a, i, out) {
                    bytes(a.value(i).as_bytes(), out);
                }
                ended(&mut ends, out);
            }
        }
        DataType::Binary => {
            let a = array.as_binary::<i32>();
            for i in rows {
                if present(a, i, out) {
                    bytes(a.value(i), out);
                }
                ended(&mut ends, out);
            }
        }
        other => {
            return Err(OrcError::Decode(format!(
                "no canonical form for values of type {other}"
            )))
        }
    }
    Ok(())
}

/// Marks the end of a row in `ends`, when [`encode`] is given them.
fn ended(ends: &mut Option<&mut Vec<usize>>, out: &[u8]) {
    if let Some(ends) = ends {
        ends.push(out.len());
    }
}

/// Writes the presence byte of row `i`; true when a value follows.
fn present(array: &dyn Array, i: usize, out: &mut Vec<u8>) -> bool {
    let valid = array.is_valid(i);
    out.push(u8::from(valid));
    valid
}

fn length(n: usize, out: &mut Vec<u8>) {
    out.extend_from_slice(&(n as u64).to_le_bytes());
}

fn bytes(value: &[u8], out: &mut Vec<u8>) {
    length(value.len(), out);
    out.extend_from_slice(value);
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow::array::{ArrayRef, Int32Array, ListArray, StringArray, StructArray};
    use arrow::datatypes::{Field, Int32Type};

    use super::*;

    fn batch(columns: Vec<(&str, ArrayRef)>) -> RecordBatch {
        let schema = Schema::new(
            columns
                .iter()
                .map(|(n, a)| Field::new(*n, a.data_type().clone(), true))
                .collect::<Vec<_>>(),
        );
        RecordBatch::try_new(Arc::new(schema), columns.into_iter().map(|c| c.1).collect()).unwrap()
    }

    fn digest(batches: &[RecordBatch]) -> Digests {
        let mut d = Digester::new(&batches[0].schema());
        for b in batches {
            d.update(b, None).unwrap();
        }
        d.finish()
    }

    fn rows(ints: Vec<Option<i32>>, strings: Vec<Option<&str>>) -> RecordBatch {
        let lists = ListArray::from_iter_primitive::<Int32Type, _, _>(
            ints.iter().map(|v| v.map(|v| vec![Some(v), None])),
        );
        let fields = vec![Field::new("x", arrow::datatypes::DataType::Int32, true)];
        let structs = StructArray::new(
            fields.into(),
            vec![Arc::new(Int32Array::from(ints.clone())) as ArrayRef],
            None,
        );
        batch(vec![
            ("i", Arc::new(Int32Array::from(ints))),
            ("s", Arc::new(StringArray::from(strings))),
            ("l", Arc::new(lists)),
            ("st", Arc::new(structs)),
        ])
    }

    #[test]
    fn batch_boundaries_do_not_matter_but_order_and_nulls_do() {
        let whole = rows(
            vec![Some(1), None, Some(3), Some(4)],
            vec![Some("a"), Some("bc"), None, Some("")],
        );
        let all = digest(std::slice::from_ref(&whole));
        assert_eq!(all.rows, 4);
        assert_eq!(digest(&[whole.slice(0, 1), whole.slice(1, 3)]), all);

        let swapped = rows(
            vec![None, Some(1), Some(3), Some(4)],
            vec![Some("bc"), Some("a"), None, Some("")],
        );
        let reordered = digest(&[swapped]);
        assert!(all.check(&reordered).is_err(), "order counts");
        for (a, b) in all.columns.iter().zip(&reordered.columns) {
            assert_ne!(a.xxh3, b.xxh3, "{}", a.column);
        }
        // "a" + "bc" must not hash like "ab" + "c"; a null must not hash like an empty string.
        let shifted = rows(
            vec![Some(1), None, Some(3), Some(4)],
            vec![Some("ab"), Some("c"), Some(""), None],
        );
        let shifted = digest(&[shifted]);
        assert_ne!(all.columns[1], shifted.columns[1]);
        assert_eq!(all.columns[0], shifted.columns[0]);
        match all.check(&shifted) {
            Err(VerifyFailure::Digest { column, .. }) => assert_eq!(column, "s"),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn the_rows_digest_ignores_order_but_counts_duplicates() {
        let rows_of = |ints: Vec<Option<i32>>, strings: Vec<Option<&str>>| {
            let b = rows(ints, strings);
            let mut d = RowsDigest::new(&b.schema());
            d.update(&b).unwrap();
            d.finish()
        };
        let a = rows_of(
            vec![Some(1), None, Some(3)],
            vec![Some("a"), Some("b"), None],
        );
        let shuffled = rows_of(
            vec![Some(3), Some(1), None],
            vec![None, Some("a"), Some("b")],
        );
        assert_eq!(a, shuffled);
        // The same values paired otherwise are other rows.
        let repaired = rows_of(
            vec![Some(1), None, Some(3)],
            vec![Some("b"), Some("a"), None],
        );
        assert_ne!(a, repaired);
        let twice = rows_of(vec![Some(1), Some(1)], vec![Some("a"), Some("a")]);
        let once = rows_of(vec![Some(1), Some(3)], vec![Some("a"), None]);
        assert_ne!(twice.1, 0, "a duplicated row does not cancel out");
        assert_ne!(twice, once);
    }

    /// Every type orc-rust decodes has a canonical form, and it is a stored format: journals
    /// keep digests, and a digest taken before a change of this code must still check after
    /// it. Pinned on a file of every type, nulls included, digested by column and by row.
    #[test]
    fn the_canonical_form_does_not_change() {
        use crate::orc::testutil::ALL_TYPES_LZ4;
        let reader =
            orc_rust::ArrowReaderBuilder::try_new(bytes::Bytes::from_static(ALL_TYPES_LZ4))
                .unwrap()
                .build();
        let batches: Vec<RecordBatch> = reader.map(|b| b.unwrap()).collect();
        let columns: Vec<u64> = digest(&batches).columns.iter().map(|c| c.xxh3).collect();
        let mut rows = RowsDigest::new(&batches[0].schema());
        batches.iter().for_each(|b| rows.update(b).unwrap());
        let pinned: Vec<u64> = vec![
            0x9e16db1cac19fcc4,
            0xd0700bc3be0e0307,
            0x1b5df6587af3a62a,
            0x80affb49d394bfe7,
            0x56b3608d186239f4,
            0xa5d752bbdedcb459,
            0xf1c20414b4e16a43,
            0xae5af4e92a94c70d,
            0x072b3abbab341403,
            0x7f843fd6b5dcba2a,
            0x5ad4f8f57196e1c3,
            0xb612711dd369c61b,
            0xe56db3c6e2bfa2a4,
            0x1ac7dc01d494de6f,
            0x8f21ca5a95c7b4cd,
            0xc1c7226e73ad8421,
            0x7099928718fe6844,
            0xce5572f7d13144cb,
            0xa05aabd8c42b7faa,
            0x560c2b5cef23177e,
        ];
        assert_eq!(columns, pinned);
        assert_eq!(rows.finish(), (3, 0x46928a5f56a02f71a51edb468e4d606b));
        // Columns with and without nulls, over more rows than a parallel slice.
        use arrow::array::{Float64Array, Int64Array};
        let n = 3000i64;
        let many = batch(vec![
            ("dense", Arc::new(Int64Array::from_iter_values(0..n))),
            (
                "sparse",
                Arc::new(Float64Array::from_iter(
                    (0..n).map(|i| (i % 7 != 0).then_some(i as f64 / 3.0)),
                )),
            ),
            (
                "names",
                Arc::new(StringArray::from_iter(
                    (0..n).map(|i| (i % 5 != 0).then(|| format!("n{i}"))),
                )),
            ),
        ]);
        let columns: Vec<u64> = digest(std::slice::from_ref(&many))
            .columns
            .iter()
            .map(|c| c.xxh3)
            .collect();
        let mut rows = RowsDigest::new(&many.schema());
        rows.update(&many).unwrap();
        let pinned: Vec<u64> = vec![0x5ca31a6b7bd7fa96, 0xaaeb618a5150c761, 0xdcf95fcfe170b854];
        assert_eq!(columns, pinned);
        assert_eq!(rows.finish(), (3000, 0xd07d39975e5caf128e48413d8d4e382f));
    }

    #[test]
    fn timestamps_digest_alike_as_nanos_or_marked_decimals_and_beyond_2262() {
        use arrow::array::{Decimal128Array, TimestampNanosecondArray};
        let ns: Vec<Option<i64>> = vec![Some(-1), None, Some(1_700_000_000_123_456_789)];
        let old = batch(vec![(
            "ts",
            Arc::new(TimestampNanosecondArray::from(ns.clone())),
        )]);
        let marked = Field::new("ts", DataType::Decimal128(38, 9), true)
            .with_metadata([(TIMESTAMP_NANOS.to_string(), String::new())].into());
        let wide = |values: Vec<Option<i128>>| {
            let a = Decimal128Array::from(values)
                .with_precision_and_scale(38, 9)
                .unwrap();
            let schema = Arc::new(Schema::new(vec![marked.clone()]));
            RecordBatch::try_new(schema, vec![Arc::new(a) as ArrayRef]).unwrap()
        };
        let as_decimals = wide(ns.iter().map(|v| v.map(i128::from)).collect());
        assert_eq!(
            digest(&[old]),
            digest(std::slice::from_ref(&as_decimals)),
            "journals stay valid"
        );
        // Past what 64 bits hold: a value of its own, unlike any in range.
        let far = wide(vec![Some(-1), None, Some(253_402_300_799_999_999_999)]);
        assert_ne!(digest(&[far]), digest(&[as_decimals]));
        // An unmarked decimal keeps its 16 bytes.
        let plain = Decimal128Array::from(vec![Some(-1i128), None, Some(5)])
            .with_precision_and_scale(38, 9)
            .unwrap();
        let plain = batch(vec![("ts", Arc::new(plain) as ArrayRef)]);
        let marked_same = wide(vec![Some(-1), None, Some(5)]);
        assert_ne!(digest(&[plain]), digest(&[marked_same]));
    }
}
