//! What compacting a partition will cost and what it will give back, judged from one listing of
//! its directory (before any ORC file is read) and the rates this installation showed in its
//! past runs.
//!
//! The cost is a time: a fixed part per partition (metastore calls, the lock, listings, the
//! verification's re-reads of tails) and a part per byte read. Which way a partition goes (its
//! stripes copied, or re-encoded, or sorted) is known only once its tails are read, so the rate
//! per byte is learnt per table from the partitions it compacted before, where the table's own
//! mix of ways shows; a table with a sort layout starts from the sort's slower default. The
//! benefit is the NameNode objects (inodes and blocks) the partition gives back.

use serde::{Deserialize, Serialize};

use crate::census::namenode_objects;

/// Until a table has this many compacted partitions on record, its rates are the defaults (or
/// those learnt over every table the run read).
pub const LEARN_FROM: usize = 3;

/// The time one partition takes: `per_partition + per_gib × GiB read`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Rates {
    pub seconds_per_partition: f64,
    pub seconds_per_gib: f64,
    /// Compacted partitions these rates were learnt from; 0 for the defaults.
    pub learnt_from: usize,
}

const GIB: f64 = (1u64 << 30) as f64;

impl Rates {
    /// Measured on the benchmark VM (2 cores, local HDFS and metastore): a small partition
    /// takes about 2 s whatever its size; stripes re-encoded go at about 40 MiB/s, sorted
    /// ones at about 11 MiB/s (BENCHMARKS.md). Copies are faster: the learnt rate shows it.
    pub fn defaults(sorted: bool) -> Rates {
        Rates {
            seconds_per_partition: 2.0,
            seconds_per_gib: if sorted { 90.0 } else { 25.0 },
            learnt_from: 0,
        }
    }

    /// Rates fitted to past partitions' `(bytes read, seconds)`: a least-squares line when
    /// the sizes differ enough to tell the fixed part from the part per byte, else the
    /// default fixed part and the mean rate of the rest. `None` below [`LEARN_FROM`] samples.
    pub fn learn(samples: &[(u64, f64)], fallback: Rates) -> Option<Rates> {
        if samples.len() < LEARN_FROM {
            return None;
        }
        let n = samples.len() as f64;
        let xs: Vec<f64> = samples.iter().map(|&(b, _)| b as f64 / GIB).collect();
        let ys: Vec<f64> = samples.iter().map(|&(_, s)| s.max(0.0)).collect();
        let (mx, my) = (xs.iter().sum::<f64>() / n, ys.iter().sum::<f64>() / n);
        let sxx: f64 = xs.iter().map(|x| (x - mx) * (x - mx)).sum();
        let sxy: f64 = xs.iter().zip(&ys).map(|(x, y)| (x - mx) * (y - my)).sum();
        // Sizes within a few percent of each other say nothing about the slope.
        let spread = sxx.sqrt() / n.sqrt() > 0.1 * mx.max(1e-9);
        let fitted = (spread && sxx > 0.0)
            .then(|| {
                let slope = sxy / sxx;
                (slope, my - slope * mx)
            })
            .filter(|&(slope, fixed)| slope >= 0.0 && fixed >= 0.0);
        let (per_gib, fixed) = match fitted {
            Some(line) => line,
            None => {
                let fixed = fallback.seconds_per_partition.min(my);
                let per_gib = match mx > 0.0 {
                    true => (my - fixed) / mx,
                    false => fallback.seconds_per_gib,
                };
                (per_gib, fixed)
            }
        };
        Some(Rates {
            seconds_per_partition: fixed,
            seconds_per_gib: per_gib,
            learnt_from: samples.len(),
        })
    }

    pub fn seconds(&self, bytes: u64) -> f64 {
        self.seconds_per_partition + self.seconds_per_gib * bytes as f64 / GIB
    }
}

/// What one partition (or a whole selection, summed) is expected to take.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Estimate {
    pub partitions: usize,
    /// Seconds of one partition's work, or for a selection the sum over its partitions (the
    /// run's wall time is about this divided by `--parallel`).
    pub seconds: f64,
    pub bytes_read: u64,
    pub bytes_written: u64,
    /// NameNode calls: listings, one block-location lookup per input, per output its create,
    /// blocks and close, and the renames and re-listings of staging, publishing and checking.
    pub namenode_calls: u64,
    /// Metastore calls: a partition's share of its batch's lock, re-read, alter and unlock
    /// (partitions are read a page at a time, which is nothing per partition).
    pub metastore_calls: f64,
    /// NameNode objects (inodes and blocks) given back.
    pub namenode_objects_removed: u64,
}

/// What the estimate knows of a partition: its listing, summed.
#[derive(Debug, Clone, Copy)]
pub struct Listed {
    pub files: usize,
    pub bytes: u64,
    /// The data files' inodes and blocks now.
    pub namenode_objects: u64,
    pub block_size: Option<u64>,
}

/// A batch's metastore calls: its lock, the re-read of its partitions, their alter, the unlock.
const CALLS_PER_BATCH: f64 = 4.0;

