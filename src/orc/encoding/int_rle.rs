//! ORC's integer run-length encodings, versions 1 and 2, decoded: what the decoder reads of a
//! stream beside orc-rust (see `Chunks::served` in `reencode/decode.rs`). Version 1 is only
//! ever read (the writer writes version 2), so its reader is here; version 2's reader and
//! writer are in [`super::rle_v2`], and the tests run the two against each other and against
//! the specification's examples.

use super::cursor::{unzigzag, Cursor};
use super::rle_v2::read_run;
use crate::orc::error::OrcError;

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

/// Whether every value of an unsigned RLE stream (already decompressed) passes `test`; `v2` as
/// for [`decode_unsigned`]. Decoded a run at a time into one buffer: the check of every
/// stripe's timestamp nanoseconds (`Chunks::read_beside`), which almost always passes, had
/// grown a vector of the stripe's values, nearly half of a sort's page faults.
pub(crate) fn all_unsigned(
    bytes: &[u8],
    v2: bool,
    mut test: impl FnMut(u64) -> bool,
) -> Result<bool, OrcError> {
    runs(bytes, v2, false, |run| run.iter().all(|&v| test(v)))
}

fn decode(bytes: &[u8], v2: bool, signed: bool) -> Result<Vec<u64>, OrcError> {
    let mut out = Vec::new();
    runs(bytes, v2, signed, |run| {
        out.extend_from_slice(run);
        true
    })?;
    Ok(out)
}

/// Hands `each` the stream's runs in order, until it returns false; whether it never did.
fn runs(
    bytes: &[u8],
    v2: bool,
    signed: bool,
    mut each: impl FnMut(&[u64]) -> bool,
) -> Result<bool, OrcError> {
    let mut input = Cursor::new(bytes);
    // A version 2 run holds at most 512 values, a version 1 run 130.
    let mut run = Vec::with_capacity(512);
    while !input.done() {
        run.clear();
        if v2 {
            read_run(&mut input, signed, &mut run)?;
        } else {
            run_v1(&mut input, signed, &mut run)?;
        }
        if !each(&run) {
            return Ok(false);
        }
    }
    Ok(true)
}

fn run_v1(input: &mut Cursor, signed: bool, out: &mut Vec<u64>) -> Result<(), OrcError> {
    let header = input.byte()? as i8;
    let value = |input: &mut Cursor| -> Result<u64, OrcError> {
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

#[cfg(test)]
mod tests {
    use super::super::rle_v2::encode as rle_v2_encode;
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

    /// The run-at-a-time check sees every value, in either version, and stops at the first
    /// that fails.
    #[test]
    fn all_unsigned_checks_every_run() {
        let mut values: Vec<i64> = (0..1500).map(|i| (i * 7919) % 1000).collect();
        values[1400] = 5000;
        let mut bytes = Vec::new();
        for chunk in values.chunks(512) {
            rle_v2_encode(chunk, false, &mut bytes);
        }
        let mut seen = 0;
        assert!(all_unsigned(&bytes, true, |v| {
            seen += 1;
            v <= 5000
        })
        .unwrap());
        assert_eq!(seen, values.len());
        // The 1401st value alone fails: the check stops there, in the third run.
        let mut seen = 0;
        assert!(!all_unsigned(&bytes, true, |v| {
            seen += 1;
            v < 1000
        })
        .unwrap());
        assert_eq!(seen, 1401);
        let v1 = [0x61, 0x00, 0x07, 0xfb, 0x02, 0x03, 0x06, 0x07, 0x0b];
        assert!(all_unsigned(&v1, false, |v| v <= 11).unwrap());
        assert!(!all_unsigned(&v1, false, |v| v != 6).unwrap());
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
    fn a_cut_stream_is_corrupt_not_a_panic() {
        assert!(decode_unsigned(&[0x5e, 0x03, 0x5c], true).is_err());
        assert!(decode_unsigned(&[0x8e, 0x13, 0x2b, 0x21, 0x07], true).is_err());
        assert!(decode_unsigned(&[0xff, 0xff, 0xff], false).is_err());
    }
}
