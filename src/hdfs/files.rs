//! The seam of a compaction's last HDFS calls, and its in-memory double for unit tests.

use std::future::Future;
use std::io;

use bytes::Bytes;
use futures::{Stream, StreamExt};

use super::client::Hdfs;
use super::error::FsError;
use super::listing::Listing;
use super::location::Location;

/// The HDFS calls of a compaction's last steps (the re-check, the swap, the journal, removing a
/// stopped run's directories): the seam where their rules are unit-tested without a cluster
/// ([`Hdfs`] in production).
pub trait Files: Sync {
    /// Lists a directory once. `Ok(None)` when it does not exist.
    fn list(&self, dir: &Location)
        -> impl Future<Output = Result<Option<Listing>, FsError>> + Send;
    fn delete(
        &self,
        target: &Location,
        recursive: bool,
    ) -> impl Future<Output = Result<bool, FsError>> + Send;
    /// Creates `file`, which must not exist yet, holding the chunks as they come; an `Err`
    /// chunk (the producer failed) fails the write, and a failed write or close leaves no file
    /// behind, as far as a delete can.
    fn write_new(
        &self,
        file: &Location,
        chunks: impl Stream<Item = io::Result<Bytes>> + Send,
        permission: u16,
    ) -> impl Future<Output = anyhow::Result<()>> + Send;
}

impl Files for Hdfs {
    fn list(
        &self,
        dir: &Location,
    ) -> impl Future<Output = Result<Option<Listing>, FsError>> + Send {
        Hdfs::list(self, dir)
    }

    fn delete(
        &self,
        target: &Location,
        recursive: bool,
    ) -> impl Future<Output = Result<bool, FsError>> + Send {
        Hdfs::delete(self, target, recursive)
    }

    async fn write_new(
        &self,
        file: &Location,
        chunks: impl Stream<Item = io::Result<Bytes>> + Send,
        permission: u16,
    ) -> anyhow::Result<()> {
        let mut writer = self.create(file, permission).await?;
        let mut chunks = std::pin::pin!(chunks);
        while let Some(chunk) = chunks.next().await {
            let written = match chunk {
                Ok(bytes) => writer.write_bytes(bytes).await.map_err(anyhow::Error::from),
                Err(e) => Err(e.into()),
            };
            if let Err(e) = written {
                drop(writer);
                // Best effort: a half-written file must not pass for a whole one.
                let _ = Hdfs::delete(self, file, false).await;
                return Err(anyhow::anyhow!("writing {file}: {e}"));
            }
        }
        if let Err(e) = writer.close().await {
            // A close that failed leaves the file as far as the NameNode got it, often empty
            // (a pipeline that could not be built): as unusable as a half-written one.
            let _ = Hdfs::delete(self, file, false).await;
            return Err(anyhow::anyhow!("closing {file}: {e}"));
        }
        Ok(())
    }
}
