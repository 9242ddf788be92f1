//! `compact` end to end: the real binary against the real clusters `scripts/test` starts (HDFS +
//! HMS 4.0.1, and HMS 3.1.3 for one swap), checked by an independent reader (Java ORC tools
//! 1.9.5 through `scripts/orc-tools`, reading HDFS directly) and by the metastore itself.
//!
//! The `fixtures` database is read-only for tests: this file loads its own databases with
//! `scripts/fixtures --db <unique>` once per test binary, and every test uses its own partitions
//! so the tests stay independent of each other and of their order.
//!
//! What "untouched" means here: the partition's metastore object (whole Thrift struct) and the
//! recursive listing of its directory (names, lengths, mtimes, owners, permissions) are the same
//! as before, except that a hidden `.hive-orc-compactor` directory may remain.

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use common::{env, json, run_against, run_many, stderr, stdout, FixturePartition, Fixtures};
use hive_orc_compactor::hdfs::{Hdfs, Location};
use hive_orc_compactor::metastore::{Metastore, MetastoreConfig, Partition};
use serde_json::Value;

/// The tool's hidden work directory inside a partition's home.
const WORK_DIR: &str = ".hive-orc-compactor";
const PREVIOUS_LOCATION: &str = "hive-orc-compactor.previous-location";
const RUN_ID: &str = "hive-orc-compactor.run-id";

// ---------------------------------------------------------------------------------------------
// Plumbing: one tokio runtime, fixture databases, the metastore and HDFS.

fn rt() -> &'static tokio::runtime::Runtime {
    static RT: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    RT.get_or_init(|| {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("a tokio runtime")
    })
}

fn hdfs() -> &'static Hdfs {
    static HDFS: OnceLock<Hdfs> = OnceLock::new();
    HDFS.get_or_init(Hdfs::new)
}

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// Loads `sets` into a new database on the cluster at (`hms_uri`, `hdfs_url`) and returns its
/// manifest. The database name is unique per test process.
fn load_fixtures(prefix: &str, hms_uri: &str, hdfs_url: &str, sets: &str) -> Fixtures {
    let stamp = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis()
        % 1_000_000_000;
    let db = format!("{prefix}_{}_{stamp}", std::process::id());
    let manifest = std::env::temp_dir().join(format!("hoc-{db}.json"));
    let t0 = Instant::now();
    let out = Command::new(repo().join("scripts/fixtures"))
        .args(["--db", &db, "--set", sets, "--quiet", "--manifest"])
        .arg(&manifest)
        .env("HMS_URI", hms_uri)
        .env("HDFS_URL", hdfs_url)
        .env_remove("HADOOP_CONF_DIR")
        .env_remove("HIVE_CONF_DIR")
        .output()
        .expect("scripts/fixtures runs");
    assert!(
        out.status.success(),
        "scripts/fixtures --db {db} --set {sets} failed:\n{}",
        stderr(&out)
    );
    let text = std::fs::read_to_string(&manifest).unwrap();
    let fixtures: Fixtures = serde_json::from_str(&text).expect("a fixture manifest");
    eprintln!(
        "fixtures {db} ({sets}) loaded in {:.1}s",
        t0.elapsed().as_secs_f64()
    );
    fixtures
}

/// This binary's database on the HMS 4 cluster: every set (each test uses its own partitions).
fn db4() -> &'static Fixtures {
    static DB: OnceLock<Fixtures> = OnceLock::new();
    DB.get_or_init(|| {
        load_fixtures(
            "compact",
            &env("HMS_URI"),
            &env("HDFS_URL"),
            "basic,types,codecs,schemas,escaping,leftovers,refusals",
        )
    })
}

fn metastore(hms_uri: &str) -> Metastore {
    rt().block_on(async {
        let mut cfg = MetastoreConfig::new(hms_uri).expect("a metastore URI");
        cfg.connect_timeout = Duration::from_secs(5);
        cfg.io_timeout = Duration::from_secs(60);
        Metastore::connect(cfg)
            .await
            .unwrap_or_else(|e| panic!("connecting to {hms_uri}: {e}"))
    })
}

fn loc(s: &str) -> Location {
    Location::parse(s).unwrap_or_else(|e| panic!("{s}: {e}"))
}

