//! An external sort of decoded rows by their keys (see [`super::order`]), in bounded memory:
//! rows gather until they hold `memory` bytes, are sorted into a run, and, when more rows follow,
//! the run is spilled to a local file (Arrow IPC); at the end one k-way merge of the runs hands
//! the rows over in key order, a batch at a time. Memory holds one run being gathered, then one
//! batch per spilled run.
//!
//! With more than one thread, a run is sorted and spilled on a thread of its own while the next
//! gathers: the decoding no longer waits for each spill (a sort's serial part). Two runs then
//! share the memory, each half of it, and spill in batches of half the rows, so the merge of
//! twice as many runs holds what it held before.
//!
//! A sort of our own, not DataFusion's ExternalSorter: that is a query engine's worth of
//! dependencies for one run-sort and one merge.
//!
//! The merge holds a batch of every run, so a big partition's hundreds of runs would take
//! memory in proportion to its size: before it, runs are merged into fewer (on `threads` at
//! once) until their batches fit the sort's memory ([`Sorter::merge_down`]).
//!
//! Runs spill LZ4-compressed when the spill directory might not hold them uncompressed (see
//! [`compress_spills`]).
//!
//! Spill files live in a directory of their own, `hive-orc-compactor-spill-<pid>-<n>` under the
//! spill directory, removed when the sorter is dropped (every exit path but a kill); a run
//! removes the directories of processes that no longer exist ([`remove_stale_spills`]).

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::fs::File;
use std::io::{BufReader, BufWriter};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray, BinaryArray, RecordBatch};
use arrow::compute::interleave;
use arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use arrow::ipc::reader::FileReader;
use arrow::ipc::writer::{FileWriter, IpcWriteOptions};
use arrow::ipc::CompressionType;
use rayon::prelude::*;

use crate::orc::error::OrcError;

/// Rows per batch the sort hands over: the batch size of the decoder.
pub const BATCH_ROWS: usize = 8192;

/// Bytes a row takes in the sort of its run, at most: a 16-byte key prefix and its place while
/// sorting, then its place.
const SORT_INDEX_BYTES: usize = 24 + 8;

/// The name of the key column spilled beside the rows.
const KEY: &str = "hive-orc-compactor.sort-key";

/// What a spill directory's name starts with.
const SPILL_PREFIX: &str = "hive-orc-compactor-spill-";

/// Runs the merge takes at once whatever the memory: a tiny `--sort-memory` would otherwise
/// merge two runs at a time, rewriting the spill once per run.
const MIN_FAN_IN: usize = 16;

/// Decoded bytes per ORC byte a spill is planned for: the upper end of what partitions show
/// (random-order events decode to about 5 times their ORC bytes, long runs of repeated values
/// to 10).
const DECODED_PER_ORC_BYTE: u64 = 10;

/// Whether runs of rows read from `orc_bytes` of ORC spill LZ4-compressed under `spill_root`:
/// when its free space may not hold them decoded, or cannot be told. Compression halves the
/// spill of random-order events but costs 4-10% of a sort's time on 2 cores (the merge
/// decompresses on its critical path), so a spill that fits goes uncompressed.
pub fn compress_spills(spill_root: &Path, orc_bytes: u64) -> bool {
    match rustix::fs::statvfs(spill_root) {
        Ok(fs) => {
            fs.f_bavail.saturating_mul(fs.f_frsize) < orc_bytes.saturating_mul(DECODED_PER_ORC_BYTE)
        }
        Err(_) => true,
    }
}

/// A run sorted in memory: the batches it was gathered from, their keys, and the order.
#[derive(Default)]
struct Gathered {
    batches: Vec<RecordBatch>,
    keys: Vec<BinaryArray>,
    bytes: usize,
}

/// The external sort of one group's rows.
pub struct Sorter {
    schema: SchemaRef,
    /// The sort's memory, and the bytes of a run (half of it when runs spill beside).
    budget: usize,
    memory: usize,
    spill_root: PathBuf,
    spill: Option<SpillDir>,
    gathered: Gathered,
    runs: Vec<PathBuf>,
    /// Runs spilled so far (the runs merged into fewer before the merge not counted).
    sorted_runs: usize,
    /// Spill files written so far, which names the next.
    files: usize,
    /// Bytes written to spill files so far.
    pub spilled_bytes: u64,
    /// The largest batch spilled, in memory (as gathered, its share of the sort's index
    /// included).
    batch_memory: usize,
    /// From 2, runs spill on a thread of their own, beside the gathering of the next.
    threads: usize,
    /// Whether runs spill LZ4-compressed (see [`compress_spills`]).
    compress: bool,
    /// The run being sorted and spilled beside the gathering: its bytes once written.
    spilling: Option<std::thread::JoinHandle<Result<u64, OrcError>>>,
}

