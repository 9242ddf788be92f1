//! Apache ORC C++ (pyarrow, through `scripts/pyorc`) as a second writer and reader: files from
//! the C++ writer put into a partition of their own, and any file on HDFS read by the C++
//! reader.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::Value;

use super::compaction::Compaction;
use super::hdfs::{hdfs, loc, read_file, write_file};
use super::metastore::metastore;
use super::objects::{column, orc_storage};
use super::partition::Part;
use super::{describe, env, external_table, new_partition, repo, rt};

/// A local directory of this process's own, made empty.
fn scratch(what: &str) -> PathBuf {
    static N: AtomicUsize = AtomicUsize::new(0);
    let dir = std::env::temp_dir().join(format!(
        "hoc-pyorc-{}-{what}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("a scratch directory");
    dir
}

fn pyorc(args: &[&str]) -> String {
    let out = Command::new(repo().join("scripts/pyorc"))
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("scripts/pyorc runs");
    assert!(
        out.status.success(),
        "scripts/pyorc {args:?}: {}",
        describe(&out)
    );
    String::from_utf8(out.stdout).expect("utf-8 output")
}

/// What the C++ reader makes of one file: its rows (one JSON array of column values each) and
/// how it sees the file.
#[derive(Debug, Clone)]
pub struct CppFile {
    pub rows: Vec<Value>,
    pub stripes: u64,
    pub compression: String,
    pub writer: String,
}

/// Each HDFS file (full URL) read by ORC C++, in the order given.
pub fn cpp_read(files: &[String]) -> Vec<CppFile> {
    let dir = scratch("read");
    let local: Vec<String> = files
        .iter()
        .enumerate()
        .map(|(i, f)| {
            let path = dir.join(format!("{i:05}.orc"));
            std::fs::write(&path, read_file(f)).expect("a local copy");
            path.to_string_lossy().into_owned()
        })
        .collect();
    let args: Vec<&str> = std::iter::once("rows")
        .chain(local.iter().map(String::as_str))
        .collect();
    let text = pyorc(&args);
    let _ = std::fs::remove_dir_all(&dir);
    let read: Vec<CppFile> = text
        .lines()
        .map(|l| {
            let v: Value = serde_json::from_str(l).expect("a JSON line per file");
            CppFile {
                rows: v["rows"].as_array().expect("rows").clone(),
                stripes: v["stripes"].as_u64().expect("stripes"),
                compression: v["compression"].as_str().unwrap_or_default().to_string(),
                writer: v["writer"].as_str().unwrap_or_default().to_string(),
            }
        })
        .collect();
    assert_eq!(read.len(), files.len(), "one answer per file");
    read
}

/// Files written by ORC C++ (`scripts/pyorc write` with `args`), put into a new partition
/// `p=<value>` of the external table `table` in the fixture database `db` (the table is made on
/// first use, its columns a placeholder: only the files' own schema is read here).
pub fn cpp_partition(db: &str, table: &str, value: &str, args: &[&str]) -> Part {
    let dir = scratch(value);
    let dir_text = dir.to_string_lossy().into_owned();
    let mut all = vec!["write", dir_text.as_str()];
    all.extend_from_slice(args);
    let written: Vec<PathBuf> = pyorc(&all).lines().map(PathBuf::from).collect();
    assert!(written.len() > 1, "pyorc wrote {written:?}");

    let hms_uri = env("HMS_URI");
    let ms = metastore(&hms_uri);
    let db_location = rt()
        .block_on(ms.database(db))
        .unwrap_or_else(|e| panic!("database {db}: {e}"))
        .location_uri
        .expect("a database location");
    let table_location = loc(&db_location).child(table).to_string();
    let home = loc(&table_location)
        .child(&format!("p={value}"))
        .to_string();
    rt().block_on(hdfs().mkdirs(&loc(&home), 0o755))
        .unwrap_or_else(|e| panic!("mkdirs {home}: {e}"));
    let mut rows = 0;
    for path in &written {
        let name = path.file_name().unwrap().to_string_lossy();
        rows += cpp_rows_of_local(path);
        write_file(
            &loc(&home).child(&name).to_string(),
            std::fs::read(path).unwrap(),
        );
    }
    let _ = std::fs::remove_dir_all(&dir);

    rt().block_on(async {
        if ms.get_table(db, table).await.is_err() {
            ms.create_table(external_table(
                db,
                table,
                "hive-orc-compactor-test",
                orc_storage(&table_location, vec![column("c", "string")]),
                vec![column("p", "string")],
                BTreeMap::from([("EXTERNAL".into(), "TRUE".into())]),
            ))
            .await
            .unwrap_or_else(|e| panic!("creating {db}.{table}: {e}"));
        }
        ms.add_partitions(vec![new_partition(
            db,
            table,
            &[value],
            orc_storage(&home, vec![column("c", "string")]),
            BTreeMap::new(),
        )])
        .await
        .unwrap_or_else(|e| panic!("adding {db}.{table} p={value}: {e}"));
    });
    Part {
        hms_uri,
        db: db.to_string(),
        table: table.to_string(),
        spec: format!("p={value}"),
        values: vec![value.to_string()],
        home,
        rows,
        files: written.len() as u64,
    }
}

fn cpp_rows_of_local(path: &Path) -> u64 {
    let text = pyorc(&["rows", &path.to_string_lossy()]);
    let v: Value = serde_json::from_str(text.trim()).expect("one JSON line");
    v["rows"].as_array().expect("rows").len() as u64
}

/// ORC C++ reads every output of each run as exactly its inputs' rows, in order (a merged
/// output holds its inputs one after another), and every carried file as it was.
pub fn check_cpp_reads(runs: &[Compaction]) {
    for c in runs {
        let r = &c.report;
        let new_location = loc(r["new_location"].as_str().expect("new_location"));
        let mut pairs: Vec<(String, Vec<String>)> = r["groups"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|g| g["outputs"].as_array().unwrap())
            .map(|o| {
                let inputs = o["inputs"].as_array().unwrap();
                (
                    o["name"].as_str().unwrap().to_string(),
                    inputs
                        .iter()
                        .map(|n| n.as_str().unwrap().to_string())
                        .collect(),
                )
            })
            .collect();
        for f in r["carried"].as_array().unwrap() {
            let name = f["name"].as_str().unwrap().to_string();
            pairs.push((name.clone(), vec![name]));
        }
        let mut files = vec![];
        for (output, inputs) in &pairs {
            files.push(new_location.child(output).to_string());
            files.extend(inputs.iter().map(|n| c.old_files[n].0.clone()));
        }
        let mut read = cpp_read(&files).into_iter();
        for (output, inputs) in &pairs {
            let out = read.next().unwrap();
            let expected: Vec<Value> = inputs
                .iter()
                .flat_map(|_| read.next().unwrap().rows)
                .collect();
            assert_eq!(
                out.rows.len(),
                expected.len(),
                "{} {}: ORC C++ reads {output} with other rows",
                c.part.table,
                c.part.spec
            );
            for (i, (got, want)) in out.rows.iter().zip(&expected).enumerate() {
                assert_eq!(
                    got, want,
                    "{} {}: ORC C++ reads row {i} of {output} unlike its inputs",
                    c.part.table, c.part.spec
                );
            }
        }
    }
}
