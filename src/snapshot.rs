//! Steps 2 and 3 of the compaction protocol: the partition's data files as they are at one
//! moment (path, length, modification time, owner), each with what planning needs of its ORC
//! tail: a summary without its statistics, which the write reads again from the file
//! ([`crate::orc::read_statistics_again`]), so what a snapshot holds per file does not grow with
//! the column count.
//!
//! Hidden names (leading `.` or `_`) are not data and are ignored, as every engine ignores them.
//! A non-hidden subdirectory, or a file that is not a readable ORC file, refuses the partition
//! with the names listed: the tool never drops or moves a file it does not understand.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::future::Future;
use std::ops::Range;
use std::sync::{Arc, Mutex, PoisonError};

use bytes::Bytes;
use futures::future::Either;
use futures::{StreamExt, TryStreamExt};
use serde::Serialize;
use tokio::sync::{Semaphore, SemaphorePermit};

use crate::eligibility::{Refusal, Rule};
use crate::hdfs::{same_acl, Client, Entry, FsError, Hdfs, Listing, Location, Reader};
use crate::orc::{
    read_checked, read_tail, OrcError, OrcTail, RangeRead, SharedFooters, Task, SPECULATIVE_TAIL,
};

/// How many tails are read at once: enough to hide NameNode and DataNode latency and to parse
/// tails on every core (each read is a task of its own), few enough to stay gentle with a busy
/// cluster.
const TAIL_READS_IN_FLIGHT: usize = 32;

/// Sizes of a partition's data files.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct FileSizes {
    pub count: usize,
    pub bytes: u64,
    pub min: u64,
    pub median: u64,
    pub max: u64,
}

impl FileSizes {
    pub fn of(lengths: &[u64]) -> Self {
        let mut sorted = lengths.to_vec();
        sorted.sort_unstable();
        let n = sorted.len();
        // The lower median: a real file's size, never an average of two.
        let median = if n == 0 { 0 } else { sorted[(n - 1) / 2] };
        FileSizes {
            count: n,
            bytes: sorted.iter().sum(),
            min: sorted.first().copied().unwrap_or(0),
            median,
            max: sorted.last().copied().unwrap_or(0),
        }
    }
}

/// Up to how many data files a partition keeps the reader each tail was read with, for the
/// copy. A kept reader is about 5 KiB (hdfs-native's block locations; measured on a one-block
/// file), so 10,000 cost about 50 MiB until the copy takes them. A partition of more files keeps
/// none and opens each file again for the copy (two NameNode calls each instead of one):
/// keeping them all would cost 5 KiB a file, ten times the rest of its entry, and memory would
/// grow with the file count again.
const KEPT_READERS: usize = 10_000;

/// How many bytes of whole small files the snapshots of this process hold at once, at most.
///
/// A file no longer than [`SPECULATIVE_TAIL`] is read whole when its tail is read (the tail
/// read fetches all of it anyway). Holding those bytes until the copy or re-encode takes them,
/// instead of the file's reader, saves a second DataNode read per file. Each is given back as
/// soon as its input is done. The bound is one for the process (a static), not per partition:
/// `--parallel` snapshots several partitions at once, and the memory bound is the process's.
/// Files beyond it keep a reader as before. Only a partition that keeps readers (at most
/// [`KEPT_READERS`] files) holds bytes: past that, they would spare a small share of the
/// reads (a twentieth of 100,000 files of 16 KiB), and each file is read whole in one read
/// when it is copied anyway ([`crate::orc`]'s prefetch of small inputs).
const HELD_BYTES: usize = 64 << 20;
static HELD_BUDGET: Semaphore = Semaphore::const_new(HELD_BYTES);

#[derive(Debug)]
pub struct DataFile {
    pub name: String,
    /// The partition directory, one copy for all its files: a path of its own cost each of
    /// 100,000 inputs a couple of hundred bytes ([`DataFile::location`] builds it).
    dir: Arc<Location>,
    pub length: u64,
    pub modification_time: u64,
    pub owner: String,
    pub group: String,
    pub permission: u16,
    /// What planning needs of its tail (no statistics); `None` for a zero-length file: it
    /// holds zero rows.
    pub tail: Option<OrcTail>,
    /// What its tail was read from, kept for the copy: the whole file, or its reader (one
    /// NameNode call per input), when the snapshot was taken to read the files again
    /// ([`Reads::sources`]).
    source: Kept,
}

