//! The metastore lock around `compact`, against the real HMS `scripts/test` starts (4.0.1, whose
//! TxnHandler on Derby implements locks): a held lock makes another run busy without touching
//! anything, `--no-lock` ignores it, and every run releases its lock however it ends.
//!
//! Each test uses its own partitions of this area's own database (`OwnDatabase`).

#![cfg(feature = "cluster-tests")]

use crate::common;

use std::process::{Output, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use std::collections::BTreeMap;

use crate::common::{
    command, describe, env, json, own_database, partition_fingerprint, rt, run, OwnDatabase,
};
use hive_orc_compactor::lock::{self, LockMode, LockOptions, PartitionLock, Target};
use hive_orc_compactor::metastore::{LockState, LockType, Metastore, MetastoreConfig, Partition};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

const TABLE: &str = "ext_p3";

/// One test at a time. Each test already overlaps two lock-takers on purpose; four tests more at
/// once made HMS 4.0.1's TxnHandler on Derby stall in `check_lock` (CI, 2026-11-30: "Deadlock
/// detected in checkLock", one 60 s Derby lock wait after another, until our calls timed out).
/// That is the embedded Derby's limit, not the protocol under test.
fn one_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    static TURN: std::sync::Mutex<()> = std::sync::Mutex::new(());
    TURN.lock().unwrap_or_else(|p| p.into_inner())
}

fn db() -> &'static OwnDatabase {
    static DB: OnceLock<OwnDatabase> = OnceLock::new();
    own_database(&DB, "locks", "basic")
}

fn metastore() -> Metastore {
    common::metastore::metastore(&env("HMS_URI"))
}

/// The partition's exclusive lock, taken the way the tool takes it, without waiting.
fn take_lock(ms: &Metastore, spec: &str) -> Result<Option<PartitionLock>, lock::LockError> {
    let db = &db().fixtures.database;
    let options = LockOptions {
        mode: LockMode::Required,
        wait: Duration::ZERO,
        user: "lock-test".into(),
        ..LockOptions::default()
    };
    let target = Target {
        db,
        table: TABLE,
        partition: spec,
    };
    rt().block_on(lock::acquire(
        ms,
        &target,
        &options,
        &CancellationToken::new(),
        &mut vec![],
    ))
}

