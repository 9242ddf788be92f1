//! The one I/O loop behind the stripe copy ([`write_merged`]), the byte copy of carried files and
//! the re-read of full verification: byte ranges ("pieces") of many files, read in bounded
//! chunks with read-ahead, handed in order to one sink.
//!
//! Reads run ahead of writes: up to `reads_in_flight` chunk reads (each at most `chunk_size`
//! bytes), and up to `opens_in_flight` opens of the next files, while the sink writes the chunks
//! in order; by default one read beside the write (see [`ReadAhead::default`] for why not more
//! on HDFS). Memory stays bounded by those numbers, never by the file count or file sizes: at
//! most `reads_in_flight + 2` chunks are held (in flight, the next one ready, the one being
//! written), and at most `opens_in_flight + reads_in_flight` files are open. A file is opened
//! only shortly before its bytes are needed, and closed once its last chunk is read.
//!
//! Every chunk is hashed twice. On the read side, in the read itself, as the reader returned
//! it; on the sink side, right before it is handed to the sink, which also checks that it is
//! the chunk it expects next (the sink side walks the pieces on its own). A piece's checksum is
//! taken on the sink side, from the bytes in the order they were written. So a chunk lost,
//! repeated, reordered or changed between reader and writer fails the copy
//! ([`VerifyFailure::Handoff`]), and the checksums returned are those of the bytes written.
//!
//! [`write_merged`]: super::write_merged

use std::future::Future;
use std::io;
use std::ops::Range;
use std::sync::Arc;

use bytes::Bytes;
use futures::{StreamExt, TryStreamExt};
use xxhash_rust::xxh3::{xxh3_64, Xxh3};

use super::error::{OrcError, VerifyFailure};
use super::io::{read_checked, RangeRead, Sink};

/// How pieces are read: the chunk size and how far reads and opens run ahead of the sink.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReadAhead {
    /// Largest read (and write): memory is bounded by this, not by the stripe or file size.
    pub chunk_size: u64,
    /// Chunk reads running at once ahead of the sink.
    pub reads_in_flight: usize,
    /// Files being opened at once ahead of the reads (one NameNode call each on HDFS).
    pub opens_in_flight: usize,
}

/// One read beside the write, nothing further ahead, on HDFS: more deadlocks there. A read or
/// open left pending in the queue may be handed one of hdfs-native's async mutexes (the
/// NameNode proxy's, or the cached server defaults that a new DataNode connection and a new
/// block of the writer both take) and then sit unpolled while the sink's write waits for that
/// very mutex. A full-size benchmark hung that way at the start of an output (2026-11-30). With
/// one of each, nothing is pending while the sink writes except the one read `copy_pieces`
/// polls with it. Running reads as spawned tasks would lift this; until then, 1 and 1.
impl Default for ReadAhead {
    fn default() -> Self {
        ReadAhead {
            chunk_size: 8 << 20,
            reads_in_flight: 1,
            opens_in_flight: 1,
        }
    }
}

/// A contiguous byte range of one source file: a stripe, or a whole file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Piece {
    /// Index of the source, as the opener and `lengths` know it.
    pub source: usize,
    pub range: Range<u64>,
}

/// A sink that drops what it is given: for reading pieces only to hash them.
pub struct Discard;

impl Sink for Discard {
    async fn write(&mut self, _data: Bytes) -> io::Result<()> {
        Ok(())
    }
}

/// Lets a caller that already holds a reader hand out references to it.
impl<R: RangeRead + Sync> RangeRead for &R {
    fn len(&self) -> impl Future<Output = io::Result<u64>> + Send {
        (**self).len()
    }

    fn read(&self, range: Range<u64>) -> impl Future<Output = io::Result<Bytes>> + Send {
        (**self).read(range)
    }
}

struct Chunk {
    piece: usize,
    start: u64,
    bytes: Bytes,
    /// XXH3 of `bytes` taken in the read, before the bytes went anywhere.
    read_xxh3: u64,
}

