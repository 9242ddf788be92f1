//! Iceberg column metrics of one ORC file, taken from its footer statistics.
//!
//! Exact first: a bound is written only where the ORC statistic is exact for the column's Iceberg
//! type; anything uncertain (truncated strings, timestamps without UTC statistics, writers with
//! known statistics bugs, NaN) is left out, which only makes readers skip fewer files.
//! Metrics are kept for top-level primitive columns only: ORC counts nested values per parent
//! row, Iceberg per element, and guessing between them is not exact.

use std::collections::HashMap;

use iceberg::spec::{Datum, PrimitiveType};
use orc_rust::proto;

use super::hive_type::HiveType;

/// ORC writer versions (PostScript `writerVersion`) whose statistics we trust for a type.
/// HIVE-8732 fixed string min/max; ORC-135 added UTC timestamp statistics.
const HIVE_8732: u32 = 1;
const ORC_135: u32 = 6;

/// Iceberg's default for `write.metadata.metrics.default` is `truncate(16)`: longer strings
/// keep a 16-character prefix as their lower bound and no upper bound.
const STRING_BOUND_CHARS: usize = 16;

#[derive(Debug, Default, Clone, PartialEq)]
pub struct Metrics {
    pub value_counts: HashMap<i32, u64>,
    pub null_value_counts: HashMap<i32, u64>,
    pub lower_bounds: HashMap<i32, Datum>,
    pub upper_bounds: HashMap<i32, Datum>,
}

/// A top-level column of the table as found in one file.
pub struct FileColumn<'a> {
    pub field_id: i32,
    pub hive: &'a HiveType,
    pub iceberg: &'a PrimitiveType,
    pub stats: &'a proto::ColumnStatistics,
}