impl Sorter {
    /// A sort of batches of `schema` in `memory` bytes, spilling under `spill_root`,
    /// LZ4-compressed if `compress`; with `threads` of 2 or more, runs spill beside the
    /// gathering (see the module's docs).
    pub fn new(
        schema: SchemaRef,
        memory: u64,
        spill_root: &Path,
        compress: bool,
        threads: usize,
    ) -> Self {
        let memory = usize::try_from(memory).unwrap_or(usize::MAX).max(2);
        let threads = threads.max(1);
        let beside = threads >= 2;
        Sorter {
            schema,
            budget: memory,
            memory: if beside { memory / 2 } else { memory },
            spill_root: spill_root.to_path_buf(),
            spill: None,
            gathered: Gathered::default(),
            runs: Vec::new(),
            sorted_runs: 0,
            files: 0,
            spilled_bytes: 0,
            batch_memory: 0,
            threads,
            compress,
            spilling: None,
        }
    }

    /// Adds rows and their keys; spills a run once the rows gathered reach the memory bound.
    pub fn push(&mut self, batch: RecordBatch, keys: BinaryArray) -> Result<(), OrcError> {
        // Counted with the rows: the sort's index of them (see SortedRun::new).
        self.gathered.bytes += batch.get_array_memory_size()
            + keys.get_array_memory_size()
            + batch.num_rows() * SORT_INDEX_BYTES;
        self.gathered.batches.push(batch);
        self.gathered.keys.push(keys);
        if self.gathered.bytes >= self.memory {
            self.spill_run()?;
        }
        Ok(())
    }

    fn spill_run(&mut self) -> Result<(), OrcError> {
        let gathered = std::mem::take(&mut self.gathered);
        if gathered.batches.is_empty() {
            return Ok(());
        }
        // One run spills at a time: the memory holds it and the one gathering.
        self.wait_for_spill()?;
        let (dir, path) = self.next_file()?;
        self.runs.push(path.clone());
        self.sorted_runs += 1;
        let keyed = keyed_schema(&self.schema);
        let rows = self.spill_rows();
        let gathered_rows: usize = gathered.batches.iter().map(|b| b.num_rows()).sum();
        self.batch_memory = self
            .batch_memory
            .max(gathered.bytes / gathered_rows.max(1) * rows.min(gathered_rows));
        let compress = self.compress;
        let spill = move || {
            let run = SortedRun::new(gathered, &keyed)?.with_rows(rows);
            write_batches(run, &keyed, &path, compress).map_err(|e| spill_failed(&dir, e))
        };
        if self.beside() {
            let thread = std::thread::Builder::new()
                .name("spill".into())
                .spawn(spill)
                .map_err(OrcError::Io)?;
            self.spilling = Some(thread);
            Ok(())
        } else {
            self.count_spill(spill())
        }
    }

    /// Whether runs spill beside the gathering of the next (see the module's docs).
    fn beside(&self) -> bool {
        self.threads >= 2
    }

    /// Rows per spilled batch: half a batch when two runs share the memory, so that the merge
    /// of twice as many runs holds what it would hold of one thread's.
    fn spill_rows(&self) -> usize {
        if self.beside() {
            BATCH_ROWS / 2
        } else {
            BATCH_ROWS
        }
    }

    /// The spill directory (created at the first spill) and the path of its next file.
    fn next_file(&mut self) -> Result<(PathBuf, PathBuf), OrcError> {
        if self.spill.is_none() {
            self.spill = Some(SpillDir::create(&self.spill_root)?);
        }
        let dir = self
            .spill
            .as_ref()
            .map(|s| s.path.clone())
            .unwrap_or_default();
        let path = dir.join(format!("run-{}.arrow", self.files));
        self.files += 1;
        Ok((dir, path))
    }

