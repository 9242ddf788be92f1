//! What `cleanup` is told.

use std::time::Duration;

use crate::hdfs::Location;
use crate::lock::LockOptions;

#[derive(Debug, Clone)]
pub struct CleanupOptions {
    /// Journals younger than this are kept (engines' metadata caches may still read old files).
    pub older_than: Duration,
    /// Staging and unreferenced run directories younger than this may belong to a live run.
    pub staging_older_than: Duration,
    /// The cache of binaries `compact --on-yarn` ships (`binary_cache`).
    pub binaries: Location,
    /// Cached binaries no run used for this long go.
    pub binaries_older_than: Duration,
    pub trash: bool,
    pub adopt_late_files: bool,
    /// Remove late files instead of listing them (never together with `adopt_late_files`).
    pub discard_late_files: bool,
    /// Bring partitions whose run's inputs are gone back to their canonical directory.
    pub rehome: bool,
    pub dry_run: bool,
    /// The lock taken on each partition before acting on it.
    pub lock: LockOptions,
}
