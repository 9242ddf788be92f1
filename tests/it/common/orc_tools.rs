//! The independent reader: `scripts/orc-tools` (Java ORC tools 1.9.5 and a Hadoop client,
//! reading HDFS directly), one JVM per batch of files.

use std::collections::BTreeMap;
use std::process::{Command, Stdio};
use std::time::Instant;

use serde_json::Value;

use super::{repo, stderr};

fn orc_tools(args: &[&str], files: &[String]) -> Result<String, String> {
    let t0 = Instant::now();
    let mut cmd = Command::new(repo().join("scripts/orc-tools"));
    cmd.args(args).args(files).stdin(Stdio::null());
    // Files in an encryption zone: Hadoop's KMS client loads BouncyCastle, which orc-tools'
    // class path lacks; a cluster with a KMS names its jar.
    if let Ok(jar) = std::env::var("CLUSTER_BCPROV_JAR") {
        let opts = std::env::var("ORC_TOOLS_JAVA_OPTS").unwrap_or_default();
        cmd.env(
            "ORC_TOOLS_JAVA_OPTS",
            format!("{opts} -Xbootclasspath/a:{jar}").trim(),
        );
    }
    let out = cmd.output().expect("scripts/orc-tools runs");
    if !out.status.success() {
        return Err(stderr(&out));
    }
    eprintln!(
        "orc-tools {args:?}: {} files in {:.1}s",
        files.len(),
        t0.elapsed().as_secs_f64()
    );
    Ok(String::from_utf8(out.stdout).expect("utf-8 output"))
}

/// orc-tools' stderr without its per-file progress lines.
fn short_errors(stderr: &str) -> String {
    stderr
        .lines()
        .filter(|l| !l.starts_with("Processing data file") && !l.contains("NativeCodeLoader"))
        .take(40)
        .collect::<Vec<_>>()
        .join("\n")
}

/// The rows of each file as Java prints them (one JSON line per row), from two JVMs reading
/// half the files each (they are the slow part of these tests).
pub fn java_rows(files: &[String]) -> Vec<Vec<String>> {
    if files.len() < 64 {
        return java_rows_one_jvm(files);
    }
    let (a, b) = files.split_at(files.len() / 2);
    std::thread::scope(|s| {
        let first = s.spawn(|| java_rows_one_jvm(a));
        let mut second = java_rows_one_jvm(b);
        let mut all = first.join().expect("orc-tools data");
        all.append(&mut second);
        all
    })
}

fn java_rows_one_jvm(files: &[String]) -> Vec<Vec<String>> {
    if files.is_empty() {
        return vec![];
    }
    let text = orc_tools(&["data"], files)
        .unwrap_or_else(|e| panic!("orc-tools data failed:\n{}", short_errors(&e)));
    // `data` ends each file's rows with a line of underscores and an empty line.
    let mut per_file = vec![vec![]];
    for line in text.lines() {
        if line.starts_with("_____") {
            per_file.push(vec![]);
        } else if line.starts_with('{') {
            per_file.last_mut().unwrap().push(line.to_string());
        } else {
            assert!(
                line.trim().is_empty(),
                "unexpected orc-tools output: {line}"
            );
        }
    }
    per_file.pop();
    assert_eq!(per_file.len(), files.len(), "one block of rows per file");
    per_file
}

/// `meta -j` of each file, by path.
///
/// orc-tools 1.9.5's `meta -j` cannot print a file whose decimal column has min/max but no sum
/// (JsonFileDump calls `getSum().toString()`; the NPE then surfaces as gson's
/// IllegalStateException). Such files are taken out of the batch (the last file named on
/// stderr is the one it failed on) and described by plain `meta` instead, parsed into the
/// same shape for what is checked here: rows, the type string, min/max of non-string columns.
pub fn java_metas(files: &[String]) -> BTreeMap<String, Value> {
    let mut pending: Vec<String> = files.to_vec();
    let mut metas = BTreeMap::new();
    let mut no_json = vec![];
    while !pending.is_empty() {
        match orc_tools(&["meta", "-j"], &pending) {
            Ok(text) => {
                let all = match serde_json::from_str::<Value>(&text).expect("meta -j prints JSON") {
                    Value::Array(all) => all,
                    one => vec![one],
                };
                assert_eq!(all.len(), pending.len(), "one meta object per file");
                metas.extend(pending.drain(..).zip(all));
            }
            Err(e) => {
                let failed = e
                    .lines()
                    .filter_map(|l| l.strip_prefix("Processing data file "))
                    .filter_map(|l| l.rsplit_once(" [length: ").map(|(p, _)| p.to_string()))
                    .next_back();
                let Some(failed) =
                    failed.filter(|f| e.contains("JsonWriter.name") && pending.contains(f))
                else {
                    panic!("orc-tools meta -j failed:\n{}", short_errors(&e));
                };
                eprintln!("orc-tools meta -j cannot print {failed}; using plain meta for it");
                pending.retain(|f| *f != failed);
                no_json.push(failed);
            }
        }
    }
    if !no_json.is_empty() {
        let text = orc_tools(&["meta"], &no_json)
            .unwrap_or_else(|e| panic!("orc-tools meta failed:\n{}", short_errors(&e)));
        for (file, meta) in parse_text_metas(&text) {
            assert!(no_json.contains(&file), "unexpected file {file}");
            metas.insert(file, meta);
        }
    }
    assert_eq!(metas.len(), files.len(), "a meta for every file");
    metas
}

