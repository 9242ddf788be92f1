//! The metastore's faults, against the real cluster `scripts/test` starts (HMS 4.0.1 on
//! PostgreSQL): its database stopped while the metastore stays up, the metastore process
//! restarted, and a lock call answered too late. Each fault strikes at a step of the protocol
//! (before the lock, while staging, at the swap, at cleanup) and every case ends the same way:
//! the run compacted, or failed with the partition untouched; every row is still there (Java
//! orc-tools counts them where the metastore points); no lock of ours is left to hold Hive's
//! writers; and the next run completes. A run paused at a step must still be running once its
//! database is down: one that had already ended was not faulted, and the test fails.
//!
//! The faults are made with `scripts/cluster metastore-db stop|start` and `hms restart` on the
//! cluster `CLUSTER_DIR` names; the database faults need a database server (on the embedded
//! Derby they say why and skip). The tests take turns: a stopped database or metastore stops
//! every test of this process.

#![cfg(feature = "cluster-tests")]

use crate::common;

use std::process::{Child, Output, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use crate::common::failpoints;
use crate::common::partition::{assert_untouched, Part};
use crate::common::proxy::{Fault, Proxy};
use crate::common::{code, command, describe, env, json, rt, OwnDatabase};
use serde_json::Value;

const TABLE: &str = "ext_p3";

fn db() -> &'static OwnDatabase {
    static DB: OnceLock<OwnDatabase> = OnceLock::new();
    common::own_database(&DB, "msfaults", "basic")
}

fn part(spec: &str) -> Part {
    Part::of(&db().fixtures, &env("HMS_URI"), TABLE, spec)
}

fn one_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    static TURN: std::sync::Mutex<()> = std::sync::Mutex::new(());
    TURN.lock().unwrap_or_else(|p| p.into_inner())
}

/// Whether the test environment names the cluster (`CLUSTER_DIR`) that `scripts/cluster`'s
/// fault commands act on, and this process runs these tests alone (a stopped database or
/// metastore stops every other test); says why not when not.
fn cluster_named() -> bool {
    if !common::alone(&["metastore_faults"]) {
        return false;
    }
    let named = std::env::var_os("CLUSTER_DIR").is_some();
    if !named {
        eprintln!("skipped: CLUSTER_DIR is not set (run through scripts/test)");
    }
    named
}

/// Whether the metastore runs on a database server this test may stop; says why not when not.
fn database_server() -> bool {
    if std::env::var("CLUSTER_METASTORE_DB").map_or(true, |db| db == "derby") {
        eprintln!("skipped: the metastore runs on embedded Derby (no database server to stop)");
        return false;
    }
    cluster_named()
}

/// The metastore's database stopped; started again when dropped (also when a test fails).
struct DatabaseDown {
    up: bool,
}

impl DatabaseDown {
    fn stop() -> Self {
        common::cluster::run(&["metastore-db", "stop"]);
        DatabaseDown { up: false }
    }

    fn start(&mut self) {
        if !self.up {
            common::cluster::run(&["metastore-db", "start"]);
            self.up = true;
        }
    }
}

impl Drop for DatabaseDown {
    fn drop(&mut self) {
        if !self.up {
            common::cluster::try_run(&["metastore-db", "start"]);
        }
    }
}

/// Where a run is paused (a failpoint; its work directory shows when it got there).
#[derive(Clone, Copy)]
enum Step {
    /// Before anything: the fault comes first.
    BeforeLock,
    /// Staged and verified, not yet published.
    Staging,
    /// Published, just before the swap.
    Swap,
}

impl Step {
    fn failpoint(self) -> Option<&'static str> {
        match self {
            Step::BeforeLock => None,
            Step::Staging => Some("compact::after-verify"),
            Step::Swap => Some("compact::before-swap"),
        }
    }
}

/// Starts `compact` of `part` paused `pause` at `step`, waits until it is there (and a moment
/// more, to be inside the pause), and hands it back running.
fn start_paused(part: &Part, step: Step, pause: Duration) -> Child {
    let mut c = command(&part.hms_uri);
    c.args(part.args("compact", &[]))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if let Some(fp) = step.failpoint() {
        c.env("FAILPOINTS", format!("{fp}=sleep({})", pause.as_millis()));
    }
    let mut child = c.spawn().expect("the binary starts");
    let t0 = Instant::now();
    while !step
        .failpoint()
        .is_none_or(|fp| failpoints::work_shows(fp, &part.work_entries()))
    {
        assert!(
            child.try_wait().expect("wait").is_none(),
            "the run ended before it got to the fault"
        );
        assert!(t0.elapsed() < Duration::from_secs(60), "never got there");
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_millis(1000));
    // The fault that follows strikes a run still paused, not one already over.
    assert!(
        child.try_wait().expect("wait").is_none(),
        "the run ended at its pause, before the fault: nothing would be faulted"
    );
    child
}

