//! Which partitions a run takes on: the most benefit per cost first, within its budgets, and
//! fair across tables.
//!
//! Fairness works as Amoro's "balanced" quota does, by shares: with several tables holding
//! work, each gets its weight's share of every budget (`weight / sum of the weights` of the
//! tables with work) and first takes its own best partitions within it; what the shares leave
//! then goes to the best partitions left over all tables. So a giant table cannot starve the
//! others, and no budget lies idle while there is work that fits.

use std::collections::BTreeMap;

use super::estimate::Estimate;

/// What one run may spend. The time is in seconds of partition work: the caller gives
/// `--budget` × the partitions it runs at once.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Budgets {
    pub partitions: Option<usize>,
    pub bytes: Option<u64>,
    pub seconds: Option<f64>,
}

/// Which budget left a partition for a later run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Spent {
    Partitions,
    Bytes,
    Time,
}

impl Spent {
    /// How a report says it: "left for a later run: {this} of this run is reached".
    pub fn what(self) -> &'static str {
        match self {
            Spent::Partitions => "the partition limit",
            Spent::Bytes => "the byte budget",
            Spent::Time => "the time budget",
        }
    }
}

/// A partition to admit: its table and its estimate.
pub struct Candidate<T> {
    pub item: T,
    pub table: String,
    pub estimate: Estimate,
}

#[derive(Debug, Clone, Copy, Default)]
struct Used {
    partitions: usize,
    bytes: u64,
    seconds: f64,
}

impl Used {
    fn add(&mut self, e: &Estimate) {
        self.partitions += 1;
        self.bytes += e.bytes_read;
        self.seconds += e.seconds;
    }

    /// The first budget `e` would pass, scaled by `share` (1 for the whole run).
    fn passes(&self, e: &Estimate, budgets: &Budgets, share: f64) -> Option<Spent> {
        if let Some(max) = budgets.partitions {
            if (self.partitions + 1) as f64 > (max as f64 * share).floor().max(0.0) {
                return Some(Spent::Partitions);
            }
        }
        if let Some(max) = budgets.bytes {
            if (self.bytes + e.bytes_read) as f64 > max as f64 * share {
                return Some(Spent::Bytes);
            }
        }
        if let Some(max) = budgets.seconds {
            if self.seconds + e.seconds > max * share {
                return Some(Spent::Time);
            }
        }
        None
    }
}

/// What a run takes on, and what it leaves with the budget that left each out.
pub struct Admission<T> {
    pub admitted: Vec<Candidate<T>>,
    pub left: Vec<(Candidate<T>, Spent)>,
}

