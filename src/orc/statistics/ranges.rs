//! How clustered a partition's rows are on a column, as readers see it: the mean fraction of
//! units (row groups, stripes) a point lookup must read, from each unit's [min, max].
//!
//! A lookup of a value reads every unit whose range holds it. The measure averages, over the
//! units, the share of units whose range overlaps the unit's own: an upper bound on what a
//! lookup of one of its values reads, and a value that needs only the ranges, not the data.
//! 1.0 when every range covers everything (rows in arrival order), about 1/n for n units that
//! do not overlap. (Probing at each unit's minimum instead reads about half on random data:
//! the minimums all sit low, below most other units' ranges.) Values are compared as bytes
//! that order as the values do, whatever the type.

use orc_rust::proto::{self, ColumnStatistics};

use crate::orc::tail::orc_tail::OrcTail;

/// The mean share of `units` (each a (min, max) in comparable bytes) whose range overlaps a
/// unit's range; `None` for no units.
pub fn lookup_fraction(units: &[(Vec<u8>, Vec<u8>)]) -> Option<f64> {
    if units.is_empty() {
        return None;
    }
    let mut lows: Vec<&[u8]> = units.iter().map(|(l, _)| l.as_slice()).collect();
    let mut highs: Vec<&[u8]> = units.iter().map(|(_, h)| h.as_slice()).collect();
    lows.sort_unstable();
    highs.sort_unstable();
    // Units overlapping [lo, hi]: all but those starting above hi and those ending below lo.
    let n = units.len();
    let read: usize = units
        .iter()
        .map(|(lo, hi)| {
            let above = n - lows.partition_point(|l| *l <= hi.as_slice());
            let below = highs.partition_point(|h| *h < lo.as_slice());
            n - above - below
        })
        .sum();
    let n = units.len() as f64;
    Some(read as f64 / n / n)
}

/// The column id of `path` (`a` or `a.b` through structs, case-insensitive) in a file's type
/// tree.
pub fn column_id(tail: &OrcTail, path: &str) -> Option<usize> {
    let types = &tail.footer.types;
    let mut id = 0usize;
    for name in path.split('.') {
        let t = types.get(id)?;
        let at = t
            .field_names
            .iter()
            .position(|f| f.eq_ignore_ascii_case(name))?;
        id = *t.subtypes.get(at)? as usize;
    }
    Some(id)
}

/// The (min, max) a column's statistics record, as comparable bytes; `None` for a type without
/// bounds (booleans, lists, ...) or statistics without them (no values).
pub fn statistics_range(c: &ColumnStatistics) -> Option<(Vec<u8>, Vec<u8>)> {
    let int = |v: i64| ((v as u64) ^ (1 << 63)).to_be_bytes().to_vec();
    let float = |v: f64| {
        let bits = v.to_bits();
        let ordered = if bits >> 63 == 1 {
            !bits
        } else {
            bits ^ (1 << 63)
        };
        ordered.to_be_bytes().to_vec()
    };
    if let Some(s) = &c.int_statistics {
        return Some((int(s.minimum?), int(s.maximum?)));
    }
    if let Some(s) = &c.double_statistics {
        return Some((float(s.minimum?), float(s.maximum?)));
    }
    if let Some(s) = &c.string_statistics {
        let low = s.minimum.as_ref().or(s.lower_bound.as_ref())?;
        let high = s.maximum.as_ref().or(s.upper_bound.as_ref())?;
        return Some((low.as_bytes().to_vec(), high.as_bytes().to_vec()));
    }
    if let Some(s) = &c.date_statistics {
        return Some((int(i64::from(s.minimum?)), int(i64::from(s.maximum?))));
    }
    if let Some(s) = &c.decimal_statistics {
        // A measure, not a filter: f64's precision is plenty to tell ranges apart.
        let parse = |v: &Option<String>| v.as_deref()?.parse::<f64>().ok();
        return Some((float(parse(&s.minimum)?), float(parse(&s.maximum)?)));
    }
    if let Some(s) = &c.timestamp_statistics {
        return Some((
            int(s.minimum_utc.or(s.minimum)?),
            int(s.maximum_utc.or(s.maximum)?),
        ));
    }
    None
}

/// The lookup fraction of `path` over the stripes of `files` (each a tail and its stripes'
/// statistics); `None` when no stripe records bounds for it.
pub fn stripe_lookup_fraction(
    files: &[(&OrcTail, Vec<proto::StripeStatistics>)],
    path: &str,
) -> Option<f64> {
    let mut units = Vec::new();
    for (tail, stripes) in files {
        let Some(id) = column_id(tail, path) else {
            continue;
        };
        units.extend(
            stripes
                .iter()
                .filter_map(|s| s.col_stats.get(id).and_then(statistics_range)),
        );
    }
    lookup_fraction(&units)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lookups_read_every_overlapping_unit() {
        let unit = |a: u8, b: u8| (vec![a], vec![b]);
        let apart = [unit(0, 9), unit(10, 19), unit(20, 29), unit(30, 39)];
        assert_eq!(lookup_fraction(&apart), Some(0.25));
        // Random rows: every range near the whole, whatever its minimum.
        let all = [unit(0, 39), unit(1, 38), unit(0, 37), unit(2, 39)];
        assert_eq!(lookup_fraction(&all), Some(1.0));
        // Two pairs apart: each unit overlaps itself and its pair.
        let pairs = [unit(0, 10), unit(5, 15), unit(20, 30), unit(25, 35)];
        assert_eq!(lookup_fraction(&pairs), Some(0.5));
        assert_eq!(lookup_fraction(&[]), None);
    }

    #[test]
    fn statistics_bounds_compare_as_their_values() {
        let ints = |a, b| ColumnStatistics {
            int_statistics: Some(proto::IntegerStatistics {
                minimum: Some(a),
                maximum: Some(b),
                sum: None,
            }),
            ..Default::default()
        };
        let (neg, _) = statistics_range(&ints(-5, 0)).unwrap();
        let (pos, _) = statistics_range(&ints(3, 4)).unwrap();
        assert!(neg < pos);
        let doubles = |a: f64| ColumnStatistics {
            double_statistics: Some(proto::DoubleStatistics {
                minimum: Some(a),
                maximum: Some(a),
                sum: None,
            }),
            ..Default::default()
        };
        let a = statistics_range(&doubles(-2.5)).unwrap().0;
        let b = statistics_range(&doubles(-1.0)).unwrap().0;
        let c = statistics_range(&doubles(0.5)).unwrap().0;
        assert!(a < b && b < c);
        assert_eq!(statistics_range(&ColumnStatistics::default()), None);
    }
}
