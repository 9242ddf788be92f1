//! `compact --stripes`: merge groups of tiny stripes re-encoded into a few large stripes (auto,
//! rewrite), or copied byte for byte (copy), against the real cluster; the outputs judged by
//! Java ORC (orc-tools) and by `verify --checksums`, a rollback, and a corrupted re-encode that
//! must stop before the swap.

pub mod common;

use std::sync::OnceLock;

use common::compaction::{check_compactions, check_second_run, compact_all_with, Compaction};
use common::hdfs::{files_in, hdfs, loc};
use common::partition::Part;
use common::{env, rt, Fixtures, OwnDatabase};
use hive_orc_compactor::orc::read_tail;
use serde_json::Value;

fn db() -> &'static Fixtures {
    static DB: OnceLock<OwnDatabase> = OnceLock::new();
    &common::own_database(&DB, "rewrite", "basic,types,codecs").fixtures
}

fn part(table: &str, spec: &str) -> Part {
    Part::of(db(), &env("HMS_URI"), table, spec)
}

/// Stripes of every file in `dir`, by our tail reader.
fn stripes_in(dir: &str) -> Vec<(String, usize)> {
    files_in(dir)
        .into_iter()
        .map(|(name, _)| {
            let path = loc(dir).child(&name);
            let stripes = rt().block_on(async {
                let reader = hdfs().open(&path).await.unwrap();
                read_tail(&reader).await.unwrap().unwrap().stripes.len()
            });
            (name, stripes)
        })
        .collect()
}

fn outputs(report: &Value) -> Vec<&Value> {
    report["groups"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|g| g["outputs"].as_array().unwrap())
        .collect()
}

fn verify_checksums(part: &Part) -> Value {
    let v = part.ok("verify", &["--checksums"], 0);
    assert!(v["mismatches"].as_array().unwrap().is_empty(), "{v}");
    assert!(v["checksums_checked"].as_u64() > Some(0), "{v}");
    v
}

#[test]
fn auto_reencodes_tiny_stripes_into_few_that_java_reads_as_the_inputs() {
    let parts: Vec<Part> = [
        ("ext_p1", "dt=2024-01-01"),
        ("all_types", "p=a"),
        ("codecs", "codec=zstd"),
        ("codecs", "codec=snappy"),
    ]
    .into_iter()
    .map(|(t, s)| part(t, s))
    .collect();
    let stripes_before: Vec<usize> = parts
        .iter()
        .map(|p| stripes_in(&p.home).iter().map(|(_, n)| n).sum())
        .collect();

    let runs: Vec<Compaction> = compact_all_with(&parts, &["--stripes", "auto"]);
    // Java reads the inputs' rows, statistics' min/max hold, the metastore and the journal are
    // as after any compaction.
    check_compactions(&runs);
    for (run, before) in runs.iter().zip(stripes_before) {
        let r = &run.report;
        assert_eq!(r["stripes"], "auto", "{r}");
        for o in outputs(r) {
            assert_eq!(o["made_by"], "rewrite", "{r}");
            assert!(
                o["why"].as_str().unwrap().contains("--min-stripe-size"),
                "{o}"
            );
        }
        let after = stripes_in(r["new_location"].as_str().unwrap());
        let total: usize = after.iter().map(|(_, n)| n).sum();
        assert!(
            total < before / 2,
            "{}: {before} stripes became {total}",
            run.part.spec
        );
        for ((name, n), o) in after.iter().zip(outputs(r)) {
            assert_eq!(o["name"].as_str(), Some(name.as_str()));
            assert_eq!(
                o["stripes"].as_u64(),
                Some(*n as u64),
                "{name}: as reported"
            );
        }
        verify_checksums(&run.part);
    }
    check_second_run(&parts);

    // Rolled back: the old files, as they were, and they still verify.
    let p = &parts[0];
    let r = p.ok("rollback", &[], 0);
    assert_eq!(r["status"], "rolled-back", "{r}");
    assert_eq!(loc(&p.location()), loc(&p.home));
    assert_eq!(p.ok("verify", &[], 0)["files"].as_u64(), Some(p.files));
}

