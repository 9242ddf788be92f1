//! Shared by the integration tests: the running cluster's addresses, the fixture manifest that
//! `scripts/fixtures` wrote, and a way to run the real binary.
//!
//! These tests need the real services `scripts/test` starts. Without them they fail loudly
//! rather than pass vacuously.

#![allow(dead_code)] // each test file uses its own subset

pub mod proxy;

use std::collections::BTreeMap;
use std::process::{Command, Output};
use std::time::Duration;

use hive_orc_compactor::hdfs::{Hdfs, Location};
use hive_orc_compactor::metastore::{
    Database, FieldSchema, Metastore, MetastoreConfig, Partition, PrincipalType, StorageDescriptor,
    Table,
};
use serde_json::Value;

pub fn env(name: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| {
        panic!(
            "{name} is not set: these tests need the local cluster; run them with scripts/test \
             (or `eval \"$(scripts/cluster env)\"` and scripts/fixtures first)"
        )
    })
}

/// The fixture manifest `scripts/fixtures` wrote for the cluster at `HMS_URI`.
pub fn manifest() -> Value {
    manifest_from("FIXTURES_MANIFEST")
}

pub fn manifest_from(var: &str) -> Value {
    let path = env(var);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// Runs the tool against the metastore at `hms_uri`, with no other configuration leaking in
/// from the environment.
pub fn run_against(hms_uri: &str, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_hive-orc-compactor"))
        .args(args)
        .env_remove("HIVE_CONF_DIR")
        .env("HMS_URI", hms_uri)
        .output()
        .expect("the binary runs")
}

pub fn run(args: &[&str]) -> Output {
    run_against(&env("HMS_URI"), args)
}

pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Exit code, stdout and stderr of a run, for assertion messages.
pub fn describe(o: &Output) -> String {
    format!(
        "exit {:?}\nstdout: {}\nstderr: {}",
        o.status.code(),
        stdout(o),
        stderr(o)
    )
}

pub fn json(o: &Output) -> Value {
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| {
        panic!(
            "stdout is not one JSON object ({e}):\n{}\nstderr:\n{}",
            stdout(o),
            stderr(o)
        )
    })
}

/// Runs the tool once per argument list against `hms_uri`, a few at a time, and returns the
/// outputs in the order of `cases`.
pub fn run_many(hms_uri: &str, cases: &[Vec<String>]) -> Vec<Output> {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Mutex;

    let workers = std::thread::available_parallelism()
        .map_or(4, |n| n.get() * 2)
        .clamp(4, 12)
        .min(cases.len().max(1));
    let next = AtomicUsize::new(0);
    let outputs: Vec<Mutex<Option<Output>>> = cases.iter().map(|_| Mutex::new(None)).collect();
    std::thread::scope(|s| {
        for _ in 0..workers {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(args) = cases.get(i) else { break };
                let args: Vec<&str> = args.iter().map(String::as_str).collect();
                *outputs[i].lock().unwrap() = Some(run_against(hms_uri, &args));
            });
        }
    });
    outputs
        .into_iter()
        .map(|o| o.into_inner().unwrap().expect("every case ran"))
        .collect()
}

/// One tokio runtime per test binary, for the library's async calls.
pub fn rt() -> &'static tokio::runtime::Runtime {
    static RT: std::sync::OnceLock<tokio::runtime::Runtime> = std::sync::OnceLock::new();
    RT.get_or_init(|| {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("a tokio runtime")
    })
}

/// A database of the test binary's own, made once from `sets` (`name` gets the process id):
/// tests of one binary use different partitions of it.
pub fn own_database(
    cell: &'static std::sync::OnceLock<OwnDatabase>,
    name: &str,
    sets: &str,
) -> &'static OwnDatabase {
    cell.get_or_init(|| OwnDatabase::create(&format!("{name}_{}", std::process::id()), sets))
}

/// A TCP port on 127.0.0.1 that nothing listens on (free when this returns).
pub fn free_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
    listener.local_addr().expect("local address").port()
}

// ---------------------------------------------------------------------------------------------
// The fixture manifest, typed (see scripts/harness/fixtures/README.md for the format).

#[derive(Debug, Clone, serde::Deserialize)]
pub struct Fixtures {
    pub database: String,
    /// `hdfs://host:port` of the cluster the fixtures were written to.
    pub default_fs: String,
    pub tables: Vec<FixtureTable>,
    /// Tables the metastore refused to create (`{name, set, refusal, reason}`).
    #[serde(default)]
    pub skipped: Vec<Value>,
}

