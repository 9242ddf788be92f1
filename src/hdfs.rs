//! HDFS access through hdfs-native: locations as the metastore stores them, one client per
//! namespace, and directory listings classified the way Hive's readers see them.

use std::collections::HashMap;
use std::sync::Mutex;

use std::future::Future;
use std::io;
use std::ops::Range;

use bytes::Bytes;
use futures::{Stream, StreamExt};
use hdfs_native::acl::AclEntry;
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
    // The HDFS error is rendered into the message and deliberately not a `source`: error
    // chains print every source, and hdfs-native's raw text would repeat what `describe` said.
    #[error("cannot set up an HDFS client for {fs}: {error} (check HADOOP_CONF_DIR)")]
    Client { fs: String, error: HdfsError },
    #[error(
        "cannot move {from} to {to}: {why}; HDFS moves nothing across encryption zones or viewfs \
         mounts"
    )]
    CrossesZone {
        from: String,
        to: String,
        why: String,
    },
    #[error(
        "cannot move {0} to the trash: it is in an encryption zone (or viewfs mount) without a \
         trash of its own, and HDFS moves nothing out of one: make the zone's trash \
         (`hdfs crypto -provisionTrash -path <zone>`), or run without --trash to delete it"
    )]
    NoZoneTrash(String),
    #[error("{op} {location} failed: {}", describe(.error))]
    Io {
        op: &'static str,
        location: String,
        error: HdfsError,
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
        // Kerberos: one line with the fix, as for the metastore.
        HdfsError::GSSAPIError(major, minor, text) => {
            crate::kerberos::explain_hdfs((major.raw() >> 16) & 0xff, *minor, text)
        }
        other => other.to_string(),
    }
}

/// Whether a failed call may have been carried out anyway: the request left and its reply was
/// lost (a broken connection, or a NameNode that failed over), so that only the paths can tell.
/// A server's own exception, or a call refused before it ran, is an answer.
fn ambiguous(e: &HdfsError) -> bool {
    match e {
        HdfsError::IOError(_) => true,
        HdfsError::RPCError(class, _) | HdfsError::FatalRPCError(class, _) => {
            let short = class.rsplit('.').next().unwrap_or(class);
            matches!(
                short,
                "StandbyException" | "RetriableException" | "ObserverRetryOnActiveException"
            )
        }
        _ => false,
    }
}

/// The reason when a rename into, out of or between encryption zones is refused by the
/// NameNode (`... can't be moved from an encryption zone.`), or one across viewfs mounts by
/// hdfs-native.
fn ez_rename_refusal(e: &HdfsError) -> Option<String> {
    match e {
        HdfsError::RPCError(_, msg) | HdfsError::FatalRPCError(_, msg)
            if msg.contains("encryption zone") =>
        {
            Some(msg.lines().next().unwrap_or("").trim().to_string())
        }
        HdfsError::InvalidArgument(msg) if msg.contains("across different name services") => {
            Some(format!("{msg} (viewfs mounts)"))
        }
        _ => None,
    }
}

/// The directories above `target`, nearest first, `/` last.
fn ancestors(target: &Location) -> Vec<Location> {
    let mut out = Vec::new();
    let mut path = target.path.as_str();
    while let Some((parent, _)) = path.rsplit_once('/') {
        let parent = if parent.is_empty() { "/" } else { parent };
        out.push(Location {
            fs: target.fs.clone(),
            path: parent.to_string(),
        });
        if parent == "/" {
            break;
        }
        path = parent;
    }
    out
}

