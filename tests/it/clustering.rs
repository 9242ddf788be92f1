//! `compact --sort-by` / `--zorder` (issue #32): rows clustered while rewriting, on the fixture
//! set `clustering` (`clustering_events`: random-order events, half the files by ORC Java, half
//! by ORC C++). The rows read back by Java orc-tools and by ORC C++ (pyarrow) against the
//! inputs as multisets; the order across outputs and their row groups from orc-tools' row
//! index; what a reader gains from Spark 3.5 (`scripts/spark scan`: the rows its ORC scan read,
//! those of the row groups its pushdown did not skip); a forced spill, a kill while spilling,
//! a second run, and a usage error.
//!
//! Each test first checks that the binary has `--sort-by`: until issue #32 lands they fail
//! saying so.

#![cfg(feature = "cluster-tests")]

use crate::common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use crate::common::hdfs::{files_in, loc, read_file};
use crate::common::orc_tools::java_rows;
use crate::common::partition::{assert_untouched, Part};
use crate::common::pyorc::cpp_read;
use crate::common::spark;
use crate::common::{code, command, describe, env, json, repo, Fixtures, OwnDatabase};
use serde_json::Value;

fn db() -> &'static Fixtures {
    static DB: OnceLock<OwnDatabase> = OnceLock::new();
    &common::own_database(&DB, "clustering", "clustering").fixtures
}

const TABLE: &str = "clustering_events";
/// 500 files x 2,000 rows: sorted by customer_id.
const SORT: &str = "dt=2026-11-01";
/// The same shape: z-ordered.
const ZORDER: &str = "dt=2026-11-02";
/// 4 files x 50,000 rows: sorted with a forced spill.
const SPILL: &str = "dt=2026-11-03";
/// The same shape: killed while spilling.
const KILL: &str = "dt=2026-11-04";
/// The same shape: sorted and re-encoded with 1, 2 and 4 threads.
const THREADS: &str = "dt=2026-11-05";
/// The same shape: its sorted outputs read back wrong.
const READ_BACK: &str = "dt=2026-11-06";
/// The same shape: sorted by a column its files lack.
const NO_COLUMN: &str = "dt=2026-11-07";
/// The same shape: its sorted outputs fail to close.
const CLOSE: &str = "dt=2026-11-08";

/// The ORC writers' default row index stride: a row group's rows.
const ROW_GROUP: u64 = 10_000;

fn part(spec: &str) -> Part {
    Part::of(db(), &env("HMS_URI"), TABLE, spec)
}

/// The binary without the test default `HOC_STRIPES=copy` (a stripe copy cannot reorder rows).
fn tool(part: &Part) -> Command {
    let mut c = command(&part.hms_uri);
    c.env_remove("HOC_STRIPES");
    c
}

fn compact(part: &Part, extra: &[&str]) -> Output {
    tool(part)
        .args(part.args("compact", extra))
        .stdin(Stdio::null())
        .output()
        .expect("the binary runs")
}

/// The partition's report in a `compact --json` output.
fn report(out: &Output) -> Value {
    json(out)
}

/// What a report says the run did to the rows' order. The report's object is `clustering`
/// (`by`, `columns`, `runs`, `spilled_bytes`, `before`, `after`) or, as the work in progress
/// named it, `layout` (`layout`: "sort(customer_id ASC NULLS FIRST); codec=ZSTD",
/// `spilled_runs`, `spilled_bytes`, `before`, `after`): both are read.
#[derive(Debug)]
struct Clustering {
    by: String,
    columns: Vec<String>,
    /// Sorted runs (`runs`) or spilled runs (`spilled_runs`).
    runs: u64,
    spilled_bytes: u64,
    /// Mean fraction of row groups a point lookup on customer_id reads.
    before: Option<f64>,
    after: Option<f64>,
}