/// Copies `pieces`, in order, to `sink`, and returns the XXH3 of each piece's bytes as they
/// were handed to the sink. `open(source)` opens a source when its first piece comes near;
/// `lengths[source]` is the length the caller expects it to have: a file of another length
/// now was replaced or changed ([`OrcError::Changed`]), and nothing past its end is read.
/// Consecutive pieces of one source share one open.
pub async fn copy_pieces<R, O, F, S>(
    pieces: &[Piece],
    lengths: &[u64],
    open: O,
    sink: &mut S,
    opts: &ReadAhead,
) -> Result<Vec<u64>, OrcError>
where
    R: RangeRead,
    O: Fn(usize) -> F,
    F: Future<Output = Result<R, OrcError>>,
    S: Sink,
{
    let chunk = opts.chunk_size.max(1);
    if let Some(p) = pieces.iter().find(|p| p.source >= lengths.len()) {
        return Err(OrcError::Plan(format!(
            "a piece names source {}, of {} sources",
            p.source,
            lengths.len()
        )));
    }
    let open = &open;
    let opened = futures::stream::iter(runs(pieces))
        .map(|(source, run)| async move {
            let reader = open(source).await?;
            let expected = lengths[source];
            let found = reader.len().await?;
            if found != expected {
                return Err(OrcError::Changed(format!(
                    "source {source} is {found} bytes long now, {expected} when planned"
                )));
            }
            Ok((Arc::new(reader), run))
        })
        .buffered(opts.opens_in_flight.max(1));
    let reads = opened
        .flat_map(|opened| {
            let tasks: Vec<Result<_, OrcError>> = match opened {
                Ok((reader, run)) => run
                    .flat_map(|piece| {
                        let reader = Arc::clone(&reader);
                        split(pieces[piece].range.clone(), chunk)
                            .map(move |range| Ok((Arc::clone(&reader), piece, range)))
                    })
                    .collect(),
                Err(e) => vec![Err(e)],
            };
            futures::stream::iter(tasks)
        })
        .map(|task| async move {
            let (reader, piece, range) = task?;
            let source = pieces[piece].source;
            let bytes = read_checked(&*reader, range.clone(), lengths[source], "piece").await?;
            Ok::<_, OrcError>(Chunk {
                piece,
                start: range.start,
                read_xxh3: xxh3_64(&bytes),
                bytes,
            })
        })
        .buffered(opts.reads_in_flight.max(1));
    futures::pin_mut!(reads);

    // The sink side: walks the pieces itself and takes each chunk only where it belongs.
    let mut next = reads.try_next().await?;
    let mut sums = Vec::with_capacity(pieces.len());
    for (p, piece) in pieces.iter().enumerate() {
        let mut hasher = Xxh3::new();
        for range in split(piece.range.clone(), chunk) {
            let bytes = accept(p, &range, next.take())?;
            hasher.update(&bytes);
            // Write this chunk while the reads behind it go on.
            let (written, following) = futures::join!(sink.write(bytes), reads.try_next());
            written?;
            next = following?;
        }
        sums.push(hasher.digest());
    }
    if let Some(extra) = next {
        return Err(handoff(
            extra.piece,
            format!("an unplanned chunk at {}", extra.start),
        ));
    }
    Ok(sums)
}

fn handoff(piece: usize, what: String) -> OrcError {
    OrcError::Verify(VerifyFailure::Handoff(format!("piece {piece}: {what}")))
}

/// The sink side's check of one chunk: it must be the bytes `range` of piece `p`, and hash to
/// what they hashed to when read.
fn accept(p: usize, range: &Range<u64>, chunk: Option<Chunk>) -> Result<Bytes, OrcError> {
    let c = chunk.ok_or_else(|| handoff(p, format!("no chunk for bytes {range:?}")))?;
    if c.piece != p || c.start != range.start || c.bytes.len() as u64 != range.end - range.start {
        return Err(handoff(
            p,
            format!(
                "expected bytes {range:?}, got {} bytes at {} of piece {}",
                c.bytes.len(),
                c.start,
                c.piece
            ),
        ));
    }
    let handed = xxh3_64(&c.bytes);
    if handed != c.read_xxh3 {
        return Err(handoff(
            p,
            format!(
                "bytes {range:?} hash to {handed:016x} at the writer, {:016x} when read",
                c.read_xxh3
            ),
        ));
    }
    Ok(c.bytes)
}

/// `range` cut into consecutive chunks of at most `chunk` bytes.
fn split(range: Range<u64>, chunk: u64) -> impl Iterator<Item = Range<u64>> {
    let mut pos = range.start;
    std::iter::from_fn(move || {
        (pos < range.end).then(|| {
            let next = range.end.min(pos.saturating_add(chunk));
            let r = pos..next;
            pos = next;
            r
        })
    })
}

