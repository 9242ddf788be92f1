//! One ORC stream being written: bytes buffered up to the compression block size, then
//! compressed as one chunk (the 3-byte header format of `compress.rs`), and the stream
//! positions the row index needs.

use super::super::compress::{compress, Compression};
use super::super::error::OrcError;

pub(crate) struct OutStream {
    codec: Compression,
    block_size: usize,
    /// Uncompressed bytes of the chunk being filled.
    current: Vec<u8>,
    /// Finished chunks, compressed (or the raw stream with codec NONE).
    done: Vec<u8>,
}

impl OutStream {
    pub(crate) fn new(codec: Compression, block_size: u64) -> Self {
        Self {
            codec,
            block_size: block_size as usize,
            current: Vec::new(),
            done: Vec::new(),
        }
    }

    pub(crate) fn write(&mut self, mut data: &[u8]) -> Result<(), OrcError> {
        if self.codec == Compression::None {
            self.done.extend_from_slice(data);
            return Ok(());
        }
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
        if !self.current.is_empty() {
            let chunk = compress(self.codec, self.block_size as u64, &self.current)?;
            self.done.extend_from_slice(&chunk);
            self.current.clear();
        }
        Ok(())
    }

    /// The spec's positions for a stream: with compression, the start of the current chunk in
    /// the compressed stream and the offset within its uncompressed bytes; without, the byte
    /// offset.
    pub(crate) fn position(&self, out: &mut Vec<u64>) {
        out.push(self.done.len() as u64);
        if self.codec != Compression::None {
            out.push(self.current.len() as u64);
        }
    }

    /// Bytes the stream would take if finished now (an estimate before compression of the
    /// chunk being filled), for sizing stripes.
    pub(crate) fn estimated_size(&self) -> usize {
        self.done.len() + self.current.len()
    }

    /// The finished stream's bytes; the stream is empty again afterwards.
    pub(crate) fn finish(&mut self) -> Result<Vec<u8>, OrcError> {
        self.spill()?;
        Ok(std::mem::take(&mut self.done))
    }
}

#[cfg(test)]
mod tests {
    use super::super::super::compress::decompress;
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
        let bytes = s.finish().unwrap();
        let plain = decompress(Compression::Zlib, 100, &bytes, "t").unwrap();
        assert_eq!(plain.len(), 200);
        assert!(s.finish().unwrap().is_empty());
    }

    #[test]
    fn uncompressed_positions_are_byte_offsets() {
        let mut s = OutStream::new(Compression::None, 100);
        s.write(&[1, 2, 3]).unwrap();
        let mut pos = Vec::new();
        s.position(&mut pos);
        assert_eq!(pos, vec![3]);
        assert_eq!(s.finish().unwrap(), vec![1, 2, 3]);
    }
}
