//! Merging file-level column statistics.
//!
//! Engines skip data using min/max: a min/max that is too narrow hides rows from queries, while
//! a missing one only costs speed. So every rule here widens or drops, never guesses. A typed
//! statistic (the integer, string, ... sub-message) is kept only when every input that has
//! values carries it and it can be merged exactly; otherwise the whole sub-message is dropped,
//! because Java ORC reads a sub-message without min/max as an empty range and would prune.
//!
//! An input whose `numberOfValues` is 0 holds only nulls: its typed statistics are vacuous, so
//! it may lack them without forcing a drop.

use std::cmp::Ordering;

use orc_rust::proto::{
    BinaryStatistics, BucketStatistics, CollectionStatistics, ColumnStatistics, DateStatistics,
    DecimalStatistics, DoubleStatistics, IntegerStatistics, StringStatistics, TimestampStatistics,
};

use super::decimal::Decimal;

/// The file-level statistics of several files with the same type tree, merged column by
/// column one file at a time ([`StatisticsFold::add`], in output order): an output's
/// statistics are folded as its inputs are read, never with every input's held. Each step is
/// [`merge_column_statistics`] of what was merged so far and the next file, which claims what
/// merging all the files at once claims, or less (a local timestamp bound dropped early stays
/// dropped), never more.
#[derive(Debug, Default)]
pub struct StatisticsFold {
    merged: Option<Vec<ColumnStatistics>>,
}

impl StatisticsFold {
    /// Folds in one more file's statistics, one entry per column (the merge key checks every
    /// input has them); columns beyond the shortest input's are dropped.
    pub fn add(&mut self, file: &[ColumnStatistics]) {
        self.merged = Some(match self.merged.take() {
            None => file.iter().map(|c| merge_column_statistics(&[c])).collect(),
            Some(merged) => merged
                .iter()
                .zip(file)
                .map(|(m, c)| merge_column_statistics(&[m, c]))
                .collect(),
        });
    }

    /// The merged statistics; none when no file was added.
    pub fn finish(self) -> Vec<ColumnStatistics> {
        self.merged.unwrap_or_default()
    }
}

/// Merges one column's statistics from several files.
pub fn merge_column_statistics(inputs: &[&ColumnStatistics]) -> ColumnStatistics {
    let mut out = ColumnStatistics {
        number_of_values: sum_all(inputs.iter().map(|s| s.number_of_values)),
        // Java reads a missing hasNull as true, so leaving it out when unsure is the safe side.
        has_null: inputs
            .iter()
            .try_fold(false, |acc, s| s.has_null.map(|h| acc || h)),
        bytes_on_disk: sum_all(inputs.iter().map(|s| s.bytes_on_disk)),
        ..Default::default()
    };
    out.int_statistics = typed(inputs, |s| s.int_statistics.as_ref(), merge_int);
    out.double_statistics = typed(inputs, |s| s.double_statistics.as_ref(), merge_double);
    out.string_statistics = typed(inputs, |s| s.string_statistics.as_ref(), merge_string);
    out.bucket_statistics = typed(inputs, |s| s.bucket_statistics.as_ref(), merge_bucket);
    out.decimal_statistics = typed(inputs, |s| s.decimal_statistics.as_ref(), merge_decimal);
    out.date_statistics = typed(inputs, |s| s.date_statistics.as_ref(), merge_date);
    out.binary_statistics = typed(inputs, |s| s.binary_statistics.as_ref(), merge_binary);
    out.timestamp_statistics = typed(inputs, |s| s.timestamp_statistics.as_ref(), merge_timestamp);
    out.collection_statistics = typed(
        inputs,
        |s| s.collection_statistics.as_ref(),
        merge_collection,
    );
    out
}

/// One input's typed statistic, with whether the input is known to hold only nulls.
struct Part<'a, T> {
    stats: &'a T,
    empty: bool,
}

