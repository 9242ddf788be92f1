//! `compact` end to end: the real binary against the real clusters `scripts/test` starts (HDFS +
//! HMS 4.0.1, and HMS 3.1.3 for one swap), checked by an independent reader (Java ORC tools
//! 1.9.5 through `scripts/orc-tools`, reading HDFS directly) and by the metastore itself.
//!
//! The `fixtures` database is read-only for tests: this file loads its own databases with
//! `scripts/fixtures --db <unique>` once per test process, and every test uses its own partitions
//! so the tests stay independent of each other and of their order.
//!
//! What "untouched" means here: the partition's metastore object (whole Thrift struct) and the
//! recursive listing of its directory (names, lengths, mtimes, owners, permissions) are the same
//! as before, except that a hidden `.hive-orc-compactor` directory may remain.

#![cfg(feature = "cluster-tests")]

use crate::common;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::OnceLock;
use std::time::Instant;

use crate::common::compaction::{
    check_compactions, check_second_run, compact_all, compact_all_with,
};
#[cfg(feature = "failpoints")]
use crate::common::failpoints::{check_busy, kill_while_paused, run_with_failpoints, PRE_SWAP};
use crate::common::hdfs::{copy, files_in, hdfs, loc, read_file, write_file};
use crate::common::partition::{assert_untouched, Part, State};
#[cfg(feature = "failpoints")]
use crate::common::WORK_DIR;
use crate::common::{code, describe, env, json, rt, run_against, run_many, Fixtures, OwnDatabase};
use serde_json::Value;

/// This area's database on the HMS 4 cluster: every set (each test uses its own partitions).
fn db4() -> &'static Fixtures {
    static DB: OnceLock<OwnDatabase> = OnceLock::new();
    &common::own_database(
        &DB,
        "compact",
        "basic,types,codecs,schemas,escaping,leftovers,refusals",
    )
    .fixtures
}

// ---------------------------------------------------------------------------------------------
// 1. Every table kind and codec.

#[test]
fn compacts_every_table_kind_and_codec_readably_with_true_statistics() {
    let fx = db4();
    let uri = env("HMS_URI");
    let mut parts: Vec<Part> = vec![
        // One level: 300 Hive-named files; 120 Spark-named snappy files; `_copy_N` files with
        // MSCK-style stats (no numRows); 3 multi-stripe files with bloom filters.
        ("ext_p1", "dt=2024-01-01"),
        ("ext_p1", "dt=2024-01-02"),
        ("ext_p1", "dt=2024-01-03"),
        ("ext_p1", "dt=2024-01-04"),
        ("ext_p3", "region=eu/dt=2024-01-01/hour=00"),
        ("managed_p1", "dt=2024-01-01"),
        ("managed_p3", "year=2023/month=12/day=31"),
        ("legacy_colnames", "dt=2015-06-01"),
        ("all_types", "p=a"),
        ("all_types", "p=b"),
    ]
    .into_iter()
    .map(|(t, s)| Part::of(fx, &uri, t, s))
    .collect();
    for codec in ["none", "zlib", "snappy", "zstd", "lz4"] {
        parts.push(Part::of(fx, &uri, "codecs", &format!("codec={codec}")));
    }
    for p in &fx.table("escaped").partitions {
        parts.push(Part::of(fx, &uri, "escaped", &p.spec));
    }
    let t0 = Instant::now();
    let runs = compact_all(&parts);
    eprintln!(
        "compacted {} partitions in {:.1}s",
        runs.len(),
        t0.elapsed().as_secs_f64()
    );
    check_compactions(&runs);

    // Partitions with one file, or none, have nothing to do from the start.
    parts.push(Part::of(fx, &uri, "ext_p1", "dt=2024-01-05"));
    parts.push(Part::of(fx, &uri, "ext_p1", "dt=2024-01-06"));
    check_second_run(&parts);
}

// ---------------------------------------------------------------------------------------------
// 2. Mixed schemas and codecs, leftovers, zero-length files; the dry run is exactly the plan.

