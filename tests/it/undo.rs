//! `rollback`, `verify` and `cleanup` end to end, and the kill matrix: the real binary against
//! the real cluster `scripts/test` starts, rows counted by Java orc-tools (`scripts/orc-tools`)
//! from wherever the metastore says the partition is.
//!
//! One database of this area's own (`scripts/fixtures --set basic`); every test uses its own
//! partitions, so the tests are independent of each other and of their order.

#![cfg(feature = "cluster-tests")]

use crate::common;

use std::sync::OnceLock;
#[cfg(feature = "failpoints")]
use std::time::{Duration, Instant};

#[cfg(feature = "failpoints")]
use crate::common::failpoints::kill_when;
use crate::common::hdfs::{copy, exists, list, loc};
use crate::common::orc_tools::java_row_count;
use crate::common::partition::Part;
use crate::common::{env, OwnDatabase, RUN_ID};

/// A partition of this area's own database (`scripts/fixtures --set basic`).
fn part_of(table: &str, spec: &str) -> Part {
    static DB: OnceLock<OwnDatabase> = OnceLock::new();
    let fx = &common::own_database(&DB, "undo", "basic").fixtures;
    Part::of(fx, &env("HMS_URI"), table, spec)
}

#[test]
fn rollback_verify_cleanup_and_a_second_cleanup() {
    // Each test cleans its own tables only: cleanup covers a whole table.
    let part = part_of("legacy_colnames", "dt=2015-06-01");
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
    let (location, params) = part.location_and_parameters();
    assert_eq!(loc(&location), loc(&part.home));
    assert_eq!(params["numFiles"], part.files.to_string());
    assert_eq!(params["numRows"], part.rows.to_string());
    assert!(!params.contains_key(RUN_ID), "{params:?}");
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
    assert_eq!(part.java_row_count(), part.rows);
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
    let part = part_of("managed_p1", "dt=2024-01-01");
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
    let left = part_of("managed_p1", "dt=2024-01-02");
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
    let adopt = part_of("managed_p1", "dt=2024-01-03");
    adopt.ok("compact", &[], 0);
    let first = list(&adopt.home).0[0].clone();
    let late_rows = java_row_count(&[format!("{}/{first}", adopt.home)]);
    copy(
        &format!("{}/{first}", adopt.home),
        &format!("{}/late-1.orc", adopt.home),
    );
    // Cleanup works on the whole table: the late file left above is adopted too.
    let c = adopt.cleanup(&["--adopt-late-files", "--trash"]);
    let p = c["partitions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["partition"] == "dt=2024-01-03")
        .unwrap_or_else(|| panic!("{c}"));
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
    let (location, params) = adopt.location_and_parameters();
    assert!(list(&location).0.contains(&"late-1.orc".to_string()));
    assert_eq!(params["numRows"], (adopt.rows + late_rows).to_string());
    assert!(!params.contains_key("COLUMN_STATS_ACCURATE"));
    assert_eq!(adopt.java_row_count(), adopt.rows + late_rows);
    adopt.ok("verify", &[], 0);
}

// ---------------------------------------------------------------------------------------------
// The kill matrix: SIGKILL at each stage of a run; the table stays readable with the same rows,
// and cleanup (or the next run) recovers.

#[cfg(feature = "failpoints")]
#[test]
fn kills_before_the_swap_leave_the_rows_and_cleanup_removes_the_leftovers() {
    // 300 small files: reading their tails and staging them takes long enough to kill inside.
    let part = part_of("ext_p1", "dt=2024-01-01");
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
    assert_eq!(part.java_row_count(), part.rows);
    let c = part.cleanup(&["--staging-older-than", "0s"]);
    assert!(!c["partitions"][0]["dead_runs_removed"]
        .as_array()
        .unwrap()
        .is_empty());
    assert_eq!(part.work_entries(), Vec::<String>::new(), "{c}");
    assert_eq!(part.ok("compact", &[], 0)["status"], "compacted");
    assert_eq!(part.java_row_count(), part.rows);
}

#[cfg(feature = "failpoints")]
#[test]
fn a_kill_after_the_swap_before_the_journal_is_recovered() {
    let swapped = |p: &Part| loc(&p.location()) != loc(&p.home);
    // verify and cleanup rebuild the journal; cleanup then deletes the replaced files.
    let part = part_of("ext_p3", "region=eu/dt=2024-01-01/hour=13");
    kill_when(&part, "compact::after-swap=sleep(30000)", || swapped(&part));
    assert!(!part.work_entries().iter().any(|e| e.ends_with(".json")));
    assert_eq!(part.java_row_count(), part.rows);
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
    assert_eq!(part.java_row_count(), part.rows);
    // A second cleanup removes nothing more and still lists the late file.
    let again = part.cleanup(&["--staging-older-than", "0s"]);
    let run = &again["partitions"][0]["runs"][0];
    assert_eq!(run["action"], "settled", "{again}");
    assert_eq!(run["removed"], serde_json::json!([]), "{again}");
    assert!(
        run["late_files"].to_string().contains("late-2.orc"),
        "{again}"
    );

    // rollback rebuilds it too, and swaps back.
    let part = part_of("ext_p3", "region=eu/dt=2024-01-02/hour=00");
    kill_when(&part, "compact::after-swap=sleep(30000)", || swapped(&part));
    let r = part.ok("rollback", &[], 0);
    assert_eq!(r["journal_rebuilt"], true, "{r}");
    let (location, params) = part.location_and_parameters();
    assert_eq!(loc(&location), loc(&part.home));
    assert_eq!(params["numFiles"], part.files.to_string());
    assert_eq!(params["numRows"], part.rows.to_string());
    assert_eq!(part.java_row_count(), part.rows);
}