    /// Merges runs into fewer until the merge's batches, one of each run, take at most the
    /// sort's memory, or until [`MIN_FAN_IN`] are left. A batch read back is counted twice:
    /// LZ4-compressed, the buffers that did not shrink are kept as read, and keep the bytes
    /// they were read from alive beside it. With more than one thread, as many groups of runs
    /// are merged at once, their runs together within the same bound. Rows come out the same
    /// whatever the grouping: no two keys are equal.
    fn merge_down(&mut self, keyed: &SchemaRef) -> Result<(), OrcError> {
        let fan_in = (self.budget / (2 * self.batch_memory).max(1)).max(MIN_FAN_IN);
        while self.runs.len() > fan_in {
            // Merging m runs into `ways` takes m - ways away.
            let excess = self.runs.len() - fan_in;
            let mut ways = self.threads;
            let mut m = (excess + ways).min(fan_in);
            if m < 2 * ways {
                ways = 1;
                m = (excess + 1).min(fan_in);
            }
            let taken: Vec<PathBuf> = self.runs.drain(..m).collect();
            let groups: Vec<&[PathBuf]> = taken.chunks(m.div_ceil(ways)).collect();
            let mut outputs = Vec::new();
            for _ in &groups {
                outputs.push(self.next_file()?);
            }
            let rows = self.spill_rows();
            let compress = self.compress;
            let written = std::thread::scope(|scope| {
                let merging: Vec<_> = groups
                    .iter()
                    .zip(&outputs)
                    .map(|(group, (dir, path))| {
                        scope.spawn(move || {
                            let merge = Merge::new(open_runs(group)?, Arc::clone(keyed))?;
                            write_batches(merge.with_rows(rows), keyed, path, compress)
                                .map_err(|e| spill_failed(dir, e))
                        })
                    })
                    .collect();
                merging
                    .into_iter()
                    .map(|m| joined(m.join(), "a merge of sorted runs"))
                    .collect::<Vec<_>>()
            });
            for bytes in written {
                self.spilled_bytes += bytes?;
            }
            for path in &taken {
                std::fs::remove_file(path).map_err(|e| spill_failed(path, e.into()))?;
            }
            self.runs.extend(outputs.into_iter().map(|(_, path)| path));
        }
        Ok(())
    }

    /// Waits for the run spilling beside the gathering, if any.
    fn wait_for_spill(&mut self) -> Result<(), OrcError> {
        match self.spilling.take() {
            None => Ok(()),
            Some(thread) => self.count_spill(joined(thread.join(), "the spill of a sorted run")),
        }
    }

    fn count_spill(&mut self, written: Result<u64, OrcError>) -> Result<(), OrcError> {
        self.spilled_bytes += written?;
        fail::fail_point!("compact::spilled-run", |_| Err(OrcError::Io(
            std::io::Error::other("injected failure after spilling a run")
        )));
        Ok(())
    }

    /// The rows in key order: from memory when they fit in one run, else merged from the
    /// spilled runs. Each batch keeps its keys as the last column.
    pub fn finish(mut self) -> Result<Sorted, OrcError> {
        let keyed = keyed_schema(&self.schema);
        if self.runs.is_empty() {
            let gathered = std::mem::take(&mut self.gathered);
            return Ok(Sorted::Memory(SortedRun::new(gathered, &keyed)?, self));
        }
        self.spill_run()?;
        self.wait_for_spill()?;
        self.merge_down(&keyed)?;
        let merge = Merge::new(open_runs(&self.runs)?, keyed)?;
        Ok(Sorted::Merged(merge, self))
    }
}

impl Drop for Sorter {
    /// A run still spilling is waited for, so the spill directory is removed after it.
    fn drop(&mut self) {
        if let Some(thread) = self.spilling.take() {
            let _ = thread.join();
        }
    }
}

/// What a thread doing `what` gave back, its panic an error.
fn joined<T>(result: std::thread::Result<Result<T, OrcError>>, what: &str) -> Result<T, OrcError> {
    result.unwrap_or_else(|_| {
        Err(OrcError::Decode(format!(
            "{what} panicked: a bug; nothing was published"
        )))
    })
}

