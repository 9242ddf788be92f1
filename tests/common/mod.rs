//! Shared by the integration tests: the running cluster's addresses, the fixture manifest that
//! `scripts/fixtures` wrote, and a way to run the real binary.
//!
//! These tests need the real services `scripts/test` starts. Without them they fail loudly
//! rather than pass vacuously.

#![allow(dead_code)] // each test file uses its own subset

use std::process::{Command, Output};

use serde_json::Value;

pub fn env(name: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| {
        panic!(
            "{name} is not set: these tests need the local cluster; run them with scripts/test \
             (or `eval \"$(scripts/cluster env)\"` and scripts/fixtures first)"
        )
    })
}

/// The fixture manifest `scripts/fixtures` wrote for the cluster at `HMS_URI`.
pub fn manifest() -> Value {
    manifest_from("FIXTURES_MANIFEST")
}

pub fn manifest_from(var: &str) -> Value {
    let path = env(var);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// Runs the tool against the metastore at `hms_uri`, with no other configuration leaking in
/// from the environment.
pub fn run_against(hms_uri: &str, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_hive-orc-compactor"))
        .args(args)
        .env_remove("HIVE_CONF_DIR")
        .env("HMS_URI", hms_uri)
        .output()
        .expect("the binary runs")
}

pub fn run(args: &[&str]) -> Output {
    run_against(&env("HMS_URI"), args)
}

pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

pub fn json(o: &Output) -> Value {
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| {
        panic!(
            "stdout is not one JSON object ({e}):\n{}\nstderr:\n{}",
            stdout(o),
            stderr(o)
        )
    })
}
