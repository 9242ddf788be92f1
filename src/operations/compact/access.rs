//! New files and directories keep who may read and change the old ones.

use crate::hdfs::{Access, Hdfs, Location, NotKept};

/// Gives each new path the owner, group, permission bits and ACL (default entries included) of
/// the original it stands for, as far as the user we act as may (changing the owner needs HDFS
/// superuser rights). Returns what could not be kept, for [`not_kept_warning`].
pub(super) async fn keep_access(hdfs: &Hdfs, targets: &[(&Location, &Access)]) -> Vec<NotKept> {
    let mut failed = Vec::new();
    for (target, want) in targets {
        failed.extend(hdfs.copy_access(target, want).await);
    }
    failed
}

/// One warning for everything [`keep_access`] could not keep: the data is correct either way,
/// only who may read or change it can differ.
pub(super) fn not_kept_warning(failed: &[NotKept]) -> Option<String> {
    let first = failed.first()?;
    let mut what: Vec<&str> = failed.iter().map(|f| f.what).collect();
    what.sort_unstable();
    what.dedup();
    let mut paths: Vec<&Location> = failed.iter().map(|f| &f.target).collect();
    paths.dedup();
    Some(format!(
        "could not keep the original {} on {} new path(s) (run as the table's owner, or as an \
         HDFS superuser to keep owners): {}",
        what.join(", "),
        paths.len(),
        first.error
    ))
}
