//! HDFS as the tests read and write it, blocking, through the library's client.

use std::collections::BTreeMap;
use std::sync::OnceLock;

use hive_orc_compactor::hdfs::{Hdfs, Location};
use serde_json::Value;

use super::{rt, WORK_DIR};

/// The client of the user running the tests (the cluster's superuser).
pub fn hdfs() -> &'static Hdfs {
    static HDFS: OnceLock<Hdfs> = OnceLock::new();
    HDFS.get_or_init(Hdfs::new)
}

pub fn loc(s: &str) -> Location {
    Location::parse(s).unwrap_or_else(|e| panic!("{s}: {e}"))
}

/// Every directory under `root` (itself included) → its listing, recursively; hidden entries
/// and subdirectories included. With `skip_work`, our work directory's subtree is left out
/// and its name removed from the hidden names.
pub fn tree(root: &str, skip_work: bool) -> BTreeMap<String, Value> {
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

/// The visible files directly in `dir`: (name, length); `dir` must exist.
pub fn files_in(dir: &str) -> Vec<(String, u64)> {
    rt().block_on(async {
        let l = hdfs()
            .list(&loc(dir))
            .await
            .unwrap_or_else(|e| panic!("listing {dir}: {e}"))
            .unwrap_or_else(|| panic!("{dir} does not exist"));
        l.files.into_iter().map(|e| (e.name, e.length)).collect()
    })
}

/// (file names, directory names) directly in `dir`; empty when it does not exist.
pub fn list(dir: &str) -> (Vec<String>, Vec<String>) {
    match rt()
        .block_on(hdfs().list(&loc(dir)))
        .unwrap_or_else(|e| panic!("listing {dir}: {e}"))
    {
        Some(l) => (l.files.into_iter().map(|f| f.name).collect(), l.subdirs),
        None => (vec![], vec![]),
    }
}

/// Names in `<home>/.hive-orc-compactor` (empty when it does not exist).
pub fn work_entries(home: &str) -> Vec<String> {
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

pub fn exists(path: &str) -> bool {
    rt().block_on(hdfs().status(&loc(path)))
        .unwrap_or_else(|e| panic!("status of {path}: {e}"))
        .is_some()
}

pub fn read_file(path: &str) -> Vec<u8> {
    rt().block_on(async {
        let r = hdfs()
            .open(&loc(path))
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        let len = r.file_length();
        r.read_range(0, len).await.expect("read").to_vec()
    })
}

pub fn write_file(path: &str, bytes: Vec<u8>) {
    rt().block_on(async {
        let mut w = hdfs()
            .create(&loc(path), 0o644)
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        w.write_bytes(bytes.into()).await.expect("write");
        w.close().await.expect("close");
    })
}

/// Copies `from` to a new file `to` (new name, new modification time): a late writer.
pub fn copy(from: &str, to: &str) {
    write_file(to, read_file(from));
}
