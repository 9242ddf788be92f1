//! Metastore locks as Hive's lock manager knows them. A compaction holds one from before the
//! snapshot until the swap and the journal are done, so Hive writers that use the lock manager
//! (and other compactor runs) wait for us, and we for them; in two steps, so that readers need
//! not wait through a whole run: a staging lock ([`acquire_staging`]) that keeps writers out and
//! lets readers (SHARED_READ) in, and EXCLUSIVE ([`PartitionLock::upgrade`]) only around the
//! re-check and the swap ([`acquire`] takes EXCLUSIVE from the start). The staging lock's type
//! depends on the metastore's lock manager (TxnHandler's compatibility rules):
//! - HMS 4.x: EXCL_WRITE. It waits for every lock but SHARED_READ, and every lock but
//!   SHARED_READ waits for it (SHARED_WRITE no longer excludes SHARED_WRITE there).
//! - HMS 3.1: no EXCL_WRITE (its LockType has SHARED_READ, SHARED_WRITE, EXCLUSIVE only);
//!   SHARED_WRITE does the same there: a SHARED_READ request is granted beside it, SHARED_WRITE
//!   and EXCLUSIVE requests wait for it. HMS 3.1 cannot read EXCL_WRITE off the wire (it
//!   drops the connection), after which SHARED_WRITE is asked for.
//!
//! EXCLUSIVE is what Hive's `DbTxnManager` takes for an `INSERT OVERWRITE` of a partition of a
//! non-transactional table: type EXCLUSIVE, level PARTITION, operation NO_TXN, not
//! transactional, no transaction id. Such a lock lives as long as it is heartbeated: a process
//! killed with the lock held leaves it until the metastore times it out (`hive.txn.timeout`,
//! default 300 s), and until then other runs on the partition are busy.
//!
//! A lock call that gets no answer (the metastore or its database is slow, or the connection
//! broke mid-call) may still have been granted: such a lock is not heartbeated, yet it would
//! keep Hive's writers waiting until the metastore times it out. Every request carries an
//! agent info of its own, so after such a call the tool lists the partition's locks
//! (`show_locks`, what `SHOW LOCKS` reads), releases the one it finds, and reports the
//! partition busy (retry later: nothing was changed, and a slow metastore is a passing state).
//! A call still queued inside the metastore when we look can create its lock afterwards; that
//! one is never heartbeated and goes at the metastore's transaction timeout.
//!
//! Here: asking for a lock and settling unanswered calls; `held`: a granted lock's heartbeat,
//! upgrade and release.

mod held;
#[cfg(test)]
mod tests;

use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::metastore::{
    DataOperationType, LockComponent, LockLevel, LockRequest, LockResponse, LockState, LockType,
    Metastore, MetastoreError, ShowLocksResponseElement,
};

/// The target of this module's log lines, the same from each of its files, as before they
/// were split: what users filter and read them by.
const LOG_TARGET: &str = "hive_orc_compactor::lock";

/// Whether to lock, and what to do where the metastore cannot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LockMode {
    /// `--no-lock`: run without a lock.
    Off,
    /// Lock; on a metastore without a lock manager, warn and run without.
    IfSupported,
    /// `--require-lock`: lock, and fail where the metastore cannot.
    Required,
}

#[derive(Debug, Clone)]
pub struct LockOptions {
    pub mode: LockMode,
    /// How long to wait for a lock someone else holds before giving up as busy (zero: not at
    /// all).
    pub wait: Duration,
    /// How often the held lock is heartbeated. Half of Hive's default `hive.txn.timeout`
    /// (300 s) would do; a shorter interval survives a missed beat.
    pub heartbeat: Duration,
    /// Who holds the lock, as `SHOW LOCKS` shows it: the Hadoop user we act as, and this host.
    pub user: String,
    pub hostname: String,
    /// The metastore's `hive.txn.timeout`: a lock not heartbeated for this long is gone.
    pub txn_timeout: Duration,
}

