//! The orders a re-encode can put a partition's rows in (`--sort-by`, `--zorder`), and the sort
//! key of each row under one.
//!
//! A row's key is bytes that compare (as bytes) the way the rows must come out, followed by the
//! row's place in the inputs (8 bytes, big-endian): ties keep input order, so the same inputs
//! always make the same files, and no two keys are equal.
//!
//! - **Sort**: arrow's row format (`arrow-row`) of the key columns, each ascending or descending
//!   with its nulls first or last; its byte order is the columns' value order (numbers by value,
//!   strings and binaries by their bytes as Hive compares them, decimals and timestamps by
//!   value, floats by IEEE total order). The encoding may change between arrow releases, so it
//!   lives only as long as one run and is never written anywhere that outlives it.
//! - **Z-order**: each column's value is replaced by its rank among a sample of that column's
//!   values (16 bits, nulls lowest), and the ranks' bits are interleaved, most significant
//!   first. Ranks rather than values give every column equal weight whatever its range: on raw
//!   values the column of widest range takes the leading bits and the curve degenerates into a
//!   sort by that column. Strings and decimals need no prefix trick: a rank orders them whole.
//!
//! Columns are named by path (`address.city` for a struct field) and must hold values with an
//! order: numbers, decimals, strings, binaries, booleans, dates and timestamps, not lists, maps,
//! structs or unions.

use std::fmt;
use std::sync::Arc;

use arrow::array::{
    make_array, Array, ArrayRef, AsArray, BinaryArray, BinaryBuilder, RecordBatch, UInt32Array,
};
use arrow::buffer::NullBuffer;
use arrow::compute::SortOptions;
use arrow::datatypes::{DataType, Schema};
use arrow::row::{OwnedRow, RowConverter, SortField};

use crate::orc::error::OrcError;
use crate::orc::statistics::ranges::lookup_fraction;

/// How a re-encode orders a partition's rows.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RowOrder {
    /// By these columns, the first most significant.
    Sort(Vec<SortColumn>),
    /// Along a z-order curve of these columns (at least two).
    ZOrder(Vec<String>),
}

/// One column of a sort, with Hive's defaults: ascending puts nulls first, descending last.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SortColumn {
    pub path: String,
    pub descending: bool,
    pub nulls_first: bool,
}

impl SortColumn {
    /// `path ASC|DESC NULLS FIRST|LAST`.
    fn spec(&self) -> String {
        format!(
            "{} {} NULLS {}",
            self.path,
            if self.descending { "DESC" } else { "ASC" },
            if self.nulls_first { "FIRST" } else { "LAST" }
        )
    }
}

impl RowOrder {
    /// `--sort-by`: `col [ASC|DESC] [NULLS FIRST|NULLS LAST], ...`.
    pub fn parse_sort(spec: &str) -> Result<Self, String> {
        let mut columns = Vec::new();
        for part in spec.split(',') {
            let words: Vec<String> = part.split_whitespace().map(str::to_lowercase).collect();
            let Some((path, rest)) = words.split_first() else {
                return Err(format!("'{spec}' names an empty column"));
            };
            let (descending, rest) = match rest.first().map(String::as_str) {
                Some("desc") => (true, &rest[1..]),
                Some("asc") => (false, &rest[1..]),
                _ => (false, rest),
            };
            let nulls_first = match rest.iter().map(String::as_str).collect::<Vec<_>>()[..] {
                [] => !descending,
                ["nulls", "first"] => true,
                ["nulls", "last"] => false,
                _ => {
                    return Err(format!(
                        "'{}' is not `column [ASC|DESC] [NULLS FIRST|NULLS LAST]`",
                        part.trim()
                    ))
                }
            };
            columns.push(SortColumn {
                path: path.clone(),
                descending,
                nulls_first,
            });
        }
        check_distinct(columns.iter().map(|c| c.path.as_str()))?;
        Ok(RowOrder::Sort(columns))
    }

    /// `--zorder`: `col,col[,...]`.
    pub fn parse_zorder(spec: &str) -> Result<Self, String> {
        let columns: Vec<String> = spec.split(',').map(|c| c.trim().to_lowercase()).collect();
        if columns
            .iter()
            .any(|c| c.is_empty() || c.contains(char::is_whitespace))
        {
            return Err(format!("'{spec}' is not a list of columns: col,col[,...]"));
        }
        if columns.len() < 2 {
            return Err(format!(
                "--zorder needs at least two columns; for one, --sort-by {spec} orders better"
            ));
        }
        check_distinct(columns.iter().map(String::as_str))?;
        Ok(RowOrder::ZOrder(columns))
    }

