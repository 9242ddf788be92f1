//! Batched compaction (`--batch-size`) against real metastores, HMS 4.0.1 and 3.1.3: one lock
//! request and one `alter_partitions` for a batch of a table's partitions, and every promise a
//! partition had on its own still kept. A batch of 50 where one partition is locked by another
//! client, one gets a late file between staging and swap and one's staged file is corrupted
//! swaps the other 47 in one alter call (counted by the tool's meter and seen as 47 events in
//! the metastore's notification log) and leaves the three untouched; the batched call cut off
//! by the fault proxy leaves each partition swapped or untouched, and a rerun settles them;
//! rollback and cleanup of one partition of a batch leave the others alone; `--batch-size 1`
//! is one `alter_partition` per partition, as before batches.
//!
//! The fault proxy only cuts its own connections: these tests share the cluster with others.

#![cfg(feature = "cluster-tests")]

use std::collections::BTreeMap;
use std::process::{Child, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::common::events::{altered_partitions, current_id};
use crate::common::failpoints::wait_while_running;
use crate::common::fixtures::{self, Fixtures};
use crate::common::hdfs::{copy, files_in, hdfs, loc, read_file, write_file};
use crate::common::metastore::metastore;
use crate::common::orc_tools::java_metas;
use crate::common::partition::{assert_untouched, Part, State};
use crate::common::proxy::{Fault, Proxy};
use crate::common::{code, command, describe, env, reports, rt, RUN_ID, WORK_DIR};

const TABLE: &str = "fleet";

/// A `fleet` fixture database (one table of 50 partitions of 10 files) of the test's own on the
/// cluster at (`hms_uri`, `hdfs_url`), dropped when the value drops.
struct Fleet {
    fixtures: Fixtures,
    hms_uri: String,
}

impl Fleet {
    fn load(name: &str, hms_uri: &str, hdfs_url: &str) -> Fleet {
        let db = format!("{name}_{}", std::process::id());
        Fleet {
            fixtures: fixtures::load(&db, "fleet", hms_uri, hdfs_url),
            hms_uri: hms_uri.to_string(),
        }
    }

    fn parts(&self) -> Vec<Part> {
        self.fixtures
            .table(TABLE)
            .partitions
            .iter()
            .map(|p| Part::of(&self.fixtures, &self.hms_uri, TABLE, &p.spec))
            .collect()
    }

    fn qualified(&self) -> String {
        self.fixtures.qualified(TABLE)
    }

    /// `compact --table fleet --json --min-age 0s` with `extra`, not yet started.
    fn compact(&self, hms_uri: &str, extra: &[&str]) -> std::process::Command {
        let mut c = command(hms_uri);
        c.args([
            "compact",
            "--table",
            &self.qualified(),
            "--min-age",
            "0s",
            "--json",
        ])
        .args(extra)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
        c
    }
}

impl Drop for Fleet {
    fn drop(&mut self) {
        let _ = std::process::Command::new(crate::common::repo().join("scripts/fixtures"))
            .args(["--drop", "--db", &self.fixtures.database])
            .env("HMS_URI", &self.hms_uri)
            .env_remove("HIVE_CONF_DIR")
            .output();
    }
}

/// The run's per-partition reports by partition name, and its summary.
fn by_partition(out: &Output) -> (BTreeMap<String, Value>, Value) {
    let (by_key, summary) = reports(out);
    let by_partition = by_key
        .into_values()
        .map(|r| (r["partition"].as_str().unwrap().to_string(), r))
        .collect();
    (by_partition, summary["summary"].clone())
}

/// The run's metastore calls by method (its `total` left out).
fn calls(summary: &Value) -> BTreeMap<String, u64> {
    let mut by_method: BTreeMap<String, u64> = summary["metastore_calls"]
        .as_object()
        .unwrap_or_else(|| panic!("no metastore_calls in the summary: {summary}"))
        .iter()
        .map(|(m, n)| (m.clone(), n.as_u64().unwrap()))
        .collect();
    by_method.remove("total");
    by_method
}

/// The batched alter of the metastore at `hms_uri`: `alter_partitions_req` on HMS 4, the
/// legacy call with an environment context before.
fn batched_alter(hms_uri: &str) -> &'static str {
    if hms_uri == env("HMS_URI") {
        "alter_partitions_req"
    } else {
        "alter_partitions_with_environment_context"
    }
}

const SINGLE_ALTER: &str = "alter_partition_with_environment_context";

