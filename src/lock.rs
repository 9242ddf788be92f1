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

use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use crate::metastore::{
    DataOperationType, LockComponent, LockLevel, LockRequest, LockResponse, LockState, LockType,
    Metastore, MetastoreError, ShowLocksResponseElement,
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
    take(metastore, target, &kinds, options, cancel, warnings).await
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
    let kinds = [LockType::EXCL_WRITE, LockType::SHARED_WRITE];
    take(metastore, target, &kinds, options, cancel, warnings).await
}

/// Asks for a lock of the first of `kinds` the server takes, trying the next (on a new
/// connection) after a failure that may mean the server could not read the type.
async fn take<M: LockService>(
    metastore: &M,
    target: &Target<'_>,
    kinds: &[LockType],
    options: &LockOptions,
    cancel: &CancellationToken,
    warnings: &mut Vec<String>,
) -> Result<Option<PartitionLock<M>>, LockError> {
    if options.mode == LockMode::Off {
        return Ok(None);
    }
    for (i, &kind) in kinds.iter().enumerate() {
        let request = request(target, kind, options);
        let e = match metastore.lock(request.clone()).await {
            Ok(response) => {
                return granted(metastore, response, (request, kind), options, cancel).await
            }
            Err(e) => e,
        };
        let settled = if unanswered(&e) {
            metastore.reconnect().await;
            settle_unanswered(metastore, target, &request, &e).await?
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
    LockRequest {
        component: vec![LockComponent {
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
        }],
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

/// What a request of ours locks (one component, made by [`request`]).
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

impl<M: LockService> PartitionLock<M> {
    fn held(
        metastore: &M,
        id: i64,
        kind: LockType,
        request: LockRequest,
        options: &LockOptions,
    ) -> Self {
        let lost = Arc::new(Mutex::new(None));
        // In the caller's span: a heartbeat's warnings name the partition.
        let heartbeat = tokio::spawn(
            heartbeat(
                metastore.clone(),
                id,
                options.heartbeat,
                options.txn_timeout,
                lost.clone(),
            )
            .in_current_span(),
        );
        PartitionLock {
            metastore: metastore.clone(),
            id,
            kind,
            request,
            options: options.clone(),
            heartbeat,
            lost,
            released: false,
        }
    }

    /// The lock's type as the metastore holds it.
    pub fn kind(&self) -> LockType {
        self.kind
    }

    /// Turns a staging lock into EXCLUSIVE, for the re-check and the swap: releases the staging
    /// lock, then asks for EXCLUSIVE (waiting up to the options' `wait` for anyone who got in
    /// between). A writer may take the partition in that moment; the re-check under EXCLUSIVE
    /// sees what it wrote and the run is busy, as for a writer that was already queued behind
    /// the staging lock. Asking for EXCLUSIVE first would leave the request waiting behind our
    /// own lock in every run, to be polled with `check_lock`; on Hive 4.0.1's embedded Derby a
    /// `check_lock` beside another client's `lock` deadlocks in the metastore's database (its
    /// `lock` keeps the enqueue uncommitted while it retries its check: ten rounds of a 60 s
    /// Derby lock wait, and both calls time out). On error no lock is held any more: the run
    /// must not swap.
    pub async fn upgrade(&mut self, cancel: &CancellationToken) -> Result<(), LockError> {
        if self.kind == LockType::EXCLUSIVE {
            return Ok(());
        }
        if let Some(why) = self.lost() {
            return Err(LockError::Lost(why));
        }
        self.heartbeat.abort();
        self.released = true;
        match unlock_patiently(&self.metastore, self.id).await {
            Ok(()) => {}
            // The metastore timed it out: writers may have been in since.
            Err(e @ MetastoreError::NotFound { .. }) => return Err(LockError::Lost(e.to_string())),
            Err(e) => {
                // Still held, as far as we know: `release` tries again.
                self.released = false;
                return Err(LockError::Failed(format!(
                    "releasing the staging lock for EXCLUSIVE: {e}"
                )));
            }
        }
        let mut request = self.request.clone();
        for c in &mut request.component {
            c.type_ = LockType::EXCLUSIVE;
        }
        request.agent_info = request_agent_info();
        let response = match self.metastore.lock(request.clone()).await {
            Ok(response) => response,
            Err(e) if unanswered(&e) => {
                self.metastore.reconnect().await;
                let target = request_target(&request);
                let settled = settle_unanswered(&self.metastore, &target, &request, &e).await?;
                return Err(LockError::Unanswered { call: e, settled });
            }
            Err(e) => return Err(LockError::Failed(e.to_string())),
        };
        let exclusive = response.lockid;
        if let Err(e) = wait_for(&self.metastore, response, self.options.wait, cancel).await {
            withdraw(&self.metastore, exclusive).await;
            return Err(e);
        }
        *self = PartitionLock::held(
            &self.metastore,
            exclusive,
            LockType::EXCLUSIVE,
            request,
            &self.options,
        );
        Ok(())
    }

    /// Why the lock is no longer held (the metastore timed it out or aborted it), if it is not.
    pub fn lost(&self) -> Option<String> {
        self.lost.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Stops the heartbeat and unlocks. A metastore that cannot answer (down, or its database
    /// down) is asked again for up to [`RELEASE_RETRY`]: until the metastore times the lock
    /// out (`hive.txn.timeout`, 300 s by default), it keeps Hive's writers waiting, and a
    /// metastore back within that time frees them at once. A failure after that is returned
    /// for a warning: the metastore times the lock out anyway once heartbeats stop. The
    /// upgrade to EXCLUSIVE releases the staging lock the same way.
    pub async fn release(mut self) -> Result<(), MetastoreError> {
        self.heartbeat.abort();
        self.released = true;
        match unlock_patiently(&self.metastore, self.id).await {
            // Already gone (timed out, or an earlier attempt went through): nothing is held.
            Ok(()) | Err(MetastoreError::NotFound { .. }) => Ok(()),
            Err(e) => Err(e),
        }
    }
}

/// Unlocks, asking again (backing off) for up to [`RELEASE_RETRY`] while the metastore cannot
/// answer: a metastore restarted or a database failing over gives the lock back within that
/// time. What the metastore answers (`NotFound` included) ends it.
async fn unlock_patiently(metastore: &impl LockService, id: i64) -> Result<(), MetastoreError> {
    let started = Instant::now();
    let mut pause = Duration::from_secs(1);
    loop {
        match metastore.unlock(id).await {
            Err(e)
                if !matches!(e, MetastoreError::NotFound { .. })
                    && started.elapsed() + pause < RELEASE_RETRY =>
            {
                tracing::warn!(
                    "releasing metastore lock {id}: {e}; trying again in {}s",
                    pause.as_secs()
                );
            }
            result => return result,
        }
        tokio::time::sleep(pause).await;
        pause = (pause * 2).min(Duration::from_secs(15));
    }
}

impl<M: LockService> Drop for PartitionLock<M> {
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
    metastore: impl LockService,
    id: i64,
    every: Duration,
    txn_timeout: Duration,
    lost: Arc<Mutex<Option<String>>>,
) {
    let mut beats = Beats::new(txn_timeout, Instant::now());
    loop {
        tokio::time::sleep(every).await;
        let result = metastore.heartbeat(id).await;
        if let Err(e) = &result {
            tracing::warn!("heartbeat of metastore lock {id}: {e}");
        }
        if let Some(why) = beats.after(result, Instant::now()) {
            *lost.lock().unwrap_or_else(|p| p.into_inner()) = Some(why);
            return;
        }
    }
}

/// Whether a heartbeated lock still stands: the metastore says it is gone, or no heartbeat got
/// through for longer than the metastore's transaction timeout (it has timed the lock out,
/// whether or not we hear of it).
struct Beats {
    txn_timeout: Duration,
    last_ok: Instant,
}

impl Beats {
    fn new(txn_timeout: Duration, now: Instant) -> Self {
        Beats {
            txn_timeout,
            last_ok: now,
        }
    }

    /// Why the lock is lost after a heartbeat that ended with `result` at `now`, if it is.
    fn after(&mut self, result: Result<(), MetastoreError>, now: Instant) -> Option<String> {
        match result {
            Ok(()) => {
                self.last_ok = now;
                None
            }
            Err(e @ MetastoreError::NotFound { .. }) => Some(e.to_string()),
            Err(e) => {
                let silent = now.saturating_duration_since(self.last_ok);
                (silent >= self.txn_timeout).then(|| {
                    format!(
                        "no heartbeat got through for {}s, longer than the metastore's \
                         transaction timeout ({}s, hive.txn.timeout); last: {e}",
                        silent.as_secs(),
                        self.txn_timeout.as_secs()
                    )
                })
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn broken() -> MetastoreError {
        MetastoreError::Unreachable {
            uris: "thrift://a:9083".into(),
            last_error: "refused".into(),
        }
    }

    /// A metastore's lock manager whose answers a test scripts; clones share it.
    #[derive(Clone, Default)]
    struct FakeLocks(Arc<Mutex<Script>>);

    #[derive(Default)]
    struct Script {
        /// Answers to the next `lock` calls; once none is left, granted at once.
        locks: std::collections::VecDeque<Result<LockState, MetastoreError>>,
        /// Answer to every `check_lock` (granted if none).
        check: Option<LockState>,
        /// Answers to the next `unlock` calls (success once none is left).
        unlock: std::collections::VecDeque<MetastoreError>,
        /// Answer to every heartbeat (success if none).
        heartbeat: Option<fn() -> MetastoreError>,
        ids: i64,
        /// A `lock` call answered with an error still makes its lock (a call whose answer
        /// was lost).
        grant_unanswered: bool,
        /// The locks made and not released, with their agent info.
        held: Vec<(i64, Option<String>)>,
        /// Answer to `show_locks` (the held locks if none).
        show: Option<MetastoreError>,
        /// Every call, as `lock EXCLUSIVE`, `unlock 1`, `reconnect`...
        calls: Vec<String>,
    }

    impl FakeLocks {
        fn script(&self) -> std::sync::MutexGuard<'_, Script> {
            self.0.lock().unwrap()
        }

        fn calls(&self) -> Vec<String> {
            self.script().calls.clone()
        }
    }

    impl LockService for FakeLocks {
        async fn lock(&self, request: LockRequest) -> Result<LockResponse, MetastoreError> {
            let mut script = self.script();
            let kind = request.component[0].type_;
            let names = [
                (LockType::EXCLUSIVE, "EXCLUSIVE"),
                (LockType::EXCL_WRITE, "EXCL_WRITE"),
                (LockType::SHARED_WRITE, "SHARED_WRITE"),
            ];
            let name = names
                .iter()
                .find(|(k, _)| *k == kind)
                .map_or("other", |n| n.1);
            script.calls.push(format!("lock {name}"));
            let answer = script.locks.pop_front().unwrap_or(Ok(LockState::ACQUIRED));
            if answer.is_ok() || script.grant_unanswered {
                script.ids += 1;
                let id = script.ids;
                script.held.push((id, request.agent_info.clone()));
            }
            let state = answer?;
            Ok(LockResponse {
                lockid: script.ids,
                state,
                error_message: Some("held by someone".into()),
            })
        }

        async fn check_lock(&self, id: i64) -> Result<LockResponse, MetastoreError> {
            let mut script = self.script();
            script.calls.push(format!("check {id}"));
            Ok(LockResponse {
                lockid: id,
                state: script.check.unwrap_or(LockState::ACQUIRED),
                error_message: Some("held by someone".into()),
            })
        }

        async fn heartbeat(&self, id: i64) -> Result<(), MetastoreError> {
            let mut script = self.script();
            script.calls.push(format!("heartbeat {id}"));
            script.heartbeat.map_or(Ok(()), |e| Err(e()))
        }

        async fn unlock(&self, id: i64) -> Result<(), MetastoreError> {
            let mut script = self.script();
            script.calls.push(format!("unlock {id}"));
            script.held.retain(|(held, _)| *held != id);
            script.unlock.pop_front().map_or(Ok(()), Err)
        }

        async fn show_locks(
            &self,
            target: &Target<'_>,
        ) -> Result<Vec<ShowLocksResponseElement>, MetastoreError> {
            let mut script = self.script();
            script.calls.push("show_locks".into());
            if let Some(e) = script.show.take() {
                return Err(e);
            }
            let element = |(id, agent): &(i64, Option<String>)| ShowLocksResponseElement {
                lockid: *id,
                dbname: target.db.into(),
                tablename: Some(target.table.into()),
                partname: Some(target.partition.into()),
                state: LockState::ACQUIRED,
                type_: LockType::EXCLUSIVE,
                txnid: None,
                lastheartbeat: 0,
                acquiredat: None,
                user: "hive".into(),
                hostname: "edge".into(),
                heartbeat_count: None,
                agent_info: agent.clone(),
                blocked_by_ext_id: None,
                blocked_by_int_id: None,
                lock_id_internal: None,
            };
            Ok(script.held.iter().map(element).collect())
        }

        async fn reconnect(&self) {
            self.script().calls.push("reconnect".into());
        }
    }

    fn no_such_lock() -> MetastoreError {
        MetastoreError::NotFound {
            what: "lock 1".into(),
            uri: "thrift://a:9083".into(),
            message: "NoSuchLockException".into(),
        }
    }

    fn options(mode: LockMode) -> LockOptions {
        LockOptions {
            mode,
            wait: Duration::from_millis(200),
            heartbeat: Duration::from_millis(5),
            user: "hive".into(),
            hostname: "edge".into(),
            txn_timeout: DEFAULT_TXN_TIMEOUT,
        }
    }

    const TARGET: Target<'static> = Target {
        db: "db",
        table: "t",
        partition: "k=1",
    };

    async fn staging(
        locks: &FakeLocks,
        mode: LockMode,
        warnings: &mut Vec<String>,
    ) -> Result<Option<PartitionLock<FakeLocks>>, LockError> {
        let cancel = CancellationToken::new();
        acquire_staging(locks, &TARGET, &options(mode), &cancel, warnings).await
    }

    #[tokio::test]
    async fn a_metastore_that_cannot_read_excl_write_gets_shared_write_on_a_new_connection() {
        let locks = FakeLocks::default();
        let unreadable = MetastoreError::Protocol {
            uri: "thrift://a:9083".into(),
            method: "lock",
            message: "connection reset".into(),
        };
        locks.script().locks.push_back(Err(unreadable));
        let lock = staging(&locks, LockMode::IfSupported, &mut vec![]).await;
        let lock = lock.unwrap().expect("held");
        assert_eq!(lock.kind(), LockType::SHARED_WRITE);
        assert_eq!(
            locks.calls(),
            ["lock EXCL_WRITE", "reconnect", "lock SHARED_WRITE"]
        );
        lock.release().await.unwrap();
    }

    fn unanswered() -> MetastoreError {
        MetastoreError::Timeout {
            uri: "thrift://a:9083".into(),
            method: "lock",
            after: Duration::from_secs(120),
            outcome_unknown: true,
        }
    }

    #[tokio::test]
    async fn a_lock_call_without_answer_is_busy_and_the_lock_it_was_granted_released() {
        let locks = FakeLocks::default();
        // Someone else's lock on the partition stays.
        locks.script().held.push((100, Some("Hive".into())));
        locks.script().grant_unanswered = true;
        locks.script().locks.push_back(Err(unanswered()));
        let e = staging(&locks, LockMode::IfSupported, &mut vec![])
            .await
            .err()
            .expect("no lock");
        assert!(matches!(e, LockError::Unanswered { .. }), "{e}");
        assert!(e.to_string().contains("now released"), "{e}");
        assert_eq!(
            locks.calls(),
            ["lock EXCL_WRITE", "reconnect", "show_locks", "unlock 1"]
        );
        assert_eq!(locks.script().held, [(100, Some("Hive".into()))]);
    }

    #[tokio::test]
    async fn a_lock_call_that_made_no_lock_is_busy_with_nothing_to_release() {
        let locks = FakeLocks::default();
        locks.script().locks.push_back(Err(unanswered()));
        let e = staging(&locks, LockMode::IfSupported, &mut vec![])
            .await
            .err()
            .expect("no lock");
        assert!(
            e.to_string().contains("holds no lock from that call"),
            "{e}"
        );
        assert_eq!(
            locks.calls(),
            ["lock EXCL_WRITE", "reconnect", "show_locks"]
        );
    }

    #[tokio::test]
    async fn an_unanswered_lock_call_that_cannot_be_checked_fails_naming_what_to_look_for() {
        let locks = FakeLocks::default();
        locks.script().locks.push_back(Err(unanswered()));
        locks.script().show = Some(broken());
        let e = staging(&locks, LockMode::IfSupported, &mut vec![])
            .await
            .err()
            .expect("no lock");
        assert!(matches!(e, LockError::Failed(_)), "{e}");
        assert!(
            e.to_string().contains("agent info 'hive-orc-compactor"),
            "{e}"
        );
        assert!(e.to_string().contains("db.t k=1"), "{e}");
    }

    #[tokio::test]
    async fn a_connection_cut_during_excl_write_is_checked_then_shared_write_asked() {
        let locks = FakeLocks::default();
        let cut = MetastoreError::ConnectionLost {
            uri: "thrift://a:9083".into(),
            method: "lock",
            message: "connection reset".into(),
            outcome_unknown: true,
        };
        locks.script().locks.push_back(Err(cut));
        let lock = staging(&locks, LockMode::IfSupported, &mut vec![]).await;
        let lock = lock.unwrap().expect("held");
        assert_eq!(lock.kind(), LockType::SHARED_WRITE);
        assert_eq!(
            locks.calls(),
            [
                "lock EXCL_WRITE",
                "reconnect",
                "show_locks",
                "lock SHARED_WRITE"
            ]
        );
        lock.release().await.unwrap();
    }

    #[tokio::test]
    async fn an_unanswered_exclusive_on_upgrade_is_released_and_busy() {
        let locks = FakeLocks::default();
        let mut lock = staging(&locks, LockMode::IfSupported, &mut vec![])
            .await
            .unwrap()
            .expect("held");
        locks.script().grant_unanswered = true;
        locks.script().locks.push_back(Err(unanswered()));
        let e = lock.upgrade(&CancellationToken::new()).await.unwrap_err();
        assert!(matches!(e, LockError::Unanswered { .. }), "{e}");
        assert!(locks.script().held.is_empty(), "{:?}", locks.script().held);
    }

    #[tokio::test]
    async fn no_lock_manager_is_a_warning_unless_a_lock_is_required() {
        let internal = || MetastoreError::Internal {
            uri: "thrift://a:9083".into(),
            method: "lock",
            message: "Internal error processing lock".into(),
        };
        let locks = FakeLocks::default();
        locks
            .script()
            .locks
            .extend([Err(internal()), Err(internal())]);
        let mut warnings = vec![];
        let lock = staging(&locks, LockMode::IfSupported, &mut warnings).await;
        assert!(lock.unwrap().is_none());
        assert_eq!(warnings.len(), 1, "{warnings:?}");

        let locks = FakeLocks::default();
        locks
            .script()
            .locks
            .extend([Err(internal()), Err(internal())]);
        let lock = staging(&locks, LockMode::Required, &mut vec![]).await;
        assert!(matches!(lock, Err(LockError::Unsupported(_))));
    }

    #[tokio::test]
    async fn a_lock_held_by_someone_else_is_busy_after_the_wait_and_the_request_withdrawn() {
        let locks = FakeLocks::default();
        locks.script().locks.push_back(Ok(LockState::WAITING));
        locks.script().check = Some(LockState::WAITING);
        let lock = staging(&locks, LockMode::IfSupported, &mut vec![]).await;
        assert!(matches!(lock, Err(LockError::Busy { .. })));
        assert_eq!(locks.calls().last().map(String::as_str), Some("unlock 1"));
    }

    #[tokio::test]
    async fn the_upgrade_releases_the_staging_lock_then_takes_exclusive() {
        let locks = FakeLocks::default();
        let mut lock = staging(&locks, LockMode::IfSupported, &mut vec![])
            .await
            .unwrap()
            .expect("held");
        lock.upgrade(&CancellationToken::new()).await.unwrap();
        assert_eq!(lock.kind(), LockType::EXCLUSIVE);
        let calls: Vec<String> = locks
            .calls()
            .into_iter()
            .filter(|c| !c.starts_with("heartbeat"))
            .collect();
        assert_eq!(calls, ["lock EXCL_WRITE", "unlock 1", "lock EXCLUSIVE"]);
        lock.release().await.unwrap();
    }

    #[tokio::test]
    async fn a_staging_lock_the_metastore_timed_out_is_lost_on_upgrade() {
        let locks = FakeLocks::default();
        let mut lock = staging(&locks, LockMode::IfSupported, &mut vec![])
            .await
            .unwrap()
            .expect("held");
        locks.script().unlock.push_back(no_such_lock());
        let e = lock.upgrade(&CancellationToken::new()).await.unwrap_err();
        assert!(matches!(e, LockError::Lost(_)), "{e}");
        // No EXCLUSIVE asked for: writers may have been in, the run must not swap.
        assert!(!locks.calls().contains(&"lock EXCLUSIVE".to_string()));
    }

    #[tokio::test]
    async fn a_heartbeat_the_metastore_no_longer_knows_loses_the_lock_and_the_upgrade() {
        let locks = FakeLocks::default();
        let mut lock = staging(&locks, LockMode::IfSupported, &mut vec![])
            .await
            .unwrap()
            .expect("held");
        assert_eq!(lock.lost(), None);
        locks.script().heartbeat = Some(no_such_lock);
        for _ in 0..100 {
            if lock.lost().is_some() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        assert!(lock.lost().is_some(), "lost");
        let before = locks.calls().len();
        let e = lock.upgrade(&CancellationToken::new()).await.unwrap_err();
        assert!(matches!(e, LockError::Lost(_)), "{e}");
        assert_eq!(
            locks.calls().len(),
            before,
            "no call after a lost heartbeat"
        );
    }

    #[tokio::test]
    async fn a_release_the_metastore_cannot_answer_is_tried_again() {
        let locks = FakeLocks::default();
        let lock = staging(&locks, LockMode::IfSupported, &mut vec![])
            .await
            .unwrap()
            .expect("held");
        locks.script().unlock.push_back(broken());
        lock.release().await.unwrap();
        let unlocks = locks.calls().iter().filter(|c| *c == "unlock 1").count();
        assert_eq!(unlocks, 2);
        assert!(locks.script().held.is_empty());
    }

    #[tokio::test]
    async fn a_staging_lock_the_metastore_cannot_release_at_once_is_released_then_upgraded() {
        let locks = FakeLocks::default();
        let mut lock = staging(&locks, LockMode::IfSupported, &mut vec![])
            .await
            .unwrap()
            .expect("held");
        locks.script().unlock.push_back(broken());
        lock.upgrade(&CancellationToken::new()).await.unwrap();
        assert_eq!(lock.kind(), LockType::EXCLUSIVE);
        let unlocks = locks.calls().iter().filter(|c| *c == "unlock 1").count();
        assert_eq!(unlocks, 2);
        lock.release().await.unwrap();
        assert!(locks.script().held.is_empty());
    }

    #[test]
    fn failing_heartbeats_lose_the_lock_only_past_the_transaction_timeout() {
        let t0 = Instant::now();
        let timeout = Duration::from_secs(300);
        let mut beats = Beats::new(timeout, t0);
        assert_eq!(
            beats.after(Err(broken()), t0 + Duration::from_secs(60)),
            None
        );
        assert_eq!(beats.after(Ok(()), t0 + Duration::from_secs(120)), None);
        // Counted from the last beat that got through, not from the start.
        assert_eq!(
            beats.after(Err(broken()), t0 + Duration::from_secs(400)),
            None
        );
        let why = beats
            .after(Err(broken()), t0 + Duration::from_secs(420))
            .expect("lost");
        assert!(why.contains("hive.txn.timeout"), "{why}");
    }

    #[test]
    fn a_lock_the_metastore_no_longer_knows_is_lost_at_once() {
        let mut beats = Beats::new(Duration::from_secs(300), Instant::now());
        let gone = MetastoreError::NotFound {
            what: "lock 7".into(),
            uri: "thrift://a:9083".into(),
            message: "NoSuchLockException".into(),
        };
        assert!(beats.after(Err(gone), Instant::now()).is_some());
    }
}