    /// The value `--sort-by` or `--zorder` takes for this order.
    pub fn as_flag(&self) -> String {
        match self {
            RowOrder::Sort(columns) => columns
                .iter()
                .map(SortColumn::spec)
                .collect::<Vec<_>>()
                .join(","),
            RowOrder::ZOrder(columns) => columns.join(","),
        }
    }

    /// The key columns' paths.
    pub fn columns(&self) -> Vec<&str> {
        match self {
            RowOrder::Sort(c) => c.iter().map(|c| c.path.as_str()).collect(),
            RowOrder::ZOrder(c) => c.iter().map(String::as_str).collect(),
        }
    }
}

fn check_distinct<'a>(paths: impl Iterator<Item = &'a str>) -> Result<(), String> {
    let mut seen = Vec::new();
    for p in paths {
        if seen.contains(&p) {
            return Err(format!("column {p} is named twice"));
        }
        seen.push(p);
    }
    Ok(())
}

/// The canonical form, as outputs record it and a later run compares it: `sort(a ASC NULLS
/// FIRST, b DESC NULLS LAST)` or `zorder(a, b)`.
impl fmt::Display for RowOrder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RowOrder::Sort(columns) => {
                let shown: Vec<String> = columns.iter().map(SortColumn::spec).collect();
                write!(f, "sort({})", shown.join(", "))
            }
            RowOrder::ZOrder(columns) => write!(f, "zorder({})", columns.join(", ")),
        }
    }
}

/// Where a key column sits in a batch: the top-level column, then a field index per struct.
type Place = Vec<usize>;

/// Finds `path` in `schema`; an error names what is missing or cannot be ordered.
fn locate(schema: &Schema, path: &str) -> Result<(Place, DataType), OrcError> {
    let mut place = Vec::new();
    let mut fields = schema.fields().clone();
    let mut found: Option<DataType> = None;
    for (depth, name) in path.split('.').enumerate() {
        if depth > 0 {
            match found.take() {
                Some(DataType::Struct(children)) => fields = children,
                _ => return Err(no_column(path, schema)),
            }
        }
        let at = fields
            .iter()
            .position(|f| f.name().eq_ignore_ascii_case(name))
            .ok_or_else(|| no_column(path, schema))?;
        place.push(at);
        found = Some(fields[at].data_type().clone());
    }
    let data_type = found.ok_or_else(|| no_column(path, schema))?;
    let orderable = matches!(
        data_type,
        DataType::Boolean
            | DataType::Int8
            | DataType::Int16
            | DataType::Int32
            | DataType::Int64
            | DataType::Float32
            | DataType::Float64
            | DataType::Utf8
            | DataType::LargeUtf8
            | DataType::Binary
            | DataType::LargeBinary
            | DataType::Decimal128(_, _)
            | DataType::Date32
            | DataType::Timestamp(_, _)
    );
    if !orderable {
        return Err(OrcError::Unsupported(format!(
            "column {path} holds {data_type} values, which have no order to cluster by: name a \
             column of numbers, strings, dates or timestamps"
        )));
    }
    Ok((place, data_type))
}

fn no_column(path: &str, schema: &Schema) -> OrcError {
    let names: Vec<&str> = schema.fields().iter().map(|f| f.name().as_str()).collect();
    OrcError::Unsupported(format!(
        "the files have no column {path} (their columns: {})",
        names.join(", ")
    ))
}

/// The key column at `place` of `columns`; a field of a null struct reads as null.
fn extract(columns: &[ArrayRef], place: &[usize]) -> ArrayRef {
    let mut array = Arc::clone(&columns[place[0]]);
    for &field in &place[1..] {
        let parent = array.as_struct();
        let child = parent.column(field);
        let nulls = NullBuffer::union(parent.nulls(), child.nulls());
        let data = child.to_data().into_builder().nulls(nulls);
        // Only the validity changes, over the child's own length: always valid data.
        array = make_array(data.build().expect("the same data with more nulls"));
    }
    array
}

/// The sort keys of rows under one order, for batches of one schema.
pub struct KeyMaker {
    places: Vec<Place>,
    kind: KeyKind,
}

enum KeyKind {
    Sort(RowConverter),
    /// One converter per column, and each column's sampled values in order.
    ZOrder(Vec<(RowConverter, Vec<OwnedRow>)>),
}