/// The admitted candidates and the others with the budget that left each out: `ranked`, most
/// benefit per cost first (equal values keep their given order), else in the given order.
/// `weights` are by table (1 when absent; 0 or less: the table gets no share but may take
/// what is left).
pub fn admit<T>(
    mut candidates: Vec<Candidate<T>>,
    budgets: &Budgets,
    weights: &BTreeMap<String, f64>,
    ranked: bool,
) -> Admission<T> {
    if ranked {
        candidates.sort_by(|a, b| b.estimate.value().total_cmp(&a.estimate.value()));
    }
    if *budgets == Budgets::default() {
        return Admission {
            admitted: candidates,
            left: vec![],
        };
    }
    let mut tables: Vec<&str> = candidates.iter().map(|c| c.table.as_str()).collect();
    tables.sort();
    tables.dedup();
    let weight = |t: &str| weights.get(t).copied().unwrap_or(1.0).max(0.0);
    let sum: f64 = tables.iter().map(|t| weight(t)).sum();
    let shares: BTreeMap<String, f64> = tables
        .iter()
        .map(|t| (t.to_string(), if sum > 0.0 { weight(t) / sum } else { 0.0 }))
        .collect();
    let mut total = Used::default();
    let mut per_table: BTreeMap<String, Used> = BTreeMap::new();
    let mut taken = vec![false; candidates.len()];
    // First each table within its share (only when there is more than one).
    if tables.len() > 1 {
        for (i, c) in candidates.iter().enumerate() {
            let used = per_table.entry(c.table.clone()).or_default();
            let fits = used
                .passes(&c.estimate, budgets, shares[&c.table])
                .is_none()
                && total.passes(&c.estimate, budgets, 1.0).is_none();
            if fits {
                used.add(&c.estimate);
                total.add(&c.estimate);
                taken[i] = true;
            }
        }
    }
    // Then the best of what is left, over all tables.
    let mut left = Vec::new();
    for (i, c) in candidates.iter().enumerate() {
        if taken[i] {
            continue;
        }
        match total.passes(&c.estimate, budgets, 1.0) {
            None => {
                total.add(&c.estimate);
                taken[i] = true;
            }
            Some(spent) => left.push((i, spent)),
        }
    }
    let mut admitted = Vec::new();
    let mut spent = vec![None; candidates.len()];
    for (i, s) in left {
        spent[i] = Some(s);
    }
    let mut rest = Vec::new();
    for (c, s) in candidates.into_iter().zip(spent) {
        match s {
            Some(s) => rest.push((c, s)),
            None => admitted.push(c),
        }
    }
    Admission {
        admitted,
        left: rest,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn candidate(table: &str, n: usize, seconds: f64, objects: u64) -> Candidate<String> {
        Candidate {
            item: format!("{table}/{n}"),
            table: table.into(),
            estimate: Estimate {
                partitions: 1,
                seconds,
                bytes_read: 100,
                namenode_objects_removed: objects,
                ..Estimate::default()
            },
        }
    }

    fn names<T: Clone>(c: &[Candidate<T>]) -> Vec<T> {
        c.iter().map(|c| c.item.clone()).collect()
    }

    #[test]
    fn no_budget_takes_all_by_value() {
        let Admission { admitted: a, left } = admit(
            vec![candidate("a", 1, 10.0, 10), candidate("a", 2, 1.0, 10)],
            &Budgets::default(),
            &BTreeMap::new(),
            true,
        );
        assert_eq!(names(&a), ["a/2", "a/1"]);
        assert!(left.is_empty());
    }

    #[test]
    fn every_table_gets_a_share_and_the_rest_goes_to_the_best() {
        // The big table's partitions are all better than the small tables' ones.
        let mut c: Vec<_> = (0..10).map(|n| candidate("big", n, 10.0, 1000)).collect();
        c.extend((0..3).map(|n| candidate("s1", n, 10.0, 10)));
        c.extend((0..3).map(|n| candidate("s2", n, 10.0, 20)));
        let budgets = Budgets {
            seconds: Some(60.0),
            ..Budgets::default()
        };
        let Admission { admitted: a, left } = admit(c, &budgets, &BTreeMap::new(), true);
        let tables = |t: &str| a.iter().filter(|c| c.table == t).count();
        // Shares of 20 s each: two partitions a table.
        assert_eq!((tables("big"), tables("s1"), tables("s2")), (2, 2, 2));
        assert_eq!(a.len() + left.len(), 16);
        assert!(left.iter().all(|(_, s)| *s == Spent::Time));
        // Most benefit per cost first.
        assert_eq!(a[0].table, "big");
        assert_eq!(a.last().unwrap().table, "s1");

        // Weighted: big 4, the others 1: 40 s, 10 s, 10 s.
        let mut c: Vec<_> = (0..10).map(|n| candidate("big", n, 10.0, 1000)).collect();
        c.extend((0..3).map(|n| candidate("s1", n, 10.0, 10)));
        c.extend((0..3).map(|n| candidate("s2", n, 10.0, 20)));
        let weights = BTreeMap::from([("big".to_string(), 4.0)]);
        let Admission { admitted: a, .. } = admit(c, &budgets, &weights, true);
        let tables = |t: &str| a.iter().filter(|c| c.table == t).count();
        assert_eq!((tables("big"), tables("s1"), tables("s2")), (4, 1, 1));
    }

    #[test]
    fn what_the_shares_leave_goes_to_the_best_left() {
        // s1 has one partition: its share's rest goes to big.
        let mut c: Vec<_> = (0..10).map(|n| candidate("big", n, 10.0, 1000)).collect();
        c.push(candidate("s1", 0, 10.0, 10));
        let budgets = Budgets {
            seconds: Some(60.0),
            ..Budgets::default()
        };
        let Admission { admitted: a, .. } = admit(c, &budgets, &BTreeMap::new(), true);
        let tables = |t: &str| a.iter().filter(|c| c.table == t).count();
        assert_eq!((tables("big"), tables("s1")), (5, 1));
    }

    #[test]
    fn limits_and_bytes_say_which_budget_left_a_partition() {
        let c: Vec<_> = (0..4).map(|n| candidate("a", n, 1.0, 10)).collect();
        let limit = Budgets {
            partitions: Some(3),
            ..Budgets::default()
        };
        let Admission { admitted: a, left } = admit(c, &limit, &BTreeMap::new(), true);
        assert_eq!((a.len(), left[0].1), (3, Spent::Partitions));
        let c: Vec<_> = (0..4).map(|n| candidate("a", n, 1.0, 10)).collect();
        let bytes = Budgets {
            bytes: Some(250),
            ..Budgets::default()
        };
        let Admission { admitted: a, left } = admit(c, &bytes, &BTreeMap::new(), true);
        assert_eq!((a.len(), left.len(), left[0].1), (2, 2, Spent::Bytes));
        assert_eq!(Spent::Bytes.what(), "the byte budget");
    }
}
