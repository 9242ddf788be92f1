//! The fault commands of `scripts/cluster` (`datanode`, `namenode`, `metastore-db`, `hms`), run
//! on the cluster `CLUSTER_DIR` names, as `scripts/test` exports it.

use std::process::{Command, Output};

use super::{repo, stderr, stdout};

/// `scripts/cluster ARGS`, whatever it answers.
pub fn try_run(args: &[&str]) -> Output {
    Command::new(repo().join("scripts/cluster"))
        .args(args)
        .output()
        .expect("scripts/cluster runs")
}

/// `scripts/cluster ARGS`, which must succeed: its stdout; its line on stderr (what it did) is
/// printed.
pub fn run(args: &[&str]) -> String {
    let out = try_run(args);
    assert!(
        out.status.success(),
        "scripts/cluster {args:?}: {}",
        stderr(&out)
    );
    eprint!("{}", stderr(&out));
    stdout(&out)
}
