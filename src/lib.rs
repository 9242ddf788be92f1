//! hive-orc-compactor: the engine. It knows nothing of command-line flags; `main.rs` is a thin
//! layer over it.

pub mod binary_cache;
pub mod census;
pub mod config;
pub mod eligibility;
pub mod exit;
pub mod fleet;
pub mod hdfs;
pub mod iceberg;
pub mod journal;
pub mod kerberos;
pub mod local;
pub mod lock;
pub mod metastore;
pub mod operations;
pub mod orc;
pub mod partition_spec;
pub mod relocate;
pub mod resolve;
pub mod run_dirs;
pub mod snapshot;
pub mod table;
pub mod textfile;
pub mod yarn;
