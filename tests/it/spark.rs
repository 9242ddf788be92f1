//! Spark 3.5 reads what `compact --stripes rewrite` wrote, through the metastore: exactly the
//! inputs' rows (timestamps of years 0001 to 9999 in two writer time zones among them), and its
//! ORC predicate pushdown skips the re-encoded row groups by their min/max
//! statistics and bloom filters as it skipped the inputs' (the Java writer's).

#![cfg(feature = "cluster-tests")]

use crate::common;

use std::sync::OnceLock;

use crate::common::compaction::{check_compactions, compact_all_with};
use crate::common::partition::Part;
use crate::common::spark::{spark_read, SparkRead};
use crate::common::{env, Fixtures, OwnDatabase};

fn db() -> &'static Fixtures {
    static DB: OnceLock<OwnDatabase> = OnceLock::new();
    &common::own_database(&DB, "spark", "iceberg,pushdown,far_timestamps").fixtures
}

fn part(table: &str, spec: &str) -> Part {
    Part::of(db(), &env("HMS_URI"), table, spec)
}

/// The row groups of the `pushdown` fixture (and of our outputs: the stride is the input's).
const STRIDE: u64 = 1_000;

/// A point query on `id` (min/max), and one on a `name` inside every row group's min/max but in
/// none of them (bloom filters).
fn pushdown_queries(p: &Part) -> [String; 2] {
    [
        format!("id = {}", p.rows / 2 + 7),
        "name = 'delta-absent'".to_string(),
    ]
}

/// What Spark's scan of `read` (the `pushdown` partition, `when`) handed on.
fn check_pushdown(p: &Part, read: &SparkRead, when: &str) {
    let [point, absent] = &read.queries[..] else {
        panic!("{when}: two queries: {read:?}")
    };
    let id = p.rows / 2 + 7;
    assert_eq!(point.rows.len(), 1, "{when}: {}: {point:?}", point.filter);
    assert!(
        point.rows[0].contains(&format!("\"id\": {id},")),
        "{when}: {point:?}"
    );
    assert!(
        (1..=STRIDE).contains(&point.scan_output_rows),
        "{when}: {}: the scan read {} of {} rows, not one row group's",
        point.filter,
        point.scan_output_rows,
        read.rows
    );
    assert!(absent.rows.is_empty(), "{when}: {absent:?}");
    // A bloom filter answers "maybe" for a few values it never saw (the writer's 5%).
    assert!(
        absent.scan_output_rows <= 2 * STRIDE,
        "{when}: {}: the scan read {} of {} rows: the bloom filters skipped too few row groups",
        absent.filter,
        absent.scan_output_rows,
        read.rows
    );
}

/// Spark reads re-encoded partitions (every type Spark and Iceberg share, nulls; row groups of
/// 1,000 rows with bloom filters; timestamps and dates from 0001-01-01 to 9999-12-31 written in
/// UTC and in America/Los_Angeles) exactly as it read the inputs, and its pushdown selects the
/// right row groups of the outputs: a point query on `id` reads one row group, an equality on a
/// name no row holds reads almost none.
#[test]
fn spark_reads_rewritten_partitions_as_the_inputs_and_skips_their_row_groups() {
    let types = part("iceberg_types", "p=a");
    let pushdown = part("pushdown", "dt=2024-02-01");
    let queries = pushdown_queries(&pushdown);
    let queries: Vec<&str> = queries.iter().map(String::as_str).collect();
    let far_utc = part("far_ts", "tz=utc");
    let far_la = part("far_ts", "tz=la");
    let reads = [
        (&types, &[][..]),
        (&pushdown, &queries[..]),
        (&far_utc, &[][..]),
        (&far_la, &[][..]),
    ];

    let before = spark_read(&reads);
    for ((p, _), read) in reads.iter().zip(&before) {
        assert_eq!(
            read.rows, p.rows,
            "{} {}: Spark reads the fixture's rows",
            p.table, p.spec
        );
    }
    check_pushdown(&pushdown, &before[1], "inputs");

    let runs = compact_all_with(
        &[
            types.clone(),
            pushdown.clone(),
            far_utc.clone(),
            far_la.clone(),
        ],
        &["--stripes", "rewrite"],
    );
    check_compactions(&runs);
    for run in &runs {
        let r = &run.report;
        for g in r["groups"].as_array().unwrap() {
            for o in g["outputs"].as_array().unwrap() {
                assert_eq!(o["made_by"], "rewrite", "{r}");
            }
        }
        assert!(
            r["files_after"].as_u64() < r["files_before"].as_u64(),
            "{r}"
        );
    }

    let after = spark_read(&reads);
    for (((p, _), b), a) in reads.iter().zip(&before).zip(&after) {
        assert_eq!(
            (a.rows, &a.digest),
            (b.rows, &b.digest),
            "{} {}: Spark reads other rows after the rewrite",
            p.table,
            p.spec
        );
    }
    check_pushdown(&pushdown, &after[1], "outputs");
    assert_eq!(after[1].queries[0].rows, before[1].queries[0].rows);
}