/// The batch's swaps went out as one batched alter and no single one. HMS 3.1.3 lacks
/// `alter_partitions_req`: a connection that does not know it yet tries it first (answered
/// UNKNOWN_METHOD, nothing done) and sends the legacy call, which is the one carried out.
fn check_one_batched_alter(hms_uri: &str, by_method: &BTreeMap<String, u64>) {
    let req = by_method.get("alter_partitions_req").copied().unwrap_or(0);
    let legacy = by_method
        .get("alter_partitions_with_environment_context")
        .copied()
        .unwrap_or(0);
    assert_eq!(by_method.get(SINGLE_ALTER), None, "{by_method:?}");
    if hms_uri == env("HMS_URI") {
        assert_eq!((req, legacy), (1, 0), "{by_method:?}");
    } else {
        assert!(req <= 1 && legacy == 1, "{by_method:?}");
    }
}

/// Whether the partition is swapped all the way: the metastore points at its run directory
/// (named by the run id it recorded) and the run's journal is in the work directory.
fn fully_swapped(part: &Part) -> bool {
    let (location, params) = part.location_and_parameters();
    let Some(run) = params.get(RUN_ID) else {
        return false;
    };
    location == format!("{}/{WORK_DIR}/{run}", part.home)
        && part.work_entries().contains(&format!("{run}.json"))
}

/// Rows of each file where each partition now points, read by Java orc-tools (one JVM for
/// all): every partition must hold the fixtures' rows in one file.
fn check_rows_by_java(parts: &[&Part]) {
    let mut files = Vec::new();
    let mut of_part = Vec::new();
    for p in parts {
        let dir = p.location();
        let here: Vec<String> = files_in(&dir)
            .into_iter()
            .map(|(name, _)| format!("{dir}/{name}"))
            .collect();
        assert_eq!(here.len(), 1, "{}: one file in {dir}: {here:?}", p.spec);
        of_part.push((p, here[0].clone()));
        files.extend(here);
    }
    let metas = java_metas(&files);
    for (p, file) in of_part {
        assert_eq!(
            metas[&file]["numberOfRows"].as_u64(),
            Some(p.rows),
            "{}: rows of {file} by orc-tools",
            p.spec
        );
    }
}

/// Waits (at most a minute) until one of `parts` shows `ready` in its work directory entries;
/// returns its index. The child must still be running.
fn wait_for(
    child: &mut Child,
    parts: &[Part],
    what: &str,
    ready: impl Fn(&[String]) -> bool,
) -> usize {
    let mut found = None;
    wait_while_running(child, what, Duration::from_secs(60), || {
        found = parts.iter().position(|p| ready(&p.work_entries()));
        found.is_some()
    });
    found.expect("ready")
}

/// Overwrites 64 bytes in the middle of the first staged file of `part`'s run (the file keeps
/// its length): what a disk or a buggy writer could do between staging and verification.
fn corrupt_staged_file(part: &Part) -> String {
    let staging = part
        .work_entries()
        .into_iter()
        .find(|n| n.ends_with(".staging"))
        .expect("a staging directory");
    let dir = format!("{}/{WORK_DIR}/{staging}", part.home);
    let (name, len) = files_in(&dir)
        .into_iter()
        .find(|(_, len)| *len > 200)
        .unwrap_or_else(|| panic!("no staged file in {dir}"));
    let path = format!("{dir}/{name}");
    let mut bytes = read_file(&path);
    let mid = bytes.len() / 2;
    for b in &mut bytes[mid..mid + 64] {
        *b ^= 0xa5;
    }
    rt().block_on(hdfs().delete(&loc(&path), false))
        .unwrap_or_else(|e| panic!("delete {path}: {e}"));
    write_file(&path, bytes);
    assert_eq!(
        files_in(&dir).iter().find(|(n, _)| *n == name).unwrap().1,
        len
    );
    path
}

// ---------------------------------------------------------------------------------------------
// 1. One batch of 50: one locked, one late file, one corrupted; 47 swapped in one alter.