/// Applies the presence rule shared by every kind, then the kind's own merge.
fn typed<'a, T: 'a>(
    inputs: &[&'a ColumnStatistics],
    get: impl Fn(&'a ColumnStatistics) -> Option<&'a T>,
    merge: impl Fn(&[Part<'a, T>]) -> Option<T>,
) -> Option<T> {
    let mut parts = Vec::with_capacity(inputs.len());
    for s in inputs {
        let empty = s.number_of_values == Some(0);
        match get(s) {
            Some(stats) => parts.push(Part { stats, empty }),
            None if empty => {}
            None => return None,
        }
    }
    if parts.is_empty() {
        return None;
    }
    merge(&parts)
}

fn sum_all(values: impl Iterator<Item = Option<u64>>) -> Option<u64> {
    values
        .into_iter()
        .try_fold(0u64, |acc, v| acc.checked_add(v?))
}

fn sum_all_i64(values: impl Iterator<Item = Option<i64>>) -> Option<i64> {
    values
        .into_iter()
        .try_fold(0i64, |acc, v| acc.checked_add(v?))
}

/// Folds min and max over the inputs that have values. `None` means some input with values
/// lacked a bound, so no range can be claimed. `Some((None, None))` means no input had values.
fn widen<'a, T: 'a, V: Clone>(
    parts: &[Part<'a, T>],
    min_of: impl Fn(&'a T) -> Option<V>,
    max_of: impl Fn(&'a T) -> Option<V>,
    cmp: impl Fn(&V, &V) -> Ordering,
) -> Option<(Option<V>, Option<V>)> {
    let mut min: Option<V> = None;
    let mut max: Option<V> = None;
    for p in parts.iter().filter(|p| !p.empty) {
        let (lo, hi) = (min_of(p.stats)?, max_of(p.stats)?);
        if min.as_ref().is_none_or(|m| cmp(&lo, m) == Ordering::Less) {
            min = Some(lo);
        }
        if max
            .as_ref()
            .is_none_or(|m| cmp(&hi, m) == Ordering::Greater)
        {
            max = Some(hi);
        }
    }
    Some((min, max))
}

fn merge_int(parts: &[Part<'_, IntegerStatistics>]) -> Option<IntegerStatistics> {
    let (minimum, maximum) = widen(parts, |s| s.minimum, |s| s.maximum, Ord::cmp)?;
    Some(IntegerStatistics {
        minimum,
        maximum,
        // Java leaves the sum out when it overflowed; a missing sum means the same here.
        sum: sum_all_i64(parts.iter().map(|p| p.stats.sum.or(p.empty.then_some(0)))),
    })
}

fn merge_double(parts: &[Part<'_, DoubleStatistics>]) -> Option<DoubleStatistics> {
    // NaN compares with nothing: a range containing one cannot be widened soundly.
    let finite = |v: Option<f64>| v.filter(|x| !x.is_nan());
    let (minimum, maximum) = widen(
        parts,
        |s| finite(s.minimum),
        |s| finite(s.maximum),
        |a: &f64, b: &f64| a.total_cmp(b),
    )?;
    let sum = parts.iter().try_fold(0f64, |acc, p| {
        Some(acc + p.stats.sum.or(p.empty.then_some(0.0))?)
    });
    Some(DoubleStatistics {
        minimum,
        maximum,
        sum,
    })
}

/// A string bound and whether it is exact (`minimum`/`maximum`) or a truncated
/// `lowerBound`/`upperBound`, which Java writes for values longer than 1024 bytes.
#[derive(Clone)]
struct Bound<'a> {
    value: &'a str,
    exact: bool,
}

/// The exact value when the file has one, else its truncated bound.
fn bound<'a>(exact: &'a Option<String>, truncated: &'a Option<String>) -> Option<Bound<'a>> {
    match (exact, truncated) {
        (Some(v), _) => Some(Bound {
            value: v,
            exact: true,
        }),
        (None, Some(v)) => Some(Bound {
            value: v,
            exact: false,
        }),
        (None, None) => None,
    }
}

fn string_lower(s: &StringStatistics) -> Option<Bound<'_>> {
    bound(&s.minimum, &s.lower_bound)
}

fn string_upper(s: &StringStatistics) -> Option<Bound<'_>> {
    bound(&s.maximum, &s.upper_bound)
}

fn merge_string(parts: &[Part<'_, StringStatistics>]) -> Option<StringStatistics> {
    // Byte order of the UTF-8 encoding, as Java ORC compares its Text values. On a tie an exact
    // value wins over a bound: the merged extreme then really occurs in the data.
    let mut min: Option<Bound<'_>> = None;
    let mut max: Option<Bound<'_>> = None;
    for p in parts.iter().filter(|p| !p.empty) {
        let (lo, hi) = (string_lower(p.stats)?, string_upper(p.stats)?);
        let replace_min =
            min.as_ref()
                .is_none_or(|m| match lo.value.as_bytes().cmp(m.value.as_bytes()) {
                    Ordering::Less => true,
                    Ordering::Equal => lo.exact && !m.exact,
                    Ordering::Greater => false,
                });
        if replace_min {
            min = Some(lo);
        }
        let replace_max =
            max.as_ref()
                .is_none_or(|m| match hi.value.as_bytes().cmp(m.value.as_bytes()) {
                    Ordering::Greater => true,
                    Ordering::Equal => hi.exact && !m.exact,
                    Ordering::Less => false,
                });
        if replace_max {
            max = Some(hi);
        }
    }
    let split = |b: Option<Bound<'_>>| match b {
        Some(Bound { value, exact: true }) => (Some(value.to_owned()), None),
        Some(Bound {
            value,
            exact: false,
        }) => (None, Some(value.to_owned())),
        None => (None, None),
    };
    let (minimum, lower_bound) = split(min);
    let (maximum, upper_bound) = split(max);
    Some(StringStatistics {
        minimum,
        maximum,
        sum: sum_all_i64(parts.iter().map(|p| p.stats.sum.or(p.empty.then_some(0)))),
        lower_bound,
        upper_bound,
    })
}

fn merge_bucket(parts: &[Part<'_, BucketStatistics>]) -> Option<BucketStatistics> {
    let width = parts.first()?.stats.count.len();
    let mut count = vec![0u64; width];
    for p in parts {
        if p.stats.count.len() != width {
            return None;
        }
        for (acc, v) in count.iter_mut().zip(&p.stats.count) {
            *acc = acc.checked_add(*v)?;
        }
    }
    Some(BucketStatistics { count })
}

fn merge_decimal(parts: &[Part<'_, DecimalStatistics>]) -> Option<DecimalStatistics> {
    let parse = |v: &Option<String>| v.as_deref().and_then(Decimal::parse);
    let (min, max) = widen(
        parts,
        |s| parse(&s.minimum),
        |s| parse(&s.maximum),
        Decimal::cmp_value,
    )?;
    let sum = parts.iter().try_fold(Decimal::zero(), |acc, p| {
        let v = match (&p.stats.sum, p.empty) {
            (Some(s), _) => Decimal::parse(s)?,
            (None, true) => Decimal::zero(),
            (None, false) => return None,
        };
        acc.checked_add(&v)
    });
    Some(DecimalStatistics {
        // The winners' original text is kept: it is what their writer meant.
        minimum: min.map(|d| d.text),
        maximum: max.map(|d| d.text),
        sum: sum.map(|d| d.to_text()),
    })
}

fn merge_date(parts: &[Part<'_, DateStatistics>]) -> Option<DateStatistics> {
    let (minimum, maximum) = widen(parts, |s| s.minimum, |s| s.maximum, Ord::cmp)?;
    Some(DateStatistics { minimum, maximum })
}

fn merge_binary(parts: &[Part<'_, BinaryStatistics>]) -> Option<BinaryStatistics> {
    Some(BinaryStatistics {
        sum: sum_all_i64(parts.iter().map(|p| p.stats.sum.or(p.empty.then_some(0)))),
    })
}

/// A timestamp bound: UTC milliseconds plus the sub-millisecond nanos. The nanos fields hold
/// nanos + 1, with 0/absent meaning "not recorded": then a minimum may be anywhere from 0 and a
/// maximum up to 999_999 nanos past its millisecond, which is how the comparison treats them.
#[derive(Clone)]
struct TsBound<'a> {
    millis: i64,
    nanos: i64,
    source: &'a TimestampStatistics,
}

fn merge_timestamp(parts: &[Part<'_, TimestampStatistics>]) -> Option<TimestampStatistics> {
    let min_of = |s| {
        let s: &TimestampStatistics = s;
        let nanos = s
            .minimum_nanos
            .filter(|&n| n > 0)
            .map_or(0, |n| i64::from(n) - 1);
        s.minimum_utc.map(|millis| TsBound {
            millis,
            nanos,
            source: s,
        })
    };
    let max_of = |s| {
        let s: &TimestampStatistics = s;
        let nanos = s
            .maximum_nanos
            .filter(|&n| n > 0)
            .map_or(999_999, |n| i64::from(n) - 1);
        s.maximum_utc.map(|millis| TsBound {
            millis,
            nanos,
            source: s,
        })
    };
    let cmp = |a: &TsBound<'_>, b: &TsBound<'_>| (a.millis, a.nanos).cmp(&(b.millis, b.nanos));
    // Only the UTC fields are comparable across files: the legacy `minimum`/`maximum` are in
    // each writer's local time zone, which can differ between inputs.
    let (min, max) = widen(parts, min_of, max_of, cmp)?;
    let mut out = TimestampStatistics {
        minimum_utc: min.as_ref().map(|b| b.millis),
        minimum_nanos: min.as_ref().and_then(|b| b.source.minimum_nanos),
        maximum_utc: max.as_ref().map(|b| b.millis),
        maximum_nanos: max.as_ref().and_then(|b| b.source.maximum_nanos),
        ..Default::default()
    };
    // Older readers only know the local fields. Keep them when every input with values has
    // them and the local winner is the UTC winner's own value, so they stay consistent.
    let local = widen(parts, |s| s.minimum, |s| s.maximum, Ord::cmp);
    if let (Some((Some(lo), Some(hi))), Some(mn), Some(mx)) = (local, &min, &max) {
        if mn.source.minimum == Some(lo) && mx.source.maximum == Some(hi) {
            out.minimum = Some(lo);
            out.maximum = Some(hi);
        }
    }
    Some(out)
}

fn merge_collection(parts: &[Part<'_, CollectionStatistics>]) -> Option<CollectionStatistics> {
    let (min_children, max_children) =
        widen(parts, |s| s.min_children, |s| s.max_children, Ord::cmp)?;
    let total_children = sum_all(
        parts
            .iter()
            .map(|p| p.stats.total_children.or(p.empty.then_some(0))),
    )?;
    Some(CollectionStatistics {
        min_children,
        max_children,
        total_children: Some(total_children),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn col(values: u64, has_null: bool) -> ColumnStatistics {
        ColumnStatistics {
            number_of_values: Some(values),
            has_null: Some(has_null),
            ..Default::default()
        }
    }

    fn merge(inputs: &[ColumnStatistics]) -> ColumnStatistics {
        let refs: Vec<&ColumnStatistics> = inputs.iter().collect();
        merge_column_statistics(&refs)
    }

    fn int(min: i64, max: i64, sum: Option<i64>) -> ColumnStatistics {
        ColumnStatistics {
            int_statistics: Some(IntegerStatistics {
                minimum: Some(min),
                maximum: Some(max),
                sum,
            }),
            ..col(3, false)
        }
    }

    #[test]
    fn counts_add_and_has_null_ors() {
        let m = merge(&[col(3, false), col(4, true), col(0, false)]);
        assert_eq!(m.number_of_values, Some(7));
        assert_eq!(m.has_null, Some(true));
        let mut unknown = col(1, false);
        unknown.has_null = None;
        unknown.number_of_values = None;
        let m = merge(&[col(3, false), unknown]);
        assert_eq!(
            m.has_null, None,
            "unknown hasNull stays unknown (Java reads it as true)"
        );
        assert_eq!(m.number_of_values, None);
        let mut bytes = col(1, false);
        bytes.bytes_on_disk = Some(10);
        assert_eq!(
            merge(&[bytes.clone(), bytes.clone()]).bytes_on_disk,
            Some(20)
        );
        assert_eq!(merge(&[bytes, col(1, false)]).bytes_on_disk, None);
    }

    #[test]
    fn integers_widen_and_sum_drops_on_overflow_or_absence() {
        let m = merge(&[int(-5, 10, Some(20)), int(0, 100, Some(30))])
            .int_statistics
            .unwrap();
        assert_eq!(
            (m.minimum, m.maximum, m.sum),
            (Some(-5), Some(100), Some(50))
        );
        let m = merge(&[int(0, 1, Some(i64::MAX)), int(0, 1, Some(1))])
            .int_statistics
            .unwrap();
        assert_eq!((m.minimum, m.maximum, m.sum), (Some(0), Some(1), None));
        let m = merge(&[int(0, 1, None), int(0, 1, Some(1))])
            .int_statistics
            .unwrap();
        assert_eq!(m.sum, None);
        // An input with values but no minimum: no range can be claimed, the kind is dropped.
        let mut no_min = int(0, 1, Some(1));
        no_min.int_statistics.as_mut().unwrap().minimum = None;
        assert_eq!(merge(&[int(0, 1, Some(1)), no_min]).int_statistics, None);
    }

    #[test]
    fn all_null_inputs_are_neutral_but_other_gaps_drop_the_kind() {
        // Java writes `IntegerStatistics { sum: 0 }` for an all-null column; some writers omit it.
        let empty_with = ColumnStatistics {
            int_statistics: Some(IntegerStatistics {
                sum: Some(0),
                ..Default::default()
            }),
            ..col(0, true)
        };
        let empty_without = col(0, true);
        let m = merge(&[int(2, 3, Some(5)), empty_with, empty_without]);
        let i = m.int_statistics.unwrap();
        assert_eq!((i.minimum, i.maximum, i.sum), (Some(2), Some(3), Some(5)));
        assert_eq!(m.has_null, Some(true));
        // An input with values but without the kind (or with another kind): dropped.
        assert_eq!(
            merge(&[int(2, 3, Some(5)), col(2, false)]).int_statistics,
            None
        );
        let double = ColumnStatistics {
            double_statistics: Some(DoubleStatistics {
                minimum: Some(1.0),
                maximum: Some(2.0),
                sum: Some(3.0),
            }),
            ..col(2, false)
        };
        let m = merge(&[int(2, 3, Some(5)), double]);
        assert_eq!((m.int_statistics, m.double_statistics), (None, None));
        assert_eq!(m.number_of_values, Some(5), "counts survive a dropped kind");
    }

    fn dbl(min: f64, max: f64, sum: Option<f64>) -> ColumnStatistics {
        ColumnStatistics {
            double_statistics: Some(DoubleStatistics {
                minimum: Some(min),
                maximum: Some(max),
                sum,
            }),
            ..col(2, false)
        }
    }

    #[test]
    fn doubles_widen_sum_adds_and_nan_drops() {
        let m = merge(&[dbl(-1.5, 2.0, Some(1.0)), dbl(-0.5, 9.25, Some(2.5))]);
        let d = m.double_statistics.unwrap();
        assert_eq!(
            (d.minimum, d.maximum, d.sum),
            (Some(-1.5), Some(9.25), Some(3.5))
        );
        let m = merge(&[dbl(f64::NAN, 2.0, Some(1.0)), dbl(0.0, 1.0, Some(1.0))]);
        assert_eq!(m.double_statistics, None);
        let d = merge(&[dbl(0.0, 2.0, None), dbl(0.0, 1.0, Some(1.0))])
            .double_statistics
            .unwrap();
        assert_eq!((d.maximum, d.sum), (Some(2.0), None));
    }

    fn string(
        min: Option<&str>,
        max: Option<&str>,
        lower: Option<&str>,
        upper: Option<&str>,
    ) -> ColumnStatistics {
        ColumnStatistics {
            string_statistics: Some(StringStatistics {
                minimum: min.map(Into::into),
                maximum: max.map(Into::into),
                sum: Some(10),
                lower_bound: lower.map(Into::into),
                upper_bound: upper.map(Into::into),
            }),
            ..col(2, false)
        }
    }

    #[test]
    fn strings_widen_by_utf8_bytes() {
        // 'é' (0xC3 0xA9) sorts after 'z' by bytes, as in Java ORC; 'Z' sorts before 'a'.
        let m = merge(&[
            string(Some("a"), Some("z"), None, None),
            string(Some("Z"), Some("é"), None, None),
        ]);
        let s = m.string_statistics.unwrap();
        assert_eq!(
            (s.minimum.as_deref(), s.maximum.as_deref()),
            (Some("Z"), Some("é"))
        );
        assert_eq!(s.sum, Some(20));
        assert_eq!((s.lower_bound, s.upper_bound), (None, None));
    }

    #[test]
    fn truncated_string_bounds_stay_bounds() {
        // Input 2 had values too long to store: only bounds. They win here, so the output keeps
        // them as bounds, never as exact min/max.
        let m = merge(&[
            string(Some("b"), Some("m"), None, None),
            string(None, None, Some("a"), Some("n")),
        ]);
        let s = m.string_statistics.unwrap();
        assert_eq!((s.minimum, s.maximum), (None, None));
        assert_eq!(
            (s.lower_bound.as_deref(), s.upper_bound.as_deref()),
            (Some("a"), Some("n"))
        );
        // Exact values that are more extreme than the bounds stay exact.
        let s = merge(&[
            string(Some("0"), Some("z"), None, None),
            string(None, None, Some("a"), Some("n")),
        ])
        .string_statistics
        .unwrap();
        assert_eq!(
            (s.minimum.as_deref(), s.maximum.as_deref()),
            (Some("0"), Some("z"))
        );
        assert_eq!((s.lower_bound, s.upper_bound), (None, None));
        // A tie prefers the exact value, which really occurs.
        let s = merge(&[
            string(Some("a"), Some("n"), None, None),
            string(None, None, Some("a"), Some("n")),
        ])
        .string_statistics
        .unwrap();
        assert_eq!(
            (s.minimum.as_deref(), s.maximum.as_deref()),
            (Some("a"), Some("n"))
        );
        // Neither value nor bound on an input with values: dropped.
        let m = merge(&[
            string(Some("a"), Some("b"), None, None),
            string(None, Some("c"), None, None),
        ]);
        assert_eq!(m.string_statistics, None);
    }

    fn dec(min: &str, max: &str, sum: Option<&str>) -> ColumnStatistics {
        ColumnStatistics {
            decimal_statistics: Some(DecimalStatistics {
                minimum: Some(min.into()),
                maximum: Some(max.into()),
                sum: sum.map(Into::into),
            }),
            ..col(2, false)
        }
    }

    #[test]
    fn decimals_compare_numerically_and_add_exactly() {
        let d = merge(&[
            dec("-0.0000000001", "9.5", Some("12345.6788999999")),
            dec("-10", "10.25", Some("-99999998.74")),
        ])
        .decimal_statistics
        .unwrap();
        // "10.25" > "9.5" numerically though not as text; "-10" < "-0.0000000001".
        assert_eq!(
            (d.minimum.as_deref(), d.maximum.as_deref()),
            (Some("-10"), Some("10.25"))
        );
        assert_eq!(d.sum.as_deref(), Some("-99987653.0611000001"));
        let d = merge(&[dec("1", "2", Some("0.50")), dec("1", "2", Some("0.5"))])
            .decimal_statistics
            .unwrap();
        assert_eq!(d.sum.as_deref(), Some("1"));
        // Sum beyond 38 digits, or missing, or unparsable: only the sum goes.
        let nines = "9".repeat(38);
        let d = merge(&[dec("1", "2", Some(&nines)), dec("1", "2", Some("1"))])
            .decimal_statistics
            .unwrap();
        assert_eq!((d.minimum.as_deref(), d.sum), (Some("1"), None));
        let d = merge(&[dec("1", "2", None), dec("1", "2", Some("1"))])
            .decimal_statistics
            .unwrap();
        assert_eq!(d.sum, None);
        // An unparsable bound: the kind goes.
        assert_eq!(
            merge(&[dec("1e5", "2", Some("1")), dec("1", "2", Some("1"))]).decimal_statistics,
            None
        );
        // Ordering details.
        let p = |s: &str| Decimal::parse(s).unwrap();
        assert_eq!(Decimal::cmp_value(&p("0.5"), &p("0.50")), Ordering::Equal);
        assert_eq!(Decimal::cmp_value(&p("-0.5"), &p("-0.45")), Ordering::Less);
        assert_eq!(
            Decimal::cmp_value(&p("100"), &p("99.999")),
            Ordering::Greater
        );
        assert_eq!(Decimal::cmp_value(&p("-0"), &p("0")), Ordering::Equal);
    }

    #[test]
    fn dates_widen() {
        let date = |min, max| ColumnStatistics {
            date_statistics: Some(DateStatistics {
                minimum: Some(min),
                maximum: Some(max),
            }),
            ..col(1, false)
        };
        let d = merge(&[date(-3000, 10), date(5, 20000)])
            .date_statistics
            .unwrap();
        assert_eq!((d.minimum, d.maximum), (Some(-3000), Some(20000)));
        let mut no_max = date(0, 1);
        no_max.date_statistics.as_mut().unwrap().maximum = None;
        assert_eq!(merge(&[date(0, 1), no_max]).date_statistics, None);
    }

    fn ts(
        min: i64,
        min_nanos: Option<i32>,
        max: i64,
        max_nanos: Option<i32>,
        local_shift: Option<i64>,
    ) -> ColumnStatistics {
        ColumnStatistics {
            timestamp_statistics: Some(TimestampStatistics {
                minimum_utc: Some(min),
                maximum_utc: Some(max),
                minimum_nanos: min_nanos,
                maximum_nanos: max_nanos,
                minimum: local_shift.map(|s| min + s),
                maximum: local_shift.map(|s| max + s),
            }),
            ..col(1, false)
        }
    }

    #[test]
    fn timestamps_widen_on_utc_with_nanos() {
        // Same millisecond: the sub-millisecond nanos (stored + 1) decide.
        let t = merge(&[
            ts(1000, Some(501), 5000, Some(1), Some(0)),
            ts(1000, Some(101), 5000, Some(900), Some(0)),
        ])
        .timestamp_statistics
        .unwrap();
        assert_eq!((t.minimum_utc, t.minimum_nanos), (Some(1000), Some(101)));
        assert_eq!((t.maximum_utc, t.maximum_nanos), (Some(5000), Some(900)));
        assert_eq!((t.minimum, t.maximum), (Some(1000), Some(5000)));
        // A maximum without nanos may reach 999_999 ns past its millisecond: it wins a tie.
        let t = merge(&[
            ts(0, None, 5000, None, None),
            ts(0, None, 5000, Some(900), None),
        ])
        .timestamp_statistics
        .unwrap();
        assert_eq!((t.maximum_utc, t.maximum_nanos), (Some(5000), None));
        // Pre-1970 values are negative milliseconds.
        let t = merge(&[
            ts(-1_000_000, None, -5, None, None),
            ts(10, None, 20, None, None),
        ])
        .timestamp_statistics
        .unwrap();
        assert_eq!((t.minimum_utc, t.maximum_utc), (Some(-1_000_000), Some(20)));
        // Local (writer time zone) fields: kept only when they agree with the UTC winners.
        let t = merge(&[
            ts(0, None, 10, None, Some(3_600_000)),
            ts(5, None, 20, None, Some(-3_600_000)),
        ])
        .timestamp_statistics
        .unwrap();
        assert_eq!((t.minimum_utc, t.maximum_utc), (Some(0), Some(20)));
        assert_eq!((t.minimum, t.maximum), (None, None));
        // Without UTC values nothing comparable is left.
        let mut local_only = ts(0, None, 1, None, Some(0));
        let inner = local_only.timestamp_statistics.as_mut().unwrap();
        inner.minimum_utc = None;
        inner.maximum_utc = None;
        assert_eq!(
            merge(&[local_only, ts(0, None, 1, None, Some(0))]).timestamp_statistics,
            None
        );
    }

    #[test]
    fn binary_buckets_and_collections_add() {
        let bin = |sum| ColumnStatistics {
            binary_statistics: Some(BinaryStatistics { sum }),
            ..col(1, false)
        };
        assert_eq!(
            merge(&[bin(Some(3)), bin(Some(4))])
                .binary_statistics
                .unwrap()
                .sum,
            Some(7)
        );
        assert_eq!(
            merge(&[bin(Some(i64::MAX)), bin(Some(4))])
                .binary_statistics
                .unwrap()
                .sum,
            None
        );

        let bucket = |count: Vec<u64>| ColumnStatistics {
            bucket_statistics: Some(BucketStatistics { count }),
            ..col(1, false)
        };
        assert_eq!(
            merge(&[bucket(vec![3]), bucket(vec![4])])
                .bucket_statistics
                .unwrap()
                .count,
            vec![7]
        );
        assert_eq!(
            merge(&[bucket(vec![3]), bucket(vec![4, 1])]).bucket_statistics,
            None
        );

        let coll = |min, max, total| ColumnStatistics {
            collection_statistics: Some(CollectionStatistics {
                min_children: min,
                max_children: max,
                total_children: total,
            }),
            ..col(1, false)
        };
        let c = merge(&[
            coll(Some(1), Some(5), Some(10)),
            coll(Some(0), Some(3), Some(4)),
        ])
        .collection_statistics
        .unwrap();
        assert_eq!(
            (c.min_children, c.max_children, c.total_children),
            (Some(0), Some(5), Some(14))
        );
        assert_eq!(
            merge(&[
                coll(Some(1), Some(5), None),
                coll(Some(0), Some(3), Some(4))
            ])
            .collection_statistics,
            None
        );
        assert_eq!(
            merge(&[
                coll(None, Some(5), Some(1)),
                coll(Some(0), Some(3), Some(4))
            ])
            .collection_statistics,
            None
        );
    }

    #[test]
    fn file_statistics_merge_column_by_column() {
        let a = vec![col(3, false), int(1, 2, Some(3))];
        let b = vec![col(4, false), int(-1, 0, Some(-1))];
        let mut fold = StatisticsFold::default();
        fold.add(&a);
        fold.add(&b);
        let merged = fold.finish();
        assert_eq!(merged.len(), 2);
        assert_eq!(merged[0].number_of_values, Some(7));
        let i = merged[1].int_statistics.as_ref().unwrap();
        assert_eq!((i.minimum, i.maximum, i.sum), (Some(-1), Some(2), Some(2)));
        assert!(StatisticsFold::default().finish().is_empty());
    }

    #[test]
    fn folding_one_file_at_a_time_claims_what_merging_all_at_once_does() {
        let files = [
            vec![col(3, false), int(1, 2, Some(3))],
            vec![col(0, false), ColumnStatistics::default()],
            vec![col(4, true), int(-1, 0, Some(-1))],
            vec![col(2, false), int(7, 9, None)],
        ];
        for n in 1..=files.len() {
            let mut fold = StatisticsFold::default();
            for f in &files[..n] {
                fold.add(f);
            }
            let folded = fold.finish();
            for (c, column) in folded.iter().enumerate() {
                let all: Vec<&ColumnStatistics> = files[..n].iter().map(|f| &f[c]).collect();
                assert_eq!(
                    column,
                    &merge_column_statistics(&all),
                    "{n} files, column {c}"
                );
            }
        }
    }
}
