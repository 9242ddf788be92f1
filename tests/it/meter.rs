//! The tool's count of its metastore calls, checked against the metastore's own: the HMS of
//! `scripts/cluster` reports its metrics to a JSON file every second
//! (`CLUSTER_HMS_METRICS_FILE`), with an `api_<method>` timer per Thrift method it served. A
//! run's calls are the timers' growth from just before the run to just after it, so nothing
//! else may call that metastore meanwhile: this area runs in a process of its own
//! (`HOC_TEST_ALONE=meter`; scripts/test runs it after the fault areas, on their cluster) and
//! skips itself otherwise.
//!
//! `--metastore-rate` is checked here too: paced runs take at least as long as the rate says.

#![cfg(feature = "cluster-tests")]

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::{Duration, Instant, SystemTime};

use serde_json::Value;

use crate::common::{self, code, describe, env, json, run, OwnDatabase};

/// How many `api_<method>` timer counts one call of a method adds on HMS 4.0.1 (measured).
/// `get_config_value` and `fetch_partition_names_req` are timed twice on their way through
/// the metastore's handler, under the same name; every other method the tool sends, once.
/// Methods the metastore serves through another (`get_table_req` through `get_table`, ...)
/// add to that one's timer too; the comparison looks only at the methods the tool sent.
///
/// HMS 3.1.3 is not compared: there a call the server refuses before its handler runs is
/// never timed (the `get_partition_req` it lacks, a `lock` of a type it cannot read, which the
/// tool then sends again as another type), and it times `get_partition` twice: its metrics
/// count what it handled, not what it was sent.
fn timed(method: &str) -> u64 {
    match method {
        "get_config_value" | "fetch_partition_names_req" => 2,
        _ => 1,
    }
}

/// The metastore's metrics file, as `scripts/cluster env` names it.
fn metrics_file() -> PathBuf {
    PathBuf::from(env("CLUSTER_HMS_METRICS_FILE"))
}

/// The metastore's call counts by method, from a report it wrote after this was called: so
/// every call answered before now is in it.
fn served() -> BTreeMap<String, u64> {
    let path = metrics_file();
    let written = |p: &PathBuf| std::fs::metadata(p).and_then(|m| m.modified()).ok();
    let before = written(&path);
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        assert!(
            Instant::now() < deadline,
            "{} was not rewritten within 30 s: does the metastore report its metrics \
             (scripts/cluster sets metastore.metrics.*)?",
            path.display()
        );
        std::thread::sleep(Duration::from_millis(200));
        let now: Option<SystemTime> = written(&path);
        if now.is_none() || now == before {
            continue;
        }
        // A report read while it is being written does not parse: wait for the next.
        let Ok(report) = std::fs::read(&path) else {
            continue;
        };
        let Ok(report) = serde_json::from_slice::<Value>(&report) else {
            continue;
        };
        return report["timers"]
            .as_object()
            .expect("a timers object")
            .iter()
            .filter_map(|(name, timer)| {
                let method = name.strip_prefix("api_")?;
                Some((method.to_string(), timer["count"].as_u64()?))
            })
            .collect();
    }
}

/// The tool's `metastore_calls` object, without its total (checked to be their sum).
fn tool_calls(calls: &Value) -> BTreeMap<String, u64> {
    let mut by_method: BTreeMap<String, u64> = calls
        .as_object()
        .unwrap_or_else(|| panic!("metastore_calls is not an object: {calls}"))
        .iter()
        .map(|(m, n)| (m.clone(), n.as_u64().unwrap()))
        .collect();
    let total = by_method.remove("total").expect("a total");
    assert_eq!(total, by_method.values().sum::<u64>(), "{calls}");
    by_method
}

