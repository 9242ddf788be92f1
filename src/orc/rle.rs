//! ORC's unsigned integer run-length encodings, versions 1 and 2, and its byte run-length and
//! boolean encodings, decoded: what the decoder reads of a stream beside orc-rust (see
//! `decode::Chunks::served`). Written here because orc-rust keeps its own decoders private;
//! the writer's `write::rle_v2` and `write::byte_rle` are the other half, and the tests run
//! the two against each other and against the specification's examples.

use super::error::OrcError;

/// Every value of an unsigned RLE stream (already decompressed); `v2` for a DIRECT_V2 or
/// DICTIONARY_V2 column, else version 1.
pub(crate) fn decode_unsigned(bytes: &[u8], v2: bool) -> Result<Vec<u64>, OrcError> {
    decode(bytes, v2, false)
}

/// Every value of a signed RLE stream (already decompressed, a timestamp's seconds, say);
/// `v2` as for [`decode_unsigned`].
pub(crate) fn decode_signed(bytes: &[u8], v2: bool) -> Result<Vec<i64>, OrcError> {
    // Patched and delta runs yield the values themselves, the others their zigzag form.
    Ok(decode(bytes, v2, true)?
        .into_iter()
        .map(|v| v as i64)
        .collect())
}

fn decode(bytes: &[u8], v2: bool, signed: bool) -> Result<Vec<u64>, OrcError> {
    let mut input = Input { bytes, at: 0 };
    let mut out = Vec::new();
    while !input.done() {
        if v2 {
            run_v2(&mut input, signed, &mut out)?;
        } else {
            run_v1(&mut input, signed, &mut out)?;
        }
    }
    Ok(out)
}

/// A value of a signed stream from its zigzag form.
fn unzigzag(v: u64) -> u64 {
    ((v >> 1) as i64 ^ -((v & 1) as i64)) as u64
}

/// Every byte of a byte run-length stream (already decompressed): a control byte 0..=127 is
/// followed by one byte repeated control + 3 times, a negative one by -control literal bytes.
pub(crate) fn decode_bytes(bytes: &[u8]) -> Result<Vec<u8>, OrcError> {
    let mut input = Input { bytes, at: 0 };
    let mut out = Vec::new();
    while !input.done() {
        let control = input.byte()?;
        if control < 0x80 {
            let value = input.byte()?;
            out.extend(std::iter::repeat_n(value, usize::from(control) + 3));
        } else {
            for _ in 0..256 - usize::from(control) {
                out.push(input.byte()?);
            }
        }
    }
    Ok(out)
}

/// Every bit of a boolean stream (a PRESENT stream, say), most significant first: a whole
/// number of bytes, so up to seven bits past the last value.
pub(crate) fn decode_booleans(bytes: &[u8]) -> Result<Vec<bool>, OrcError> {
    Ok(decode_bytes(bytes)?
        .into_iter()
        .flat_map(|b| (0..8).rev().map(move |bit| b >> bit & 1 == 1))
        .collect())
}