/// Cursors at the start of the spilled runs `paths`.
fn open_runs(paths: &[PathBuf]) -> Result<Vec<Cursor>, OrcError> {
    let mut cursors = Vec::new();
    for path in paths {
        let file = File::open(path).map_err(|e| spill_failed(path, e.into()))?;
        let reader = FileReader::try_new(BufReader::new(file), None).map_err(arrow_io)?;
        cursors.push(Cursor {
            reader,
            batch: None,
            row: 0,
        });
    }
    Ok(cursors)
}

/// Writes sorted `batches` to the spill file `path`, LZ4-compressed if `compress`; its bytes.
fn write_batches(
    batches: impl Iterator<Item = Result<RecordBatch, OrcError>>,
    keyed: &SchemaRef,
    path: &Path,
    compress: bool,
) -> Result<u64, OrcError> {
    let file = File::create(path)?;
    let options = IpcWriteOptions::default()
        .try_with_compression(compress.then_some(CompressionType::LZ4_FRAME))
        .map_err(arrow_io)?;
    let mut writer =
        FileWriter::try_new_with_options(BufWriter::new(file), keyed, options).map_err(arrow_io)?;
    for batch in batches {
        writer.write(&batch?).map_err(arrow_io)?;
    }
    writer.finish().map_err(arrow_io)?;
    Ok(std::fs::metadata(path)?.len())
}

/// The schema of spilled and handed-over batches: the rows' columns, then the key.
fn keyed_schema(schema: &Schema) -> SchemaRef {
    let mut fields: Vec<Arc<Field>> = schema.fields().iter().cloned().collect();
    fields.push(Arc::new(Field::new(KEY, DataType::Binary, false)));
    Arc::new(Schema::new_with_metadata(fields, schema.metadata().clone()))
}

fn arrow_io(e: arrow::error::ArrowError) -> OrcError {
    match e {
        arrow::error::ArrowError::IoError(_, io) => OrcError::Io(io),
        other => OrcError::Io(std::io::Error::other(other.to_string())),
    }
}

fn spill_failed(dir: &Path, e: OrcError) -> OrcError {
    match e {
        OrcError::Io(io) if io.raw_os_error() == Some(28) => {
            OrcError::Io(std::io::Error::other(format!(
                "the spill directory {} is full: a sort spills up to the partition's decoded \
                 size (about 3-10 times its ORC bytes, half that compressed); free space \
                 there, point --spill-dir at a larger disk, or raise --sort-memory",
                dir.display()
            )))
        }
        OrcError::Io(io) => OrcError::Io(std::io::Error::other(format!(
            "spilling sorted rows to {}: {io}; check --spill-dir",
            dir.display()
        ))),
        other => other,
    }
}

/// Rows in key order.
pub enum Sorted {
    /// One run, sorted in memory. The sorter is kept for its spill directory's lifetime.
    Memory(SortedRun, Sorter),
    Merged(Merge, Sorter),
}

impl Sorted {
    /// The next batch in key order, its keys as the last column.
    pub fn next_batch(&mut self) -> Option<Result<RecordBatch, OrcError>> {
        match self {
            Sorted::Memory(run, _) => run.next(),
            Sorted::Merged(merge, _) => merge.next(),
        }
    }

    /// The runs sorted and spilled, and the bytes spilled (the runs merged into fewer
    /// included).
    pub fn spilled(&self) -> (usize, u64) {
        let sorter = match self {
            Sorted::Memory(_, s) | Sorted::Merged(_, s) => s,
        };
        (sorter.sorted_runs, sorter.spilled_bytes)
    }
}

/// The sorted rows handed over a batch at a time: with more than one thread, merged ahead on a
/// thread of their own (two batches ahead), since the merge's heap is one thread's work that
/// otherwise takes turns with the encoding of what it hands over. The batches are the same either
/// way.
pub enum Feed {
    InTurn(Box<Sorted>),
    Ahead {
        batches: tokio::sync::mpsc::Receiver<Result<RecordBatch, OrcError>>,
        /// Ends when every batch is handed over, the merge fails or `batches` is dropped, and
        /// gives back the sort, whose drop removes its spill directory.
        merger: tokio::task::JoinHandle<Sorted>,
    },
}

impl Sorted {
    /// Hands the rows over, merged ahead when `threads` allow (see [`Feed`]); runs in the
    /// runtime.
    pub fn feed(mut self, threads: usize) -> Feed {
        if threads < 2 {
            return Feed::InTurn(Box::new(self));
        }
        let (handing, batches) = tokio::sync::mpsc::channel(2);
        let merger = tokio::task::spawn_blocking(move || {
            while let Some(batch) = self.next_batch() {
                let failed = batch.is_err();
                if handing.blocking_send(batch).is_err() || failed {
                    break;
                }
            }
            self
        });
        Feed::Ahead { batches, merger }
    }
}

