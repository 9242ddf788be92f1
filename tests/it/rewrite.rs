//! `compact --stripes`: merge groups of tiny stripes re-encoded into a few large stripes (auto,
//! rewrite), or copied byte for byte (copy), against the real cluster; inputs from the Java
//! writer (fixtures) and from the C++ writer (pyarrow); the outputs judged by Java ORC
//! (orc-tools), by ORC C++ (pyarrow) and by `verify --checksums`, their statistics against a
//! fresh write by the Java writer, a rollback, and a corrupted re-encode that must stop before
//! the swap.

#![cfg(feature = "cluster-tests")]

use crate::common;

use std::sync::OnceLock;

use crate::common::compaction::{
    check_compactions, check_second_run, compact_all_with, Compaction,
};
use crate::common::hdfs::{files_in, hdfs, loc, read_file};
use crate::common::orc_tools::{
    java_metas, java_rewrite, java_vector_columns, java_vector_rows, meta_statistics,
};
use crate::common::partition::Part;
use crate::common::pyorc::{check_cpp_reads, cpp_partition, cpp_read};
use crate::common::{env, rt, Fixtures, OwnDatabase};
use hive_orc_compactor::orc::read_tail;
use serde_json::Value;

fn db() -> &'static Fixtures {
    static DB: OnceLock<OwnDatabase> = OnceLock::new();
    &common::own_database(
        &DB,
        "rewrite",
        "basic,types,codecs,iceberg,big_stripes,far_timestamps",
    )
    .fixtures
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
        // Every Hive type but char and union (unions: below).
        ("iceberg_types", "p=a"),
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
    // as after any compaction; ORC C++ reads them too, value by value.
    check_compactions(&runs);
    check_cpp_reads(&runs);
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

/// Java reads every output of each run, row batch by row batch, as it read the output's inputs
/// one after another.
fn check_vector_reads(runs: &[Compaction]) {
    for c in runs {
        let r = &c.report;
        let new_location = loc(r["new_location"].as_str().unwrap());
        for o in outputs(r) {
            let inputs: Vec<String> = o["inputs"]
                .as_array()
                .unwrap()
                .iter()
                .map(|n| c.old_files[n.as_str().unwrap()].0.clone())
                .collect();
            let out = new_location.child(o["name"].as_str().unwrap()).to_string();
            let before: Vec<String> = java_vector_rows(&inputs).concat();
            let after = java_vector_rows(&[out]).concat();
            assert_eq!(after.len(), before.len(), "{o}");
            for (i, (a, b)) in after.iter().zip(&before).enumerate() {
                assert_eq!(a, b, "row {i} of {o}");
            }
        }
    }
}

/// Union columns are re-encoded like any other: `all_types` (ORC Java) holds null union rows
/// and non-null rows whose variant holds a null, which arrow alone would read alike; files of
/// ORC C++ hold unions of both variants. The default re-encodes both partitions into one stripe
/// per output, and Java and C++ read the rows they read before, each null where it was.
#[test]
fn union_columns_with_null_rows_and_null_variants_are_re_encoded_and_read_alike() {
    let java = part("all_types", "p=a");
    let cpp = cpp_partition(
        &db().database,
        "cpp_unions",
        "zstd",
        &[
            "--files", "8", "--rows", "200", "--union", "--codec", "zstd",
        ],
    );
    let inputs: Vec<String> = files_in(&java.home)
        .into_iter()
        .map(|(name, _)| loc(&java.home).child(&name).to_string())
        .collect();
    // The union is the last column.
    let unions: Vec<String> = java_vector_rows(&inputs)
        .into_iter()
        .flatten()
        .map(|row| row.rsplit('|').next().unwrap().to_string())
        .collect();
    assert!(unions.iter().any(|u| u == "null"), "a null union row");
    assert!(
        unions.iter().any(|u| u.ends_with("\"value\": null}")),
        "a union row holding a null: {unions:?}"
    );

    let runs = compact_all_with(&[java, cpp], &["--stripes", "auto"]);
    check_compactions(&runs);
    check_cpp_reads(&runs[1..]);
    check_vector_reads(&runs);
    for run in &runs {
        let r = &run.report;
        all_made_by(r, "rewrite");
        for (_, stripes) in stripes_in(r["new_location"].as_str().unwrap()) {
            assert!(stripes <= 2, "{r}");
        }
        verify_checksums(&run.part);
    }
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
    reordered_rows_stop_the_run_before_the_swap(&part("ext_p1", "dt=2024-01-03"));
}