fn clustering(r: &Value) -> Clustering {
    let c = r
        .get("clustering")
        .or_else(|| r.get("layout"))
        .unwrap_or_else(|| panic!("the report says how it clustered: {r}"));
    let (by, columns) = match c["by"].as_str() {
        Some(by) => (
            by.to_string(),
            c["columns"]
                .as_array()
                .expect("columns")
                .iter()
                .map(|x| x.as_str().expect("a column").to_string())
                .collect(),
        ),
        None => {
            let text = c["layout"]
                .as_str()
                .unwrap_or_else(|| panic!("a layout: {r}"));
            let (by, rest) = text.split_once('(').unwrap_or_else(|| panic!("{text}"));
            let inside = rest.split(')').next().unwrap_or_default();
            let columns = inside
                .split(',')
                .filter_map(|x| x.split_whitespace().next())
                .map(str::to_string)
                .collect();
            (by.trim().to_string(), columns)
        }
    };
    Clustering {
        by,
        columns,
        runs: c["runs"]
            .as_u64()
            .or(c["spilled_runs"].as_u64())
            .unwrap_or(0),
        spilled_bytes: c["spilled_bytes"].as_u64().unwrap_or(0),
        before: c["before"]["customer_id"].as_f64(),
        after: c["after"]["customer_id"].as_f64(),
    }
}

/// `compact` with `extra`, which must compact (exit 0, status compacted); its report.
fn compacted(part: &Part, extra: &[&str]) -> Value {
    let t0 = Instant::now();
    let out = compact(part, extra);
    assert_eq!(code(&out), 0, "compact {extra:?}: {}", describe(&out));
    let r = report(&out);
    assert_eq!(r["status"], "compacted", "compact {extra:?}: {r}");
    eprintln!(
        "compact {} {extra:?}: {:.1}s",
        part.spec,
        t0.elapsed().as_secs_f64()
    );
    r
}

/// Full paths of the visible files in `dir`, by name.
fn data_files(dir: &str) -> Vec<String> {
    let mut names: Vec<String> = files_in(dir).into_iter().map(|(n, _)| n).collect();
    names.sort();
    names
        .iter()
        .map(|n| loc(dir).child(n).to_string())
        .collect()
}

// ------------------------------------------------------------------------------------ Spark

/// What one WHERE clause made Spark's ORC scan read.
#[derive(Debug, serde::Deserialize)]
struct Scan {
    #[serde(rename = "where")]
    filter: String,
    count: u64,
    scan_output_rows: u64,
    /// Spark's "number of files read": the files listed, whatever their statistics skipped.
    #[allow(dead_code)]
    files_read: u64,
}

/// `scripts/spark scan` of each (partition, WHERE clauses) in one Spark session.
fn spark_scan(reads: &[(&Part, &[&str])]) -> Vec<(u64, Vec<Scan>)> {
    let all: Vec<Value> = serde_json::from_value(spark::run("scan", reads)).expect("partitions");
    all.into_iter()
        .map(|p| {
            let scans = serde_json::from_value(p["queries"].clone()).expect("queries");
            (p["rows"].as_u64().expect("rows"), scans)
        })
        .collect()
}

// ------------------------------------------------------------------------------------ rows

/// Every row of `files` as orc-tools prints it (one JSON object each), files in order.
fn java_rows_in_order(files: &[String]) -> Vec<String> {
    java_rows(files).into_iter().flatten().collect()
}

/// Every row of `files` as ORC C++ reads it (one JSON array each), files in order.
fn cpp_rows_in_order(files: &[String]) -> Vec<String> {
    cpp_read(files)
        .into_iter()
        .flat_map(|f| f.rows.into_iter().map(|r| r.to_string()))
        .collect()
}

fn sorted(mut rows: Vec<String>) -> Vec<String> {
    rows.sort_unstable();
    rows
}

/// Two multisets of rows, equal; on a difference, the first few rows in either alone.
fn assert_same_rows(what: &str, before: &[String], after: &[String]) {
    if before == after {
        return;
    }
    let (mut i, mut j, mut only_before, mut only_after) = (0, 0, vec![], vec![]);
    while (i < before.len() || j < after.len()) && only_before.len() + only_after.len() < 10 {
        match (before.get(i), after.get(j)) {
            (Some(a), Some(b)) if a == b => (i, j) = (i + 1, j + 1),
            (Some(a), Some(b)) if a < b => {
                only_before.push(a.clone());
                i += 1
            }
            (Some(_), Some(b)) | (None, Some(b)) => {
                only_after.push(b.clone());
                j += 1
            }
            (Some(a), None) => {
                only_before.push(a.clone());
                i += 1
            }
            (None, None) => break,
        }
    }
    panic!(
        "{what}: {} rows before, {} after; only before: {only_before:#?}; only after: \
         {only_after:#?}",
        before.len(),
        after.len()
    );
}

