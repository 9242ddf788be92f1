//! One ORC stream being written: bytes buffered up to the compression block size, then
//! compressed as one chunk (the 3-byte header format of [`super::compress`]), and the stream
//! positions the row index needs.

use super::compress::{compress_at, Compression};
use crate::orc::error::OrcError;

/// A stream's bytes as they were finished, chunk by chunk (compression chunks, or pieces of
/// the block size without compression). A stripe of 64 MiB lives in these until it is written;
/// one buffer per stream, grown by doubling, would hold up to twice that.
#[derive(Debug, Default)]
pub(crate) struct Encoded {
    chunks: Vec<Vec<u8>>,
    len: usize,
}

impl Encoded {
    fn push(&mut self, chunk: Vec<u8>) {
        self.len += chunk.len();
        self.chunks.push(chunk);
    }

    pub(crate) fn len(&self) -> usize {
        self.len
    }

    pub(crate) fn into_chunks(self) -> impl Iterator<Item = Vec<u8>> {
        self.chunks.into_iter()
    }

    #[cfg(test)]
    pub(crate) fn to_vec(&self) -> Vec<u8> {
        self.chunks.concat()
    }
}

impl From<Vec<u8>> for Encoded {
    fn from(bytes: Vec<u8>) -> Self {
        let mut encoded = Encoded::default();
        encoded.push(bytes);
        encoded
    }
}

/// Without compression a stream is still kept in pieces, of this size when the file's block
/// size does not say.
const PLAIN_PIECE: usize = 256 * 1024;

pub(crate) struct OutStream {
    codec: Compression,
    level: Option<i32>,
    block_size: usize,
    /// Uncompressed bytes of the chunk being filled.
    current: Vec<u8>,
    /// Finished chunks, compressed (or plain with codec NONE).
    done: Encoded,
}

impl OutStream {
    pub(crate) fn new(codec: Compression, block_size: u64) -> Self {
        let block_size = match block_size as usize {
            0 => PLAIN_PIECE,
            n => n,
        };
        Self {
            codec,
            level: None,
            block_size,
            current: Vec::new(),
            done: Encoded::default(),
        }
    }

    /// The stream compressed at `level` (see `compress_at`).
    pub(crate) fn at_level(mut self, level: Option<i32>) -> Self {
        self.level = level;
        self
    }

    pub(crate) fn write(&mut self, mut data: &[u8]) -> Result<(), OrcError> {
        while !data.is_empty() {
            let room = self.block_size - self.current.len();
            let take = room.min(data.len());
            self.current.extend_from_slice(&data[..take]);
            data = &data[take..];
            // Spill as soon as a chunk is full, so a recorded position never points at the
            // end of a chunk (its uncompressed offset is always below the block size).
            if self.current.len() == self.block_size {
                self.spill()?;
            }
        }
        Ok(())
    }

    fn spill(&mut self) -> Result<(), OrcError> {
        if self.current.is_empty() {
            return Ok(());
        }
        if self.codec == Compression::None {
            self.done.push(std::mem::take(&mut self.current));
            return Ok(());
        }
        let mut chunk = compress_at(
            self.codec,
            self.level,
            self.block_size as u64,
            &self.current,
        )?;
        // Sized for the worst case; held until the stripe is written.
        chunk.shrink_to_fit();
        self.done.push(chunk);
        self.current.clear();
        Ok(())
    }

    /// The spec's positions for a stream: with compression, the start of the current chunk in
    /// the compressed stream and the offset within its uncompressed bytes; without, the byte
    /// offset.
    pub(crate) fn position(&self, out: &mut Vec<u64>) {
        if self.codec == Compression::None {
            out.push((self.done.len() + self.current.len()) as u64);
        } else {
            out.push(self.done.len() as u64);
            out.push(self.current.len() as u64);
        }
    }

    /// Bytes the stream would take if finished now (an estimate before compression of the
    /// chunk being filled), for sizing stripes.
    pub(crate) fn estimated_size(&self) -> usize {
        self.done.len() + self.current.len()
    }

    /// The finished stream's bytes; the stream is empty again afterwards.
    pub(crate) fn finish(&mut self) -> Result<Encoded, OrcError> {
        self.spill()?;
        Ok(std::mem::take(&mut self.done))
    }
}

#[cfg(test)]
mod tests {
    use super::super::compress::decompress;
    use super::*;

    #[test]
    fn chunks_are_cut_at_the_block_size_and_positions_follow_them() {
        let mut s = OutStream::new(Compression::Zlib, 100);
        let mut pos = Vec::new();
        s.write(&[7u8; 150]).unwrap();
        s.position(&mut pos);
        let first_chunk = pos[0];
        assert!(first_chunk > 0);
        assert_eq!(pos[1], 50);
        s.write(&[8u8; 50]).unwrap();
        pos.clear();
        s.position(&mut pos);
        assert_eq!(pos[1], 0, "a full chunk is spilled at once");
        let bytes = s.finish().unwrap().to_vec();
        let plain = decompress(Compression::Zlib, 100, &bytes, "t").unwrap();
        assert_eq!(plain.len(), 200);
        assert_eq!(s.finish().unwrap().len(), 0);
    }

    #[test]
    fn uncompressed_positions_are_byte_offsets() {
        let mut s = OutStream::new(Compression::None, 100);
        s.write(&[1, 2, 3]).unwrap();
        let mut pos = Vec::new();
        s.position(&mut pos);
        assert_eq!(pos, vec![3]);
        assert_eq!(s.finish().unwrap().to_vec(), vec![1, 2, 3]);
    }
}
