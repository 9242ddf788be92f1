//! `rollback`, `verify` and `cleanup` end to end, and the kill matrix: the real binary against
//! the real cluster `scripts/test` starts, rows counted by Java orc-tools (`scripts/orc-tools`)
//! from wherever the metastore says the partition is.
//!
//! One database of this binary's own (`scripts/fixtures --set basic`); every test uses its own
//! partitions, so the tests are independent of each other and of their order.

mod common;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use common::{describe, env, json, rt, run, stderr, stdout, Fixtures, OwnDatabase};
use hive_orc_compactor::hdfs::{Hdfs, Location};
use hive_orc_compactor::metastore::{Metastore, MetastoreConfig};
use serde_json::Value;

const WORK_DIR: &str = ".hive-orc-compactor";

fn hdfs() -> &'static Hdfs {
    static HDFS: OnceLock<Hdfs> = OnceLock::new();
    HDFS.get_or_init(Hdfs::new)
}

fn db() -> &'static Fixtures {
    static DB: OnceLock<OwnDatabase> = OnceLock::new();
    &common::own_database(&DB, "undo", "basic").fixtures
}

fn loc(s: &str) -> Location {
    Location::parse(s).unwrap_or_else(|e| panic!("{s}: {e}"))
}

fn code(o: &Output) -> i32 {
    o.status.code().unwrap_or(-1)
}

/// One partition under test.
struct Part {
    table: String,
    spec: String,
    values: Vec<String>,
    /// Its home (where the fixtures put it).
    home: String,
    rows: u64,
    files: u64,
}

impl Part {
    fn of(table: &str, spec: &str) -> Part {
        let fx = db();
        let p = fx.table(table).partition(spec);
        Part {
            table: fx.qualified(table),
            spec: spec.to_string(),
            values: p.values.clone(),
            home: p.location.clone(),
            rows: p.rows,
            files: p.file_count,
        }
    }

    fn run(&self, command: &str, extra: &[&str]) -> Output {
        let mut args = vec![
            command,
            "--table",
            &self.table,
            "--partition",
            &self.spec,
            "--json",
        ];
        args.extend(extra);
        run(&args)
    }

    /// Runs `command` and checks its exit code; returns its JSON report.
    fn ok(&self, command: &str, extra: &[&str], exit: i32) -> Value {
        let out = self.run(command, extra);
        assert_eq!(code(&out), exit, "{command} {extra:?}: {}", describe(&out));
        json(&out)
    }

    /// (location, parameters) as the metastore holds them now.
    fn metastore(&self) -> (String, BTreeMap<String, String>) {
        let (db, table) = self.table.split_once('.').unwrap();
        let p = rt().block_on(async {
            let mut cfg = MetastoreConfig::new(&env("HMS_URI")).unwrap();
            cfg.io_timeout = Duration::from_secs(60);
            let ms = Metastore::connect(cfg).await.expect("metastore");
            ms.get_partition_by_values(db, table, &self.values)
                .await
                .expect("the partition")
        });
        (
            p.sd.and_then(|sd| sd.location).expect("a location"),
            p.parameters.unwrap_or_default(),
        )
    }

    /// `cleanup --older-than 0s` of the partition's table (exit 0); its JSON report.
    fn cleanup(&self, extra: &[&str]) -> Value {
        let mut args = vec![
            "cleanup",
            "--table",
            &self.table,
            "--older-than",
            "0s",
            "--json",
        ];
        args.extend(extra);
        let out = run(&args);
        assert_eq!(code(&out), 0, "cleanup {extra:?}: {}", describe(&out));
        json(&out)
    }

    fn location(&self) -> String {
        self.metastore().0
    }

    fn work_entries(&self) -> Vec<String> {
        let l = list(&format!("{}/{WORK_DIR}", self.home));
        l.0.into_iter().chain(l.1).collect()
    }

    /// Rows in the partition's current location, counted by Java orc-tools.
    fn java_rows(&self) -> u64 {
        let dir = self.location();
        let files: Vec<String> = list(&dir).0.iter().map(|f| format!("{dir}/{f}")).collect();
        java_row_count(&files)
    }
}