#[test]
fn dry_run_writes_nothing_and_plans_exactly_what_the_run_does() {
    let fx = db4();
    let uri = env("HMS_URI");
    let parts: Vec<Part> = [
        ("schema_evolution", "dt=mixed"),
        ("codecs", "codec=mixed"),
        ("leftovers", "dt=2024-02-01"),
        ("leftovers", "dt=2024-02-02"),
        ("leftovers", "dt=2024-02-03"),
        ("ext_p3", "region=us/dt=2024-01-02/hour=13"),
    ]
    .into_iter()
    .map(|(t, s)| Part::of(fx, &uri, t, s))
    .collect();

    let befores: Vec<State> = parts.iter().map(|p| p.state(true)).collect();
    let cases: Vec<Vec<String>> = parts
        .iter()
        .map(|p| p.args("compact", &["--dry-run"]))
        .collect();
    let dry: Vec<Value> = run_many(&uri, &cases)
        .iter()
        .zip(&parts)
        .map(|(o, p)| {
            assert_eq!(code(o), 0, "{} {}: {}", p.table, p.spec, describe(o));
            json(o)
        })
        .collect();
    for ((p, before), plan) in parts.iter().zip(&befores).zip(&dry) {
        assert_eq!(plan["status"], "dry-run", "{plan}");
        assert_untouched(p, before, &p.state(true), "a dry run");
    }

    let runs = compact_all(&parts);
    for (c, plan) in runs.iter().zip(&dry) {
        let r = &c.report;
        let what = format!("{} {}", c.part.table, c.part.spec);
        let run_id = r["run_id"].as_str().unwrap();
        // The plan with the real run id and without sizes (planned vs written).
        let normalise = |v: &Value| -> Value {
            let mut v = v.clone();
            for g in v["groups"].as_array_mut().unwrap() {
                for o in g["outputs"].as_array_mut().unwrap() {
                    let name = o["name"].as_str().unwrap().replace("<run-id>", run_id);
                    o["name"] = Value::String(name);
                    o.as_object_mut().unwrap().remove("bytes");
                }
            }
            v
        };
        let (plan, done) = (normalise(plan), normalise(r));
        for key in [
            "groups",
            "carried",
            "dropped_empty",
            "files_before",
            "files_after",
            "bytes_before",
            "rows",
            "old_location",
        ] {
            assert_eq!(plan[key], done[key], "{what}: the dry run's {key}");
        }
        assert!(
            plan["groups"]
                .as_array()
                .unwrap()
                .iter()
                .all(|g| g["outputs"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .all(|o| o["bytes"].is_null())),
            "normalised"
        );
    }
    check_compactions(&runs);

    // What each of these partitions is about.
    let by = |t: &str, s: &str| {
        &runs
            .iter()
            .find(|c| c.part.table == t && c.part.spec == s)
            .unwrap()
            .report
    };
    let groups = |r: &Value| r["groups"].as_array().unwrap().len();
    assert!(
        groups(by("schema_evolution", "dt=mixed")) >= 2,
        "before/after ADD COLUMNS"
    );
    assert!(
        groups(by("codecs", "codec=mixed")) >= 2,
        "one group per codec"
    );
    let zero = by("leftovers", "dt=2024-02-03");
    assert_eq!(zero["dropped_empty"], serde_json::json!(["000020_0"]));
    let fx_zero = fx.table("leftovers").partition("dt=2024-02-03");
    assert_eq!(zero["rows"].as_u64(), Some(fx_zero.rows));
    for spec in ["dt=2024-02-01", "dt=2024-02-02"] {
        let hidden = &fx.table("leftovers").partition(spec).hidden;
        assert!(!hidden.is_empty(), "{spec} has leftovers");
        // Still there (check_compactions compared the whole old tree) and not copied.
        let new_location = by("leftovers", spec)["new_location"]
            .as_str()
            .unwrap()
            .to_string();
        let l = rt()
            .block_on(hdfs().list(&loc(&new_location)))
            .unwrap()
            .unwrap();
        assert!(
            l.hidden.is_empty() && l.subdirs.is_empty(),
            "{spec}: only data files in the new location: {l:?}"
        );
    }
    check_second_run(&parts);
}

// ---------------------------------------------------------------------------------------------
// 2b. `--verify tail`: only the outputs' tails are re-read from HDFS; the result passes the same
// checks, by the same independent reader, and `verify --checksums` (every stripe read back)
// agrees with the checksums the run recorded.

#[test]
fn verify_tail_compacts_as_exactly_as_full() {
    let fx = db4();
    let uri = env("HMS_URI");
    let parts: Vec<Part> = [
        ("schema_evolution", "dt=new"),
        ("managed_p3", "year=2024/month=01/day=01"),
    ]
    .into_iter()
    .map(|(t, s)| Part::of(fx, &uri, t, s))
    .collect();
    // A file of the old schema, alone in its merge group, is carried: the tail level checks
    // a carried file's length from a status call instead of re-reading it.
    let old = fx.table("schema_evolution").partition("dt=old");
    let source = loc(&old.location).child(&old.top_level_files()[0].path);
    copy(
        &source.to_string(),
        &loc(&parts[0].home).child("000099_0").to_string(),
    );

    let runs = compact_all_with(&parts, &["--verify", "tail"]);
    let carried = runs[0].report["carried"].as_array().unwrap();
    assert_eq!(carried.len(), 1, "{}", runs[0].report);
    assert_eq!(carried[0]["name"], "000099_0");
    check_compactions(&runs);
    for p in &parts {
        let out = run_against(
            &uri,
            &[
                "verify",
                "--table",
                &p.qualified(),
                "--partition",
                &p.spec,
                "--checksums",
                "--json",
            ],
        );
        assert_eq!(code(&out), 0, "{}: {}", p.spec, describe(&out));
        let r = json(&out);
        assert!(r["checksums_checked"].as_u64() > Some(0), "{r}");
    }
    check_second_run(&parts);
}

// ---------------------------------------------------------------------------------------------
// 3. Failures before the swap leave everything as it was.

#[cfg(feature = "failpoints")]
#[test]
fn an_injected_failure_before_the_swap_changes_nothing() {
    let fx = db4();
    let part = Part::of(
        fx,
        &env("HMS_URI"),
        "ext_p3",
        "region=us/dt=2024-01-01/hour=13",
    );
    let before = part.state(true);
    for fp in PRE_SWAP {
        let out = run_with_failpoints(&part, &format!("{fp}=return"));
        assert_eq!(code(&out), 1, "{fp}: {}", describe(&out));
        let r = json(&out);
        assert_eq!(r["status"], "failed", "{fp}: {r}");
        assert!(r["reason"].as_str().unwrap_or("").contains(fp), "{fp}: {r}");
        assert!(r["new_location"].is_null(), "{fp}: {r}");
        // The run cleaned up after itself: no staging, no published directory, and not the
        // work directory it made (strict: the work directory is compared too).
        assert_untouched(&part, &before, &part.state(true), fp);
    }
    // After all that, a normal run compacts.
    let out = part.compact(&[]);
    assert_eq!(code(&out), 0, "{}", describe(&out));
}

#[cfg(feature = "failpoints")]
#[test]
fn a_kill_before_the_swap_changes_nothing_and_a_rerun_compacts() {
    let fx = db4();
    let part = Part::of(
        fx,
        &env("HMS_URI"),
        "ext_p3",
        "region=us/dt=2024-01-02/hour=00",
    );
    let before = part.state(true);
    for fp in PRE_SWAP {
        let seen = kill_while_paused(&part, fp);
        assert_untouched(&part, &before, &part.state(false), &format!("kill at {fp}"));
        eprintln!("killed at {fp}; {WORK_DIR} held {seen:?}");
    }
    // Only hidden run directories remain; a normal run ignores them and compacts.
    let runs = compact_all(std::slice::from_ref(&part));
    assert_eq!(runs[0].report["files_before"].as_u64(), Some(part.files));
    assert_eq!(runs[0].report["rows"].as_u64(), Some(part.rows));
}

#[cfg(feature = "failpoints")]
#[test]
fn a_file_added_after_publishing_makes_the_run_busy() {
    let fx = db4();
    let part = Part::of(
        fx,
        &env("HMS_URI"),
        "ext_p3",
        "region=eu/dt=2024-01-02/hour=00",
    );
    check_busy(&part, "compact::after-publish");
}

#[cfg(feature = "failpoints")]
#[test]
fn a_file_added_right_before_the_swap_makes_the_run_busy() {
    let fx = db4();
    let part = Part::of(
        fx,
        &env("HMS_URI"),
        "ext_p3",
        "region=eu/dt=2024-01-02/hour=13",
    );
    check_busy(&part, "compact::before-swap");
}

#[test]
fn truncated_and_corrupt_inputs_are_refused_by_name() {
    let fx = db4();
    let uri = env("HMS_URI");
    let cases = [
        ("dt=2024-01-02", "000900_0", "truncated"),
        ("dt=2024-01-03", "000901_0", "corrupt"),
    ];
    let mut parts = vec![];
    for (spec, name, how) in cases {
        let part = Part::of(fx, &uri, "managed_p1", spec);
        let files = files_in(&part.home);
        let source = loc(&part.home).child(&files[0].0).to_string();
        let mut bytes = read_file(&source);
        match how {
            "truncated" => bytes.truncate(bytes.len() / 2),
            _ => {
                let n = bytes.len();
                for b in &mut bytes[n - 16..] {
                    *b ^= 0xa5;
                }
            }
        }
        write_file(&loc(&part.home).child(name).to_string(), bytes);
        parts.push((part, name));
    }
    for (part, name) in &parts {
        let before = part.state(true);
        let out = part.compact(&[]);
        assert_eq!(code(&out), 3, "{name}: {}", describe(&out));
        let r = json(&out);
        assert_eq!(r["status"], "refused", "{r}");
        assert_eq!(r["rule"], "unreadable_file", "{r}");
        assert!(
            r["reason"].as_str().unwrap_or("").contains(name),
            "the reason names {name}: {r}"
        );
        assert_untouched(part, &before, &part.state(true), name);
    }
}

#[test]
fn refused_tables_and_partitions_are_untouched() {
    let fx = db4();
    let uri = env("HMS_URI");
    // (table, spec, rule)
    let mut cases: Vec<(String, String, String)> = vec![];
    for t in &fx.tables {
        if let Some(rule) = &t.refusal {
            let spec = t
                .partitions
                .first()
                .map_or("dt=2024-03-01".to_string(), |p| p.spec.clone());
            cases.push((t.name.clone(), spec, rule.clone()));
        }
    }
    for p in &fx.table("refused_partitions").partitions {
        if let Some(rule) = p.rule() {
            cases.push(("refused_partitions".into(), p.spec.clone(), rule.into()));
        }
    }
    for (spec, rule) in [
        ("region=eu", "partition_spec"),
        ("region=eu/dt=2024-01-01", "partition_spec"),
        ("region=eu/dt=2024-01-01/hour=00/minute=1", "partition_spec"),
        ("region=eu/region=eu/dt=2024-01-01", "partition_spec"),
        ("region=eu/dt=2024-01-01/hour=99", "no_such_partition"),
    ] {
        cases.push(("ext_p3".into(), spec.into(), rule.into()));
    }
    assert!(
        cases.iter().any(|c| c.2 == "bucketed") && cases.iter().any(|c| c.2 == "view"),
        "the refusals set is loaded"
    );
    let tables: BTreeSet<&str> = cases.iter().map(|c| c.0.as_str()).collect();
    // ext_p3 has partitions other tests compact concurrently: compare only the refused ones.
    let fingerprint = |t: &str| {
        if t == "ext_p3" {
            None
        } else {
            Some(common::fingerprint(&uri, &fx.database, t))
        }
    };
    let before: BTreeMap<&str, _> = tables.iter().map(|t| (*t, fingerprint(t))).collect();
    // Partitions of ext_p3 no other test touches.
    let spare: Vec<Part> = [
        "region=eu/dt=2024-01-01/hour=13",
        "region=us/dt=2024-01-01/hour=00",
    ]
    .iter()
    .map(|s| Part::of(fx, &uri, "ext_p3", s))
    .collect();
    let spare_before: Vec<State> = spare.iter().map(|p| p.state(true)).collect();
    let args: Vec<Vec<String>> = cases
        .iter()
        .map(|(t, s, _)| {
            vec![
                "compact".into(),
                "--table".into(),
                fx.qualified(t),
                "--partition".into(),
                s.clone(),
                "--json".into(),
            ]
        })
        .collect();
    let outs = run_many(&uri, &args);
    let mut problems = vec![];
    for ((t, s, rule), out) in cases.iter().zip(&outs) {
        let r: Value = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
        if code(out) != 3 || r["rule"] != rule.as_str() || r["status"] != "refused" {
            problems.push(format!(
                "{t} {s}: expected refusal {rule}, got {}",
                describe(out)
            ));
        }
    }
    for t in &tables {
        if let Some(b) = &before[t] {
            let a = common::fingerprint(&uri, &fx.database, t);
            if *b != a {
                problems.push(format!("{t} changed: before {b:#?}\nafter {a:#?}"));
            }
        }
    }
    for (p, b) in spare.iter().zip(&spare_before) {
        assert_untouched(p, b, &p.state(true), "a refused partial spec");
    }
    assert!(problems.is_empty(), "{}", problems.join("\n\n"));
}

// ---------------------------------------------------------------------------------------------
// 5. HMS 3.1.3: the swap (alter_partition with an environment context) works there too.

#[test]
fn compacts_on_hms_3_1() {
    let uri = env("HMS31_URI");
    let db = format!("compact31_{}", std::process::id());
    let fx = common::fixtures::load(&db, "codecs", &uri, &env("HDFS31_URL"));
    let parts = vec![Part::of(&fx, &uri, "codecs", "codec=zstd")];
    let runs = compact_all(&parts);
    check_compactions(&runs);
    check_second_run(&parts);
}