impl Feed {
    /// The next batch in key order, its keys as the last column.
    pub async fn next_batch(&mut self) -> Option<Result<RecordBatch, OrcError>> {
        match self {
            Feed::InTurn(sorted) => sorted.next_batch(),
            Feed::Ahead { batches, .. } => batches.recv().await,
        }
    }

    /// The runs spilled and their bytes; stops the merge if rows were left.
    pub async fn spilled(self) -> Result<(usize, u64), OrcError> {
        match self {
            Feed::InTurn(sorted) => Ok(sorted.spilled()),
            Feed::Ahead { batches, merger } => {
                drop(batches);
                let sorted = merger.await.map_err(|e| {
                    OrcError::Decode(format!("the merge of the sorted runs stopped: {e}"))
                })?;
                Ok(sorted.spilled())
            }
        }
    }
}

/// One gathered run, handed over in key order a batch at a time (interleaved from the
/// gathered batches: no second copy of the run).
pub struct SortedRun {
    gathered: Gathered,
    /// (batch, row) of each row in key order.
    order: Vec<(u32, u32)>,
    at: usize,
    /// Rows per batch handed over.
    rows: usize,
    schema: SchemaRef,
}

impl SortedRun {
    fn new(gathered: Gathered, schema: &SchemaRef) -> Result<Self, OrcError> {
        let keys = &gathered.keys;
        if u32::try_from(keys.len()).is_err()
            || keys.iter().any(|k| u32::try_from(k.len()).is_err())
        {
            return Err(OrcError::Decode(
                "a sort run of more than 2^32 batches or rows".into(),
            ));
        }
        // Compared by a 16-byte prefix first, inline, and by the whole key only on a tie: a
        // byte-slice compare per step (a memcmp call) was a fifth of a sort's CPU. 24 bytes a
        // row while sorting, 8 after. Room for every row is made at once: collected from a
        // flat map, which cannot tell its length, a run's index grew by doubling, each copy
        // touching fresh pages (a third of a 1 GiB sort's page faults).
        let mut prefixed: Vec<(u64, u64, u32, u32)> =
            Vec::with_capacity(keys.iter().map(|k| k.len()).sum());
        for (b, k) in keys.iter().enumerate() {
            prefixed.extend((0..k.len()).map(|r| {
                let p = prefix(k.value(r));
                ((p >> 64) as u64, p as u64, b as u32, r as u32)
            }));
        }
        // On the encoders' threads: no two keys are equal (each ends with the row's place), so
        // any sort gives the one order.
        prefixed.par_sort_unstable_by(|a, b| {
            (a.0, a.1).cmp(&(b.0, b.1)).then_with(|| {
                keys[a.2 as usize]
                    .value(a.3 as usize)
                    .cmp(keys[b.2 as usize].value(b.3 as usize))
            })
        });
        let order = prefixed.iter().map(|&(_, _, b, r)| (b, r)).collect();
        drop(prefixed);
        Ok(SortedRun {
            gathered,
            order,
            at: 0,
            rows: BATCH_ROWS,
            schema: Arc::clone(schema),
        })
    }

    /// The same run, handed over in batches of `rows`.
    fn with_rows(mut self, rows: usize) -> Self {
        self.rows = rows;
        self
    }
}

impl Iterator for SortedRun {
    type Item = Result<RecordBatch, OrcError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.at >= self.order.len() {
            return None;
        }
        let end = (self.at + self.rows).min(self.order.len());
        let picks: Vec<(usize, usize)> = self.order[self.at..end]
            .iter()
            .map(|&(b, r)| (b as usize, r as usize))
            .collect();
        self.at = end;
        let mut sources: Vec<Vec<&dyn Array>> = vec![Vec::new(); self.schema.fields().len()];
        for (batch, keys) in self.gathered.batches.iter().zip(&self.gathered.keys) {
            for (c, column) in batch.columns().iter().enumerate() {
                sources[c].push(column.as_ref());
            }
            sources[batch.num_columns()].push(keys);
        }
        Some(take(&self.schema, &sources, &picks))
    }
}

