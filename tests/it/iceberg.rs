//! `iceberg check`, `iceberg migrate` and `iceberg revert` end to end: the real binary against
//! the cluster `scripts/test` starts, the result read back by Apache Iceberg's own Java reader
//! (`scripts/iceberg-reader`), which also reads the Hive table with the reference ORC reader
//! and compares the rows.
//!
//! One database of this area's own; every test migrates its own table.

#![cfg(feature = "cluster-tests")]

use crate::common;

use std::process::{Command, Output};
use std::sync::OnceLock;

use crate::common::{describe, env, json, rt, run, Fixtures, OwnDatabase};
use hive_orc_compactor::hdfs::{Hdfs, Location};
use hive_orc_compactor::metastore::{Metastore, Partition, Table};
use serde_json::Value;

fn db() -> &'static Fixtures {
    static DB: OnceLock<OwnDatabase> = OnceLock::new();
    &common::own_database(
        &DB,
        "iceberg",
        "basic,types,iceberg,escaping,schemas,refusals",
    )
    .fixtures
}

fn metastore() -> Metastore {
    common::metastore::metastore(&env("HMS_URI"))
}

fn get_table(name: &str) -> Option<Table> {
    get_table_at(&metastore(), &db().database, name)
}

fn get_table_at(m: &Metastore, db: &str, name: &str) -> Option<Table> {
    rt().block_on(async { m.get_table(db, name).await.ok() })
}

fn partitions(name: &str) -> Vec<Partition> {
    partitions_at(&metastore(), &db().database, name)
}

fn partitions_at(m: &Metastore, db: &str, name: &str) -> Vec<Partition> {
    rt().block_on(async {
        let mut p = m.partitions(db, name, None).await.expect("partitions");
        p.sort_by(|a, b| a.values.cmp(&b.values));
        p
    })
}

fn code(o: &Output) -> i32 {
    o.status.code().unwrap_or(-1)
}

fn exists(path: &str) -> bool {
    rt().block_on(async {
        Hdfs::new()
            .status(&Location::parse(path).expect("a location"))
            .await
            .expect("HDFS answers")
            .is_some()
    })
}

/// Runs the independent reader: Iceberg's rows of `iceberg`, loaded through Iceberg's
/// HiveCatalog, compared with the Hive table `hive`'s rows read from its ORC files.
fn read_back(iceberg: &str, hive: &str, filters: &[&str]) -> Value {
    read_back_at(&env("HMS_URI"), iceberg, hive, filters)
}

fn read_back_at(hms_uri: &str, iceberg: &str, hive: &str, filters: &[&str]) -> Value {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/scripts/iceberg-reader");
    let mut cmd = Command::new(script);
    cmd.args(["--metastore", hms_uri, "--iceberg", iceberg, "--hive", hive]);
    for f in filters {
        cmd.args(["--where", f]);
    }
    let out = cmd.output().expect("scripts/iceberg-reader runs");
    assert!(out.status.success(), "iceberg-reader: {}", describe(&out));
    json(&out)
}

fn total_rows(table: &str) -> u64 {
    db().table(table).partitions.iter().map(|p| p.rows).sum()
}

/// Every field of the table that says what it is (the server's bookkeeping of access times
/// aside), for before/after comparisons.
fn differences(before: &Table, after: &Table) -> Vec<String> {
    let mut d = vec![];
    macro_rules! same {
        ($($f:ident),*) => {$(
            if before.$f != after.$f {
                d.push(format!("{}: {:?} -> {:?}", stringify!($f), before.$f, after.$f));
            }
        )*};
    }
    same!(
        table_name,
        db_name,
        owner,
        owner_type,
        create_time,
        retention,
        sd,
        partition_keys,
        parameters,
        table_type,
        view_original_text,
        view_expanded_text,
        temporary,
        rewrite_enabled,
        cat_name
    );
    d
}

