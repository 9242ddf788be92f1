//! Column statistics as the writer gathers them: one accumulator per column per row group,
//! merged into the stripe's, merged into the file's.
//!
//! What a writer cannot state exactly it leaves out: an integer or decimal sum that overflows,
//! double bounds and sum once a NaN was seen, a string bound that cannot be truncated. String
//! bounds longer than 1024 bytes are written as the spec's `lowerBound`/`upperBound`: the
//! minimum cut at a character boundary, the maximum cut and its last character incremented.

use orc_rust::proto;

/// Longest string bound written as is (the spec's and Java's limit).
const MAX_STRING_BOUND: usize = 1024;

#[derive(Clone, Debug)]
pub(crate) enum Kind {
    /// struct, union and the root: counts only.
    Plain,
    Boolean {
        trues: u64,
    },
    Integer {
        range: Option<(i64, i64)>,
        sum: Option<i64>,
    },
    Double {
        range: Option<(f64, f64)>,
        sum: f64,
        nan: bool,
    },
    String {
        range: Option<(String, String)>,
        total: Option<i64>,
    },
    Binary {
        total: Option<i64>,
    },
    Decimal {
        range: Option<(i128, i128)>,
        sum: Option<i128>,
        scale: u32,
    },
    Date {
        range: Option<(i32, i32)>,
    },
    /// Bounds as (UTC milliseconds, nanos within the millisecond); `bounded` is false once a
    /// value came whose wall clock is not known here (a plain timestamp stored in a zone other
    /// than UTC): the bounds are then left out, which readers take as unknown.
    Timestamp {
        range: Option<((i64, i32), (i64, i32))>,
        bounded: bool,
    },
    Collection {
        children: Option<(u64, u64)>,
        total: u64,
    },
}

#[derive(Clone, Debug)]
pub(crate) struct Stats {
    pub(crate) values: u64,
    pub(crate) has_null: bool,
    pub(crate) kind: Kind,
}

fn widen<T: PartialOrd + Clone>(range: &mut Option<(T, T)>, low: &T, high: &T) {
    match range {
        None => *range = Some((low.clone(), high.clone())),
        Some((min, max)) => {
            if low < min {
                *min = low.clone();
            }
            if high > max {
                *max = high.clone();
            }
        }
    }
}

fn merge_range<T: PartialOrd + Clone>(range: &mut Option<(T, T)>, other: &Option<(T, T)>) {
    if let Some((low, high)) = other {
        widen(range, low, high);
    }
}

impl Stats {
    pub(crate) fn new(kind: Kind) -> Self {
        Self {
            values: 0,
            has_null: false,
            kind,
        }
    }

    /// The same kind, empty: the accumulator for the next row group.
    pub(crate) fn empty_like(&self) -> Self {
        let kind = match &self.kind {
            Kind::Plain => Kind::Plain,
            Kind::Boolean { .. } => Kind::Boolean { trues: 0 },
            Kind::Integer { .. } => Kind::Integer {
                range: None,
                sum: Some(0),
            },
            Kind::Double { .. } => Kind::Double {
                range: None,
                sum: 0.0,
                nan: false,
            },
            Kind::String { .. } => Kind::String {
                range: None,
                total: Some(0),
            },
            Kind::Binary { .. } => Kind::Binary { total: Some(0) },
            Kind::Decimal { scale, .. } => Kind::Decimal {
                range: None,
                sum: Some(0),
                scale: *scale,
            },
            Kind::Date { .. } => Kind::Date { range: None },
            Kind::Timestamp { .. } => Kind::Timestamp {
                range: None,
                bounded: true,
            },
            Kind::Collection { .. } => Kind::Collection {
                children: None,
                total: 0,
            },
        };
        Self::new(kind)
    }

    pub(crate) fn null(&mut self) {
        self.has_null = true;
    }

    pub(crate) fn plain(&mut self) {
        self.values += 1;
    }

    pub(crate) fn boolean(&mut self, v: bool) {
        self.values += 1;
        if let Kind::Boolean { trues } = &mut self.kind {
            *trues += u64::from(v);
        }
    }

    pub(crate) fn integer(&mut self, v: i64) {
        self.values += 1;
        if let Kind::Integer { range, sum } = &mut self.kind {
            widen(range, &v, &v);
            *sum = sum.and_then(|s| s.checked_add(v));
        }
    }