/// A kept source, handed out once ([`DataFile::open`]): what copies an input takes it, and it
/// is freed once that input is done, not when the whole run is.
#[derive(Debug)]
struct Kept(Mutex<Option<Source>>);

impl Kept {
    fn new(source: Option<Source>) -> Self {
        Kept(Mutex::new(source))
    }

    fn take(&self) -> Option<Source> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner).take()
    }

    /// What [`Kept::take`] would hand out, left in place: the same reader, or the same bytes
    /// (their budget stays with the kept source).
    fn peek(&self) -> Option<Source> {
        let kept = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        kept.as_ref().map(|source| match source {
            Source::Reader(r) => Source::Reader(r.clone()),
            Source::Held { bytes, .. } => Source::Held {
                bytes: bytes.clone(),
                _budget: None,
            },
        })
    }
}

/// Where an input's bytes are read from for the copy or re-encode.
pub enum Source {
    /// An open reader: its block locations, no connection and no data.
    Reader(Reader),
    /// The whole file, read with its tail, and its share of [`HELD_BUDGET`] (given back when
    /// dropped; `None` for a look at bytes kept for another, see [`DataFile::peek`]).
    Held {
        bytes: Bytes,
        _budget: Option<SemaphorePermit<'static>>,
    },
}

impl std::fmt::Debug for Source {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Source::Reader(r) => write!(f, "Reader({} bytes)", r.file_length()),
            Source::Held { bytes, .. } => write!(f, "Held({} bytes)", bytes.len()),
        }
    }
}

impl Source {
    fn length(&self) -> u64 {
        match self {
            Source::Reader(r) => r.file_length() as u64,
            Source::Held { bytes, .. } => bytes.len() as u64,
        }
    }
}

impl RangeRead for Source {
    fn len(&self) -> impl Future<Output = std::io::Result<u64>> + Send {
        futures::future::ready(Ok(self.length()))
    }

    fn read(&self, range: Range<u64>) -> impl Future<Output = std::io::Result<Bytes>> + Send {
        match self {
            Source::Reader(r) => Either::Left(r.read(range)),
            Source::Held { bytes, .. } => Either::Right(bytes.read(range)),
        }
    }
}

impl DataFile {
    pub fn location(&self) -> Location {
        self.dir.child(&self.name)
    }

    pub fn rows(&self) -> u64 {
        self.tail.as_ref().map_or(0, |t| t.rows)
    }

    /// Opens the file to copy its bytes (for [`crate::orc::copy_pieces`]): what the snapshot
    /// kept of it (the whole file, or the reader its tail was read with: no NameNode call),
    /// else a new reader (also when the kept one was handed out before). The future owns what
    /// it needs, so the copy can run it as a task of its own. A file no longer of the
    /// snapshot's length is [`OrcError::Changed`]; one replaced or appended to after the
    /// snapshot is caught by the listing compared before the swap.
    pub fn open(
        &self,
        hdfs: &Hdfs,
    ) -> impl Future<Output = Result<Source, OrcError>> + Send + 'static {
        self.open_kept(hdfs, self.source.take())
    }

    /// Opens the file as [`DataFile::open`] does, for a look before the copy: what the
    /// snapshot kept of it stays kept for the copy.
    pub fn peek(&self, hdfs: &Hdfs) -> impl Future<Output = Result<Source, OrcError>> + Send {
        self.open_kept(hdfs, self.source.peek())
    }

    fn open_kept(
        &self,
        hdfs: &Hdfs,
        kept: Option<Source>,
    ) -> impl Future<Output = Result<Source, OrcError>> + Send + 'static {
        let location = self.location();
        // What was kept, or the client to open a reader with.
        let kept = match kept {
            Some(source) => Ok(source),
            None => Err(hdfs.client(&location)),
        };
        let length = self.length;
        async move {
            let io = |e: FsError| OrcError::Io(std::io::Error::other(e.to_string()));
            let source = match kept {
                Ok(source) => source,
                Err(client) => {
                    let reader = client.map_err(io)?.read(&location.path).await;
                    Source::Reader(reader.map_err(|error| {
                        io(FsError::Io {
                            op: "opening",
                            location: location.to_string(),
                            error,
                        })
                    })?)
                }
            };
            let now = source.length();
            if now != length {
                return Err(OrcError::Changed(format!(
                    "{location} is {now} bytes long now, {length} when planned"
                )));
            }
            Ok(source)
        }
    }
}