impl KeyMaker {
    /// Keys for `order` over batches of `schema`; a z-order needs each column's `samples`
    /// (see [`Sampler`]), in column order.
    pub fn new(order: &RowOrder, schema: &Schema, samples: Vec<Sampler>) -> Result<Self, OrcError> {
        let located = order
            .columns()
            .into_iter()
            .map(|p| locate(schema, p))
            .collect::<Result<Vec<_>, _>>()?;
        let kind = match order {
            RowOrder::Sort(columns) => {
                let fields = located
                    .iter()
                    .zip(columns)
                    .map(|((_, t), c)| {
                        SortField::new_with_options(
                            t.clone(),
                            SortOptions {
                                descending: c.descending,
                                nulls_first: c.nulls_first,
                            },
                        )
                    })
                    .collect();
                KeyKind::Sort(RowConverter::new(fields).map_err(arrow_error)?)
            }
            RowOrder::ZOrder(_) => {
                KeyKind::ZOrder(samples.into_iter().map(|s| s.finish()).collect())
            }
        };
        Ok(KeyMaker {
            places: located.into_iter().map(|(p, _)| p).collect(),
            kind,
        })
    }

    /// Each row's key; `first` is the first row's place in the inputs.
    pub fn keys(&self, batch: &RecordBatch, first: u64) -> Result<BinaryArray, OrcError> {
        let columns: Vec<ArrayRef> = self
            .places
            .iter()
            .map(|p| extract(batch.columns(), p))
            .collect();
        let mut out = BinaryBuilder::with_capacity(batch.num_rows(), batch.num_rows() * 24);
        match &self.kind {
            KeyKind::Sort(converter) => {
                let rows = converter.convert_columns(&columns).map_err(arrow_error)?;
                let mut key = Vec::new();
                for (i, row) in rows.iter().enumerate() {
                    key.clear();
                    key.extend_from_slice(row.as_ref());
                    key.extend_from_slice(&(first + i as u64).to_be_bytes());
                    out.append_value(&key);
                }
            }
            KeyKind::ZOrder(columns_with_samples) => {
                let mut ranks = vec![vec![0u16; batch.num_rows()]; columns.len()];
                for ((column, (converter, sample)), ranks) in
                    columns.iter().zip(columns_with_samples).zip(&mut ranks)
                {
                    let rows = converter
                        .convert_columns(std::slice::from_ref(column))
                        .map_err(arrow_error)?;
                    for (r, row) in rows.iter().enumerate() {
                        ranks[r] = rank(sample, row.as_ref());
                    }
                }
                let mut key = Vec::new();
                let mut values = vec![0u16; columns.len()];
                for r in 0..batch.num_rows() {
                    for (v, column) in values.iter_mut().zip(&ranks) {
                        *v = column[r];
                    }
                    key.clear();
                    interleave(&values, &mut key);
                    key.extend_from_slice(&(first + r as u64).to_be_bytes());
                    out.append_value(&key);
                }
            }
        }
        Ok(out.finish())
    }
}

/// How clustered rows are on each key column: the mean fraction of row groups a point lookup
/// must read (see `ranges::lookup_fraction`), from each row group's [min, max] of the column,
/// which is what a reader's pushdown sees (ORC's row index statistics). Row groups are counted
/// as runs of `stride` rows from the start of each file (exact for single-stripe files, and
/// within a row group's worth for others).
pub struct RangeMeter {
    columns: Vec<(String, Place, RowConverter)>,
    stride: u64,
    in_unit: u64,
    /// Per column: the finished row groups' (min, max), and the open one's.
    units: Vec<Vec<(Vec<u8>, Vec<u8>)>>,
    open: Vec<Option<(Vec<u8>, Vec<u8>)>>,
}

impl RangeMeter {
    pub fn new(order: &RowOrder, schema: &Schema, stride: u32) -> Result<Self, OrcError> {
        let mut columns = Vec::new();
        for path in order.columns() {
            let (place, data_type) = locate(schema, path)?;
            let converter =
                RowConverter::new(vec![SortField::new(data_type)]).map_err(arrow_error)?;
            columns.push((path.to_string(), place, converter));
        }
        let n = columns.len();
        Ok(RangeMeter {
            columns,
            stride: u64::from(stride.max(1)),
            in_unit: 0,
            units: vec![Vec::new(); n],
            open: vec![None; n],
        })
    }

