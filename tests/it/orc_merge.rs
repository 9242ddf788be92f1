//! End-to-end: inputs written by the reference Java ORC writer (orc-tools 1.9.5 `convert`),
//! merged by `hive_orc_compactor::orc` (or decoded by orc-rust and re-encoded by its writer),
//! then read by Java ORC (`meta`, `data`, and row index seeks).
//!
//! Java is the judge: the output must open cleanly, hold exactly the inputs' rows, and carry
//! file-level statistics that are the inputs' widened. Without Java these tests fail loudly;
//! `scripts/harness/orc-tools/pom.xml` resolves the jar with Maven.

#![cfg(feature = "cluster-tests")]

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{self, Write};
use std::ops::Range;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::stats::cmp_stat;
use bytes::Bytes;
use hive_orc_compactor::orc::{
    self, group_tails, plan_group, read_tail, verify_output, verify_tail, write_merged,
    Compression, OrcTail, PlanOptions, RangeRead, ReadAhead, Sink, WriterOptions,
};
use serde_json::{json, Value};

const ORC_TOOLS_VERSION: &str = "1.9.5";

struct LocalFile {
    file: File,
    len: u64,
}

impl LocalFile {
    fn open(path: &Path) -> LocalFile {
        let file = File::open(path).unwrap();
        let len = file.metadata().unwrap().len();
        LocalFile { file, len }
    }
}

impl RangeRead for LocalFile {
    async fn len(&self) -> io::Result<u64> {
        Ok(self.len)
    }

    async fn read(&self, range: Range<u64>) -> io::Result<Bytes> {
        // hdfs-native panics here; the engine must never ask.
        assert!(
            range.end <= self.len,
            "read past EOF: {range:?} of {}",
            self.len
        );
        let mut buf = vec![0u8; (range.end - range.start) as usize];
        self.file.read_exact_at(&mut buf, range.start)?;
        Ok(buf.into())
    }
}

struct LocalSink(File);

impl Sink for LocalSink {
    async fn write(&mut self, data: Bytes) -> io::Result<()> {
        self.0.write_all(&data)
    }
}

/// The orc-tools uber jar, resolved through Maven if it is not in ~/.m2 yet.
fn orc_tools() -> PathBuf {
    let java = Command::new("java").arg("-version").output();
    assert!(
        java.as_ref().is_ok_and(|o| o.status.success()),
        "Java is required for the ORC end-to-end tests (the reference reader/writer): {java:?}"
    );
    let home = std::env::var("HOME").expect("HOME");
    let jar = PathBuf::from(home).join(format!(
        ".m2/repository/org/apache/orc/orc-tools/{v}/orc-tools-{v}-uber.jar",
        v = ORC_TOOLS_VERSION
    ));
    if !jar.exists() {
        let pom = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/harness/orc-tools/pom.xml");
        let status = Command::new("mvn")
            .args(["-q", "-B", "-f"])
            .arg(&pom)
            .arg("dependency:resolve")
            .status();
        assert!(
            status.as_ref().is_ok_and(|s| s.success()) && jar.exists(),
            "could not resolve org.apache.orc:orc-tools:{ORC_TOOLS_VERSION}:uber with Maven \
             ({status:?}); it is required for these tests"
        );
    }
    jar
}