#[derive(Debug)]
pub struct Snapshot {
    pub dir: Location,
    pub files: Vec<DataFile>,
    pub hidden: Vec<String>,
}

/// Two data files of a snapshot with different ACLs ([`Snapshot::acl_difference`]).
#[derive(Debug)]
pub struct AclDifference<'a> {
    pub first: &'a DataFile,
    pub first_entries: usize,
    pub other: &'a DataFile,
    pub other_entries: usize,
}

#[derive(Debug, thiserror::Error)]
pub enum SnapshotError {
    #[error("the partition directory {0} does not exist on HDFS")]
    Missing(Location),
    #[error("{dir} holds subdirectories the tool will not touch: {}", names.join(", "))]
    Subdirectories { dir: Location, names: Vec<String> },
    #[error(
        "{file} is not a readable ORC file ({source}): move it out of the partition or fix it"
    )]
    BadFile { file: Location, source: OrcError },
    #[error("reading the tail of {file} failed: {source}")]
    Io { file: Location, source: OrcError },
    #[error(transparent)]
    Fs(#[from] FsError),
}

impl SnapshotError {
    /// The refusal this error amounts to, when it is one (as opposed to a failure to read).
    pub fn refusal(&self) -> Option<Refusal> {
        match self {
            SnapshotError::Subdirectories { .. } => {
                Some(Refusal::new(Rule::Subdirectories, self.to_string()))
            }
            SnapshotError::BadFile { .. } => {
                Some(Refusal::new(Rule::UnreadableFile, self.to_string()))
            }
            _ => None,
        }
    }
}

/// The rule for a partition directory's listing, shared by the snapshot and by surveys that
/// only list: the directory must exist, and a non-hidden subdirectory refuses it (hidden names
/// are set apart by the listing itself).
pub fn check_listing(dir: &Location, listing: Option<Listing>) -> Result<Listing, SnapshotError> {
    let listing = listing.ok_or_else(|| SnapshotError::Missing(dir.clone()))?;
    if !listing.subdirs.is_empty() {
        return Err(SnapshotError::Subdirectories {
            dir: dir.clone(),
            names: listing.subdirs,
        });
    }
    Ok(listing)
}

/// The file whole when it is small enough that reading its tail reads all of it, its reader
/// agrees with the listing's length and [`HELD_BUDGET`] has room; else its reader.
async fn held_or_reader(reader: Reader, listed: u64) -> Result<Source, OrcError> {
    let length = reader.file_length() as u64;
    let budget = (length == listed && length <= SPECULATIVE_TAIL)
        .then(|| HELD_BUDGET.try_acquire_many(length as u32).ok())
        .flatten();
    let reader = Source::Reader(reader);
    let Some(budget) = budget else {
        return Ok(reader);
    };
    let bytes = read_checked(&reader, 0..length, length, "the whole file").await?;
    Ok(Source::Held {
        bytes,
        _budget: Some(budget),
    })
}

/// One data file of a snapshot: its tail, read with a reader of its own (kept as what
/// [`held_or_reader`] gives when `keep_readers`).
async fn read_file(
    client: Client,
    dir: Arc<Location>,
    entry: Entry,
    keep_readers: bool,
) -> Result<DataFile, SnapshotError> {
    let location = dir.child(&entry.name);
    let (tail, source) = if entry.length == 0 {
        (None, None)
    } else {
        let reader = client
            .read(&location.path)
            .await
            .map_err(|error| FsError::Io {
                op: "opening",
                location: location.to_string(),
                error,
            })?;
        let read = async {
            let source = if keep_readers {
                held_or_reader(reader, entry.length).await?
            } else {
                Source::Reader(reader)
            };
            Ok((read_tail(&source).await?, source))
        };
        match read.await {
            Ok((tail, source)) => (tail, keep_readers.then_some(source)),
            Err(source @ OrcError::Io(_)) => {
                return Err(SnapshotError::Io {
                    file: location,
                    source,
                })
            }
            Err(source) => {
                return Err(SnapshotError::BadFile {
                    file: location,
                    source,
                })
            }
        }
    };
    Ok(DataFile {
        name: entry.name,
        dir,
        length: entry.length,
        modification_time: entry.modification_time,
        owner: entry.owner,
        group: entry.group,
        permission: entry.permission,
        tail,
        source: Kept::new(source),
    })
}

