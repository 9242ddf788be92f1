//! Shared by the integration tests: the running cluster's addresses, the fixture manifest that
//! `scripts/fixtures` wrote, a way to run the real binary, and the readers that check what it
//! did (HDFS, the metastore, Java orc-tools, ORC C++, Spark).
//!
//! These tests need the real services `scripts/test` starts. Without them they fail loudly
//! rather than pass vacuously.
//!
//! The test binary declares `pub mod common;`: its areas each use a part of it, and public
//! items of a public module are not dead code.

pub mod cluster;
pub mod compaction;
pub mod events;
pub mod failpoints;
pub mod fingerprint;
pub mod fixtures;
pub mod hdfs;
pub mod metastore;
pub mod objects;
pub mod orc_tools;
pub mod partition;
pub mod proxy;
pub mod pyorc;
pub mod secure;
pub mod spark;
pub mod stats;
pub mod tool;

pub use fingerprint::{fingerprint, partition_fingerprint, Fingerprint};
pub use fixtures::{
    fixtures, fixtures_from, manifest, own_database, FixtureFile, FixturePartition, FixtureTable,
    Fixtures, OwnDatabase,
};
pub use objects::{database, external_table, new_partition};
pub use tool::{
    binary, code, command, describe, json, reports, run, run_against, run_many, stderr, stdout,
};

/// The tool's hidden work directory inside a partition's home.
pub const WORK_DIR: &str = ".hive-orc-compactor";
/// The partition parameters a swap sets: where the partition was, and which run moved it.
pub const PREVIOUS_LOCATION: &str = "hive-orc-compactor.previous-location";
pub const RUN_ID: &str = "hive-orc-compactor.run-id";

pub fn env(name: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| {
        panic!(
            "{name} is not set: these tests need the local cluster; run them with scripts/test \
             (or `eval \"$(scripts/cluster env)\"` and scripts/fixtures first)"
        )
    })
}

/// Whether this process runs one of `areas` alone, as `scripts/test` runs the areas that cannot
/// share a process with the others (`HOC_TEST_ALONE=area`: see tests/it/main.rs); says why a
/// test skips when not.
pub fn alone(areas: &[&str]) -> bool {
    let alone = std::env::var("HOC_TEST_ALONE").is_ok_and(|a| areas.contains(&a.as_str()));
    if !alone {
        let area = areas[0];
        eprintln!(
            "skipped: {} run(s) in a process of their own (scripts/test does that: \
             HOC_TEST_ALONE={area} cargo test --features cluster-tests --test it {area}::)",
            areas.join(", ")
        );
    }
    alone
}

/// One tokio runtime for the test binary, for the library's async calls.
pub fn rt() -> &'static tokio::runtime::Runtime {
    static RT: std::sync::OnceLock<tokio::runtime::Runtime> = std::sync::OnceLock::new();
    RT.get_or_init(|| {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("a tokio runtime")
    })
}

/// A TCP port on 127.0.0.1 that nothing listens on (free when this returns).
pub fn free_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
    listener.local_addr().expect("local address").port()
}

/// The repository's root, where `scripts/` is.
pub fn repo() -> &'static std::path::Path {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
}
