//! HDFS access through hdfs-native: locations as the metastore stores them, one client per
//! namespace, and directory listings classified the way Hive's readers see them.
//!
//! Rooms: `client` (the client of each namespace and the configuration it is built with),
//! `location` (locations and their parents), `error` (failed calls in one line, and whether they
//! may have happened), `listing` (listings, statuses, one directory under two names), `paths`
//! (create, rename, trash, delete, and the ORC engine's reader and sink), `access` (owner,
//! group, permission, ACL), `redundancy` (replicated or erasure coded), `files` (the seam of
//! a compaction's last calls; its in-memory double is `fake`) and `tasks` (hdfs-native's calls,
//! each run as a task of its own, so that none can hold hdfs-native's locks unpolled).

mod access;
mod client;
mod error;
#[cfg(test)]
pub(crate) mod fake;
mod files;
mod listing;
mod location;
mod paths;
mod redundancy;
mod tasks;

pub use access::{same_acl, Access, NotKept};
pub use client::{hadoop_user, observer_overrides, Hdfs, Probe};
pub use error::FsError;
pub use files::Files;
pub use listing::{is_hidden, Entry, Listing};
pub use location::Location;
pub use redundancy::{redundancy_of, Redundancy};
pub use tasks::{Client, Reader, Writer};