/// What a snapshot reads and keeps beyond each file's listing entry and tail.
#[derive(Clone, Copy, Debug, Default)]
pub struct Reads {
    /// Keep what each tail was read from, for a run that reads the files again
    /// ([`DataFile::open`]): in a partition of at most [`KEPT_READERS`] files, small files
    /// whole (as far as [`HELD_BYTES`] allows) and the other files' readers.
    pub sources: bool,
}

impl Snapshot {
    /// For each of `columns` (paths, `a.b` for a struct field), the mean fraction of the
    /// files' stripes a point lookup on it reads, from their stripe statistics (one tail read
    /// per file; see `orc::stripe_lookup_fraction`). Columns no stripe has bounds for are left
    /// out.
    pub async fn stripe_lookup_fractions(
        &self,
        hdfs: &Hdfs,
        columns: &[&str],
    ) -> Result<BTreeMap<String, f64>, OrcError> {
        /// Tails read at once.
        const AT_ONCE: usize = 16;
        if columns.is_empty() {
            return Ok(BTreeMap::new());
        }
        let reads = self.files.iter().filter_map(|f| {
            let tail = f.tail.as_ref()?;
            Some(async move {
                let reader = f.peek(hdfs).await?;
                let stats = crate::orc::read_statistics_again(&reader, tail, true).await?;
                Ok::<_, OrcError>((tail, stats.stripe_statistics()?))
            })
        });
        let files: Vec<_> = futures::stream::iter(reads)
            .buffer_unordered(AT_ONCE)
            .try_collect()
            .await?;
        Ok(columns
            .iter()
            .filter_map(|c| {
                let share = crate::orc::stripe_lookup_fraction(&files, c)?;
                Some((c.to_string(), share))
            })
            .collect())
    }

    /// Lists `dir` once and reads every data file's tail, concurrently; keeps nothing else.
    pub async fn take(hdfs: &Hdfs, dir: &Location) -> Result<Snapshot, SnapshotError> {
        Self::take_with(hdfs, dir, Reads::default()).await
    }

    /// [`Snapshot::take`], reading and keeping what `reads` asks for too.
    pub async fn take_with(
        hdfs: &Hdfs,
        dir: &Location,
        reads: Reads,
    ) -> Result<Snapshot, SnapshotError> {
        let listing = check_listing(dir, hdfs.list(dir).await?)?;
        let keep_readers = reads.sources && listing.files.len() <= KEPT_READERS;
        let client = hdfs.client(dir)?;
        let shared_dir = Arc::new(dir.clone());
        let mut footers = SharedFooters::default();
        // Sized once: grown by doubling, 100,000 entries left a third of it unused.
        let files = Vec::with_capacity(listing.files.len());
        let files = futures::stream::iter(listing.files)
            .map(|entry| {
                let dir = Arc::clone(&shared_dir);
                let file = dir.child(&entry.name);
                let task = Task::spawn(read_file(client.clone(), dir, entry, keep_readers));
                async move {
                    task.output().await.map_err(|e| SnapshotError::Io {
                        file,
                        source: OrcError::Io(std::io::Error::other(format!(
                            "the task reading its tail ended: {e}"
                        ))),
                    })?
                }
            })
            .buffered(TAIL_READS_IN_FLIGHT)
            .map_ok(|mut file: DataFile| {
                if let Some(tail) = &mut file.tail {
                    footers.share(tail);
                }
                file
            })
            .try_fold(files, |mut files, file| {
                files.push(file);
                futures::future::ready(Ok(files))
            })
            .await?;
        Ok(Snapshot {
            dir: dir.clone(),
            files,
            hidden: listing.hidden,
        })
    }

