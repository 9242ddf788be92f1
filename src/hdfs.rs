//! HDFS access through hdfs-native: locations as the metastore stores them, one client per
//! namespace, and directory listings classified the way Hive's readers see them.

use std::collections::HashMap;
use std::sync::Mutex;

use std::future::Future;
use std::io;
use std::ops::Range;

use bytes::Bytes;
use hdfs_native::file::{FileReader, FileWriter};
use hdfs_native::{Client, ClientBuilder, HdfsError, WriteOptions};
use serde::Serialize;

use crate::orc::{RangeRead, Sink};

/// A metastore location split into its filesystem (`hdfs://nn:8020`) and its path.
///
/// The path is kept exactly as written: Hive's partition directories contain literal `%XX`
/// sequences (its own escaping), spaces and non-ASCII characters, so URL parsing or
/// percent-decoding would name a different directory.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
pub struct Location {
    /// `scheme://authority`, or `scheme://` when the location relies on the default filesystem.
    pub fs: String,
    pub path: String,
}

impl Location {
    pub fn parse(location: &str) -> Result<Self, FsError> {
        let bad = || FsError::BadLocation(location.to_string());
        let (scheme, rest) = location.split_once("://").ok_or_else(bad)?;
        let scheme = scheme.to_ascii_lowercase();
        if scheme != "hdfs" && scheme != "viewfs" {
            return Err(bad());
        }
        let (authority, path) = match rest.find('/') {
            Some(i) => rest.split_at(i),
            None => (rest, "/"),
        };
        // Hadoop normalises repeated and trailing slashes; do the same so two spellings of a
        // directory compare equal.
        let mut norm = String::with_capacity(path.len());
        for part in path.split('/').filter(|p| !p.is_empty()) {
            norm.push('/');
            norm.push_str(part);
        }
        if norm.is_empty() {
            norm.push('/');
        }
        Ok(Location {
            fs: format!("{scheme}://{authority}"),
            path: norm,
        })
    }
}

impl Location {
    pub fn child(&self, name: &str) -> Location {
        let sep = if self.path.ends_with('/') { "" } else { "/" };
        Location {
            fs: self.fs.clone(),
            path: format!("{}{sep}{name}", self.path),
        }
    }

    /// Whether `self` is `other` or lies below it.
    pub fn is_within(&self, other: &Location) -> bool {
        self.fs == other.fs
            && (self.path == other.path
                || other.path == "/"
                || self.path.starts_with(&format!("{}/", other.path)))
    }
}

impl std::fmt::Display for Location {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}{}", self.fs, self.path)
    }
}

#[derive(Debug, thiserror::Error)]
pub enum FsError {
    #[error(
        "'{0}' is not an HDFS location (expected hdfs://namenode/path or viewfs://cluster/path)"
    )]
    BadLocation(String),
    #[error("cannot set up an HDFS client for {fs}: {source} (check HADOOP_CONF_DIR)")]
    Client { fs: String, source: HdfsError },
    #[error("{op} {location} failed: {}", describe(.source))]
    Io {
        op: &'static str,
        location: String,
        source: HdfsError,
    },
}

/// hdfs-native reports server exceptions as (Java class, message); the class alone says most.
fn describe(e: &HdfsError) -> String {
    match e {
        HdfsError::RPCError(class, msg) | HdfsError::FatalRPCError(class, msg) => {
            let short = class.rsplit('.').next().unwrap_or(class);
            let first = msg.lines().next().unwrap_or("");
            format!("{short}: {first}")
        }
        HdfsError::IOError(io) => format!("{io} (is the NameNode up and reachable?)"),
        other => other.to_string(),
    }
}

/// One client per filesystem, built lazily: a table's partitions may live on several
/// namespaces (viewfs, federation, old locations on another cluster).
#[derive(Default)]
pub struct Hdfs {
    clients: Mutex<HashMap<String, Client>>,
}

/// One entry of a directory listing.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Entry {
    pub name: String,
    pub length: u64,
    pub modification_time: u64,
    pub owner: String,
    pub group: String,
    pub permission: u16,
}