/// Our locks on the partition that the metastore still holds.
fn our_locks(part: &Part) -> Vec<i64> {
    let ms = common::metastore::metastore(&env("HMS_URI"));
    let locks = rt()
        .block_on(ms.show_locks(&part.db, &part.table, &part.spec))
        .expect("show_locks");
    locks
        .iter()
        .filter(|l| {
            l.agent_info
                .as_deref()
                .is_some_and(|a| a.starts_with("hive-orc-compactor "))
        })
        .map(|l| l.lockid)
        .collect()
}

/// What every case ends with: `out` compacted, or failed with the partition as `before`
/// (and then an error of one line); every row where the metastore points; no lock of ours
/// left; and the next run completes. Returns the run's status.
fn settles(part: &Part, before: &common::partition::State, out: &Output, what: &str) -> String {
    let r: Value = json(out);
    let status = r["status"].as_str().unwrap_or_default().to_string();
    match status.as_str() {
        "compacted" => assert_eq!(code(out), 0, "{what}: {}", describe(out)),
        "failed" | "busy" => {
            assert_ne!(code(out), 0, "{what}: {}", describe(out));
            let reason = r["reason"].as_str().unwrap_or_default();
            assert!(
                !reason.is_empty() && !reason.contains('\n'),
                "{what}: one line says what failed: {r}"
            );
            assert_untouched(part, before, &part.state(false), what);
        }
        other => panic!(
            "{what}: compacted or failed, not {other}: {}",
            describe(out)
        ),
    }
    assert_eq!(
        part.java_row_count(),
        part.rows,
        "{what}: rows where the metastore points"
    );
    assert_eq!(
        our_locks(part),
        Vec::<i64>::new(),
        "{what}: a lock of ours is left"
    );
    let next = part.compact(&[]);
    let next_status = json(&next)["status"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(
        next_status == "compacted" || next_status == "nothing-to-do",
        "{what}: the next run completes: {}",
        describe(&next)
    );
    assert_eq!(
        part.java_row_count(),
        part.rows,
        "{what}: rows after the next run"
    );
    eprintln!(
        "{what}: {status} ({}), then {next_status}",
        r["reason"].as_str().unwrap_or("-")
    );
    status
}

// ---------------------------------------------------------------------------------------------
// A lock call the metastore carries out but answers too late.

#[test]
fn a_lock_call_answered_too_late_is_busy_and_the_lock_it_was_granted_released() {
    // With the other fault tests, which it takes turns with.
    if !common::alone(&["metastore_faults"]) {
        return;
    }
    let _turn = one_at_a_time();
    let part = part("region=eu/dt=2024-01-01/hour=00");
    let before = part.state(false);
    let proxy = Proxy::start(
        &env("HMS_URI"),
        Fault::SwallowReply {
            method: "lock".into(),
            nth: 1,
        },
    );
    let late = Part {
        hms_uri: proxy.uri(),
        ..part.clone()
    };
    let t0 = Instant::now();
    let out = late.compact(&["--metastore-timeout", "5s"]);
    assert!(
        proxy.cut(),
        "the lock's answer was never held back: {}",
        describe(&out)
    );
    assert_eq!(code(&out), 4, "busy: {}", describe(&out));
    let r = json(&out);
    let reason = r["reason"].as_str().unwrap_or_default();
    assert!(
        reason.contains("did not answer lock") && reason.contains("now released"),
        "the reason says the call went unanswered and its lock was released: {r}"
    );
    assert!(t0.elapsed() < Duration::from_secs(60), "{:?}", t0.elapsed());
    assert_eq!(settles(&part, &before, &out, "lock answered late"), "busy");
}

// ---------------------------------------------------------------------------------------------
// The metastore's database stopped, the metastore up.

/// The database stopped at `step` and started again `down_for` later (while the run is still
/// going, so that a run that failed gets its lock released before it exits).
fn database_down_at(spec: &str, step: Step, down_for: Duration) {
    let _turn = one_at_a_time();
    if !database_server() {
        return;
    }
    let part = part(spec);
    let before = part.state(false);
    let (out, what) = match step {
        Step::BeforeLock => {
            let mut down = DatabaseDown::stop();
            let child = command(&part.hms_uri)
                .args(part.args("compact", &[]))
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .expect("the binary starts");
            std::thread::sleep(down_for);
            down.start();
            (
                child.wait_with_output().expect("the run ends"),
                "database down before the lock",
            )
        }
        Step::Staging | Step::Swap => {
            let mut child = start_paused(&part, step, Duration::from_secs(5));
            let mut down = DatabaseDown::stop();
            assert!(
                child.try_wait().expect("wait").is_none(),
                "{spec}: the run ended before the database was down: nothing was faulted"
            );
            std::thread::sleep(down_for);
            down.start();
            let what = match step {
                Step::Staging => "database down while staging",
                _ => "database down at the swap",
            };
            (child.wait_with_output().expect("the run ends"), what)
        }
    };
    settles(&part, &before, &out, what);
}

#[test]
fn the_database_down_before_the_lock() {
    database_down_at(
        "region=eu/dt=2024-01-01/hour=13",
        Step::BeforeLock,
        Duration::from_secs(30),
    );
}

#[test]
fn the_database_down_while_staging() {
    database_down_at(
        "region=eu/dt=2024-01-02/hour=00",
        Step::Staging,
        Duration::from_secs(30),
    );
}

#[test]
fn the_database_down_at_the_swap() {
    database_down_at(
        "region=eu/dt=2024-01-02/hour=13",
        Step::Swap,
        Duration::from_secs(30),
    );
}

#[test]
fn the_database_down_at_cleanup_loses_nothing_and_the_next_cleanup_completes() {
    let _turn = one_at_a_time();
    if !database_server() {
        return;
    }
    let part = part("region=us/dt=2024-01-01/hour=00");
    part.ok("compact", &[], 0);
    let out = {
        let _down = DatabaseDown::stop();
        let table = part.qualified();
        common::run_against(
            &part.hms_uri,
            &[
                "cleanup",
                "--table",
                &table,
                "--older-than",
                "0s",
                "--json",
                "--metastore-timeout",
                "60s",
            ],
        )
    };
    assert_ne!(
        code(&out),
        0,
        "cleanup with the database down: {}",
        describe(&out)
    );
    let last = String::from_utf8_lossy(&out.stderr)
        .lines()
        .last()
        .unwrap_or_default()
        .to_string();
    assert!(!last.is_empty(), "an error line: {}", describe(&out));
    assert_eq!(
        part.java_row_count(),
        part.rows,
        "rows after the failed cleanup"
    );
    part.cleanup(&[]);
    assert_eq!(part.java_row_count(), part.rows, "rows after cleanup");
    assert_eq!(our_locks(&part), Vec::<i64>::new());
}

// ---------------------------------------------------------------------------------------------
// The metastore process restarted.

fn metastore_restarted_at(spec: &str, step: Step) {
    let _turn = one_at_a_time();
    if !cluster_named() {
        return;
    }
    let part = part(spec);
    let before = part.state(false);
    let out = match step {
        Step::BeforeLock => {
            common::cluster::run(&["hms", "restart"]);
            part.compact(&[])
        }
        Step::Staging | Step::Swap => {
            let child = start_paused(&part, step, Duration::from_secs(20));
            common::cluster::run(&["hms", "restart"]);
            child.wait_with_output().expect("the run ends")
        }
    };
    let what = match step {
        Step::BeforeLock => "metastore restarted before the lock",
        Step::Staging => "metastore restarted while staging",
        Step::Swap => "metastore restarted at the swap",
    };
    settles(&part, &before, &out, what);
}

#[test]
fn the_metastore_restarted_before_the_lock() {
    metastore_restarted_at("region=us/dt=2024-01-01/hour=13", Step::BeforeLock);
}

#[test]
fn the_metastore_restarted_while_staging() {
    metastore_restarted_at("region=us/dt=2024-01-02/hour=00", Step::Staging);
}

#[test]
fn the_metastore_restarted_at_the_swap() {
    metastore_restarted_at("region=us/dt=2024-01-02/hour=13", Step::Swap);
}