/// Every directory under `root` (itself included) → its listing, recursively; hidden entries
/// and subdirectories included. With `skip_work`, our work directory's subtree is left out
/// and its name removed from the hidden names.
fn tree(root: &str, skip_work: bool) -> BTreeMap<String, Value> {
    rt().block_on(async {
        let mut out = BTreeMap::new();
        let mut pending = vec![loc(root)];
        while let Some(dir) = pending.pop() {
            let listing = hdfs()
                .list(&dir)
                .await
                .unwrap_or_else(|e| panic!("listing {dir}: {e}"));
            let Some(mut listing) = listing else {
                out.insert(dir.to_string(), Value::Null);
                continue;
            };
            if skip_work {
                listing.hidden.retain(|n| n != WORK_DIR);
            }
            // Hidden names may be files or directories.
            for name in listing.subdirs.iter().chain(&listing.hidden) {
                let child = dir.child(name);
                let client = hdfs().client(&child).expect("an HDFS client");
                let info = client
                    .get_file_info(&child.path)
                    .await
                    .unwrap_or_else(|e| panic!("status of {child}: {e}"));
                if info.isdir {
                    pending.push(child);
                }
            }
            out.insert(
                dir.to_string(),
                serde_json::to_value(&listing).expect("a listing serialises"),
            );
        }
        out
    })
}

/// The visible files directly in `dir`: (name, length).
fn files_in(dir: &str) -> Vec<(String, u64)> {
    rt().block_on(async {
        let l = hdfs()
            .list(&loc(dir))
            .await
            .unwrap_or_else(|e| panic!("listing {dir}: {e}"))
            .unwrap_or_else(|| panic!("{dir} does not exist"));
        l.files.into_iter().map(|e| (e.name, e.length)).collect()
    })
}

/// Names in `<home>/.hive-orc-compactor` (empty when it does not exist).
fn work_entries(home: &str) -> Vec<String> {
    rt().block_on(async {
        let dir = loc(home).child(WORK_DIR);
        match hdfs().list(&dir).await {
            Ok(Some(l)) => l
                .files
                .into_iter()
                .map(|e| e.name)
                .chain(l.subdirs)
                .chain(l.hidden)
                .collect(),
            Ok(None) => vec![],
            Err(e) => panic!("listing {dir}: {e}"),
        }
    })
}

fn read_file(path: &str) -> Vec<u8> {
    rt().block_on(async {
        let r = hdfs()
            .open(&loc(path))
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        let len = r.file_length();
        r.read_range(0, len).await.expect("read").to_vec()
    })
}

fn write_file(path: &str, bytes: Vec<u8>) {
    rt().block_on(async {
        let mut w = hdfs()
            .create(&loc(path), 0o644)
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        w.write_bytes(bytes.into()).await.expect("write");
        w.close().await.expect("close");
    })
}

fn get_partition(ms: &Metastore, db: &str, table: &str, values: &[String]) -> Partition {
    rt().block_on(ms.get_partition_by_values(db, table, values))
        .unwrap_or_else(|e| panic!("get_partition {db}.{table} {values:?}: {e}"))
}

fn location_of(p: &Partition) -> String {
    p.sd.as_ref()
        .and_then(|sd| sd.location.clone())
        .expect("a partition location")
}

/// One partition under test.
#[derive(Clone)]
struct Part {
    hms_uri: String,
    db: String,
    table: String,
    spec: String,
    values: Vec<String>,
    /// Where the fixtures put it (its home).
    location: String,
}

impl Part {
    fn of(fx: &Fixtures, hms_uri: &str, table: &str, spec: &str) -> Part {
        let p: &FixturePartition = fx.table(table).partition(spec);
        Part {
            hms_uri: hms_uri.to_string(),
            db: fx.database.clone(),
            table: table.to_string(),
            spec: spec.to_string(),
            values: p.values.clone(),
            location: p.location.clone(),
        }
    }

    fn qualified(&self) -> String {
        format!("{}.{}", self.db, self.table)
    }

    fn args(&self, extra: &[&str]) -> Vec<String> {
        let mut a = vec![
            "compact".to_string(),
            "--table".into(),
            self.qualified(),
            "--partition".into(),
            self.spec.clone(),
            "--json".into(),
        ];
        a.extend(extra.iter().map(|s| s.to_string()));
        a
    }

    fn partition(&self) -> Partition {
        get_partition(
            &metastore(&self.hms_uri),
            &self.db,
            &self.table,
            &self.values,
        )
    }

    /// The metastore object and the recursive listing of its home (our work directory left
    /// out unless `strict`).
    fn state(&self, strict: bool) -> State {
        State {
            partition: self.partition(),
            tree: tree(&self.location, !strict),
        }
    }

    fn compact(&self, extra: &[&str]) -> Output {
        let args = self.args(extra);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        run_against(&self.hms_uri, &args)
    }
}