#[derive(Debug, Clone, serde::Deserialize)]
pub struct FixtureTable {
    pub name: String,
    pub kind: String,
    /// The table-level rule the tool must refuse it by, if any.
    pub refusal: Option<String>,
    pub table_type: String,
    pub location: Option<String>,
    pub partition_keys: Vec<String>,
    pub params: Option<BTreeMap<String, String>>,
    /// What the metastore changed when the table was created (e.g. HMS 4's managed-table
    /// translation).
    #[serde(default)]
    pub notes: Vec<Value>,
    /// For an unpartitioned table, one entry with spec `""`: the table directory.
    pub partitions: Vec<FixturePartition>,
}

#[derive(Debug, Clone, serde::Deserialize)]
pub struct FixturePartition {
    /// Escaped, as `SHOW PARTITIONS` prints it.
    pub spec: String,
    /// Unescaped, in partition-key order.
    pub values: Vec<String>,
    pub location: String,
    /// Visible files (nested ones included), like HMS' numFiles.
    pub file_count: u64,
    pub total_bytes: u64,
    pub rows: u64,
    /// The fixture's name for why the partition must be refused, if it must
    /// (`unexpected_subdir`, `not_orc_file`, `not_orc`).
    pub refusal: Option<String>,
    pub params: BTreeMap<String, String>,
    /// Paths relative to the partition directory.
    pub files: Vec<FixtureFile>,
    pub hidden: Vec<FixtureFile>,
    #[serde(default)]
    pub empty_dirs: Vec<String>,
}

#[derive(Debug, Clone, serde::Deserialize)]
pub struct FixtureFile {
    pub path: String,
    pub bytes: u64,
    pub rows: Option<u64>,
}

impl Fixtures {
    pub fn table(&self, name: &str) -> &FixtureTable {
        self.tables
            .iter()
            .find(|t| t.name == name)
            .unwrap_or_else(|| panic!("fixture table {name} is not in the manifest"))
    }

    /// `db.table` as the tool prints it.
    pub fn qualified(&self, table: &str) -> String {
        format!("{}.{table}", self.database)
    }
}

impl FixtureTable {
    pub fn partition(&self, spec: &str) -> &FixturePartition {
        self.partitions
            .iter()
            .find(|p| p.spec == spec)
            .unwrap_or_else(|| panic!("{} has no fixture partition {spec}", self.name))
    }
}

impl FixturePartition {
    /// The tool's rule name for the fixture's partition-level refusal.
    pub fn rule(&self) -> Option<&'static str> {
        self.refusal.as_deref().map(|r| match r {
            "unexpected_subdir" => "subdirectories",
            "not_orc_file" => "unreadable_file",
            "not_orc" => "not_orc",
            other => panic!("unknown fixture partition refusal {other}"),
        })
    }

    /// Visible files directly in the directory (what a listing of it shows as files).
    pub fn top_level_files(&self) -> Vec<&FixtureFile> {
        self.files
            .iter()
            .filter(|f| !f.path.contains('/'))
            .collect()
    }

    /// Top-level names, sorted: (hidden ones, non-hidden directories), as one listing of the
    /// partition directory classifies them.
    pub fn top_level_names(&self) -> (Vec<String>, Vec<String>) {
        let nested = self
            .files
            .iter()
            .chain(&self.hidden)
            .map(|f| f.path.as_str());
        let firsts = nested
            .filter(|p| p.contains('/'))
            .chain(self.empty_dirs.iter().map(String::as_str))
            .map(|p| p.split('/').next().unwrap_or(p))
            .chain(
                self.hidden
                    .iter()
                    .filter(|f| !f.path.contains('/'))
                    .map(|f| f.path.as_str()),
            );
        let mut hidden = std::collections::BTreeSet::new();
        let mut dirs = std::collections::BTreeSet::new();
        for name in firsts {
            if hive_orc_compactor::hdfs::is_hidden(name) {
                hidden.insert(name.to_string());
            } else {
                dirs.insert(name.to_string());
            }
        }
        (hidden.into_iter().collect(), dirs.into_iter().collect())
    }
}

/// The fixtures `scripts/fixtures` loaded into the cluster at `HMS_URI`.
pub fn fixtures() -> Fixtures {
    fixtures_from("FIXTURES_MANIFEST")
}

pub fn fixtures_from(var: &str) -> Fixtures {
    serde_json::from_value(manifest_from(var))
        .unwrap_or_else(|e| panic!("{} is not a fixture manifest: {e}", env(var)))
}

// ---------------------------------------------------------------------------------------------
// "Nothing touched": what the metastore and HDFS hold for a table, to compare before and after.

/// A table's metastore objects (whole Thrift structs) and every directory under its location
/// and its partitions' locations (names, lengths, modification times, owners, permissions).
#[derive(Debug, PartialEq)]
pub struct Fingerprint {
    pub table: Table,
    /// Sorted by values.
    pub partitions: Vec<Partition>,
    /// Every directory and hidden entry under the locations (`hdfs://.../path`), recursively →
    /// its own status and, for a directory, its listing.
    pub listings: BTreeMap<String, Value>,
}