/// `core-site.xml` and `hdfs-site.xml` as hdfs-native finds them (`$HADOOP_CONF_DIR`, else
/// `$HADOOP_HOME/etc/hadoop`); empty when there are none or they cannot be read (hdfs-native
/// then says why when it reads them itself).
fn hadoop_site() -> std::collections::BTreeMap<String, String> {
    let dir = std::env::var_os("HADOOP_CONF_DIR")
        .map(std::path::PathBuf::from)
        .or_else(|| {
            std::env::var_os("HADOOP_HOME").map(|h| std::path::PathBuf::from(h).join("etc/hadoop"))
        });
    let mut out = std::collections::BTreeMap::new();
    if let Some(dir) = dir {
        for file in ["core-site.xml", "hdfs-site.xml"] {
            let path = dir.join(file);
            if path.exists() {
                if let Ok(conf) = crate::config::read_site_xml(&path) {
                    out.extend(conf);
                }
            }
        }
    }
    out
}

const OBSERVER_PROVIDER: &str =
    "org.apache.hadoop.hdfs.server.namenode.ha.ObserverReadProxyProvider";
const FAILOVER_PROVIDER: &str =
    "org.apache.hadoop.hdfs.server.namenode.ha.ConfiguredFailoverProxyProvider";

/// The configuration that sends every call of the tool to the active NameNode of a nameservice
/// configured for observer reads. hdfs-native's observer client sends `msync` only before its
/// first write, so its listings before that (the run's snapshot) and long after it (the
/// re-check before the swap) may come from an observer that has not yet seen a file a writer
/// just closed: a decision on them could leave that file behind. The tool's NameNode load is a
/// few listings and block lookups per partition; the active serves them.
pub fn observer_overrides(
    site: &std::collections::BTreeMap<String, String>,
) -> Vec<(String, String)> {
    site.iter()
        .filter(|(k, v)| {
            k.starts_with("dfs.client.failover.proxy.provider.") && v.trim() == OBSERVER_PROVIDER
        })
        .map(|(k, _)| (k.clone(), FAILOVER_PROVIDER.to_string()))
        .collect()
}

/// One client per filesystem, built lazily: a table's partitions may live on several
/// namespaces (viewfs, federation, old locations on another cluster).
#[derive(Default)]
pub struct Hdfs {
    clients: Mutex<HashMap<String, Client>>,
    /// `--hadoop-user`: the user to act as on clusters without Kerberos.
    user: Option<String>,
    /// Which pairs of filesystem names (`scheme://authority`) were proven to be one namespace,
    /// or two: a namespace does not change names while the tool runs.
    namespaces: Mutex<HashMap<(String, String), bool>>,
}

/// Whether [`Hdfs::within`] may create a hidden marker file to tell two filesystem names apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Probe {
    /// Yes: callers that go on to delete must know.
    Allowed,
    /// No (read-only commands, dry runs): where only a marker could tell, the answer is "within",
    /// the answer under which nothing is deleted.
    ReadOnly,
}

/// The Hadoop user of a simple-auth cluster: `explicit` (`--hadoop-user`), else
/// `$HADOOP_USER_NAME`, else the login name, as hdfs-native decides it.
pub fn hadoop_user(explicit: Option<&str>) -> String {
    explicit
        .map(str::to_owned)
        .or_else(|| std::env::var("HADOOP_USER_NAME").ok())
        .or_else(|| whoami::username().ok())
        .unwrap_or_else(|| "unknown".into())
}

/// How HDFS stores a file's bytes, as far as a client of hdfs-native 0.14 can tell: the crate
/// exposes no erasure coding policy (its `FileStatus` drops `ecPolicy`, and it has no
/// `getErasureCodingPolicy`), but a file's length, replication and the space it consumes
/// (`getContentSummary`) give its layout.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Layout {
    /// `replication` copies of every block.
    Replicated,
    /// Erasure coded with `parity` parity units (for a file shorter than one cell, every parity
    /// unit holds as many bytes as the data).
    Striped { parity: u64 },
}