/// What planning a partition takes per data file (its tail read) when its listing shows
/// nothing to merge: it is planned, found with nothing to do, and left.
const PLAN_SECONDS_PER_FILE: f64 = 0.02;

impl Estimate {
    /// One partition at `target_size` outputs, in batches of `batch_size` partitions.
    /// `rewritten`: a layout is asked for, so even a partition of one file may be rewritten.
    pub fn of(
        listed: &Listed,
        target_size: u64,
        batch_size: usize,
        rates: &Rates,
        rewritten: bool,
    ) -> Estimate {
        let outputs = listed.bytes.div_ceil(target_size.max(1)).max(1);
        if !rewritten && listed.files as u64 <= outputs {
            return Estimate {
                partitions: 1,
                seconds: PLAN_SECONDS_PER_FILE * listed.files as f64,
                namenode_calls: 2 + listed.files as u64,
                ..Estimate::default()
            };
        }
        let each = listed.bytes.div_ceil(outputs);
        let objects_after = outputs * namenode_objects(each, listed.block_size);
        let blocks_each = namenode_objects(each, listed.block_size) - 1;
        Estimate {
            partitions: 1,
            seconds: rates.seconds(listed.bytes),
            bytes_read: listed.bytes,
            bytes_written: listed.bytes,
            namenode_calls: 8 + listed.files as u64 + outputs * (2 + blocks_each),
            metastore_calls: CALLS_PER_BATCH / batch_size.max(1) as f64,
            namenode_objects_removed: listed.namenode_objects.saturating_sub(objects_after),
        }
    }

    pub fn add(&mut self, o: &Estimate) {
        self.partitions += o.partitions;
        self.seconds += o.seconds;
        self.bytes_read += o.bytes_read;
        self.bytes_written += o.bytes_written;
        self.namenode_calls += o.namenode_calls;
        self.metastore_calls += o.metastore_calls;
        self.namenode_objects_removed += o.namenode_objects_removed;
    }

    /// Benefit per cost: NameNode objects given back per second of work.
    pub fn value(&self) -> f64 {
        self.namenode_objects_removed as f64 / self.seconds.max(0.001)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIB: u64 = 1 << 20;

    #[test]
    fn learns_a_line_or_keeps_the_defaults() {
        let defaults = Rates::defaults(false);
        assert_eq!(Rates::learn(&[(MIB, 1.0), (MIB, 1.0)], defaults), None);
        // 1 s fixed, 10 s a GiB.
        let line: Vec<(u64, f64)> = [64, 256, 1024, 512]
            .iter()
            .map(|&m| (m * MIB, 1.0 + 10.0 * (m as f64) / 1024.0))
            .collect();
        let r = Rates::learn(&line, defaults).unwrap();
        assert!((r.seconds_per_partition - 1.0).abs() < 1e-6, "{r:?}");
        assert!((r.seconds_per_gib - 10.0).abs() < 1e-6, "{r:?}");
        assert_eq!(r.learnt_from, 4);
        // All one size: the default fixed part, the rest per byte.
        let same = [(GIB as u64, 12.0); 3];
        let r = Rates::learn(&same, defaults).unwrap();
        assert_eq!(r.seconds_per_partition, 2.0);
        assert!((r.seconds_per_gib - 10.0).abs() < 1e-6, "{r:?}");
        // Tiny and quick: never a negative part.
        let quick = [(MIB, 0.5), (2 * MIB, 0.4), (3 * MIB, 0.6)];
        let r = Rates::learn(&quick, defaults).unwrap();
        assert!(
            r.seconds_per_partition >= 0.0 && r.seconds_per_gib >= 0.0,
            "{r:?}"
        );
    }

    #[test]
    fn estimates_objects_given_back_and_calls() {
        let listed = Listed {
            files: 100,
            bytes: 300 * MIB,
            namenode_objects: 200,
            block_size: Some(128 * MIB),
        };
        let e = Estimate::of(&listed, 256 * MIB, 50, &Rates::defaults(false), false);
        // Two outputs of 150 MiB, two blocks each: six objects left of 200.
        assert_eq!(e.namenode_objects_removed, 194);
        assert_eq!(e.namenode_calls, 8 + 100 + 2 * 4);
        assert_eq!(e.metastore_calls, 4.0 / 50.0);
        assert!(e.value() > 0.0);
        let mut sum = Estimate::default();
        sum.add(&e);
        sum.add(&e);
        assert_eq!((sum.partitions, sum.bytes_read), (2, 600 * MIB));
        // One file already: planned and left, unless a layout rewrites it.
        let one = Listed {
            files: 1,
            namenode_objects: 4,
            ..listed
        };
        let planned = Estimate::of(&one, 256 * MIB, 50, &Rates::defaults(false), false);
        assert_eq!(
            (planned.bytes_read, planned.namenode_objects_removed),
            (0, 0)
        );
        assert!(planned.seconds < 1.0);
        let sorted = Estimate::of(&one, 256 * MIB, 50, &Rates::defaults(true), true);
        assert_eq!(sorted.bytes_read, 300 * MIB);
    }
}