struct Input<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl Input<'_> {
    fn done(&self) -> bool {
        self.at >= self.bytes.len()
    }

    fn byte(&mut self) -> Result<u8, OrcError> {
        let b = *self
            .bytes
            .get(self.at)
            .ok_or_else(|| OrcError::Corrupt("an integer stream ends inside a run".into()))?;
        self.at += 1;
        Ok(b)
    }

    fn varint(&mut self) -> Result<u64, OrcError> {
        let mut value = 0u64;
        for shift in (0..64).step_by(7) {
            let b = self.byte()?;
            value |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                return Ok(value);
            }
        }
        Err(OrcError::Corrupt("a varint longer than 64 bits".into()))
    }

    fn signed_varint(&mut self) -> Result<i64, OrcError> {
        let v = self.varint()?;
        Ok((v >> 1) as i64 ^ -((v & 1) as i64))
    }

    /// `bytes` bytes, big-endian.
    fn big_endian(&mut self, bytes: u32) -> Result<u64, OrcError> {
        let mut v = 0u64;
        for _ in 0..bytes {
            v = v << 8 | u64::from(self.byte()?);
        }
        Ok(v)
    }

    /// `count` values of `width` bits, packed most significant bit first; the run ends on a
    /// byte boundary.
    fn packed(&mut self, count: usize, width: u32, out: &mut Vec<u64>) -> Result<(), OrcError> {
        let (mut current, mut left) = (0u64, 0u32);
        for _ in 0..count {
            let mut value = 0u64;
            let mut need = width;
            while need > 0 {
                if left == 0 {
                    current = u64::from(self.byte()?);
                    left = 8;
                }
                // At most 8 bits at a time, so no shift reaches 64.
                let take = need.min(left);
                let bits = (current >> (left - take)) & ((1u64 << take) - 1);
                value = value << take | bits;
                left -= take;
                need -= take;
            }
            out.push(value);
        }
        Ok(())
    }
}

fn run_v1(input: &mut Input, signed: bool, out: &mut Vec<u64>) -> Result<(), OrcError> {
    let header = input.byte()? as i8;
    let value = |input: &mut Input| -> Result<u64, OrcError> {
        let v = input.varint()?;
        Ok(if signed { unzigzag(v) } else { v })
    };
    if header >= 0 {
        let count = header as u64 + 3;
        let delta = input.byte()? as i8 as i64;
        let base = value(input)?;
        for i in 0..count {
            out.push(base.wrapping_add_signed(delta.wrapping_mul(i as i64)));
        }
    } else {
        for _ in 0..-(header as i64) {
            out.push(value(input)?);
        }
    }
    Ok(())
}

/// The bit width a 5-bit code of a direct, patched or delta run stands for.
fn width(code: u8) -> u32 {
    match code {
        0..=23 => u32::from(code) + 1,
        24 => 26,
        25 => 28,
        26 => 30,
        27 => 32,
        28 => 40,
        29 => 48,
        30 => 56,
        _ => 64,
    }
}

/// The width patch entries are packed at: the next width a direct run can use.
fn fixed_width(bits: u32) -> u32 {
    (0..32).map(width).find(|&w| w >= bits).unwrap_or(64)
}

fn run_v2(input: &mut Input, signed: bool, out: &mut Vec<u64>) -> Result<(), OrcError> {
    let header = input.byte()?;
    match header >> 6 {
        0 => {
            let bytes = u32::from((header >> 3) & 7) + 1;
            let count = usize::from(header & 7) + 3;
            let value = input.big_endian(bytes)?;
            let value = if signed { unzigzag(value) } else { value };
            out.extend(std::iter::repeat_n(value, count));
        }
        1 => {
            let w = width((header >> 1) & 0x1f);
            let count = (usize::from(header & 1) << 8 | usize::from(input.byte()?)) + 1;
            let first = out.len();
            input.packed(count, w, out)?;
            if signed {
                out[first..].iter_mut().for_each(|v| *v = unzigzag(*v));
            }
        }
        2 => patched_base(header, input, out)?,
        _ => {
            let code = (header >> 1) & 0x1f;
            let w = if code == 0 { 0 } else { width(code) };
            let count = (usize::from(header & 1) << 8 | usize::from(input.byte()?)) + 1;
            let base = if signed {
                input.signed_varint()? as u64
            } else {
                input.varint()?
            };
            let step = input.signed_varint()?;
            out.push(base);
            if count == 1 {
                return Ok(());
            }
            let mut last = base.wrapping_add_signed(step);
            out.push(last);
            if w == 0 {
                for _ in 2..count {
                    last = last.wrapping_add_signed(step);
                    out.push(last);
                }
            } else {
                let mut deltas = Vec::with_capacity(count - 2);
                input.packed(count - 2, w, &mut deltas)?;
                for d in deltas {
                    last = if step < 0 {
                        last.wrapping_sub(d)
                    } else {
                        last.wrapping_add(d)
                    };
                    out.push(last);
                }
            }
        }
    }
    Ok(())
}

