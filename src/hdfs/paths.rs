//! What the tool does to paths: open and create files, make directories, rename, trash and
//! delete (each call whose reply was lost settled by looking), and the ORC engine's reads and
//! writes through hdfs-native's file reader and writer.

use std::future::Future;
use std::io;
use std::ops::Range;

use bytes::Bytes;
use hdfs_native::{HdfsError, WriteOptions};

use super::client::{Hdfs, LOG_TARGET};
use super::error::FsError;
use super::error::{ambiguous, describe, ez_rename_refusal, io_error};
use super::location::ancestors;
use super::location::Location;
use super::tasks::{Reader, Writer};
use crate::orc::{RangeRead, Sink};

impl Hdfs {
    pub async fn open(&self, file: &Location) -> Result<Reader, FsError> {
        let client = self.client(file)?;
        client
            .read(&file.path)
            .await
            .map_err(Self::io("opening", file))
    }

    /// Creates a new file; fails if it exists. `permission` is applied as given (hdfs-native
    /// applies no umask).
    pub async fn create(&self, file: &Location, permission: u16) -> Result<Writer, FsError> {
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

    /// Creates `dir` and its parents. `mkdirs` is idempotent, so one whose reply was lost is
    /// asked again once.
    pub async fn mkdirs(&self, dir: &Location, permission: u16) -> Result<(), FsError> {
        let client = self.client(dir)?;
        match client.mkdirs(&dir.path, u32::from(permission), true).await {
            Err(error) if ambiguous(&error) => client
                .mkdirs(&dir.path, u32::from(permission), true)
                .await
                .map_err(Self::io("creating directory", dir)),
            done => done.map_err(Self::io("creating directory", dir)),
        }
    }

    /// HDFS `rename2` without overwrite: atomic, fails if `to` exists.
    ///
    /// hdfs-native does not replay a rename whose outcome it could not learn (the connection
    /// broke, or the NameNode failed over, after the request left): then the paths say what
    /// happened. `from` gone and `to` there is a rename that landed.
    pub async fn rename(&self, from: &Location, to: &Location) -> Result<(), FsError> {
        let client = self.client(from)?;
        let error = match client.rename(&from.path, &to.path, false).await {
            Ok(()) => return Ok(()),
            Err(e) => e,
        };
        if ambiguous(&error) {
            let gone = matches!(
                client.get_file_info(&from.path).await,
                Err(HdfsError::FileNotFound(_))
            );
            if gone && client.get_file_info(&to.path).await.is_ok() {
                tracing::warn!(target: LOG_TARGET, %from, %to, "the rename's reply was lost ({}); it landed", describe(&error));
                return Ok(());
            }
        }
        if let Some(moved) = ez_rename_refusal(&error) {
            return Err(FsError::CrossesZone {
                from: from.to_string(),
                to: to.to_string(),
                why: moved,
            });
        }
        Err(Self::io("renaming", from)(error))
    }

    /// HDFS `rename2` with overwrite: atomically replaces the file `to` with `from`.
    pub async fn replace(&self, from: &Location, to: &Location) -> Result<(), FsError> {
        let client = self.client(from)?;
        client
            .rename(&from.path, &to.path, true)
            .await
            .map_err(Self::io("replacing", to))
    }

    /// Moves `target` into the trash as `hadoop fs -rm` would: to
    /// `/user/<user>/.Trash/Current/<its path>` on its own filesystem, creating the parents, with
    /// a time suffix when that name is taken. Returns where it went. hdfs-native's own `trash()`
    /// is not used because it cannot be pointed at another trash root.
    ///
    /// Inside an encryption zone HDFS refuses the rename out of the zone; as Hadoop's shell does,
    /// the trash is then the zone's own, `<zone>/.Trash/<user>/Current/...`, the zone being the
    /// nearest directory above `target` that holds a `.Trash` (HDFS makes it with the zone:
    /// `hdfs crypto -provisionTrash`). Without one the error says so and nothing moves.
    pub async fn trash(&self, target: &Location) -> Result<Location, FsError> {
        let user = self.user();
        let home = Location {
            fs: target.fs.clone(),
            path: format!("/user/{user}/.Trash/Current"),
        };
        match self.trash_into(target, &home).await {
            Err(FsError::CrossesZone { .. }) => {}
            other => return other,
        }
        for zone in ancestors(target) {
            let trash = zone.child(".Trash");
            if self.status(&trash).await?.is_some() {
                let current = trash.child(&user).child("Current");
                return self.trash_into(target, &current).await;
            }
        }
        Err(FsError::NoZoneTrash(target.to_string()))
    }

    /// Moves `target` to `<current><its path>`, making the parents, with a time suffix when
    /// that name is taken.
    async fn trash_into(&self, target: &Location, current: &Location) -> Result<Location, FsError> {
        let mut to = Location {
            fs: target.fs.clone(),
            path: format!("{}{}", current.path, target.path),
        };
        if let Some((parent, _)) = to.path.rsplit_once('/') {
            let parent = Location {
                fs: to.fs.clone(),
                path: parent.to_string(),
            };
            self.mkdirs(&parent, 0o700).await?;
        }
        if self.status(&to).await?.is_some() {
            to.path = format!("{}{}", to.path, chrono::Utc::now().timestamp_millis());
        }
        self.rename(target, &to).await?;
        Ok(to)
    }

    /// Deletes `target`; `Ok(false)` when it did not exist. A delete whose reply was lost (see
    /// [`Hdfs::rename`]) counts as done when `target` is gone.
    pub async fn delete(&self, target: &Location, recursive: bool) -> Result<bool, FsError> {
        let client = self.client(target)?;
        match client.delete(&target.path, recursive).await {
            Ok(existed) => Ok(existed),
            Err(error) if ambiguous(&error) => match client.get_file_info(&target.path).await {
                Err(HdfsError::FileNotFound(_)) => {
                    tracing::warn!(target: LOG_TARGET, %target, "the delete's reply was lost ({}); it landed", describe(&error));
                    Ok(true)
                }
                _ => Err(Self::io("deleting", target)(error)),
            },
            Err(error) => Err(Self::io("deleting", target)(error)),
        }
    }

    /// Sets the modification time (milliseconds since the epoch) of an existing path, leaving
    /// its access time as it is.
    pub async fn set_modification_time(
        &self,
        target: &Location,
        mtime: u64,
    ) -> Result<(), FsError> {
        let client = self.client(target)?;
        // u64::MAX reaches the NameNode as -1, "leave it": a real access time is refused where
        // access times are off (dfs.namenode.accesstime.precision=0).
        client
            .set_times(&target.path, mtime, u64::MAX)
            .await
            .map_err(Self::io("setting the modification time of", target))
    }
}

/// The ORC engine reads through this. It checks every range against `len()` before asking,
/// which matters: `read_range` panics past the end of the file.
impl RangeRead for Reader {
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

impl Sink for Writer {
    async fn write(&mut self, data: Bytes) -> io::Result<()> {
        self.write_bytes(data).await.map(|_| ()).map_err(io_error)
    }
}
