//! The codec, compression block size and row index stride of a re-encoded output whose inputs
//! differ in them.
//!
//! A stripe copy must keep its inputs' encoding, so only files that agree are merged (the
//! merge key). A re-encode writes every stream anew and may merge files that agree only on
//! their schema (see [`crate::orc::merge::key::schema_groups`]); it then needs one encoding
//! for the output.
//! The rule: the combination holding most of the inputs' bytes, so the output reads like the
//! bulk of what it replaces and the fewest bytes change encoding; a tie goes to the
//! combination seen first in the listing, so the same files always make the same output.

use crate::orc::encoding::compress::Compression;
use crate::orc::tail::orc_tail::OrcTail;

/// How a re-encoded output is encoded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OutputShape {
    pub compression: Compression,
    pub compression_block_size: u64,
    /// Rows per row group; 0 writes no row index.
    pub row_index_stride: u32,
}

impl OutputShape {
    /// The shape of one input file.
    pub fn of(tail: &OrcTail) -> Self {
        OutputShape {
            compression: tail.compression,
            compression_block_size: tail.compression_block_size,
            row_index_stride: tail.footer.row_index_stride.unwrap_or(0),
        }
    }

    /// This shape with another codec; a file written with none gets the reference writers'
    /// block size once compressed.
    pub fn with_codec(self, compression: Compression) -> Self {
        let compression_block_size = match self.compression_block_size {
            0 => 256 * 1024,
            n => n,
        };
        OutputShape {
            compression,
            compression_block_size,
            ..self
        }
    }

    /// The shape holding most of `tails`' bytes, the first seen among equals; `None` for no
    /// tails.
    pub fn dominant<'a>(tails: impl IntoIterator<Item = &'a OrcTail>) -> Option<Self> {
        let mut bytes: Vec<(OutputShape, u64)> = Vec::new();
        for tail in tails {
            let shape = OutputShape::of(tail);
            match bytes.iter_mut().find(|(s, _)| *s == shape) {
                Some((_, b)) => *b += tail.file_length,
                None => bytes.push((shape, tail.file_length)),
            }
        }
        // max_by_key keeps the last of equals: walk backwards to keep the first seen.
        bytes
            .into_iter()
            .rev()
            .max_by_key(|(_, b)| *b)
            .map(|(s, _)| s)
    }
}

impl std::fmt::Display for OutputShape {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}, {} KiB blocks, row index stride {}",
            format!("{:?}", self.compression).to_ascii_uppercase(),
            self.compression_block_size / 1024,
            self.row_index_stride
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::orc::testutil::{block_on, MemFile, MULTI_STRIPE_ZSTD};
    use std::sync::Arc;

    fn tail(compression: Compression, length: u64) -> OrcTail {
        let mut t = block_on(crate::orc::read_tail(&MemFile::new(MULTI_STRIPE_ZSTD)))
            .unwrap()
            .unwrap();
        t.compression = compression;
        t.file_length = length;
        t
    }

    #[test]
    fn the_shape_with_most_bytes_wins_and_ties_go_to_the_first_seen() {
        let tails = [
            tail(Compression::Zlib, 100),
            tail(Compression::Snappy, 60),
            tail(Compression::Snappy, 60),
            tail(Compression::Zstd, 110),
        ];
        let most = OutputShape::dominant(&tails).unwrap();
        assert_eq!(most.compression, Compression::Snappy);

        let tied = [tail(Compression::Zstd, 50), tail(Compression::Zlib, 50)];
        assert_eq!(
            OutputShape::dominant(&tied).unwrap().compression,
            Compression::Zstd
        );
        assert_eq!(OutputShape::dominant(&[]), None);

        let mut strided = tail(Compression::Zlib, 500);
        Arc::make_mut(&mut strided.footer).row_index_stride = Some(5000);
        let shape = OutputShape::dominant([&tails[0], &strided]).unwrap();
        assert_eq!(shape.row_index_stride, 5000);
        assert_eq!(
            shape.to_string(),
            format!(
                "ZLIB, {} KiB blocks, row index stride 5000",
                strided.compression_block_size / 1024
            )
        );
    }
}