impl Fingerprint {
    /// What differs from `after`, one line per metastore object or path; empty when nothing.
    pub fn differences(&self, after: &Fingerprint) -> Vec<String> {
        let mut out = vec![];
        if self.table != after.table {
            out.push(format!("table: {:?} -> {:?}", self.table, after.table));
        }
        if self.partitions.len() != after.partitions.len() {
            out.push(format!(
                "{} partitions -> {}",
                self.partitions.len(),
                after.partitions.len()
            ));
        }
        for (b, a) in self.partitions.iter().zip(&after.partitions) {
            if b != a {
                out.push(format!("partition {:?}: {b:?} -> {a:?}", b.values));
            }
        }
        let paths: std::collections::BTreeSet<&String> =
            self.listings.keys().chain(after.listings.keys()).collect();
        for path in paths {
            let (b, a) = (self.listings.get(path), after.listings.get(path));
            if b != a {
                out.push(format!("{path}: {b:?} -> {a:?}"));
            }
        }
        out
    }
}

/// Fingerprints `db.table` on the metastore at `hms_uri` (blocking; for tests without a runtime).
pub fn fingerprint(hms_uri: &str, db: &str, table: &str) -> Fingerprint {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime");
    rt.block_on(async {
        let mut cfg = MetastoreConfig::new(hms_uri).expect("a metastore URI");
        cfg.connect_timeout = Duration::from_secs(5);
        cfg.io_timeout = Duration::from_secs(60);
        let metastore = Metastore::connect(cfg)
            .await
            .unwrap_or_else(|e| panic!("connecting to {hms_uri}: {e}"));
        fingerprint_with(&metastore, &Hdfs::new(), db, table).await
    })
}

pub async fn fingerprint_with(
    metastore: &Metastore,
    hdfs: &Hdfs,
    db: &str,
    table: &str,
) -> Fingerprint {
    let t = metastore
        .get_table(db, table)
        .await
        .unwrap_or_else(|e| panic!("get_table {db}.{table}: {e}"));
    let mut partitions = metastore
        .partitions(db, table, None)
        .await
        .unwrap_or_else(|e| panic!("partitions of {db}.{table}: {e}"));
    partitions.sort_by(|a, b| a.values.cmp(&b.values));
    let roots =
        t.sd.as_ref()
            .and_then(|sd| sd.location.clone())
            .into_iter()
            .chain(
                partitions
                    .iter()
                    .filter_map(|p| p.sd.as_ref().and_then(|sd| sd.location.clone())),
            );
    let mut listings = BTreeMap::new();
    for root in roots.filter(|l| !l.is_empty()) {
        let location =
            Location::parse(&root).unwrap_or_else(|e| panic!("{db}.{table} location: {e}"));
        list_recursively(hdfs, location, &mut listings).await;
    }
    Fingerprint {
        table: t,
        partitions,
        listings,
    }
}

/// One partition's metastore object and everything under its directory, listed as
/// [`Fingerprint`] lists a table: to check that a run left one partition alone while tests on
/// other partitions of the same table change theirs.
pub async fn partition_fingerprint(
    metastore: &Metastore,
    hdfs: &Hdfs,
    db: &str,
    table: &str,
    values: &[String],
    location: &str,
) -> (Partition, BTreeMap<String, Value>) {
    let partition = metastore
        .get_partition_by_values(db, table, values)
        .await
        .unwrap_or_else(|e| panic!("partition {db}.{table} {values:?}: {e}"));
    let mut listings = BTreeMap::new();
    let dir = Location::parse(location).unwrap_or_else(|e| panic!("{location}: {e}"));
    list_recursively(hdfs, dir, &mut listings).await;
    (partition, listings)
}

async fn list_recursively(hdfs: &Hdfs, dir: Location, out: &mut BTreeMap<String, Value>) {
    let mut pending = vec![dir];
    while let Some(path) = pending.pop() {
        let key = path.to_string();
        if out.contains_key(&key) {
            continue;
        }
        let client = hdfs
            .client(&path)
            .unwrap_or_else(|e| panic!("HDFS client for {key}: {e}"));
        // The entry's own status (a directory's modification time changes with its entries);
        // not its access time, which reads may move.
        let status = match client.get_file_info(&path.path).await {
            Ok(s) => s,
            Err(hdfs_native::HdfsError::FileNotFound(_)) => {
                out.insert(key, Value::Null);
                continue;
            }
            Err(e) => panic!("status of {key}: {e}"),
        };
        let mut entry = serde_json::json!({
            "isdir": status.isdir,
            "length": status.length,
            "modification_time": status.modification_time,
            "owner": status.owner,
            "group": status.group,
            "permission": status.permission,
        });
        if status.isdir {
            let listing = hdfs
                .list(&path)
                .await
                .unwrap_or_else(|e| panic!("listing {key}: {e}"))
                .unwrap_or_else(|| panic!("{key} vanished while being listed"));
            // Hidden names may be files or directories: their own statuses say which.
            let children = listing.subdirs.iter().chain(&listing.hidden);
            pending.extend(children.map(|name| path.child(name)));
            entry["listing"] = serde_json::to_value(&listing).expect("a listing serialises");
        }
        out.insert(key, entry);
    }
}

