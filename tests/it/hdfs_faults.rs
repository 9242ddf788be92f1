//! HDFS daemons failing under a run: a DataNode killed while `compact` writes an output or reads
//! its inputs, a DataNode restarted and the NameNode restarted mid-run. The real binary is paused
//! at a failpoint (`FAILPOINTS=...=sleep(MS)`, test builds) while `scripts/cluster datanode ...` or
//! `namenode restart` acts on the cluster `scripts/test` starts, then left to go on.
//!
//! Needs a cluster of three DataNodes or more (`scripts/cluster start --datanodes 3`, replication
//! 3: one lost leaves two replicas to read and two DataNodes to write to) and `CLUSTER_DIR`
//! (which `scripts/cluster env` exports); on the default cluster of one DataNode, or without the
//! `datanode` command, every test says why and skips.
//!
//! Every test ends the same way: the run compacted, or failed with the partition untouched (the
//! metastore object and the directory as they were) and its last line of stderr naming what
//! failed; nothing lost (Java orc-tools reads every input row where the metastore points, with
//! the DataNode still down); and the next run, every DataNode back, completes. One more ending
//! is accepted, checked as closely: the run swapped and then could not write its journal (a
//! DataNode the NameNode still believes alive sits in every new block's pipeline, and
//! hdfs-native cannot build a pipeline around it: see [`Ended::JournalLost`]). A run that ended
//! before its fault was done was not faulted: the test fails.
//!
//! The tests stop and start daemons of one cluster: they take turns (a lock), so they never
//! overlap whatever `--test-threads` says. A killed DataNode is started again when its test
//! ends, failed or not.
//!
//! The partitions are fixture partitions of this area's own database (`scripts/fixtures --set
//! basic,big_stripes`): `big_stripes` (4 files of 2.8 MiB, one stripe each: read from HDFS while
//! the output is written, in packets that reach the DataNodes before the pause) for the
//! DataNode kills, `ext_p3` (25 small files) for the restarts.

#![cfg(feature = "cluster-tests")]

use crate::common;

use std::process::{Child, Output, Stdio};
use std::sync::{Mutex, MutexGuard, OnceLock};
use std::time::{Duration, Instant};

use crate::common::hdfs::{files_in, list, loc};
use crate::common::partition::{assert_untouched, Part, State};
use crate::common::{code, command, describe, env, own_database, stderr, stdout, OwnDatabase};

/// How long a run stays paused at its failpoint: a DataNode's kill or restart takes a second,
/// the NameNode's restart about seven on this small machine.
const PAUSE: Duration = Duration::from_secs(25);
/// From the output showing in the staging directory to the run's pause: the rest of the step
/// (at most the first 2.8 MiB stripe).
const GET_THERE: Duration = Duration::from_secs(3);

fn db() -> &'static OwnDatabase {
    static DB: OnceLock<OwnDatabase> = OnceLock::new();
    own_database(&DB, "hdfsfaults", "basic,big_stripes")
}

fn part(table: &str, spec: &str) -> Part {
    Part::of(&db().fixtures, &env("HMS_URI"), table, spec)
}

/// One test at a time: each stops daemons every other test needs.
fn turn() -> MutexGuard<'static, ()> {
    static TURN: Mutex<()> = Mutex::new(());
    TURN.lock().unwrap_or_else(|p| p.into_inner())
}

/// Whether faults can be made in this cluster and it survives losing a DataNode, and this
/// process runs these tests alone (they stop daemons every other test needs); says why not when
/// not.
fn can_fault(test: &str) -> bool {
    if !common::alone(&["hdfs_faults"]) {
        return false;
    }
    let datanodes: u32 = std::env::var("CLUSTER_DATANODES")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(1);
    let why = if datanodes < 3 {
        Some(format!(
            "the cluster runs {datanodes} DataNode(s) (CLUSTER_DATANODES): losing one needs 3 \
             (scripts/cluster start --datanodes 3)"
        ))
    } else if std::env::var_os("CLUSTER_DIR").is_none() {
        Some("CLUSTER_DIR is not set (eval \"$(scripts/cluster env)\" exports it)".to_string())
    } else {
        let out = common::cluster::try_run(&["datanode", "list"]);
        (!out.status.success()).then(|| {
            format!(
                "`scripts/cluster datanode list` failed: {}",
                stderr(&out).trim()
            )
        })
    };
    match why {
        Some(why) => {
            eprintln!("skipping {test}: {why}");
            false
        }
        None => true,
    }
}