#[test]
fn copy_keeps_every_input_stripe_and_dry_runs_say_which_way_and_why() {
    let p = part("ext_p1", "dt=2024-01-02");
    let before: usize = stripes_in(&p.home).iter().map(|(_, n)| n).sum();

    let dry = p.ok("compact", &["--stripes", "auto", "--dry-run"], 0);
    for o in outputs(&dry) {
        assert_eq!(o["made_by"], "rewrite", "{dry}");
    }
    let big = p.ok(
        "compact",
        &[
            "--stripes",
            "auto",
            "--min-stripe-size",
            "1KiB",
            "--dry-run",
        ],
        0,
    );
    for o in outputs(&big) {
        assert_eq!(o["made_by"], "copy", "{big}");
        assert!(o["why"].as_str().unwrap().contains("at least"), "{o}");
    }

    let runs = compact_all_with(std::slice::from_ref(&p), &["--stripes", "copy"]);
    check_compactions(&runs);
    let r = &runs[0].report;
    let after: usize = stripes_in(r["new_location"].as_str().unwrap())
        .iter()
        .map(|(_, n)| n)
        .sum();
    assert_eq!(after, before, "a stripe copy keeps every stripe");
    for o in outputs(r) {
        assert_eq!(o["made_by"], "copy");
        assert_eq!(o["why"], "--stripes copy");
    }
    let v = verify_checksums(&p);
    assert_eq!(v["checksums_checked"].as_u64(), Some(before as u64), "{v}");
}

/// The writer gets every batch's rows reversed: the same values and row count, another order.
/// Only the order-sensitive digests can tell; the run must stop before the swap.
#[cfg(feature = "failpoints")]
#[test]
fn values_read_back_in_another_order_stop_the_run_before_the_swap() {
    use common::partition::assert_untouched;
    use common::{code, command, describe, json};

    let p = part("ext_p1", "dt=2024-01-03");
    let before = p.state(true);
    let out = command(&p.hms_uri)
        .args(p.args("compact", &["--stripes", "rewrite"]))
        .env("FAILPOINTS", "compact::rewrite-reorder=return")
        .output()
        .expect("the binary runs");
    assert_eq!(code(&out), 5, "{}", describe(&out));
    let r = json(&out);
    assert_eq!(r["status"], "verification-failed", "{r}");
    assert!(r["reason"].as_str().unwrap().contains("digest"), "{r}");
    assert!(r["new_location"].is_null(), "{r}");
    assert_untouched(&p, &before, &p.state(false), "digest mismatch");
    assert_eq!(p.work_entries(), Vec::<String>::new());
}

/// Every input row decoded as its batch's first: a decoder bug that reads the inputs wrong the
/// same way on every read. The digests agree (both sides see the misread values); the inputs'
/// recorded statistics do not, so `auto` copies the stripes instead and says why.
#[cfg(feature = "failpoints")]
#[test]
fn values_misread_alike_on_every_read_are_caught_by_the_recorded_statistics() {
    use common::{code, command, describe, json};

    let p = part("ext_p1", "dt=2024-01-04");
    let out = command(&p.hms_uri)
        .args(p.args("compact", &["--stripes", "auto"]))
        .env("FAILPOINTS", "compact::rewrite-misread=return")
        .output()
        .expect("the binary runs");
    assert_eq!(code(&out), 0, "{}", describe(&out));
    let r = json(&out);
    let made = outputs(&r);
    assert!(!made.is_empty(), "{r}");
    for o in made {
        assert_eq!(o["made_by"], "copy", "{r}");
        assert!(
            o["why"].as_str().unwrap().contains("recorded statistics"),
            "{r}"
        );
    }
    verify_checksums(&p);
}