/// Metrics for the given columns of a file of `rows` rows written by `writer_version`.
pub fn of_file(rows: u64, writer_version: u32, columns: &[FileColumn<'_>]) -> Metrics {
    let mut m = Metrics::default();
    for c in columns {
        let Some(values) = c.stats.number_of_values else {
            continue;
        };
        // A file that says it has no nulls but fewer values than rows is not consistent;
        // trust neither count.
        if values > rows || (c.stats.has_null == Some(false) && values != rows) {
            continue;
        }
        m.value_counts.insert(c.field_id, rows);
        m.null_value_counts.insert(c.field_id, rows - values);
        if values == 0 {
            continue;
        }
        if let Some((lo, hi)) = bounds(c, writer_version, values) {
            if let Some(lo) = lo {
                m.lower_bounds.insert(c.field_id, lo);
            }
            if let Some(hi) = hi {
                m.upper_bounds.insert(c.field_id, hi);
            }
        }
    }
    m
}

type Bounds = (Option<Datum>, Option<Datum>);

fn both(lo: Datum, hi: Datum) -> Option<Bounds> {
    Some((Some(lo), Some(hi)))
}

fn bounds(c: &FileColumn<'_>, writer_version: u32, values: u64) -> Option<Bounds> {
    let s = c.stats;
    match (c.hive, c.iceberg) {
        (HiveType::Boolean, PrimitiveType::Boolean) => {
            let trues = *s.bucket_statistics.as_ref()?.count.first()?;
            (trues <= values).then_some(())?;
            both(Datum::bool(trues == values), Datum::bool(trues > 0))
        }
        (HiveType::TinyInt | HiveType::SmallInt | HiveType::Int, PrimitiveType::Int) => {
            let i = s.int_statistics.as_ref()?;
            let lo = i32::try_from(i.minimum?).ok()?;
            let hi = i32::try_from(i.maximum?).ok()?;
            both(Datum::int(lo), Datum::int(hi))
        }
        (HiveType::BigInt, PrimitiveType::Long) => {
            let i = s.int_statistics.as_ref()?;
            both(Datum::long(i.minimum?), Datum::long(i.maximum?))
        }
        (HiveType::Float, PrimitiveType::Float) => {
            let d = s.double_statistics.as_ref()?;
            let (lo, hi) = (d.minimum?, d.maximum?);
            // ORC keeps NaN out of min/max except when the first value is NaN; Iceberg's bounds
            // never hold NaN. A float column's statistics are doubles of float values.
            (lo.is_finite() && hi.is_finite()).then_some(())?;
            both(Datum::float(lo as f32), Datum::float(hi as f32))
        }
        (HiveType::Double, PrimitiveType::Double) => {
            let d = s.double_statistics.as_ref()?;
            let (lo, hi) = (d.minimum?, d.maximum?);
            (lo.is_finite() && hi.is_finite()).then_some(())?;
            both(Datum::double(lo), Datum::double(hi))
        }
        (HiveType::String | HiveType::Varchar(_), PrimitiveType::String) => {
            (writer_version >= HIVE_8732).then_some(())?;
            let st = s.string_statistics.as_ref()?;
            // `minimum`/`maximum` are exact; `lower_bound`/`upper_bound` are ORC's truncated
            // stand-ins and are not used.
            let (lo, hi) = (st.minimum.as_ref()?, st.maximum.as_ref()?);
            let lo = lo.chars().take(STRING_BOUND_CHARS).collect::<String>();
            let hi = (hi.chars().count() <= STRING_BOUND_CHARS).then(|| Datum::string(hi));
            Some((Some(Datum::string(lo)), hi))
        }
        (HiveType::Date, PrimitiveType::Date) => {
            let d = s.date_statistics.as_ref()?;
            both(Datum::date(d.minimum?), Datum::date(d.maximum?))
        }
        (HiveType::Timestamp, PrimitiveType::Timestamp) => {
            (writer_version >= ORC_135).then_some(())?;
            let t = s.timestamp_statistics.as_ref()?;
            let (lo_ms, hi_ms) = (t.minimum_utc?, t.maximum_utc?);
            // Before 1970 older writers rounded milliseconds the wrong way: drop, not guess.
            (lo_ms >= 0).then_some(())?;
            // minimum_nanos/maximum_nanos hold the nanoseconds within the millisecond, plus
            // one (0: not written). Without them the millisecond's range is the bound.
            let lo = lo_ms.checked_mul(1000)?
                + t.minimum_nanos
                    .filter(|n| *n > 0)
                    .map_or(0, |n| i64::from(n - 1) / 1000);
            let hi = hi_ms.checked_mul(1000)?
                + t.maximum_nanos
                    .filter(|n| *n > 0)
                    .map_or(999, |n| i64::from(n - 1) / 1000);
            both(Datum::timestamp_micros(lo), Datum::timestamp_micros(hi))
        }
        (HiveType::Decimal { .. }, PrimitiveType::Decimal { scale, .. }) => {
            let d = s.decimal_statistics.as_ref()?;
            let lo = decimal(d.minimum.as_deref()?, *scale, c.iceberg)?;
            let hi = decimal(d.maximum.as_deref()?, *scale, c.iceberg)?;
            both(lo, hi)
        }
        _ => None,
    }
}

/// An ORC decimal statistic (`-12.5`) as an Iceberg decimal of `scale`; `None` when the text
/// is not a plain decimal or has more fractional digits than the scale.
fn decimal(text: &str, scale: u32, ty: &PrimitiveType) -> Option<Datum> {
    let unscaled = super::partition::decimal_unscaled(text, scale)?;
    let bytes = unscaled.to_be_bytes();
    // Iceberg stores decimal bounds as the minimal two's-complement big-endian bytes.
    let skip = bytes
        .windows(2)
        .take_while(|w| (w[0] == 0 && w[1] < 0x80) || (w[0] == 0xff && w[1] >= 0x80))
        .count();
    Datum::try_from_bytes(&bytes[skip..], ty.clone()).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stats(values: u64) -> proto::ColumnStatistics {
        proto::ColumnStatistics {
            number_of_values: Some(values),
            has_null: Some(values < 10),
            ..Default::default()
        }
    }

    #[test]
    fn counts_and_int_bounds() {
        let mut s = stats(7);
        s.int_statistics = Some(proto::IntegerStatistics {
            minimum: Some(-3),
            maximum: Some(9),
            sum: None,
        });
        let m = of_file(
            10,
            9,
            &[FileColumn {
                field_id: 1,
                hive: &HiveType::SmallInt,
                iceberg: &PrimitiveType::Int,
                stats: &s,
            }],
        );
        assert_eq!(m.value_counts[&1], 10);
        assert_eq!(m.null_value_counts[&1], 3);
        assert_eq!(m.lower_bounds[&1], Datum::int(-3));
        assert_eq!(m.upper_bounds[&1], Datum::int(9));
    }

    #[test]
    fn uncertain_bounds_are_dropped() {
        let mut s = stats(10);
        s.string_statistics = Some(proto::StringStatistics {
            minimum: Some("a".into()),
            maximum: Some("an upper bound longer than sixteen".into()),
            ..Default::default()
        });
        let col = |hive, iceberg, stats| FileColumn {
            field_id: 2,
            hive,
            iceberg,
            stats,
        };
        let m = of_file(10, 9, &[col(&HiveType::String, &PrimitiveType::String, &s)]);
        assert_eq!(m.lower_bounds[&2], Datum::string("a"));
        assert!(!m.upper_bounds.contains_key(&2));
        // Before HIVE-8732 string statistics were wrong.
        let m = of_file(10, 0, &[col(&HiveType::String, &PrimitiveType::String, &s)]);
        assert!(m.lower_bounds.is_empty());
        let mut t = stats(10);
        t.timestamp_statistics = Some(proto::TimestampStatistics {
            minimum: Some(1),
            maximum: Some(2),
            ..Default::default()
        });
        let m = of_file(
            10,
            9,
            &[col(&HiveType::Timestamp, &PrimitiveType::Timestamp, &t)],
        );
        assert!(m.lower_bounds.is_empty(), "no UTC statistics, no bounds");
        let mut d = stats(10);
        d.double_statistics = Some(proto::DoubleStatistics {
            minimum: Some(f64::NAN),
            maximum: Some(1.0),
            sum: None,
        });
        let m = of_file(10, 9, &[col(&HiveType::Double, &PrimitiveType::Double, &d)]);
        assert!(m.lower_bounds.is_empty());
        assert_eq!(m.null_value_counts[&2], 0);
    }

    #[test]
    fn timestamps_use_utc_and_nanos() {
        let mut t = stats(10);
        t.timestamp_statistics = Some(proto::TimestampStatistics {
            minimum_utc: Some(1_000),
            maximum_utc: Some(2_000),
            minimum_nanos: Some(5_001),
            maximum_nanos: None,
            ..Default::default()
        });
        let m = of_file(
            10,
            9,
            &[FileColumn {
                field_id: 3,
                hive: &HiveType::Timestamp,
                iceberg: &PrimitiveType::Timestamp,
                stats: &t,
            }],
        );
        assert_eq!(m.lower_bounds[&3], Datum::timestamp_micros(1_000_005));
        assert_eq!(m.upper_bounds[&3], Datum::timestamp_micros(2_000_999));
    }

    #[test]
    fn decimals_at_the_column_scale() {
        assert!(decimal(
            "1.234",
            2,
            &PrimitiveType::Decimal {
                precision: 10,
                scale: 2
            }
        )
        .is_none());
        let ty = PrimitiveType::Decimal {
            precision: 10,
            scale: 2,
        };
        // Minimal two's complement: -128 fits one byte, +128 needs a sign byte.
        let d = decimal("-1.28", 2, &ty).unwrap();
        assert_eq!(d.to_bytes().unwrap().as_ref(), &[0x80]);
        let d = decimal("1.28", 2, &ty).unwrap();
        assert_eq!(d.to_bytes().unwrap().as_ref(), &[0x00, 0x80]);
    }
}