/// [`can_fault`], and a NameNode that can restart alone (not `--ha` or `--viewfs`).
fn can_restart_the_namenode(test: &str) -> bool {
    let profiles = std::env::var("CLUSTER_PROFILES").unwrap_or_default();
    if profiles.split(',').any(|p| p == "ha" || p == "viewfs") {
        eprintln!("skipping {test}: the cluster runs several NameNodes (profiles '{profiles}')");
        return false;
    }
    can_fault(test)
}

/// DataNodes a test killed: started again when it ends, however it ends.
#[derive(Default)]
struct Killed(Vec<String>);

impl Killed {
    fn kill(&mut self, datanode: &str) {
        common::cluster::run(&["datanode", "kill", datanode]);
        self.0.push(datanode.to_string());
    }

    fn restore(&mut self) {
        for datanode in std::mem::take(&mut self.0) {
            common::cluster::run(&["datanode", "start", &datanode]);
        }
    }
}

impl Drop for Killed {
    fn drop(&mut self) {
        for datanode in std::mem::take(&mut self.0) {
            let out = common::cluster::try_run(&["datanode", "start", &datanode]);
            if !out.status.success() {
                eprintln!(
                    "DataNode {datanode} could not be started again: {}",
                    stderr(&out)
                );
            }
        }
    }
}

/// The DataNodes (numbers) the NameNode lists for the last block of `file` (a URL).
fn holding(file: &str) -> Vec<String> {
    common::cluster::run(&["datanode", "holding", &loc(file).path])
        .split_whitespace()
        .map(str::to_string)
        .collect()
}

/// The file in the run's staging directory, once one shows.
fn staged_output(part: &Part) -> Option<String> {
    let staging = part
        .work_entries()
        .into_iter()
        .find(|n| n.ends_with(".staging"))?;
    let dir = format!("{}/{}/{staging}", part.home, common::WORK_DIR);
    list(&dir).0.first().map(|f| format!("{dir}/{f}"))
}

/// A run in the background, killed if the test fails before waiting for it: it must not swap
/// behind the next test's back.
struct Running(Option<Child>);

impl Running {
    fn ended(&mut self) -> bool {
        let child = self.0.as_mut().expect("running");
        child.try_wait().expect("wait").is_some()
    }

