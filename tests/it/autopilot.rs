//! The autopilot against the real cluster: budgets shared fairly among three tables, the most
//! benefit per cost first, a second run going on where the first stopped, the history equal to
//! the runs' reports and kept by a killed run, and a partition with a corrupt file suspended
//! after three runs and resumed once the file is replaced.

#![cfg(feature = "cluster-tests")]

use std::collections::{BTreeMap, BTreeSet};
use std::process::{Output, Stdio};
use std::time::{Duration, Instant};

use crate::common::{self, *};
use crate::fleet::split;
use hive_orc_compactor::hdfs::Location;
use serde_json::Value;

const TABLES: [&str; 3] = ["ap_big", "ap_small1", "ap_small2"];

fn compact(f: &Fixtures, tables: &str, extra: &[&str]) -> Output {
    let mut args = vec![
        "compact",
        "--database",
        &f.database,
        "--tables",
        tables,
        "--all",
        "--min-age",
        "0s",
        "--json",
    ];
    args.extend_from_slice(extra);
    run(&args)
}

fn history(f: &Fixtures, table: &str) -> Value {
    let o = run(&["history", "--table", &f.qualified(table), "--json"]);
    assert!(o.status.success(), "{}", describe(&o));
    json(&o)["tables"][0].clone()
}

fn key(r: &Value) -> (String, String) {
    (
        r["table"].as_str().unwrap().to_string(),
        r["partition"].as_str().unwrap().to_string(),
    )
}

