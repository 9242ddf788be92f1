//! In-memory directories: the double of [`Files`] for unit tests, whose calls can be made to
//! fail and whose directories can change while a test runs.

use std::collections::BTreeMap;
use std::io;
use std::sync::Mutex;

use bytes::Bytes;
use futures::{Stream, TryStreamExt};
use hdfs_native::HdfsError;

use super::error::FsError;
use super::files::Files;
use super::listing::{Entry, Listing};
use super::location::Location;

#[derive(Default)]
pub struct MemFiles {
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    /// Directories by location, and the files in them.
    dirs: BTreeMap<String, Listing>,
    /// What [`Files::write_new`] wrote, by location.
    written: BTreeMap<String, Bytes>,
    /// Calls that fail: (`list`, `delete` or `write`, location).
    failing: Vec<(&'static str, String)>,
    /// Files that appear in a directory after its n-th listing: (directory, n, name).
    appearing: Vec<(String, usize, String)>,
    lists: BTreeMap<String, usize>,
    /// Every call, as `list <location>`, `delete <location>` or `write <location>`.
    calls: Vec<String>,
}

fn entry(name: &str, length: u64) -> Entry {
    Entry {
        name: name.into(),
        length,
        block_size: Some(128 << 20),
        modification_time: 1,
        owner: "hive".into(),
        group: "hive".into(),
        permission: 0o644,
    }
}

fn parent(location: &Location) -> (String, &str) {
    let (dir, name) = location
        .path
        .rsplit_once('/')
        .unwrap_or(("", &location.path));
    (format!("{}{dir}", location.fs), name)
}

impl MemFiles {
    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap()
    }

    pub fn mkdir(&self, dir: &Location) {
        self.state().dirs.entry(dir.to_string()).or_default();
    }

    /// A file of `length` bytes in `dir`.
    pub fn add_file(&self, dir: &Location, name: &str, length: u64) {
        let mut state = self.state();
        let listing = state.dirs.entry(dir.to_string()).or_default();
        listing.files.push(entry(name, length));
    }

    /// A file `name` appears in `dir` once it was listed `after` times.
    pub fn appears(&self, dir: &Location, after: usize, name: &str) {
        let appearing = (dir.to_string(), after, name.to_string());
        self.state().appearing.push(appearing);
    }

    /// Every `op` (`list`, `delete` or `write`) of `target`, or of anything in it, fails.
    pub fn fail(&self, op: &'static str, target: &Location) {
        self.state().failing.push((op, target.to_string()));
    }

    pub fn exists(&self, dir: &Location) -> bool {
        self.state().dirs.contains_key(&dir.to_string())
    }

    pub fn written(&self, file: &Location) -> Option<Bytes> {
        self.state().written.get(&file.to_string()).cloned()
    }

    pub fn calls(&self) -> Vec<String> {
        self.state().calls.clone()
    }

    /// The call `op` on `target`, logged; an error if it was made to fail.
    fn call(&self, op: &'static str, target: &Location) -> Result<(), FsError> {
        let mut state = self.state();
        state.calls.push(format!("{op} {target}"));
        let target_path = target.to_string();
        let under =
            |dir: &String| target_path == *dir || target_path.starts_with(&format!("{dir}/"));
        if state.failing.iter().any(|(o, dir)| *o == op && under(dir)) {
            return Err(FsError::Io {
                op,
                location: target.to_string(),
                error: HdfsError::IOError(io::Error::other("injected")),
            });
        }
        Ok(())
    }
}

impl Files for MemFiles {
    async fn list(&self, dir: &Location) -> Result<Option<Listing>, FsError> {
        self.call("list", dir)?;
        let mut state = self.state();
        let key = dir.to_string();
        let n = *state
            .lists
            .entry(key.clone())
            .and_modify(|n| *n += 1)
            .or_insert(1);
        let due: Vec<String> = state
            .appearing
            .iter()
            .filter(|(d, after, _)| *d == key && n > *after)
            .map(|(_, _, name)| name.clone())
            .collect();
        state
            .appearing
            .retain(|(d, after, _)| !(*d == key && n > *after));
        if let Some(listing) = state.dirs.get_mut(&key) {
            listing.files.extend(due.iter().map(|name| entry(name, 1)));
        }
        Ok(state.dirs.get(&key).cloned())
    }

    async fn delete(&self, target: &Location, recursive: bool) -> Result<bool, FsError> {
        self.call("delete", target)?;
        let mut state = self.state();
        let key = target.to_string();
        let below = |k: &String| k.starts_with(&format!("{key}/"));
        let holds_something = state.written.keys().any(below)
            || state.dirs.keys().any(below)
            || state.dirs.get(&key).is_some_and(|l| {
                !(l.files.is_empty() && l.subdirs.is_empty() && l.hidden.is_empty())
            });
        // As HDFS: a non-recursive delete of a directory that holds anything fails.
        if !recursive && holds_something {
            return Err(FsError::Io {
                op: "delete",
                location: key,
                error: HdfsError::RPCError(
                    "org.apache.hadoop.fs.PathIsNotEmptyDirectoryException".into(),
                    "directory is not empty".into(),
                ),
            });
        }
        let inside = |k: &String| *k == key || below(k);
        let existed = state.dirs.keys().any(inside) || state.written.keys().any(inside);
        state.dirs.retain(|k, _| !inside(k));
        state.written.retain(|k, _| !inside(k));
        Ok(existed)
    }

    async fn write_new(
        &self,
        file: &Location,
        chunks: impl Stream<Item = io::Result<Bytes>> + Send,
        _permission: u16,
    ) -> anyhow::Result<()> {
        self.call("write", file)?;
        let chunks: Vec<Bytes> = chunks.try_collect().await?;
        let bytes = Bytes::from(chunks.concat());
        let mut state = self.state();
        let (dir, name) = parent(file);
        let length = bytes.len() as u64;
        if state.written.insert(file.to_string(), bytes).is_some() {
            anyhow::bail!("{file} exists");
        }
        state
            .dirs
            .entry(dir)
            .or_default()
            .files
            .push(entry(name, length));
        Ok(())
    }
}