/// Plain `meta` output → `{fileName, numberOfRows, compression, schemaString,
/// fileStatistics: [{count, hasNull, text}], status: "OK"}` per file. The text form keeps each
/// column's statistics line; `check_min_max` parses min/max out of it for non-string columns.
fn parse_text_metas(text: &str) -> Vec<(String, Value)> {
    let mut out: Vec<(String, Value)> = vec![];
    let mut in_file_stats = false;
    for line in text.lines() {
        if let Some(f) = line.strip_prefix("Structure for ") {
            out.push((
                f.trim().to_string(),
                serde_json::json!({"status": "OK", "text": true, "fileStatistics": []}),
            ));
            in_file_stats = false;
            continue;
        }
        let Some((_, meta)) = out.last_mut() else {
            continue;
        };
        if let Some(r) = line.strip_prefix("Rows: ") {
            meta["numberOfRows"] = serde_json::json!(r.trim().parse::<u64>().unwrap());
        } else if let Some(c) = line.strip_prefix("Compression: ") {
            meta["compression"] = serde_json::json!(c.trim());
        } else if let Some(v) = line.strip_prefix("File Version: ") {
            // "0.12 with ORC_14 by ORC Java 1.8.5"
            let (version, rest) = v.split_once(" with ").unwrap_or((v, ""));
            let writer = rest.split(" by ").next().unwrap_or(rest);
            meta["fileVersion"] = serde_json::json!(version.trim());
            meta["writerVersion"] = serde_json::json!(writer.trim());
        } else if let Some(t) = line.strip_prefix("Type: ") {
            meta["schemaString"] = serde_json::json!(t.trim());
        } else if line.starts_with("File Statistics:") {
            in_file_stats = true;
        } else if in_file_stats {
            match line.trim().strip_prefix("Column ") {
                Some(rest) => {
                    let (_, stats) = rest.split_once(": ").unwrap();
                    meta["fileStatistics"]
                        .as_array_mut()
                        .unwrap()
                        .push(serde_json::json!({ "text": stats }));
                }
                None if line.trim().is_empty() => {}
                None => in_file_stats = false,
            }
        }
    }
    out
}

/// How many rows Java reads in `files`.
pub fn java_row_count(files: &[String]) -> u64 {
    java_rows(files).iter().map(|rows| rows.len() as u64).sum()
}

/// What `orc-tools meta --rowindex` says of a file that a fresh write of the same rows must
/// say alike, per column id: the statistics of the file, of each stripe and of each row group
/// (without the row groups' stream positions, which depend on the encoding), and each bloom
/// filter. Lines are `<column>: <what orc-tools prints>`.
#[derive(Debug, PartialEq, Eq)]
pub struct MetaStatistics {
    pub rows: u64,
    pub file: Vec<(u32, String)>,
    pub stripes: Vec<(u32, String)>,
    pub row_groups: Vec<(u32, String)>,
    pub bloom_filters: Vec<(u32, String)>,
}

/// A local path as a URL: without the scheme, the Hadoop client looks in HDFS.
fn local(path: &str) -> String {
    format!("file://{path}")
}