/// customer_id of an orc-tools row (`{"customer_id":123,...}`).
fn customer_id(row: &str) -> Option<i64> {
    let v: Value = serde_json::from_str(row).expect("a JSON row");
    v["customer_id"].as_i64()
}

/// The key of each row never decreases: within each output, then across them in name order
/// (customer_id is never null). `files` are the outputs' rows, file by file.
fn assert_ascending(what: &str, files: &[Vec<String>]) {
    let keys: Vec<Vec<i64>> = files
        .iter()
        .map(|rows| {
            rows.iter()
                .map(|r| customer_id(r).expect("customer_id is never null"))
                .collect()
        })
        .collect();
    for (f, k) in keys.iter().enumerate() {
        if let Some(i) = k.windows(2).position(|w| w[0] > w[1]) {
            panic!(
                "{what}: output {f}, row {} has customer_id {} after {}",
                i + 1,
                k[i + 1],
                k[i]
            );
        }
    }
    let ends: Vec<(i64, i64)> = keys
        .iter()
        .filter(|k| !k.is_empty())
        .map(|k| (k[0], k[k.len() - 1]))
        .collect();
    for (f, w) in ends.windows(2).enumerate() {
        assert!(
            w[0].1 <= w[1].0,
            "{what}: each output is sorted, but not across them: output {f} holds customer_id \
             {:?}, output {} {:?} (all outputs: {ends:?})",
            w[0],
            f + 1,
            w[1]
        );
    }
}

// ------------------------------------------------------------------------------ row index

/// (min, max) of ORC column `column` (an integer column) in every row group of each file, from
/// `orc-tools meta --rowindex`, files and row groups in order.
fn row_group_ranges(files: &[String], column: u32) -> Vec<Vec<(i64, i64)>> {
    let col = column.to_string();
    let out = Command::new(repo().join("scripts/orc-tools"))
        .args(["meta", "--rowindex", &col])
        .args(files)
        .stdin(Stdio::null())
        .output()
        .expect("scripts/orc-tools runs");
    assert!(
        out.status.success(),
        "orc-tools meta --rowindex: {}",
        describe(&out)
    );
    let text = String::from_utf8(out.stdout).expect("utf-8");
    let mut per_file: Vec<Vec<(i64, i64)>> = vec![];
    for line in text.lines() {
        if line.starts_with("Structure for ") {
            per_file.push(vec![]);
            continue;
        }
        let t = line.trim_start();
        if !t.starts_with("Entry ") {
            continue;
        }
        let field = |name: &str| -> Option<i64> {
            let at = t.find(&format!(" {name}: "))? + name.len() + 3;
            t[at..].split_whitespace().next()?.parse().ok()
        };
        if let (Some(min), Some(max)) = (field("min"), field("max")) {
            per_file.last_mut().expect("a file first").push((min, max));
        }
    }
    assert_eq!(
        per_file.len(),
        files.len(),
        "orc-tools described every file"
    );
    per_file
}

/// Row groups of the outputs, in order, hold disjoint key ranges: each one's max at most the
/// next one's min (equal only where one customer's rows span the boundary).
fn assert_row_groups_ordered(outputs: &[String]) -> usize {
    let groups: Vec<(i64, i64)> = row_group_ranges(outputs, 1).into_iter().flatten().collect();
    assert!(
        groups.len() > 50,
        "1,000,000 rows fill many row groups: {}",
        groups.len()
    );
    for (i, w) in groups.windows(2).enumerate() {
        assert!(
            w[0].1 <= w[1].0,
            "row group {} (customer_id {:?}) overlaps the next ({:?})",
            i,
            w[0],
            w[1]
        );
    }
    groups.len()
}

// ------------------------------------------------------------------------------------ tests

