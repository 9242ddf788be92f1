//! Bloom filters for the BLOOM_FILTER_UTF8 index stream: one filter per row group, hashed the
//! way the spec's reference readers test them (Murmur3 64-bit, seed 104729, for bytes; Thomas
//! Wang's 64-bit mix for integers; k probes derived from the hash's two halves).
//!
//! Written by hand: no crate exposes ORC's variant of these hashes (orc-rust keeps its own
//! private for reading).

use orc_rust::proto;

const SEED: u64 = 104_729;

pub(crate) struct Bloom {
    bits: Vec<u64>,
    hashes: u32,
}

impl Bloom {
    /// Sized for `entries` values at false-positive probability `fpp`, as the reference
    /// writers size theirs (bits rounded up to whole 64-bit words).
    pub(crate) fn new(entries: u64, fpp: f64) -> Self {
        let n = entries.max(1) as f64;
        let ln2 = std::f64::consts::LN_2;
        let bits = (-n * fpp.ln() / (ln2 * ln2)).ceil().max(64.0) as u64;
        let words = bits.div_ceil(64) as usize;
        let hashes = ((words as f64 * 64.0 / n) * ln2).round().max(1.0) as u32;
        Self {
            bits: vec![0; words],
            hashes,
        }
    }

    pub(crate) fn add_bytes(&mut self, value: &[u8]) {
        self.add_hash(murmur3_64(value));
    }

    pub(crate) fn add_long(&mut self, value: i64) {
        self.add_hash(long_hash(value));
    }

    pub(crate) fn add_double(&mut self, value: f64) {
        self.add_long(value.to_bits() as i64);
    }

    fn add_hash(&mut self, hash: u64) {
        let bit_count = (self.bits.len() * 64) as u64;
        let h1 = hash as u32 as i32;
        let h2 = (hash >> 32) as u32 as i32;
        for i in 1..=self.hashes as i32 {
            let mut combined = h1.wrapping_add(i.wrapping_mul(h2));
            if combined < 0 {
                combined = !combined;
            }
            let bit = combined as u64 % bit_count;
            self.bits[(bit / 64) as usize] |= 1 << (bit % 64);
        }
    }

    /// The UTF8 form: the bit words as little-endian bytes.
    pub(crate) fn to_proto(&self) -> proto::BloomFilter {
        proto::BloomFilter {
            num_hash_functions: Some(self.hashes),
            bitset: Vec::new(),
            utf8bitset: Some(self.bits.iter().flat_map(|w| w.to_le_bytes()).collect()),
        }
    }
}

/// Arithmetic shifts, as the reference implementation's signed 64-bit arithmetic does.
fn long_hash(key: i64) -> u64 {
    let mut key = key;
    key = (!key).wrapping_add(key << 21);
    key ^= key >> 24;
    key = key.wrapping_add(key << 3).wrapping_add(key << 8);
    key ^= key >> 14;
    key = key.wrapping_add(key << 2).wrapping_add(key << 4);
    key ^= key >> 28;
    key = key.wrapping_add(key << 31);
    key as u64
}

fn murmur3_64(data: &[u8]) -> u64 {
    const C1: u64 = 0x87c3_7b91_1142_53d5;
    const C2: u64 = 0x4cf5_ad43_2745_937f;
    let mut hash = SEED;
    let mut blocks = data.chunks_exact(8);
    for block in &mut blocks {
        let k = u64::from_le_bytes(block.try_into().expect("8 bytes"));
        hash ^= k.wrapping_mul(C1).rotate_left(31).wrapping_mul(C2);
        hash = hash
            .rotate_left(27)
            .wrapping_mul(5)
            .wrapping_add(0x52dc_e729);
    }
    let tail = blocks.remainder();
    if !tail.is_empty() {
        let mut k = 0u64;
        for (i, b) in tail.iter().enumerate() {
            k ^= u64::from(*b) << (8 * i);
        }
        hash ^= k.wrapping_mul(C1).rotate_left(31).wrapping_mul(C2);
    }
    hash ^= data.len() as u64;
    hash ^= hash >> 33;
    hash = hash.wrapping_mul(0xff51_afd7_ed55_8ccd);
    hash ^= hash >> 33;
    hash = hash.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    hash ^= hash >> 33;
    hash
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn orc_rust_finds_what_we_added_and_not_much_else() {
        let mut b = Bloom::new(1000, 0.01);
        let words: Vec<String> = (0..1000).map(|i| format!("value-{i}")).collect();
        for w in &words {
            b.add_bytes(w.as_bytes());
        }
        let read = orc_rust::bloom_filter::BloomFilter::try_from_proto(&b.to_proto()).unwrap();
        assert!(words.iter().all(|w| read.might_contain(w.as_bytes())));
        let false_hits = (0..1000)
            .filter(|i| read.might_contain(format!("other-{i}").as_bytes()))
            .count();
        assert!(false_hits < 50, "{false_hits} false positives in 1000");
    }
}