/// [`MetaStatistics`] of a local file.
pub fn meta_statistics(file: &str) -> MetaStatistics {
    let file = local(file);
    let plain = orc_tools(&["meta"], std::slice::from_ref(&file))
        .unwrap_or_else(|e| panic!("orc-tools meta failed:\n{}", short_errors(&e)));
    let columns = plain
        .lines()
        .skip_while(|l| !l.starts_with("File Statistics:"))
        .filter(|l| l.trim_start().starts_with("Column "))
        .count();
    let all: Vec<String> = (0..columns).map(|c| c.to_string()).collect();
    let text = orc_tools(&["meta", "--rowindex", &all.join(",")], &[file])
        .unwrap_or_else(|e| panic!("orc-tools meta failed:\n{}", short_errors(&e)));
    let mut m = MetaStatistics {
        rows: 0,
        file: vec![],
        stripes: vec![],
        row_groups: vec![],
        bloom_filters: vec![],
    };
    #[derive(PartialEq)]
    enum In {
        Nothing,
        Stripes,
        File,
        RowGroups(u32),
        Blooms(u32),
    }
    let column_of = |t: &str| -> u32 {
        t.trim_end_matches(':')
            .rsplit(' ')
            .next()
            .unwrap()
            .parse()
            .unwrap()
    };
    let stats_line = |t: &str| -> (u32, String) {
        let rest = t.strip_prefix("Column ").unwrap();
        let (c, stats) = rest.split_once(": ").unwrap();
        (c.parse().unwrap(), stats.to_string())
    };
    let mut section = In::Nothing;
    for line in text.lines() {
        let t = line.trim();
        if let Some(r) = t.strip_prefix("Rows: ") {
            m.rows = r.parse().unwrap();
        }
        if t.starts_with("Stripe Statistics:") {
            section = In::Stripes;
        } else if t.starts_with("File Statistics:") {
            section = In::File;
        } else if t.starts_with("Row group indices for column") {
            section = In::RowGroups(column_of(t));
        } else if t.starts_with("Bloom filters for column") {
            section = In::Blooms(column_of(t));
        } else {
            match section {
                In::Stripes if t.starts_with("Column ") => m.stripes.push(stats_line(t)),
                In::Stripes if t.starts_with("Stripe ") => m.stripes.push((0, t.to_string())),
                In::File if t.starts_with("Column ") => m.file.push(stats_line(t)),
                In::RowGroups(c) if t.starts_with("Entry") => m
                    .row_groups
                    .push((c, t.split(" positions: ").next().unwrap().to_string())),
                In::Blooms(c) if t.starts_with("Entry") || t.starts_with("Stripe level") => {
                    m.bloom_filters.push((c, t.to_string()))
                }
                _ if t.is_empty() => {}
                _ => section = In::Nothing,
            }
        }
    }
    assert!(!m.file.is_empty(), "no file statistics in:\n{text}");
    m
}

/// The rows of the local files `inputs` written by the Java writer (ORC 1.9.5) into `out`,
/// encoded like `template` (schema, codec, block size, row index stride), bloom filters on
/// `bloom_columns` (comma-separated names, or "-").
pub fn java_rewrite(out: &str, template: &str, bloom_columns: &str, inputs: &[String]) {
    let mut args = vec![local(out), local(template), bloom_columns.to_string()];
    args.extend(inputs.iter().map(|i| local(i)));
    harness("JavaRewrite.java", &args);
}

/// The rows of each file as the Java reader hands them to Hive, a line per row
/// (scripts/harness/orc-tools/VectorRows.java): unlike [`java_rows`], a null union row and a
/// union row holding a null read differently.
pub fn java_vector_rows(files: &[String]) -> Vec<Vec<String>> {
    vector_rows(files.to_vec())
}

/// [`java_vector_rows`] of only the top-level `columns` (0-based), for rows whose other values
/// may hold a '|' or a line break.
pub fn java_vector_columns(files: &[String], columns: &[usize]) -> Vec<Vec<String>> {
    let columns: Vec<String> = columns.iter().map(usize::to_string).collect();
    let mut args = vec![format!("--columns={}", columns.join(","))];
    args.extend_from_slice(files);
    vector_rows(args)
}

fn vector_rows(args: Vec<String>) -> Vec<Vec<String>> {
    let files = args.iter().filter(|a| !a.starts_with("--")).count();
    let text = harness("VectorRows.java", &args);
    let mut per_file: Vec<Vec<String>> = vec![];
    for line in text.lines() {
        if line.starts_with("== ") {
            per_file.push(vec![]);
        } else {
            per_file
                .last_mut()
                .expect("a file first")
                .push(line.to_string());
        }
    }
    assert_eq!(per_file.len(), files, "one block of rows per file");
    per_file
}

/// Runs one of scripts/harness/orc-tools' Java programs on orc-tools' class path; its stdout.
fn harness(program: &str, args: &[String]) -> String {
    let cp = String::from_utf8(
        Command::new(repo().join("scripts/orc-tools"))
            .arg("--classpath")
            .output()
            .expect("scripts/orc-tools runs")
            .stdout,
    )
    .unwrap();
    let java = std::env::var("ORC_TOOLS_JAVA_HOME")
        .unwrap_or_else(|_| "/usr/lib/jvm/java-17-openjdk-amd64".into());
    let out = Command::new(format!("{java}/bin/java"))
        .args(["-Duser.timezone=UTC", "-cp", cp.trim()])
        .arg(repo().join("scripts/harness/orc-tools").join(program))
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("java runs");
    assert!(
        out.status.success(),
        "{program} failed:\n{}",
        short_errors(&stderr(&out))
    );
    String::from_utf8(out.stdout).expect("utf-8 output")
}
