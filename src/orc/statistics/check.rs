//! Statistics computed from decoded values held against those the original writers recorded,
//! so a decoder that misreads values the same way on every read is still caught.

use std::collections::BTreeSet;

use orc_rust::proto::{BucketStatistics, ColumnStatistics, StringStatistics};

/// `file`'s statistics without the timestamp bounds of `columns` (their counts kept): for
/// columns whose recorded bounds were taken of other values than those decoded.
pub fn without_timestamp_bounds(
    file: &[ColumnStatistics],
    columns: &BTreeSet<u32>,
) -> Vec<ColumnStatistics> {
    let mut out = file.to_vec();
    for &column in columns {
        if let Some(c) = out.get_mut(column as usize) {
            c.timestamp_statistics = None;
        }
    }
    out
}

/// Where statistics computed from decoded values (`computed`, one per column) contradict the
/// ones the original writers recorded (`recorded`, merged over the inputs): a decoder that
/// misread values the same way on every read would pass a digest check, not this one. Only
/// statistics that are exact in both are compared (counts, integer bounds and sums, untruncated
/// string bounds and lengths, dates, boolean counts, UTC timestamp bounds to the millisecond);
/// the rest (doubles, decimals, whose text forms vary by writer) are not. Only the `columns`
/// given are compared: writers count the values of columns nested in lists, maps and unions
/// differently. Each entry names the column id and what differs.
pub fn contradictions(
    recorded: &[ColumnStatistics],
    computed: &[ColumnStatistics],
    columns: &[usize],
) -> Vec<String> {
    let mut out = vec![];
    for &column in columns {
        let (Some(r), Some(c)) = (recorded.get(column), computed.get(column)) else {
            continue;
        };
        for (what, r, c) in exact_pairs(r, c) {
            if let (Some(r), Some(c)) = (r, c) {
                if r != c {
                    out.push(format!(
                        "column {column} {what}: recorded {r}, decoded values give {c}"
                    ));
                }
            }
        }
    }
    out
}

/// One statistic as (what, recorded, computed), in text; compared only when both sides have it.
type Pair = (&'static str, Option<String>, Option<String>);

fn text<T: ToString>(v: Option<T>) -> Option<String> {
    v.map(|v| v.to_string())
}

/// The statistics of one column that are exact on both sides (see [`contradictions`]).
fn exact_pairs(r: &ColumnStatistics, c: &ColumnStatistics) -> Vec<Pair> {
    let mut pairs = vec![("values", text(r.number_of_values), text(c.number_of_values))];
    if let (Some(r), Some(c)) = (&r.int_statistics, &c.int_statistics) {
        pairs.extend([
            ("minimum", text(r.minimum), text(c.minimum)),
            ("maximum", text(r.maximum), text(c.maximum)),
            ("sum", text(r.sum), text(c.sum)),
        ]);
    }
    if let (Some(r), Some(c)) = (&r.string_statistics, &c.string_statistics) {
        let exact = |s: &StringStatistics| s.lower_bound.is_none() && s.upper_bound.is_none();
        if exact(r) && exact(c) {
            let quoted = |v: &Option<String>| v.as_ref().map(|v| format!("{v:?}"));
            pairs.extend([
                ("minimum", quoted(&r.minimum), quoted(&c.minimum)),
                ("maximum", quoted(&r.maximum), quoted(&c.maximum)),
            ]);
        }
        pairs.push(("total length", text(r.sum), text(c.sum)));
    }
    if let (Some(r), Some(c)) = (&r.date_statistics, &c.date_statistics) {
        pairs.extend([
            ("minimum", text(r.minimum), text(c.minimum)),
            ("maximum", text(r.maximum), text(c.maximum)),
        ]);
    }
    if let (Some(r), Some(c)) = (&r.bucket_statistics, &c.bucket_statistics) {
        let counts = |b: &BucketStatistics| Some(format!("{:?}", b.count));
        pairs.push(("true count", counts(r), counts(c)));
    }
    if let (Some(r), Some(c)) = (&r.timestamp_statistics, &c.timestamp_statistics) {
        pairs.extend([
            ("minimum", text(r.minimum_utc), text(c.minimum_utc)),
            ("maximum", text(r.maximum_utc), text(c.maximum_utc)),
        ]);
    }
    pairs
}

#[cfg(test)]
mod tests {
    use orc_rust::proto::IntegerStatistics;

    use super::*;

    #[test]
    fn decoded_values_that_contradict_recorded_statistics_are_named() {
        let ints = |min: i64, max: i64| ColumnStatistics {
            number_of_values: Some(3),
            int_statistics: Some(IntegerStatistics {
                minimum: Some(min),
                maximum: Some(max),
                sum: None,
            }),
            ..Default::default()
        };
        assert!(contradictions(&[ints(1, 9)], &[ints(1, 9)], &[0]).is_empty());
        let wrong = contradictions(&[ints(1, 9)], &[ints(1, 8)], &[0]);
        assert_eq!(
            wrong,
            vec!["column 0 maximum: recorded 9, decoded values give 8".to_string()]
        );
        // What only one side has is not compared; truncated string bounds neither.
        let mut no_int = ints(1, 9);
        no_int.int_statistics = None;
        assert!(contradictions(&[no_int], &[ints(0, 0)], &[0]).is_empty());
        let strings = |min: &str, truncated: bool| ColumnStatistics {
            string_statistics: Some(StringStatistics {
                minimum: Some(min.into()),
                maximum: Some("z".into()),
                sum: Some(7),
                lower_bound: truncated.then(|| min.into()),
                upper_bound: None,
            }),
            ..Default::default()
        };
        assert!(contradictions(&[strings("a", true)], &[strings("b", false)], &[0]).is_empty());
        assert_eq!(
            contradictions(&[strings("a", false)], &[strings("b", false)], &[0]).len(),
            1
        );
    }
}