/// A key's first 16 bytes as a number (zero-padded): keys whose prefixes differ compare as
/// their prefixes do; equal prefixes need the whole keys.
fn prefix(key: &[u8]) -> u128 {
    let mut bytes = [0u8; 16];
    let n = key.len().min(16);
    bytes[..n].copy_from_slice(&key[..n]);
    u128::from_be_bytes(bytes)
}

/// A run's next key in the merge's heap: ordered by its prefix, then by the whole key.
type HeapKey = Reverse<(u128, Vec<u8>, usize)>;

/// Rows picked from several batches into one.
fn take(
    schema: &SchemaRef,
    sources: &[Vec<&dyn Array>],
    picks: &[(usize, usize)],
) -> Result<RecordBatch, OrcError> {
    let columns = sources
        .par_iter()
        .map(|arrays| interleave(arrays, picks))
        .collect::<Result<Vec<ArrayRef>, _>>()
        .map_err(|e| OrcError::Decode(format!("ordering rows: {e}")))?;
    RecordBatch::try_new(Arc::clone(schema), columns)
        .map_err(|e| OrcError::Decode(format!("ordering rows: {e}")))
}

struct Cursor {
    reader: FileReader<BufReader<File>>,
    /// The batch being read, at `row`.
    batch: Option<RecordBatch>,
    row: usize,
}

impl Cursor {
    /// Moves to the next row, reading the next batch when this one is done; false at the end.
    fn advance(&mut self) -> Result<bool, OrcError> {
        if let Some(b) = &self.batch {
            if self.row + 1 < b.num_rows() {
                self.row += 1;
                return Ok(true);
            }
        }
        loop {
            match self.reader.next() {
                None => {
                    self.batch = None;
                    return Ok(false);
                }
                Some(batch) => {
                    let batch = batch.map_err(arrow_io)?;
                    if batch.num_rows() > 0 {
                        self.batch = Some(batch);
                        self.row = 0;
                        return Ok(true);
                    }
                }
            }
        }
    }

    fn key(&self) -> &[u8] {
        let batch = self
            .batch
            .as_ref()
            .expect("a cursor in the heap has a batch");
        batch.columns()[batch.num_columns() - 1]
            .as_binary::<i32>()
            .value(self.row)
    }
}

/// The k-way merge of spilled runs.
pub struct Merge {
    cursors: Vec<Cursor>,
    /// The smallest key of each run not yet handed over.
    heap: BinaryHeap<HeapKey>,
    schema: SchemaRef,
    /// Rows per batch handed over.
    rows: usize,
}

impl Merge {
    fn new(mut cursors: Vec<Cursor>, schema: SchemaRef) -> Result<Self, OrcError> {
        let mut heap = BinaryHeap::new();
        for (i, c) in cursors.iter_mut().enumerate() {
            if c.advance()? {
                let key = c.key();
                heap.push(Reverse((prefix(key), key.to_vec(), i)));
            }
        }
        Ok(Merge {
            cursors,
            heap,
            schema,
            rows: BATCH_ROWS,
        })
    }

    /// The same merge, handing over batches of `rows`.
    fn with_rows(mut self, rows: usize) -> Self {
        self.rows = rows;
        self
    }

    fn next_batch(&mut self) -> Result<Option<RecordBatch>, OrcError> {
        // The batches rows are picked from: each cursor's current one, and any it finished
        // while this batch filled.
        let mut held: Vec<RecordBatch> = Vec::new();
        let mut held_of: Vec<Option<usize>> = vec![None; self.cursors.len()];
        let mut picks = Vec::with_capacity(self.rows);
        while picks.len() < self.rows {
            let Some(Reverse((_, mut key, run))) = self.heap.pop() else {
                break;
            };
            let cursor = &mut self.cursors[run];
            let slot = match held_of[run] {
                Some(slot) => slot,
                None => {
                    held.push(cursor.batch.clone().expect("a popped run has a batch"));
                    held_of[run] = Some(held.len() - 1);
                    held.len() - 1
                }
            };
            picks.push((slot, cursor.row));
            let same_batch = cursor.batch.as_ref().map(|b| cursor.row + 1 < b.num_rows());
            if cursor.advance()? {
                if same_batch != Some(true) {
                    // A new batch: later picks from this run index it.
                    held.push(cursor.batch.clone().expect("advanced"));
                    held_of[run] = Some(held.len() - 1);
                }
                // The popped key's buffer, reused: no allocation per row.
                let next = cursor.key();
                key.clear();
                key.extend_from_slice(next);
                self.heap.push(Reverse((prefix(next), key, run)));
            }
        }
        if picks.is_empty() {
            return Ok(None);
        }
        let columns = self.schema.fields().len();
        let sources: Vec<Vec<&dyn Array>> = (0..columns)
            .map(|c| held.iter().map(|b| b.column(c).as_ref()).collect())
            .collect();
        take(&self.schema, &sources, &picks).map(Some)
    }
}