fn java(jar: &Path, args: &[&str]) -> String {
    let out = Command::new("java")
        .arg("-jar")
        .arg(jar)
        .args(args)
        .output()
        .expect("run java");
    assert!(
        out.status.success(),
        "orc-tools {args:?} failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("utf-8 output")
}

/// Writes `rows` as JSON lines and converts them with the Java writer. A small stripe size and
/// frequent memory checks give several stripes per file (convert writes batches of 1024 rows
/// and the writer only cuts a stripe between batches, so a file needs more rows than that).
fn write_orc(
    jar: &Path,
    dir: &Path,
    name: &str,
    schema: &str,
    codec: &str,
    rows: &[Value],
) -> PathBuf {
    write_orc_with(jar, dir, name, schema, codec, rows, &[])
}

/// [`write_orc`] with more writer settings (`key=value`, as `--define` takes them).
fn write_orc_with(
    jar: &Path,
    dir: &Path,
    name: &str,
    schema: &str,
    codec: &str,
    rows: &[Value],
    defines: &[&str],
) -> PathBuf {
    let json = dir.join(format!("{name}.json"));
    let mut f = File::create(&json).unwrap();
    for r in rows {
        writeln!(f, "{r}").unwrap();
    }
    drop(f);
    let orc = dir.join(format!("{name}.orc"));
    let compress = format!("orc.compress={codec}");
    let mut args = vec![
        "--define",
        &compress,
        "--define",
        "orc.stripe.size=16384",
        "--define",
        "orc.rows.between.memory.checks=100",
    ];
    for d in defines {
        args.extend(["--define", d]);
    }
    args.extend([
        "convert",
        "-t",
        "yyyy-MM-dd HH:mm:ss[.SSSSSS]",
        "-O",
        "-s",
        schema,
        "-o",
        orc.to_str().unwrap(),
        json.to_str().unwrap(),
    ]);
    java(jar, &args);
    orc
}

const ALL_TYPES: &str = "struct<b:boolean,t:tinyint,si:smallint,i:int,l:bigint,f:float,\
    d:double,s:string,vc:varchar(10),c:char(5),bin:binary,dec:decimal(38,10),dec2:decimal(10,2),\
    dt:date,ts:timestamp,tsl:timestamp with local time zone,lst:array<int>,\
    m:map<string,int>,st:struct<x:int,y:string>,u:uniontype<int,string>>";

/// Deterministic rows with nulls at every level; `seed` shifts the value ranges so each file
/// has its own min and max. Pre-1970 timestamps are whole seconds: with fractional seconds
/// some readers fail on them (docs/design/orc-merge.md, "Verification").
fn all_types_rows(seed: i64, n: i64) -> Vec<Value> {
    (0..n)
        .map(|k| {
            let v = seed * 1000 + k;
            if k % 17 == 0 {
                return json!({"b":null,"t":null,"si":null,"i":null,"l":null,"f":null,"d":null,
                    "s":null,"vc":null,"c":null,"bin":null,"dec":null,"dec2":null,"dt":null,
                    "ts":null,"tsl":null,"lst":null,"m":null,"st":null,"u":null});
            }
            let year = 1950 + (v % 90);
            let ts = if year < 1970 {
                format!("{year}-03-{:02} 12:00:{:02}", 1 + v % 28, v % 60)
            } else {
                format!("{year}-07-{:02} 08:30:{:02}.{:06}", 1 + v % 28, v % 60, (v * 7919) % 1_000_000)
            };
            json!({
                "b": v % 3 == 0,
                "t": (v % 200) - 100,
                "si": (v * 31 % 60000) - 30000,
                "i": v * 7 - 50_000,
                "l": v * 1_000_003 - (seed << 40),
                "f": (v as f64) / 8.0 - 100.0,
                "d": (v as f64) * 1.25e-3 - seed as f64,
                "s": if k % 5 == 0 { String::new() } else { format!("é-{seed}-{:05}", (v * 13) % 9999) },
                "vc": format!("v{}", v % 1000),
                "c": format!("{}", v % 97),
                "bin": format!("{:06x}", v * 9973 % 0xffffff),
                "dec": format!("{}.{:010}", v * 123_456 - seed * 999_999_999, (v * 7) % 10_000_000_000),
                "dec2": format!("{}.{:02}", (v % 20000) - 10000, v % 100),
                "dt": format!("{:04}-{:02}-{:02}", 1900 + (v % 200), 1 + v % 12, 1 + v % 28),
                "ts": ts,
                "tsl": format!("{}-01-02 03:04:05", 1990 + (v % 40)),
                "lst": if k % 7 == 0 { json!([]) } else { json!([v, null, -v]) },
                "m": if k % 11 == 0 { json!({}) } else { json!({format!("k{}", v % 5): v, "z": null}) },
                "st": if k % 13 == 0 { json!({"x": null, "y": null}) } else { json!({"x": v, "y": format!("y{v}")}) },
                "u": if k % 2 == 0 { json!({"tag": 0, "value": v}) } else { json!({"tag": 1, "value": format!("u{v}")}) },
            })
        })
        .collect()
}

/// The sorted JSON lines Java prints for the rows of `files`.
fn java_rows(jar: &Path, files: &[&Path]) -> Vec<String> {
    let mut args = vec!["data"];
    args.extend(files.iter().map(|p| p.to_str().unwrap()));
    let mut rows: Vec<String> = java(jar, &args)
        .lines()
        .filter(|l| l.starts_with('{'))
        .map(str::to_owned)
        .collect();
    rows.sort();
    rows
}

/// Java's `meta -j` view of each file, from one JVM start (they are the slow part here).
fn java_metas(jar: &Path, files: &[&Path]) -> Vec<Value> {
    let mut args = vec!["meta", "-j"];
    args.extend(files.iter().map(|p| p.to_str().unwrap()));
    // One file gives one object; several give an array of them.
    let metas = match serde_json::from_str::<Value>(&java(jar, &args)).expect("meta json") {
        Value::Array(all) => all,
        one => vec![one],
    };
    assert_eq!(metas.len(), files.len(), "one meta object per file");
    metas
}

fn column_stats(meta: &Value) -> Vec<BTreeMap<String, Value>> {
    meta["fileStatistics"]
        .as_array()
        .expect("fileStatistics")
        .iter()
        .map(|c| c.as_object().unwrap().clone().into_iter().collect())
        .collect()
}

/// Checks Java's reading of the output's file statistics against its reading of the inputs':
/// counts and sums add, hasNull ORs, min/max are the inputs' extremes.
fn check_file_statistics(inputs: &[Value], output: &Value) {
    let ins: Vec<Vec<BTreeMap<String, Value>>> = inputs.iter().map(column_stats).collect();
    let out = column_stats(output);
    assert_eq!(out.len(), ins[0].len());
    for (c, o) in out.iter().enumerate() {
        let col: Vec<&BTreeMap<String, Value>> = ins.iter().map(|f| &f[c]).collect();
        let kind = o.get("type").and_then(Value::as_str).unwrap_or("");
        let total = |key: &str| -> Option<f64> {
            col.iter()
                .map(|s| s.get(key).and_then(Value::as_f64))
                .sum::<Option<f64>>()
        };
        for key in [
            "count",
            "trueCount",
            "falseCount",
            "totalLength",
            "totalChildren",
            "bytesOnDisk",
        ] {
            if let Some(t) = total(key) {
                assert_eq!(o[key].as_f64(), Some(t), "column {c} {key}: {o:?}");
            }
        }
        let any_null = col.iter().any(|s| s["hasNull"] == json!(true));
        assert_eq!(o["hasNull"], json!(any_null), "column {c} hasNull");
        match kind {
            "LONG" => assert_eq!(o["sum"].as_f64(), total("sum"), "column {c} sum"),
            "DOUBLE" => {
                let t = total("sum").unwrap();
                let s = o["sum"].as_f64().unwrap();
                assert!(
                    (s - t).abs() <= 1e-9 * t.abs().max(1.0),
                    "column {c} sum {s} vs {t}"
                );
            }
            "DECIMAL" => {
                let t: f64 = col
                    .iter()
                    .map(|s| s["sum"].as_str().unwrap().parse::<f64>().unwrap())
                    .sum();
                let s: f64 = o["sum"].as_str().unwrap().parse().unwrap();
                assert!(
                    (s - t).abs() <= 1e-6 * t.abs().max(1.0),
                    "column {c} sum {s} vs {t}"
                );
            }
            _ => {}
        }
        for (key, want) in [
            ("min", std::cmp::Ordering::Less),
            ("minChildren", std::cmp::Ordering::Less),
            ("max", std::cmp::Ordering::Greater),
            ("maxChildren", std::cmp::Ordering::Greater),
        ] {
            let extreme = col.iter().filter_map(|s| s.get(key)).reduce(|a, b| {
                if cmp_stat(kind, b, a) == want {
                    b
                } else {
                    a
                }
            });
            assert_eq!(o.get(key), extreme, "column {c} ({kind}) {key}");
        }
    }
}

struct Merged {
    path: PathBuf,
    inputs: Vec<PathBuf>,
}

/// Runs the engine on `files`: read tails, group, plan, write, re-read, verify. Returns each
/// output with the inputs it replaced, and asserts the grouping matches `expected_groups`.
async fn merge_all(files: &[PathBuf], out_dir: &Path, expected_groups: usize) -> Vec<Merged> {
    let readers: Vec<LocalFile> = files.iter().map(|p| LocalFile::open(p)).collect();
    let mut tails: Vec<OrcTail> = Vec::new();
    for r in &readers {
        tails.push(read_tail(r).await.unwrap().expect("non-empty file"));
    }
    let refs: Vec<&OrcTail> = tails.iter().collect();
    let grouping = group_tails(&refs);
    assert!(
        grouping.unmergeable.is_empty(),
        "{:?}",
        grouping.unmergeable
    );
    assert_eq!(
        grouping.groups.len(),
        expected_groups,
        "{:#?}",
        grouping.groups
    );

    let mut merged = Vec::new();
    for group in &grouping.groups {
        let plan = plan_group(&group.files, &refs, &PlanOptions::default());
        assert!(plan.left_alone.is_empty(), "{:?}", plan.left_alone);
        assert_eq!(plan.outputs.len(), 1);
        for out in &plan.outputs {
            let path = out_dir.join(format!("part-test-{:05}.orc", merged.len()));
            let inputs: Vec<&OrcTail> = out.inputs.iter().map(|&f| &tails[f]).collect();
            let mut sink = LocalSink(File::create(&path).unwrap());
            // A small chunk size makes every stripe cross several chunk boundaries; inputs are
            // opened by the writer, a few ahead, as on HDFS.
            let read_ahead = ReadAhead {
                chunk_size: 1000,
                ..ReadAhead::default()
            };
            let result = write_merged(
                out,
                &inputs,
                |i| {
                    let path = files[out.inputs[i]].clone();
                    async move { Ok(LocalFile::open(&path)) }
                },
                &mut sink,
                &read_ahead,
            )
            .await
            .unwrap();
            sink.0.sync_all().unwrap();
            drop(sink);

            let reader = std::sync::Arc::new(LocalFile::open(&path));
            let tail = read_tail(&reader).await.unwrap().unwrap();
            verify_tail(out, &result, &tail, &reader).await.unwrap();
            verify_output(out, &result, &tail, &reader, &ReadAhead::default())
                .await
                .unwrap();
            assert_eq!(
                tail.rows,
                out.inputs.iter().map(|&f| tails[f].rows).sum::<u64>()
            );
            merged.push(Merged {
                path,
                inputs: out.inputs.iter().map(|&f| files[f].clone()).collect(),
            });
        }
    }
    merged
}

/// Java reads every output cleanly, with the inputs' exact rows and widened statistics.
fn java_check(jar: &Path, merged: &[Merged]) {
    for m in merged {
        let in_paths: Vec<&Path> = m.inputs.iter().map(PathBuf::as_path).collect();
        let mut all = in_paths.clone();
        all.push(&m.path);
        let mut in_metas = java_metas(jar, &all);
        let out_meta = in_metas.pop().unwrap();
        assert_eq!(out_meta["status"], json!("OK"), "{out_meta}");
        let in_rows: u64 = in_metas
            .iter()
            .map(|v| v["numberOfRows"].as_u64().unwrap())
            .sum();
        assert_eq!(out_meta["numberOfRows"].as_u64(), Some(in_rows));
        for key in [
            "compression",
            "compressionBufferSize",
            "writerVersion",
            "softwareVersion",
            "fileVersion",
            "schemaString",
            "calendar",
        ] {
            assert_eq!(out_meta[key], in_metas[0][key], "{key}");
        }
        let in_stripes: usize = in_metas
            .iter()
            .map(|v| v["stripes"].as_array().unwrap().len())
            .sum();
        assert_eq!(out_meta["stripes"].as_array().unwrap().len(), in_stripes);
        assert_eq!(
            out_meta["stripeStatistics"].as_array().unwrap().len(),
            in_stripes
        );
        check_file_statistics(&in_metas, &out_meta);

        let expected = java_rows(jar, &in_paths);
        let found = java_rows(jar, &[&m.path]);
        assert_eq!(found.len(), expected.len());
        assert!(found == expected, "rows differ for {}", m.path.display());
    }
}

#[tokio::test]
async fn all_types_in_every_codec_merge_into_files_java_reads_identically() {
    let jar = orc_tools();
    let dir = tempfile::tempdir().unwrap();
    for (codec, kind) in [
        ("NONE", Compression::None),
        ("ZLIB", Compression::Zlib),
        ("SNAPPY", Compression::Snappy),
        ("LZ4", Compression::Lz4),
        ("ZSTD", Compression::Zstd),
    ] {
        let files: Vec<PathBuf> = (0..3)
            .map(|i| {
                let rows = all_types_rows(i + 1, 2100 + 300 * i);
                write_orc(
                    &jar,
                    dir.path(),
                    &format!("{codec}-{i}"),
                    ALL_TYPES,
                    codec,
                    &rows,
                )
            })
            .collect();
        // The point of a small stripe size: inputs with several stripes each.
        let first = read_tail(&LocalFile::open(&files[0]))
            .await
            .unwrap()
            .unwrap();
        assert_eq!(first.compression, kind);
        assert!(
            first.stripes.len() > 1,
            "{codec}: only {} stripe",
            first.stripes.len()
        );

        let merged = merge_all(&files, dir.path(), 1).await;
        java_check(&jar, &merged);
        for m in &merged {
            std::fs::rename(&m.path, dir.path().join(format!("{codec}-merged.orc"))).unwrap();
        }
    }
}

#[tokio::test]
async fn different_schemas_and_codecs_form_separate_groups() {
    let jar = orc_tools();
    let dir = tempfile::tempdir().unwrap();
    let narrow = "struct<a:bigint,s:string>";
    let wide = "struct<a:bigint,s:string,extra:decimal(12,3)>";
    let rows = |seed: i64, extra: bool| -> Vec<Value> {
        (0..1500)
            .map(|k| {
                let v = seed * 10_000 + k;
                if extra {
                    json!({"a": v, "s": format!("s{v}"), "extra": format!("{}.{:03}", v % 1000, k % 1000)})
                } else {
                    json!({"a": v, "s": format!("s{v}")})
                }
            })
            .collect()
    };
    let files = vec![
        write_orc(&jar, dir.path(), "n0", narrow, "ZLIB", &rows(0, false)),
        write_orc(&jar, dir.path(), "w0", wide, "ZLIB", &rows(1, true)),
        write_orc(&jar, dir.path(), "n1", narrow, "ZLIB", &rows(2, false)),
        write_orc(&jar, dir.path(), "z0", narrow, "ZSTD", &rows(3, false)),
        write_orc(&jar, dir.path(), "w1", wide, "ZLIB", &rows(4, true)),
        write_orc(&jar, dir.path(), "z1", narrow, "ZSTD", &rows(5, false)),
    ];
    let merged = merge_all(&files, dir.path(), 3).await;
    let names: Vec<Vec<String>> = merged
        .iter()
        .map(|m| {
            m.inputs
                .iter()
                .map(|p| p.file_stem().unwrap().to_string_lossy().into_owned())
                .collect()
        })
        .collect();
    assert_eq!(
        names,
        vec![vec!["n0", "n1"], vec!["w0", "w1"], vec!["z0", "z1"]]
    );
    java_check(&jar, &merged);
}

// ---------------------------------------------------------------------------------------------
// The re-encoding writer: rows written by Java, decoded and written again by `orc::reencode`
// (as `compact` does), judged by Java.

/// Re-encodes `input` as `compact` does, with the input's type tree, codec, block size, stride,
/// bloom filter columns and metadata, in stripes of about `stripe_size` bytes.
async fn reencode(input: &Path, output: &Path, stripe_size: u64) {
    let tail = read_tail(&LocalFile::open(input)).await.unwrap().unwrap();
    let mut options = WriterOptions::from_tail(&tail);
    options.stripe_size = stripe_size;
    let mut sink = LocalSink(File::create(output).unwrap());
    let path = input.to_path_buf();
    let open = |_| {
        let path = path.clone();
        async move { Ok(LocalFile::open(&path)) }
    };
    let written = orc::reencode(&[&tail], open, &mut sink, options, &ReadAhead::default(), 2)
        .await
        .unwrap();
    assert_eq!(written.length, std::fs::metadata(output).unwrap().len());
    assert_eq!(written.digests.rows, tail.rows);
}

/// Java seeks to rows around every row group boundary of `file` through its row index and
/// compares them with a sequential read (scripts/harness/orc-tools/SeekCheck.java).
fn java_seek_check(jar: &Path, file: &Path) {
    let source =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/harness/orc-tools/SeekCheck.java");
    let out = Command::new("java")
        .arg("-cp")
        .arg(jar)
        .arg(source)
        .arg(file)
        .output()
        .expect("run java");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.starts_with("ok"),
        "seek check of {}: {stdout}\n{}",
        file.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    eprintln!("{}: {stdout}", file.display());
}

/// The statistics two writers must agree on for the same rows: all but bytes on disk and the
/// child counts of lists and maps (Java 1.9 records those wrongly).
fn writer_independent_stats(meta: &Value) -> Vec<BTreeMap<String, Value>> {
    let mut stats = column_stats(meta);
    for column in &mut stats {
        for key in ["bytesOnDisk", "minChildren", "maxChildren", "totalChildren"] {
            column.remove(key);
        }
    }
    stats
}

#[tokio::test]
async fn reencoded_files_read_in_java_with_the_inputs_rows_statistics_and_seeks() {
    let jar = orc_tools();
    let dir = tempfile::tempdir().unwrap();
    let rows = all_types_rows(3, 6000);
    for codec in ["NONE", "ZLIB", "SNAPPY", "LZ4", "ZSTD"] {
        let input = write_orc_with(
            &jar,
            dir.path(),
            &format!("in-{codec}"),
            ALL_TYPES,
            codec,
            &rows,
            &[
                "orc.row.index.stride=1000",
                "orc.stripe.size=262144",
                "orc.bloom.filter.columns=l,s",
            ],
        );
        let output = dir.path().join(format!("out-{codec}.orc"));
        // Columns 5 (l) and 8 (s) have bloom filters, which the output keeps; small stripes
        // to get several.
        reencode(&input, &output, 64 << 10).await;
        let out_tail = read_tail(&LocalFile::open(&output)).await.unwrap().unwrap();
        assert!(out_tail.stripes.len() > 1, "{codec}: several stripes");

        assert_eq!(
            java_rows(&jar, &[&output]),
            java_rows(&jar, &[&input]),
            "{codec}: Java reads the input's rows from the output"
        );
        let metas = java_metas(&jar, &[&input, &output]);
        assert_eq!(metas[1]["status"], json!("OK"), "{}", metas[1]);
        let (ours, theirs) = (
            writer_independent_stats(&metas[1]),
            writer_independent_stats(&metas[0]),
        );
        assert_eq!(ours.len(), theirs.len());
        for (o, t) in ours.iter().zip(&theirs) {
            assert_eq!(o, t, "{codec}: file statistics");
        }
        java_seek_check(&jar, &output);
    }
}
