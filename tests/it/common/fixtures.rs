//! The fixture tables `scripts/fixtures` loads, as its JSON manifest describes them (see
//! scripts/harness/fixtures/README.md for the format), and databases of a test area's own.

use std::collections::BTreeMap;
use std::process::Command;
use std::time::Instant;

use serde_json::Value;

use super::{env, repo, stderr};

/// The fixture manifest `scripts/fixtures` wrote for the cluster at `HMS_URI`.
pub fn manifest() -> Value {
    manifest_from("FIXTURES_MANIFEST")
}

pub fn manifest_from(var: &str) -> Value {
    let path = env(var);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{path}: {e}"))
}

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

/// Loads `sets` into the database `db` (dropped and made again) on the cluster at (`hms_uri`,
/// `hdfs_url`) and returns its manifest.
pub fn load(db: &str, sets: &str, hms_uri: &str, hdfs_url: &str) -> Fixtures {
    let manifest = std::env::temp_dir().join(format!("hoc-{db}-{}.json", std::process::id()));
    let t0 = Instant::now();
    let mut cmd = Command::new(repo().join("scripts/fixtures"));
    cmd.args(["--db", db, "--set", sets, "--quiet", "--manifest"])
        .arg(&manifest)
        .env("HMS_URI", hms_uri)
        .env("HDFS_URL", hdfs_url)
        .env_remove("HIVE_CONF_DIR");
    // A cluster of profiles (HA, viewfs, KMS) is reached through its client configuration:
    // its URL names a nameservice or a mount table. Otherwise the URL alone says where.
    if std::env::var("CLUSTER_PROFILES").map_or(true, |p| p.is_empty()) {
        cmd.env_remove("HADOOP_CONF_DIR");
    }
    // With a KMS configured, Hadoop's KMS client (which the ORC writer asks for keys) loads
    // BouncyCastle, which the fixture writer's class path lacks: the cluster names its jar.
    if let Ok(jar) = std::env::var("CLUSTER_BCPROV_JAR") {
        let opts = std::env::var("FIXTURES_JAVA_OPTS").unwrap_or_default();
        cmd.env(
            "FIXTURES_JAVA_OPTS",
            format!("{opts} -Xbootclasspath/a:{jar}").trim(),
        );
    }
    let out = cmd.output().expect("scripts/fixtures runs");
    assert!(
        out.status.success(),
        "scripts/fixtures --db {db} --set {sets} failed:\n{}",
        stderr(&out)
    );
    let text = std::fs::read_to_string(&manifest).expect("the manifest was written");
    let _ = std::fs::remove_file(&manifest);
    eprintln!(
        "fixtures {db} ({sets}) loaded in {:.1}s",
        t0.elapsed().as_secs_f64()
    );
    serde_json::from_str(&text).expect("a fixture manifest")
}

/// A fixture database on the cluster at `HMS_URI`, for tests that change what they compact (the
/// shared `fixtures` database is read-only); dropped when the value drops.
pub struct OwnDatabase {
    pub fixtures: Fixtures,
}

impl OwnDatabase {
    /// `name` must be unique among the tests running at once.
    pub fn create(name: &str, sets: &str) -> OwnDatabase {
        OwnDatabase {
            fixtures: load(name, sets, &env("HMS_URI"), &env("HDFS_URL")),
        }
    }
}

impl Drop for OwnDatabase {
    fn drop(&mut self) {
        let _ = Command::new(repo().join("scripts/fixtures"))
            .args(["--drop", "--db", &self.fixtures.database])
            .output();
    }
}

/// A database of a test area's own, made once from `sets` (`name`, the area's, gets the process
/// id): the tests of one area use different partitions of it.
pub fn own_database(
    cell: &'static std::sync::OnceLock<OwnDatabase>,
    name: &str,
    sets: &str,
) -> &'static OwnDatabase {
    cell.get_or_init(|| OwnDatabase::create(&format!("{name}_{}", std::process::id()), sets))
}
