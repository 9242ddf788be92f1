//! In-memory reader, sink and fixtures for the unit tests.

use std::io;
use std::ops::Range;

use bytes::Bytes;

use super::io::{RangeRead, Sink};

/// Written by Java ORC 1.9.5 (`tests/data/orc/make-fixtures.sh`): one stripe, LZ4, every type.
pub const ALL_TYPES_LZ4: &[u8] = include_bytes!("../../tests/data/orc/all_types_lz4.orc");
/// Written by Java ORC 1.9.5: several stripes, ZSTD, `struct<a:bigint,s:string>`.
pub const MULTI_STRIPE_ZSTD: &[u8] = include_bytes!("../../tests/data/orc/multi_stripe_zstd.orc");

#[derive(Clone)]
pub struct MemFile(Bytes);

impl MemFile {
    pub fn new(bytes: impl Into<Bytes>) -> Self {
        Self(bytes.into())
    }
}

impl RangeRead for MemFile {
    async fn len(&self) -> io::Result<u64> {
        Ok(self.0.len() as u64)
    }

    async fn read(&self, range: Range<u64>) -> io::Result<Bytes> {
        // Mirrors hdfs-native: a read past the end is a bug in the engine, so fail loudly.
        assert!(range.end <= self.0.len() as u64, "read past EOF: {range:?}");
        self.0.read(range).await
    }
}

#[derive(Default)]
pub struct VecSink {
    pub data: Vec<u8>,
    pub largest_write: usize,
}

impl Sink for VecSink {
    async fn write(&mut self, data: Bytes) -> io::Result<()> {
        self.largest_write = self.largest_write.max(data.len());
        self.data.extend_from_slice(&data);
        Ok(())
    }
}

pub fn block_on<F: std::future::Future>(f: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("test runtime")
        .block_on(f)
}
