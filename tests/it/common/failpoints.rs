//! Runs stopped on purpose at a step of the protocol (`FAILPOINTS`, with the `failpoints`
//! feature): made to fail there, killed while paused there, or raced by a writer there.

use std::process::{Child, Output, Stdio};
use std::time::{Duration, Instant};

use super::command;
use super::hdfs::{copy, files_in, loc, work_entries};
use super::partition::Part;
use super::{code, describe, json};

/// The failpoints before the swap, in the order a run passes them.
pub const PRE_SWAP: [&str; 5] = [
    "compact::before-stage",
    "compact::after-stage",
    "compact::after-verify",
    "compact::after-publish",
    "compact::before-swap",
];

/// `compact` of `part` with `extra` arguments and `failpoints` set, started.
fn start(part: &Part, extra: &[&str], failpoints: &str, output: fn() -> Stdio) -> Child {
    command(&part.hms_uri)
        .args(part.args("compact", extra))
        .env("FAILPOINTS", failpoints)
        .stdout(output())
        .stderr(output())
        .spawn()
        .expect("the binary starts")
}

pub fn run_with_failpoints(part: &Part, failpoints: &str) -> Output {
    start(part, &[], failpoints, Stdio::piped)
        .wait_with_output()
        .expect("the run ends")
}

/// Starts `compact` with `failpoints`, waits until `ready` says it got there, then SIGKILLs it.
///
/// Without a lock: a killed run's metastore lock outlives it until the metastore's transaction
/// timeout and would make the next run busy (tests/locks.rs is about that).
pub fn kill_when(part: &Part, failpoints: &str, ready: impl FnMut() -> bool) {
    let mut child = start(part, &["--no-lock"], failpoints, Stdio::null);
    let what = format!("{failpoints}: the kill");
    wait_while_running(&mut child, &what, Duration::from_secs(25), ready);
    assert!(
        child.try_wait().expect("wait").is_none(),
        "{failpoints}: the run ended before the kill"
    );
    child.kill().expect("SIGKILL");
    child.wait().expect("reaped");
}

/// Polls `ready` until it says yes, while `child` still runs; fails the test if the child
/// ends first or `within` passes (`what` names what was awaited).
pub fn wait_while_running(
    child: &mut Child,
    what: &str,
    within: Duration,
    mut ready: impl FnMut() -> bool,
) {
    let t0 = Instant::now();
    while !ready() {
        assert!(
            child.try_wait().expect("wait").is_none(),
            "the run ended before {what}"
        );
        assert!(t0.elapsed() < within, "never got to {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Whether a run paused at the pre-swap failpoint `fp` shows it got there in its work
/// directory's `entries`: a staging directory after staging and verifying, the published one
/// after. Nothing is visible before staging (`compact::before-stage`): never.
pub fn work_shows(fp: &str, entries: &[String]) -> bool {
    match fp {
        "compact::before-stage" => false,
        "compact::after-stage" | "compact::after-verify" => {
            entries.iter().any(|n| n.ends_with(".staging"))
        }
        _ => entries
            .iter()
            .any(|n| !n.ends_with(".staging") && !n.ends_with(".json")),
    }
}

/// Pauses a run at `fp`, kills it with SIGKILL once it is there, and returns what its work
/// directory held at the kill.
pub fn kill_while_paused(part: &Part, fp: &str) -> Vec<String> {
    let t0 = Instant::now();
    let mut entries = vec![];
    kill_when(part, &format!("{fp}=sleep(30000)"), || {
        entries = part.work_entries();
        let there = match fp {
            "compact::before-stage" => t0.elapsed() > Duration::from_secs(3),
            _ => work_shows(fp, &entries),
        };
        // Give a run that just created its directory time to finish the step and reach the
        // pause.
        if there && fp != "compact::before-stage" {
            std::thread::sleep(Duration::from_millis(1500));
        }
        there
    });
    entries
}

/// Pauses a run at `fp` once it has published, adds a data file `new_name` to the partition
/// meanwhile (a copy of one there), and returns the run's output.
fn add_file_while_paused(part: &Part, fp: &str, new_name: &str) -> Output {
    let child = start(part, &[], &format!("{fp}=sleep(6000)"), Stdio::piped);
    let t0 = Instant::now();
    while !work_entries(&part.home)
        .iter()
        .any(|n| !n.ends_with(".staging") && !n.ends_with(".json"))
    {
        assert!(
            t0.elapsed() < Duration::from_secs(5),
            "{fp}: never published"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let old = files_in(&part.home);
    copy(
        &loc(&part.home).child(&old[0].0).to_string(),
        &loc(&part.home).child(new_name).to_string(),
    );
    child.wait_with_output().expect("the run ends")
}

/// A file added while the run is paused at `fp` makes it busy (exit 4), naming the file;
/// nothing is swapped and the run's directories are gone.
pub fn check_busy(part: &Part, fp: &str) {
    let before = part.state(true);
    let out = add_file_while_paused(part, fp, "000777_0");
    let after = part.state(true);
    assert_eq!(
        code(&out),
        4,
        "{fp}: a file added meanwhile means busy: {}",
        describe(&out)
    );
    let r = json(&out);
    assert_eq!(r["status"], "busy", "{r}");
    assert!(
        r["reason"].as_str().unwrap_or("").contains("000777_0"),
        "{fp}: the reason names the new file: {r}"
    );
    assert!(after.partition == before.partition, "{fp}: nothing swapped");
    assert_eq!(work_entries(&part.home), Vec::<String>::new(), "{fp}");
    let files: Vec<String> = files_in(&part.home).into_iter().map(|f| f.0).collect();
    assert!(files.contains(&"000777_0".to_string()));
}