/// (file names, directory names) directly in `dir`; empty when it does not exist.
fn list(dir: &str) -> (Vec<String>, Vec<String>) {
    match rt().block_on(hdfs().list(&loc(dir))).expect("listing") {
        Some(l) => (l.files.into_iter().map(|f| f.name).collect(), l.subdirs),
        None => (vec![], vec![]),
    }
}

fn exists(path: &str) -> bool {
    rt().block_on(hdfs().status(&loc(path)))
        .expect("status")
        .is_some()
}

fn java_row_count(files: &[String]) -> u64 {
    let out = Command::new(Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/orc-tools"))
        .arg("data")
        .args(files)
        .output()
        .expect("scripts/orc-tools runs");
    assert!(out.status.success(), "orc-tools data: {}", stderr(&out));
    stdout(&out).lines().filter(|l| l.starts_with('{')).count() as u64
}

/// Copies `from` to a new file `to` (new name, new modification time): a late writer.
fn copy(from: &str, to: &str) {
    rt().block_on(async {
        let r = hdfs().open(&loc(from)).await.expect("open");
        let bytes = r.read_range(0, r.file_length()).await.expect("read");
        let mut w = hdfs().create(&loc(to), 0o644).await.expect("create");
        w.write_bytes(bytes).await.expect("write");
        w.close().await.expect("close");
    })
}

#[test]
fn rollback_verify_cleanup_and_a_second_cleanup() {
    // Each test cleans its own tables only: cleanup covers a whole table.
    let part = Part::of("legacy_colnames", "dt=2015-06-01");
    let compact = part.ok("compact", &[], 0);
    assert_eq!(compact["status"], "compacted");
    let new_location = compact["new_location"].as_str().unwrap().to_string();

    let v = part.ok("verify", &["--checksums"], 0);
    assert_eq!(v["rows"].as_u64(), Some(part.rows));
    assert!(v["checksums_checked"].as_u64().unwrap() > 0, "{v}");

    // A dry run changes nothing; the rollback goes back to the old files and parameters.
    let dry = part.ok("rollback", &["--dry-run"], 0);
    assert_eq!(dry["status"], "dry-run");
    assert_eq!(part.location(), new_location);
    let r = part.ok("rollback", &[], 0);
    assert_eq!(r["status"], "rolled-back", "{r}");
    let (location, params) = part.metastore();
    assert_eq!(loc(&location), loc(&part.home));
    assert_eq!(params["numFiles"], part.files.to_string());
    assert_eq!(params["numRows"], part.rows.to_string());
    assert!(
        !params.contains_key("hive-orc-compactor.run-id"),
        "{params:?}"
    );
    assert_eq!(
        part.ok("verify", &[], 0)["files"].as_u64(),
        Some(part.files)
    );
    // Rolling back twice is refused: the partition is in no run's directory.
    let again = part.ok("rollback", &[], 3);
    assert_eq!(again["rule"], "not_rollbackable");

    // Cleanup removes the rolled-back run's directory, not the live files.
    part.cleanup(&[]);
    assert!(!exists(&new_location));
    assert_eq!(list(&part.home).0.len() as u64, part.files);

    // A new compact works; cleanup then deletes exactly the replaced files.
    let second = part.ok("compact", &[], 0);
    assert_eq!(second["status"], "compacted");
    let c = part.cleanup(&[]);
    assert_eq!(c["files_removed"].as_u64(), Some(part.files), "{c}");
    assert_eq!(list(&part.home).0, Vec::<String>::new(), "old files gone");
    assert_eq!(part.java_rows(), part.rows);
    part.ok("verify", &["--checksums"], 0);

    // Rollback after cleanup is refused, naming what is missing.
    let refused = part.ok("rollback", &[], 3);
    assert_eq!(
        refused["missing"].as_array().unwrap().len() as u64,
        part.files
    );
    // A second cleanup finds nothing.
    let c = part.cleanup(&[]);
    assert_eq!(c["partitions"], serde_json::json!([]), "{c}");
}

#[test]
fn verify_names_mismatches() {
    let part = Part::of("managed_p1", "dt=2024-01-01");
    part.ok("compact", &[], 0);
    // A file slipped into the new location behind the metastore's back.
    let location = part.location();
    let first = list(&location).0[0].clone();
    copy(
        &format!("{location}/{first}"),
        &format!("{location}/intruder.orc"),
    );
    let v = part.ok("verify", &[], 5);
    let mismatches = v["mismatches"].to_string();
    assert!(mismatches.contains("numFiles"), "{v}");
    assert!(mismatches.contains("intruder.orc"), "{v}");
}

#[test]
fn cleanup_reports_or_adopts_late_files_and_can_use_the_trash() {
    // Reported and left.
    let left = Part::of("managed_p1", "dt=2024-01-02");
    left.ok("compact", &[], 0);
    let first = list(&left.home).0[0].clone();
    copy(
        &format!("{}/{first}", left.home),
        &format!("{}/late-0.orc", left.home),
    );
    let c = left.cleanup(&[]);
    let late = c["partitions"][0]["runs"][0]["late_files"].to_string();
    assert!(late.contains("late-0.orc"), "{c}");
    assert_eq!(list(&left.home).0, vec!["late-0.orc".to_string()]);

    // Adopted, into the trash.
    let adopt = Part::of("managed_p1", "dt=2024-01-03");
    adopt.ok("compact", &[], 0);
    let first = list(&adopt.home).0[0].clone();
    let late_rows = java_row_count(&[format!("{}/{first}", adopt.home)]);
    copy(
        &format!("{}/{first}", adopt.home),
        &format!("{}/late-1.orc", adopt.home),
    );
    let c = adopt.cleanup(&["--adopt-late-files", "--trash"]);
    let p = &c["partitions"][0];
    assert!(
        p["runs"][0]["adopted"].to_string().contains("late-1.orc"),
        "{c}"
    );
    let trashed = p["trashed_to"].as_array().unwrap();
    assert_eq!(trashed.len() as u64, adopt.files, "{c}");
    assert!(trashed.iter().all(|t| {
        let t = t.as_str().unwrap();
        t.contains("/.Trash/Current/") && exists(t)
    }));
    assert_eq!(list(&adopt.home).0, Vec::<String>::new());
    let (location, params) = adopt.metastore();
    assert!(list(&location).0.contains(&"late-1.orc".to_string()));
    assert_eq!(params["numRows"], (adopt.rows + late_rows).to_string());
    assert!(!params.contains_key("COLUMN_STATS_ACCURATE"));
    assert_eq!(adopt.java_rows(), adopt.rows + late_rows);
    adopt.ok("verify", &[], 0);
}

// ---------------------------------------------------------------------------------------------
// The kill matrix: SIGKILL at each stage of a run; the table stays readable with the same rows,
// and cleanup (or the next run) recovers.

/// Starts a compaction with `failpoints`, waits until `ready` says it got there, then SIGKILLs it.
#[cfg(feature = "failpoints")]
fn kill_when(part: &Part, failpoints: &str, ready: impl Fn() -> bool) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_hive-orc-compactor"))
        .args(["compact", "--table", &part.table, "--partition", &part.spec])
        // A killed run's metastore lock outlives it until the metastore's transaction timeout;
        // the matrix is about files and locations, so its runs take no lock.
        .arg("--no-lock")
        .env_remove("HIVE_CONF_DIR")
        .env("HMS_URI", env("HMS_URI"))
        .env("FAILPOINTS", failpoints)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("the binary starts");
    let t0 = Instant::now();
    while !ready() {
        assert!(
            child.try_wait().expect("wait").is_none(),
            "{failpoints}: the run ended before the kill"
        );
        assert!(
            t0.elapsed() < Duration::from_secs(25),
            "{failpoints}: never got there"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    child.kill().expect("SIGKILL");
    child.wait().expect("reaped");
}

#[cfg(feature = "failpoints")]
#[test]
fn kills_before_the_swap_leave_the_rows_and_cleanup_removes_the_leftovers() {
    // 300 small files: reading their tails and staging them takes long enough to kill inside.
    let part = Part::of("ext_p1", "dt=2024-01-01");
    let staged = || part.work_entries().iter().any(|e| e.ends_with(".staging"));
    let published = || {
        part.work_entries()
            .iter()
            .any(|e| !e.ends_with(".staging") && !e.ends_with(".json"))
    };
    // While reading tails (no failpoint: killed as soon as it runs), while writing the staging
    // directory, after publishing, right before the swap.
    let t0 = Instant::now();
    kill_when(&part, "compact::after-swap=off", || {
        t0.elapsed() > Duration::from_millis(150)
    });
    kill_when(&part, "compact::after-swap=off", staged);
    kill_when(&part, "compact::after-publish=sleep(30000)", published);
    kill_when(&part, "compact::before-swap=sleep(30000)", || {
        published() && {
            std::thread::sleep(Duration::from_millis(1500));
            true
        }
    });
    assert_eq!(loc(&part.location()), loc(&part.home));
    assert_eq!(part.java_rows(), part.rows);
    let c = part.cleanup(&["--staging-older-than", "0s"]);
    assert!(!c["partitions"][0]["dead_runs_removed"]
        .as_array()
        .unwrap()
        .is_empty());
    assert_eq!(part.work_entries(), Vec::<String>::new(), "{c}");
    assert_eq!(part.ok("compact", &[], 0)["status"], "compacted");
    assert_eq!(part.java_rows(), part.rows);
}

#[cfg(feature = "failpoints")]
#[test]
fn a_kill_after_the_swap_before_the_journal_is_recovered() {
    let swapped = |p: &Part| loc(&p.location()) != loc(&p.home);
    // verify and cleanup rebuild the journal; cleanup then deletes the replaced files.
    let part = Part::of("ext_p3", "region=eu/dt=2024-01-01/hour=13");
    kill_when(&part, "compact::after-swap=sleep(30000)", || swapped(&part));
    assert!(!part.work_entries().iter().any(|e| e.ends_with(".json")));
    assert_eq!(part.java_rows(), part.rows);
    let v = part.ok("verify", &[], 0);
    assert_eq!(v["journal_rebuilt"], true, "{v}");
    // A late file (newer than the swap) is not taken for an input.
    let first = list(&part.home).0[0].clone();
    copy(
        &format!("{}/{first}", part.home),
        &format!("{}/late-2.orc", part.home),
    );
    let c = part.cleanup(&["--staging-older-than", "0s"]);
    let p = &c["partitions"][0];
    assert_eq!(p["journals_rebuilt"].as_array().unwrap().len(), 1, "{c}");
    assert_eq!(
        p["runs"][0]["removed"].as_array().unwrap().len() as u64,
        part.files
    );
    assert!(p["runs"][0]["late_files"]
        .to_string()
        .contains("late-2.orc"));
    assert_eq!(list(&part.home).0, vec!["late-2.orc".to_string()]);
    assert_eq!(part.java_rows(), part.rows);
    assert_eq!(
        part.cleanup(&["--staging-older-than", "0s"])["partitions"],
        serde_json::json!([])
    );

    // rollback rebuilds it too, and swaps back.
    let part = Part::of("ext_p3", "region=eu/dt=2024-01-02/hour=00");
    kill_when(&part, "compact::after-swap=sleep(30000)", || swapped(&part));
    let r = part.ok("rollback", &[], 0);
    assert_eq!(r["journal_rebuilt"], true, "{r}");
    let (location, params) = part.metastore();
    assert_eq!(loc(&location), loc(&part.home));
    assert_eq!(params["numFiles"], part.files.to_string());
    assert_eq!(params["numRows"], part.rows.to_string());
    assert_eq!(part.java_rows(), part.rows);
}