// ---------------------------------------------------------------------------------------------
// Fleet tests (tests/fleet.rs): a database of the test's own, written by scripts/fixtures, for
// tests that change what they compact (the shared `fixtures` database is read-only).

/// A fixture database made for one test from `sets`; dropped when the value drops.
pub struct OwnDatabase {
    pub fixtures: Fixtures,
}

impl OwnDatabase {
    /// `name` must be unique among the tests running at once.
    pub fn create(name: &str, sets: &str) -> OwnDatabase {
        let manifest = std::env::temp_dir().join(format!("hoc-{name}-{}.json", std::process::id()));
        let script = concat!(env!("CARGO_MANIFEST_DIR"), "/scripts/fixtures");
        let out = Command::new(script)
            .args(["--db", name, "--set", sets, "--quiet", "--manifest"])
            .arg(&manifest)
            .output()
            .expect("scripts/fixtures runs");
        assert!(
            out.status.success(),
            "scripts/fixtures --db {name} --set {sets}: {}",
            stderr(&out)
        );
        let text = std::fs::read_to_string(&manifest).expect("the manifest was written");
        let _ = std::fs::remove_file(&manifest);
        OwnDatabase {
            fixtures: serde_json::from_str(&text).expect("a fixture manifest"),
        }
    }
}

impl Drop for OwnDatabase {
    fn drop(&mut self) {
        let script = concat!(env!("CARGO_MANIFEST_DIR"), "/scripts/fixtures");
        let _ = Command::new(script)
            .args(["--drop", "--db", &self.fixtures.database])
            .output();
    }
}

// ---------------------------------------------------------------------------------------------
// Metastore objects as a client creates them: the given parts, every other field unset. Never
// `Default::default()`, whose generated defaults ("" catalog, write id 0) the server acts on.

pub fn external_table(
    db: &str,
    name: &str,
    owner: &str,
    sd: StorageDescriptor,
    partition_keys: Vec<FieldSchema>,
    parameters: BTreeMap<String, String>,
) -> Table {
    Table {
        table_name: Some(name.into()),
        db_name: Some(db.into()),
        owner: Some(owner.into()),
        create_time: Some(0),
        last_access_time: Some(0),
        retention: Some(0),
        sd: Some(sd),
        partition_keys: Some(partition_keys),
        parameters: Some(parameters),
        view_original_text: None,
        view_expanded_text: None,
        table_type: Some("EXTERNAL_TABLE".into()),
        privileges: None,
        temporary: None,
        rewrite_enabled: None,
        creation_metadata: None,
        cat_name: None,
        owner_type: Some(PrincipalType::USER),
        write_id: None,
        is_stats_compliant: None,
        col_stats: None,
        access_type: None,
        required_read_capabilities: None,
        required_write_capabilities: None,
        id: None,
        file_metadata: None,
        dictionary: None,
        txn_id: None,
    }
}

pub fn new_partition(
    db: &str,
    table: &str,
    values: &[&str],
    sd: StorageDescriptor,
    parameters: BTreeMap<String, String>,
) -> Partition {
    Partition {
        values: Some(values.iter().map(|v| v.to_string()).collect()),
        db_name: Some(db.into()),
        table_name: Some(table.into()),
        create_time: Some(0),
        last_access_time: Some(0),
        sd: Some(sd),
        parameters: Some(parameters),
        privileges: None,
        cat_name: None,
        write_id: None,
        is_stats_compliant: None,
        col_stats: None,
        file_metadata: None,
    }
}

pub fn database(name: &str, location: &str, owner: &str, description: Option<&str>) -> Database {
    Database {
        name: Some(name.into()),
        description: description.map(Into::into),
        location_uri: Some(location.into()),
        parameters: Some(BTreeMap::new()),
        privileges: None,
        owner_name: Some(owner.into()),
        owner_type: Some(PrincipalType::USER),
        catalog_name: None,
        create_time: None,
        managed_location_uri: None,
        type_: None,
        connector_name: None,
        remote_dbname: None,
    }
}