    pub(crate) fn double(&mut self, v: f64) {
        self.values += 1;
        if let Kind::Double { range, sum, nan } = &mut self.kind {
            if v.is_nan() {
                *nan = true;
            } else {
                widen(range, &v, &v);
            }
            *sum += v;
        }
    }

    /// A string value's UTF-8 bytes (an arrow Utf8 array's, which are valid): compared as
    /// bytes, which order as the strings do, and turned into a string only when they become a
    /// bound. Checking each value's UTF-8 was a tenth of the sort's time on its main thread.
    pub(crate) fn string(&mut self, v: &[u8]) {
        self.values += 1;
        if let Kind::String { range, total } = &mut self.kind {
            match range {
                None => {
                    let v = String::from_utf8_lossy(v).into_owned();
                    *range = Some((v.clone(), v));
                }
                Some((min, max)) => {
                    if v < min.as_bytes() {
                        min.clear();
                        min.push_str(&String::from_utf8_lossy(v));
                    }
                    if v > max.as_bytes() {
                        max.clear();
                        max.push_str(&String::from_utf8_lossy(v));
                    }
                }
            }
            *total = total.and_then(|t| t.checked_add(v.len() as i64));
        }
    }

    pub(crate) fn binary(&mut self, v: &[u8]) {
        self.values += 1;
        if let Kind::Binary { total } = &mut self.kind {
            *total = total.and_then(|t| t.checked_add(v.len() as i64));
        }
    }

    pub(crate) fn decimal(&mut self, v: i128) {
        self.values += 1;
        if let Kind::Decimal { range, sum, .. } = &mut self.kind {
            widen(range, &v, &v);
            *sum = sum
                .and_then(|s| s.checked_add(v))
                .filter(|s| fits_38_digits(*s));
        }
    }

    pub(crate) fn date(&mut self, v: i32) {
        self.values += 1;
        if let Kind::Date { range } = &mut self.kind {
            widen(range, &v, &v);
        }
    }

    pub(crate) fn timestamp(&mut self, millis: i64, nanos_in_milli: i32) {
        self.values += 1;
        if let Kind::Timestamp {
            range,
            bounded: true,
        } = &mut self.kind
        {
            let v = (millis, nanos_in_milli);
            widen(range, &v, &v);
        }
    }

    /// A timestamp whose wall clock is not known here: counted, and the bounds dropped.
    pub(crate) fn timestamp_unbounded(&mut self) {
        self.values += 1;
        if let Kind::Timestamp { range, bounded } = &mut self.kind {
            *range = None;
            *bounded = false;
        }
    }

    pub(crate) fn collection(&mut self, children: u64) {
        self.values += 1;
        if let Kind::Collection {
            children: range,
            total,
        } = &mut self.kind
        {
            widen(range, &children, &children);
            *total += children;
        }
    }

    pub(crate) fn merge(&mut self, other: &Stats) {
        self.values += other.values;
        self.has_null |= other.has_null;
        match (&mut self.kind, &other.kind) {
            (Kind::Boolean { trues }, Kind::Boolean { trues: o }) => *trues += o,
            (Kind::Integer { range, sum }, Kind::Integer { range: r, sum: s }) => {
                merge_range(range, r);
                *sum = sum.zip(*s).and_then(|(a, b)| a.checked_add(b));
            }
            (
                Kind::Double { range, sum, nan },
                Kind::Double {
                    range: r,
                    sum: s,
                    nan: n,
                },
            ) => {
                merge_range(range, r);
                *sum += s;
                *nan |= n;
            }
            (Kind::String { range, total }, Kind::String { range: r, total: t }) => {
                merge_range(range, r);
                *total = total.zip(*t).and_then(|(a, b)| a.checked_add(b));
            }
            (Kind::Binary { total }, Kind::Binary { total: t }) => {
                *total = total.zip(*t).and_then(|(a, b)| a.checked_add(b));
            }
            (
                Kind::Decimal { range, sum, .. },
                Kind::Decimal {
                    range: r, sum: s, ..
                },
            ) => {
                merge_range(range, r);
                *sum = sum
                    .zip(*s)
                    .and_then(|(a, b)| a.checked_add(b))
                    .filter(|s| fits_38_digits(*s));
            }
            (Kind::Date { range }, Kind::Date { range: r }) => {
                merge_range(range, r);
            }
            (
                Kind::Timestamp { range, bounded },
                Kind::Timestamp {
                    range: r,
                    bounded: b,
                },
            ) => {
                *bounded &= *b;
                if *bounded {
                    merge_range(range, r);
                } else {
                    *range = None;
                }
            }
            (
                Kind::Collection { children, total },
                Kind::Collection {
                    children: c,
                    total: t,
                },
            ) => {
                merge_range(children, c);
                *total += t;
            }
            _ => {}
        }
    }