#[test]
fn budgets_fairness_history_and_suspension() {
    // A name of its own per process: the killed run below leaves its partition lock in the
    // metastore until the lock times out, which a later run on a database of the same name
    // would meet.
    let db = OwnDatabase::create(&format!("autopilot_{}", std::process::id()), "autopilot");
    let f = &db.fixtures;
    let bytes = |t: &str| -> u64 { f.table(t).partitions.iter().map(|p| p.total_bytes).sum() };
    let third = TABLES.iter().map(|t| bytes(t)).sum::<u64>() / 3;
    let budget = format!("{third}B");

    // A budget that fits a third of the work: every table gets some, within the budget.
    let o = compact(f, "ap_*", &["--budget-bytes", &budget]);
    assert!(o.status.success(), "{}", describe(&o));
    let (rows, summary) = split(&o);
    assert_eq!(rows.len(), 18, "{rows:?}");
    let first: BTreeSet<(String, String)> = rows
        .iter()
        .filter(|r| r["status"] == "compacted")
        .map(key)
        .collect();
    for t in TABLES {
        let of_table = first.iter().filter(|(table, _)| *table == f.qualified(t));
        assert!(of_table.count() > 0, "{t} got no share: {first:?}");
    }
    let read: u64 = rows
        .iter()
        .filter(|r| r["status"] == "compacted")
        .map(|r| r["bytes_before"].as_u64().unwrap())
        .sum();
    assert!(read <= third, "{read} > {third}");
    let left: Vec<&Value> = rows.iter().filter(|r| r["status"] == "skipped").collect();
    assert_eq!(first.len() + left.len(), 18);
    for r in &left {
        assert!(
            r["reason"].as_str().unwrap().contains("the byte budget"),
            "{r}"
        );
    }
    // The most benefit per cost first: one of the big table's 7-file partitions.
    let big = f.table("ap_big");
    assert!(
        first
            .iter()
            .any(|(t, p)| *t == f.qualified("ap_big") && big.partition(p).file_count == 7),
        "{first:?}"
    );
    assert_eq!(summary["estimate"]["partitions"], first.len());
    assert!(summary["estimate"]["left_for_later"]["partitions"].as_u64() > Some(0));

    // The history equals the run's reports, table by table.
    for t in TABLES {
        let h = history(f, t);
        let runs = h["runs"].as_array().unwrap();
        assert_eq!(runs.len(), 1, "{h}");
        let run = &runs[0];
        assert!(run["finished_at"].is_string(), "{run}");
        assert_eq!(
            run["census"]["partitions"],
            3 + 9 * usize::from(t == "ap_big")
        );
        let reported: Vec<&Value> = rows
            .iter()
            .filter(|r| r["table"] == f.qualified(t))
            .collect();
        let skipped = reported.iter().filter(|r| r["status"] == "skipped").count();
        assert_eq!(run["skipped"], skipped);
        let recorded: BTreeMap<&str, &Value> = run["partitions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| (p["partition"].as_str().unwrap(), p))
            .collect();
        assert_eq!(recorded.len(), reported.len() - skipped);
        for r in reported.iter().filter(|r| r["status"] != "skipped") {
            let p = recorded[r["partition"].as_str().unwrap()];
            for field in [
                "status",
                "run_id",
                "files_before",
                "files_after",
                "bytes_before",
                "bytes_after",
                "seconds",
                "work_seconds",
            ] {
                assert_eq!(p[field], r[field], "{t} {field}: {p} vs {r}");
            }
            assert_eq!(p["way"], "copy");
            assert!(p["estimated_seconds"].as_f64() > Some(0.0), "{p}");
        }
    }

    // A second run goes on where the first stopped.
    let o = compact(f, "ap_*", &["--budget-bytes", &budget]);
    assert!(o.status.success(), "{}", describe(&o));
    let (rows, _) = split(&o);
    let second: BTreeSet<(String, String)> = rows
        .iter()
        .filter(|r| r["status"] == "compacted")
        .map(key)
        .collect();
    assert!(!second.is_empty(), "{rows:?}");
    assert!(first.is_disjoint(&second), "{first:?} {second:?}");
    assert!(
        rows.iter()
            .any(|r| r["table"] == f.qualified("ap_big") && r["status"] == "skipped"),
        "work left in ap_big for the killed run: {rows:?}"
    );

    killed_run_leaves_its_history(f);
    corrupt_partition_is_suspended_then_resumes(f);
    census_page_draws_the_history(f);
}

/// `analyze --html` draws each table's files and mean file size over the runs on record,
/// a point per run with a census, and opens in headless Chromium without a console message.
fn census_page_draws_the_history(f: &Fixtures) {
    let dir = tempfile::tempdir().unwrap();
    let page = dir.path().join("census.html");
    let page_arg = page.to_str().unwrap();
    let o = run(&[
        "analyze",
        "--database",
        &f.database,
        "--tables",
        "ap_*",
        "--json",
        "--html",
        page_arg,
    ]);
    assert!(o.status.success(), "{}", describe(&o));
    let (_, summary) = split(&o);
    let dom = crate::census_page::rendered_by_chromium(page_arg, &dir.path().join("shot.png"));
    assert!(dom.contains("<svg class=\"trend\""), "the charts over time");
    for t in TABLES {
        let runs = history(f, t)["runs"].as_array().unwrap().clone();
        let with_census: Vec<&Value> = runs.iter().filter(|r| r["census"].is_object()).collect();
        assert!(!with_census.is_empty(), "{t}");
        for r in &with_census {
            let run = r["run"].as_str().unwrap();
            // Two charts, files and mean size: each has the run's point.
            let points = dom.matches(&format!("data-run=\"{run}\"")).count();
            assert!(points >= 2, "{t} {run}: {points} points");
        }
    }
    assert!(summary["total"]["health"].as_u64().is_some(), "{summary}");
}

/// A run killed between two partitions: the history keeps the partition it finished, its end
/// unset, and the next run reads it.
fn killed_run_leaves_its_history(f: &Fixtures) {
    let table = f.qualified("ap_big");
    let before = history(f, "ap_big")["runs"].as_array().unwrap().len();
    let mut child = command(&env("HMS_URI"))
        .args([
            "compact",
            "--table",
            &table,
            "--all",
            "--min-age",
            "0s",
            "--parallel",
            "1",
            "--batch-size",
            "1",
            "--json",
        ])
        .env("FAILPOINTS", "compact::before-swap=sleep(3000)")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let running = first_record_of_a_running_run(f, before);
    let _ = child.kill();
    let _ = child.wait();
    let killed = running.unwrap_or_else(|h| panic!("no partition recorded in two minutes: {h}"));
    let h = history(f, "ap_big");
    let runs = h["runs"].as_array().unwrap();
    let kept = runs.iter().find(|r| r["run"] == killed["run"]).unwrap();
    assert!(kept["finished_at"].is_null(), "{kept}");
    assert_eq!(kept["partitions"][0]["status"], "compacted", "{kept}");
    // The next run reads it: its estimates use the rates learnt from the runs on record.
    let o = run(&[
        "compact",
        "--table",
        &table,
        "--all",
        "--min-age",
        "0s",
        "--dry-run",
        "--json",
    ]);
    let (_, summary) = split(&o);
    assert!(
        summary["estimate"]["learnt"].as_u64() > Some(0),
        "{summary}"
    );
    let text = run(&["history", "--table", &table]);
    assert!(
        stdout(&text).contains("did not finish"),
        "{}",
        stdout(&text)
    );
}

/// The newest run of ap_big once it is past `before` runs, unfinished, with a partition
/// recorded; the history as last read if none shows up in two minutes.
fn first_record_of_a_running_run(f: &Fixtures, before: usize) -> Result<Value, Value> {
    let started = Instant::now();
    loop {
        let h = history(f, "ap_big");
        let runs = h["runs"].as_array().cloned().unwrap_or_default();
        let running = runs.last().filter(|r| {
            runs.len() > before
                && r["finished_at"].is_null()
                && r["partitions"].as_array().is_some_and(|p| !p.is_empty())
        });
        if let Some(r) = running {
            return Ok(r.clone());
        }
        if started.elapsed() > Duration::from_secs(120) {
            return Err(h);
        }
        std::thread::sleep(Duration::from_millis(300));
    }
}

/// A partition with a file that is not ORC is refused every run; after three it is skipped as
/// suspended (its table flagged, analyze says so) until the file is replaced.
fn corrupt_partition_is_suspended_then_resumes(f: &Fixtures) {
    let table = f.qualified("ap_small1");
    // Every other partition done, so the corrupt one is the table's only work.
    let o = compact(f, "ap_small1", &[]);
    assert!(o.status.success(), "{}", describe(&o));
    let (rows, _) = split(&o);
    let n0 = rows.iter().find(|r| r["partition"] == "n=0").unwrap();
    let location = Location::parse(
        n0["new_location"]
            .as_str()
            .or(n0["old_location"].as_str())
            .unwrap(),
    )
    .unwrap();
    let garbage = location.child("garbage.txt");
    rt().block_on(async {
        let mut w = common::hdfs::hdfs().create(&garbage, 0o644).await.unwrap();
        w.write_bytes(bytes::Bytes::from_static(b"not orc\n"))
            .await
            .unwrap();
        w.close().await.unwrap();
    });
    for attempt in 1..=3 {
        let o = compact(f, "ap_small1", &[]);
        let (rows, _) = split(&o);
        let r = rows.iter().find(|r| r["partition"] == "n=0").unwrap();
        assert_eq!(r["status"], "refused", "attempt {attempt}: {r}");
    }
    let o = compact(f, "ap_small1", &[]);
    assert!(o.status.success(), "{}", describe(&o));
    let (rows, summary) = split(&o);
    let r = rows.iter().find(|r| r["partition"] == "n=0").unwrap();
    assert_eq!(r["status"], "skipped", "{r}");
    let reason = r["reason"].as_str().unwrap();
    assert!(reason.starts_with("suspended: "), "{reason}");
    assert!(reason.contains("--retry-suspended"), "{reason}");
    assert_eq!(summary["suspended"][0], format!("{table}/n=0"));
    assert_eq!(summary["tables_suspended"][0], table);
    let o = run(&["analyze", "--table", &table, "--json"]);
    let (rows, summary) = split(&o);
    let r = rows.iter().find(|r| r["partition"] == "n=0").unwrap();
    assert!(r["suspended"].is_string(), "{r}");
    assert_eq!(summary["total"]["suspended"], 1);
    assert_eq!(summary["total"]["backlog"]["partitions"], 0, "{summary}");
    // --retry-suspended tries it again (and it is refused again).
    let o = compact(f, "ap_small1", &["--retry-suspended"]);
    let (rows, _) = split(&o);
    let r = rows.iter().find(|r| r["partition"] == "n=0").unwrap();
    assert_eq!(r["status"], "refused", "{r}");

    // The file replaced by a real ORC file: the partition's files changed, so it resumes.
    rt().block_on(async {
        let hdfs = common::hdfs::hdfs();
        hdfs.delete(&garbage, false).await.unwrap();
        let donor = f.table("ap_small1").partition("n=1").files[0].clone();
        let from = Location::parse(&format!(
            "{}/{}",
            f.table("ap_small1").partition("n=1").location,
            donor.path
        ))
        .unwrap();
        let data = hdfs
            .open(&from)
            .await
            .unwrap()
            .read_range(0, donor.bytes as usize)
            .await
            .unwrap();
        let mut w = hdfs
            .create(&location.child("replaced.orc"), 0o644)
            .await
            .unwrap();
        w.write_bytes(data).await.unwrap();
        w.close().await.unwrap();
    });
    let o = compact(f, "ap_small1", &[]);
    assert!(o.status.success(), "{}", describe(&o));
    let (rows, summary) = split(&o);
    let r = rows.iter().find(|r| r["partition"] == "n=0").unwrap();
    assert_eq!(r["status"], "compacted", "{r}");
    assert!(summary["suspended"].as_array().unwrap().is_empty());
}
