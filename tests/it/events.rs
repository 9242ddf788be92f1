#![cfg(feature = "cluster-tests")]
//! The swap as the metastore's listeners see it (Impala's catalog, Atlas, Hive replication):
//! each partition `compact` swaps, and each one `rollback` puts back, is announced in the
//! notification log with its new location, on HMS 4.0.1 and 3.1.3 (both run a notification
//! listener: see scripts/cluster's `select_hms`); a run that swaps nothing announces nothing.

use crate::common::events::{altered_partitions, current_id};
#[cfg(feature = "failpoints")]
use crate::common::failpoints::run_with_failpoints;
use crate::common::metastore::metastore;
use crate::common::partition::Part;
#[cfg(feature = "failpoints")]
use crate::common::{code, describe};
use crate::common::{env, fixtures};

/// Two partitions compacted by two runs (one `alter_partition` each), then one rolled back.
fn swaps_are_announced(hms_uri: &str, hdfs_url: &str, db: &str) {
    let fx = fixtures::load(db, "codecs", hms_uri, hdfs_url);
    let parts = [
        Part::of(&fx, hms_uri, "codecs", "codec=zstd"),
        Part::of(&fx, hms_uri, "codecs", "codec=snappy"),
    ];
    let ms = metastore(hms_uri);

    let start = current_id(&ms);
    for p in &parts {
        p.ok("compact", &[], 0);
    }
    assert!(
        current_id(&ms) > start,
        "the metastore at {hms_uri} logged no event for two swaps: it runs no notification \
         listener (metastore.transactional.event.listeners); start it with this checkout's \
         scripts/cluster, which configures one"
    );
    let swapped: Vec<_> = parts
        .iter()
        .map(|p| (p.values.clone(), p.location()))
        .collect();
    for (p, (_, location)) in parts.iter().zip(&swapped) {
        assert_ne!(
            location, &p.home,
            "{db} {}: compact did not move it",
            p.spec
        );
    }
    assert_eq!(
        altered_partitions(&ms, start, db, "codecs"),
        swapped,
        "the log after event {start} should announce each swap once, with its new location"
    );

    let start = current_id(&ms);
    parts[0].ok("rollback", &[], 0);
    assert_eq!(
        altered_partitions(&ms, start, db, "codecs"),
        vec![(parts[0].values.clone(), parts[0].location())],
        "the log after event {start} should announce the rollback of {}",
        parts[0].spec
    );

    // Runs that swap nothing announce nothing: one that finds nothing to do, and (with the
    // failpoints) one that fails just before the swap.
    let start = current_id(&ms);
    let r = parts[1].ok("compact", &[], 0);
    assert_eq!(r["status"], "nothing-to-do", "{r}");
    #[cfg(feature = "failpoints")]
    {
        let part = Part::of(&fx, hms_uri, "codecs", "codec=lz4");
        let out = run_with_failpoints(&part, "compact::before-swap=return");
        assert_eq!(code(&out), 1, "{}", describe(&out));
        assert_eq!(
            part.location(),
            part.home,
            "a failed run moved {}",
            part.spec
        );
    }
    assert_eq!(
        altered_partitions(&ms, start, db, "codecs"),
        vec![],
        "the log after event {start} should announce no partition of {db}.codecs"
    );
}

#[test]
fn swaps_and_rollback_are_announced_on_hms_4() {
    let db = format!("events4_{}", std::process::id());
    swaps_are_announced(&env("HMS_URI"), &env("HDFS_URL"), &db);
}

#[test]
fn swaps_and_rollback_are_announced_on_hms_3_1() {
    let db = format!("events31_{}", std::process::id());
    swaps_are_announced(&env("HMS31_URI"), &env("HDFS31_URL"), &db);
}
