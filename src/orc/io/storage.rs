//! Random-access reads of one immutable file and a sequential sink: all the engine asks of
//! storage, so HDFS in production and memory in tests serve it alike. A small file, or a
//! file's end, is read once and served from memory after ([`Prefetched`]).

use std::future::Future;
use std::io;
use std::ops::Range;

use bytes::Bytes;
use futures::future::Either;

use crate::orc::error::OrcError;

/// Random-access reads of one immutable file.
///
/// The contract the engine keeps: it never asks for bytes past `len()`. hdfs-native's
/// `FileReader::read_range` panics past the end of the file, so every offset and length found
/// inside a file is checked against `len()` before it is used, and a bad one becomes a typed
/// [`OrcError`], never a read.
///
/// The futures are `Send` so a caller may spawn reads of many files on a multi-threaded runtime.
// An `is_empty` would only be `len() == 0` behind another await; the engine needs the number.
#[allow(clippy::len_without_is_empty)]
pub trait RangeRead: Sync {
    /// Length of the file in bytes.
    fn len(&self) -> impl Future<Output = io::Result<u64>> + Send;
    /// Exactly the bytes of `range`, which always lies within `0..len()`.
    fn read(&self, range: Range<u64>) -> impl Future<Output = io::Result<Bytes>> + Send;
}

/// A whole file in memory (a small input read with its tail). The engine never reads past the
/// end; should it, an error, as our reader of HDFS files gives (hdfs-native itself would panic),
/// not a panic on the slice.
impl RangeRead for Bytes {
    fn len(&self) -> impl Future<Output = io::Result<u64>> + Send {
        std::future::ready(Ok(Bytes::len(self) as u64))
    }

    fn read(&self, range: Range<u64>) -> impl Future<Output = io::Result<Bytes>> + Send {
        let length = Bytes::len(self) as u64;
        std::future::ready(if range.start <= range.end && range.end <= length {
            Ok(self.slice(range.start as usize..range.end as usize))
        } else {
            Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                format!("bytes {range:?} of a file of {length}"),
            ))
        })
    }
}

/// How much of the end of a file is read before knowing the tail's size. Most tails of small
/// files fit, so one read usually suffices (Java ORC guesses the same amount). A file no longer
/// than this is read whole by `tail::read::read_tail`.
pub(crate) const SPECULATIVE_TAIL: u64 = 16 * 1024;

/// Files up to this size are read whole when opened to be copied or decoded into an output
/// ([`Prefetched`]); of larger ones, the last [`SPECULATIVE_TAIL`] bytes.
pub(crate) const READ_WHOLE_UP_TO: u64 = 1 << 20;

/// A file whose end (or the whole file, when small) was read once when it was opened for an
/// output, and serves every later read that falls inside it; other reads go to `inner`.
///
/// The statistics of an input are read again from its tail when it is copied or decoded
/// (`tail::read::read_statistics_again`); without this, that read would be one more DataNode
/// round trip per input, beside the stripe reads of the copy and the tail read of the
/// decoder. What it holds is one file's end, for the few inputs open ahead.
pub(crate) struct Prefetched<R> {
    inner: R,
    start: u64,
    held: Bytes,
}

impl<R: RangeRead> Prefetched<R> {
    /// Reads the end of `inner`: all of it up to [`READ_WHOLE_UP_TO`] bytes, else its last
    /// [`SPECULATIVE_TAIL`] bytes.
    pub(crate) async fn open(inner: R) -> Result<Self, OrcError> {
        let length = inner.len().await?;
        let held = if length <= READ_WHOLE_UP_TO {
            length
        } else {
            SPECULATIVE_TAIL
        };
        let start = length - held;
        let held = read_checked(&inner, start..length, length, "the end of the file").await?;
        Ok(Prefetched { inner, start, held })
    }
}

impl<R: RangeRead> RangeRead for Prefetched<R> {
    fn len(&self) -> impl Future<Output = io::Result<u64>> + Send {
        std::future::ready(Ok(self.start + self.held.len() as u64))
    }

    fn read(&self, range: Range<u64>) -> impl Future<Output = io::Result<Bytes>> + Send {
        if range.start >= self.start {
            let from = range.start - self.start..range.end.saturating_sub(self.start);
            Either::Left(self.held.read(from))
        } else {
            Either::Right(self.inner.read(range))
        }
    }
}

/// An append-only destination for one output file (hdfs-native's `FileWriter::write_bytes` in
/// production). Taking `Bytes` lets stripe chunks pass through without another copy.
pub trait Sink: Send {
    fn write(&mut self, data: Bytes) -> impl Future<Output = io::Result<()>> + Send;
}

/// A sink lent to a writer that takes its sink by value, so the lender can still close it (or
/// remove what was written) when the writer fails.
impl<S: Sink> Sink for &mut S {
    fn write(&mut self, data: Bytes) -> impl Future<Output = io::Result<()>> + Send {
        (**self).write(data)
    }
}

/// Reads `range` after checking it against the file length, and checks the reader returned
/// exactly what was asked: a short read would otherwise turn into a silently shorter stripe.
pub(crate) async fn read_checked<R: RangeRead>(
    reader: &R,
    range: Range<u64>,
    file_len: u64,
    what: &str,
) -> Result<Bytes, OrcError> {
    if range.start > range.end || range.end > file_len {
        return Err(OrcError::Truncated(format!(
            "{what}: bytes {}..{} lie outside the file of {file_len} bytes",
            range.start, range.end
        )));
    }
    let want = range.end - range.start;
    let bytes = reader.read(range.clone()).await?;
    if bytes.len() as u64 != want {
        return Err(OrcError::Io(io::Error::new(
            io::ErrorKind::UnexpectedEof,
            format!(
                "{what}: asked for {want} bytes at {}, the reader returned {}",
                range.start,
                bytes.len()
            ),
        )));
    }
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::orc::testutil::block_on;

    fn file(len: usize) -> Bytes {
        (0..len)
            .map(|i| (i % 251) as u8)
            .collect::<Vec<u8>>()
            .into()
    }

    #[test]
    fn a_prefetched_file_serves_its_end_and_passes_the_rest_on() {
        let big = file((READ_WHOLE_UP_TO + 100) as usize);
        let len = big.len() as u64;
        let p = block_on(Prefetched::open(big.clone())).unwrap();
        assert_eq!(p.held.len() as u64, SPECULATIVE_TAIL);
        assert_eq!(block_on(p.len()).unwrap(), len);
        let read = |r: Range<u64>| block_on(p.read(r));
        let whole = |r: Range<u64>| big.slice(r.start as usize..r.end as usize);
        for r in [
            len - 10..len,
            0..10,
            len - SPECULATIVE_TAIL - 5..len - 3,
            len..len,
        ] {
            assert_eq!(read(r.clone()).unwrap(), whole(r));
        }
        assert!(read(len - 5..len + 1).is_err(), "past the end is an error");

        let small = file(5000);
        let p = block_on(Prefetched::open(small.clone())).unwrap();
        assert_eq!(p.held, small, "a small file is held whole");
        assert_eq!(block_on(p.read(10..20)).unwrap(), small.slice(10..20));
    }
}
