//! A lock once granted: kept alive by heartbeats, upgraded from staging to EXCLUSIVE, and
//! released, patiently when the metastore cannot answer at once.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use super::{
    request_agent_info, request_target, settle_unanswered, unanswered, wait_for, withdraw,
    LockError, LockOptions, LockService, PartitionLock, LOG_TARGET, RELEASE_RETRY,
};
use crate::metastore::{LockRequest, LockType, MetastoreError};

impl<M: LockService> PartitionLock<M> {
    pub(super) fn held(
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
                    target: LOG_TARGET,
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
                    tracing::warn!(target: LOG_TARGET, "unlocking metastore lock {id}: {e}");
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
            tracing::warn!(target: LOG_TARGET, "heartbeat of metastore lock {id}: {e}");
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
pub(super) struct Beats {
    txn_timeout: Duration,
    last_ok: Instant,
}

impl Beats {
    pub(super) fn new(txn_timeout: Duration, now: Instant) -> Self {
        Beats {
            txn_timeout,
            last_ok: now,
        }
    }

    /// Why the lock is lost after a heartbeat that ended with `result` at `now`, if it is.
    pub(super) fn after(
        &mut self,
        result: Result<(), MetastoreError>,
        now: Instant,
    ) -> Option<String> {
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
