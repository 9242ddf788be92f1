//! `--metrics-file`: the Prometheus textfile parses with the reference parser, equals the
//! run's `--json`, stays whole when a run is killed, and keeps the last success of a table.

#![cfg(feature = "cluster-tests")]

use std::io::BufRead;
use std::process::{Command, Output, Stdio};

use crate::common::*;
use crate::fleet::split;
use serde_json::Value;
/// The families of a metrics file, as the reference parser reads them.
fn metrics(path: &std::path::Path) -> Vec<Value> {
    let o = Command::new(repo().join("scripts/promtext"))
        .arg(path)
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "the parser rejects it: {}",
        describe(&o)
    );
    serde_json::from_slice(&o.stdout).unwrap()
}

/// The value of the sample `name` whose labels include `labels`.
fn sample(families: &[Value], name: &str, labels: &[(&str, &str)]) -> Option<f64> {
    families
        .iter()
        .flat_map(|f| f["samples"].as_array().unwrap())
        .find(|s| s["name"] == name && labels.iter().all(|(k, v)| s["labels"][k] == *v))
        .and_then(|s| s["value"].as_f64())
}

#[test]
fn metrics_file_parses_equals_the_json_and_survives_a_kill() {
    let db = OwnDatabase::create("fleet_metrics", "fleet");
    let m = MetricsRun::new(&db.fixtures);
    let success = compact_metrics_equal_the_json(&m);
    a_killed_run_leaves_the_metrics_file_whole(&m);
    a_failed_run_keeps_the_last_success(&m, success);
    analyze_metrics_equal_the_json(&m);
    an_unwritable_metrics_file_fails_the_run(&m);
    cleanup_and_iceberg_check_write_metrics_too(&m);
}

/// The table of [`metrics_file_parses_equals_the_json_and_survives_a_kill`] and the directory
/// of its metrics files.
struct MetricsRun {
    database: String,
    table: String,
    dir: tempfile::TempDir,
    /// `compact`'s metrics file.
    prom: std::path::PathBuf,
}

impl MetricsRun {
    fn new(f: &Fixtures) -> MetricsRun {
        let dir = tempfile::tempdir().unwrap();
        MetricsRun {
            database: f.database.clone(),
            table: f.qualified("fleet"),
            prom: dir.path().join("hoc_compact.prom"),
            dir,
        }
    }

    /// The labels of the table's series.
    fn labels(&self) -> [(&str, &str); 2] {
        [("database", self.database.as_str()), ("table", "fleet")]
    }

    fn prom_arg(&self) -> &str {
        self.prom.to_str().unwrap()
    }

    /// `compact` of the table with `extra` arguments, writing `prom`.
    fn compact(&self, extra: &[&str]) -> Output {
        let mut args = vec![
            "compact",
            "--table",
            &self.table,
            "--min-age",
            "0s",
            "--json",
        ];
        args.extend(extra);
        args.extend(["--metrics-file", self.prom_arg()]);
        run(&args)
    }
}

const COMPACT_LABEL: [(&str, &str); 1] = [("command", "compact")];

/// A run of three partitions (the others skipped by the budget): its metrics file says what its
/// JSON summary says, with no partition label anywhere (the series are as many as the tables);
/// the table's last success, which it sets.
fn compact_metrics_equal_the_json(m: &MetricsRun) -> f64 {
    let labels = m.labels();
    let o = m.compact(&["--all", "--limit", "3"]);
    assert!(o.status.success(), "{}", describe(&o));
    let (_, summary) = split(&o);
    let families = metrics(&m.prom);
    let t = &summary["tables"][0];
    assert_eq!(t["table"], m.table);
    for (status, field) in [
        ("compacted", "compacted"),
        ("skipped", "skipped"),
        ("failed", "failed"),
    ] {
        let mut l = labels.to_vec();
        l.push(("status", status));
        assert_eq!(
            sample(&families, "hive_orc_compactor_compact_partitions", &l),
            t[field].as_f64(),
            "{status}"
        );
    }
    assert_eq!(t["compacted"], 3);
    for field in [
        "files_before",
        "files_after",
        "bytes_before",
        "bytes_after",
        "bytes_rewritten",
    ] {
        let name = format!("hive_orc_compactor_compact_{field}");
        assert_eq!(
            sample(&families, &name, &labels),
            t[field].as_f64(),
            "{field}"
        );
        assert_eq!(
            t[field], summary[field],
            "one table: its figures are the run's"
        );
    }
    assert_eq!(
        sample(&families, "hive_orc_compactor_exit_code", &COMPACT_LABEL),
        Some(0.0)
    );
    assert!(sample(&families, "hive_orc_compactor_run_seconds", &COMPACT_LABEL).unwrap() > 0.0);
    let success = sample(
        &families,
        "hive_orc_compactor_last_success_timestamp_seconds",
        &labels,
    )
    .expect("a last success");
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs_f64();
    assert!((now - success).abs() < 600.0, "{success} vs {now}");
    for f in &families {
        for s in f["samples"].as_array().unwrap() {
            assert!(s["labels"].get("partition").is_none(), "{s}");
        }
    }
    success
}