#[derive(Debug, PartialEq)]
struct State {
    partition: Partition,
    tree: BTreeMap<String, Value>,
}

fn assert_untouched(part: &Part, before: &State, after: &State, what: &str) {
    assert!(
        before.partition == after.partition,
        "{what}: the metastore partition {} changed:\nbefore {:#?}\nafter {:#?}",
        part.spec,
        before.partition,
        after.partition
    );
    for (dir, listing) in &before.tree {
        assert_eq!(
            Some(listing),
            after.tree.get(dir),
            "{what}: directory {dir} changed"
        );
    }
    assert_eq!(
        before.tree.keys().collect::<Vec<_>>(),
        after.tree.keys().collect::<Vec<_>>(),
        "{what}: directories appeared or vanished"
    );
}

fn code(o: &Output) -> i32 {
    o.status.code().unwrap_or(-1)
}

fn describe(o: &Output) -> String {
    format!(
        "exit {:?}\nstdout: {}\nstderr: {}",
        o.status.code(),
        stdout(o),
        stderr(o)
    )
}

// ---------------------------------------------------------------------------------------------
// The independent reader: scripts/orc-tools (Java ORC tools 1.9.5 + Hadoop client), one JVM per
// batch of files.

fn orc_tools(args: &[&str], files: &[String]) -> Result<String, String> {
    let t0 = Instant::now();
    let out = Command::new(repo().join("scripts/orc-tools"))
        .args(args)
        .args(files)
        .stdin(Stdio::null())
        .output()
        .expect("scripts/orc-tools runs");
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
fn java_rows(files: &[String]) -> Vec<Vec<String>> {
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
fn java_metas(files: &[String]) -> BTreeMap<String, Value> {
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

/// min/max out of a plain-`meta` statistics line, for a column of JSON type `kind`.
fn text_stat(kind: &str, text: &str, key: &str) -> Option<Value> {
    let min_at = text.find(" min: ")?;
    let max_at = text.find(" max: ")?;
    let raw = if key == "min" {
        &text[min_at + 6..max_at]
    } else {
        let rest = &text[max_at + 6..];
        rest.find(" sum: ").map_or(rest, |i| &rest[..i])
    };
    Some(match kind {
        "LONG" => serde_json::json!(raw.parse::<i64>().ok()?),
        "DOUBLE" => serde_json::json!(raw.parse::<f64>().ok()?),
        _ => Value::String(raw.to_string()),
    })
}

/// An order-independent digest of a multiset of lines: count, sum and xor of a 64-bit hash.
#[derive(Debug, Default, PartialEq, Eq, Clone, Copy)]
struct Digest {
    rows: u64,
    sum: u64,
    xor: u64,
}

impl Digest {
    fn add(&mut self, line: &str) {
        let h = xxhash_rust::xxh3::xxh3_64(line.as_bytes());
        self.rows += 1;
        self.sum = self.sum.wrapping_add(h);
        self.xor ^= h;
    }
}

/// Compares two statistic values of one ORC column kind: the order Java widens min/max by.
fn cmp_stat(kind: &str, a: &Value, b: &Value) -> std::cmp::Ordering {
    use std::cmp::Ordering;
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => match (x.as_i64(), y.as_i64()) {
            (Some(x), Some(y)) => x.cmp(&y),
            // serde_json (without its float_roundtrip feature) may parse a double one ulp
            // off: values that close are the same value printed by Java.
            _ => {
                let (x, y) = (x.as_f64().unwrap(), y.as_f64().unwrap());
                if (x - y).abs() <= 4.0 * f64::EPSILON * x.abs().max(y.abs()) {
                    Ordering::Equal
                } else {
                    x.total_cmp(&y)
                }
            }
        },
        (Value::String(x), Value::String(y)) if kind == "DECIMAL" => cmp_decimal(x, y),
        (Value::String(x), Value::String(y)) => x.as_bytes().cmp(y.as_bytes()),
        _ => {
            assert_eq!(a, b, "incomparable statistics");
            Ordering::Equal
        }
    }
}

/// Exact comparison of decimal strings such as `-123.45`.
fn cmp_decimal(a: &str, b: &str) -> std::cmp::Ordering {
    fn parts(s: &str) -> (bool, String, String) {
        let (neg, s) = match s.strip_prefix('-') {
            Some(r) => (true, r),
            None => (false, s),
        };
        let (i, f) = s.split_once('.').unwrap_or((s, ""));
        let i = i.trim_start_matches('0').to_string();
        let f = f.trim_end_matches('0').to_string();
        let zero = i.is_empty() && f.is_empty();
        (neg && !zero, i, f)
    }
    let (na, ia, fa) = parts(a);
    let (nb, ib, fb) = parts(b);
    let magnitude = ia
        .len()
        .cmp(&ib.len())
        .then_with(|| ia.cmp(&ib))
        .then_with(|| fa.cmp(&fb));
    match (na, nb) {
        (false, true) => std::cmp::Ordering::Greater,
        (true, false) => std::cmp::Ordering::Less,
        (false, false) => magnitude,
        (true, true) => magnitude.reverse(),
    }
}

/// Every column's min/max (and minChildren/maxChildren) in `output`'s file statistics is the
/// extreme over the `inputs`' file statistics, or absent because some input lacks it.
fn check_min_max(what: &str, inputs: &[&Value], output: &Value) {
    let cols = |m: &Value| -> Vec<Value> {
        m["fileStatistics"]
            .as_array()
            .unwrap_or_else(|| panic!("{what}: no fileStatistics in {m}"))
            .clone()
    };
    let out = cols(output);
    let ins: Vec<Vec<Value>> = inputs.iter().map(|m| cols(m)).collect();
    assert_eq!(out.len(), ins[0].len(), "{what}: columns");
    for (c, o) in out.iter().enumerate() {
        if let Some(text) = o["text"].as_str() {
            // Only plain `meta` could print this output: compare min/max of the column
            // kinds whose text form is unambiguous.
            let kind = ins[0][c]["type"].as_str().unwrap_or("");
            if !["LONG", "DOUBLE", "DECIMAL", "DATE", "TIMESTAMP"].contains(&kind) {
                continue;
            }
            for (key, want) in [
                ("min", std::cmp::Ordering::Less),
                ("max", std::cmp::Ordering::Greater),
            ] {
                let extreme = ins.iter().filter_map(|f| f[c].get(key)).reduce(|a, b| {
                    if cmp_stat(kind, b, a) == want {
                        b
                    } else {
                        a
                    }
                });
                let found = text_stat(kind, text, key);
                if let (Some(found), Some(extreme)) = (&found, extreme) {
                    let extreme = match (kind, extreme) {
                        // Plain meta prints doubles in Java's Double.toString form.
                        ("DOUBLE", Value::Number(n)) => serde_json::json!(n.as_f64().unwrap()),
                        _ => extreme.clone(),
                    };
                    assert!(
                        cmp_stat(kind, found, &extreme) == std::cmp::Ordering::Equal,
                        "{what}: column {c} ({kind}) {key} is {found}, the inputs' is {extreme}"
                    );
                } else {
                    assert!(
                        found.is_none() || extreme.is_some(),
                        "{what}: column {c} {key} {found:?} but no input has one"
                    );
                }
            }
            continue;
        }
        let kind = o["type"].as_str().unwrap_or("");
        for (key, want) in [
            ("min", std::cmp::Ordering::Less),
            ("max", std::cmp::Ordering::Greater),
            ("minChildren", std::cmp::Ordering::Less),
            ("maxChildren", std::cmp::Ordering::Greater),
        ] {
            let values: Vec<Option<&Value>> = ins.iter().map(|f| f[c].get(key)).collect();
            let present: Vec<&Value> = values.iter().flatten().copied().collect();
            // Files without a value in the column carry no min/max: count=0 inputs do not
            // constrain the merged statistic.
            let all_have = ins
                .iter()
                .all(|f| f[c].get(key).is_some() || f[c]["count"].as_u64() == Some(0));
            let extreme =
                present
                    .iter()
                    .copied()
                    .reduce(|a, b| if cmp_stat(kind, b, a) == want { b } else { a });
            match (o.get(key), extreme) {
                (Some(found), Some(extreme)) => assert!(
                    cmp_stat(kind, found, extreme) == std::cmp::Ordering::Equal,
                    "{what}: column {c} ({kind}) {key} is {found}, the inputs' is {extreme}"
                ),
                (Some(found), None) => {
                    panic!("{what}: column {c} {key} is {found} but no input has one")
                }
                (None, Some(extreme)) => assert!(
                    !all_have,
                    "{what}: column {c} ({kind}) {key} dropped although every input has one \
                     (extreme {extreme})"
                ),
                (None, None) => {}
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// A compaction, checked from every side.

/// A partition about to be compacted: its state before, then the run's report.
struct Compaction {
    part: Part,
    before: State,
    /// The visible files of the old location, by name: (path, length).
    old_files: BTreeMap<String, (String, u64)>,
    report: Value,
}

fn prepare(part: &Part) -> (State, BTreeMap<String, (String, u64)>) {
    let before = part.state(true);
    let old_location = location_of(&before.partition);
    let old_files = files_in(&old_location)
        .into_iter()
        .map(|(n, l)| (n.clone(), (loc(&old_location).child(&n).to_string(), l)))
        .collect();
    (before, old_files)
}

/// Runs `compact` on every partition (in parallel), expecting each to compact.
fn compact_all(parts: &[Part]) -> Vec<Compaction> {
    compact_all_with(parts, &[])
}

/// [`compact_all`] with `extra` arguments for every run.
fn compact_all_with(parts: &[Part], extra: &[&str]) -> Vec<Compaction> {
    let prepared: Vec<_> = parts.iter().map(prepare).collect();
    let mut outputs = Vec::new();
    let by_uri: BTreeSet<&str> = parts.iter().map(|p| p.hms_uri.as_str()).collect();
    let mut results: Vec<Option<Output>> = vec![None; parts.len()];
    for uri in by_uri {
        let idx: Vec<usize> = (0..parts.len())
            .filter(|&i| parts[i].hms_uri == uri)
            .collect();
        let cases: Vec<Vec<String>> = idx.iter().map(|&i| parts[i].args(extra)).collect();
        for (i, o) in idx.into_iter().zip(run_many(uri, &cases)) {
            results[i] = Some(o);
        }
    }
    for ((part, (before, old_files)), out) in parts.iter().zip(prepared).zip(results) {
        let out = out.unwrap();
        assert_eq!(
            code(&out),
            0,
            "{} {}: {}",
            part.table,
            part.spec,
            describe(&out)
        );
        let report = json(&out);
        assert_eq!(report["status"], "compacted", "{} {report}", part.spec);
        let level = match extra.iter().position(|a| *a == "--verify") {
            Some(i) => extra[i + 1],
            None => "full",
        };
        assert_eq!(report["verify"], level, "{} {report}", part.spec);
        outputs.push(Compaction {
            part: part.clone(),
            before,
            old_files,
            report,
        });
    }
    outputs
}

/// The checks every successful compaction must pass (promises 1 to 5, and the journal).
fn check_compactions(runs: &[Compaction]) {
    // Gather every file once: old (non-empty) files at the old location, new ones at the new.
    let mut news: Vec<BTreeMap<String, (String, u64)>> = vec![];
    let mut all_files: Vec<String> = vec![];
    for c in runs {
        let r = &c.report;
        let new_location = r["new_location"]
            .as_str()
            .expect("new_location")
            .to_string();
        let new_files: BTreeMap<String, (String, u64)> = files_in(&new_location)
            .into_iter()
            .map(|(n, l)| (n.clone(), (loc(&new_location).child(&n).to_string(), l)))
            .collect();
        all_files.extend(
            c.old_files
                .values()
                .filter(|(_, l)| *l > 0)
                .map(|(p, _)| p.clone()),
        );
        all_files.extend(new_files.values().map(|(p, _)| p.clone()));
        news.push(new_files);
    }
    // Two JVMs for everything, started together.
    let (rows, metas) = std::thread::scope(|s| {
        let rows = s.spawn(|| java_rows(&all_files));
        let metas = java_metas(&all_files);
        (rows.join().expect("orc-tools data"), metas)
    });
    let rows: BTreeMap<&String, &Vec<String>> = all_files.iter().zip(&rows).collect();

    for (c, new_files) in runs.iter().zip(&news) {
        let r = &c.report;
        let what = format!("{} {}", c.part.table, c.part.spec);
        let old_location = location_of(&c.before.partition);
        let new_location = r["new_location"].as_str().unwrap();
        let run_id = r["run_id"].as_str().expect("run_id");
        assert_eq!(r["old_location"].as_str(), Some(old_location.as_str()));
        assert_eq!(
            new_location,
            loc(&c.part.location)
                .child(WORK_DIR)
                .child(run_id)
                .to_string(),
            "{what}: the new location is <home>/{WORK_DIR}/<run-id>"
        );

        // Same rows, by an independent reader: count and order-independent digest (and the
        // sorted lines themselves when small).
        let digest = |files: &mut dyn Iterator<Item = &String>| {
            let files: Vec<&String> = files.collect();
            let mut d = Digest::default();
            for l in files.iter().flat_map(|f| rows[*f].iter()) {
                d.add(l);
            }
            let mut lines: Vec<&str> = vec![];
            if d.rows <= 50_000 {
                lines = files
                    .iter()
                    .flat_map(|f| rows[*f].iter().map(String::as_str))
                    .collect();
                lines.sort_unstable();
            }
            (d, lines)
        };
        let (old_digest, old_lines) =
            digest(&mut c.old_files.values().filter(|(_, l)| *l > 0).map(|(p, _)| p));
        let (new_digest, new_lines) = digest(&mut new_files.values().map(|(p, _)| p));
        assert_eq!(old_digest, new_digest, "{what}: Java reads other rows");
        assert!(old_lines == new_lines, "{what}: Java reads other rows");
        assert_eq!(r["rows"].as_u64(), Some(new_digest.rows), "{what}: rows");
        assert!(new_digest.rows > 0, "{what}: a partition with rows");

        // File counts: as planned, as listed, fewer than before.
        let planned: usize = r["groups"]
            .as_array()
            .unwrap()
            .iter()
            .map(|g| g["outputs"].as_array().unwrap().len())
            .sum::<usize>()
            + r["carried"].as_array().unwrap().len();
        assert_eq!(r["files_after"].as_u64(), Some(new_files.len() as u64));
        assert_eq!(planned, new_files.len(), "{what}: outputs + carried");
        assert_eq!(
            r["files_before"].as_u64(),
            Some(c.old_files.len() as u64),
            "{what}: files_before"
        );
        assert!(new_files.len() < c.old_files.len(), "{what}: fewer files");
        let new_bytes: u64 = new_files.values().map(|(_, l)| l).sum();
        assert_eq!(r["bytes_after"].as_u64(), Some(new_bytes));

        // Java's meta on every output: clean, and min/max as the inputs' extremes.
        let meta_of = |p: &String| &metas[p];
        for (name, (path, _)) in new_files {
            let out_meta = meta_of(path);
            assert_eq!(out_meta["status"], "OK", "{what}: {name}: {out_meta}");
            // Which old files it was made from: a merged output's planned inputs, or itself.
            let inputs: Vec<String> = r["groups"]
                .as_array()
                .unwrap()
                .iter()
                .flat_map(|g| g["outputs"].as_array().unwrap())
                .find(|o| o["name"] == name.as_str())
                .map(|o| {
                    o["inputs"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .map(|v| v.as_str().unwrap().to_string())
                        .collect()
                })
                .unwrap_or_else(|| {
                    assert!(
                        r["carried"]
                            .as_array()
                            .unwrap()
                            .iter()
                            .any(|f| f["name"] == name.as_str()),
                        "{what}: {name} is neither an output nor carried"
                    );
                    vec![name.clone()]
                });
            let in_metas: Vec<&Value> = inputs.iter().map(|n| meta_of(&c.old_files[n].0)).collect();
            let in_rows: u64 = in_metas
                .iter()
                .map(|m| m["numberOfRows"].as_u64().unwrap())
                .sum();
            assert_eq!(out_meta["numberOfRows"].as_u64(), Some(in_rows), "{name}");
            assert_eq!(rows[path].len() as u64, in_rows, "{what}: {name} rows read");
            for key in [
                "schemaString",
                "compression",
                "fileVersion",
                "writerVersion",
            ] {
                assert_eq!(out_meta[key], in_metas[0][key], "{what}: {name} {key}");
            }
            check_min_max(&format!("{what}: {name}"), &in_metas, out_meta);
        }

        // The metastore: new location, true statistics, the previous location, nothing else
        // changed.
        let after = c.part.partition();
        assert_eq!(location_of(&after), new_location, "{what}: location");
        let before_params = c.before.partition.parameters.clone().unwrap_or_default();
        let after_params = after.parameters.clone().unwrap_or_default();
        assert_eq!(
            after_params.get("numFiles"),
            Some(&new_files.len().to_string())
        );
        assert_eq!(after_params.get("totalSize"), Some(&new_bytes.to_string()));
        assert_eq!(
            after_params.get("numRows"),
            Some(&new_digest.rows.to_string()),
            "{what}: numRows"
        );
        assert_eq!(
            after_params.get(PREVIOUS_LOCATION),
            Some(&old_location),
            "{what}"
        );
        assert_eq!(
            after_params.get(RUN_ID).map(String::as_str),
            Some(run_id),
            "{what}"
        );
        let changed = [
            "numFiles",
            "totalSize",
            "numRows",
            PREVIOUS_LOCATION,
            RUN_ID,
        ];
        let strip = |p: &BTreeMap<String, String>| -> BTreeMap<String, String> {
            p.iter()
                .filter(|(k, _)| !changed.contains(&k.as_str()))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect()
        };
        assert_eq!(
            strip(&after_params),
            strip(&before_params),
            "{what}: other parameters changed"
        );
        // Everything else of the partition object as it was.
        let mut same = after.clone();
        same.parameters = c.before.partition.parameters.clone();
        if let Some(sd) = same.sd.as_mut() {
            sd.location = Some(old_location.clone());
        }
        assert!(
            same == c.before.partition,
            "{what}: the partition changed beyond location and parameters:\nbefore {:#?}\nafter {:#?}",
            c.before.partition,
            after
        );

        // The old files (and hidden leftovers) are all still there, unchanged.
        let now = tree(&c.part.location, true);
        for (dir, listing) in &c.before.tree {
            assert_eq!(
                Some(listing),
                now.get(dir),
                "{what}: old directory {dir} changed"
            );
        }

        // The journal, next to the run.
        let journal_path = loc(&c.part.location)
            .child(WORK_DIR)
            .child(&format!("{run_id}.json"))
            .to_string();
        let journal: Value = serde_json::from_slice(&read_file(&journal_path))
            .unwrap_or_else(|e| panic!("{what}: journal {journal_path}: {e}"));
        assert_eq!(journal["run_id"], run_id);
        assert_eq!(
            journal["old_location"].as_str(),
            Some(old_location.as_str())
        );
        assert_eq!(journal["new_location"].as_str(), Some(new_location));
        assert_eq!(
            journal["inputs"].as_array().map(Vec::len),
            Some(c.old_files.len()),
            "{what}: journal inputs"
        );
        assert_eq!(
            journal["outputs"].as_array().map(Vec::len),
            Some(new_files.len()),
            "{what}: journal outputs"
        );
        // Only the run's directory and journal in the work directory: no staging left.
        let mut work = work_entries(&c.part.location);
        work.sort();
        let mut expected = vec![run_id.to_string(), format!("{run_id}.json")];
        expected.sort();
        assert_eq!(work, expected, "{what}: {WORK_DIR} holds");
    }
}

/// Promise 6: a second run finds nothing to do and changes nothing at all.
fn check_second_run(parts: &[Part]) {
    let befores: Vec<State> = parts.iter().map(|p| p.state(true)).collect();
    let cases: Vec<Vec<String>> = parts.iter().map(|p| p.args(&[])).collect();
    let outs = run_many(&parts[0].hms_uri, &cases);
    for ((p, before), out) in parts.iter().zip(&befores).zip(&outs) {
        assert_eq!(code(out), 0, "{} {}: {}", p.table, p.spec, describe(out));
        let r = json(out);
        assert_eq!(r["status"], "nothing-to-do", "{} {}: {r}", p.table, p.spec);
        assert_eq!(r["files_after"], r["files_before"]);
        let after = p.state(true);
        assert_untouched(p, before, &after, "a second run");
    }
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
    let cases: Vec<Vec<String>> = parts.iter().map(|p| p.args(&["--dry-run"])).collect();
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
    write_file(
        &loc(&parts[0].location).child("000099_0").to_string(),
        read_file(&source.to_string()),
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

const PRE_SWAP: [&str; 5] = [
    "compact::before-stage",
    "compact::after-stage",
    "compact::after-verify",
    "compact::after-publish",
    "compact::before-swap",
];

fn run_with_failpoints(part: &Part, failpoints: &str) -> Output {
    let args = part.args(&[]);
    Command::new(env!("CARGO_BIN_EXE_hive-orc-compactor"))
        .args(&args)
        .env_remove("HIVE_CONF_DIR")
        .env("HMS_URI", &part.hms_uri)
        .env("FAILPOINTS", failpoints)
        .output()
        .expect("the binary runs")
}

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
        assert_untouched(&part, &before, &part.state(false), fp);
        // The run cleaned up after itself: no staging, no published directory.
        assert_eq!(work_entries(&part.location), Vec::<String>::new(), "{fp}");
    }
    // After all that, a normal run compacts.
    let out = part.compact(&[]);
    assert_eq!(code(&out), 0, "{}", describe(&out));
}

/// Starts a run that pauses at `fp`, kills it with SIGKILL once it is there, and returns what
/// its work directory held at the kill.
fn kill_while_paused(part: &Part, fp: &str) -> Vec<String> {
    // Without a lock: a killed run's metastore lock outlives it until hive.txn.timeout and
    // would make the next run busy (tests/locks.rs is about that).
    let args = part.args(&["--no-lock"]);
    let mut child = Command::new(env!("CARGO_BIN_EXE_hive-orc-compactor"))
        .args(&args)
        .env_remove("HIVE_CONF_DIR")
        .env("HMS_URI", &part.hms_uri)
        .env("FAILPOINTS", format!("{fp}=sleep(30000)"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("the binary starts");
    let t0 = Instant::now();
    // Where the run must have got to before it pauses there: nothing visible yet before
    // staging; a staging directory after staging and verifying; the published one after.
    let published = |e: &Vec<String>| {
        e.iter()
            .any(|n| !n.ends_with(".staging") && !n.ends_with(".json"))
    };
    let staged = |e: &Vec<String>| e.iter().any(|n| n.ends_with(".staging"));
    let entries = loop {
        let e = work_entries(&part.location);
        let there = match fp {
            "compact::before-stage" => t0.elapsed() > Duration::from_secs(3),
            "compact::after-stage" | "compact::after-verify" => staged(&e),
            _ => published(&e),
        };
        if there {
            break e;
        }
        assert!(
            child.try_wait().expect("wait").is_none(),
            "{fp}: the run ended before pausing"
        );
        assert!(
            t0.elapsed() < Duration::from_secs(25),
            "{fp}: the run never got there"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    // Give a run that just created its directory time to finish the step and reach the pause.
    if fp != "compact::before-stage" {
        std::thread::sleep(Duration::from_millis(1500));
    }
    assert!(
        child.try_wait().expect("wait").is_none(),
        "{fp}: the run ended before the kill"
    );
    child.kill().expect("SIGKILL");
    child.wait().expect("reaped");
    entries
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
    assert_eq!(
        runs[0].report["files_before"].as_u64(),
        Some(fx.table("ext_p3").partition(&part.spec).file_count)
    );
    assert_eq!(
        runs[0].report["rows"].as_u64(),
        Some(fx.table("ext_p3").partition(&part.spec).rows)
    );
}

/// Pauses a run at `fp`, adds a data file to the partition meanwhile, and returns the run's
/// output.
fn add_file_while_paused(part: &Part, fp: &str, new_name: &str) -> Output {
    let args = part.args(&[]);
    let child = Command::new(env!("CARGO_BIN_EXE_hive-orc-compactor"))
        .args(&args)
        .env_remove("HIVE_CONF_DIR")
        .env("HMS_URI", &part.hms_uri)
        .env("FAILPOINTS", format!("{fp}=sleep(6000)"))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the binary starts");
    let t0 = Instant::now();
    while !work_entries(&part.location)
        .iter()
        .any(|n| !n.ends_with(".staging") && !n.ends_with(".json"))
    {
        assert!(
            t0.elapsed() < Duration::from_secs(5),
            "{fp}: never published"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    // A writer adds a file (a copy of one that is there).
    let old = files_in(&part.location);
    let source = loc(&part.location).child(&old[0].0).to_string();
    write_file(
        &loc(&part.location).child(new_name).to_string(),
        read_file(&source),
    );
    child.wait_with_output().expect("the run ends")
}

fn check_busy(part: &Part, fp: &str) {
    let before = part.state(true);
    let out = add_file_while_paused(part, fp, "000777_0");
    let after = part.state(true);
    assert_eq!(
        code(&out),
        4,
        "{fp}: a file added meanwhile means busy: {}",
        describe(&out)
    );
    let r = json(&out);
    assert_eq!(r["status"], "busy", "{r}");
    assert!(
        r["reason"].as_str().unwrap_or("").contains("000777_0"),
        "{fp}: the reason names the new file: {r}"
    );
    assert!(after.partition == before.partition, "{fp}: nothing swapped");
    assert_eq!(work_entries(&part.location), Vec::<String>::new(), "{fp}");
    let files: Vec<String> = files_in(&part.location).into_iter().map(|f| f.0).collect();
    assert!(files.contains(&"000777_0".to_string()));
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
        let files = files_in(&part.location);
        let source = loc(&part.location).child(&files[0].0).to_string();
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
        write_file(&loc(&part.location).child(name).to_string(), bytes);
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
    let fx = load_fixtures("compact31", &uri, &env("HDFS31_URL"), "codecs");
    let parts = vec![Part::of(&fx, &uri, "codecs", "codec=zstd")];
    let runs = compact_all(&parts);
    check_compactions(&runs);
    check_second_run(&parts);
}