    pub(crate) fn to_proto(&self) -> proto::ColumnStatistics {
        let mut out = proto::ColumnStatistics {
            number_of_values: Some(self.values),
            has_null: Some(self.has_null),
            ..Default::default()
        };
        match &self.kind {
            Kind::Plain => {}
            Kind::Boolean { trues } => {
                out.bucket_statistics = Some(proto::BucketStatistics {
                    count: vec![*trues],
                });
            }
            Kind::Integer { range, sum } => {
                out.int_statistics = Some(proto::IntegerStatistics {
                    minimum: range.map(|r| r.0),
                    maximum: range.map(|r| r.1),
                    sum: *sum,
                });
            }
            Kind::Double { range, sum, nan } => {
                let exact = !*nan;
                out.double_statistics = Some(proto::DoubleStatistics {
                    minimum: range.filter(|_| exact).map(|r| r.0),
                    maximum: range.filter(|_| exact).map(|r| r.1),
                    sum: Some(*sum).filter(|s| exact && s.is_finite()),
                });
            }
            Kind::String { range, total } => {
                let mut s = proto::StringStatistics {
                    sum: *total,
                    ..Default::default()
                };
                if let Some((min, max)) = range {
                    if min.len() <= MAX_STRING_BOUND {
                        s.minimum = Some(min.clone());
                    } else {
                        s.lower_bound = Some(truncate(min).to_owned());
                    }
                    if max.len() <= MAX_STRING_BOUND {
                        s.maximum = Some(max.clone());
                    } else {
                        s.upper_bound = upper_bound(max);
                    }
                    if s.upper_bound.is_none() && s.maximum.is_none() {
                        // No sound upper bound: claim no bounds at all.
                        s.minimum = None;
                        s.lower_bound = None;
                    }
                }
                out.string_statistics = Some(s);
            }
            Kind::Binary { total } => {
                out.binary_statistics = Some(proto::BinaryStatistics { sum: *total });
            }
            Kind::Decimal { range, sum, scale } => {
                out.decimal_statistics = Some(proto::DecimalStatistics {
                    minimum: range.map(|r| decimal_string(r.0, *scale)),
                    maximum: range.map(|r| decimal_string(r.1, *scale)),
                    sum: sum.map(|s| decimal_string(s, *scale)),
                });
            }
            Kind::Date { range } => {
                out.date_statistics = Some(proto::DateStatistics {
                    minimum: range.map(|r| r.0),
                    maximum: range.map(|r| r.1),
                });
            }
            Kind::Timestamp { bounded: false, .. } => {}
            Kind::Timestamp {
                range,
                bounded: true,
            } => {
                // UTC milliseconds; the nanos fields hold the sub-millisecond nanos + 1.
                // Readers take a missing minimum's nanos as 0 but a missing maximum's as
                // 999_999, so the minimum's is left out when it is 0 (as the reference writer
                // does) and the maximum's is always written. The local-time fields are
                // deprecated.
                out.timestamp_statistics = Some(proto::TimestampStatistics {
                    minimum_utc: range.map(|r| r.0 .0),
                    maximum_utc: range.map(|r| r.1 .0),
                    minimum_nanos: range.and_then(|r| Some(r.0 .1 + 1).filter(|n| *n != 1)),
                    maximum_nanos: range.map(|r| r.1 .1 + 1),
                    ..Default::default()
                });
            }
            Kind::Collection { children, total } => {
                out.collection_statistics = Some(proto::CollectionStatistics {
                    min_children: children.map(|c| c.0),
                    max_children: children.map(|c| c.1),
                    total_children: Some(*total),
                });
            }
        }
        out
    }
}

