//! The lock protocol against a scripted lock manager: what is asked for, waited on, settled,
//! lost and released, call by call.

use super::held::Beats;
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