/// Runs `args` between two readings of the metastore's metrics and checks that the calls the
/// run says it made (`calls_of` finds them in its output) are the calls the metastore served.
/// Returns the run's output, its calls and how long it took.
fn counted(
    what: &str,
    args: &[&str],
    calls_of: impl Fn(&std::process::Output) -> Value,
) -> (std::process::Output, BTreeMap<String, u64>, Duration) {
    let before = served();
    let t0 = Instant::now();
    let out = run(args);
    let elapsed = t0.elapsed();
    let after = served();
    let tool = tool_calls(&calls_of(&out));
    assert!(
        !tool.is_empty(),
        "{what}: no calls counted: {}",
        describe(&out)
    );
    let delta = |method: &str| {
        after.get(method).copied().unwrap_or(0) - before.get(method).copied().unwrap_or(0)
    };
    let served: BTreeMap<&str, u64> = after
        .keys()
        .map(|m| (m.as_str(), delta(m)))
        .filter(|(_, n)| *n > 0)
        .collect();
    let wrong: Vec<String> = tool
        .iter()
        .filter(|(method, n)| delta(method) != timed(method) * **n)
        .map(|(method, n)| {
            format!(
                "{method}: the tool counted {n}, the metastore served {} (x{} expected)",
                delta(method),
                timed(method)
            )
        })
        .collect();
    assert!(
        wrong.is_empty(),
        "{what}: {}; the tool counted {tool:?}, the metastore's timers grew by {served:?}",
        wrong.join("; ")
    );
    eprintln!("{what}: {tool:?} in {:.1} s", elapsed.as_secs_f64());
    (out, tool, elapsed)
}

#[test]
fn the_tools_counts_are_the_metastores_and_the_rate_holds() {
    if !common::alone(&["meter"]) {
        return;
    }
    let version = env("CLUSTER_HMS_VERSION");
    if !version.starts_with("4.0.") {
        eprintln!(
            "skipped: the metastore's per-method timers are compared on HMS 4.0, not {version}"
        );
        return;
    }
    let db = OwnDatabase::create(&format!("meter_{}", std::process::id()), "basic");
    let fx = &db.fixtures;
    let ext_p1 = fx.qualified("ext_p1");
    let ext_p3 = fx.qualified("ext_p3");

    // One partition, named: its report carries the run's calls.
    let (out, single, _) = counted(
        "compact of one partition",
        &[
            "compact",
            "--table",
            &ext_p1,
            "--partition",
            "dt=2024-01-01",
            "--min-age",
            "0s",
            "--json",
        ],
        |o| {
            assert_eq!(code(o), 0, "{}", describe(o));
            json(o)["metastore_calls"].clone()
        },
    );
    assert_eq!(json(&out)["status"], "compacted");
    assert_eq!(
        single.get("alter_partition_with_environment_context"),
        Some(&1)
    );

    counted(
        "analyze of a table",
        &["analyze", "--table", &ext_p3, "--json"],
        |o| {
            assert_eq!(code(o), 0, "{}", describe(o));
            let summary = common::stdout(o).lines().last().map(str::to_owned);
            let summary: Value = serde_json::from_str(&summary.unwrap()).unwrap();
            summary["summary"]["metastore_calls"].clone()
        },
    );

    // The rest of the table on three connections, paced to 5 calls a second: the connections
    // share the rate, and the metrics file says what the summary says.
    let dir = tempfile::tempdir().unwrap();
    let prom = dir.path().join("meter.prom");
    let (_, paced, elapsed) = counted(
        "compact --all --parallel 3 --metastore-rate 5",
        &[
            "compact",
            "--table",
            &ext_p1,
            "--all",
            "--min-age",
            "0s",
            "--parallel",
            "3",
            "--metastore-rate",
            "5",
            "--json",
            "--metrics-file",
            prom.to_str().unwrap(),
        ],
        |o| {
            assert_eq!(code(o), 0, "{}", describe(o));
            let (reports, summary) = common::reports(o);
            assert!(reports.len() >= 3, "{}", describe(o));
            summary["summary"]["metastore_calls"].clone()
        },
    );
    let total: u64 = paced.values().sum();
    let seconds = elapsed.as_secs_f64();
    // One call may go at once, then one every 0.2 s.
    let least = (total - 1) as f64 / 5.0;
    assert!(
        seconds >= least,
        "{total} calls at 5 a second take at least {least:.1} s, the run took {seconds:.1} s"
    );
    assert!(
        total as f64 <= 1.0 + 5.0 * seconds,
        "{total} calls in {seconds:.1} s"
    );
    let text = std::fs::read_to_string(&prom).unwrap();
    for (method, n) in &paced {
        let line = format!(
            "hive_orc_compactor_metastore_calls{{command=\"compact\",method=\"{method}\"}} {n}"
        );
        assert!(text.lines().any(|l| l == line), "{line} not in:\n{text}");
    }
}
