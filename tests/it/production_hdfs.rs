//! The HDFS of production clusters (issue #33): encryption zones, erasure coding, HA with
//! failover and observer reads, viewfs. Each test needs the local cluster started with its
//! profile (`scripts/cluster start --kms|--ec|--ha|--viewfs|--full`, which exports
//! `CLUSTER_PROFILES`) and skips, saying so, on any other cluster: `scripts/test` runs this
//! binary once more against a `--full` cluster (HA with an observer, KMS, EC).
//!
//! The partitions are fixture partitions (`scripts/fixtures --set basic`) whose files are copied,
//! through the tool's own client, into the profile's directories (the zone, the EC directories,
//! the viewfs mounts) and pointed at there. Rows are counted by Java orc-tools.

#![cfg(feature = "cluster-tests")]

use crate::common;

use std::process::Command;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use crate::common::hdfs::{exists, files_in, hdfs, list, loc};
use crate::common::metastore::connect;
use crate::common::partition::{assert_untouched, Part};
use crate::common::{code, command, describe, env, json, own_database, repo, rt, OwnDatabase};

/// Whether the running cluster has `profile`; prints why a test skips when not.
fn profile(profile: &str, test: &str) -> bool {
    let profiles = std::env::var("CLUSTER_PROFILES").unwrap_or_default();
    let on = profiles.split(',').any(|p| p == profile);
    if !on {
        eprintln!(
            "skipping {test}: the cluster runs profiles '{profiles}', not '{profile}' \
             (scripts/cluster start --{profile}; scripts/test runs it on a --full cluster)"
        );
    }
    on
}

fn db() -> &'static OwnDatabase {
    static DB: OnceLock<OwnDatabase> = OnceLock::new();
    own_database(&DB, "prodhdfs", "basic")
}

/// The `n`-th partition of `ext_p3` (25 files each), its files copied into `dir` (a directory
/// URL the partition's directory is made in) and the partition pointed there.
fn moved_part(n: usize, dir: &str) -> Part {
    let fx = &db().fixtures;
    let spec = fx.table("ext_p3").partitions[n].spec.clone();
    let mut part = Part::of(fx, &env("HMS_URI"), "ext_p3", &spec);
    let target = format!("{dir}/{}/ext_p3/{spec}", fx.database);
    let from = loc(&part.home);
    let to = loc(&target);
    let names = files_in(&part.home);
    rt().block_on(async {
        hdfs().mkdirs(&to, 0o755).await.expect("mkdirs");
        for (name, _) in names {
            let reader = hdfs().open(&from.child(&name)).await.expect("open");
            let bytes = reader
                .read_range(0, reader.file_length())
                .await
                .expect("read");
            let mut w = hdfs()
                .create(&to.child(&name), 0o644)
                .await
                .unwrap_or_else(|e| panic!("{e}"));
            w.write_bytes(bytes).await.expect("write");
            w.close().await.expect("close");
        }
        let ms = connect(&part.hms_uri).await;
        let mut p = ms
            .get_partition_by_values(&part.db, &part.table, &part.values)
            .await
            .expect("get_partition");
        p.sd.as_mut().unwrap().location = Some(target.clone());
        ms.alter_partition(&part.db, &part.table, p, Default::default())
            .await
            .expect("alter_partition");
        // The fixture's directory goes: `cleanup --rehome` moves a partition back there.
        hdfs().delete(&from, true).await.expect("delete");
    });
    part.home = target;
    part
}

