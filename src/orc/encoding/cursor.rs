//! Reading an encoded stream (already decompressed): a cursor over its bytes, with the pieces
//! the run-length encodings are made of (bytes, varints, big-endian and bit-packed values).
//! Written here because orc-rust keeps its own decoders private.

use crate::orc::error::OrcError;

/// A value of a signed stream from its zigzag form.
pub(super) fn unzigzag(v: u64) -> u64 {
    ((v >> 1) as i64 ^ -((v & 1) as i64)) as u64
}

/// Where a reader stands in a stream's bytes.
pub(super) struct Cursor<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Cursor<'a> {
    pub(super) fn new(bytes: &'a [u8]) -> Self {
        Self { bytes, at: 0 }
    }

    pub(super) fn done(&self) -> bool {
        self.at >= self.bytes.len()
    }

    pub(super) fn byte(&mut self) -> Result<u8, OrcError> {
        let b = *self
            .bytes
            .get(self.at)
            .ok_or_else(|| OrcError::Corrupt("an integer stream ends inside a run".into()))?;
        self.at += 1;
        Ok(b)
    }

    pub(super) fn varint(&mut self) -> Result<u64, OrcError> {
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

    pub(super) fn signed_varint(&mut self) -> Result<i64, OrcError> {
        let v = self.varint()?;
        Ok((v >> 1) as i64 ^ -((v & 1) as i64))
    }

    /// `bytes` bytes, big-endian.
    pub(super) fn big_endian(&mut self, bytes: u32) -> Result<u64, OrcError> {
        let mut v = 0u64;
        for _ in 0..bytes {
            v = v << 8 | u64::from(self.byte()?);
        }
        Ok(v)
    }

    /// `count` values of `width` bits, packed most significant bit first; the run ends on a
    /// byte boundary.
    pub(super) fn packed(
        &mut self,
        count: usize,
        width: u32,
        out: &mut Vec<u64>,
    ) -> Result<(), OrcError> {
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