    fn output(mut self) -> Output {
        let child = self.0.take().expect("running");
        child.wait_with_output().expect("the run ends")
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if let Some(child) = self.0.as_mut() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// `compact` of `part` (the text report: its failure is the last line of stderr), paused at
/// `failpoint`; once its first output shows in the staging directory and the run had time to
/// get to the pause, `fault` gets that output's URL. Returns the run's output.
fn run_with_fault(part: &Part, failpoint: &str, fault: impl FnOnce(&str)) -> Output {
    let run = command(&part.hms_uri)
        .args([
            "compact",
            "--table",
            &part.qualified(),
            "--partition",
            &part.spec,
        ])
        .env(
            "FAILPOINTS",
            format!("{failpoint}=sleep({})", PAUSE.as_millis()),
        )
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the binary starts");
    let mut run = Running(Some(run));
    let t0 = Instant::now();
    let output = loop {
        if let Some(output) = staged_output(part) {
            break output;
        }
        if run.ended() {
            let out = run.output();
            panic!(
                "{failpoint}: the run ended before it staged: {}",
                describe(&out)
            );
        }
        assert!(
            t0.elapsed() < Duration::from_secs(120),
            "{failpoint}: nothing staged"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    std::thread::sleep(GET_THERE);
    let acting = Instant::now();
    fault(&output);
    let acted = acting.elapsed();
    // A run that ended before the fault was done was not faulted: its passing would prove
    // nothing.
    assert!(
        !run.ended(),
        "{failpoint}: the run ended before the fault was done ({:.1} s, from {:.1} s into the \
         run): nothing was faulted; the machine is too slow for the {} s pause",
        acted.as_secs_f64(),
        (acting - t0).as_secs_f64(),
        PAUSE.as_secs()
    );
    let out = run.output();
    eprintln!(
        "{failpoint}: the fault took {:.1} s ({:.1} s into the run, the pause {} s); the run \
         ended {:.1} s after it began, exit {}",
        acted.as_secs_f64(),
        (acting - t0).as_secs_f64(),
        PAUSE.as_secs(),
        t0.elapsed().as_secs_f64(),
        code(&out)
    );
    if acting - t0 + acted > PAUSE {
        eprintln!("{failpoint}: note: the fault outlasted the pause; the run went on during it");
    }
    out
}

/// How a faulted run ended.
#[derive(Debug)]
enum Ended {
    /// The partition points at the run's directory.
    Compacted,
    /// It failed before the swap; the partition is as it was.
    Untouched,
    /// It swapped, then could not write its journal: the partition points at the run's
    /// directory, whose files are verified, the old files are all kept and no
    /// half-written journal is left; `verify`, `rollback` and `cleanup` rebuild the journal
    /// from the partition's parameters. After a DataNode dies and until the NameNode declares
    /// it dead (10.5 minutes by default), the NameNode puts it in new blocks' pipelines (in
    /// every one on a cluster of three), and hdfs-native 0.14.8 cannot build a pipeline around
    /// it (it neither abandons the block and asks again without the node, as Hadoop's client
    /// does, nor reads the failed node from the DataNodes' setup reply), so the first new file
    /// after the swap, the journal, fails.
    JournalLost,
}

/// Checks how `out`, a faulted run of `part` whose state was `before`, ended, and that every
/// row is there.
fn ended(part: &Part, before: &State, out: &Output, what: &str) -> Ended {
    let err = stderr(out);
    let last = err.lines().last().unwrap_or_default();
    let ended = match code(out) {
        0 => {
            assert!(
                stdout(out).starts_with("compacted: "),
                "{what}: {}",
                describe(out)
            );
            let location = part.location();
            assert!(
                loc(&location).is_within(&loc(&part.home)) && loc(&location) != loc(&part.home),
                "{what}: compacted into {location}"
            );
            Ended::Compacted
        }
        1 => {
            let head = format!("failed: {} partition {}: ", part.qualified(), part.spec);
            assert!(
                last.starts_with(&head) && last.contains("hdfs://"),
                "{what}: stderr's last line is the failure, naming the file: {}",
                describe(out)
            );
            eprintln!("{what}: {last}");
            if last.contains("but writing the journal") {
                let location = part.location();
                assert!(
                    last.contains(&format!("now points at {location}")),
                    "{what}: {last}"
                );
                assert_eq!(
                    files_in(&part.home).len() as u64,
                    part.files,
                    "{what}: the old files stay"
                );
                let journals: Vec<String> = part
                    .work_entries()
                    .into_iter()
                    .filter(|n| n.ends_with(".json"))
                    .collect();
                assert_eq!(
                    journals,
                    Vec::<String>::new(),
                    "{what}: a journal left half-written"
                );
                Ended::JournalLost
            } else {
                assert_untouched(part, before, &part.state(true), what);
                Ended::Untouched
            }
        }
        _ => panic!("{what}: {}", describe(out)),
    };
    assert_eq!(part.java_row_count(), part.rows, "{what}: {ended:?}");
    ended
}

/// With every DataNode back: the next run completes, and every row is there. After a lost
/// journal, `verify` rebuilds it and checks the files against it first.
fn next_run_completes(part: &Part, ended: &Ended, what: &str) {
    if let Ended::JournalLost = ended {
        let v = part.ok("verify", &[], 0);
        assert_eq!(v["journal_rebuilt"], true, "{what}: {v}");
        assert_eq!(v["rows"].as_u64(), Some(part.rows), "{what}: {v}");
    }
    let r = part.ok("compact", &[], 0);
    let status = r["status"].as_str().unwrap_or_default();
    match ended {
        Ended::Untouched => assert_eq!(status, "compacted", "{what}: the next run: {r}"),
        _ => assert!(
            ["compacted", "nothing-to-do", "skipped"].contains(&status),
            "{what}: the next run: {r}"
        ),
    }
    assert_eq!(
        part.java_row_count(),
        part.rows,
        "{what}: after the next run"
    );
}

/// The DataNodes holding the last block of each file where the partition points now, printed:
/// a write that lost a DataNode of its pipeline ends with fewer replicas than asked, until the
/// NameNode notices the dead node and copies the blocks again.
fn note_replicas(part: &Part, what: &str) {
    let dir = part.location();
    for (name, _) in files_in(&dir) {
        let on = holding(&format!("{dir}/{name}"));
        eprintln!(
            "{what}: {name} is on DataNodes {on:?} ({} of {} replicas)",
            on.len(),
            std::env::var("CLUSTER_REPLICATION").unwrap_or_default()
        );
    }
}

#[test]
fn a_datanode_killed_while_an_output_is_written() {
    let what = "a DataNode killed while an output is written";
    if !can_fault(what) {
        return;
    }
    let _turn = turn();
    let part = part("big_stripes", "dt=2026-11-01");
    let before = part.state(true);
    let mut killed = Killed::default();
    let out = run_with_fault(&part, "compact::writing-output", |output| {
        // A DataNode of the pipeline the output's block is being written through.
        let pipeline = holding(output);
        killed.kill(&pipeline[0]);
    });
    let ended = ended(&part, &before, &out, what);
    if !matches!(ended, Ended::Untouched) {
        note_replicas(&part, what);
    }
    killed.restore();
    next_run_completes(&part, &ended, what);
}

#[test]
fn a_datanode_killed_while_the_inputs_are_read() {
    let what = "a DataNode killed while the inputs are read";
    if !can_fault(what) {
        return;
    }
    let _turn = turn();
    let part = part("big_stripes", "dt=2026-11-02");
    let before = part.state(true);
    let mut killed = Killed::default();
    let out = run_with_fault(&part, "compact::reading-inputs", |_| {
        // One holding the second input, whose stripe is read after the pause.
        let second = format!("{}/{}", part.home, files_in(&part.home)[1].0);
        killed.kill(&holding(&second)[0]);
    });
    let ended = ended(&part, &before, &out, what);
    killed.restore();
    next_run_completes(&part, &ended, what);
}

#[test]
fn a_datanode_restarted_after_staging() {
    let what = "a DataNode restarted after staging";
    if !can_fault(what) {
        return;
    }
    let _turn = turn();
    let part = part("ext_p3", "region=eu/dt=2024-01-01/hour=00");
    let before = part.state(true);
    let out = run_with_fault(&part, "compact::after-stage", |output| {
        // Verification reads the output back from it next.
        common::cluster::run(&["datanode", "restart", &holding(output)[0]]);
    });
    let ended = ended(&part, &before, &out, what);
    next_run_completes(&part, &ended, what);
}

/// The NameNode restarted while a run is paused at `failpoint`.
fn namenode_restarted_at(failpoint: &str, spec: &str, what: &str) {
    if !can_restart_the_namenode(what) {
        return;
    }
    let _turn = turn();
    let part = part("ext_p3", spec);
    let before = part.state(true);
    let out = run_with_fault(&part, failpoint, |_| {
        common::cluster::run(&["namenode", "restart"]);
    });
    let ended = ended(&part, &before, &out, what);
    next_run_completes(&part, &ended, what);
}

#[test]
fn the_namenode_restarted_after_staging() {
    namenode_restarted_at(
        "compact::after-stage",
        "region=eu/dt=2024-01-01/hour=13",
        "the NameNode restarted after staging",
    );
}

#[test]
fn the_namenode_restarted_while_an_output_is_written() {
    namenode_restarted_at(
        "compact::writing-output",
        "region=eu/dt=2024-01-02/hour=00",
        "the NameNode restarted while an output is written",
    );
}
