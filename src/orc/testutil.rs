//! In-memory reader, sink and fixtures for the unit tests.

use std::io;
use std::ops::Range;

use bytes::Bytes;

use super::io::storage::{RangeRead, Sink};

/// Written by Java ORC 1.9.5 (`tests/data/orc/make-fixtures.sh`): one stripe, LZ4, every type.
pub const ALL_TYPES_LZ4: &[u8] = include_bytes!("../../tests/data/orc/all_types_lz4.orc");
/// Written by Java ORC 1.9.5 in America/Los_Angeles: `struct<id:bigint,ts:timestamp>`, years
/// 0001 to 9999 and a null.
pub const LA_TIMESTAMPS_ZLIB: &[u8] = include_bytes!("../../tests/data/orc/la_timestamps_zlib.orc");
/// Written by pyarrow (ORC C++ 2.2): `struct<ts:timestamp>`, 1970-01-01 00:00:01, 1969-12-31
/// 23:59:59.5 (stored with negative nanoseconds) and a null.
pub const CPP_PRE1970_FRACTION: &[u8] =
    include_bytes!("../../tests/data/orc/cpp_pre1970_fraction.orc");
/// Written by pyarrow: `struct<id:bigint,ts:timestamp>`, ZSTD, 200 rows: 1900-01-01
/// 00:00:00.5, 1950-06-14 02:00:00.123456789, 1969-12-29 23:59:59.25 (all three stored with
/// negative nanoseconds), 2000-01-01 and a null, 40 times.
pub const CPP_BEFORE_1970_ZSTD: &[u8] =
    include_bytes!("../../tests/data/orc/cpp_before_1970_zstd.orc");
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