fn batch_of_fifty(name: &str, hms_uri: &str, hdfs_url: &str) {
    let fleet = Fleet::load(name, hms_uri, hdfs_url);
    let parts = fleet.parts();
    assert_eq!(parts.len(), 50);
    let before: Vec<State> = parts.iter().map(|p| p.state(false)).collect();
    let locked = parts.len() - 1;
    let held = parts[locked].hold_lock("batch-test-writer");
    let ms = metastore(hms_uri);
    let start = current_id(&ms);

    // One partition at a time, so the first one staged is the one paused (and corrupted), and
    // the next one published is the one paused for the late file; each failpoint pauses once.
    let t0 = Instant::now();
    let mut child = fleet
        .compact(
            hms_uri,
            &[
                "--all",
                "--batch-size",
                "50",
                "--parallel",
                "1",
                "--lock-timeout",
                "0s",
            ],
        )
        .env(
            "FAILPOINTS",
            "compact::after-stage=1*sleep(8000);compact::after-publish=1*sleep(8000)",
        )
        .spawn()
        .expect("the binary starts");
    let corrupted = wait_for(&mut child, &parts, "staging", |e| {
        e.iter().any(|n| n.ends_with(".staging"))
    });
    std::thread::sleep(Duration::from_millis(1500));
    let staged = corrupt_staged_file(&parts[corrupted]);
    let late = wait_for(&mut child, &parts, "a publish", |e| {
        e.iter()
            .any(|n| !n.ends_with(".staging") && !n.ends_with(".json"))
    });
    assert_ne!(late, corrupted, "the corrupted partition published");
    let home = &parts[late].home;
    let first = &files_in(home)[0].0;
    copy(&format!("{home}/{first}"), &format!("{home}/000777_0"));
    let late_before = parts[late].state(false);
    let out = child.wait_with_output().expect("the run ends");
    let seconds = t0.elapsed().as_secs_f64();
    rt().block_on(held.release())
        .expect("the test releases its lock");

    let (found, summary) = by_partition(&out);
    assert_eq!(found.len(), 50, "{}", describe(&out));
    let status = |i: usize| {
        found[&parts[i].spec]["status"]
            .as_str()
            .unwrap_or("")
            .to_string()
    };
    assert_eq!(status(locked), "busy", "{}", found[&parts[locked].spec]);
    assert_eq!(status(late), "busy", "{}", found[&parts[late].spec]);
    assert!(
        found[&parts[late].spec]["reason"]
            .as_str()
            .is_some_and(|r| r.contains("000777_0")),
        "the late partition's reason names the late file: {}",
        found[&parts[late].spec]
    );
    assert_eq!(
        status(corrupted),
        "verification-failed",
        "{staged}: {}",
        found[&parts[corrupted].spec]
    );
    let compacted: Vec<usize> = (0..parts.len())
        .filter(|&i| ![locked, late, corrupted].contains(&i))
        .collect();
    for &i in &compacted {
        assert_eq!(status(i), "compacted", "{}", found[&parts[i].spec]);
    }
    assert_eq!(
        code(&out),
        5,
        "the worst: verification failed: {}",
        describe(&out)
    );

    // The three are untouched: the same metastore object, the same files.
    assert_untouched(
        &parts[locked],
        &before[locked],
        &parts[locked].state(false),
        "locked",
    );
    assert_untouched(
        &parts[corrupted],
        &before[corrupted],
        &parts[corrupted].state(false),
        "corrupted",
    );
    assert_untouched(
        &parts[late],
        &late_before,
        &parts[late].state(false),
        "late file",
    );
    assert_eq!(
        before[late].partition, late_before.partition,
        "the late file changed the metastore partition"
    );

    // The 47 in one alter call, counted by the tool and announced by the metastore.
    let announced = altered_partitions(&ms, start, &fleet.fixtures.database, TABLE);
    check_the_others(
        name, hms_uri, &parts, &found, &summary, &compacted, seconds, announced,
    );
    rerun_compacts_the_three(&fleet, hms_uri, &parts, [locked, late, corrupted]);
}

/// The partitions of the batch that were neither busy nor failed: compacted, in one alter
/// call (counted by the tool), each announced by the metastore with its new location, each
/// holding its rows as Java reads them.
#[allow(clippy::too_many_arguments)]
fn check_the_others(
    name: &str,
    hms_uri: &str,
    parts: &[Part],
    found: &BTreeMap<String, Value>,
    summary: &Value,
    compacted: &[usize],
    seconds: f64,
    mut announced: Vec<(Vec<String>, String)>,
) {
    let by_method = calls(summary);
    let total: u64 = by_method.values().sum();
    eprintln!(
        "{name}: 50 partitions in {seconds:.1}s, {total} metastore calls, {:.2} per partition: \
         {by_method:?}",
        total as f64 / 50.0
    );
    check_one_batched_alter(hms_uri, &by_method);
    let mut swapped: Vec<(Vec<String>, String)> = compacted
        .iter()
        .map(|&i| {
            let location = parts[i].location();
            assert_eq!(
                found[&parts[i].spec]["new_location"].as_str(),
                Some(location.as_str())
            );
            assert!(fully_swapped(&parts[i]), "{}", parts[i].spec);
            (parts[i].values.clone(), location)
        })
        .collect();
    swapped.sort();
    announced.sort();
    assert_eq!(
        announced, swapped,
        "47 altered partitions with their new locations"
    );
    let compacted_parts: Vec<&Part> = compacted.iter().map(|&i| &parts[i]).collect();
    check_rows_by_java(&compacted_parts);
}