const POINT: &str = "customer_id = 4242";
const POINT_2: &str = "customer_id = 77777";
const RANGE: &str = "customer_id BETWEEN 50000 AND 50999";
const TS_RANGE: &str = "event_ts >= TIMESTAMP '2024-07-01 00:00:00' AND \
                        event_ts < TIMESTAMP '2024-07-04 15:50:24'";

#[test]
fn sort_by_orders_rows_across_outputs_and_row_groups_and_point_lookups_skip() {
    let p = part(SORT);
    let queries: &[&str] = &[POINT, POINT_2, RANGE];
    let inputs = data_files(&p.location());
    assert_eq!(inputs.len(), 500);

    // Before: random order, so a lookup's predicate skips nothing.
    let (rows, before) = spark_scan(&[(&p, queries)]).remove(0);
    assert_eq!(rows, 1_000_000);
    for q in &before {
        assert_eq!(
            q.scan_output_rows, rows,
            "unclustered, `{}` reads every row: {q:?}",
            q.filter
        );
    }
    let java_before = sorted(java_rows_in_order(&inputs));
    let cpp_before = sorted(cpp_rows_in_order(&inputs));
    assert_eq!(java_before.len(), 1_000_000);

    let r = compacted(&p, &["--sort-by", "customer_id"]);
    let cl = clustering(&r);
    assert_eq!(cl.by, "sort", "{r}");
    assert_eq!(cl.columns, ["customer_id"], "{r}");
    // Every input row group spans nearly all ids, so a point lookup reads about all of them
    // (1d868d5 reports 0.507: it probes at each row group's minimum, below most others' ranges).
    let (b, a) = (cl.before.expect("before"), cl.after.expect("after"));
    assert!(
        b > 0.9 && a < 0.05,
        "a point lookup's row groups, before {b}, after {a}: {r}"
    );

    // The same rows, by either reader (their order: at the end).
    let outputs = data_files(&p.location());
    assert!(!outputs.is_empty() && outputs.len() < 10, "{outputs:?}");
    let java_after = java_rows(&outputs);
    let all_after: Vec<String> = java_after.iter().flatten().cloned().collect();
    assert_same_rows("orc-tools", &java_before, &sorted(all_after));
    assert_same_rows("ORC C++", &cpp_before, &sorted(cpp_rows_in_order(&outputs)));

    // After: a point lookup reads at most the two row groups its key can span; a 1% range at
    // most its rows and the two row groups at its ends.
    let (rows_after, after) = spark_scan(&[(&p, queries)]).remove(0);
    assert_eq!(rows_after, rows);
    for (q0, q1) in before.iter().zip(&after) {
        assert_eq!(q0.count, q1.count, "`{}` selects the same rows", q0.filter);
        let most = if q1.filter == RANGE {
            q1.count + 2 * ROW_GROUP
        } else {
            2 * ROW_GROUP
        };
        assert!(
            q1.scan_output_rows <= most,
            "sorted, `{}` reads at most {most} rows: {q1:?}",
            q1.filter
        );
    }

    // Clustered the same way already: nothing to do, nothing touched.
    let state = p.state(true);
    let out = compact(&p, &["--sort-by", "customer_id"]);
    assert_eq!(code(&out), 0, "{}", describe(&out));
    let again = report(&out);
    assert_eq!(again["status"], "nothing-to-do", "{again}");
    assert_untouched(&p, &state, &p.state(true), "a second --sort-by run");

    // Last, as they say the most when they fail: the order within and across the outputs.
    assert_ascending("orc-tools rows in output order", &java_after);
    let groups = assert_row_groups_ordered(&outputs);
    eprintln!("{} outputs, {groups} row groups", outputs.len());
}