/// Consecutive pieces of one source, as (source, piece indices): one open each.
fn runs(pieces: &[Piece]) -> Vec<(usize, Range<usize>)> {
    let mut runs: Vec<(usize, Range<usize>)> = Vec::new();
    for (i, p) in pieces.iter().enumerate() {
        match runs.last_mut() {
            Some((source, run)) if *source == p.source => run.end = i + 1,
            _ => runs.push((p.source, i..i + 1)),
        }
    }
    runs
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;
    use crate::orc::testutil::{block_on, MemFile, VecSink};

    /// A reader that counts how many of its kind are open and reading at once.
    struct Counted<'a> {
        file: MemFile,
        counts: &'a Counts,
    }

    #[derive(Default)]
    struct Counts {
        open: AtomicUsize,
        max_open: AtomicUsize,
        reading: AtomicUsize,
        max_reading: AtomicUsize,
    }

    fn raise(now: &AtomicUsize, max: &AtomicUsize) {
        let n = now.fetch_add(1, Ordering::SeqCst) + 1;
        max.fetch_max(n, Ordering::SeqCst);
    }

    impl Drop for Counted<'_> {
        fn drop(&mut self) {
            self.counts.open.fetch_sub(1, Ordering::SeqCst);
        }
    }

    impl RangeRead for Counted<'_> {
        async fn len(&self) -> io::Result<u64> {
            self.file.len().await
        }

        async fn read(&self, range: Range<u64>) -> io::Result<Bytes> {
            raise(&self.counts.reading, &self.counts.max_reading);
            // Let the other reads in flight start before this one ends.
            tokio::task::yield_now().await;
            tokio::task::yield_now().await;
            let bytes = self.file.read(range).await;
            self.counts.reading.fetch_sub(1, Ordering::SeqCst);
            bytes
        }
    }

    fn files(n: usize, len: usize) -> Vec<Bytes> {
        (0..n)
            .map(|f| {
                (0..len)
                    .map(|i| (i * 7 + f * 13) as u8)
                    .collect::<Vec<u8>>()
                    .into()
            })
            .collect()
    }

    #[test]
    fn copies_in_order_with_bounded_reads_and_opens() {
        let data = files(50, 1000);
        let lengths: Vec<u64> = data.iter().map(|d| d.len() as u64).collect();
        // Two pieces per file, the second skipping some bytes, as padded stripes would.
        let pieces: Vec<Piece> = (0..data.len())
            .flat_map(|s| {
                [
                    Piece {
                        source: s,
                        range: 3..400,
                    },
                    Piece {
                        source: s,
                        range: 410..1000,
                    },
                ]
            })
            .collect();
        let counts = Counts::default();
        let opts = ReadAhead {
            chunk_size: 128,
            reads_in_flight: 4,
            opens_in_flight: 3,
        };
        let mut sink = VecSink::default();
        let sums = block_on(copy_pieces(
            &pieces,
            &lengths,
            |s| {
                raise(&counts.open, &counts.max_open);
                let file = MemFile::new(data[s].clone());
                let counts = &counts;
                async move { Ok(Counted { file, counts }) }
            },
            &mut sink,
            &opts,
        ))
        .unwrap();
        let expected: Vec<u8> = pieces
            .iter()
            .flat_map(|p| data[p.source][p.range.start as usize..p.range.end as usize].to_vec())
            .collect();
        assert_eq!(sink.data, expected);
        assert_eq!(sums.len(), pieces.len());
        for (p, sum) in pieces.iter().zip(&sums) {
            let bytes = &data[p.source][p.range.start as usize..p.range.end as usize];
            assert_eq!(*sum, xxh3_64(bytes));
        }
        assert!(sink.largest_write <= 128, "bounded writes");
        let max_reading = counts.max_reading.load(Ordering::SeqCst);
        assert!(
            (2..=4).contains(&max_reading),
            "reads ahead, bounded: {max_reading}"
        );
        let max_open = counts.max_open.load(Ordering::SeqCst);
        assert!(
            max_open > 1 && max_open <= 3 + 4,
            "opens ahead, bounded: {max_open}"
        );
        assert_eq!(counts.open.load(Ordering::SeqCst), 0, "every file closed");
    }

    #[test]
    fn a_changed_source_or_a_failed_open_stops_the_copy() {
        let data = files(3, 100);
        let pieces: Vec<Piece> = (0..3)
            .map(|s| Piece {
                source: s,
                range: 0..100,
            })
            .collect();
        let opts = ReadAhead::default();
        let mut sink = VecSink::default();
        let err = block_on(copy_pieces(
            &pieces,
            &[100, 99, 100],
            |s| {
                let f = MemFile::new(data[s].clone());
                async move { Ok(f) }
            },
            &mut sink,
            &opts,
        ));
        assert!(matches!(err, Err(OrcError::Changed(_))), "{err:?}");
        let err = block_on(copy_pieces(
            &pieces,
            &[100, 100, 100],
            |s| {
                let f = MemFile::new(data[s].clone());
                async move {
                    if s == 2 {
                        Err(OrcError::Io(io::Error::other("gone")))
                    } else {
                        Ok(f)
                    }
                }
            },
            &mut Discard,
            &opts,
        ));
        assert!(matches!(err, Err(OrcError::Io(_))), "{err:?}");
    }

    /// Anything between reader and writer that loses, repeats, moves or changes a chunk.
    #[test]
    fn the_sink_side_takes_only_the_chunk_the_read_side_hashed() {
        let chunk = |piece, start, bytes: &'static [u8], read: &[u8]| Chunk {
            piece,
            start,
            bytes: Bytes::from_static(bytes),
            read_xxh3: xxh3_64(read),
        };
        assert_eq!(
            accept(1, &(10..13), Some(chunk(1, 10, b"abc", b"abc"))).unwrap(),
            &b"abc"[..]
        );
        // Changed bytes, another piece, another place, another length, nothing at all.
        for (range, bad) in [
            (10..13, Some(chunk(1, 10, b"abd", b"abc"))),
            (10..13, Some(chunk(2, 10, b"abc", b"abc"))),
            (10..13, Some(chunk(1, 13, b"abc", b"abc"))),
            (10..14, Some(chunk(1, 10, b"abc", b"abc"))),
            (10..13, None),
        ] {
            assert!(matches!(
                accept(1, &range, bad),
                Err(OrcError::Verify(VerifyFailure::Handoff(_)))
            ));
        }
    }
}
