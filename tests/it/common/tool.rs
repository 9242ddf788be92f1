//! Running the real binary and reading what it printed.

use std::collections::BTreeMap;
use std::process::{Command, Output};

use serde_json::Value;

use super::env;

/// Runs the tool against the metastore at `hms_uri`, with no other configuration leaking in
/// from the environment.
pub fn run_against(hms_uri: &str, args: &[&str]) -> Output {
    command(hms_uri)
        .args(args)
        .output()
        .expect("the binary runs")
}

/// The binary under test.
pub fn binary() -> &'static str {
    env!("CARGO_BIN_EXE_hive-orc-compactor")
}

pub fn run(args: &[&str]) -> Output {
    run_against(&env("HMS_URI"), args)
}

/// The binary, set to talk to the metastore at `hms_uri` only: for runs that need more than
/// [`run_against`] (failpoints, a child to kill).
///
/// Compactions copy stripes unless a test passes `--stripes`: most tests check what only a
/// stripe copy keeps (every stripe's checksum, the inputs' stripe counts), and the protocol
/// they test is the same path whichever way outputs are made; tests/rewrite.rs passes
/// `--stripes auto` or `rewrite`.
pub fn command(hms_uri: &str) -> Command {
    let mut c = Command::new(binary());
    c.env_remove("HIVE_CONF_DIR")
        .env("HMS_URI", hms_uri)
        .env("HOC_STRIPES", "copy");
    c
}

/// Runs the tool once per argument list against `hms_uri`, a few at a time, and returns the
/// outputs in the order of `cases`.
pub fn run_many(hms_uri: &str, cases: &[Vec<String>]) -> Vec<Output> {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Mutex;

    let workers = std::thread::available_parallelism()
        .map_or(4, |n| n.get() * 2)
        .clamp(4, 12)
        .min(cases.len().max(1));
    let next = AtomicUsize::new(0);
    let outputs: Vec<Mutex<Option<Output>>> = cases.iter().map(|_| Mutex::new(None)).collect();
    std::thread::scope(|s| {
        for _ in 0..workers {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(args) = cases.get(i) else { break };
                let args: Vec<&str> = args.iter().map(String::as_str).collect();
                *outputs[i].lock().unwrap() = Some(run_against(hms_uri, &args));
            });
        }
    });
    outputs
        .into_iter()
        .map(|o| o.into_inner().unwrap().expect("every case ran"))
        .collect()
}

pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// The exit code; -1 when a signal ended the run.
pub fn code(o: &Output) -> i32 {
    o.status.code().unwrap_or(-1)
}

/// Exit code, stdout and stderr of a run, for assertion messages.
pub fn describe(o: &Output) -> String {
    format!(
        "exit {:?}\nstdout: {}\nstderr: {}",
        o.status.code(),
        stdout(o),
        stderr(o)
    )
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

/// The per-partition reports (by `table/partition`) and the summary line of a `--json` run.
pub fn reports(o: &Output) -> (BTreeMap<String, Value>, Value) {
    let mut lines: Vec<Value> = stdout(o)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
        .collect();
    let last = lines.pop().expect("a summary line");
    let by_key = lines
        .into_iter()
        .map(|r| {
            let key = format!(
                "{}/{}",
                r["table"].as_str().unwrap(),
                r["partition"].as_str().unwrap()
            );
            (key, r)
        })
        .collect();
    (by_key, last)
}
