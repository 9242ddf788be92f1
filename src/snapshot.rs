//! Steps 2 and 3 of the compaction protocol: the partition's data files as they are at one
//! moment (path, length, modification time, owner), each with its ORC tail.
//!
//! Hidden names (leading `.` or `_`) are not data and are ignored, as every engine ignores them.
//! A non-hidden subdirectory, or a file that is not a readable ORC file, refuses the partition
//! with the names listed: the tool never drops or moves a file it does not understand.

use std::collections::{HashMap, HashSet};
use std::future::Future;
use std::sync::{Arc, Mutex, PoisonError};

use futures::{StreamExt, TryStreamExt};
use hdfs_native::file::FileReader;
use serde::Serialize;

use crate::eligibility::{Refusal, Rule};
use crate::hdfs::{FsError, Hdfs, Listing, Location};
use crate::orc::{read_tail, OrcError, OrcTail, SharedFooters, Task};

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
/// none and opens each file again for the copy (two NameNode calls each instead of one): its
/// tails alone take hundreds of MiB, and the saving would touch only the first few percent.
const KEPT_READERS: usize = 10_000;

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
    /// `None` for a zero-length file: it holds zero rows.
    pub tail: Option<OrcTail>,
    /// The reader its tail was read with, kept for the copy: one NameNode call per input (in a
    /// partition of at most [`KEPT_READERS`] files).
    reader: Kept,
}

/// A kept reader, handed out once ([`DataFile::open`]): what copies an input takes it, and it
/// is freed once that input is done, not when the whole run is.
#[derive(Debug)]
struct Kept(Mutex<Option<KeptReader>>);

impl Kept {
    fn new(reader: Option<KeptReader>) -> Self {
        Kept(Mutex::new(reader))
    }

    fn take(&self) -> Option<KeptReader> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner).take()
    }
}

/// An open reader of a data file: its block locations, no connection and no data.
#[derive(Clone)]
struct KeptReader(Arc<FileReader>);

impl std::fmt::Debug for KeptReader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "KeptReader({} bytes)", self.0.file_length())
    }
}

impl DataFile {
    pub fn location(&self) -> Location {
        self.dir.child(&self.name)
    }

    pub fn rows(&self) -> u64 {
        self.tail.as_ref().map_or(0, |t| t.rows)
    }

    /// Opens the file to copy its bytes (for [`crate::orc::copy_pieces`]): the reader its tail
    /// was read with when the snapshot kept one, so the NameNode is asked once per file, else a
    /// new one (also when the kept one was handed out before). The future owns what it needs, so
    /// the copy can run it as a task of its own. A file no longer of the snapshot's length is [`OrcError::Changed`]; one replaced or
    /// appended to after the snapshot is caught by the listing compared before the swap.
    pub fn open(
        &self,
        hdfs: &Hdfs,
    ) -> impl Future<Output = Result<Arc<FileReader>, OrcError>> + Send + 'static {
        let location = self.location();
        // The reader kept, or the client to open one with.
        let source = match self.reader.take() {
            Some(KeptReader(reader)) => Ok(reader),
            None => Err(hdfs.client(&location)),
        };
        let length = self.length;
        async move {
            let io = |e: FsError| OrcError::Io(std::io::Error::other(e.to_string()));
            let reader = match source {
                Ok(reader) => reader,
                Err(client) => {
                    let reader = client.map_err(io)?.read(&location.path).await;
                    Arc::new(reader.map_err(|error| {
                        io(FsError::Io {
                            op: "opening",
                            location: location.to_string(),
                            error,
                        })
                    })?)
                }
            };
            let now = reader.file_length() as u64;
            if now != length {
                return Err(OrcError::Changed(format!(
                    "{location} is {now} bytes long now, {length} when planned"
                )));
            }
            Ok(reader)
        }
    }
}

#[derive(Debug)]
pub struct Snapshot {
    pub dir: Location,
    pub files: Vec<DataFile>,
    pub hidden: Vec<String>,
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

impl Snapshot {
    /// Lists `dir` once and reads every data file's tail, concurrently.
    pub async fn take(hdfs: &Hdfs, dir: &Location) -> Result<Snapshot, SnapshotError> {
        let listing = check_listing(dir, hdfs.list(dir).await?)?;
        let keep_readers = listing.files.len() <= KEPT_READERS;
        let client = hdfs.client(dir)?;
        let shared_dir = Arc::new(dir.clone());
        let mut footers = SharedFooters::default();
        // Sized once: grown by doubling, 100,000 entries left a third of it unused.
        let files = Vec::with_capacity(listing.files.len());
        let files = futures::stream::iter(listing.files)
            .map(|entry| {
                let client = client.clone();
                let dir = Arc::clone(&shared_dir);
                let location = dir.child(&entry.name);
                let file = location.clone();
                let task = Task::spawn(async move {
                    let (tail, reader) = if entry.length == 0 {
                        (None, None)
                    } else {
                        let reader =
                            client
                                .read(&location.path)
                                .await
                                .map_err(|source| FsError::Io {
                                    op: "opening",
                                    location: location.to_string(),
                                    error: source,
                                })?;
                        match read_tail(&reader).await {
                            Ok(tail) => (tail, keep_readers.then(|| KeptReader(Arc::new(reader)))),
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
                        reader: Kept::new(reader),
                    })
                });
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