fn compact_args(spec: &str, extra: &[&str]) -> Vec<String> {
    let table = db().fixtures.qualified(TABLE);
    let mut args: Vec<String> = ["compact", "--table", &table, "--partition", spec, "--json"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    args.extend(extra.iter().map(|s| s.to_string()));
    args
}

fn compact(spec: &str, extra: &[&str]) -> Output {
    let args = compact_args(spec, extra);
    run(&args.iter().map(String::as_str).collect::<Vec<_>>())
}

fn status_of(o: &Output) -> String {
    json(o)["status"].as_str().unwrap_or_default().to_string()
}

type State = (Partition, BTreeMap<String, Value>);

/// The partition's metastore object and everything under its directory.
fn state(spec: &str) -> State {
    let f = &db().fixtures;
    let p = f.table(TABLE).partition(spec);
    rt().block_on(partition_fingerprint(
        &metastore(),
        common::hdfs::hdfs(),
        &f.database,
        TABLE,
        &p.values,
        &p.location,
    ))
}

/// Asserts the run ended busy because of the lock and changed nothing of the partition.
fn assert_busy_untouched(o: &Output, spec: &str, before: &State) {
    assert_eq!(o.status.code(), Some(4), "{}", describe(o));
    let r = json(o);
    assert_eq!(r["status"], "busy", "{r}");
    let reason = r["reason"].as_str().unwrap_or_default();
    assert!(reason.contains("locked in the metastore"), "{r}");
    assert!(*before == state(spec), "{spec} changed");
}

#[test]
fn a_lock_held_by_someone_else_makes_compact_busy_and_no_lock_ignores_it() {
    let _turn = one_at_a_time();
    let spec = "region=us/dt=2024-01-01/hour=00";
    let ms = metastore();
    let held = take_lock(&ms, spec)
        .expect("the test takes the lock")
        .expect("HMS 4 supports locks");
    let before = state(spec);
    let t0 = Instant::now();
    let out = compact(spec, &["--lock-timeout", "2s"]);
    assert_busy_untouched(&out, spec, &before);
    assert!(
        t0.elapsed() >= Duration::from_secs(2),
        "it waited for --lock-timeout"
    );
    // `--require-lock` on a metastore with locks is the same: busy.
    let out = compact(spec, &["--lock-timeout", "0", "--require-lock"]);
    assert_busy_untouched(&out, spec, &before);

    // The busy runs withdrew their waiting requests: once the holder lets go, a run that does
    // not wait at all gets the lock (a request left queued would be ahead of it).
    rt().block_on(held.release()).expect("unlock");
    let held = take_lock(&ms, spec).unwrap().unwrap();
    // `--no-lock` does not ask, so the held lock does not stop it.
    let out = compact(spec, &["--no-lock"]);
    assert_eq!(out.status.code(), Some(0), "{}", describe(&out));
    assert_eq!(status_of(&out), "compacted");
    rt().block_on(held.release()).expect("unlock");
}

#[cfg(feature = "failpoints")]
#[test]
fn a_run_holding_the_lock_makes_a_second_busy_and_releases_it_when_done() {
    let _turn = one_at_a_time();
    let spec = "region=us/dt=2024-01-01/hour=13";
    let first = command(&env("HMS_URI"))
        .args(compact_args(spec, &[]))
        .env("FAILPOINTS", "compact::before-swap=sleep(8000)")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the binary starts");
    // Wait until the first run holds the lock: then the test cannot take it.
    let ms = metastore();
    let t0 = Instant::now();
    loop {
        match take_lock(&ms, spec) {
            Ok(Some(l)) => {
                rt().block_on(l.release()).expect("unlock");
                assert!(t0.elapsed() < Duration::from_secs(6), "never locked");
                std::thread::sleep(Duration::from_millis(100));
            }
            Err(lock::LockError::Busy { .. }) => break,
            Err(e) => panic!("{e}"),
            Ok(None) => unreachable!("required"),
        }
    }
    // Until the first run's pause before the swap, its own work changes the directory; it
    // holds EXCLUSIVE, which readers wait for, only from its re-check on, right before the
    // pause. (Waiting for its published directory instead raced with the moment the staging
    // lock is released for EXCLUSIVE: a second run could get in there, stage, and find itself
    // busy only at its own upgrade, having touched the work directory.)
    let f = &db().fixtures;
    let readers_wait = || {
        !other_client_is_granted(
            &env("HMS_URI"),
            &f.database,
            TABLE,
            spec,
            LockType::SHARED_READ,
        )
    };
    while !readers_wait() {
        assert!(
            t0.elapsed() < Duration::from_secs(20),
            "never took EXCLUSIVE"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let before = state(spec);
    let second = compact(spec, &["--lock-timeout", "1s"]);
    assert_busy_untouched(&second, spec, &before);

    let first = first.wait_with_output().expect("the first run ends");
    assert_eq!(first.status.code(), Some(0), "{}", describe(&first));
    assert_eq!(status_of(&first), "compacted");
    // Released: a third run, not waiting at all, gets the lock and finds nothing to do.
    let third = compact(spec, &["--lock-timeout", "0"]);
    assert_eq!(third.status.code(), Some(0), "{}", describe(&third));
    assert_eq!(status_of(&third), "nothing-to-do");
}

#[cfg(feature = "failpoints")]
#[test]
fn the_lock_is_released_after_a_failure() {
    let _turn = one_at_a_time();
    let spec = "region=eu/dt=2024-01-01/hour=00";
    for fp in ["compact::after-stage", "compact::after-swap"] {
        let out = command(&env("HMS_URI"))
            .args(compact_args(spec, &[]))
            .env("FAILPOINTS", format!("{fp}=return"))
            .output()
            .expect("the binary runs");
        assert_eq!(out.status.code(), Some(1), "{fp}: {}", describe(&out));
        let held = take_lock(&metastore(), spec)
            .unwrap_or_else(|e| panic!("{fp}: the failed run left its lock: {e}"))
            .expect("HMS 4 supports locks");
        rt().block_on(held.release()).expect("unlock");
    }
}

#[test]
fn dry_runs_do_not_lock() {
    let _turn = one_at_a_time();
    let spec = "region=eu/dt=2024-01-01/hour=13";
    let ms = metastore();
    let held = take_lock(&ms, spec).unwrap().unwrap();
    let out = compact(spec, &["--dry-run", "--lock-timeout", "0"]);
    assert_eq!(out.status.code(), Some(0), "{}", describe(&out));
    assert_eq!(status_of(&out), "dry-run");
    rt().block_on(held.release()).expect("unlock");
}

/// Another client's lock request of `kind` on the partition: granted at once, or left
/// waiting (withdrawn either way before returning).
fn other_client_is_granted(uri: &str, db: &str, table: &str, spec: &str, kind: LockType) -> bool {
    rt().block_on(async {
        let ms = Metastore::connect(MetastoreConfig::new(uri).unwrap())
            .await
            .expect("the metastore answers");
        let target = Target {
            db,
            table,
            partition: spec,
        };
        let someone = LockOptions {
            user: "another-client".into(),
            hostname: "elsewhere".into(),
            ..LockOptions::default()
        };
        let request = lock::request(&target, kind, &someone);
        let response = ms.lock(request).await.expect("the lock request is taken");
        ms.unlock(response.lockid).await.expect("withdrawn");
        match response.state {
            LockState::ACQUIRED => true,
            LockState::WAITING => false,
            other => panic!("{kind:?}: {other:?} {:?}", response.error_message),
        }
    })
}

/// The staging lock lets another client's SHARED_READ in at once and makes its writes
/// (EXCLUSIVE, as Hive takes for a non-transactional INSERT; SHARED_WRITE, as for an ACID
/// one) wait; after the upgrade to EXCLUSIVE, readers wait too, for the swap's moment.
fn staging_then_exclusive(uri: &str, db: &str, table: &str, spec: &str, staging: LockType) {
    let ms = rt().block_on(async {
        Metastore::connect(MetastoreConfig::new(uri).unwrap())
            .await
            .expect("the metastore answers")
    });
    let options = LockOptions {
        mode: LockMode::Required,
        wait: Duration::from_secs(20),
        user: "lock-test".into(),
        ..LockOptions::default()
    };
    let target = Target {
        db,
        table,
        partition: spec,
    };
    let cancel = CancellationToken::new();
    let mut held = rt()
        .block_on(lock::acquire_staging(
            &ms,
            &target,
            &options,
            &cancel,
            &mut vec![],
        ))
        .expect("the staging lock")
        .expect("this metastore has a lock manager");
    assert_eq!(held.kind(), staging);
    let granted = |kind| other_client_is_granted(uri, db, table, spec, kind);
    assert!(granted(LockType::SHARED_READ), "a reader waits for staging");
    assert!(
        !granted(LockType::EXCLUSIVE),
        "a writer got in during staging"
    );
    assert!(!granted(LockType::SHARED_WRITE), "an ACID writer got in");
    assert!(!granted(staging), "a second compactor run got in");

    rt().block_on(held.upgrade(&cancel)).expect("upgraded");
    assert_eq!(held.kind(), LockType::EXCLUSIVE);
    assert!(
        !granted(LockType::SHARED_READ),
        "a reader got in during the swap"
    );
    rt().block_on(held.release()).expect("unlock");
    assert!(granted(LockType::EXCLUSIVE), "the lock was left behind");
}

#[test]
fn hms4_staging_lock_is_excl_write_and_readers_pass() {
    let _turn = one_at_a_time();
    let db = &db().fixtures.database;
    let spec = "region=eu/dt=2024-01-01/hour=00";
    staging_then_exclusive(&env("HMS_URI"), db, TABLE, spec, LockType::EXCL_WRITE);
}

#[test]
fn hms31_staging_lock_is_shared_write_and_readers_pass() {
    let _turn = one_at_a_time();
    // The shared 3.1 fixtures: a lock changes no data, so they stay as they are.
    let f = common::fixtures_from("FIXTURES31_MANIFEST");
    let spec = &f
        .table(TABLE)
        .partition("region=eu/dt=2024-01-01/hour=00")
        .spec;
    staging_then_exclusive(
        &env("HMS31_URI"),
        &f.database,
        TABLE,
        spec,
        LockType::SHARED_WRITE,
    );
}