/// The layout of a file of `length` bytes (no longer than the smallest EC cell, 64 KiB, and
/// not empty) that consumes `consumed` bytes and reports `replication`. `None` when the numbers
/// fit neither.
pub fn layout_of(length: u64, replication: u64, consumed: u64) -> Option<Layout> {
    if length == 0 {
        return None;
    }
    if consumed == length * replication {
        return Some(Layout::Replicated);
    }
    // HDFS erasure coding policies have at most a few parity units (RS-10-4 has the most of the
    // built-in ones); anything far beyond is another story (such as a last block still counted
    // at its preferred size), not a layout.
    let extra = consumed.checked_sub(length)?;
    let parity = extra / length;
    (extra > 0 && extra % length == 0 && parity <= 32).then_some(Layout::Striped { parity })
}

/// One entry of a directory listing.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Entry {
    pub name: String,
    pub length: u64,
    /// The file's HDFS block size: how many NameNode block objects its length costs.
    pub block_size: Option<u64>,
    pub modification_time: u64,
    pub owner: String,
    pub group: String,
    pub permission: u16,
}

/// Who may do what with a path: what a copy must carry to be used like the original.
#[derive(Debug, Clone, PartialEq)]
pub struct Access {
    pub owner: String,
    pub group: String,
    /// With an ACL, the group bits are the ACL's mask.
    pub permission: u16,
    /// The ACL's entries beyond the permission bits, default (inherited) entries included;
    /// empty without an ACL.
    pub acl: Vec<AclEntry>,
}

/// What reading a path's ACL status found.
enum AclRead {
    Status(hdfs_native::acl::AclStatus),
    Missing,
    /// The NameNode has ACLs disabled (`dfs.namenode.acls.enabled=false`).
    Disabled,
}

/// One part of an [`Access`] that could not be given to a path.
#[derive(Debug)]
pub struct NotKept {
    pub target: Location,
    /// `owner`, `group`, `permission` or `ACL`.
    pub what: &'static str,
    pub error: FsError,
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

/// Whether two ACLs hold the same entries: the NameNode returns them in no promised order.
pub fn same_acl(a: &[AclEntry], b: &[AclEntry]) -> bool {
    a.len() == b.len() && a.iter().all(|e| b.contains(e))
}

/// Hive, Spark, Trino and Impala all skip these names when they list a partition.
pub fn is_hidden(name: &str) -> bool {
    name.starts_with('.') || name.starts_with('_')
}

impl Hdfs {
    pub fn new() -> Self {
        Self::default()
    }

    /// Acts as `user` (simple authentication; with Kerberos, as its proxy user) instead of
    /// `$HADOOP_USER_NAME` or the login name.
    pub fn as_user(user: Option<String>) -> Self {
        Hdfs {
            user,
            ..Self::default()
        }
    }

    /// The user this client acts as, on clusters without Kerberos.
    pub fn user(&self) -> String {
        hadoop_user(self.user.as_deref())
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
        if let Some(user) = &self.user {
            builder = builder.with_user(user.clone());
        }
        // --principal/--keytab (hdfs-native then uses them instead of the default ticket
        // cache); Kerberos itself is on when core-site.xml says so.
        let login = crate::kerberos::login();
        if let Some(principal) = login.principal {
            builder = builder.with_kerberos_principal(principal);
        }
        if let Some(keytab) = login.keytab {
            builder = builder.with_kerberos_keytab(keytab.to_string_lossy().into_owned());
        }
        let overrides = observer_overrides(&hadoop_site());
        if !overrides.is_empty() {
            builder = builder.with_config(overrides);
        }
        let client = builder.build().map_err(|error| FsError::Client {
            fs: location.fs.clone(),
            error,
        })?;
        clients.insert(location.fs.clone(), client.clone());
        Ok(client)
    }

