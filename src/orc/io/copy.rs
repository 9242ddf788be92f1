//! The one I/O loop behind the stripe copy (`merge::writer::write_merged`), the byte copy of
//! carried files and the re-read of full verification: byte ranges ("pieces") of many files,
//! read in bounded chunks with read-ahead, handed in order to one sink.
//!
//! Opens and chunk reads run as spawned tokio tasks, ahead of the sink: up to
//! `opens_in_flight` files open at once, up to `bytes_in_flight` bytes of chunks read (or
//! being read) and not yet written, and as many reads at once as the larger of
//! `opens_in_flight` and the chunks that fit in `bytes_in_flight`. Memory stays bounded by those
//! numbers, never by the file count, file sizes or piece sizes: at most `bytes_in_flight` plus the chunk being written. A file is opened
//! only shortly before its bytes are needed, and closed once its last chunk is read.
//!
//! Why tasks, not a stream of futures polled beside the write: a future in a `buffered` stream
//! is polled only while the loop asks for the next item, so reads would stall whenever the
//! sink's write does. A spawned task is polled by the runtime whatever the sink does; what this
//! loop itself awaits are only its own semaphores and task handles. (The same unpolled futures
//! once hung a full-size benchmark, 2026-11-30, by holding one of hdfs-native's locks; every
//! hdfs-native call is now a task of its own, see `hdfs::Client`.)
//!
//! Every chunk is hashed twice. On the read side, in the read itself, as the reader returned
//! it; on the sink side, right before it is handed to the sink, which also checks that it is
//! the chunk it expects next (the sink side walks the pieces on its own). A piece's checksum is
//! taken on the sink side, from the bytes in the order they were written. So a chunk lost,
//! repeated, reordered or changed between reader and writer fails the copy
//! ([`VerifyFailure::Handoff`]), and the checksums returned are those of the bytes written.

use std::future::Future;
use std::io;
use std::ops::Range;
use std::sync::Arc;

use bytes::Bytes;
use tokio::sync::{mpsc, OwnedSemaphorePermit, Semaphore};
use tokio::task::JoinHandle;
use tracing::Instrument;
use xxhash_rust::xxh3::{xxh3_64, Xxh3};

use super::storage::{read_checked, RangeRead, Sink};
use crate::orc::error::{OrcError, VerifyFailure};

/// How pieces are read: the chunk size and how far reads and opens run ahead of the sink.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReadAhead {
    /// Largest read (and write).
    pub chunk_size: u64,
    /// Bytes read ahead of the sink and not yet written, at most (never less than one chunk):
    /// memory is bounded by this, not by the stripe or file size.
    pub bytes_in_flight: u64,
    /// Files open at once ahead of the sink (one NameNode call each on HDFS, unless the
    /// caller hands out readers it already holds).
    pub opens_in_flight: usize,
}

/// 8 MiB chunks, 32 MiB read ahead, 16 files open ahead: enough to keep one HDFS writer busy
/// with files of a few KiB, without holding more than a few chunks.
impl Default for ReadAhead {
    fn default() -> Self {
        ReadAhead {
            chunk_size: 8 << 20,
            bytes_in_flight: 32 << 20,
            opens_in_flight: 16,
        }
    }
}

/// The largest chunk: a chunk's bytes are counted in one semaphore acquisition (a `u32`).
const MAX_CHUNK: u64 = 1 << 30;

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

/// Lets a reader be shared by the spawned reads of the copy, and by a caller that keeps it.
impl<R: RangeRead + Send> RangeRead for Arc<R> {
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
    /// This chunk's share of `bytes_in_flight`, given back once it is written.
    budget: Option<OwnedSemaphorePermit>,
}

/// A spawned task that is aborted when its handle is dropped: a copy (or re-encode) that fails
/// or is dropped leaves no reads, opens or decoding running behind it.
pub(crate) struct Task<T>(JoinHandle<T>);

