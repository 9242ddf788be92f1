//! "Nothing touched": what the metastore and HDFS hold for a table or a partition, to compare
//! before and after.

use std::collections::BTreeMap;

use hive_orc_compactor::hdfs::{Hdfs, Location};
use hive_orc_compactor::metastore::{Metastore, Partition, Table};
use serde_json::Value;

use super::{metastore, rt};

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

/// Fingerprints `db.table` on the metastore at `hms_uri` (blocking).
pub fn fingerprint(hms_uri: &str, db: &str, table: &str) -> Fingerprint {
    rt().block_on(async {
        let metastore = metastore::connect(hms_uri).await;
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