    fn io<'a>(op: &'static str, location: &'a Location) -> impl FnOnce(HdfsError) -> FsError + 'a {
        move |error| FsError::Io {
            op,
            location: location.to_string(),
            error,
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
                tracing::warn!(%from, %to, "the rename's reply was lost ({}); it landed", describe(&error));
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
                    tracing::warn!(%target, "the delete's reply was lost ({}); it landed", describe(&error));
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

    /// Changes the owner, the group, or both (`None` leaves it as it is).
    pub async fn set_owner(
        &self,
        target: &Location,
        owner: Option<&str>,
        group: Option<&str>,
    ) -> Result<(), FsError> {
        let client = self.client(target)?;
        client
            .set_owner(&target.path, owner, group)
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

    /// Owner, group, permission and ACL of a path (one call); `Ok(None)` when it does not
    /// exist. On a NameNode with ACLs disabled, the ACL is empty.
    pub async fn access(&self, target: &Location) -> Result<Option<Access>, FsError> {
        match self.acl_status(target).await? {
            AclRead::Status(a) => Ok(Some(Access {
                owner: a.owner,
                group: a.group,
                permission: a.permission,
                acl: a.entries,
            })),
            AclRead::Missing => Ok(None),
            AclRead::Disabled => Ok(self.status(target).await?.map(|s| Access {
                owner: s.owner,
                group: s.group,
                permission: s.permission,
                acl: vec![],
            })),
        }
    }

    /// The ACL entries of a path: empty when it has none (or is gone), `None` when the
    /// NameNode has ACLs disabled, so that no path has one.
    pub async fn acl(&self, target: &Location) -> Result<Option<Vec<AclEntry>>, FsError> {
        Self::acl_with(&self.client(target)?, target).await
    }

    /// [`Hdfs::acl`] through `client` (that of `target`'s filesystem), for a task that owns a
    /// clone of it.
    pub async fn acl_with(
        client: &Client,
        target: &Location,
    ) -> Result<Option<Vec<AclEntry>>, FsError> {
        Ok(match Self::acl_status_with(client, target).await? {
            AclRead::Status(a) => Some(a.entries),
            AclRead::Missing => Some(vec![]),
            AclRead::Disabled => None,
        })
    }

    /// One `getAclStatus`, its two expected failures told apart from the rest.
    async fn acl_status(&self, target: &Location) -> Result<AclRead, FsError> {
        Self::acl_status_with(&self.client(target)?, target).await
    }

    async fn acl_status_with(client: &Client, target: &Location) -> Result<AclRead, FsError> {
        match client.get_acl_status(&target.path).await {
            Ok(a) => Ok(AclRead::Status(a)),
            Err(HdfsError::FileNotFound(_)) => Ok(AclRead::Missing),
            Err(HdfsError::RPCError(class, _)) if class.ends_with("AclException") => {
                Ok(AclRead::Disabled)
            }
            Err(e) => Err(Self::io("reading the ACL of", target)(e)),
        }
    }

    /// Gives `target` the access `want`, as far as the user we act as may: ACL and permission
    /// first (its owner may set them), owner and group last (changing the owner takes an HDFS
    /// superuser; afterwards we may no longer be the owner). Returns what could not be set.
    pub async fn copy_access(&self, target: &Location, want: &Access) -> Vec<NotKept> {
        let now = match self.access(target).await {
            Ok(Some(now)) => now,
            Ok(None) => return vec![],
            Err(error) => {
                return vec![NotKept {
                    target: target.clone(),
                    what: "ACL",
                    error,
                }]
            }
        };
        let client = match self.client(target) {
            Ok(c) => c,
            Err(error) => {
                return vec![NotKept {
                    target: target.clone(),
                    what: "ACL",
                    error,
                }]
            }
        };
        let mut failed = Vec::new();
        let same_acl = same_acl(&now.acl, &want.acl);
        if !same_acl {
            // Replace rather than merge: entries the new path inherited from its parent's
            // default ACL, which the original lacks, must go.
            let replaced = async {
                if !now.acl.is_empty() {
                    client.remove_acl(&target.path).await?;
                }
                if !want.acl.is_empty() {
                    client
                        .modify_acl_entries(&target.path, want.acl.clone())
                        .await?;
                }
                Ok(())
            };
            if let Err(e) = replaced.await {
                failed.push(NotKept {
                    target: target.clone(),
                    what: "ACL",
                    error: Self::io("changing the ACL of", target)(e),
                });
            }
        }
        // A changed ACL recomputes the mask (the group bits): set the bits after it.
        if !same_acl || now.permission != want.permission {
            if let Err(error) = self.set_permission(target, want.permission).await {
                failed.push(NotKept {
                    target: target.clone(),
                    what: "permission",
                    error,
                });
            }
        }
        for (what, differs, owner, group) in [
            (
                "owner",
                now.owner != want.owner,
                Some(want.owner.as_str()),
                None,
            ),
            (
                "group",
                now.group != want.group,
                None,
                Some(want.group.as_str()),
            ),
        ] {
            if differs {
                if let Err(error) = self.set_owner(target, owner, group).await {
                    failed.push(NotKept {
                        target: target.clone(),
                        what,
                        error,
                    });
                }
            }
        }
        failed
    }

    /// Whether `a` is the directory `b` or lies below it, on the filesystem as it is, not as
    /// spelled: `hdfs://nn1:8020/x`, `hdfs://ns1/x` and `hdfs://127.0.0.1:8020/x` may all be
    /// one directory. HDFS has no directory aliases other than the filesystem's name (symlinks
    /// are disabled in Hadoop 2 and later), so with equal paths only the names are in question.
    /// The NameNode's inode id would settle it, but hdfs-native does not expose it, so (with
    /// [`Probe::Allowed`]) a hidden empty marker is created in `a` through `a`'s name and looked
    /// for through `b`'s, then removed; the answer is remembered per pair of names.
    pub async fn within(&self, a: &Location, b: &Location, probe: Probe) -> Result<bool, FsError> {
        let path_within =
            a.path == b.path || b.path == "/" || a.path.starts_with(&format!("{}/", b.path));
        if !path_within {
            return Ok(false);
        }
        if a.fs == b.fs {
            return Ok(true);
        }
        let key = if a.fs < b.fs {
            (a.fs.clone(), b.fs.clone())
        } else {
            (b.fs.clone(), a.fs.clone())
        };
        if let Some(&same) = self
            .namespaces
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&key)
        {
            return Ok(same);
        }
        if probe == Probe::ReadOnly {
            return Ok(true);
        }
        // A missing directory holds nothing to protect or to delete: no need to tell.
        if self.status(a).await?.is_none() {
            return Ok(true);
        }
        let marker = a.child(&format!(
            ".hive-orc-compactor-probe-{}",
            uuid::Uuid::new_v4().simple()
        ));
        self.create(&marker, 0o600)
            .await?
            .close()
            .await
            .map_err(Self::io("creating", &marker))?;
        let seen = Location {
            fs: b.fs.clone(),
            path: marker.path.clone(),
        };
        let same = self.status(&seen).await;
        self.delete(&marker, false).await?;
        let same = same?.is_some();
        self.namespaces
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(key, same);
        Ok(same)
    }

    /// Whether `a` and `b` are one directory (see [`Hdfs::within`]).
    pub async fn same_dir(
        &self,
        a: &Location,
        b: &Location,
        probe: Probe,
    ) -> Result<bool, FsError> {
        Ok(a.path == b.path && self.within(a, b, probe).await?)
    }

    /// The layout new files get in `dir`, learnt by writing a hidden probe of a few bytes there
    /// and asking how much space it consumes; the probe is removed.
    pub async fn new_file_layout(&self, dir: &Location) -> Result<Option<Layout>, FsError> {
        const PROBE: &[u8] = b"hive-orc-compactor erasure coding probe";
        let probe = dir.child(&format!(
            ".hive-orc-compactor-layout-{}",
            uuid::Uuid::new_v4().simple()
        ));
        let written = async {
            let mut writer = self.create(&probe, 0o600).await?;
            writer
                .write_bytes(Bytes::from_static(PROBE))
                .await
                .map_err(Self::io("writing", &probe))?;
            writer.close().await.map_err(Self::io("closing", &probe))?;
            let client = self.client(&probe)?;
            let status = client
                .get_file_info(&probe.path)
                .await
                .map_err(Self::io("reading the status of", &probe))?;
            let summary = client
                .get_content_summary(&probe.path)
                .await
                .map_err(Self::io("reading the content summary of", &probe))?;
            Ok::<_, FsError>((status, summary))
        }
        .await;
        let removed = self.delete(&probe, false).await;
        let (status, summary) = written?;
        removed?;
        tracing::debug!(
            %dir,
            length = status.length,
            replication = ?status.replication,
            consumed = summary.space_consumed,
            "layout probe"
        );
        Ok(layout_of(
            status.length as u64,
            u64::from(status.replication.unwrap_or(0)),
            summary.space_consumed,
        ))
    }

    /// The status of one path; `Ok(None)` when it does not exist.
    pub async fn status(&self, target: &Location) -> Result<Option<Entry>, FsError> {
        let client = self.client(target)?;
        match client.get_file_info(&target.path).await {
            Ok(s) => Ok(Some(Entry {
                name: target.path.rsplit('/').next().unwrap_or("").to_string(),
                length: s.length as u64,
                block_size: s.blocksize,
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
            Err(error) => {
                return Err(FsError::Io {
                    op: "listing",
                    location: dir.to_string(),
                    error,
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
                    block_size: s.blocksize,
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

/// In-memory directories: the double of [`Files`] for unit tests, whose calls can be made to
/// fail and whose directories can change while a test runs.
#[cfg(test)]
pub(crate) mod fake {
    use std::collections::BTreeMap;

    use futures::TryStreamExt;

    use super::*;

    #[derive(Default)]
    pub struct MemFiles {
        state: Mutex<State>,
    }

    #[derive(Default)]
    struct State {
        /// Directories by location, and the files in them.
        dirs: BTreeMap<String, Listing>,
        /// What [`Files::write_new`] wrote, by location.
        written: BTreeMap<String, Bytes>,
        /// Calls that fail: (`list`, `delete` or `write`, location).
        failing: Vec<(&'static str, String)>,
        /// Files that appear in a directory after its n-th listing: (directory, n, name).
        appearing: Vec<(String, usize, String)>,
        lists: BTreeMap<String, usize>,
        /// Every call, as `list <location>`, `delete <location>` or `write <location>`.
        calls: Vec<String>,
    }

    fn entry(name: &str, length: u64) -> Entry {
        Entry {
            name: name.into(),
            length,
            block_size: Some(128 << 20),
            modification_time: 1,
            owner: "hive".into(),
            group: "hive".into(),
            permission: 0o644,
        }
    }

    fn parent(location: &Location) -> (String, &str) {
        let (dir, name) = location
            .path
            .rsplit_once('/')
            .unwrap_or(("", &location.path));
        (format!("{}{dir}", location.fs), name)
    }

    impl MemFiles {
        fn state(&self) -> std::sync::MutexGuard<'_, State> {
            self.state.lock().unwrap()
        }

        pub fn mkdir(&self, dir: &Location) {
            self.state().dirs.entry(dir.to_string()).or_default();
        }

        /// A file of `length` bytes in `dir`.
        pub fn add_file(&self, dir: &Location, name: &str, length: u64) {
            let mut state = self.state();
            let listing = state.dirs.entry(dir.to_string()).or_default();
            listing.files.push(entry(name, length));
        }

        /// A file `name` appears in `dir` once it was listed `after` times.
        pub fn appears(&self, dir: &Location, after: usize, name: &str) {
            let appearing = (dir.to_string(), after, name.to_string());
            self.state().appearing.push(appearing);
        }

        /// Every `op` (`list`, `delete` or `write`) of `target`, or of anything in it, fails.
        pub fn fail(&self, op: &'static str, target: &Location) {
            self.state().failing.push((op, target.to_string()));
        }

        pub fn exists(&self, dir: &Location) -> bool {
            self.state().dirs.contains_key(&dir.to_string())
        }

        pub fn written(&self, file: &Location) -> Option<Bytes> {
            self.state().written.get(&file.to_string()).cloned()
        }

        pub fn calls(&self) -> Vec<String> {
            self.state().calls.clone()
        }

        /// The call `op` on `target`, logged; an error if it was made to fail.
        fn call(&self, op: &'static str, target: &Location) -> Result<(), FsError> {
            let mut state = self.state();
            state.calls.push(format!("{op} {target}"));
            let target_path = target.to_string();
            let under =
                |dir: &String| target_path == *dir || target_path.starts_with(&format!("{dir}/"));
            if state.failing.iter().any(|(o, dir)| *o == op && under(dir)) {
                return Err(FsError::Io {
                    op,
                    location: target.to_string(),
                    error: HdfsError::IOError(io::Error::other("injected")),
                });
            }
            Ok(())
        }
    }

    impl Files for MemFiles {
        async fn list(&self, dir: &Location) -> Result<Option<Listing>, FsError> {
            self.call("list", dir)?;
            let mut state = self.state();
            let key = dir.to_string();
            let n = *state
                .lists
                .entry(key.clone())
                .and_modify(|n| *n += 1)
                .or_insert(1);
            let due: Vec<String> = state
                .appearing
                .iter()
                .filter(|(d, after, _)| *d == key && n > *after)
                .map(|(_, _, name)| name.clone())
                .collect();
            state
                .appearing
                .retain(|(d, after, _)| !(*d == key && n > *after));
            if let Some(listing) = state.dirs.get_mut(&key) {
                listing.files.extend(due.iter().map(|name| entry(name, 1)));
            }
            Ok(state.dirs.get(&key).cloned())
        }

        async fn delete(&self, target: &Location, recursive: bool) -> Result<bool, FsError> {
            self.call("delete", target)?;
            let mut state = self.state();
            let key = target.to_string();
            let below = |k: &String| k.starts_with(&format!("{key}/"));
            let holds_something = state.written.keys().any(below)
                || state.dirs.keys().any(below)
                || state.dirs.get(&key).is_some_and(|l| {
                    !(l.files.is_empty() && l.subdirs.is_empty() && l.hidden.is_empty())
                });
            // As HDFS: a non-recursive delete of a directory that holds anything fails.
            if !recursive && holds_something {
                return Err(FsError::Io {
                    op: "delete",
                    location: key,
                    error: HdfsError::RPCError(
                        "org.apache.hadoop.fs.PathIsNotEmptyDirectoryException".into(),
                        "directory is not empty".into(),
                    ),
                });
            }
            let inside = |k: &String| *k == key || below(k);
            let existed = state.dirs.keys().any(inside) || state.written.keys().any(inside);
            state.dirs.retain(|k, _| !inside(k));
            state.written.retain(|k, _| !inside(k));
            Ok(existed)
        }

        async fn write_new(
            &self,
            file: &Location,
            chunks: impl Stream<Item = io::Result<Bytes>> + Send,
            _permission: u16,
        ) -> anyhow::Result<()> {
            self.call("write", file)?;
            let chunks: Vec<Bytes> = chunks.try_collect().await?;
            let bytes = Bytes::from(chunks.concat());
            let mut state = self.state();
            let (dir, name) = parent(file);
            let length = bytes.len() as u64;
            if state.written.insert(file.to_string(), bytes).is_some() {
                anyhow::bail!("{file} exists");
            }
            state
                .dirs
                .entry(dir)
                .or_default()
                .files
                .push(entry(name, length));
            Ok(())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The answers that need no NameNode: different paths, one spelling, and a read-only
    /// caller's two spellings (counted as one directory, the answer that deletes nothing).
    #[tokio::test]
    async fn within_answers_from_the_paths_where_it_can() {
        let hdfs = Hdfs::new();
        let l = |s: &str| Location::parse(s).unwrap();
        let home = l("hdfs://nn1:8020/w/t/dt=1");
        let run = l("hdfs://nn1:8020/w/t/dt=1/.hive-orc-compactor/r");
        let other = l("hdfs://ns1/w/t/dt=1");
        assert!(hdfs.within(&run, &home, Probe::ReadOnly).await.unwrap());
        assert!(!hdfs.within(&home, &run, Probe::Allowed).await.unwrap());
        assert!(!hdfs.same_dir(&run, &home, Probe::Allowed).await.unwrap());
        assert!(!hdfs
            .within(&l("hdfs://nn1:8020/w/t/dt=10"), &home, Probe::Allowed)
            .await
            .unwrap());
        assert!(hdfs.same_dir(&other, &home, Probe::ReadOnly).await.unwrap());
    }

    #[test]
    fn layouts_from_space_consumed() {
        // Replicated three times; once.
        assert_eq!(layout_of(40, 3, 120), Some(Layout::Replicated));
        assert_eq!(layout_of(40, 1, 40), Some(Layout::Replicated));
        // RS-6-3, RS-3-2, RS-10-4 and XOR-2-1 (striped files report replication 1).
        assert_eq!(layout_of(40, 1, 160), Some(Layout::Striped { parity: 3 }));
        assert_eq!(layout_of(40, 1, 120), Some(Layout::Striped { parity: 2 }));
        assert_eq!(layout_of(40, 1, 200), Some(Layout::Striped { parity: 4 }));
        assert_eq!(layout_of(40, 1, 80), Some(Layout::Striped { parity: 1 }));
        // Numbers that fit nothing.
        assert_eq!(layout_of(40, 1, 30), None);
        assert_eq!(layout_of(40, 1, 90), None);
        assert_eq!(layout_of(0, 1, 0), None);
        assert_eq!(
            layout_of(1, 1, 128 << 20),
            None,
            "a block counted at its preferred size"
        );
    }

    #[test]
    fn only_observer_nameservices_are_sent_to_the_active() {
        let site: std::collections::BTreeMap<String, String> = [
            ("dfs.client.failover.proxy.provider.ns1", OBSERVER_PROVIDER),
            ("dfs.client.failover.proxy.provider.ns2", FAILOVER_PROVIDER),
            ("dfs.nameservices", "ns1,ns2"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        assert_eq!(
            observer_overrides(&site),
            vec![(
                "dfs.client.failover.proxy.provider.ns1".to_string(),
                FAILOVER_PROVIDER.to_string()
            )]
        );
    }

    #[test]
    fn ambiguity_and_zone_refusals() {
        let rpc = |c: &str, m: &str| HdfsError::RPCError(c.into(), m.into());
        assert!(ambiguous(&HdfsError::IOError(io::Error::other("reset"))));
        assert!(ambiguous(&rpc(
            "org.apache.hadoop.ipc.StandbyException",
            ""
        )));
        assert!(!ambiguous(&rpc("java.io.FileNotFoundException", "")));
        assert!(!ambiguous(&HdfsError::FileNotFound("x".into())));
        let ez = rpc(
            "java.io.IOException",
            "/ez/t/k=1/f can't be moved from an encryption zone.",
        );
        assert_eq!(
            ez_rename_refusal(&ez).as_deref(),
            Some("/ez/t/k=1/f can't be moved from an encryption zone.")
        );
        let mounts =
            HdfsError::InvalidArgument("Cannot rename across different name services".into());
        assert!(ez_rename_refusal(&mounts).is_some());
        assert!(ez_rename_refusal(&rpc("java.io.IOException", "other")).is_none());
    }

    #[test]
    fn ancestors_nearest_first() {
        let l = Location::parse("hdfs://nn/ez/t/k=1").unwrap();
        let got: Vec<String> = ancestors(&l).iter().map(|a| a.path.clone()).collect();
        assert_eq!(got, ["/ez/t", "/ez", "/"]);
    }

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