impl<T: Send + 'static> Task<T> {
    /// Runs `f` in the spawner's tracing span, so what it logs names the partition (a task of
    /// its own would otherwise log outside every span).
    pub(crate) fn spawn(f: impl Future<Output = T> + Send + 'static) -> Self {
        Task(tokio::spawn(f.in_current_span()))
    }
}

impl<T> Task<T> {
    /// What the task returned; `Err` when it panicked or was cancelled.
    pub(crate) async fn output(mut self) -> Result<T, tokio::task::JoinError> {
        (&mut self.0).await
    }
}

impl<T> Task<Result<T, OrcError>> {
    pub(crate) async fn join(self) -> Result<T, OrcError> {
        self.output()
            .await
            .map_err(|e| OrcError::Io(io::Error::other(format!("a read task ended: {e}"))))?
    }
}

impl<T> Drop for Task<T> {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// An opened source, and its place among the opens [`open_ahead`] lets run ahead, given back
/// when this is dropped or its value taken out ([`Opened::into_inner`]).
pub(crate) struct Opened<T> {
    value: T,
    _slot: OwnedSemaphorePermit,
}

impl<T> Opened<T> {
    /// The opened value, its place given back: holding it no longer holds back the next open.
    pub(crate) fn into_inner(self) -> T {
        self.value
    }
}

/// The opens of `items` in order, each `open` future a task of its own, started while fewer
/// than `slots` are running or held as [`Opened`]: how the stripe copy and the re-encode open
/// their next inputs ahead, a few at a time, never all at once. The future returned starts the
/// opens and must be polled beside the [`Opens`] that hands them out; it ends once every item
/// is started or the `Opens` is dropped.
pub(crate) fn open_ahead<I, T, O, F>(
    items: I,
    slots: usize,
    mut open: O,
) -> (impl Future<Output = ()>, Opens<I::Item, T>)
where
    I: IntoIterator,
    O: FnMut(&I::Item) -> F,
    F: Future<Output = Result<T, OrcError>> + Send + 'static,
    T: Send + 'static,
{
    let slots = Arc::new(Semaphore::new(slots.max(1)));
    let (started, opens) = mpsc::unbounded_channel();
    let opener = async move {
        for item in items {
            let slot = Arc::clone(&slots)
                .acquire_owned()
                .await
                .expect("the semaphore is never closed");
            let opening = open(&item);
            let task = Task::spawn(async move {
                Ok(Opened {
                    value: opening.await?,
                    _slot: slot,
                })
            });
            if started.send((item, task)).is_err() {
                break;
            }
        }
    };
    (opener, Opens(opens))
}

/// The opens [`open_ahead`] started, handed out in order.
pub(crate) struct Opens<X, T>(mpsc::UnboundedReceiver<Started<X, T>>);

/// An item and the task opening it.
type Started<X, T> = (X, Task<Result<Opened<T>, OrcError>>);

impl<X, T> Opens<X, T> {
    /// The next item, opened; `None` once every item was handed out.
    pub(crate) async fn next(&mut self) -> Option<Result<(X, Opened<T>), OrcError>> {
        let (item, task) = self.0.recv().await?;
        Some(task.join().await.map(|opened| (item, opened)))
    }
}

/// Copies `pieces`, in order, to `sink`, and returns the XXH3 of each piece's bytes as they
/// were handed to the sink. `open(source)` opens a source when its first piece comes near (the
/// future it returns runs as a task of its own); `lengths[source]` is the length the caller
/// expects it to have: a file of another length now was replaced or changed
/// ([`OrcError::Changed`]), and nothing past its end is read. Consecutive pieces of one source
/// share one open. Must run inside a tokio runtime.
pub async fn copy_pieces<R, O, F, S>(
    pieces: &[Piece],
    lengths: &[u64],
    open: O,
    sink: &mut S,
    opts: &ReadAhead,
) -> Result<Vec<u64>, OrcError>
where
    R: RangeRead + Send + 'static,
    O: Fn(usize) -> F,
    F: Future<Output = Result<R, OrcError>> + Send + 'static,
    S: Sink,
{
    let chunk = opts.chunk_size.clamp(1, MAX_CHUNK);
    if let Some(p) = pieces.iter().find(|p| p.source >= lengths.len()) {
        return Err(OrcError::Plan(format!(
            "a piece names source {}, of {} sources",
            p.source,
            lengths.len()
        )));
    }
    let budget = opts
        .bytes_in_flight
        .max(chunk)
        .min(Semaphore::MAX_PERMITS as u64) as usize;
    let budget = Arc::new(Semaphore::new(budget));
    // Reads at once, whatever their size: the byte budget alone would let many small pieces of
    // one source (a merged output's tiny stripes, read back for verification) run thousands of
    // reads together, each with its own DataNode connection and buffers: 10,000 stripes of 16
    // KiB took 110 MiB that way. As many reads as open sources, or as chunks fit in the budget.
    let reads = Arc::new(Semaphore::new(
        opts.opens_in_flight
            .max((opts.bytes_in_flight / chunk) as usize)
            .max(1),
    ));
    let (chunk_tx, chunk_rx) = mpsc::unbounded_channel::<Task<Result<Chunk, OrcError>>>();

    // Opens, in order, as slots free up; each open is checked for length. A source's slot is
    // held until its last chunk is read.
    let (opener, opens) = open_ahead(runs(pieces), opts.opens_in_flight, |&(source, _)| {
        let opening = open(source);
        let expected = lengths[source];
        async move {
            let reader = opening.await?;
            let found = reader.len().await?;
            if found != expected {
                return Err(OrcError::Changed(format!(
                    "source {source} is {found} bytes long now, {expected} when planned"
                )));
            }
            Ok(reader)
        }
    });

    let reader = read_chunks(pieces, lengths, chunk, opens, budget, reads, chunk_tx);
    let writer = write_chunks(pieces, chunk, chunk_rx, sink);

    let opener = async {
        opener.await;
        Ok(())
    };
    let ((), (), sums) = tokio::try_join!(opener, reader, writer)?;
    Ok(sums)
}

/// The read side of [`copy_pieces`]: each source as it is opened, its pieces' chunks read in
/// order as the byte budget and the reads at once allow; each read is a task of its own and
/// hashes what it read.
async fn read_chunks<R: RangeRead + Send + 'static>(
    pieces: &[Piece],
    lengths: &[u64],
    chunk: u64,
    mut opens: Opens<(usize, Range<usize>), R>,
    budget: Arc<Semaphore>,
    reads: Arc<Semaphore>,
    chunk_tx: mpsc::UnboundedSender<Task<Result<Chunk, OrcError>>>,
) -> Result<(), OrcError> {
    while let Some(next) = opens.next().await {
        let ((_, run), opened) = next?;
        let opened: Arc<Opened<R>> = Arc::new(opened);
        for piece in run.clone() {
            let len = lengths[pieces[piece].source];
            for range in split(pieces[piece].range.clone(), chunk) {
                let share = Arc::clone(&budget)
                    .acquire_many_owned((range.end - range.start) as u32)
                    .await
                    .expect("the semaphore is never closed");
                let reading = Arc::clone(&reads)
                    .acquire_owned()
                    .await
                    .expect("the semaphore is never closed");
                let opened = Arc::clone(&opened);
                let task = Task::spawn(async move {
                    let bytes = read_checked(&opened.value, range.clone(), len, "piece").await?;
                    drop(reading);
                    Ok(Chunk {
                        piece,
                        start: range.start,
                        read_xxh3: xxh3_64(&bytes),
                        bytes,
                        budget: Some(share),
                    })
                });
                if chunk_tx.send(task).is_err() {
                    return Ok(());
                }
            }
        }
        // Test builds pause here once per merged output (`compact::reading-inputs`): its
        // first input's stripes are being read, the others' not yet (though their ends
        // were read when they were opened ahead). A carried file's copy and a re-read for
        // verification read one file: they never stop here.
        #[cfg(feature = "failpoints")]
        if run.start == 0 && run.end < pieces.len() {
            fail::fail_point!("compact::reading-inputs");
        }
    }
    Ok(())
}

