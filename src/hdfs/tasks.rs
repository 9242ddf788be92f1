//! hdfs-native's calls, each run as a tokio task of its own.
//!
//! hdfs-native queues the calls to a NameNode on one fair async lock (taken to send each
//! request), and a DataNode read on another (the cached server defaults, looked at before each
//! block is read). A fair lock hands itself to the next future in line as it is released. A
//! future that is in line but no longer polled then holds it for good, and every HDFS call of the
//! process waits behind it. Our streams leave started futures unpolled by design: a `buffered`
//! stream polls its futures only while its consumer asks for the next item, and a consumer
//! busy with HDFS calls of its own does not ask (`analyze --deep` hung so: its plans waited for
//! the NameNode lock that a listing behind them in the stream had been handed). A task is
//! polled by the runtime whatever its awaiter does, so a lock it takes is always released.
//! Hence these wrappers: the rest of the tool reaches hdfs-native only through them.

use std::future::Future;
use std::sync::Arc;

use bytes::Bytes;
use hdfs_native::acl::{AclEntry, AclStatus};
use hdfs_native::client::{ContentSummary, FileStatus};
use hdfs_native::file::{FileReader, FileWriter};
use hdfs_native::{HdfsError, WriteOptions};
use tracing::Instrument;

/// Runs `call` as a task, in the caller's tracing span (hdfs-native's log lines name the
/// partition). A panic in it is the caller's panic, as if it had run in place.
async fn detached<T: Send + 'static>(
    call: impl Future<Output = Result<T, HdfsError>> + Send + 'static,
) -> Result<T, HdfsError> {
    match tokio::spawn(call.in_current_span()).await {
        Ok(result) => result,
        Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
        Err(e) => Err(HdfsError::IOError(std::io::Error::other(format!(
            "the HDFS call was cancelled: {e}"
        )))),
    }
}

/// A namespace's client (cheap to clone: clones share the connections).
#[derive(Clone)]
pub struct Client(hdfs_native::Client);

/// The calls that take one path and owned arguments, each as hdfs-native's of the same name.
macro_rules! path_calls {
    ($(fn $name:ident($($arg:ident: $ty:ty),*) -> $out:ty;)*) => {$(
        pub async fn $name(&self, path: &str $(, $arg: $ty)*) -> Result<$out, HdfsError> {
            let (client, path) = (self.0.clone(), path.to_owned());
            detached(async move { client.$name(&path $(, $arg)*).await }).await
        }
    )*};
}

impl Client {
    pub(super) fn new(client: hdfs_native::Client) -> Self {
        Client(client)
    }

    path_calls! {
        fn get_file_info() -> FileStatus;
        fn list_status(recursive: bool) -> Vec<FileStatus>;
        fn mkdirs(permission: u32, create_parent: bool) -> ();
        fn delete(recursive: bool) -> bool;
        fn set_times(mtime: u64, atime: u64) -> ();
        fn set_permission(permission: u32) -> ();
        fn get_content_summary() -> ContentSummary;
        fn get_acl_status() -> AclStatus;
        fn remove_acl() -> ();
        fn modify_acl_entries(acl_spec: Vec<AclEntry>) -> ();
    }

    pub async fn set_owner(
        &self,
        path: &str,
        owner: Option<&str>,
        group: Option<&str>,
    ) -> Result<(), HdfsError> {
        let (client, path) = (self.0.clone(), path.to_owned());
        let (owner, group) = (owner.map(str::to_owned), group.map(str::to_owned));
        detached(async move {
            client
                .set_owner(&path, owner.as_deref(), group.as_deref())
                .await
        })
        .await
    }

    pub async fn rename(&self, from: &str, to: &str, overwrite: bool) -> Result<(), HdfsError> {
        let (client, from, to) = (self.0.clone(), from.to_owned(), to.to_owned());
        detached(async move { client.rename(&from, &to, overwrite).await }).await
    }

    pub async fn read(&self, path: &str) -> Result<Reader, HdfsError> {
        let (client, path) = (self.0.clone(), path.to_owned());
        let reader = detached(async move { client.read(&path).await }).await?;
        Ok(Reader(Arc::new(reader)))
    }

    pub async fn create(&self, path: &str, options: WriteOptions) -> Result<Writer, HdfsError> {
        let (client, path) = (self.0.clone(), path.to_owned());
        let writer = detached(async move { client.create(&path, options).await }).await?;
        Ok(Writer(Some(writer)))
    }
}

/// An open file to read (cheap to clone: clones share it).
#[derive(Clone)]
pub struct Reader(Arc<FileReader>);

impl Reader {
    pub fn file_length(&self) -> usize {
        self.0.file_length()
    }

    /// `len` bytes from `offset`. hdfs-native panics past the end of the file: callers check.
    pub async fn read_range(&self, offset: usize, len: usize) -> Result<Bytes, HdfsError> {
        let reader = self.0.clone();
        detached(async move { reader.read_range(offset, len).await }).await
    }
}

/// A new file being written. Each write moves hdfs-native's writer into a task and back.
pub struct Writer(Option<FileWriter>);

impl Writer {
    pub async fn write_bytes(&mut self, data: Bytes) -> Result<usize, HdfsError> {
        self.with(|mut w| async move {
            let written = w.write_bytes(data).await;
            (w, written)
        })
        .await
    }

    pub async fn close(&mut self) -> Result<(), HdfsError> {
        self.with(|mut w| async move {
            let closed = w.close().await;
            (w, closed)
        })
        .await
    }

    async fn with<T, F, Fut>(&mut self, call: F) -> Result<T, HdfsError>
    where
        T: Send + 'static,
        F: FnOnce(FileWriter) -> Fut,
        Fut: Future<Output = (FileWriter, Result<T, HdfsError>)> + Send + 'static,
    {
        // Gone only when an earlier call's task was cancelled (the runtime shutting down).
        let writer = self.0.take().ok_or_else(|| {
            HdfsError::IOError(std::io::Error::other("the file's writer was lost"))
        })?;
        let task = call(writer);
        let (writer, result) = detached(async move { Ok(task.await) }).await?;
        self.0 = Some(writer);
        result
    }
}
