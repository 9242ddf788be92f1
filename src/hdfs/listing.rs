//! Directory listings classified the way Hive's readers see them, a path's status, and whether
//! two spellings of a directory are one.

use hdfs_native::client::FileStatus;
use hdfs_native::HdfsError;
use serde::Serialize;

use super::client::{Hdfs, Probe};
use super::error::FsError;
use super::location::Location;

/// One entry of a directory listing.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Entry {
    pub name: String,
    pub length: u64,
    /// The file's HDFS block size: how many NameNode block objects its length costs.
    pub block_size: Option<u64>,
    pub modification_time: u64,
    pub owner: String,
    pub group: String,
    pub permission: u16,
}

impl Entry {
    /// The entry named `name` of what the NameNode said of it.
    fn of(name: String, s: FileStatus) -> Entry {
        Entry {
            name,
            length: s.length as u64,
            block_size: s.blocksize,
            modification_time: s.modification_time,
            owner: s.owner,
            group: s.group,
            permission: s.permission,
        }
    }
}

/// A partition directory as Hive's readers see it.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Listing {
    /// Non-hidden files: what queries read.
    pub files: Vec<Entry>,
    /// Names starting with `.` or `_` (`_SUCCESS`, `.hive-staging*`): every engine skips them.
    pub hidden: Vec<String>,
    /// Non-hidden subdirectories: not part of a plain partition; the tool will not touch them.
    pub subdirs: Vec<String>,
}

/// Hive, Spark, Trino and Impala all skip these names when they list a partition.
pub fn is_hidden(name: &str) -> bool {
    name.starts_with('.') || name.starts_with('_')
}

impl Hdfs {
    /// Whether `a` is the directory `b` or lies below it, on the filesystem as it is, not as
    /// spelled: `hdfs://nn1:8020/x`, `hdfs://ns1/x` and `hdfs://127.0.0.1:8020/x` may all be
    /// one directory. HDFS has no directory aliases other than the filesystem's name (symlinks
    /// are disabled in Hadoop 2 and later), so with equal paths only the names are in question.
    /// The NameNode's inode id would settle it, but hdfs-native does not expose it, so (with
    /// [`Probe::Allowed`]) a hidden empty marker is created in `a` through `a`'s name and looked
    /// for through `b`'s, then removed; the answer is remembered per pair of names.
    pub async fn within(&self, a: &Location, b: &Location, probe: Probe) -> Result<bool, FsError> {
        let path_within =
            a.path == b.path || b.path == "/" || a.path.starts_with(&format!("{}/", b.path));
        if !path_within {
            return Ok(false);
        }
        if a.fs == b.fs {
            return Ok(true);
        }
        let key = if a.fs < b.fs {
            (a.fs.clone(), b.fs.clone())
        } else {
            (b.fs.clone(), a.fs.clone())
        };
        if let Some(&same) = self
            .namespaces
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&key)
        {
            return Ok(same);
        }
        if probe == Probe::ReadOnly {
            return Ok(true);
        }
        // A missing directory holds nothing to protect or to delete: no need to tell.
        if self.status(a).await?.is_none() {
            return Ok(true);
        }
        let marker = a.child(&format!(
            ".hive-orc-compactor-probe-{}",
            uuid::Uuid::new_v4().simple()
        ));
        self.create(&marker, 0o600)
            .await?
            .close()
            .await
            .map_err(Self::io("creating", &marker))?;
        let seen = Location {
            fs: b.fs.clone(),
            path: marker.path.clone(),
        };
        let same = self.status(&seen).await;
        self.delete(&marker, false).await?;
        let same = same?.is_some();
        self.namespaces
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(key, same);
        Ok(same)
    }

    /// Whether `a` and `b` are one directory (see [`Hdfs::within`]).
    pub async fn same_dir(
        &self,
        a: &Location,
        b: &Location,
        probe: Probe,
    ) -> Result<bool, FsError> {
        Ok(a.path == b.path && self.within(a, b, probe).await?)
    }

    /// The status of one path; `Ok(None)` when it does not exist.
    pub async fn status(&self, target: &Location) -> Result<Option<Entry>, FsError> {
        let client = self.client(target)?;
        match client.get_file_info(&target.path).await {
            Ok(s) => Ok(Some(Entry::of(
                target.path.rsplit('/').next().unwrap_or("").to_string(),
                s,
            ))),
            Err(HdfsError::FileNotFound(_)) => Ok(None),
            Err(e) => Err(Self::io("reading the status of", target)(e)),
        }
    }

    /// Lists a directory once. `Ok(None)` when it does not exist.
    pub async fn list(&self, dir: &Location) -> Result<Option<Listing>, FsError> {
        let client = self.client(dir)?;
        let statuses = match client.list_status(&dir.path, false).await {
            Ok(s) => s,
            Err(HdfsError::FileNotFound(_)) => return Ok(None),
            Err(error) => {
                return Err(FsError::Io {
                    op: "listing",
                    location: dir.to_string(),
                    error,
                })
            }
        };
        let mut listing = Listing::default();
        for s in statuses {
            let name = s.path.rsplit('/').next().unwrap_or(&s.path).to_string();
            if is_hidden(&name) {
                listing.hidden.push(name);
            } else if s.isdir {
                listing.subdirs.push(name);
            } else {
                listing.files.push(Entry::of(name, s));
            }
        }
        listing.files.sort_by(|a, b| a.name.cmp(&b.name));
        listing.hidden.sort();
        listing.subdirs.sort();
        Ok(Some(listing))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The answers that need no NameNode: different paths, one spelling, and a read-only
    /// caller's two spellings (counted as one directory, the answer that deletes nothing).
    #[tokio::test]
    async fn within_answers_from_the_paths_where_it_can() {
        let hdfs = Hdfs::new();
        let l = |s: &str| Location::parse(s).unwrap();
        let home = l("hdfs://nn1:8020/w/t/dt=1");
        let run = l("hdfs://nn1:8020/w/t/dt=1/.hive-orc-compactor/r");
        let other = l("hdfs://ns1/w/t/dt=1");
        assert!(hdfs.within(&run, &home, Probe::ReadOnly).await.unwrap());
        assert!(!hdfs.within(&home, &run, Probe::Allowed).await.unwrap());
        assert!(!hdfs.same_dir(&run, &home, Probe::Allowed).await.unwrap());
        assert!(!hdfs
            .within(&l("hdfs://nn1:8020/w/t/dt=10"), &home, Probe::Allowed)
            .await
            .unwrap());
        assert!(hdfs.same_dir(&other, &home, Probe::ReadOnly).await.unwrap());
    }

    #[test]
    fn hidden_names() {
        assert!(is_hidden("_SUCCESS"));
        assert!(is_hidden(".hive-staging_hive_2026"));
        assert!(!is_hidden("000000_0"));
        assert!(!is_hidden("part-00000.orc"));
    }
}
