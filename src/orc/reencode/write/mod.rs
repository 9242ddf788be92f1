//! A full-fidelity ORC v1 writer: decoded rows (arrow record batches) in, a file with the
//! input's exact type tree, codec, compression block size, row index stride, statistics,
//! bloom filters and user metadata out.
//!
//! The ORC v1 specification is the contract. Module map:
//! - [`statistics`]: column statistics per row group, stripe and file;
//! - [`bloom`]: BLOOM_FILTER_UTF8 filters per row group;
//! - [`columns`]: one writer per ORC type (dictionary or direct strings among them);
//! - [`settings`]: what every column writer needs to know about the file;
//! - [`writer`]: row groups, stripes, the file tail, and the writer id.

mod bloom;
mod columns;
mod settings;
mod statistics;
mod writer;

pub use writer::{OrcWriter, WriterOptions, WrittenFile};

#[cfg(test)]
mod tests;