/// A partition directory as Hive's readers see it.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Listing {
    /// Non-hidden files: what queries read.
    pub files: Vec<Entry>,
    /// Names starting with `.` or `_` (`_SUCCESS`, `.hive-staging*`): every engine skips them.
    pub hidden: Vec<String>,
    /// Non-hidden subdirectories: not part of a plain partition; the tool will not touch them.
    pub subdirs: Vec<String>,
}

/// Hive, Spark, Trino and Impala all skip these names when they list a partition.
pub fn is_hidden(name: &str) -> bool {
    name.starts_with('.') || name.starts_with('_')
}

impl Hdfs {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn client(&self, location: &Location) -> Result<Client, FsError> {
        let mut clients = self.clients.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(c) = clients.get(&location.fs) {
            return Ok(c.clone());
        }
        let mut builder = ClientBuilder::new();
        // `hdfs:///path` means "the default filesystem": let hdfs-native take fs.defaultFS.
        if !location.fs.ends_with("://") {
            builder = builder.with_url(location.fs.clone());
        }
        let client = builder.build().map_err(|source| FsError::Client {
            fs: location.fs.clone(),
            source,
        })?;
        clients.insert(location.fs.clone(), client.clone());
        Ok(client)
    }

    fn io<'a>(op: &'static str, location: &'a Location) -> impl FnOnce(HdfsError) -> FsError + 'a {
        move |source| FsError::Io {
            op,
            location: location.to_string(),
            source,
        }
    }

    pub async fn open(&self, file: &Location) -> Result<FileReader, FsError> {
        let client = self.client(file)?;
        client
            .read(&file.path)
            .await
            .map_err(Self::io("opening", file))
    }

    /// Creates a new file; fails if it exists. `permission` is applied as given (hdfs-native
    /// applies no umask).
    pub async fn create(&self, file: &Location, permission: u16) -> Result<FileWriter, FsError> {
        let client = self.client(file)?;
        let options = WriteOptions::default()
            .permission(u32::from(permission))
            .overwrite(false)
            .create_parent(false);
        client
            .create(&file.path, options)
            .await
            .map_err(Self::io("creating", file))
    }

    pub async fn mkdirs(&self, dir: &Location, permission: u16) -> Result<(), FsError> {
        let client = self.client(dir)?;
        client
            .mkdirs(&dir.path, u32::from(permission), true)
            .await
            .map_err(Self::io("creating directory", dir))
    }

    /// HDFS `rename2` without overwrite: atomic, fails if `to` exists.
    pub async fn rename(&self, from: &Location, to: &Location) -> Result<(), FsError> {
        let client = self.client(from)?;
        client
            .rename(&from.path, &to.path, false)
            .await
            .map_err(Self::io("renaming", from))
    }

    pub async fn delete(&self, target: &Location, recursive: bool) -> Result<bool, FsError> {
        let client = self.client(target)?;
        client
            .delete(&target.path, recursive)
            .await
            .map_err(Self::io("deleting", target))
    }

    pub async fn set_owner(
        &self,
        target: &Location,
        owner: &str,
        group: &str,
    ) -> Result<(), FsError> {
        let client = self.client(target)?;
        client
            .set_owner(&target.path, Some(owner), Some(group))
            .await
            .map_err(Self::io("changing the owner of", target))
    }

    pub async fn set_permission(&self, target: &Location, permission: u16) -> Result<(), FsError> {
        let client = self.client(target)?;
        client
            .set_permission(&target.path, u32::from(permission))
            .await
            .map_err(Self::io("changing the permission of", target))
    }

    /// The status of one path; `Ok(None)` when it does not exist.
    pub async fn status(&self, target: &Location) -> Result<Option<Entry>, FsError> {
        let client = self.client(target)?;
        match client.get_file_info(&target.path).await {
            Ok(s) => Ok(Some(Entry {
                name: target.path.rsplit('/').next().unwrap_or("").to_string(),
                length: s.length as u64,
                modification_time: s.modification_time,
                owner: s.owner,
                group: s.group,
                permission: s.permission,
            })),
            Err(HdfsError::FileNotFound(_)) => Ok(None),
            Err(e) => Err(Self::io("reading the status of", target)(e)),
        }
    }

