//! The integration tests, one binary with a module per area (what `tests/common` used to be
//! compiled into 21 times is now compiled and linked once).
//!
//! Without the `cluster-tests` feature only `docs` is here: what needs nothing running (links,
//! anchors, lengths); its test of the guides' command lines is ignored with a reason that says
//! how to run the cluster suite. With it, every area runs against the local clusters
//! `scripts/test` starts, as the real binary, checked by independent readers.
//!
//! The areas share this process, its threads and `common`'s once-made values (the HDFS client,
//! the tokio runtime): each makes databases named after itself, so none collides with another.
//! Five areas cannot share it and skip themselves unless `HOC_TEST_ALONE` names them
//! ([`common::alone`]): the fault areas stop and restart services every other test needs, and
//! the secured cluster's areas set this process's Kerberos login and HADOOP_CONF_DIR, which
//! would reach every other test (and the login is set once: `kerberos` and `tokens` log in as
//! the test client, `secure_yarn` as the YARN user). `scripts/test` runs each of them in a
//! process of its own after the others.

pub mod common;

mod docs;

#[cfg(feature = "cluster-tests")]
mod clustering;
#[cfg(feature = "cluster-tests")]
mod compact;
#[cfg(feature = "cluster-tests")]
mod fleet;
#[cfg(feature = "cluster-tests")]
mod hdfs_faults;
#[cfg(feature = "cluster-tests")]
mod iceberg;
#[cfg(feature = "cluster-tests")]
mod inspect;
#[cfg(feature = "cluster-tests")]
mod kerberos;
#[cfg(feature = "cluster-tests")]
mod locks;
#[cfg(feature = "cluster-tests")]
mod metastore;
#[cfg(feature = "cluster-tests")]
mod metastore_faults;
#[cfg(feature = "cluster-tests")]
mod orc_merge;
#[cfg(feature = "cluster-tests")]
mod permissions;
#[cfg(feature = "cluster-tests")]
mod production_hdfs;
#[cfg(feature = "cluster-tests")]
mod read_ahead;
#[cfg(feature = "cluster-tests")]
mod rewrite;
#[cfg(feature = "cluster-tests")]
mod safety;
#[cfg(feature = "cluster-tests")]
mod secure_yarn;
#[cfg(feature = "cluster-tests")]
mod spark;
#[cfg(feature = "cluster-tests")]
mod tokens;
#[cfg(feature = "cluster-tests")]
mod undo;
#[cfg(feature = "cluster-tests")]
mod yarn;