/// The three in the next batch, once the writer is gone: one alter for them.
fn rerun_compacts_the_three(fleet: &Fleet, hms_uri: &str, parts: &[Part], three: [usize; 3]) {
    let rerun = fleet
        .compact(hms_uri, &["--all"])
        .output()
        .expect("the rerun");
    assert_eq!(code(&rerun), 0, "{}", describe(&rerun));
    let (found, summary) = by_partition(&rerun);
    for i in three {
        assert_eq!(
            found[&parts[i].spec]["status"], "compacted",
            "{}",
            found[&parts[i].spec]
        );
    }
    check_one_batched_alter(hms_uri, &calls(&summary));
}

#[test]
fn a_batch_of_fifty_swaps_47_in_one_alter_on_hms_4() {
    batch_of_fifty("batch50_4", &env("HMS_URI"), &env("HDFS_URL"));
}

#[test]
fn a_batch_of_fifty_swaps_47_in_one_alter_on_hms_3_1() {
    batch_of_fifty("batch50_31", &env("HMS31_URI"), &env("HDFS31_URL"));
}

// ---------------------------------------------------------------------------------------------
// 2. The batched alter cut off: each partition swapped or untouched; a rerun settles them.

/// The batched alter of ten partitions (`dt` from `first` to `last`) cut off by `fault`: each
/// partition is fully swapped or untouched, none in between; a rerun settles them all.
fn alter_cut_off(fleet: &Fleet, hms_uri: &str, (first, last): (&str, &str), fault: Fault) {
    let parts: Vec<Part> = fleet
        .parts()
        .into_iter()
        .filter(|p| (first..=last).contains(&p.values[0].as_str()))
        .collect();
    assert_eq!(parts.len(), 10);
    let selection = format!("dt >= '{first}' and dt <= '{last}'");
    let before: Vec<State> = parts.iter().map(|p| p.state(false)).collect();
    let what = format!("{fault:?}");
    let proxy = Proxy::start(hms_uri, fault);
    let out = fleet
        .compact(&proxy.uri(), &["--where", &selection, "--batch-size", "50"])
        .output()
        .expect("the run ends");
    assert!(proxy.cut(), "{what} never struck: {}", describe(&out));
    drop(proxy);
    let (found, _) = by_partition(&out);
    let statuses: Vec<String> = found
        .values()
        .map(|r| format!("{} {}", r["partition"], r["status"]))
        .collect();
    eprintln!("{what}: exit {}, {statuses:?}", code(&out));
    for (p, b) in parts.iter().zip(&before) {
        let r = &found[&p.spec];
        if fully_swapped(p) {
            let location = p.location();
            assert_eq!(r["new_location"].as_str(), Some(location.as_str()), "{r}");
        } else {
            assert_untouched(p, b, &p.state(false), &what);
            assert_ne!(r["status"], "compacted", "{what}: {r}");
        }
    }

    let rerun = fleet
        .compact(hms_uri, &["--where", &selection])
        .output()
        .expect("the rerun");
    assert_eq!(code(&rerun), 0, "{what}: {}", describe(&rerun));
    let (found, _) = by_partition(&rerun);
    for p in &parts {
        let status = found[&p.spec]["status"].as_str().unwrap_or("");
        assert!(
            status == "compacted" || status == "nothing-to-do",
            "{what}: {}",
            found[&p.spec]
        );
        assert!(fully_swapped(p), "{what}: {} after the rerun", p.spec);
        let v = p.run("verify", &[]);
        assert_eq!(code(&v), 0, "verify {}: {}", p.spec, describe(&v));
    }
    check_rows_by_java(&parts.iter().collect::<Vec<_>>());
}

/// The alter's reply lost (the metastore applied it), then the alter itself lost.
fn alter_lost(name: &str, hms_uri: &str, hdfs_url: &str) {
    let fleet = Fleet::load(name, hms_uri, hdfs_url);
    let method = batched_alter(hms_uri).to_string();
    let refuse_for = Duration::from_secs(3);
    let reply_lost = Fault::CutAfterReply {
        method: method.clone(),
        nth: 1,
        refuse_for,
    };
    alter_cut_off(&fleet, hms_uri, ("2026-10-01", "2026-10-10"), reply_lost);
    let request_lost = Fault::CutAtRequest {
        method,
        nth: 1,
        refuse_for,
    };
    alter_cut_off(&fleet, hms_uri, ("2026-10-11", "2026-10-20"), request_lost);
}

