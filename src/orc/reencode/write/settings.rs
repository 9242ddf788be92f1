//! What every column writer needs to know about the file being written, shared read-only.

use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use prost::Message;

use super::bloom::Bloom;
use crate::orc::encoding::compress::{compress_at, Compression};
use crate::orc::encoding::out_stream::OutStream;
use crate::orc::error::OrcError;

/// What every column writer needs to know about the file, shared read-only.
#[derive(Clone, Debug)]
pub(crate) struct Settings {
    pub(crate) compression: Compression,
    pub(crate) compression_level: Option<i32>,
    pub(crate) block_size: u64,
    pub(crate) row_index_stride: u32,
    pub(crate) bloom_columns: Vec<u32>,
    pub(crate) bloom_fpp: f64,
    pub(crate) dictionary_key_threshold: f64,
    /// Whether the stripe being written is in a UTC writer time zone, where a plain
    /// timestamp's stored seconds are its wall clock: only then are its bounds known here
    /// (see `OrcWriter::set_zone`). Shared by the writer, which sets it, and the columns.
    pub(crate) wall_clock_known: Arc<AtomicBool>,
}

impl Settings {
    pub(crate) fn stream(&self) -> OutStream {
        OutStream::new(self.compression, self.block_size).at_level(self.compression_level)
    }

    /// A filter sized for one row group.
    pub(crate) fn new_bloom(&self) -> Bloom {
        Bloom::new(u64::from(self.row_index_stride.max(1)), self.bloom_fpp)
    }

    /// A protobuf message (index streams, stripe footer, tail sections) in the file's
    /// chunked compression.
    pub(crate) fn compress_message(&self, message: &impl Message) -> Result<Vec<u8>, OrcError> {
        compress_at(
            self.compression,
            self.compression_level,
            self.block_size,
            &message.encode_to_vec(),
        )
    }
}
