//! The sweep of `compact --on-yarn`'s binary cache: planned from one listing, done from a
//! fresh one.

use super::delete::remove;
use super::options::CleanupOptions;
use super::report::BinariesCleanup;
use crate::binary_cache;
use crate::hdfs::{Hdfs, Location};

/// Lists the binary cache and decides what goes; reads only.
pub(super) async fn sweep_binaries(hdfs: &Hdfs, options: &CleanupOptions) -> BinariesCleanup {
    let dir = &options.binaries;
    let mut out = BinariesCleanup {
        dir: dir.to_string(),
        ..BinariesCleanup::default()
    };
    let files = match hdfs.list(dir).await {
        Ok(listing) => listing.map(|l| l.files).unwrap_or_default(),
        Err(e) => {
            out.error = Some(format!("{e}; the cached binaries stay (check --yarn-dir)"));
            return out;
        }
    };
    let now = chrono::Utc::now().timestamp_millis() as u64;
    let sweep = binary_cache::sweep(&files, now, options.binaries_older_than);
    out.removed = sweep
        .remove
        .iter()
        .map(|n| dir.child(n).to_string())
        .collect();
    out.kept = sweep
        .keep
        .iter()
        .map(|n| dir.child(n).to_string())
        .collect();
    out
}

/// Removes what a fresh look at the binary cache finds unused for the retention: a run may
/// have reused a binary since the plan was made.
pub(super) async fn execute_binaries(hdfs: &Hdfs, options: &CleanupOptions) -> BinariesCleanup {
    let mut out = sweep_binaries(hdfs, options).await;
    let mut removed = vec![];
    for target in std::mem::take(&mut out.removed) {
        let done = match Location::parse(&target) {
            Ok(t) => remove(hdfs, &t, options.trash, &mut out.trashed_to).await,
            Err(e) => Err(e.into()),
        };
        match done {
            Ok(()) => removed.push(target),
            Err(e) => {
                out.error = Some(format!("{e:#}; run cleanup again"));
                break;
            }
        }
    }
    out.removed = removed;
    out
}
