//! Who may use the new files: `compact` gives the new directory, files, work directory and
//! journal the owner, group, permission bits and ACL (default entries included) of the
//! originals, as far as HDFS lets the user it acts as; what it could not keep is one warning.
//!
//! The cluster's starting user (the one running the tests) is the HDFS superuser; `alice`
//! (`--hadoop-user`) is not. Each test uses its own partition of this area's own database.

#![cfg(feature = "cluster-tests")]

use std::sync::OnceLock;

use crate::common::hdfs::hdfs;
use crate::common::{describe, json, own_database, rt, run, OwnDatabase, WORK_DIR};
use hdfs_native::acl::AclEntry;
use hive_orc_compactor::hdfs::{Access, Location};
use serde_json::Value;

const TABLE: &str = "ext_p3";

fn db() -> &'static OwnDatabase {
    static DB: OnceLock<OwnDatabase> = OnceLock::new();
    own_database(&DB, "perms", "basic")
}

fn acl(spec: &[(&str, &str, &str, Option<&str>)]) -> Vec<AclEntry> {
    spec.iter()
        .map(|(t, scope, perm, name)| AclEntry::new(*t, *scope, *perm, name.map(str::to_owned)))
        .collect()
}

/// Sets owner, group, mode and extra ACL entries, as an admin would.
fn set_access(target: &Location, owner: &str, group: &str, mode: u16, entries: Vec<AclEntry>) {
    rt().block_on(async {
        let client = hdfs().client(target).unwrap();
        if !entries.is_empty() {
            client
                .modify_acl_entries(&target.path, entries)
                .await
                .unwrap_or_else(|e| panic!("setfacl {target}: {e}"));
        }
        hdfs().set_permission(target, mode).await.unwrap();
        hdfs()
            .set_owner(target, Some(owner), Some(group))
            .await
            .unwrap();
    })
}

fn access(target: &Location) -> Access {
    let mut a = rt()
        .block_on(hdfs().access(target))
        .unwrap_or_else(|e| panic!("{e}"))
        .unwrap_or_else(|| panic!("{target} does not exist"));
    // HDFS lists entries in its own order; compare them as sets.
    a.acl.sort_by_key(|e| format!("{e:?}"));
    a
}

/// The partition's directory and its data files, in the fixture.
fn partition(spec: &str) -> (Location, Vec<Location>) {
    let p = db().fixtures.table(TABLE).partition(spec);
    let dir = Location::parse(&p.location).unwrap();
    let files = p
        .top_level_files()
        .iter()
        .map(|f| dir.child(&f.path))
        .collect();
    (dir, files)
}

fn compact(spec: &str, extra: &[&str]) -> Value {
    let table = db().fixtures.qualified(TABLE);
    let mut args = vec!["compact", "--table", &table, "--partition", spec, "--json"];
    args.extend(extra);
    let out = run(&args);
    assert_eq!(out.status.code(), Some(0), "{}", describe(&out));
    let r = json(&out);
    assert_eq!(r["status"], "compacted", "{r}");
    r
}

/// The published directory, its files, the work directory and the journal of a run.
fn new_paths(report: &Value, home: &Location) -> (Location, Vec<Location>, Location, Location) {
    let published = Location::parse(report["new_location"].as_str().unwrap()).unwrap();
    let files = rt()
        .block_on(hdfs().list(&published))
        .unwrap()
        .unwrap()
        .files
        .iter()
        .map(|f| published.child(&f.name))
        .collect();
    let work = home.child(WORK_DIR);
    let journal = work.child(&format!("{}.json", report["run_id"].as_str().unwrap()));
    (published, files, work, journal)
}

#[test]
fn as_superuser_owner_group_mode_and_acls_are_kept() {
    let spec = "region=us/dt=2024-01-01/hour=00";
    let (dir, files) = partition(spec);
    let dir_acl = acl(&[
        ("user", "access", "r-x", Some("carol")),
        ("user", "default", "r-x", Some("carol")),
        ("group", "default", "r-x", None),
        ("user", "default", "rwx", None),
        ("other", "default", "---", None),
    ]);
    set_access(&dir, "bob", "analysts", 0o750, dir_acl);
    for f in &files {
        set_access(
            f,
            "bob",
            "analysts",
            0o640,
            acl(&[("user", "access", "r--", Some("carol"))]),
        );
    }
    let (old_dir, old_file) = (access(&dir), access(&files[0]));
    assert!(!old_file.acl.is_empty() && !old_dir.acl.is_empty());

    let report = compact(spec, &[]);
    assert_eq!(report["warnings"], Value::Array(vec![]), "{report}");
    let (published, new_files, work, journal) = new_paths(&report, &dir);
    assert_eq!(access(&published), old_dir, "the new directory");
    assert_eq!(access(&work), old_dir, "the work directory");
    assert!(!new_files.is_empty());
    for f in new_files.iter().chain([&journal]) {
        assert_eq!(access(f), old_file, "{f}");
    }
}

#[test]
fn as_another_user_what_hdfs_permits_is_kept_and_the_owner_is_a_warning() {
    let spec = "region=eu/dt=2024-01-01/hour=00";
    let (dir, files) = partition(spec);
    // alice may write the partition directory; the files belong to bob.
    set_access(&dir, "alice", "supergroup", 0o755, vec![]);
    for f in &files {
        set_access(
            f,
            "bob",
            "analysts",
            0o644,
            acl(&[("user", "access", "r--", Some("carol"))]),
        );
    }
    let old_file = access(&files[0]);

    let report = compact(spec, &["--hadoop-user", "alice"]);
    let warnings: Vec<&str> = report["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert_eq!(warnings.len(), 1, "{report}");
    assert!(
        warnings[0].contains("could not keep the original group, owner"),
        "{report}"
    );
    let (published, new_files, _, journal) = new_paths(&report, &dir);
    assert_eq!(access(&published).owner, "alice");
    for f in new_files.iter().chain([&journal]) {
        let now = access(f);
        assert_eq!(now.owner, "alice", "{f}: only a superuser gives files away");
        assert_eq!(
            (now.permission, &now.acl),
            (old_file.permission, &old_file.acl),
            "{f}: mode and ACL are kept"
        );
    }
}