#[test]
fn the_batched_alter_cut_off_leaves_each_partition_swapped_or_untouched_on_hms_4() {
    alter_lost("batchcut_4", &env("HMS_URI"), &env("HDFS_URL"));
}

#[test]
fn the_batched_alter_cut_off_leaves_each_partition_swapped_or_untouched_on_hms_3_1() {
    alter_lost("batchcut_31", &env("HMS31_URI"), &env("HDFS31_URL"));
}

// ---------------------------------------------------------------------------------------------
// 3. Rollback and cleanup of one partition of a batch.

#[test]
fn rollback_and_cleanup_of_one_partition_of_a_batch_leave_the_others_alone() {
    let hms_uri = env("HMS_URI");
    let fleet = Fleet::load("batchundo", &hms_uri, &env("HDFS_URL"));
    let parts = fleet.parts();
    let batch = &parts[..4];
    let homes: Vec<Vec<(String, u64)>> = batch.iter().map(|p| files_in(&p.home)).collect();
    let out = fleet
        .compact(&hms_uri, &["--where", "dt <= '2026-10-04'"])
        .output()
        .expect("the run");
    assert_eq!(code(&out), 0, "{}", describe(&out));
    let (_, summary) = by_partition(&out);
    assert_eq!(calls(&summary).get("alter_partitions_req"), Some(&1));
    let compacted: Vec<State> = batch.iter().map(|p| p.state(false)).collect();

    // Rollback of the first: it alone points home again.
    batch[0].ok("rollback", &[], 0);
    assert_eq!(batch[0].location(), batch[0].home);
    for (p, s) in batch.iter().zip(&compacted).skip(1) {
        assert_untouched(p, s, &p.state(false), "rollback of another partition");
    }

    // Cleanup: the rolled-back partition keeps its own files (only its run's outputs go);
    // the others keep where they point and their new files, and lose only their inputs.
    let ms = metastore(&hms_uri);
    let start = current_id(&ms);
    batch[0].cleanup(&[]);
    assert_eq!(batch[0].location(), batch[0].home);
    assert_eq!(
        files_in(&batch[0].home),
        homes[0],
        "the rolled-back partition's files"
    );
    for (p, s) in batch.iter().zip(&compacted).skip(1) {
        let now = p.state(false);
        assert!(
            s.partition == now.partition,
            "{}: cleanup changed its partition",
            p.spec
        );
        assert!(
            files_in(&p.home).is_empty(),
            "{}: its replaced files are gone",
            p.spec
        );
    }
    assert_eq!(
        altered_partitions(&ms, start, &fleet.fixtures.database, TABLE),
        vec![],
        "cleanup altered no partition"
    );
    check_rows_by_java(&batch.iter().skip(1).collect::<Vec<_>>());
    for p in batch {
        let v = p.run("verify", &[]);
        assert_eq!(code(&v), 0, "verify {}: {}", p.spec, describe(&v));
    }
    // The partitions outside the batch: never compacted, their files where they were.
    for p in &parts[4..] {
        assert_eq!(p.location(), p.home);
        assert_eq!(files_in(&p.home).len() as u64, p.files);
    }
}

// ---------------------------------------------------------------------------------------------
// 4. `--batch-size 1`: one alter_partition per partition, as before batches.

#[test]
fn batch_size_one_is_one_alter_partition_per_partition() {
    let hms_uri = env("HMS_URI");
    let fleet = Fleet::load("batchone", &hms_uri, &env("HDFS_URL"));
    let out = fleet
        .compact(
            &hms_uri,
            &["--where", "dt <= '2026-10-03'", "--batch-size", "1"],
        )
        .output()
        .expect("the run");
    assert_eq!(code(&out), 0, "{}", describe(&out));
    let (found, summary) = by_partition(&out);
    assert_eq!(found.len(), 3, "{}", describe(&out));
    assert!(
        found.values().all(|r| r["status"] == "compacted"),
        "{found:?}"
    );
    let by_method = calls(&summary);
    eprintln!("batch size 1, 3 partitions: {by_method:?}");
    assert_eq!(by_method.get(SINGLE_ALTER), Some(&3), "{by_method:?}");
    assert_eq!(by_method.get("alter_partitions_req"), None, "{by_method:?}");
    // Each partition on its own: a staging lock, then one for EXCLUSIVE.
    assert_eq!(
        by_method.get("lock"),
        Some(&6),
        "two lock requests per partition: {by_method:?}"
    );
}