    /// Reads the ACL of every non-empty file and returns the first whose entries differ from
    /// the first non-empty file's; `None` when they all agree, or when the first read finds
    /// ACLs disabled on the NameNode (then no file has one).
    ///
    /// Not part of [`Snapshot::take`]: it is one NameNode call per file that planning does not
    /// need, so a run makes it while it stages, when the NameNode is otherwise idle (see
    /// `operations::compact`). Reads are spawned tasks, [`TAIL_READS_IN_FLIGHT`] at a time,
    /// and only the first file's entries are kept.
    pub async fn acl_difference(
        &self,
        hdfs: &Hdfs,
    ) -> Result<Option<AclDifference<'_>>, SnapshotError> {
        let mut files = self.files.iter().filter(|f| f.length > 0);
        let Some(first) = files.next() else {
            return Ok(None);
        };
        let Some(first_acl) = hdfs.acl(&first.location()).await? else {
            return Ok(None);
        };
        let client = hdfs.client(&self.dir)?;
        let mut reads = futures::stream::iter(files)
            .map(|file| {
                let (client, location) = (client.clone(), file.location());
                let task = Task::spawn(async move { Hdfs::acl_with(&client, &location).await });
                async move {
                    let acl = task.output().await.map_err(|e| SnapshotError::Io {
                        file: file.location(),
                        source: OrcError::Io(std::io::Error::other(format!(
                            "the task reading its ACL ended: {e}"
                        ))),
                    })??;
                    Ok::<_, SnapshotError>((file, acl.unwrap_or_default()))
                }
            })
            .buffered(TAIL_READS_IN_FLIGHT);
        while let Some((other, acl)) = reads.try_next().await? {
            if !same_acl(&acl, &first_acl) {
                return Ok(Some(AclDifference {
                    first,
                    first_entries: first_acl.len(),
                    other,
                    other_entries: acl.len(),
                }));
            }
        }
        Ok(None)
    }

    pub fn rows(&self) -> u64 {
        self.files.iter().map(DataFile::rows).sum()
    }

    pub fn stripes(&self) -> u64 {
        self.files
            .iter()
            .filter_map(|f| f.tail.as_ref())
            .map(|t| t.stripes.len() as u64)
            .sum()
    }

    pub fn bytes(&self) -> u64 {
        self.files.iter().map(|f| f.length).sum()
    }

    /// Compares a fresh listing with the snapshot. Any data file that appeared, vanished or
    /// changed length or modification time means a writer is active; the answer says which.
    pub fn changes(&self, now: &Listing) -> Vec<String> {
        let then: HashMap<&str, &DataFile> =
            self.files.iter().map(|f| (f.name.as_str(), f)).collect();
        let mut changes = Vec::new();
        for n in &now.files {
            match then.get(n.name.as_str()) {
                None => changes.push(format!("{} appeared", n.name)),
                Some(f) if n.length != f.length || n.modification_time != f.modification_time => {
                    changes.push(format!("{} changed", n.name))
                }
                Some(_) => {}
            }
        }
        let now_names: HashSet<&str> = now.files.iter().map(|n| n.name.as_str()).collect();
        for f in &self.files {
            if !now_names.contains(f.name.as_str()) {
                changes.push(format!("{} vanished", f.name));
            }
        }
        for d in &now.subdirs {
            changes.push(format!("subdirectory {d} appeared"));
        }
        changes
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_held_file_reads_like_the_file_and_gives_its_budget_back() {
        let before = HELD_BUDGET.available_permits();
        let source = Source::Held {
            bytes: Bytes::from_static(b"ORC and the rest"),
            _budget: Some(HELD_BUDGET.try_acquire_many(16).unwrap()),
        };
        assert!(HELD_BUDGET.available_permits() <= before - 16);
        let read = |range| futures::executor::block_on(source.read(range));
        assert_eq!(futures::executor::block_on(source.len()).unwrap(), 16);
        assert_eq!(read(4..7).unwrap(), Bytes::from_static(b"and"));
        assert_eq!(read(16..16).unwrap(), Bytes::new());
        // Past the end is an error, as from our reader of HDFS files, not a panic.
        assert!(read(10..17).is_err());
        assert!(read(17..20).is_err());
        drop(source);
        assert!(HELD_BUDGET.available_permits() >= before);
    }
}