/// `scripts/cluster ARGS` of the running cluster (`CLUSTER_DIR`); its stdout.
fn cluster(args: &[&str]) -> String {
    let out = Command::new(repo().join("scripts/cluster"))
        .args(args)
        .output()
        .expect("scripts/cluster runs");
    assert!(
        out.status.success(),
        "scripts/cluster {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A whole round: compact, verify with checksums, rows by Java, rollback, compact again,
/// cleanup; every step on the real cluster.
fn round(part: &Part) -> String {
    let r = part.ok("compact", &[], 0);
    assert_eq!(r["status"], "compacted", "{r}");
    let new_location = r["new_location"].as_str().unwrap().to_string();
    assert!(
        loc(&new_location).is_within(&loc(&part.home)),
        "staging and outputs stay inside the partition's directory: {new_location}"
    );
    let v = part.ok("verify", &["--checksums"], 0);
    assert_eq!(v["rows"].as_u64(), Some(part.rows), "{v}");
    assert_eq!(part.java_row_count(), part.rows);
    let rb = part.ok("rollback", &[], 0);
    assert_eq!(rb["status"], "rolled-back", "{rb}");
    assert_eq!(part.java_row_count(), part.rows);
    let again = part.ok("compact", &[], 0);
    assert_eq!(again["status"], "compacted", "{again}");
    again["new_location"].as_str().unwrap().to_string()
}

#[test]
fn encryption_zone_compact_rollback_cleanup_and_trash() {
    if !profile("kms", "encryption_zone_compact_rollback_cleanup_and_trash") {
        return;
    }
    let zone = format!("{}{}", env("HDFS_URL"), env("CLUSTER_EZ_DIR"));
    let part = moved_part(0, &zone);
    let new_location = round(&part);
    // The outputs are encrypted: the NameNode holds their encryption info.
    let (files, _) = list(&new_location);
    let info = cluster(&[
        "hdfs",
        "crypto",
        "-getFileEncryptionInfo",
        "-path",
        &format!("{}/{}", loc(&new_location).path, files[0]),
    ]);
    assert!(info.contains("keyName"), "{info}");
    // Cleanup moves what the run replaced to the zone's own trash (HDFS moves nothing out of a
    // zone), then deletes on a second round.
    // (Cleanup covers the whole table: other tests' partitions are in its report too.)
    let c = part.cleanup(&["--trash"]);
    let zone_path = format!("{}/", env("CLUSTER_EZ_DIR"));
    let trashed: Vec<String> = c["partitions"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["partition"] == part.spec.as_str())
        .flat_map(|p| p["trashed_to"].as_array().cloned().unwrap_or_default())
        .map(|t| t.as_str().unwrap().to_string())
        .collect();
    assert_eq!(
        trashed.len() as u64,
        part.files + 1,
        "inputs and the rolled-back run: {c}"
    );
    for t in &trashed {
        assert!(
            loc(t).path.starts_with(&format!("{zone_path}.Trash/")),
            "the zone's trash: {t}"
        );
        assert!(exists(t), "{t}");
    }
    assert_eq!(list(&part.home).0, Vec::<String>::new(), "old files gone");
    assert_eq!(part.java_row_count(), part.rows);
    part.ok("verify", &["--checksums"], 0);

    // A second partition: cleanup that deletes.
    let part = moved_part(1, &zone);
    round(&part);
    part.cleanup(&[]);
    assert_eq!(list(&part.home).0, Vec::<String>::new(), "old files gone");
    assert_eq!(part.java_row_count(), part.rows);
}

#[test]
fn erasure_coded_outputs_and_their_count() {
    if !profile("ec", "erasure_coded_outputs_and_their_count") {
        return;
    }
    let dir = format!("{}{}", env("HDFS_URL"), env("CLUSTER_EC_RS_DIR"));
    let part = moved_part(2, &dir);
    let r = part.ok("compact", &[], 0);
    assert_eq!(r["status"], "compacted", "{r}");
    let new_location = r["new_location"].as_str().unwrap().to_string();
    let (_, params) = part.location_and_parameters();
    assert_eq!(
        params.get("numFilesErasureCoded"),
        params.get("numFiles"),
        "every new file is erasure coded: {params:?}"
    );
    let (files, _) = list(&new_location);
    let policy = cluster(&[
        "hdfs",
        "ec",
        "-getPolicy",
        "-path",
        &format!("{}/{}", loc(&new_location).path, files[0]),
    ]);
    assert!(policy.contains(&env("CLUSTER_EC_RS_POLICY")), "{policy}");
    assert_eq!(part.java_row_count(), part.rows);
    part.ok("verify", &["--checksums"], 0);
    let rb = part.ok("rollback", &[], 0);
    assert_eq!(rb["status"], "rolled-back", "{rb}");
    part.ok("compact", &[], 0);
    part.cleanup(&[]);
    assert_eq!(part.java_row_count(), part.rows);
}

#[test]
fn a_directory_of_a_policy_hdfs_native_cannot_write_is_refused_untouched() {
    if !profile(
        "ec",
        "a_directory_of_a_policy_hdfs_native_cannot_write_is_refused_untouched",
    ) {
        return;
    }
    let dir = format!("{}{}", env("HDFS_URL"), env("CLUSTER_EC_XOR_DIR"));
    let part = moved_part(3, &dir);
    let before = part.state(true);
    let out = part.compact(&[]);
    assert_eq!(code(&out), 3, "{}", describe(&out));
    let r = json(&out);
    assert_eq!(r["rule"], "erasure_coding", "{r}");
    let reason = r["reason"].as_str().unwrap_or("");
    assert!(
        reason.contains(&loc(&part.home).path) && reason.contains("XOR"),
        "the reason names the directory and the policy: {r}"
    );
    assert_untouched(&part, &before, &part.state(true), "XOR-2-1 directory");
}

/// The NameNode (`nn1`..) that is active now.
fn active_namenode() -> String {
    for nn in env("CLUSTER_HA_NAMENODES").split(',') {
        let state = cluster(&[
            "haadmin",
            "-ns",
            &env("CLUSTER_HA_NAMESERVICE"),
            "-getServiceState",
            nn,
        ]);
        if state.trim() == "active" {
            return nn.to_string();
        }
    }
    panic!("no active NameNode");
}

#[cfg(feature = "failpoints")]
#[test]
fn a_failover_while_a_run_is_staged_ends_compacted_or_untouched() {
    if !profile(
        "ha",
        "a_failover_while_a_run_is_staged_ends_compacted_or_untouched",
    ) {
        return;
    }
    let part = moved_part(4, &env("HDFS_URL"));
    let child = command(&part.hms_uri)
        .args(part.args("compact", &[]))
        .env("FAILPOINTS", "compact::after-stage=sleep(8000)")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("the binary starts");
    let t0 = Instant::now();
    while !part.work_entries().iter().any(|n| n.ends_with(".staging")) {
        assert!(t0.elapsed() < Duration::from_secs(60), "never staged");
        std::thread::sleep(Duration::from_millis(50));
    }
    // The active becomes standby and the standby active while the run holds its staging.
    let from = active_namenode();
    let to = if from == "nn1" { "nn2" } else { "nn1" };
    let ns = env("CLUSTER_HA_NAMESERVICE");
    cluster(&["haadmin", "-ns", &ns, "-transitionToStandby", &from]);
    cluster(&["haadmin", "-ns", &ns, "-transitionToActive", to]);
    let out = child.wait_with_output().expect("the run ends");
    let r = json(&out);
    match code(&out) {
        0 => assert_eq!(r["status"], "compacted", "{r}"),
        1 => assert!(
            r["new_location"].is_null() && loc(&part.location()) == loc(&part.home),
            "a failed run leaves the partition where it was: {r}"
        ),
        other => panic!("exit {other}: {}", describe(&out)),
    }
    assert_eq!(part.java_row_count(), part.rows, "{r}");
    part.ok("verify", &[], 0);
}

#[test]
fn a_file_written_just_before_the_run_is_in_its_snapshot() {
    if !profile(
        "ha",
        "a_file_written_just_before_the_run_is_in_its_snapshot",
    ) {
        return;
    }
    let part = moved_part(5, &env("HDFS_URL"));
    // Written through the active (a write), then at once a run whose first calls are reads
    // that an observer would serve, maybe before it tails the file's edits.
    let first = files_in(&part.home)[0].0.clone();
    common::hdfs::copy(
        &format!("{}/{first}", part.home),
        &format!("{}/000999_0", part.home),
    );
    let out = part.compact(&[]);
    let r = json(&out);
    match code(&out) {
        0 => assert_eq!(
            r["files_before"].as_u64(),
            Some(part.files + 1),
            "the new file is in the snapshot: {r}"
        ),
        4 => assert_eq!(r["status"], "busy", "{r}"),
        other => panic!("exit {other}: {}", describe(&out)),
    }
    let extra = common::orc_tools::java_row_count(&[format!("{}/{first}", part.home)]);
    assert_eq!(
        part.java_row_count(),
        part.rows + extra,
        "every row, the new file's too"
    );
}

#[test]
fn partitions_on_two_viewfs_mounts_compact_roll_back_clean_up_and_rehome() {
    if !profile(
        "viewfs",
        "partitions_on_two_viewfs_mounts_compact_roll_back_clean_up_and_rehome",
    ) {
        return;
    }
    let fs = env("HDFS_URL");
    let a = moved_part(6, &format!("{fs}/warehouse/a"));
    let b = moved_part(7, &format!("{fs}/warehouse/b"));
    for part in [&a, &b] {
        round(part);
        part.cleanup(&[]);
        assert_eq!(part.java_row_count(), part.rows);
        part.ok("verify", &["--checksums"], 0);
    }
    // Rehome: the partition on mount b goes back to the table's own directory, on another
    // mount: a copy, never a rename across mounts.
    // (Cleanup covers the whole table: partition a is rehomed too.)
    let c = b.cleanup(&["--rehome"]);
    let entry = c["partitions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["partition"] == b.spec.as_str())
        .cloned()
        .unwrap_or_else(|| panic!("{c}"));
    let rehomed = entry["rehomed_to"]
        .as_str()
        .unwrap_or_else(|| panic!("{c}"));
    assert_eq!(loc(&b.location()), loc(rehomed));
    assert!(!loc(rehomed).is_within(&loc(&b.home)), "{rehomed}");
    assert_eq!(b.java_row_count(), b.rows);
    b.ok("verify", &[], 0);
}