impl Iterator for Merge {
    type Item = Result<RecordBatch, OrcError>;

    fn next(&mut self) -> Option<Self::Item> {
        self.next_batch().transpose()
    }
}

/// A spill directory of this process, removed with everything in it when dropped.
struct SpillDir {
    path: PathBuf,
}

impl SpillDir {
    fn create(root: &Path) -> Result<Self, OrcError> {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        remove_stale_spills(root);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let path = root.join(format!("{SPILL_PREFIX}{}-{n}", std::process::id()));
        std::fs::create_dir_all(&path).map_err(|e| spill_failed(&path, e.into()))?;
        Ok(SpillDir { path })
    }
}

impl Drop for SpillDir {
    fn drop(&mut self) {
        if let Err(e) = std::fs::remove_dir_all(&self.path) {
            tracing::warn!(dir = %self.path.display(), error = %e, "could not remove a spill directory");
        }
    }
}

/// Removes spill directories under `root` left by processes that no longer run (a kill):
/// Linux's /proc says which do. Best effort: what cannot be removed is logged.
pub fn remove_stale_spills(root: &Path) {
    let Ok(entries) = std::fs::read_dir(root) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(rest) = name.to_str().and_then(|n| n.strip_prefix(SPILL_PREFIX)) else {
            continue;
        };
        let Some(pid) = rest.split('-').next().and_then(|p| p.parse::<u32>().ok()) else {
            continue;
        };
        if pid == std::process::id() || Path::new(&format!("/proc/{pid}")).exists() {
            continue;
        }
        match std::fs::remove_dir_all(entry.path()) {
            Ok(()) => {
                tracing::info!(dir = %entry.path().display(), "removed a stale spill directory")
            }
            Err(e) => {
                tracing::warn!(dir = %entry.path().display(), error = %e, "could not remove a stale spill directory")
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::array::{BinaryBuilder, Int64Array, StringArray};

    fn batch(values: &[i64]) -> (RecordBatch, BinaryArray) {
        let schema = Arc::new(Schema::new(vec![
            Field::new("v", DataType::Int64, false),
            Field::new("s", DataType::Utf8, true),
        ]));
        let strings: Vec<String> = values.iter().map(|v| format!("s{v}")).collect();
        let b = RecordBatch::try_new(
            schema,
            vec![
                Arc::new(Int64Array::from(values.to_vec())),
                Arc::new(StringArray::from(strings)),
            ],
        )
        .unwrap();
        let mut keys = BinaryBuilder::new();
        for v in values {
            keys.append_value(((*v as u64) ^ (1 << 63)).to_be_bytes());
        }
        (b, keys.finish())
    }

    fn drain(mut sorted: Sorted) -> Vec<i64> {
        let mut out = Vec::new();
        while let Some(b) = sorted.next_batch() {
            let b = b.unwrap();
            assert_eq!(b.num_columns(), 3);
            out.extend(
                b.column(0)
                    .as_primitive::<arrow::datatypes::Int64Type>()
                    .values(),
            );
        }
        out
    }

    fn values(n: i64) -> Vec<i64> {
        (0..n).map(|i| (i * 7919) % 10_007 - 5000).collect()
    }

    #[test]
    fn rows_come_out_in_key_order_in_memory_and_through_spilled_runs() {
        let dir = tempfile::tempdir().unwrap();
        let mut spilled = Vec::new();
        for (memory, threads, compress) in [
            (u64::MAX, 1, false),
            (20_000, 1, false),
            (20_000, 1, true),
            (u64::MAX, 2, false),
            (40_000, 2, true),
        ] {
            let all = values(30_000);
            let sorted = sorted(&all, memory, dir.path(), compress, threads);
            if memory == 20_000 {
                spilled.push(sorted.spilled().1);
            }
            if let Sorted::Merged(merge, sorter) = &sorted {
                // A run per pushed batch (each is over the memory), merged down to the fewest
                // the merge takes (on two threads: two groups at once); the runs merged are
                // gone.
                assert_eq!(sorter.sorted_runs, 30);
                assert_eq!(merge.cursors.len(), MIN_FAN_IN);
                let dir = sorter.spill.as_ref().unwrap();
                assert_eq!(std::fs::read_dir(&dir.path).unwrap().count(), MIN_FAN_IN);
            }
            assert_eq!(
                memory == u64::MAX,
                sorted.spilled().0 == 0,
                "memory {memory}"
            );
            let mut expected = all.clone();
            expected.sort();
            assert_eq!(drain(sorted), expected);
            // Dropped with the rows handed over: nothing left behind.
            assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
        }
        // The same runs, compressed: fewer bytes.
        assert!(spilled[1] < spilled[0], "{spilled:?}");
    }

    #[test]
    fn spills_are_compressed_when_the_disk_may_not_hold_them() {
        let dir = tempfile::tempdir().unwrap();
        assert!(!compress_spills(dir.path(), 1));
        assert!(compress_spills(dir.path(), u64::MAX / 2));
        assert!(compress_spills(&dir.path().join("missing"), 1));
    }

    /// A sort of `all` in `memory` bytes under `dir`, compressed if `compress`, with `threads`.
    fn sorted(all: &[i64], memory: u64, dir: &Path, compress: bool, threads: usize) -> Sorted {
        let (first, _) = batch(&all[..1]);
        let mut sorter = Sorter::new(first.schema(), memory, dir, compress, threads);
        for chunk in all.chunks(1000) {
            let (b, k) = batch(chunk);
            sorter.push(b, k).unwrap();
        }
        sorter.finish().unwrap()
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn spilled_beside_and_merged_ahead_the_batches_are_those_of_one_thread() {
        let dir = tempfile::tempdir().unwrap();
        let all = values(30_000);
        let mut in_turn = Vec::new();
        for threads in [1, 2] {
            let mut feed = sorted(&all, 20_000, dir.path(), threads == 2, threads).feed(threads);
            assert_eq!(matches!(feed, Feed::Ahead { .. }), threads == 2);
            let mut batches = Vec::new();
            while let Some(b) = feed.next_batch().await {
                batches.push(b.unwrap());
            }
            let (runs, bytes) = feed.spilled().await.unwrap();
            assert!(runs > 1 && bytes > 0);
            // The merge gave the sort back and dropped it: its spill directory is gone.
            assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
            if threads == 1 {
                in_turn = batches;
            } else {
                assert_eq!(batches, in_turn);
            }
        }
        // Stopped after one batch: the merge ends and its spill goes with it.
        let mut feed = sorted(&all, 20_000, dir.path(), true, 2).feed(2);
        feed.next_batch().await.unwrap().unwrap();
        feed.spilled().await.unwrap();
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }

    #[test]
    fn prefixes_order_keys_as_their_bytes_do() {
        let keys: [&[u8]; 8] = [
            b"",
            b"\0",
            b"a",
            b"a\0",
            b"abcdefghijklmnop",
            b"abcdefghijklmnop\0",
            b"abcdefghijklmnopq",
            b"abcdefghijklmnoq",
        ];
        for a in keys {
            for b in keys {
                let by_prefix = prefix(a).cmp(&prefix(b)).then_with(|| a.cmp(b));
                assert_eq!(by_prefix, a.cmp(b), "{a:?} against {b:?}");
            }
        }
    }

    #[test]
    fn spill_directories_of_dead_processes_are_removed() {
        let dir = tempfile::tempdir().unwrap();
        let stale = dir.path().join(format!("{SPILL_PREFIX}999999999-0"));
        std::fs::create_dir(&stale).unwrap();
        std::fs::write(stale.join("run-0.arrow"), b"x").unwrap();
        let mine = dir
            .path()
            .join(format!("{SPILL_PREFIX}{}-77", std::process::id()));
        std::fs::create_dir(&mine).unwrap();
        remove_stale_spills(dir.path());
        assert!(!stale.exists());
        assert!(mine.exists());
    }
}