#[test]
fn zorder_skips_most_row_groups_for_a_range_on_either_column() {
    let p = part(ZORDER);
    let queries: &[&str] = &[RANGE, TS_RANGE];
    let inputs = data_files(&p.location());
    let (rows, before) = spark_scan(&[(&p, queries)]).remove(0);
    for q in &before {
        assert_eq!(q.scan_output_rows, rows, "unclustered: {q:?}");
    }
    let java_before = sorted(java_rows_in_order(&inputs));

    let r = compacted(&p, &["--zorder", "customer_id,event_ts"]);
    let cl = clustering(&r);
    assert_eq!(cl.by, "zorder", "{r}");
    assert_eq!(cl.columns, ["customer_id", "event_ts"], "{r}");

    let outputs = data_files(&p.location());
    assert_same_rows(
        "orc-tools",
        &java_before,
        &sorted(java_rows_in_order(&outputs)),
    );

    // A 1% range on one of two z-ordered keys meets about one row group in ten (sqrt of the
    // hundred), more where a row group's z-interval straddles a quadrant: "most row groups
    // skipped", half the rows read at most, against all of them in random order (1d868d5, two
    // groups z-ordered apart: 34% for event_ts).
    let (_, after) = spark_scan(&[(&p, queries)]).remove(0);
    for (q0, q1) in before.iter().zip(&after) {
        assert_eq!(q0.count, q1.count, "`{}` selects the same rows", q0.filter);
        assert!(
            q1.scan_output_rows <= rows / 2,
            "z-ordered, `{}` skips most row groups: {q1:?}",
            q1.filter
        );
    }
}

/// A spill directory of the test's own, made empty.
fn spill_dir(what: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("hoc-clustering-{}-{what}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("a spill directory");
    d
}

/// Everything under `dir`, recursively, relative.
fn entries(dir: &Path) -> Vec<String> {
    let mut out = vec![];
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        let Ok(rd) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in rd.flatten() {
            let path = e.path();
            out.push(path.strip_prefix(dir).unwrap().display().to_string());
            if path.is_dir() {
                todo.push(path);
            }
        }
    }
    out.sort();
    out
}

#[test]
fn a_forced_spill_sorts_the_same_and_leaves_the_spill_dir_empty() {
    let p = part(SPILL);
    let inputs = data_files(&p.location());
    let java_before = sorted(java_rows_in_order(&inputs));
    let dir = spill_dir("spill");
    let dir_text = dir.display().to_string();

    let r = compacted(
        &p,
        &[
            "--sort-by",
            "customer_id",
            "--sort-memory",
            "1MiB",
            "--spill-dir",
            &dir_text,
        ],
    );
    let cl = clustering(&r);
    // 200,000 decoded rows are many MiB: several sorted runs, spilled.
    assert!(cl.runs > 1, "{r}");
    assert!(cl.spilled_bytes > 0, "{r}");
    assert_eq!(
        entries(&dir),
        Vec::<String>::new(),
        "the spill dir is left empty"
    );

    let outputs = data_files(&p.location());
    let java_after = java_rows(&outputs);
    let all_after: Vec<String> = java_after.iter().flatten().cloned().collect();
    assert_same_rows("orc-tools", &java_before, &sorted(all_after));
    assert_ascending("rows after a spilled sort", &java_after);
    let _ = std::fs::remove_dir_all(&dir);
}

#[cfg(feature = "failpoints")]
#[test]
fn killed_in_a_parallel_sort_leaves_the_partition_untouched_and_the_next_run_clears_the_spill() {
    let p = part(KILL);
    let dir = spill_dir("kill");
    let dir_text = dir.display().to_string();
    // On two threads: the runs are sorted, and the inputs decoded, in parallel.
    let args = [
        "--sort-by",
        "customer_id",
        "--sort-memory",
        "1MiB",
        "--spill-dir",
        dir_text.as_str(),
        "--threads",
        "2",
    ];
    let before = p.state(false);

    // Paused after the first sorted run is spilled, then SIGKILLed. Without a lock: a killed
    // run's metastore lock would outlive it (tests/locks.rs).
    let mut extra = args.to_vec();
    extra.push("--no-lock");
    let mut child = tool(&p)
        .args(p.args("compact", &extra))
        .env("FAILPOINTS", "compact::spilled-run=pause")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("the binary starts");
    let t0 = Instant::now();
    // A spilled run is a file (`run-N.arrow` in a directory of the run's own).
    let spilled = |dir: &Path| entries(dir).iter().any(|e| e.ends_with(".arrow"));
    while !spilled(&dir) {
        assert!(
            child.try_wait().expect("wait").is_none(),
            "the run ended before it spilled"
        );
        assert!(t0.elapsed() < Duration::from_secs(60), "never spilled");
        std::thread::sleep(Duration::from_millis(50));
    }
    // Let it finish the spilled run and reach the pause.
    std::thread::sleep(Duration::from_millis(1500));
    assert!(
        child.try_wait().expect("wait").is_none(),
        "the run ended at the pause"
    );
    child.kill().expect("SIGKILL");
    child.wait().expect("reaped");
    let stale = entries(&dir);
    assert!(!stale.is_empty(), "the killed run left its spill behind");
    assert_untouched(&p, &before, &p.state(false), "a run killed while spilling");

    // The next run compacts and takes the stale spill files away with its own.
    let r = compacted(&p, &args);
    assert_eq!(clustering(&r).by, "sort", "{r}");
    assert_eq!(
        entries(&dir),
        Vec::<String>::new(),
        "stale spill files ({stale:?}) are gone"
    );
    let outputs = data_files(&p.location());
    assert_ascending("rows after the rerun", &java_rows(&outputs));
    let _ = std::fs::remove_dir_all(&dir);
}