fn fits_38_digits(v: i128) -> bool {
    v.unsigned_abs() < 10u128.pow(38)
}

/// The longest prefix of at most 1024 bytes that ends on a character boundary.
fn truncate(s: &str) -> &str {
    let mut end = MAX_STRING_BOUND.min(s.len());
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

/// The truncated prefix with its last character incremented: greater than every string that
/// starts with the prefix. None when no character can be incremented.
fn upper_bound(s: &str) -> Option<String> {
    let mut prefix: Vec<char> = truncate(s).chars().collect();
    while let Some(last) = prefix.pop() {
        let mut next = u32::from(last) + 1;
        if (0xD800..0xE000).contains(&next) {
            next = 0xE000;
        }
        if let Some(c) = char::from_u32(next) {
            prefix.push(c);
            return Some(prefix.into_iter().collect());
        }
    }
    None
}

/// A decimal as ORC statistics spell it: plain digits, trailing fractional zeros dropped (as
/// Java's HiveDecimal prints it), e.g. 1234500 at scale 4 is `123.45`.
fn decimal_string(unscaled: i128, scale: u32) -> String {
    let digits = unscaled.unsigned_abs().to_string();
    let sign = if unscaled < 0 { "-" } else { "" };
    let scale = scale as usize;
    let (int, frac) = if digits.len() > scale {
        digits.split_at(digits.len() - scale)
    } else {
        ("", digits.as_str())
    };
    let frac = format!("{frac:0>scale$}");
    let frac = frac.trim_end_matches('0');
    let int = if int.is_empty() { "0" } else { int };
    if frac.is_empty() {
        format!("{sign}{int}")
    } else {
        format!("{sign}{int}.{frac}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decimals_print_like_hive() {
        assert_eq!(decimal_string(1234500, 4), "123.45");
        assert_eq!(decimal_string(-1, 10), "-0.0000000001");
        assert_eq!(decimal_string(0, 2), "0");
        assert_eq!(decimal_string(-9999999999, 2), "-99999999.99");
        assert_eq!(decimal_string(500, 2), "5");
    }

    #[test]
    fn long_strings_become_bounds() {
        let long_min = "a".repeat(1000) + &"é".repeat(100);
        let long_max = "z".repeat(2000);
        let mut s = Stats::new(Kind::String {
            range: None,
            total: Some(0),
        });
        s.string(long_min.as_bytes());
        s.string(long_max.as_bytes());
        let p = s.to_proto().string_statistics.unwrap();
        assert_eq!(p.minimum, None);
        let lower = p.lower_bound.unwrap();
        assert!(lower.len() <= 1024 && long_min.starts_with(&lower));
        assert_eq!(p.upper_bound.unwrap(), "z".repeat(1023) + "{");
        assert_eq!(p.sum, Some((long_min.len() + long_max.len()) as i64));
    }

    #[test]
    fn unsure_statistics_are_left_out() {
        let mut i = Stats::new(Kind::Integer {
            range: None,
            sum: Some(0),
        });
        i.integer(i64::MAX);
        i.integer(1);
        let p = i.to_proto().int_statistics.unwrap();
        assert_eq!(
            (p.minimum, p.maximum, p.sum),
            (Some(1), Some(i64::MAX), None)
        );

        let mut d = Stats::new(Kind::Double {
            range: None,
            sum: 0.0,
            nan: false,
        });
        d.double(1.0);
        d.double(f64::NAN);
        let p = d.to_proto().double_statistics.unwrap();
        assert_eq!((p.minimum, p.maximum, p.sum), (None, None, None));
    }

    #[test]
    fn groups_merge_into_stripes() {
        let mut a = Stats::new(Kind::Date { range: None });
        a.date(5);
        let mut b = a.empty_like();
        b.date(-3);
        b.null();
        a.merge(&b);
        let p = a.to_proto();
        assert_eq!(p.number_of_values, Some(2));
        assert_eq!(p.has_null, Some(true));
        let d = p.date_statistics.unwrap();
        assert_eq!((d.minimum, d.maximum), (Some(-3), Some(5)));
    }
}