/// A minute: long enough for a Hive statement's commit to finish, short enough that a
/// selection does not stall on partitions a job is writing (they are busy, retried next run).
pub const DEFAULT_WAIT: Duration = Duration::from_secs(60);
pub const DEFAULT_HEARTBEAT: Duration = Duration::from_secs(60);
/// Hive's default `hive.txn.timeout`.
pub const DEFAULT_TXN_TIMEOUT: Duration = Duration::from_secs(300);
/// How long a run that is done keeps asking a metastore that does not answer to release its
/// lock. Two minutes rides out a metastore restart or a database failover without holding a
/// run (or a `--parallel` worker) for the whole transaction timeout.
pub const RELEASE_RETRY: Duration = Duration::from_secs(120);

impl Default for LockOptions {
    fn default() -> Self {
        LockOptions {
            mode: LockMode::IfSupported,
            wait: DEFAULT_WAIT,
            heartbeat: DEFAULT_HEARTBEAT,
            user: crate::hdfs::hadoop_user(None),
            hostname: whoami::hostname().unwrap_or_else(|_| "unknown".into()),
            txn_timeout: DEFAULT_TXN_TIMEOUT,
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum LockError {
    /// Someone else holds a lock on the partition (or its table) and did not let go in time.
    #[error("the partition is locked in the metastore{}; waited {:.1}s, retry later", holder.as_deref().map(|h| format!(" ({h})")).unwrap_or_default(), waited.as_secs_f64())]
    Busy {
        holder: Option<String>,
        waited: Duration,
    },
    #[error("the metastore has no lock manager and --require-lock was given: {0}")]
    Unsupported(MetastoreError),
    #[error("cancelled while waiting for the metastore lock")]
    Interrupted,
    #[error("taking the metastore lock: {0}")]
    Failed(String),
    /// The metastore no longer holds the lock (timed out, aborted, or heartbeats failed for
    /// longer than its transaction timeout).
    #[error("the metastore lock was lost ({0}); retry later")]
    Lost(String),
    /// The lock call got no answer in time; any lock it was granted has been released.
    #[error("{call}; {settled}; the metastore is overloaded or its database slow: retry later")]
    Unanswered {
        call: MetastoreError,
        settled: String,
    },
}

/// The metastore calls a lock makes: the seam where its rules are unit-tested without a
/// metastore ([`Metastore`] in production). A held lock heartbeats from a task of its own,
/// which gets a clone.
pub trait LockService: Clone + Send + Sync + 'static {
    fn lock(
        &self,
        request: LockRequest,
    ) -> impl Future<Output = Result<LockResponse, MetastoreError>> + Send;
    fn check_lock(
        &self,
        id: i64,
    ) -> impl Future<Output = Result<LockResponse, MetastoreError>> + Send;
    fn heartbeat(&self, id: i64) -> impl Future<Output = Result<(), MetastoreError>> + Send;
    fn unlock(&self, id: i64) -> impl Future<Output = Result<(), MetastoreError>> + Send;
    /// The locks on the target, as `SHOW LOCKS` lists them.
    fn show_locks(
        &self,
        target: &Target<'_>,
    ) -> impl Future<Output = Result<Vec<ShowLocksResponseElement>, MetastoreError>> + Send;
    /// A new connection, after a call that may have left the old one unusable.
    fn reconnect(&self) -> impl Future<Output = ()> + Send;
}

impl LockService for Metastore {
    fn lock(
        &self,
        request: LockRequest,
    ) -> impl Future<Output = Result<LockResponse, MetastoreError>> + Send {
        Metastore::lock(self, request)
    }

    fn check_lock(
        &self,
        id: i64,
    ) -> impl Future<Output = Result<LockResponse, MetastoreError>> + Send {
        Metastore::check_lock(self, id)
    }

    fn heartbeat(&self, id: i64) -> impl Future<Output = Result<(), MetastoreError>> + Send {
        Metastore::heartbeat(self, id)
    }

    fn unlock(&self, id: i64) -> impl Future<Output = Result<(), MetastoreError>> + Send {
        Metastore::unlock(self, id)
    }

    fn show_locks(
        &self,
        target: &Target<'_>,
    ) -> impl Future<Output = Result<Vec<ShowLocksResponseElement>, MetastoreError>> + Send {
        Metastore::show_locks(self, target.db, target.table, target.partition)
    }

    fn reconnect(&self) -> impl Future<Output = ()> + Send {
        Metastore::reconnect(self)
    }
}

/// What to lock.
pub struct Target<'a> {
    pub db: &'a str,
    pub table: &'a str,
    /// The escaped partition name, `k1=v1/k2=v2`, as the metastore names it; empty for a
    /// lock on the whole table (as Hive takes for DDL on it).
    pub partition: &'a str,
}

/// A held lock, heartbeated until [`PartitionLock::release`]. Dropped without release (a
/// panic, a cancelled future), it stops heartbeating and unlocks in the background, best effort.
pub struct PartitionLock<M: LockService = Metastore> {
    metastore: M,
    id: i64,
    /// What the lock is: the staging lock's type, or EXCLUSIVE.
    kind: LockType,
    /// How the lock was asked for, to ask for EXCLUSIVE the same way on upgrade.
    request: LockRequest,
    options: LockOptions,
    heartbeat: JoinHandle<()>,
    lost: Arc<Mutex<Option<String>>>,
    released: bool,
}

/// Takes the lock per `options`. `Ok(None)`: no lock is held (not asked for, or, with a
/// warning pushed to `warnings`, not supported by this metastore).
pub async fn acquire<M: LockService>(
    metastore: &M,
    target: &Target<'_>,
    options: &LockOptions,
    cancel: &CancellationToken,
    warnings: &mut Vec<String>,
) -> Result<Option<PartitionLock<M>>, LockError> {
    let kinds = [LockType::EXCLUSIVE];
    take(
        metastore,
        std::slice::from_ref(target),
        &kinds,
        options,
        cancel,
        warnings,
    )
    .await
}

/// Takes the staging lock per `options`: writers wait for it, SHARED_READ readers do not (see
/// the module's notes for the type per metastore version). `Ok(None)` as for [`acquire`].
pub async fn acquire_staging<M: LockService>(
    metastore: &M,
    target: &Target<'_>,
    options: &LockOptions,
    cancel: &CancellationToken,
    warnings: &mut Vec<String>,
) -> Result<Option<PartitionLock<M>>, LockError> {
    // EXCL_WRITE first (HMS 4). HMS 3.1 cannot read it: its Thrift server fails to parse the
    // request, answers with an application error and leaves the rest of the request unread,
    // so the connection is unusable (no lock is made; seen with 3.1.3). A server without a
    // lock manager fails inside the call. Either way SHARED_WRITE is asked next, on a new
    // connection; it settles which of the two this server is.
    acquire_staging_batch(
        metastore,
        std::slice::from_ref(target),
        options,
        cancel,
        warnings,
    )
    .await
}

/// [`acquire_staging`] for several partitions in one request, which the metastore grants
/// whole or not at all: one lock held (heartbeated, upgraded, released) for all of them.
pub async fn acquire_staging_batch<M: LockService>(
    metastore: &M,
    targets: &[Target<'_>],
    options: &LockOptions,
    cancel: &CancellationToken,
    warnings: &mut Vec<String>,
) -> Result<Option<PartitionLock<M>>, LockError> {
    let kinds = [LockType::EXCL_WRITE, LockType::SHARED_WRITE];
    take(metastore, targets, &kinds, options, cancel, warnings).await
}

/// Asks for a lock of the first of `kinds` the server takes, trying the next (on a new
/// connection) after a failure that may mean the server could not read the type.
async fn take<M: LockService>(
    metastore: &M,
    targets: &[Target<'_>],
    kinds: &[LockType],
    options: &LockOptions,
    cancel: &CancellationToken,
    warnings: &mut Vec<String>,
) -> Result<Option<PartitionLock<M>>, LockError> {
    if options.mode == LockMode::Off {
        return Ok(None);
    }
    for (i, &kind) in kinds.iter().enumerate() {
        let request = request_batch(targets, kind, options);
        let e = match metastore.lock(request.clone()).await {
            Ok(response) => {
                return granted(metastore, response, (request, kind), options, cancel).await
            }
            Err(e) => e,
        };
        let settled = if unanswered(&e) {
            metastore.reconnect().await;
            settle_unanswered(metastore, &request_target(&request), &request, &e).await?
        } else {
            String::new()
        };
        if matches!(e, MetastoreError::Timeout { .. }) {
            return Err(LockError::Unanswered { call: e, settled });
        }
        let unreadable = matches!(
            e,
            MetastoreError::Internal { .. }
                | MetastoreError::ConnectionLost { .. }
                | MetastoreError::Protocol { .. }
        );
        if i + 1 == kinds.len() || !unreadable {
            return unsupported(e, options, warnings);
        }
        tracing::debug!("{kind:?} lock, trying {:?}: {e}", kinds[i + 1]);
        if settled.is_empty() {
            metastore.reconnect().await;
        }
    }
    unreachable!("the last kind returns above")
}

/// A lock call whose request may have reached the metastore but whose answer did not reach us.
fn unanswered(e: &MetastoreError) -> bool {
    matches!(
        e,
        MetastoreError::Timeout {
            outcome_unknown: true,
            ..
        } | MetastoreError::ConnectionLost {
            outcome_unknown: true,
            ..
        }
    )
}

/// After an unanswered lock call: finds a lock the metastore granted to `request` (by its
/// agent info, unique to the request) and releases it, so that it does not keep Hive's
/// writers waiting until the metastore's transaction timeout. Says what it did, for the
/// error; fails when it cannot tell, naming what an admin should look for.
async fn settle_unanswered<M: LockService>(
    metastore: &M,
    target: &Target<'_>,
    request: &LockRequest,
    call: &MetastoreError,
) -> Result<String, LockError> {
    let agent = request.agent_info.as_deref().unwrap_or_default();
    let orphan_hint = || {
        format!(
            "a lock with agent info '{agent}' may remain on {}.{} {} until the metastore's \
             transaction timeout (hive.txn.timeout): SHOW LOCKS lists it",
            target.db, target.table, target.partition
        )
    };
    let locks = metastore.show_locks(target).await.map_err(|show| {
        LockError::Failed(format!(
            "{call}; whether it was granted cannot be told ({show}); {}",
            orphan_hint()
        ))
    })?;
    let ours: Vec<i64> = locks
        .iter()
        .filter(|l| l.agent_info.as_deref() == Some(agent))
        .map(|l| l.lockid)
        .collect();
    for &id in &ours {
        match metastore.unlock(id).await {
            Ok(()) | Err(MetastoreError::NotFound { .. }) => {
                tracing::warn!(
                    "released metastore lock {id}, granted to a lock call that got no answer"
                );
            }
            Err(e) => {
                return Err(LockError::Failed(format!(
                    "{call}; the metastore granted it as lock {id}, which could not be \
                     released ({e}); {}",
                    orphan_hint()
                )))
            }
        }
    }
    Ok(match ours.as_slice() {
        [] => "the metastore holds no lock from that call".to_owned(),
        ids => format!("the metastore had granted it (lock {ids:?}), now released"),
    })
}

/// A lock request as the tool makes it: one partition, no transaction, `user@hostname` of
/// `options` as its holder. Public so tests can act as another client.
pub fn request(target: &Target<'_>, kind: LockType, options: &LockOptions) -> LockRequest {
    request_batch(std::slice::from_ref(target), kind, options)
}

/// [`request`] for several partitions at once, a component each.
fn request_batch(targets: &[Target<'_>], kind: LockType, options: &LockOptions) -> LockRequest {
    LockRequest {
        component: targets
            .iter()
            .map(|target| LockComponent {
                type_: kind,
                level: if target.partition.is_empty() {
                    LockLevel::TABLE
                } else {
                    LockLevel::PARTITION
                },
                dbname: target.db.to_owned(),
                tablename: Some(target.table.to_owned()),
                partitionname: Some(target.partition.to_owned()).filter(|p| !p.is_empty()),
                operation_type: Some(DataOperationType::NO_TXN),
                is_transactional: Some(false),
                is_dynamic_partition_write: Some(false),
            })
            .collect(),
        txnid: None,
        user: options.user.clone(),
        hostname: options.hostname.clone(),
        agent_info: request_agent_info(),
        zero_wait_read_enabled: None,
        exclusive_c_t_a_s: None,
        lockless_reads_enabled: None,
    }
}

/// Unique per request: after a call that got no answer, the lock it may have been granted is
/// found by this (see the module's notes). `SHOW LOCKS` shows it as who holds the lock.
fn request_agent_info() -> Option<String> {
    Some(format!(
        "hive-orc-compactor {} {}",
        env!("CARGO_PKG_VERSION"),
        uuid::Uuid::new_v4().simple()
    ))
}

/// What a request of ours locks: its first component, which is enough to find the request in
/// `SHOW LOCKS` by its agent info.
fn request_target(request: &LockRequest) -> Target<'_> {
    let component = request.component.first();
    Target {
        db: component.map_or("", |c| c.dbname.as_str()),
        table: component.and_then(|c| c.tablename.as_deref()).unwrap_or(""),
        partition: component
            .and_then(|c| c.partitionname.as_deref())
            .unwrap_or(""),
    }
}

/// A failed lock call: no lock manager (a warning, or an error with `--require-lock`), or
/// another failure.
fn unsupported<M: LockService>(
    e: MetastoreError,
    options: &LockOptions,
    warnings: &mut Vec<String>,
) -> Result<Option<PartitionLock<M>>, LockError> {
    match e {
        // HMS without transaction support fails inside `lock` ("Internal error processing
        // lock"); very old or stripped-down servers may not know the call at all.
        e @ (MetastoreError::Internal { .. } | MetastoreError::UnknownMethod { .. }) => {
            if options.mode == LockMode::Required {
                return Err(LockError::Unsupported(e));
            }
            tracing::debug!("lock: {e}");
            warnings.push("metastore has no lock manager; running without a lock".into());
            Ok(None)
        }
        e => Err(LockError::Failed(e.to_string())),
    }
}

/// Waits for a requested lock and starts heartbeating it; withdraws it when it is not granted.
async fn granted<M: LockService>(
    metastore: &M,
    response: LockResponse,
    (request, kind): (LockRequest, LockType),
    options: &LockOptions,
    cancel: &CancellationToken,
) -> Result<Option<PartitionLock<M>>, LockError> {
    let id = response.lockid;
    match wait_for(metastore, response, options.wait, cancel).await {
        Ok(()) => Ok(Some(PartitionLock::held(
            metastore, id, kind, request, options,
        ))),
        Err(e) => {
            withdraw(metastore, id).await;
            Err(e)
        }
    }
}

/// A waiting request queues ahead of later ones: withdraw it.
async fn withdraw(metastore: &impl LockService, id: i64) {
    if let Err(u) = metastore.unlock(id).await {
        tracing::warn!("withdrawing lock request {id}: {u}");
    }
}

/// Polls a waiting lock with backoff (100 ms doubling to 5 s) until it is acquired, `wait`
/// has passed, or the run is cancelled. Each poll also keeps the waiting request alive.
async fn wait_for(
    metastore: &impl LockService,
    mut response: LockResponse,
    wait: Duration,
    cancel: &CancellationToken,
) -> Result<(), LockError> {
    let started = Instant::now();
    let mut pause = Duration::from_millis(100);
    loop {
        match response.state {
            LockState::ACQUIRED => return Ok(()),
            LockState::WAITING | LockState::NOT_ACQUIRED => {}
            other => {
                return Err(LockError::Failed(format!(
                    "the metastore answered {other:?}{}",
                    response
                        .error_message
                        .map(|m| format!(": {m}"))
                        .unwrap_or_default()
                )))
            }
        }
        let waited = started.elapsed();
        if waited >= wait {
            return Err(LockError::Busy {
                holder: response.error_message,
                waited,
            });
        }
        tokio::select! {
            _ = cancel.cancelled() => return Err(LockError::Interrupted),
            _ = tokio::time::sleep(pause.min(wait - waited)) => {}
        }
        pause = (pause * 2).min(Duration::from_secs(5));
        response = metastore
            .check_lock(response.lockid)
            .await
            .map_err(|e| LockError::Failed(e.to_string()))?;
    }
}