fn patched_base(header: u8, input: &mut Input, out: &mut Vec<u64>) -> Result<(), OrcError> {
    let w = width((header >> 1) & 0x1f);
    let count = (usize::from(header & 1) << 8 | usize::from(input.byte()?)) + 1;
    let third = input.byte()?;
    let base_bytes = u32::from(third >> 5) + 1;
    let patch_width = width(third & 0x1f);
    let fourth = input.byte()?;
    let gap_width = u32::from(fourth >> 5) + 1;
    let patches = usize::from(fourth & 0x1f);
    // The base is sign and magnitude: the first bit is the sign.
    let raw = input.big_endian(base_bytes)?;
    let sign = 1u64 << (base_bytes * 8 - 1);
    let base = if raw & sign != 0 {
        -((raw & !sign) as i64)
    } else {
        raw as i64
    };
    let first = out.len();
    input.packed(count, w, out)?;
    let mut list = Vec::with_capacity(patches);
    input.packed(patches, fixed_width(gap_width + patch_width), &mut list)?;
    let corrupt = || OrcError::Corrupt("a patch past its run or its width".into());
    let mut at = first;
    for entry in list {
        at += entry.checked_shr(patch_width).unwrap_or(0) as usize;
        let patch = entry & u64::MAX.checked_shr(64 - patch_width).unwrap_or(0);
        let slot = out.get_mut(at).ok_or_else(corrupt)?;
        *slot |= patch
            .checked_shl(w)
            .filter(|_| w < 64)
            .ok_or_else(corrupt)?;
    }
    for v in &mut out[first..] {
        *v = v.wrapping_add_signed(base);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::write::rle_v2_encode;
    use super::*;

    #[test]
    fn the_specifications_examples_decode() {
        // Short repeat: 10000 five times.
        assert_eq!(
            decode_unsigned(&[0x0a, 0x27, 0x10], true).unwrap(),
            vec![10000; 5]
        );
        // Direct: [23713, 43806, 57005, 48879].
        let direct = [0x5e, 0x03, 0x5c, 0xa1, 0xab, 0x1e, 0xde, 0xad, 0xbe, 0xef];
        assert_eq!(
            decode_unsigned(&direct, true).unwrap(),
            vec![23713, 43806, 57005, 48879]
        );
        // Delta: the primes 2 .. 29.
        let delta = [0xc6, 0x09, 0x02, 0x02, 0x22, 0x42, 0x42, 0x46];
        assert_eq!(
            decode_unsigned(&delta, true).unwrap(),
            vec![2, 3, 5, 7, 11, 13, 17, 19, 23, 29]
        );
        // Patched base: the spec's 20 values with one outlier.
        let patched = [
            0x8e, 0x13, 0x2b, 0x21, 0x07, 0xd0, 0x1e, 0x00, 0x14, 0x70, 0x28, 0x32, 0x3c, 0x46,
            0x50, 0x5a, 0x64, 0x6e, 0x78, 0x82, 0x8c, 0x96, 0xa0, 0xaa, 0xb4, 0xbe, 0xfc, 0xe8,
        ];
        assert_eq!(
            decode_unsigned(&patched, true).unwrap(),
            vec![
                2030, 2000, 2020, 1000000, 2040, 2050, 2060, 2070, 2080, 2090, 2100, 2110, 2120,
                2130, 2140, 2150, 2160, 2170, 2180, 2190
            ]
        );
        // Version 1: a run of 100 sevens, then literals 2, 3, 6, 7, 11.
        assert_eq!(
            decode_unsigned(&[0x61, 0x00, 0x07], false).unwrap(),
            vec![7; 100]
        );
        let literals = [0xfb, 0x02, 0x03, 0x06, 0x07, 0x0b];
        assert_eq!(
            decode_unsigned(&literals, false).unwrap(),
            vec![2, 3, 6, 7, 11]
        );
    }

    /// Whatever sub-encoding our writer picks, the values come back.
    #[test]
    fn what_our_writer_encodes_decodes() {
        let mut cases: Vec<Vec<i64>> = vec![
            vec![5; 7],
            vec![1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11],
            (0..600).map(|i| i * 3 + 1).collect(),
            (0..600).map(|i| 1000 - i * 2).collect(),
            (0..300).map(|i| (i * 7919) % 1000).collect(),
            (0..100)
                .map(|i| if i % 37 == 5 { 1 << 40 } else { i % 17 + 2000 })
                .collect(),
            vec![i64::MAX, 0, 1, i64::MAX - 1],
            vec![-33, 8, 4_000_000_001], // a negative value, as a u64 (pyarrow's nanos)
        ];
        cases.push(
            (0..5000)
                .map(|i| (i * 2_654_435_761u64 as i64) & 0xffff_ffff)
                .collect(),
        );
        for values in cases {
            let mut bytes = Vec::new();
            // The writer encodes what it buffered, at most 512 values at a time.
            for chunk in values.chunks(512) {
                rle_v2_encode(chunk, false, &mut bytes);
            }
            let back = decode_unsigned(&bytes, true).unwrap();
            let want: Vec<u64> = values.iter().map(|&v| v as u64).collect();
            assert_eq!(back, want);
        }
    }

    /// Signed values (a timestamp's seconds) in every sub-encoding our writer picks.
    #[test]
    fn signed_values_decode() {
        let cases: Vec<Vec<i64>> = vec![
            vec![-5; 7],
            (0..600).map(|i| -1_420_070_400 - i * 86_400).collect(),
            (0..300).map(|i| (i * 7919) % 1000 - 500).collect(),
            (0..100)
                .map(|i| {
                    if i % 37 == 5 {
                        -(1 << 40)
                    } else {
                        i % 17 - 2000
                    }
                })
                .collect(),
            vec![i64::MIN, 0, -1, i64::MAX],
        ];
        for values in cases {
            let mut bytes = Vec::new();
            for chunk in values.chunks(512) {
                rle_v2_encode(chunk, true, &mut bytes);
            }
            assert_eq!(decode_signed(&bytes, true).unwrap(), values);
        }
        // Version 1: literals -1, 1 (zigzag 1, 2); a run of three from -2 up by one.
        assert_eq!(decode_signed(&[0xfe, 0x01, 0x02], false).unwrap(), [-1, 1]);
        assert_eq!(
            decode_signed(&[0x00, 0x01, 0x03], false).unwrap(),
            [-2, -1, 0]
        );
    }

    #[test]
    fn bytes_and_booleans_decode_as_the_specification_says() {
        // 100 zeros are [0x61, 0x00]; [0x44, 0x45] is [0xfe, 0x44, 0x45].
        assert_eq!(decode_bytes(&[0x61, 0x00]).unwrap(), vec![0; 100]);
        assert_eq!(decode_bytes(&[0xfe, 0x44, 0x45]).unwrap(), vec![0x44, 0x45]);
        // [true, false x 7, true] is [0xff, 0x80, 0x80]: two literal bytes.
        let bits = decode_booleans(&[0xfe, 0x80, 0x80]).unwrap();
        assert_eq!(bits.len(), 16);
        assert_eq!(bits.iter().filter(|b| **b).count(), 2);
        assert!(bits[0] && bits[8]);
        assert!(decode_bytes(&[0x61]).is_err());
        assert!(decode_bytes(&[0xfd, 0x01]).is_err());
    }

    #[test]
    fn a_cut_stream_is_corrupt_not_a_panic() {
        assert!(decode_unsigned(&[0x5e, 0x03, 0x5c], true).is_err());
        assert!(decode_unsigned(&[0x8e, 0x13, 0x2b, 0x21, 0x07], true).is_err());
        assert!(decode_unsigned(&[0xff, 0xff, 0xff], false).is_err());
    }
}