/// `p` re-encoded with every batch's rows reversed on the way to the writer: verification
/// fails on the digests, and the partition is as it was, with nothing left in its work area.
#[cfg(feature = "failpoints")]
fn reordered_rows_stop_the_run_before_the_swap(p: &Part) {
    use common::partition::assert_untouched;
    use common::{code, command, describe, json};

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
    // Strict: nothing is left in the work area, nor the work directory if the run made it.
    assert_untouched(p, &before, &p.state(true), "digest mismatch");
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

/// An output stripe over 8 MiB is read back one top-level column at a time, each column's
/// streams fetched as orc-rust asks for them (the one-pass read-back holds a stripe whole):
/// rows written in another order are caught by that read-back before the swap, and the
/// output as written verifies, swaps, reads in Java as the inputs and checks out later.
#[test]
fn stripes_over_8_mib_are_read_back_column_by_column() {
    #[cfg(feature = "failpoints")]
    reordered_rows_stop_the_run_before_the_swap(&part("big_stripes", "dt=2026-11-02"));

    let runs = compact_all_with(
        &[part("big_stripes", "dt=2026-11-01")],
        &["--stripes", "rewrite"],
    );
    check_compactions(&runs);
    let r = &runs[0].report;
    all_made_by(r, "rewrite");
    let dir = r["new_location"].as_str().unwrap();
    let largest = files_in(dir)
        .into_iter()
        .flat_map(|(name, _)| read_tail_of(&format!("{dir}/{name}")).stripes)
        .map(|s| s.length())
        .max();
    assert!(
        largest > Some(8 << 20),
        "no stripe over 8 MiB: {largest:?}, so nothing was read back column by column"
    );
    verify_checksums(&runs[0].part);
}

/// Every output of `report` made the way `made_by` says.
fn all_made_by(report: &Value, made_by: &str) {
    let made = outputs(report);
    assert!(!made.is_empty(), "{report}");
    for o in made {
        assert_eq!(o["made_by"], made_by, "{report}");
    }
}

/// Files from the C++ writer (every type pyarrow writes but timestamps and unions, which have
/// tests of their own; nulls, five codecs
/// taking turns, bloom filters on c_string, row groups of 1,000 rows) re-encoded under
/// `--stripes rewrite` and `auto`: Java and C++ read the inputs' values, and the five codecs
/// make one group (a stripe copy would keep five).
#[test]
fn files_from_the_cpp_writer_re_encoded_read_back_alike_in_java_and_cpp() {
    let base = ["--files", "10", "--rows", "1500", "--stride", "1000"];
    let rewrite = cpp_partition(&db().database, "cpp_types", "rewrite", &base);
    let auto = cpp_partition(
        &db().database,
        "cpp_types",
        "auto",
        &[&base[..], &["--seed", "2"]].concat(),
    );
    let mut runs = compact_all_with(std::slice::from_ref(&rewrite), &["--stripes", "rewrite"]);
    runs.extend(compact_all_with(
        std::slice::from_ref(&auto),
        &["--stripes", "auto"],
    ));
    check_compactions(&runs);
    check_cpp_reads(&runs);
    for run in &runs {
        let r = &run.report;
        all_made_by(r, "rewrite");
        let groups = r["groups"].as_array().unwrap();
        assert_eq!(groups.len(), 1, "one schema, one group: {r}");
        assert!(
            outputs(r)[0]["why"]
                .as_str()
                .unwrap()
                .contains("merges files of 5"),
            "{r}"
        );
        let new_files: Vec<String> = stripes_in(r["new_location"].as_str().unwrap())
            .into_iter()
            .map(|(name, n)| {
                assert_eq!(n, 1, "{name}: one stripe of a few hundred KiB");
                loc(r["new_location"].as_str().unwrap())
                    .child(&name)
                    .to_string()
            })
            .collect();
        // ORC C++ names the footer's NONE "UNCOMPRESSED".
        let codec = match groups[0]["compression"].as_str().unwrap() {
            "NONE" => "UNCOMPRESSED",
            other => other,
        };
        for f in cpp_read(&new_files) {
            assert_eq!(f.stripes, 1);
            assert_eq!(f.compression, codec);
        }
        verify_checksums(&run.part);
    }
}

/// Files from the C++ writer with timestamp columns, some before 1970 with sub-second parts,
/// which pyarrow stores with negative nanoseconds (Java ORC 1.9.5 cannot print them: "nanos >
/// 999999999 or < 0"), and some of those in the second just before 1970, which ORC's standard
/// layout cannot hold, so they cannot be healed: under the default `auto` the group is planned
/// as a copy (the dry run and `analyze --deep`, which counts it, say so), the reason names the
/// file, the column and the stored value, every stripe is the input's (checksums), and ORC C++
/// reads the inputs' values.
#[test]
fn cpp_timestamps_in_the_second_before_1970_are_copied_with_the_reason_and_read_alike() {
    let p = cpp_partition(
        &db().database,
        "cpp_nanos",
        "negative_nanos",
        &[
            "--files",
            "6",
            "--rows",
            "500",
            "--timestamps",
            "--codec",
            "zstd",
        ],
    );
    let says_why = |r: &Value| {
        for o in outputs(r) {
            let why = o["why"].as_str().unwrap();
            assert!(
                why.contains("under --min-stripe-size")
                    && why.contains(", but copied: cpp-")
                    && why.contains("cannot be re-encoded exactly")
                    && why.contains("a timestamp, stores nanoseconds out of range")
                    && why.contains("column 13")
                    && why.contains("encoded -")
                    && why.contains("the second before 1970"),
                "{o}"
            );
        }
    };
    // Known before anything is written: the dry run and analyze --deep say so.
    let dry = p.ok("compact", &["--stripes", "auto", "--dry-run"], 0);
    all_made_by(&dry, "copy");
    says_why(&dry);
    let table = format!("{}.cpp_nanos", db().database);
    let deep = common::stdout(&common::run(&[
        "analyze",
        "--table",
        &table,
        "--deep",
        "--stripes",
        "auto",
        "--json",
    ]));
    let deep: Vec<Value> = deep
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let row = deep
        .iter()
        .find(|v| v["partition"] == "p=negative_nanos")
        .unwrap_or_else(|| panic!("{deep:?}"));
    assert_eq!(row["plan"]["not_re_encodable"], 1, "{row}");
    let summary = deep.last().unwrap();
    let totals = &summary["summary"]["tables"][0];
    assert_eq!(totals["scope"], table.as_str(), "{summary}");
    assert_eq!(totals["groups_not_re_encodable"], 1, "{totals}");

    let runs = compact_all_with(std::slice::from_ref(&p), &["--stripes", "auto"]);
    check_cpp_reads(&runs);
    let r = &runs[0].report;
    all_made_by(r, "copy");
    says_why(r);
    let v = verify_checksums(&p);
    assert_eq!(v["checksums_checked"].as_u64(), Some(p.files), "{v}");
}

/// Files from the C++ writer whose timestamps of both kinds hold times before 1970 with
/// fractions of a second, none in the second just before 1970 (which ORC's standard layout
/// cannot hold): pyarrow stores them with negative nanoseconds, which ORC Java refuses to
/// read. The default heals and re-encodes them into one stripe; ORC C++ reads the rows it read
/// before, and ORC Java, which could not read the inputs at all, reads the same times.
#[test]
fn cpp_timestamps_before_1970_with_fractions_are_healed_and_read_alike_in_java_and_cpp() {
    let args = [
        "--files",
        "8",
        "--rows",
        "200",
        "--timestamps",
        "--fractions-before-1970-but-not-in-its-last-second",
    ];
    let p = cpp_partition(&db().database, "cpp_healed", "fractions_before_1970", &args);
    let inputs: Vec<String> = files_in(&p.home)
        .into_iter()
        .map(|(name, _)| loc(&p.home).child(&name).to_string())
        .collect();
    let before = cpp_read(&inputs);
    let fractions_before_1970 = before
        .iter()
        .flat_map(|f| &f.rows)
        .flat_map(|row| row.as_array().unwrap()[12..14].to_vec())
        .filter(|v| {
            v.as_i64()
                .is_some_and(|ns| ns < 0 && ns % 1_000_000_000 != 0)
        })
        .count();
    assert!(fractions_before_1970 > 10, "{fractions_before_1970}");

    let runs = compact_all_with(std::slice::from_ref(&p), &["--stripes", "auto"]);
    check_cpp_reads(&runs);
    let r = &runs[0].report;
    all_made_by(r, "rewrite");
    let new_location = r["new_location"].as_str().unwrap();
    let after = stripes_in(new_location);
    assert_eq!(after.iter().map(|(_, n)| n).sum::<usize>(), 1, "{after:?}");
    // Java reads the output's times as C++ read the inputs' (its JVM in UTC, as pyarrow's
    // times are).
    let out = loc(new_location).child(&after[0].0).to_string();
    let java: Vec<String> = java_vector_columns(std::slice::from_ref(&out), &[12, 13]).concat();
    let cpp: Vec<&Value> = before.iter().flat_map(|f| &f.rows).collect();
    assert_eq!(java.len(), cpp.len());
    for (j, c) in java.iter().zip(&cpp) {
        let c = c.as_array().unwrap();
        let expected = format!("{}|{}", java_timestamp(&c[12]), java_timestamp(&c[13]));
        assert_eq!(*j, expected);
    }
    verify_checksums(&p);
}

/// A time read by ORC C++ (nanoseconds since 1970, or null) as Java's `Timestamp` prints it in
/// UTC: trailing zeros of the fraction left out, at least one digit kept.
fn java_timestamp(v: &Value) -> String {
    let Some(ns) = v.as_i64() else {
        return "null".into();
    };
    let t = chrono::DateTime::from_timestamp(ns.div_euclid(1_000_000_000), 0).unwrap();
    let fraction = format!("{:09}", ns.rem_euclid(1_000_000_000));
    let fraction = fraction.trim_end_matches('0');
    let fraction = if fraction.is_empty() { "0" } else { fraction };
    format!("{}.{fraction}", t.format("%Y-%m-%d %H:%M:%S"))
}

/// Files from the C++ writer with timestamps of both kinds before and after 1970, with
/// fractions after it and whole seconds before (which Java ORC reads too), each codec: the
/// default re-encodes them into one stripe, and Java and C++ read the inputs' rows.
#[test]
fn cpp_timestamps_are_re_encoded_into_one_stripe_and_read_alike_in_java_and_cpp() {
    let args = [
        "--files",
        "10",
        "--rows",
        "300",
        "--timestamps",
        "--whole-seconds-before-1970",
    ];
    let p = cpp_partition(&db().database, "cpp_timestamps", "whole_before_1970", &args);
    let runs = compact_all_with(std::slice::from_ref(&p), &["--stripes", "auto"]);
    check_compactions(&runs);
    check_cpp_reads(&runs);
    let r = &runs[0].report;
    all_made_by(r, "rewrite");
    let after = stripes_in(r["new_location"].as_str().unwrap());
    assert_eq!(after.iter().map(|(_, n)| n).sum::<usize>(), 1, "{after:?}");
    verify_checksums(&p);
}

/// Timestamps of years 0001 to 9999 (1582-10-04/15, 1900-01-01, the nanosecond before 1970,
/// 2262-04-12) and dates as far, written by ORC Java in UTC and in America/Los_Angeles, in
/// small files: re-encoded into one stripe each, the stored values kept under their zone, so
/// Java reads exactly the rows it read before (pyarrow, which reads timestamps as 64-bit
/// nanoseconds, cannot read the inputs or the outputs); the bounds stay where the zone is UTC.
#[test]
fn far_timestamps_of_two_writer_time_zones_are_re_encoded_and_read_alike() {
    let parts = [part("far_ts", "tz=utc"), part("far_ts", "tz=la")];
    let runs = compact_all_with(&parts, &["--stripes", "auto"]);
    check_compactions(&runs);
    for run in &runs {
        let r = &run.report;
        all_made_by(r, "rewrite");
        let new_location = r["new_location"].as_str().unwrap();
        let after = stripes_in(new_location);
        assert_eq!(after.len(), 1, "{after:?}");
        assert_eq!(after[0].1, 1, "{after:?}");
        let out = loc(new_location).child(&after[0].0).to_string();
        let metas = java_metas(std::slice::from_ref(&out));
        let ts = &metas[&out]["fileStatistics"][2];
        if run.part.spec == "tz=utc" {
            assert_eq!(ts["min"], "0001-01-01 00:00:00.0", "{ts}");
            assert_eq!(ts["max"], "9999-12-31 23:59:59.999999999", "{ts}");
        } else {
            assert!(ts.get("min").is_none(), "unknown outside UTC: {ts}");
            assert!(ts["count"].as_u64() > Some(0), "{ts}");
        }
        verify_checksums(&run.part);
    }
}

/// The 30 files of `codecs/codec=mixed` (NONE, ZLIB, SNAPPY, ZSTD and LZ4 taking turns, one
/// schema): a stripe copy plans five groups; a re-encode one, in the codec holding most bytes.
#[test]
fn rewrite_merges_files_of_every_codec_into_one_that_java_and_cpp_read_as_the_inputs() {
    let p = part("codecs", "codec=mixed");
    let copy = p.ok("compact", &["--stripes", "copy", "--dry-run"], 0);
    assert_eq!(copy["groups"].as_array().unwrap().len(), 5, "{copy}");

    let runs = compact_all_with(std::slice::from_ref(&p), &["--stripes", "rewrite"]);
    check_compactions(&runs);
    check_cpp_reads(&runs);
    let r = &runs[0].report;
    let groups = r["groups"].as_array().unwrap();
    assert_eq!(groups.len(), 1, "{r}");
    assert_eq!(groups[0]["files"].as_u64(), Some(p.files), "{r}");
    assert_eq!(outputs(r).len(), 1, "{r}");
    all_made_by(r, "rewrite");
    assert_eq!(r["files_after"].as_u64(), Some(1), "{r}");

    // The codec with the most input bytes.
    let mut by_codec: std::collections::BTreeMap<String, u64> = Default::default();
    for (name, (path, len)) in &runs[0].old_files {
        let codec = read_tail_of(path).compression;
        *by_codec
            .entry(format!("{codec:?}").to_ascii_uppercase())
            .or_default() += len;
        assert!(!name.is_empty());
    }
    let most = by_codec.iter().max_by_key(|(_, b)| **b).unwrap().0;
    assert_eq!(
        groups[0]["compression"].as_str(),
        Some(most.as_str()),
        "{by_codec:?}"
    );
    verify_checksums(&p);
}

fn read_tail_of(path: &str) -> hive_orc_compactor::orc::OrcTail {
    rt().block_on(async {
        let reader = hdfs().open(&loc(path)).await.unwrap();
        read_tail(&reader).await.unwrap().unwrap()
    })
}

/// A local directory of the test's own.
fn scratch(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("hoc-rewrite-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// What two writers may say differently of the same values, taken out of `orc-tools meta`
/// lines: bytes on disk (an encoding's size), and list and map child counts (ORC Java 1.9
/// records them per batch, wrongly: 1024).
fn writer_independent(lines: &[(u32, String)]) -> Vec<(u32, String)> {
    lines
        .iter()
        .map(|(c, l)| {
            let mut words: Vec<&str> = l.split(' ').collect();
            for key in [
                "bytesOnDisk:",
                "minChildren:",
                "maxChildren:",
                "totalChildren:",
            ] {
                if let Some(i) = words.iter().position(|w| *w == key) {
                    words.drain(i..i + 2);
                }
            }
            (*c, words.join(" "))
        })
        .collect()
}

/// Our re-encode's statistics are those of a fresh write: `orc-tools meta` of every output
/// equals that of the same rows written again by the Java writer (same codec, block size and
/// row index stride) in its file, stripe and row group statistics and its bloom filters. Inputs
/// from the Java writer (every Hive type but char and union) and from the C++ writer (bloom filters, several row groups).
///
/// A known and documented difference (docs/design/orc-writer.md), left out per column: a decimal sum
/// that needs more than 38 digits at the column's scale, which Java rounds and we leave out.
#[test]
fn re_encoded_statistics_are_those_of_the_same_rows_written_by_java() {
    // Its other partition (p=a) is the auto test's.
    let java = part("iceberg_types", "p=__HIVE_DEFAULT_PARTITION__");
    let cpp = cpp_partition(
        &db().database,
        "cpp_stats",
        "s",
        &[
            "--files", "4", "--rows", "1200", "--stride", "1000", "--codec", "zlib",
        ],
    );
    // (bloom filter columns, decimal(38,18) columns)
    let known: [(&str, &[u32]); 2] = [("-", &[8]), ("c_string", &[])];
    let runs = compact_all_with(&[java, cpp], &["--stripes", "rewrite"]);
    check_compactions(&runs);
    for (run, (bloom, wide_decimals)) in runs.iter().zip(known) {
        let r = &run.report;
        all_made_by(r, "rewrite");
        let dir = scratch(&run.part.table);
        let local = |path: &str, name: &str| {
            let to = dir.join(name).to_string_lossy().into_owned();
            std::fs::write(&to, read_file(path)).unwrap();
            to
        };
        for o in outputs(r) {
            let name = o["name"].as_str().unwrap();
            let ours = local(
                &loc(r["new_location"].as_str().unwrap())
                    .child(name)
                    .to_string(),
                name,
            );
            let inputs: Vec<String> = o["inputs"]
                .as_array()
                .unwrap()
                .iter()
                .map(|n| {
                    let n = n.as_str().unwrap();
                    local(&run.old_files[n].0, &format!("in-{n}"))
                })
                .collect();
            let theirs = dir.join("java.orc").to_string_lossy().into_owned();
            java_rewrite(&theirs, &ours, bloom, &inputs);
            let (ours, mut theirs) = (meta_statistics(&ours), meta_statistics(&theirs));
            for lines in [
                &mut theirs.file,
                &mut theirs.stripes,
                &mut theirs.row_groups,
            ] {
                for (c, l) in lines.iter_mut() {
                    if wide_decimals.contains(c) {
                        *l = l.split(" sum: ").next().unwrap().to_string();
                    }
                }
            }
            let what = format!("{} {name}", run.part.spec);
            assert_eq!(ours.rows, theirs.rows, "{what}");
            let same = |a: &[(u32, String)], b: &[(u32, String)], part: &str| {
                let (a, b) = (writer_independent(a), writer_independent(b));
                assert_eq!(a.len(), b.len(), "{what}: {part}");
                for (x, y) in a.iter().zip(&b) {
                    assert_eq!(x, y, "{what}: {part} (ours, Java's)");
                }
            };
            same(&ours.file, &theirs.file, "file statistics");
            same(&ours.stripes, &theirs.stripes, "stripe statistics");
            assert!(!ours.row_groups.is_empty(), "{what}: a row index");
            same(&ours.row_groups, &theirs.row_groups, "row group statistics");
            same(&ours.bloom_filters, &theirs.bloom_filters, "bloom filters");
            if bloom != "-" {
                assert!(!ours.bloom_filters.is_empty(), "{what}: bloom filters kept");
            }
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
}

/// `compact --dry-run` (text and `--json`) and `analyze --deep` (`--json` and `--csv`, with
/// compact's `--stripes` and `--min-stripe-size`) say per group which way its outputs are made
/// and why: C++ files of stripes under `--min-stripe-size` are re-encoded (a union column
/// among them), larger ones copied.
#[test]
fn dry_runs_and_deep_analysis_say_which_way_and_why() {
    let db = &db().database;
    let copied = cpp_partition(
        db,
        "cpp_ways",
        "large",
        &["--files", "3", "--rows", "5000", "--codec", "snappy"],
    );
    let rewritten = cpp_partition(
        db,
        "cpp_ways",
        "union",
        &[
            "--files", "4", "--rows", "100", "--union", "--codec", "snappy",
        ],
    );
    let table = format!("{db}.cpp_ways");
    dry_runs_say_which_way(&copied, &rewritten, &table);
    deep_analysis_says_which_way(&table);
    the_deep_csv_says_which_way(&table);
}

/// Where [`dry_runs_and_deep_analysis_say_which_way_and_why`]'s copies and re-encodes part.
const MIN_STRIPE_SIZE: [&str; 2] = ["--min-stripe-size", "32KiB"];

/// `compact --dry-run`, `--json` and text, under `--stripes auto`.
fn dry_runs_say_which_way(copied: &Part, rewritten: &Part, table: &str) {
    use common::{run, stdout};

    let min = MIN_STRIPE_SIZE;
    for (partition, way, reason) in [
        (&copied, "copy", "at least --min-stripe-size"),
        (&rewritten, "rewrite", "under --min-stripe-size"),
    ] {
        let dry = partition.ok(
            "compact",
            &["--stripes", "auto", "--dry-run", min[0], min[1]],
            0,
        );
        all_made_by(&dry, way);
        assert!(
            outputs(&dry)[0]["why"].as_str().unwrap().contains(reason),
            "{dry}"
        );
    }

    let text = stdout(&run(&[
        "compact",
        "--table",
        table,
        "--partition",
        "p=large",
        "--stripes",
        "auto",
        "--dry-run",
        min[0],
        min[1],
    ]));
    assert!(
        text.contains("copy: ") && text.contains("at least --min-stripe-size"),
        "{text}"
    );
}

/// The partition rows of `analyze --deep --json` plan as compact would, under compact's stripe
/// flags: forced copies are planned as copies.
fn deep_analysis_says_which_way(table: &str) {
    use common::{run, stdout};

    let min = MIN_STRIPE_SIZE;
    let deep_rows = |stripes: &str| -> Vec<Value> {
        let o = run(&[
            "analyze",
            "--table",
            table,
            "--deep",
            "--stripes",
            stripes,
            min[0],
            min[1],
            "--json",
        ]);
        stdout(&o)
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .filter(|v: &Value| v.get("partition").is_some())
            .collect()
    };
    let rows = deep_rows("auto");
    for (spec, way, reason) in [
        ("p=large", "copy", "at least --min-stripe-size"),
        ("p=union", "rewrite", "under --min-stripe-size"),
    ] {
        let row = rows.iter().find(|r| r["partition"] == spec).unwrap();
        for g in row["plan"]["groups"].as_array().unwrap() {
            for o in g["outputs"].as_array().unwrap() {
                assert_eq!(o["made_by"], way, "{row}");
                assert!(o["why"].as_str().unwrap().contains(reason), "{row}");
            }
        }
    }
    // analyze takes compact's stripe flags: forced copies are planned as copies.
    let forced = deep_rows("copy")
        .into_iter()
        .find(|r| r["partition"] == "p=union")
        .unwrap();
    for g in forced["plan"]["groups"].as_array().unwrap() {
        for o in g["outputs"].as_array().unwrap() {
            assert_eq!(o["made_by"], "copy", "{forced}");
        }
    }
}

/// `analyze --deep --csv`: a column of the ways.
fn the_deep_csv_says_which_way(table: &str) {
    use common::{run, stdout};

    let min = MIN_STRIPE_SIZE;
    let csv = stdout(&run(&[
        "analyze",
        "--table",
        table,
        "--deep",
        "--stripes",
        "auto",
        min[0],
        min[1],
        "--csv",
    ]));
    let mut lines = csv.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let ways = header
        .iter()
        .position(|h| *h == "ways")
        .expect("a ways column");
    let mut found: Vec<(String, String)> = lines
        .map(|l| {
            let cells: Vec<&str> = l.split(',').collect();
            (cells[1].to_string(), cells[ways].to_string())
        })
        .collect();
    found.sort();
    assert_eq!(
        found,
        vec![
            ("p=large".to_string(), "copy".to_string()),
            ("p=union".to_string(), "rewrite".to_string())
        ],
        "{csv}"
    );
}