/// The partition's data files, in name order (a run's outputs in output order), whole.
fn file_bytes(p: &Part) -> Vec<Vec<u8>> {
    let location = p.location();
    let mut names: Vec<String> = files_in(&location).into_iter().map(|(n, _)| n).collect();
    names.sort();
    names
        .iter()
        .filter(|n| !n.starts_with(['.', '_']))
        .map(|n| read_file(&format!("{location}/{n}")))
        .collect()
}

#[test]
fn one_two_and_four_threads_write_the_same_bytes() {
    let p = part(THREADS);
    // A sort that spills (runs of 2 MiB whatever the threads) and a plain re-encode into
    // outputs of about 2 MiB (two of the four 0.8 MiB files each), which more threads write
    // at once.
    let ways: [&[&str]; 2] = [
        &["--sort-by", "customer_id", "--sort-memory", "2MiB"],
        &["--stripes", "rewrite", "--target-size", "2MiB"],
    ];
    for way in ways {
        let mut written: Vec<(String, Vec<Vec<u8>>)> = Vec::new();
        for threads in ["1", "2", "4"] {
            let mut args = way.to_vec();
            args.extend(["--threads", threads]);
            compacted(&p, &args);
            written.push((threads.to_string(), file_bytes(&p)));
            p.ok("rollback", &[], 0);
        }
        let (_, one) = &written[0];
        assert!(!one.is_empty(), "{way:?} wrote files");
        if way.contains(&"--target-size") {
            assert!(
                one.len() > 1,
                "{way:?} wrote {} file(s), not several",
                one.len()
            );
        }
        for (threads, files) in &written[1..] {
            assert!(
                files == one,
                "{way:?}: --threads {threads} wrote other bytes than --threads 1 ({} files, {} \
                 bytes against {} files, {} bytes)",
                files.len(),
                files.iter().map(Vec::len).sum::<usize>(),
                one.len(),
                one.iter().map(Vec::len).sum::<usize>()
            );
        }
    }
}

/// A sort of a 4-file partition into several outputs of about 1 MiB, on two threads: one output
/// is closed and read back while the next is written.
#[cfg(feature = "failpoints")]
const SORTED_OUTPUTS: [&str; 6] = [
    "--sort-by",
    "customer_id",
    "--target-size",
    "1MiB",
    "--threads",
    "2",
];

/// `compact` of `p` with `args` in a test build that fails at `failpoints`, logging at debug.
#[cfg(feature = "failpoints")]
fn compact_failing(p: &Part, args: &[&str], failpoints: &str) -> Output {
    tool(p)
        .args(p.args("compact", args))
        .env("FAILPOINTS", failpoints)
        .env("RUST_LOG", "hive_orc_compactor=debug")
        .stdin(Stdio::null())
        .output()
        .expect("the binary runs")
}

