//! The integration tests, one binary with a module per area (ripgrep's tests/tests.rs): the
//! shared `common` is compiled once and the tests linked once, where each of 22 binaries used
//! to compile and link its own.
//!
//! Without the `cluster-tests` feature only `docs` is here: what needs nothing running (links,
//! anchors, lengths); its test of the guides' command lines is ignored with a reason that says
//! how to run the cluster suite. With it, every area runs against the local clusters
//! `scripts/test` starts, as the real binary, checked by independent readers.
//!
//! The areas share this process, its threads and `common`'s once-made values (the HDFS client,
//! the tokio runtime): each makes databases named after itself, so none collides with another.
//! Seven areas cannot share it and skip themselves unless `HOC_TEST_ALONE` names them
//! ([`common::alone`]): the fault areas stop and restart services every other test needs,
//! `read_ahead` loads the DataNodes with writers as no other test does (see its page), `meter`
//! compares the tool's metastore calls with the metastore's count of all calls, and
//! the secured cluster's areas set this process's Kerberos login and HADOOP_CONF_DIR, which
//! would reach every other test (and the login is set once: `kerberos` and `tokens` log in as
//! the test client, `secure_yarn` as the YARN user; `tokens` restarts the secured metastore).
//! `scripts/test` runs each of them in a process of its own, beside the others: the fault
//! areas, `read_ahead` and `meter` on a cluster of their own. `yarn` runs so too: its jobs take
//! turns on the one YARN, and a test waiting its turn in this process held one of its threads
//! idle.

pub mod common;

mod docs;

// Each of these says `#![cfg(feature = "cluster-tests")]`: it needs the local clusters.
mod autopilot;
mod batch;
mod census_page;
mod clustering;
mod compact;
mod events;
mod fleet;
mod hdfs_faults;
mod iceberg;
mod inspect;
mod kerberos;
mod locks;
mod metastore;
mod metastore_faults;
mod meter;
mod metrics_file;
mod orc_merge;
mod permissions;
mod production_hdfs;
mod read_ahead;
mod rewrite;
mod safety;
mod secure_yarn;
mod spark;
mod tokens;
mod undo;
mod yarn;
