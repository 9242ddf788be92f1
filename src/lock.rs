//! The metastore lock around a compaction: an EXCLUSIVE partition lock, taken before the
//! snapshot and held until the swap and the journal are done, so Hive writers that use the lock
//! manager (and other compactor runs) wait for us, and we for them.
//!
//! The lock is what Hive's `DbTxnManager` takes for an `INSERT OVERWRITE` of a partition of a
//! non-transactional table: type EXCLUSIVE, level PARTITION, operation NO_TXN, not
//! transactional, no transaction id. Such a lock lives as long as it is heartbeated: a process
//! killed with the lock held leaves it until the metastore times it out (`hive.txn.timeout`,
//! default 300 s), and until then other runs on the partition are busy.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::metastore::{
    DataOperationType, LockComponent, LockLevel, LockRequest, LockResponse, LockState, LockType,
    Metastore, MetastoreError,
};

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
}

/// A minute: long enough for a Hive statement's commit to finish, short enough that a
/// selection does not stall on partitions a job is writing (they are busy, retried next run).
pub const DEFAULT_WAIT: Duration = Duration::from_secs(60);
pub const DEFAULT_HEARTBEAT: Duration = Duration::from_secs(60);

impl Default for LockOptions {
    fn default() -> Self {
        LockOptions {
            mode: LockMode::IfSupported,
            wait: DEFAULT_WAIT,
            heartbeat: DEFAULT_HEARTBEAT,
            user: crate::hdfs::hadoop_user(None),
            hostname: whoami::hostname().unwrap_or_else(|_| "unknown".into()),
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
pub struct PartitionLock {
    metastore: Metastore,
    id: i64,
    heartbeat: JoinHandle<()>,
    lost: Arc<Mutex<Option<String>>>,
    released: bool,
}

/// Takes the lock per `options`. `Ok(None)`: no lock is held (not asked for, or, with a
/// warning pushed to `warnings`, not supported by this metastore).
pub async fn acquire(
    metastore: &Metastore,
    target: &Target<'_>,
    options: &LockOptions,
    cancel: &CancellationToken,
    warnings: &mut Vec<String>,
) -> Result<Option<PartitionLock>, LockError> {
    if options.mode == LockMode::Off {
        return Ok(None);
    }
    let request = LockRequest {
        component: vec![LockComponent {
            type_: LockType::EXCLUSIVE,
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
        }],
        txnid: None,
        user: options.user.clone(),
        hostname: options.hostname.clone(),
        agent_info: Some(format!("hive-orc-compactor {}", env!("CARGO_PKG_VERSION"))),
        zero_wait_read_enabled: None,
        exclusive_c_t_a_s: None,
        lockless_reads_enabled: None,
    };
    let response = match metastore.lock(request).await {
        Ok(r) => r,
        // HMS without transaction support fails inside `lock` ("Internal error processing
        // lock"); very old or stripped-down servers may not know the call at all.
        Err(e @ (MetastoreError::Internal { .. } | MetastoreError::UnknownMethod { .. })) => {
            if options.mode == LockMode::Required {
                return Err(LockError::Unsupported(e));
            }
            tracing::debug!("lock: {e}");
            warnings.push("metastore has no lock manager; running without a lock".into());
            return Ok(None);
        }
        Err(e) => return Err(LockError::Failed(e.to_string())),
    };
    let id = response.lockid;
    match wait_for(metastore, response, options.wait, cancel).await {
        Ok(()) => Ok(Some(PartitionLock::held(metastore, id, options.heartbeat))),
        Err(e) => {
            // A waiting request queues ahead of later ones: withdraw it.
            if let Err(u) = metastore.unlock(id).await {
                tracing::warn!("withdrawing lock request {id}: {u}");
            }
            Err(e)
        }
    }
}

/// Polls a waiting lock with backoff (100 ms doubling to 5 s) until it is acquired, `wait`
/// has passed, or the run is cancelled. Each poll also keeps the waiting request alive.
async fn wait_for(
    metastore: &Metastore,
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

impl PartitionLock {
    fn held(metastore: &Metastore, id: i64, every: Duration) -> Self {
        let lost = Arc::new(Mutex::new(None));
        let heartbeat = tokio::spawn(heartbeat(metastore.clone(), id, every, lost.clone()));
        PartitionLock {
            metastore: metastore.clone(),
            id,
            heartbeat,
            lost,
            released: false,
        }
    }

    /// Why the lock is no longer held (the metastore timed it out or aborted it), if it is not.
    pub fn lost(&self) -> Option<String> {
        self.lost.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Stops the heartbeat and unlocks. A failure is returned for a warning: the metastore
    /// times the lock out anyway once heartbeats stop.
    pub async fn release(mut self) -> Result<(), MetastoreError> {
        self.heartbeat.abort();
        self.released = true;
        match self.metastore.unlock(self.id).await {
            // Already gone (timed out): nothing is held.
            Ok(()) | Err(MetastoreError::NotFound { .. }) => Ok(()),
            Err(e) => Err(e),
        }
    }
}

impl Drop for PartitionLock {
    fn drop(&mut self) {
        self.heartbeat.abort();
        if self.released {
            return;
        }
        let (metastore, id) = (self.metastore.clone(), self.id);
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move {
                if let Err(e) = metastore.unlock(id).await {
                    tracing::warn!("unlocking metastore lock {id}: {e}");
                }
            });
        }
    }
}

async fn heartbeat(
    metastore: Metastore,
    id: i64,
    every: Duration,
    lost: Arc<Mutex<Option<String>>>,
) {
    loop {
        tokio::time::sleep(every).await;
        match metastore.heartbeat(id).await {
            Ok(()) => {}
            // The lock is gone (timed out, or aborted by an admin): say so and stop.
            Err(e @ MetastoreError::NotFound { .. }) => {
                *lost.lock().unwrap_or_else(|p| p.into_inner()) = Some(e.to_string());
                return;
            }
            // A transient failure: the next beat may get through before the timeout.
            Err(e) => tracing::warn!("heartbeat of metastore lock {id}: {e}"),
        }
    }
}