/// A sorted group writes its outputs one at a time, and each is read back once closed, while
/// the next is written. Every batch's rows reversed on the way to the writer: the first output
/// read back fails on its order-sensitive digests, and the run stops before the swap with the
/// partition as it was.
#[cfg(feature = "failpoints")]
#[test]
fn a_sorted_output_read_back_wrong_while_the_next_is_written_stops_the_run() {
    use common::partition::assert_untouched;

    let p = part(READ_BACK);
    let before = p.state(true);
    let out = compact_failing(&p, &SORTED_OUTPUTS, "compact::rewrite-reorder=return");
    assert_eq!(code(&out), 5, "{}", describe(&out));
    let r = report(&out);
    assert_eq!(r["status"], "verification-failed", "{r}");
    assert!(r["reason"].as_str().unwrap().contains("digest"), "{r}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr
            .matches("a sorted output read back as soon as it was closed")
            .count()
            > 1,
        "{}",
        describe(&out)
    );
    assert_untouched(
        &p,
        &before,
        &p.state(true),
        "a sorted output read back wrong",
    );
}

/// A sorted output closes while the next is written. A close that fails, the first (beside
/// the next output's write) or the last (after every write), stops the run before the swap:
/// the partition as it was, no staging left, and the next run compacts.
#[cfg(feature = "failpoints")]
#[test]
fn a_sorted_output_that_fails_to_close_stops_the_run_and_leaves_the_partition_untouched() {
    let p = part(CLOSE);
    // How many outputs the sort writes, so that the last close can be failed.
    let r = compacted(&p, &SORTED_OUTPUTS);
    let outputs = r["files_after"].as_u64().unwrap_or(0);
    assert!(outputs >= 2, "several outputs: {r}");
    p.ok("rollback", &[], 0);
    let before = p.state(true);
    let last = format!("{}*off->return", outputs - 1);
    for (failing, which) in [("return", "first"), (last.as_str(), "last")] {
        let failpoints = format!("compact::closing-output={failing}");
        let out = compact_failing(&p, &SORTED_OUTPUTS, &failpoints);
        assert_eq!(code(&out), 1, "{which} close: {}", describe(&out));
        let r = report(&out);
        assert_eq!(r["status"], "failed", "{which} close: {r}");
        let reason = r["reason"].as_str().unwrap_or("");
        assert!(
            reason.contains("closing ") && reason.contains("compact::closing-output"),
            "{which} close: {r}"
        );
        assert!(r["new_location"].is_null(), "{which} close: {r}");
        assert_untouched(
            &p,
            &before,
            &p.state(true),
            &format!("the {which} sorted output failed to close"),
        );
    }
    let r = compacted(&p, &SORTED_OUTPUTS);
    assert_eq!(clustering(&r).by, "sort", "{r}");
    assert_ascending(
        "rows after the failed closes",
        &java_rows(&data_files(&p.location())),
    );
}

#[test]
fn stripes_copy_with_sort_by_is_a_usage_error() {
    let p = part(SORT);
    let out = compact(&p, &["--stripes", "copy", "--sort-by", "customer_id"]);
    assert_eq!(code(&out), 2, "{}", describe(&out));
    let out = compact(
        &p,
        &["--stripes", "copy", "--zorder", "customer_id,event_ts"],
    );
    assert_eq!(code(&out), 2, "{}", describe(&out));
}

/// A key column the files lack stops the partition while it is planned: `--dry-run` says so,
/// and a run writes nothing.
#[test]
fn a_sort_key_the_files_lack_fails_the_plan_and_leaves_the_partition_untouched() {
    use common::partition::assert_untouched;

    let p = part(NO_COLUMN);
    let before = p.state(true);
    for extra in [
        &["--sort-by", "customer_idd", "--dry-run"][..],
        &["--zorder", "customer_id,no_such", "--dry-run"],
        &["--sort-by", "customer_id,no_such"],
    ] {
        let out = compact(&p, extra);
        assert_eq!(code(&out), 1, "compact {extra:?}: {}", describe(&out));
        let r = report(&out);
        assert_eq!(r["status"], "failed", "compact {extra:?}: {r}");
        let reason = r["reason"].as_str().unwrap_or_default();
        assert!(
            reason.contains("has no column") && reason.contains(NO_COLUMN),
            "compact {extra:?}: {r}"
        );
    }
    assert_untouched(&p, &before, &p.state(true), "a sort key the files lack");
}