/// The sink side of [`copy_pieces`]: walks the pieces itself and takes each chunk only where it
/// belongs.
async fn write_chunks<S: Sink>(
    pieces: &[Piece],
    chunk: u64,
    mut chunk_rx: mpsc::UnboundedReceiver<Task<Result<Chunk, OrcError>>>,
    sink: &mut S,
) -> Result<Vec<u64>, OrcError> {
    let mut sums = Vec::with_capacity(pieces.len());
    for (p, piece) in pieces.iter().enumerate() {
        let mut hasher = Xxh3::new();
        for range in split(piece.range.clone(), chunk) {
            let mut next = match chunk_rx.recv().await {
                Some(task) => Some(task.join().await?),
                None => None,
            };
            // Held until the chunk is written, so the budget counts it until then.
            let _share = next.as_mut().and_then(|c| c.budget.take());
            let bytes = accept(p, &range, next)?;
            hasher.update(&bytes);
            sink.write(bytes).await?;
        }
        sums.push(hasher.digest());
        // Test builds pause here once per merged output (`compact::writing-output`): its
        // file is open, its first stripe handed to the writer, the rest to come. Pieces of
        // one file (a carried file, a re-read for verification) never stop here.
        #[cfg(feature = "failpoints")]
        if p == 0 && pieces.iter().any(|q| q.source != piece.source) {
            fail::fail_point!("compact::writing-output");
        }
    }
    if let Some(task) = chunk_rx.recv().await {
        let extra = task.join().await?;
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

    /// A reader that counts how many of its kind are open, and how many bytes are being read,
    /// at once.
    struct Counted {
        file: MemFile,
        counts: Arc<Counts>,
    }

    #[derive(Default)]
    struct Counts {
        open: AtomicUsize,
        max_open: AtomicUsize,
        reading: AtomicUsize,
        max_reading: AtomicUsize,
    }

    fn raise(now: &AtomicUsize, max: &AtomicUsize, by: usize) {
        let n = now.fetch_add(by, Ordering::SeqCst) + by;
        max.fetch_max(n, Ordering::SeqCst);
    }

    impl Drop for Counted {
        fn drop(&mut self) {
            self.counts.open.fetch_sub(1, Ordering::SeqCst);
        }
    }

    impl RangeRead for Counted {
        async fn len(&self) -> io::Result<u64> {
            self.file.len().await
        }

        async fn read(&self, range: Range<u64>) -> io::Result<Bytes> {
            let len = (range.end - range.start) as usize;
            raise(&self.counts.reading, &self.counts.max_reading, len);
            // Let the other reads in flight start before this one ends.
            tokio::task::yield_now().await;
            tokio::task::yield_now().await;
            let bytes = self.file.read(range).await;
            self.counts.reading.fetch_sub(len, Ordering::SeqCst);
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
        let counts = Arc::new(Counts::default());
        let opts = ReadAhead {
            chunk_size: 128,
            bytes_in_flight: 4 * 128,
            opens_in_flight: 3,
        };
        let mut sink = VecSink::default();
        let sums = block_on(copy_pieces(
            &pieces,
            &lengths,
            |s| {
                raise(&counts.open, &counts.max_open, 1);
                let file = MemFile::new(data[s].clone());
                let counts = Arc::clone(&counts);
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
            (129..=4 * 128).contains(&max_reading),
            "reads ahead, bounded in bytes: {max_reading}"
        );
        let max_open = counts.max_open.load(Ordering::SeqCst);
        assert!(
            (2..=3).contains(&max_open),
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
            budget: None,
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