    /// Lists a directory once. `Ok(None)` when it does not exist.
    pub async fn list(&self, dir: &Location) -> Result<Option<Listing>, FsError> {
        let client = self.client(dir)?;
        let statuses = match client.list_status(&dir.path, false).await {
            Ok(s) => s,
            Err(HdfsError::FileNotFound(_)) => return Ok(None),
            Err(source) => {
                return Err(FsError::Io {
                    op: "listing",
                    location: dir.to_string(),
                    source,
                })
            }
        };
        let mut listing = Listing::default();
        for s in statuses {
            let name = s.path.rsplit('/').next().unwrap_or(&s.path).to_string();
            if is_hidden(&name) {
                listing.hidden.push(name);
            } else if s.isdir {
                listing.subdirs.push(name);
            } else {
                listing.files.push(Entry {
                    name,
                    length: s.length as u64,
                    modification_time: s.modification_time,
                    owner: s.owner,
                    group: s.group,
                    permission: s.permission,
                });
            }
        }
        listing.files.sort_by(|a, b| a.name.cmp(&b.name));
        listing.hidden.sort();
        listing.subdirs.sort();
        Ok(Some(listing))
    }
}

fn io_error(e: HdfsError) -> io::Error {
    io::Error::other(describe(&e))
}

/// The ORC engine reads through this. It checks every range against `len()` before asking,
/// which matters: `read_range` panics past the end of the file.
impl RangeRead for FileReader {
    fn len(&self) -> impl Future<Output = io::Result<u64>> + Send {
        let len = self.file_length() as u64;
        async move { Ok(len) }
    }

    fn read(&self, range: Range<u64>) -> impl Future<Output = io::Result<Bytes>> + Send {
        let len = self.file_length() as u64;
        async move {
            if range.start > range.end || range.end > len {
                return Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    format!(
                        "bytes {}..{} are outside a file of {len} bytes",
                        range.start, range.end
                    ),
                ));
            }
            self.read_range(range.start as usize, (range.end - range.start) as usize)
                .await
                .map_err(io_error)
        }
    }
}

impl Sink for FileWriter {
    async fn write(&mut self, data: Bytes) -> io::Result<()> {
        self.write_bytes(data).await.map(|_| ()).map_err(io_error)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_locations_without_decoding() {
        let l = Location::parse("hdfs://nn:8020/warehouse/t/k=a%2Fb/c=é x").unwrap();
        assert_eq!(l.fs, "hdfs://nn:8020");
        assert_eq!(l.path, "/warehouse/t/k=a%2Fb/c=é x");
        assert_eq!(l.to_string(), "hdfs://nn:8020/warehouse/t/k=a%2Fb/c=é x");
    }

    #[test]
    fn normalises_slashes_and_default_fs() {
        let l = Location::parse("HDFS:///a//b/").unwrap();
        assert_eq!((l.fs.as_str(), l.path.as_str()), ("hdfs://", "/a/b"));
        let l = Location::parse("viewfs://cluster").unwrap();
        assert_eq!((l.fs.as_str(), l.path.as_str()), ("viewfs://cluster", "/"));
    }

    #[test]
    fn refuses_other_filesystems() {
        for bad in ["s3a://b/t", "file:/tmp/t", "/warehouse/t", ""] {
            assert!(Location::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn within() {
        let t = Location::parse("hdfs://nn/w/t").unwrap();
        assert!(t.child("k=1").is_within(&t));
        assert!(t.is_within(&t));
        assert!(!Location::parse("hdfs://nn/w/t2").unwrap().is_within(&t));
        assert!(!Location::parse("hdfs://other/w/t/k=1")
            .unwrap()
            .is_within(&t));
    }

    #[test]
    fn hidden_names() {
        assert!(is_hidden("_SUCCESS"));
        assert!(is_hidden(".hive-staging_hive_2026"));
        assert!(!is_hidden("000000_0"));
        assert!(!is_hidden("part-00000.orc"));
    }
}