    /// Takes the next rows of the file being read.
    pub fn add(&mut self, batch: &RecordBatch) -> Result<(), OrcError> {
        let mut rows = Vec::new();
        for (_, place, converter) in &self.columns {
            let column = extract(batch.columns(), place);
            let converted = converter
                .convert_columns(std::slice::from_ref(&column))
                .map_err(arrow_error)?;
            rows.push((column, converted));
        }
        for r in 0..batch.num_rows() {
            for (c, (column, converted)) in rows.iter().enumerate() {
                if column.is_null(r) {
                    continue;
                }
                let value = converted.row(r);
                let value = value.as_ref();
                match &mut self.open[c] {
                    Some((min, max)) => {
                        if value < min.as_slice() {
                            *min = value.to_vec();
                        } else if value > max.as_slice() {
                            *max = value.to_vec();
                        }
                    }
                    slot @ None => *slot = Some((value.to_vec(), value.to_vec())),
                }
            }
            self.in_unit += 1;
            if self.in_unit == self.stride {
                self.end_file();
            }
        }
        Ok(())
    }

    /// Ends the row group being read: a new file starts a new one.
    pub fn end_file(&mut self) {
        for (units, open) in self.units.iter_mut().zip(&mut self.open) {
            units.extend(open.take());
        }
        self.in_unit = 0;
    }

    /// Each key column's mean fraction of row groups a point lookup reads; a column with no
    /// values is left out.
    pub fn fractions(mut self) -> Vec<(String, f64)> {
        self.end_file();
        let mut out = Vec::new();
        for ((name, _, _), units) in self.columns.iter().zip(&self.units) {
            if let Some(f) = lookup_fraction(units) {
                out.push((name.clone(), f));
            }
        }
        out
    }
}

fn arrow_error(e: arrow::error::ArrowError) -> OrcError {
    OrcError::Decode(format!("making sort keys: {e}"))
}

/// A value's rank among the sorted `sample`, scaled to 16 bits: 0 below every sampled value,
/// 65535 above all.
fn rank(sample: &[OwnedRow], value: &[u8]) -> u16 {
    if sample.is_empty() {
        return 0;
    }
    let below = sample.partition_point(|s| s.row().as_ref() < value) as u64;
    (below * 65_536 / sample.len() as u64).min(u64::from(u16::MAX)) as u16
}

/// Appends the bits of `values` interleaved, most significant first: bit 15 of each value in
/// turn, then bit 14, and so on.
fn interleave(values: &[u16], out: &mut Vec<u8>) {
    let mut byte = 0u8;
    let mut filled = 0;
    for bit in (0..16).rev() {
        for v in values {
            byte = (byte << 1) | ((v >> bit) & 1) as u8;
            filled += 1;
            if filled == 8 {
                out.push(byte);
                (byte, filled) = (0, 0);
            }
        }
    }
    if filled > 0 {
        out.push(byte << (8 - filled));
    }
}

/// How many values of each column a z-order ranks by: 16 bits of rank resolve 65,536 steps, and
/// a sample this size places the steps within a fraction of a percent of the true quantiles.
const SAMPLE_SIZE: usize = 16_384;

/// The places, in the inputs' order, of the rows a z-order samples (ascending): those a
/// reservoir of [`SAMPLE_SIZE`] keeps of `rows` rows, its random numbers from splitmix64 with a
/// fixed seed, so the same inputs give the same sample. Which rows a reservoir keeps depends on
/// their count alone, not on their values: the inputs can then be read for their sample all at
/// once, and give the sample one reservoir fed the rows in order would.
pub fn sampled_rows(rows: u64) -> Vec<u64> {
    let size = SAMPLE_SIZE as u64;
    let mut kept: Vec<u64> = (0..rows.min(size)).collect();
    // splitmix64: a few lines where a random-number crate would be a dependency for one use.
    let mut state: u64 = 0x9E37_79B9_7F4A_7C15;
    for row in size..rows {
        state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        let slot = (z ^ (z >> 31)) % (row + 1);
        if slot < size {
            kept[slot as usize] = row;
        }
    }
    kept.sort_unstable();
    kept
}

/// A sample of one column's values (those of the rows [`sampled_rows`] names), for a z-order's
/// ranks.
pub struct Sampler {
    place: Place,
    converter: RowConverter,
    sample: Vec<OwnedRow>,
}

impl Sampler {
    /// A sampler of column `path` of `schema`; [`Sampler::values`] then takes batches of only
    /// that column's top-level column (a decoder of one column).
    pub fn new(schema: &Schema, path: &str) -> Result<(Self, usize), OrcError> {
        let (mut place, data_type) = locate(schema, path)?;
        let top = place[0];
        place[0] = 0;
        let converter = RowConverter::new(vec![SortField::new_with_options(
            data_type,
            SortOptions {
                descending: false,
                nulls_first: true,
            },
        )])
        .map_err(arrow_error)?;
        let sampler = Sampler {
            place,
            converter,
            sample: Vec::new(),
        };
        Ok((sampler, top))
    }