#[test]
fn check_reports_ready_blocked_and_costs() {
    let fx = db();
    let out = run(&["iceberg", "check", "--database", &fx.database, "--json"]);
    assert_eq!(
        code(&out),
        3,
        "some fixtures are blocked: {}",
        describe(&out)
    );
    let report = json(&out);
    let table = |name: &str| -> Value {
        report["tables"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["table"] == fx.qualified(name))
            .unwrap_or_else(|| panic!("{name} in {report}"))
            .clone()
    };
    let rules = |t: &Value| -> Vec<String> {
        t["blocks"]
            .as_array()
            .unwrap()
            .iter()
            .map(|b| b["rule"].as_str().unwrap().to_string())
            .collect()
    };
    let p1 = table("ext_p1");
    assert_eq!(p1["status"], "ready", "{p1}");
    let files: u64 = fx
        .table("ext_p1")
        .partitions
        .iter()
        .map(|p| p.file_count)
        .sum();
    assert_eq!(p1["costs"]["files"], files);
    assert_eq!(p1["costs"]["rows"], total_rows("ext_p1"));
    assert!(p1["costs"]["excess_files"].as_u64().unwrap() > 0, "{p1}");

    let escaped = table("escaped");
    assert_eq!(escaped["status"], "ready", "{escaped}");
    assert_eq!(escaped["costs"]["null_partitions"], 1);

    let legacy = table("legacy_colnames");
    assert_eq!(legacy["status"], "ready", "{legacy}");
    assert!(legacy["costs"]["positional_name_files"].as_u64().unwrap() > 0);

    let all = table("all_types");
    assert_eq!(all["status"], "refused");
    let blocked: Vec<String> = all["blocks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["reason"].as_str().unwrap().to_string())
        .collect();
    assert!(
        blocked.iter().any(|b| b.contains("c_char10")),
        "{blocked:?}"
    );
    assert!(blocked.iter().any(|b| b.contains("c_union")), "{blocked:?}");
    assert!(all["conversions"]
        .as_array()
        .unwrap()
        .iter()
        .any(|c| c["column"] == "c_tinyint"));
    assert_eq!(rules(&table("bucketed")), ["bucketed"]);
    assert_eq!(rules(&table("view_v")), ["view"]);

    let text = run(&["iceberg", "check", "--table", &fx.qualified("ext_p1")]);
    assert_eq!(code(&text), 0, "{}", describe(&text));
    assert!(common::stdout(&text).contains("ready to migrate in place"));
}

#[test]
fn in_place_migrate_reads_back_exactly_and_revert_restores_the_table() {
    let fx = db();
    let name = fx.qualified("escaped");
    let before = get_table("escaped").expect("the fixture exists");
    let parts_before = partitions("escaped");

    let dry = run(&[
        "iceberg",
        "migrate",
        "--table",
        &name,
        "--dry-run",
        "--json",
    ]);
    assert_eq!(code(&dry), 0, "{}", describe(&dry));
    assert_eq!(json(&dry)["status"], "dry-run");
    assert!(differences(&before, &get_table("escaped").unwrap()).is_empty());

    let out = run(&["iceberg", "migrate", "--table", &name, "--json"]);
    assert_eq!(code(&out), 0, "{}", describe(&out));
    let report = json(&out);
    assert_eq!(report["status"], "migrated", "{report}");
    let metadata = report["metadata_location"].as_str().unwrap().to_string();

    let ice = get_table("escaped").expect("the Iceberg table");
    let params = ice.parameters.clone().unwrap();
    assert_eq!(params["table_type"], "ICEBERG");
    assert_eq!(params["metadata_location"], metadata);
    assert_eq!(params["EXTERNAL"], "TRUE");
    assert_eq!(
        params["storage_handler"],
        "org.apache.iceberg.mr.hive.HiveIcebergStorageHandler"
    );
    assert_eq!(ice.partition_keys, Some(vec![]));
    let backup = format!("{}__hive_backup", "escaped");
    assert!(get_table(&backup).is_some(), "the Hive table is kept");

    let hive = fx.qualified(&backup);
    let all = read_back(&name, &hive, &[]);
    assert_eq!(all["equal"], true, "{all}");
    assert_eq!(all["metadata_location"], metadata.as_str(), "{all}");
    assert_eq!(all["iceberg_rows"], total_rows("escaped"), "{all}");
    // The null partition: Iceberg prunes to its files and returns its rows with k1 null.
    let null_part = read_back(&name, &hive, &["k1=null"]);
    assert_eq!(null_part["equal"], true, "{null_part}");
    assert_eq!(null_part["files_planned"], 10, "{null_part}");
    assert!(null_part["iceberg_rows"].as_u64().unwrap() > 0);
    let pruned = read_back(&name, &hive, &["k2=café"]);
    assert_eq!(pruned["equal"], true, "{pruned}");
    assert_eq!(pruned["files_planned"], 10, "{pruned}");
    // Metric-based skipping: ids count the rows of a partition, so an id lies in one file of
    // each of the 7 partitions; the other 63 files are skipped by their id bounds.
    let one = read_back(&name, &hive, &["id=100"]);
    assert_eq!(one["equal"], true, "{one}");
    assert_eq!(one["files_planned"], 7, "{one}");
    assert_eq!(one["files_total"], 70, "{one}");

    let dry = run(&["iceberg", "revert", "--table", &name, "--dry-run"]);
    assert_eq!(code(&dry), 0, "{}", describe(&dry));
    assert!(get_table("escaped")
        .unwrap()
        .parameters
        .unwrap()
        .contains_key("metadata_location"));

    let out = run(&["iceberg", "revert", "--table", &name, "--json"]);
    assert_eq!(code(&out), 0, "{}", describe(&out));
    let after = get_table("escaped").expect("the Hive table is back");
    assert_eq!(differences(&before, &after), Vec::<String>::new());
    assert_eq!(partitions("escaped"), parts_before);
    assert!(get_table(&backup).is_none());
    assert!(!exists(&metadata), "the Iceberg metadata is gone");

    let again = run(&["iceberg", "revert", "--table", &name]);
    assert_eq!(code(&again), 3, "{}", describe(&again));
}

/// Every type Iceberg can hold (and a null partition), migrated as a snapshot table beside the
/// Hive table, which stays as it was.
#[test]
fn snapshot_migrate_of_every_type_leaves_the_hive_table_alone() {
    let fx = db();
    let name = "iceberg_types";
    let before = get_table(name).unwrap();
    let to = fx.qualified("iceberg_types_ice");
    let out = run(&[
        "iceberg",
        "migrate",
        "--table",
        &fx.qualified(name),
        "--to",
        &to,
        "--json",
    ]);
    assert_eq!(code(&out), 0, "{}", describe(&out));
    let report = json(&out);
    assert!(report["backup_table"].is_null());
    let ice = get_table("iceberg_types_ice").unwrap();
    let params = ice.parameters.unwrap();
    assert_eq!(params["table_type"], "ICEBERG");
    assert_eq!(params["external.table.purge"], "FALSE");
    assert!(differences(&before, &get_table(name).unwrap()).is_empty());

    let all = read_back(&to, &fx.qualified(name), &[]);
    assert_eq!(all["equal"], true, "{all}");
    assert_eq!(all["iceberg_rows"], total_rows(name), "{all}");
    let nulls = read_back(&to, &fx.qualified(name), &["p=null"]);
    assert_eq!(nulls["equal"], true, "{nulls}");
    assert_eq!(nulls["files_planned"], 3, "{nulls}");
    let pre_1970 = read_back(&to, &fx.qualified(name), &["c_date<1970-01-01"]);
    assert_eq!(pre_1970["equal"], true, "{pre_1970}");

    // A snapshot table cannot be reverted: it was never the Hive table.
    let revert = run(&["iceberg", "revert", "--table", &to]);
    assert_eq!(code(&revert), 3, "{}", describe(&revert));
}

#[test]
fn refused_tables_are_untouched() {
    let fx = db();
    for table in ["all_types", "bucketed"] {
        let before = get_table(table).unwrap();
        let location = before.sd.as_ref().unwrap().location.clone().unwrap();
        for extra in [&[][..], &["--dry-run"][..]] {
            let mut args = vec!["iceberg", "migrate", "--table"];
            let name = fx.qualified(table);
            args.push(&name);
            args.extend_from_slice(extra);
            let out = run(&args);
            assert_eq!(code(&out), 3, "{table}: {}", describe(&out));
        }
        assert!(differences(&before, &get_table(table).unwrap()).is_empty());
        assert!(
            !exists(&format!("{location}/metadata")),
            "{table}: nothing written"
        );
    }
}

/// Managed, unpartitioned, positional-name (`_col0`) and evolved-schema tables: each migrated
/// in place, read back equal, and reverted to exactly what it was.
#[test]
fn layouts_and_legacy_files_round_trip() {
    let fx = db();
    for table in [
        "managed_p3",
        "ext_unpartitioned",
        "legacy_colnames",
        "schema_evolution",
    ] {
        let name = fx.qualified(table);
        let before = get_table(table).unwrap();
        let out = run(&["iceberg", "migrate", "--table", &name]);
        assert_eq!(code(&out), 0, "{table}: {}", describe(&out));
        let backup = fx.qualified(&format!("{table}__hive_backup"));
        let all = read_back(&name, &backup, &[]);
        assert_eq!(all["equal"], true, "{table}: {all}");
        assert_eq!(all["iceberg_rows"], total_rows(table), "{table}: {all}");
        let out = run(&["iceberg", "revert", "--table", &name]);
        assert_eq!(code(&out), 0, "{table}: {}", describe(&out));
        let after = get_table(table).unwrap();
        assert_eq!(
            differences(&before, &after),
            Vec::<String>::new(),
            "{table}"
        );
    }
}

/// A table someone holds a metastore lock on is busy (exit 4): nothing is committed and the
/// metadata written before the lock was asked for is deleted again.
#[test]
fn a_locked_table_is_busy_and_untouched() {
    use hive_orc_compactor::lock::{self, LockMode, LockOptions, Target};
    let fx = db();
    let table = "ext_p3";
    let before = get_table(table).unwrap();
    let location = before.sd.as_ref().unwrap().location.clone().unwrap();
    let m = metastore();
    let options = LockOptions {
        mode: LockMode::Required,
        wait: std::time::Duration::ZERO,
        user: "iceberg-test".into(),
        ..LockOptions::default()
    };
    let target = Target {
        db: &fx.database,
        table,
        partition: "",
    };
    let held = rt()
        .block_on(lock::acquire(
            &m,
            &target,
            &options,
            &tokio_util::sync::CancellationToken::new(),
            &mut vec![],
        ))
        .expect("the table lock")
        .expect("the metastore has a lock manager");
    let name = fx.qualified(table);
    let out = run(&[
        "iceberg",
        "migrate",
        "--table",
        &name,
        "--lock-timeout",
        "0s",
    ]);
    assert_eq!(code(&out), 4, "{}", describe(&out));
    assert!(differences(&before, &get_table(table).unwrap()).is_empty());
    assert!(get_table(&format!("{table}__hive_backup")).is_none());
    let listing = rt()
        .block_on(Hdfs::new().list(&Location::parse(&format!("{location}/metadata")).unwrap()))
        .expect("HDFS answers");
    assert!(
        listing.is_none(),
        "the metadata written is deleted: {listing:?}"
    );
    rt().block_on(held.release()).expect("unlock");
}

/// A file added between the scan and the commit makes the migration busy (exit 4): the re-check
/// under the lock lists the table again and compares it with what was described, so nothing is
/// committed and the metadata written is deleted.
#[cfg(feature = "failpoints")]
#[test]
fn a_file_added_before_the_commit_makes_it_busy_and_untouched() {
    use std::process::Stdio;
    use std::time::{Duration, Instant};
    let fx = db();
    let table = "managed_p1";
    let before = get_table(table).unwrap();
    let location = before.sd.as_ref().unwrap().location.clone().unwrap();
    let partition = partitions(table)[0]
        .sd
        .as_ref()
        .unwrap()
        .location
        .clone()
        .unwrap();
    let metadata = Location::parse(&format!("{location}/metadata")).unwrap();
    let child = common::command(&env("HMS_URI"))
        .args(["iceberg", "migrate", "--table", &fx.qualified(table)])
        .env("FAILPOINTS", "iceberg::before-commit=sleep(4000)")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the binary starts");
    // The metadata JSON is the last file written before the pause.
    let hdfs = Hdfs::new();
    let t0 = Instant::now();
    while !rt()
        .block_on(hdfs.list(&metadata))
        .expect("HDFS answers")
        .is_some_and(|l| l.files.iter().any(|f| f.name.ends_with(".metadata.json")))
    {
        assert!(
            t0.elapsed() < Duration::from_secs(60),
            "no metadata written"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let added = Location::parse(&format!("{partition}/added-meanwhile")).unwrap();
    rt().block_on(async {
        let mut w = hdfs.create(&added, 0o644).await.expect("create");
        w.close().await.expect("close");
    });
    let out = child.wait_with_output().expect("the run ends");
    rt().block_on(hdfs.delete(&added, false)).expect("delete");
    assert_eq!(code(&out), 4, "{}", describe(&out));
    assert!(describe(&out).contains("changed"), "{}", describe(&out));
    assert!(differences(&before, &get_table(table).unwrap()).is_empty());
    assert!(get_table(&format!("{table}__hive_backup")).is_none());
    let listing = rt().block_on(hdfs.list(&metadata)).expect("HDFS answers");
    assert!(
        listing.is_none(),
        "the metadata written is deleted: {listing:?}"
    );
}

/// HMS 3.1.3: migrated in place there, the table loads through Iceberg's HiveCatalog (Hive
/// 3.1.3's client) and reads back exactly, null partition and pruning included; revert gives
/// back the Hive table and its partitions as they were.
#[test]
fn migrates_and_reverts_on_hms_3_1() {
    let uri = env("HMS31_URI");
    let db = format!("iceberg31_{}", std::process::id());
    let fx = common::fixtures::load(&db, "escaping", &uri, &env("HDFS31_URL"));
    let m = common::metastore::metastore(&uri);
    let before = get_table_at(&m, &db, "escaped").expect("the fixture exists");
    let parts_before = partitions_at(&m, &db, "escaped");
    let name = fx.qualified("escaped");

    let out = common::run_against(&uri, &["iceberg", "migrate", "--table", &name, "--json"]);
    assert_eq!(code(&out), 0, "{}", describe(&out));
    let report = json(&out);
    assert_eq!(report["status"], "migrated", "{report}");
    let metadata = report["metadata_location"].as_str().unwrap().to_string();
    let params = get_table_at(&m, &db, "escaped")
        .unwrap()
        .parameters
        .unwrap();
    assert_eq!(params["table_type"], "ICEBERG");
    assert_eq!(params["metadata_location"], metadata);

    let hive = fx.qualified("escaped__hive_backup");
    let rows: u64 = fx.table("escaped").partitions.iter().map(|p| p.rows).sum();
    let all = read_back_at(&uri, &name, &hive, &[]);
    assert_eq!(all["equal"], true, "{all}");
    assert_eq!(all["metadata_location"], metadata.as_str(), "{all}");
    assert_eq!(all["iceberg_rows"], rows, "{all}");
    let null_part = read_back_at(&uri, &name, &hive, &["k1=null"]);
    assert_eq!(null_part["equal"], true, "{null_part}");
    assert_eq!(null_part["files_planned"], 10, "{null_part}");
    let one = read_back_at(&uri, &name, &hive, &["id=100"]);
    assert_eq!(one["equal"], true, "{one}");
    // One file a partition holds id 100; a metastore on MariaDB (Hive's latin1 schema) holds
    // one partition fewer (the manifest leaves it out).
    let partitions = fx.table("escaped").partitions.len();
    assert_eq!(one["files_planned"], partitions, "{one}");

    let out = common::run_against(&uri, &["iceberg", "revert", "--table", &name, "--json"]);
    assert_eq!(code(&out), 0, "{}", describe(&out));
    let after = get_table_at(&m, &db, "escaped").expect("the Hive table is back");
    assert_eq!(differences(&before, &after), Vec::<String>::new());
    assert_eq!(partitions_at(&m, &db, "escaped"), parts_before);
    assert!(get_table_at(&m, &db, "escaped__hive_backup").is_none());
    let gone = rt()
        .block_on(Hdfs::new().status(&Location::parse(&metadata).unwrap()))
        .expect("HDFS answers");
    assert!(gone.is_none(), "the Iceberg metadata is gone");
}
