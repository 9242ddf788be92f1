//! Where a compaction run keeps its things, and the names it leaves behind. Every run lives in
//! its partition's home (the partition's own `<table>/<k=v>/...` directory):
//!
//! ```text
//! <home>/.hive-orc-compactor/<run-id>.staging/   outputs being written (step 4)
//! <home>/.hive-orc-compactor/<run-id>/           published outputs, the partition's new location
//! <home>/.hive-orc-compactor/<run-id>.json       the run's journal (step 9)
//! ```
//!
//! and records itself in two partition parameters ([`PARAM_RUN_ID`], [`PARAM_PREVIOUS_LOCATION`]).
//! `compact` writes this layout; `journal`, `rollback`, `cleanup` and `verify` read it back.

use std::collections::BTreeSet;

use crate::hdfs::Location;
use crate::partition_spec::PartitionSpec;
use crate::table::TableInfo;

/// The hidden directory, inside the partition's home, that holds staging and published runs
/// and their journals. Hidden, so no engine listing the partition's directory reads it.
pub const WORK_DIR: &str = ".hive-orc-compactor";
/// Partition parameters recording where the partition was before our swap, and which run did it.
pub const PARAM_PREVIOUS_LOCATION: &str = "hive-orc-compactor.previous-location";
pub const PARAM_RUN_ID: &str = "hive-orc-compactor.run-id";
/// The suffix of a run's staging directory.
const STAGING_SUFFIX: &str = ".staging";
/// The suffix of a run's journal.
const JOURNAL_SUFFIX: &str = ".json";

/// A new run id: sortable by time, unique across hosts.
pub fn new_run_id() -> String {
    let now = chrono::Utc::now().format("%Y%m%dT%H%M%SZ");
    let rand = uuid::Uuid::new_v4().simple().to_string();
    format!("{now}-{}", &rand[..8])
}

/// The name of a run's `n`th merged output: a plain data name, so engines read it.
pub fn output_name(run_id: &str, n: usize) -> String {
    format!("part-{run_id}-{n:05}.orc")
}

/// `<home>/.hive-orc-compactor`.
pub fn work_dir(home: &Location) -> Location {
    home.child(WORK_DIR)
}

/// `<home>/.hive-orc-compactor/<run-id>.staging`.
pub fn staging_dir(home: &Location, run_id: &str) -> Location {
    work_dir(home).child(&format!("{run_id}{STAGING_SUFFIX}"))
}

/// `<home>/.hive-orc-compactor/<run-id>`: the published run, the partition's new location.
pub fn run_dir(home: &Location, run_id: &str) -> Location {
    work_dir(home).child(run_id)
}

/// `<home>/.hive-orc-compactor/<run-id>.json`.
pub fn journal_path(home: &Location, run_id: &str) -> Location {
    work_dir(home).child(&format!("{run_id}{JOURNAL_SUFFIX}"))
}

/// The run id of a journal's file name, `None` when the name is not a journal's.
pub fn journal_run_id(name: &str) -> Option<&str> {
    name.strip_suffix(JOURNAL_SUFFIX)
}

/// Whether a directory name in the work directory is a run's staging directory.
pub fn is_staging(name: &str) -> bool {
    name.ends_with(STAGING_SUFFIX)
}

/// Whether `location` lies inside some home's work directory (a run directory or below).
pub fn is_in_work_dir(location: &Location) -> bool {
    location.path.contains(&format!("/{WORK_DIR}/"))
}

/// The partition's canonical directory, `<table location>/<k=v>/...`, when the table has one.
/// `<table location>/<k=v>`: where Hive puts the partition, and where path readers look.
pub fn canonical_home(table: &TableInfo, spec: &PartitionSpec) -> Option<Location> {
    table
        .storage
        .location
        .as_deref()
        .and_then(|l| Location::parse(l).ok())
        .map(|t| t.child(&spec.name()))
}

/// The home a new run of a partition uses: its canonical directory when the partition lives
/// there or in one of our run directories below it, else its current location.
pub fn home_of(table: &TableInfo, spec: &PartitionSpec, location: &Location) -> Location {
    match canonical_home(table, spec) {
        Some(c) if *location == c || location.is_within(&work_dir(&c)) => c,
        _ => location.clone(),
    }
}

/// Every home a partition's runs can have: its canonical directory, its current location, and
/// every directory above a `/.hive-orc-compactor/` component of the current location (a run's
/// directory lives in its home's work directory).
pub fn homes(table: &TableInfo, spec: &PartitionSpec, current: &Location) -> Vec<Location> {
    let mut out = BTreeSet::new();
    if let Some(c) = canonical_home(table, spec) {
        out.insert(c.to_string());
    }
    out.insert(current.to_string());
    let marker = format!("/{WORK_DIR}/");
    let mut from = 0;
    while let Some(i) = current.path[from..].find(&marker) {
        let end = from + i;
        out.insert(format!("{}{}", current.fs, &current.path[..end.max(1)]));
        from = end + marker.len();
    }
    out.iter().filter_map(|l| Location::parse(l).ok()).collect()
}

/// The home of the run whose published directory is `location`
/// (`<home>/.hive-orc-compactor/<run-id>`), or `None` when `location` is not such a directory.
pub fn home_of_run(location: &Location, run_id: &str) -> Option<Location> {
    let suffix = format!("/{WORK_DIR}/{run_id}");
    let home = location.path.strip_suffix(&suffix)?;
    Some(Location {
        fs: location.fs.clone(),
        path: if home.is_empty() { "/" } else { home }.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn run_ids_sort_by_time_and_differ() {
        let a = new_run_id();
        let b = new_run_id();
        assert_ne!(a, b);
        assert_eq!(a.len(), "20261130T083000Z-".len() + 8);
        assert!(!a.starts_with('.') && !a.starts_with('_'));
    }

    #[test]
    fn output_names_are_data_names() {
        let n = output_name("20261130T083000Z-abcd1234", 3);
        assert_eq!(n, "part-20261130T083000Z-abcd1234-00003.orc");
        assert!(!crate::hdfs::is_hidden(&n));
    }

    #[test]
    fn a_run_lives_in_its_homes_work_dir() {
        let home = Location::parse("hdfs://nn/w/t/dt=1").unwrap();
        let run = run_dir(&home, "r1");
        assert_eq!(run.to_string(), "hdfs://nn/w/t/dt=1/.hive-orc-compactor/r1");
        assert_eq!(
            staging_dir(&home, "r1").to_string(),
            "hdfs://nn/w/t/dt=1/.hive-orc-compactor/r1.staging"
        );
        assert_eq!(
            journal_path(&home, "r1").to_string(),
            "hdfs://nn/w/t/dt=1/.hive-orc-compactor/r1.json"
        );
        assert_eq!(home_of_run(&run, "r1"), Some(home));
        assert!(is_in_work_dir(&run.child("part-0.orc")));
        assert!(is_staging("r1.staging") && !is_staging("r1"));
        assert_eq!(journal_run_id("r1.json"), Some("r1"));
    }

    #[test]
    fn home_of_a_run_directory() {
        let l = Location::parse("hdfs://nn/w/t/dt=1/.hive-orc-compactor/r1").unwrap();
        assert_eq!(
            home_of_run(&l, "r1").unwrap().to_string(),
            "hdfs://nn/w/t/dt=1"
        );
        assert!(home_of_run(&l, "r2").is_none());
        assert!(home_of_run(&Location::parse("hdfs://nn/w/t/dt=1").unwrap(), "r1").is_none());
    }
}
