//! How ORC lays values out in a stream, each encoding's reader and writer in one file: the
//! codec framing of compressed chunks ([`compress`]), one stream being written with its row
//! index positions ([`out_stream`]), byte run-length and boolean ([`byte_rle`]), integer
//! run-length version 1 ([`int_rle`], read only) and version 2 ([`rle_v2`]), and a timestamp's
//! seconds and nanoseconds ([`timestamp`]). The readers read streams beside orc-rust (whose own
//! decoders are private); the writers serve the re-encoding writer.
//!
//! The lowest room of `orc/`: it uses only `orc/error.rs`, and every other room may use it.

/// Rows of a batch below which its columns (or rows) are not shared among the encoders'
/// threads: handing out less work costs more than it saves.
pub(super) const PARALLEL_FROM_ROWS: usize = 1024;

pub(super) mod byte_rle;
pub(super) mod compress;
mod cursor;
pub(super) mod int_rle;
pub(super) mod out_stream;
pub(super) mod rle_v2;
pub(super) mod timestamp;
