//! ORC's byte run-length encoding (PRESENT, boolean DATA, tinyint DATA, union tags) and the
//! boolean encoding on top of it (bits packed most significant first into bytes).
//!
//! A control byte 0..=127 means "the next byte repeats control + 3 times"; a negative control
//! means "-control literal bytes follow".

use super::cursor::Cursor;
use super::out_stream::{Encoded, OutStream};
use crate::orc::error::OrcError;

/// The most values one run can hold: 130 repeats or 128 literals. Values are buffered up to the
/// literal limit and encoded together, so every flush starts at a run boundary.
const MAX_LITERALS: usize = 128;
const MIN_REPEAT: usize = 3;
const MAX_REPEAT: usize = 130;

pub(crate) struct ByteRle {
    out: OutStream,
    pending: Vec<u8>,
}

impl ByteRle {
    pub(crate) fn new(out: OutStream) -> Self {
        Self {
            out,
            pending: Vec::with_capacity(MAX_LITERALS),
        }
    }

    pub(crate) fn write(&mut self, value: u8) -> Result<(), OrcError> {
        self.pending.push(value);
        if self.pending.len() == MAX_LITERALS {
            self.flush()?;
        }
        Ok(())
    }

    fn flush(&mut self) -> Result<(), OrcError> {
        let values = std::mem::take(&mut self.pending);
        let mut encoded = Vec::with_capacity(values.len() + 2);
        let mut literal_start = 0;
        let mut i = 0;
        while i < values.len() {
            let run = values[i..]
                .iter()
                .take(MAX_REPEAT)
                .take_while(|v| **v == values[i])
                .count();
            if run >= MIN_REPEAT {
                push_literals(&mut encoded, &values[literal_start..i]);
                encoded.push((run - MIN_REPEAT) as u8);
                encoded.push(values[i]);
                i += run;
                literal_start = i;
            } else {
                i += run;
            }
        }
        push_literals(&mut encoded, &values[literal_start..]);
        self.out.write(&encoded)?;
        self.pending = values;
        self.pending.clear();
        Ok(())
    }

    /// Stream position, then how many values of the next run come before this point.
    pub(crate) fn position(&self, out: &mut Vec<u64>) {
        self.out.position(out);
        out.push(self.pending.len() as u64);
    }

    pub(crate) fn estimated_size(&self) -> usize {
        self.out.estimated_size() + self.pending.len()
    }

    pub(crate) fn finish(&mut self) -> Result<Encoded, OrcError> {
        self.flush()?;
        self.out.finish()
    }
}

fn push_literals(encoded: &mut Vec<u8>, literals: &[u8]) {
    if !literals.is_empty() {
        encoded.push((-(literals.len() as i16)) as u8);
        encoded.extend_from_slice(literals);
    }
}

/// Booleans, eight to a byte, most significant bit first.
pub(crate) struct BoolRle {
    bytes: ByteRle,
    current: u8,
    bits: u8,
}

impl BoolRle {
    pub(crate) fn new(out: OutStream) -> Self {
        Self {
            bytes: ByteRle::new(out),
            current: 0,
            bits: 0,
        }
    }

    pub(crate) fn write(&mut self, value: bool) -> Result<(), OrcError> {
        self.current |= u8::from(value) << (7 - self.bits);
        self.bits += 1;
        if self.bits == 8 {
            self.bytes.write(self.current)?;
            self.current = 0;
            self.bits = 0;
        }
        Ok(())
    }

    /// The byte encoding's positions, then how many bits of the current byte are used.
    pub(crate) fn position(&self, out: &mut Vec<u64>) {
        self.bytes.position(out);
        out.push(u64::from(self.bits));
    }

    pub(crate) fn estimated_size(&self) -> usize {
        self.bytes.estimated_size() + 1
    }

    pub(crate) fn finish(&mut self) -> Result<Encoded, OrcError> {
        if self.bits > 0 {
            self.bytes.write(self.current)?;
            self.current = 0;
            self.bits = 0;
        }
        self.bytes.finish()
    }
}

/// Every byte of a byte run-length stream (already decompressed): a control byte 0..=127 is
/// followed by one byte repeated control + 3 times, a negative one by -control literal bytes.
pub(crate) fn decode_bytes(bytes: &[u8]) -> Result<Vec<u8>, OrcError> {
    let mut input = Cursor::new(bytes);
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

#[cfg(test)]
mod tests {
    use super::super::compress::Compression;
    use super::*;

    fn byte_rle() -> ByteRle {
        ByteRle::new(OutStream::new(Compression::None, 1 << 16))
    }

    #[test]
    fn spec_example_repeat_and_literals() {
        // The spec's examples: 100 zeros are [0x61, 0x00]; [0x44, 0x45] is [0xfe, 0x44, 0x45].
        let mut e = byte_rle();
        for _ in 0..100 {
            e.write(0).unwrap();
        }
        assert_eq!(e.finish().unwrap().to_vec(), vec![0x61, 0x00]);
        let mut e = byte_rle();
        e.write(0x44).unwrap();
        e.write(0x45).unwrap();
        assert_eq!(e.finish().unwrap().to_vec(), vec![0xfe, 0x44, 0x45]);
    }

    #[test]
    fn long_mixed_input_decodes_back() {
        let values: Vec<u8> = (0..5000u32)
            .map(|i| if i % 300 < 150 { 9 } else { (i * 7) as u8 })
            .collect();
        let mut e = byte_rle();
        for v in &values {
            e.write(*v).unwrap();
        }
        let bytes = e.finish().unwrap().to_vec();
        assert_eq!(decode_bytes(&bytes).unwrap(), values);
    }

    #[test]
    fn booleans_pack_most_significant_bit_first() {
        let mut e = BoolRle::new(OutStream::new(Compression::None, 1 << 16));
        for b in [true, false, false, false, false, false, false, false, true] {
            e.write(b).unwrap();
        }
        let mut pos = Vec::new();
        e.position(&mut pos);
        assert_eq!(
            pos,
            vec![0, 1, 1],
            "one byte pending in the RLE, one bit in the next"
        );
        assert_eq!(e.finish().unwrap().to_vec(), vec![0xfe, 0x80, 0x80]);
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
}
