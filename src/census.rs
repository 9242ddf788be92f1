//! What a partition's files cost, for the census (`analyze`): how their sizes spread, as a
//! histogram on a log scale, and how many NameNode objects they take (an inode per file and
//! one object per block: the NameNode's heap grows with both, and small files cost it most).

use serde::Serialize;

/// Buckets of the size histogram.
pub const BUCKETS: usize = 13;

/// The smallest size of each bucket: 0, 1 KiB, then four times the last, up to 4 GiB. A bucket
/// holds sizes below the next bucket's floor; the last one everything from 4 GiB up. Powers of
/// four keep the chart short (13 bars) while telling a 10 KiB runt from a 1 MiB one.
pub const BUCKET_FLOORS: [u64; BUCKETS] = {
    let mut floors = [0u64; BUCKETS];
    let mut i = 1;
    while i < BUCKETS {
        floors[i] = 1 << (10 + 2 * (i - 1));
        i += 1;
    }
    floors
};

/// `dfs.blocksize`'s default, for a file whose listing did not say.
const DEFAULT_BLOCK_SIZE: u64 = 128 * 1024 * 1024;

/// File counts per size bucket ([`BUCKET_FLOORS`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(transparent)]
pub struct SizeHistogram([u64; BUCKETS]);

impl SizeHistogram {
    pub fn of(lengths: impl IntoIterator<Item = u64>) -> Self {
        let mut h = SizeHistogram::default();
        for length in lengths {
            h.add(length, 1);
        }
        h
    }

    /// Counts `files` files of `length` bytes.
    pub fn add(&mut self, length: u64, files: u64) {
        let bucket = BUCKET_FLOORS.partition_point(|&floor| floor <= length) - 1;
        self.0[bucket] += files;
    }

    pub fn merge(&mut self, other: &SizeHistogram) {
        for (a, b) in self.0.iter_mut().zip(other.0) {
            *a += b;
        }
    }

    pub fn counts(&self) -> &[u64; BUCKETS] {
        &self.0
    }

    pub fn files(&self) -> u64 {
        self.0.iter().sum()
    }
}

/// The NameNode objects of one file: its inode and its blocks (none for an empty file).
pub fn namenode_objects(length: u64, block_size: Option<u64>) -> u64 {
    let block_size = block_size.filter(|&b| b > 0).unwrap_or(DEFAULT_BLOCK_SIZE);
    1 + length.div_ceil(block_size)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_are_powers_of_four_from_one_kib() {
        assert_eq!(BUCKET_FLOORS[..3], [0, 1024, 4096]);
        assert_eq!(BUCKET_FLOORS[BUCKETS - 1], 4 << 30);
        let h = SizeHistogram::of([0, 1023, 1024, 4095, 4096, 5 << 30, u64::MAX]);
        assert_eq!(h.counts()[..3], [2, 2, 1]);
        assert_eq!(h.counts()[BUCKETS - 1], 2);
        assert_eq!(h.files(), 7);
    }

    #[test]
    fn objects_count_the_inode_and_each_block() {
        assert_eq!(namenode_objects(0, None), 1);
        assert_eq!(namenode_objects(1, None), 2);
        assert_eq!(namenode_objects(300 << 20, None), 4);
        assert_eq!(namenode_objects(300 << 20, Some(256 << 20)), 3);
        assert_eq!(namenode_objects(10, Some(0)), 2);
    }
}
