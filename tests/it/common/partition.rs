//! One partition under test: where the fixtures put it, the tool run on it, and its state
//! before and after.

use std::collections::BTreeMap;
use std::process::Output;

use hive_orc_compactor::metastore::Partition;
use serde_json::Value;

use super::hdfs::{list, tree, work_entries};
use super::metastore::{get_partition, location_of, metastore};
use super::orc_tools::java_row_count;
use super::{code, describe, json, rt, run_against, Fixtures};

#[derive(Clone)]
pub struct Part {
    pub hms_uri: String,
    pub db: String,
    pub table: String,
    pub spec: String,
    pub values: Vec<String>,
    /// Where the fixtures put it (its home).
    pub home: String,
    /// Rows and visible files the fixtures wrote.
    pub rows: u64,
    pub files: u64,
}

impl Part {
    pub fn of(fx: &Fixtures, hms_uri: &str, table: &str, spec: &str) -> Part {
        let p = fx.table(table).partition(spec);
        Part {
            hms_uri: hms_uri.to_string(),
            db: fx.database.clone(),
            table: table.to_string(),
            spec: spec.to_string(),
            values: p.values.clone(),
            home: p.location.clone(),
            rows: p.rows,
            files: p.file_count,
        }
    }

    pub fn qualified(&self) -> String {
        format!("{}.{}", self.db, self.table)
    }

    /// `command --table db.table --partition spec --json`, then `extra`.
    pub fn args(&self, command: &str, extra: &[&str]) -> Vec<String> {
        let mut a = vec![
            command.to_string(),
            "--table".into(),
            self.qualified(),
            "--partition".into(),
            self.spec.clone(),
            "--json".into(),
        ];
        a.extend(extra.iter().map(|s| s.to_string()));
        a
    }

    pub fn run(&self, command: &str, extra: &[&str]) -> Output {
        let args = self.args(command, extra);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        run_against(&self.hms_uri, &args)
    }

    pub fn compact(&self, extra: &[&str]) -> Output {
        self.run("compact", extra)
    }

    /// Runs `command` and checks its exit code; returns its JSON report.
    pub fn ok(&self, command: &str, extra: &[&str], exit: i32) -> Value {
        let out = self.run(command, extra);
        assert_eq!(code(&out), exit, "{command} {extra:?}: {}", describe(&out));
        json(&out)
    }

    /// `cleanup --older-than 0s` of the partition's whole table (exit 0); its JSON report.
    pub fn cleanup(&self, extra: &[&str]) -> Value {
        let table = self.qualified();
        let mut args = vec!["cleanup", "--table", &table, "--older-than", "0s", "--json"];
        args.extend(extra);
        let out = run_against(&self.hms_uri, &args);
        assert_eq!(code(&out), 0, "cleanup {extra:?}: {}", describe(&out));
        json(&out)
    }

    /// The metastore's partition object now.
    pub fn partition(&self) -> Partition {
        get_partition(
            &metastore(&self.hms_uri),
            &self.db,
            &self.table,
            &self.values,
        )
    }

    /// (location, parameters) as the metastore holds them now.
    pub fn location_and_parameters(&self) -> (String, BTreeMap<String, String>) {
        let p = self.partition();
        (location_of(&p), p.parameters.unwrap_or_default())
    }

    /// Where the metastore says the partition is now.
    pub fn location(&self) -> String {
        location_of(&self.partition())
    }

    /// The partition's metastore lock, as another client (a Hive writer, `user`) holds it: a
    /// compaction that asks for it is `busy`. Released with `release()`.
    pub fn hold_lock(&self, user: &str) -> hive_orc_compactor::lock::PartitionLock {
        use hive_orc_compactor::lock::{self, LockMode, LockOptions, Target};
        rt().block_on(lock::acquire(
            &metastore(&self.hms_uri),
            &Target {
                db: &self.db,
                table: &self.table,
                partition: &self.spec,
            },
            &LockOptions {
                mode: LockMode::Required,
                wait: std::time::Duration::ZERO,
                user: user.into(),
                ..LockOptions::default()
            },
            &tokio_util::sync::CancellationToken::new(),
            &mut vec![],
        ))
        .expect("the test takes the lock")
        .expect("the metastore has locks")
    }

    /// Names in the home's work directory.
    pub fn work_entries(&self) -> Vec<String> {
        work_entries(&self.home)
    }

    /// Rows in the partition's current location, counted by Java orc-tools.
    pub fn java_row_count(&self) -> u64 {
        let dir = self.location();
        let files: Vec<String> = list(&dir).0.iter().map(|f| format!("{dir}/{f}")).collect();
        java_row_count(&files)
    }

    /// The metastore object and the recursive listing of its home (our work directory left
    /// out unless `strict`).
    pub fn state(&self, strict: bool) -> State {
        State {
            partition: self.partition(),
            tree: tree(&self.home, !strict),
        }
    }
}

#[derive(Debug, PartialEq)]
pub struct State {
    pub partition: Partition,
    pub tree: BTreeMap<String, Value>,
}

pub fn assert_untouched(part: &Part, before: &State, after: &State, what: &str) {
    assert!(
        before.partition == after.partition,
        "{what}: the metastore partition {} changed:\nbefore {:#?}\nafter {:#?}",
        part.spec,
        before.partition,
        after.partition
    );
    for (dir, listing) in &before.tree {
        assert_eq!(
            Some(listing),
            after.tree.get(dir),
            "{what}: directory {dir} changed"
        );
    }
    assert_eq!(
        before.tree.keys().collect::<Vec<_>>(),
        after.tree.keys().collect::<Vec<_>>(),
        "{what}: directories appeared or vanished"
    );
}