/// A run killed mid-way leaves the previous file whole, and no temporary beside it.
fn a_killed_run_leaves_the_metrics_file_whole(m: &MetricsRun) {
    let previous = std::fs::read(&m.prom).unwrap();
    let mut child = command(&env("HMS_URI"))
        .args([
            "compact",
            "--table",
            &m.table,
            "--all",
            "--limit",
            "1",
            "--min-age",
            "0s",
            "--json",
            "--metrics-file",
            m.prom_arg(),
        ])
        .env("FAILPOINTS", "compact::before-swap=sleep(60000)")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut out = std::io::BufReader::new(child.stdout.take().unwrap());
    let mut first = String::new();
    // The skipped partitions are reported before the one that runs (and sleeps) starts.
    assert!(out.read_line(&mut first).unwrap() > 0);
    std::thread::sleep(std::time::Duration::from_secs(2));
    child.kill().unwrap();
    child.wait().unwrap();
    assert_eq!(
        std::fs::read(&m.prom).unwrap(),
        previous,
        "the previous file, whole"
    );
    let names: Vec<_> = std::fs::read_dir(m.dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, vec![std::ffi::OsString::from("hoc_compact.prom")]);
}

/// A run that does not succeed says so, and keeps the table's last success from the file
/// before.
fn a_failed_run_keeps_the_last_success(m: &MetricsRun, success: f64) {
    let o = m.compact(&["--partition", "dt=1999-01-01"]);
    assert_eq!(code(&o), 3, "no such partition: {}", describe(&o));
    let families = metrics(&m.prom);
    assert_eq!(
        sample(&families, "hive_orc_compactor_exit_code", &COMPACT_LABEL),
        Some(3.0)
    );
    assert_eq!(
        sample(
            &families,
            "hive_orc_compactor_last_success_timestamp_seconds",
            &m.labels()
        ),
        Some(success)
    );
}

/// analyze: the per-table excess and ideal counts an alert compares.
fn analyze_metrics_equal_the_json(m: &MetricsRun) {
    let analyze_prom = m.dir.path().join("hoc_analyze.prom");
    let o = run(&[
        "analyze",
        "--table",
        &m.table,
        "--json",
        "--metrics-file",
        analyze_prom.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", describe(&o));
    let (_, summary) = split(&o);
    let families = metrics(&analyze_prom);
    let t = &summary["tables"][0];
    for (metric, field) in [
        ("excess_files", "excess_files"),
        ("ideal_files", "files_needed"),
        ("files", "files"),
        ("removable_files", "removable_files"),
        ("namenode_objects_removable", "namenode_objects_removable"),
    ] {
        let name = format!("hive_orc_compactor_analyze_{metric}");
        assert_eq!(
            sample(&families, &name, &m.labels()),
            t[field].as_f64(),
            "{metric}"
        );
    }
}

/// A metrics file that cannot be written fails the run, naming it.
fn an_unwritable_metrics_file_fails_the_run(m: &MetricsRun) {
    let o = run(&[
        "analyze",
        "--table",
        &m.table,
        "--metrics-file",
        "/nonexistent/dir/m.prom",
    ]);
    assert_eq!(code(&o), 1, "{}", describe(&o));
    assert!(stderr(&o).contains("cannot write the metrics file /nonexistent/dir/m.prom"));
}

/// cleanup and iceberg check write theirs too.
fn cleanup_and_iceberg_check_write_metrics_too(m: &MetricsRun) {
    let table = m.table.as_str();
    for (args, name) in [
        (
            vec!["cleanup", "--table", table, "--dry-run"],
            "hive_orc_compactor_cleanup_partitions",
        ),
        (
            vec!["iceberg", "check", "--table", table],
            "hive_orc_compactor_iceberg_check_files",
        ),
    ] {
        let file = m.dir.path().join("other.prom");
        let mut args = args.clone();
        args.extend(["--json", "--metrics-file", file.to_str().unwrap()]);
        let o = run(&args);
        assert!(o.status.success(), "{args:?}: {}", describe(&o));
        let families = metrics(&file);
        assert!(
            sample(&families, name, &m.labels()).is_some(),
            "{name} in {families:?}"
        );
        assert!(sample(&families, "hive_orc_compactor_exit_code", &[]).is_some());
    }
}
