//! Spark 3.5 (pyspark, through `scripts/spark`) as a third reader: partitions read as a Spark
//! user reads the tables the tool compacts, through the metastore with Hive support, by Spark's
//! own vectorized ORC reader with predicate pushdown on.

use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::time::Instant;

use serde_json::{json, Value};

use super::partition::Part;
use super::{describe, env, repo};

/// What Spark read of one partition.
#[derive(Debug, serde::Deserialize)]
pub struct SparkRead {
    pub rows: u64,
    /// Of the partition's rows as a multiset: equal digests, equal rows.
    pub digest: String,
    pub queries: Vec<SparkQuery>,
}

/// One filtered read of a partition.
#[derive(Debug, serde::Deserialize)]
pub struct SparkQuery {
    #[serde(rename = "where")]
    pub filter: String,
    /// The selected rows, as canonical JSON, sorted.
    pub rows: Vec<String>,
    /// Rows the ORC scan handed on: those of the row groups its pushdown did not skip.
    pub scan_output_rows: u64,
}

/// Each partition with its WHERE clauses, read in one Spark session (one takes long to start);
/// the answers in the order asked. All partitions must be on one metastore.
pub fn spark_read(reads: &[(&Part, &[&str])]) -> Vec<SparkRead> {
    let answer = run("read", reads);
    let read: Vec<SparkRead> = serde_json::from_value(answer).expect("scripts/spark read's answer");
    assert_eq!(read.len(), reads.len(), "one answer per partition");
    read
}

/// `scripts/spark <command>` over each partition with its WHERE clauses, in one Spark
/// session: the JSON answer it prints last. One session at a time in the test process, whatever
/// area asks (a session takes about a gigabyte).
pub fn run(command: &str, reads: &[(&Part, &[&str])]) -> Value {
    static ONE: Mutex<()> = Mutex::new(());
    let _one = ONE.lock().unwrap_or_else(|e| e.into_inner());
    let hms_uri = &reads.first().expect("something to read").0.hms_uri;
    let spec: Vec<Value> = reads
        .iter()
        .map(|(p, queries)| {
            assert_eq!(&p.hms_uri, hms_uri, "one metastore per Spark session");
            json!({"table": p.qualified(), "partition": p.spec, "queries": queries})
        })
        .collect();
    let spec = Value::Array(spec).to_string();
    let t0 = Instant::now();
    let out = Command::new(repo().join("scripts/spark"))
        .args([command, &spec])
        .env("HMS_URI", hms_uri)
        .env("HDFS_URL", env("HDFS_URL"))
        .stdin(Stdio::null())
        .output()
        .expect("scripts/spark runs");
    assert!(
        out.status.success(),
        "scripts/spark {command} {spec}: {}",
        describe(&out)
    );
    eprintln!(
        "spark {command}: {} partitions in {:.1}s",
        reads.len(),
        t0.elapsed().as_secs_f64()
    );
    let text = String::from_utf8(out.stdout).expect("utf-8 output");
    let last = text.lines().last().unwrap_or_default();
    serde_json::from_str(last)
        .unwrap_or_else(|e| panic!("scripts/spark {command} printed no answer ({e}): {text}"))
}