    /// The values at `picks` (positions in `batch`, a batch of the one top-level column).
    pub fn values(&self, batch: &RecordBatch, picks: &[u32]) -> Result<Vec<OwnedRow>, OrcError> {
        let column = extract(batch.columns(), &self.place);
        let picked = arrow::compute::take(&column, &UInt32Array::from(picks.to_vec()), None)
            .map_err(arrow_error)?;
        let rows = self
            .converter
            .convert_columns(&[picked])
            .map_err(arrow_error)?;
        Ok(rows.iter().map(|r| r.owned()).collect())
    }

    /// Adds `values` (from [`Sampler::values`]) to the sample.
    pub fn keep(&mut self, values: Vec<OwnedRow>) {
        self.sample.extend(values);
    }

    fn finish(mut self) -> (RowConverter, Vec<OwnedRow>) {
        self.sample.sort_unstable();
        (self.converter, self.sample)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::array::{Int64Array, StringArray, StructArray};
    use arrow::datatypes::Field;

    #[test]
    fn sort_specs_parse_with_hive_defaults_and_print_canonically() {
        let order = RowOrder::parse_sort("Customer_ID, ts desc, a.b DESC NULLS FIRST").unwrap();
        assert_eq!(
            order.to_string(),
            "sort(customer_id ASC NULLS FIRST, ts DESC NULLS LAST, a.b DESC NULLS FIRST)"
        );
        assert_eq!(order.columns(), vec!["customer_id", "ts", "a.b"]);
        assert_eq!(RowOrder::parse_sort(&order.as_flag()).unwrap(), order);
        assert!(RowOrder::parse_sort("a nulls").is_err());
        assert!(RowOrder::parse_sort("a,,b").is_err());
        assert!(RowOrder::parse_sort("a, A").is_err());
        let z = RowOrder::parse_zorder("a, b").unwrap();
        assert_eq!(z.to_string(), "zorder(a, b)");
        assert!(RowOrder::parse_zorder("a").is_err());
        assert!(RowOrder::parse_zorder("a b,c").is_err());
    }

    fn batch() -> RecordBatch {
        let ids = Int64Array::from(vec![Some(3), None, Some(-7), Some(3)]);
        let cities = StringArray::from(vec![Some("b"), Some("a"), None, Some("a")]);
        let address = StructArray::new(
            vec![Field::new("city", DataType::Utf8, true)].into(),
            vec![Arc::new(cities) as ArrayRef],
            Some(NullBuffer::from(vec![true, true, true, false])),
        );
        let schema = Schema::new(vec![
            Field::new("id", DataType::Int64, true),
            Field::new("address", address.data_type().clone(), true),
        ]);
        RecordBatch::try_new(Arc::new(schema), vec![Arc::new(ids), Arc::new(address)]).unwrap()
    }

    fn sorted_rows(order: &RowOrder, samples: Vec<Sampler>) -> Vec<usize> {
        let b = batch();
        let keys = KeyMaker::new(order, &b.schema(), samples)
            .unwrap()
            .keys(&b, 0)
            .unwrap();
        let mut rows: Vec<usize> = (0..b.num_rows()).collect();
        rows.sort_by_key(|&r| keys.value(r).to_vec());
        rows
    }

    #[test]
    fn sort_keys_order_rows_by_value_nulls_and_then_input_order() {
        let by_id = RowOrder::parse_sort("id").unwrap();
        assert_eq!(sorted_rows(&by_id, vec![]), vec![1, 2, 0, 3]);
        let desc = RowOrder::parse_sort("id DESC").unwrap();
        assert_eq!(sorted_rows(&desc, vec![]), vec![0, 3, 2, 1]);
        // A field of a null struct (row 3) is null.
        let city = RowOrder::parse_sort("address.city NULLS LAST, id").unwrap();
        assert_eq!(sorted_rows(&city, vec![]), vec![1, 0, 2, 3]);
        let b = batch();
        assert!(
            KeyMaker::new(&RowOrder::parse_sort("nope").unwrap(), &b.schema(), vec![]).is_err()
        );
        assert!(
            KeyMaker::new(
                &RowOrder::parse_sort("address").unwrap(),
                &b.schema(),
                vec![]
            )
            .is_err(),
            "a struct has no order"
        );
    }

    #[test]
    fn the_range_meter_sees_arrival_order_as_unclustered_and_sorted_rows_as_clustered() {
        let schema = Arc::new(Schema::new(vec![Field::new("v", DataType::Int64, false)]));
        let measure = |values: Vec<i64>| {
            let b = RecordBatch::try_new(
                Arc::clone(&schema),
                vec![Arc::new(Int64Array::from(values))],
            )
            .unwrap();
            let order = RowOrder::parse_sort("v").unwrap();
            let mut meter = RangeMeter::new(&order, &schema, 10).unwrap();
            meter.add(&b).unwrap();
            meter.fractions()[0].1
        };
        let sorted = measure((0..100).collect());
        assert!((sorted - 0.1).abs() < 1e-9, "{sorted}");
        // Every row group holding the whole range: every lookup reads all of them.
        let spread = (0..10)
            .flat_map(|k| [0, 99].into_iter().chain(10 * k + 1..10 * k + 9))
            .collect();
        let spread = measure(spread);
        assert!((spread - 1.0).abs() < 1e-9, "{spread}");
    }

    /// The rows [`sampled_rows`] names are those one reservoir keeps when fed the rows in order
    /// (as z-orders sampled before their inputs were read at once): the same z-order as before.
    #[test]
    fn sampled_rows_are_what_one_reservoir_fed_in_order_keeps() {
        let reservoir = |rows: u64| {
            let mut state: u64 = 0x9E37_79B9_7F4A_7C15;
            let mut sample = Vec::new();
            for (seen, row) in (1..).zip(0..rows) {
                if sample.len() < SAMPLE_SIZE {
                    sample.push(row);
                    continue;
                }
                state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
                let mut z = state;
                z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
                z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
                let j = (z ^ (z >> 31)) % seen;
                if (j as usize) < SAMPLE_SIZE {
                    sample[j as usize] = row;
                }
            }
            sample.sort_unstable();
            sample
        };
        for rows in [0, 5, SAMPLE_SIZE as u64, SAMPLE_SIZE as u64 + 1, 100_003] {
            assert_eq!(sampled_rows(rows), reservoir(rows), "{rows} rows");
        }
        let picked = sampled_rows(1_000_000);
        assert_eq!(picked.len(), SAMPLE_SIZE);
        // Spread over all the rows, not bunched at the start.
        assert!(picked.iter().filter(|&&r| r >= 500_000).count() > SAMPLE_SIZE / 3);
    }

    #[test]
    fn zorder_interleaves_ranks_most_significant_bit_first() {
        let mut out = Vec::new();
        interleave(&[0xFFFF, 0x0000], &mut out);
        assert_eq!(out, vec![0xAA, 0xAA, 0xAA, 0xAA]);
        out.clear();
        interleave(&[0x8000, 0x8000, 0x8000], &mut out);
        assert_eq!(out.len(), 6);
        assert_eq!(out[0], 0b1110_0000);

        // Two columns of very different ranges weigh alike once ranked.
        let n = 64i64;
        let small = Int64Array::from((0..n).map(|i| i % 8).collect::<Vec<_>>());
        let huge = Int64Array::from((0..n).map(|i| (i / 8) * 1_000_000_000).collect::<Vec<_>>());
        let schema = Arc::new(Schema::new(vec![
            Field::new("s", DataType::Int64, false),
            Field::new("h", DataType::Int64, false),
        ]));
        let b = RecordBatch::try_new(schema, vec![Arc::new(small), Arc::new(huge)]).unwrap();
        let order = RowOrder::parse_zorder("s,h").unwrap();
        let mut samplers = Vec::new();
        for c in ["s", "h"] {
            let (mut s, top) = Sampler::new(&b.schema(), c).unwrap();
            let all: Vec<u32> = (0..b.num_rows() as u32).collect();
            s.keep(s.values(&b.project(&[top]).unwrap(), &all).unwrap());
            samplers.push(s);
        }
        let keys = KeyMaker::new(&order, &b.schema(), samplers)
            .unwrap()
            .keys(&b, 0)
            .unwrap();
        let mut rows: Vec<usize> = (0..b.num_rows()).collect();
        rows.sort_by_key(|&r| keys.value(r).to_vec());
        // The first quarter of the curve is the low half of both columns.
        for &r in &rows[..16] {
            assert!(r % 8 < 4 && r / 8 < 4, "row {r}");
        }
    }
}
