//! `compact --on-yarn` against the local cluster's YARN (`scripts/cluster start --yarn`: a
//! MiniMRYarnCluster beside HDFS and the metastore, and a `mapred` command in
//! `$HADOOP_HOME/bin`): the job's tasks compact with the same protocol, the client reports
//! every partition, retries lose and double nothing, a dry run submits nothing, and only the
//! partitions with work to do are sent.
//!
//! One job at a time: the minicluster's one NodeManager holds one job's tasks.

#![cfg(feature = "cluster-tests")]

use crate::common;

use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use crate::common::hdfs::list;
use crate::common::orc_tools::java_rows;
use crate::common::partition::{assert_untouched, Part, State};
use crate::common::*;
use serde_json::Value;

/// `scripts/test` runs these against its cluster's YARN, in a process of their own beside the
/// main run (their jobs take turns: in the main run, a test waiting its turn held one of its two
/// threads idle); `SKIP_YARN=1` (a cluster started without `--yarn`) skips them, saying so.
fn skipped() -> bool {
    if !common::alone(&["yarn"]) {
        return true;
    }
    if std::env::var("SKIP_YARN").as_deref() == Ok("1") {
        eprintln!("SKIP_YARN=1: skipped");
        return true;
    }
    assert!(
        std::env::var_os("HADOOP_HOME").is_some(),
        "HADOOP_HOME is not set: start the cluster with `scripts/cluster start --yarn` and \
         eval \"$(scripts/cluster env)\", or set SKIP_YARN=1"
    );
    false
}

fn one_job_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    static TURN: std::sync::Mutex<()> = std::sync::Mutex::new(());
    TURN.lock().unwrap_or_else(|p| p.into_inner())
}

/// A fresh database of the `yarn` set per test: each changes what it compacts.
fn database(name: &str) -> OwnDatabase {
    OwnDatabase::create(&format!("{name}_{}", std::process::id()), "yarn")
}

/// The partitions of these tables of the database, as `Part`s.
fn parts(db: &OwnDatabase, tables: &[&str]) -> Vec<Part> {
    let f = &db.fixtures;
    let mut out = Vec::new();
    for table in tables {
        for p in &f.table(table).partitions {
            out.push(Part::of(f, &env("HMS_URI"), table, &p.spec));
        }
    }
    out
}

const ALL: [&str; 3] = ["yarn_a", "yarn_b", "yarn_c"];

/// The rows Java ORC reads from the partition's current files, sorted: a multiset.
fn rows(part: &Part) -> Vec<Vec<String>> {
    let dir = part.location();
    let files: Vec<String> = list(&dir).0.iter().map(|f| format!("{dir}/{f}")).collect();
    let mut all: Vec<Vec<String>> = java_rows(&files)
        .into_iter()
        .flatten()
        .map(|row| vec![row])
        .collect();
    all.sort();
    all
}

fn on_yarn(args: &[&str]) -> Output {
    let t0 = Instant::now();
    let o = run(args);
    eprintln!(
        "{args:?}: exit {:?} in {:.1}s\n{}",
        o.status.code(),
        t0.elapsed().as_secs_f64(),
        stderr(&o)
    );
    o
}

/// A `--yarn-dir` of the test's own: an empty binary cache.
fn yarn_dir(db: &OwnDatabase) -> String {
    format!("{}/tmp/yarn-{}", env("HDFS_URL"), db.fixtures.database)
}

/// The `--yarn-dir` of the jobs that need no empty cache: the first uploads the binary, the
/// others reuse it, as runs on a cluster do. (Jobs run one at a time, so each finds its own
/// work directory gone at its end.)
fn shared_yarn_dir() -> String {
    format!("{}/tmp/yarn-shared-{}", env("HDFS_URL"), std::process::id())
}

/// The run's work directory is gone: `--yarn-dir` holds only the binary cache.
fn assert_work_dir_removed(dir: &str) {
    let (files, dirs) = list(dir);
    assert!(
        files.is_empty() && dirs.iter().all(|d| d == "binaries"),
        "the job's work directory in {dir} is not removed: {files:?} {dirs:?}"
    );
}

/// The SHA-256 of the binary the tests run, as `sha256sum` prints it.
fn binary_sha256() -> String {
    let exe = binary();
    let o = Command::new("sha256sum").arg(exe).output().unwrap();
    assert!(o.status.success(), "sha256sum {exe}");
    String::from_utf8_lossy(&o.stdout)
        .split_whitespace()
        .next()
        .unwrap()
        .to_string()
}

/// (length, modification time, permission) of an HDFS path.
fn stat(path: &str) -> (u64, u64, u16) {
    let e = rt()
        .block_on(common::hdfs::hdfs().status(&common::hdfs::loc(path)))
        .unwrap()
        .unwrap_or_else(|| panic!("{path} does not exist"));
    (e.length, e.modification_time, e.permission)
}

fn set_mtime(path: &str, days_ago: u64) {
    let t = chrono::Utc::now().timestamp_millis() as u64 - days_ago * 86_400_000;
    rt().block_on(common::hdfs::hdfs().set_modification_time(&common::hdfs::loc(path), t))
        .unwrap_or_else(|e| panic!("{e}"));
}

#[test]
fn forty_partitions_of_three_tables_over_four_tasks() {
    if skipped() {
        return;
    }
    let _turn = one_job_at_a_time();
    let db = database("yarn_all");
    let parts = parts(&db, &ALL);
    assert_eq!(parts.len(), 40);
    let before: Vec<Vec<Vec<String>>> = parts.iter().map(rows).collect();
    let dir = shared_yarn_dir();
    let o = on_yarn(&[
        "compact",
        "--database",
        &db.fixtures.database,
        "--min-age",
        "0s",
        "--on-yarn",
        "--tasks",
        "4",
        "--yarn-dir",
        &dir,
        "--json",
    ]);
    assert_eq!(code(&o), 0, "{}", describe(&o));
    let (by_key, last) = reports(&o);
    let summary = &last["summary"];
    let yarn = &last["yarn"];
    assert_eq!(summary["compacted"], 40, "{last}");
    assert_eq!(summary["files_before"], 160);
    assert_eq!(summary["files_after"], 40);
    assert_eq!(summary["tables"].as_array().unwrap().len(), 3);
    assert_eq!(yarn["tasks"], 4, "{yarn}");
    assert_eq!(yarn["succeeded"], true);
    assert!(yarn["application"]
        .as_str()
        .unwrap()
        .starts_with("application_"));
    assert!(yarn["logs"]
        .as_str()
        .unwrap()
        .starts_with("yarn logs -applicationId "));
    // The run's metastore calls are this host's and the tasks', each of which connected.
    let (run_calls, task_calls) = (&summary["metastore_calls"], &yarn["metastore_calls"]);
    assert!(task_calls["get_config_value"].as_u64() >= Some(4), "{yarn}");
    for (method, n) in task_calls.as_object().unwrap() {
        assert!(run_calls[method].as_u64() >= n.as_u64(), "{method}: {last}");
    }
    assert!(
        run_calls["total"].as_u64() > task_calls["total"].as_u64(),
        "{last}"
    );
    for (part, rows_before) in parts.iter().zip(&before) {
        let key = format!("{}/{}", part.qualified(), part.spec);
        let r = &by_key[&key];
        assert_eq!(r["status"], "compacted", "{key}: {r}");
        assert_eq!(r["files_after"], 1, "{key}");
        assert_ne!(part.location(), part.home, "{key} was swapped");
        // Every row, as Java ORC reads it, once.
        assert_eq!(&rows(part), rows_before, "{key}");
        let (_, params) = part.location_and_parameters();
        assert_eq!(params["numFiles"], "1", "{key}");
        assert_eq!(params["numRows"], part.rows.to_string(), "{key}");
    }
    assert_work_dir_removed(&dir);

    // A second run finds nothing to do; on the edge node, it is the same protocol.
    let o = run(&[
        "compact",
        "--database",
        &db.fixtures.database,
        "--min-age",
        "0s",
        "--json",
    ]);
    assert_eq!(code(&o), 0, "{}", describe(&o));
    let (_, last) = reports(&o);
    assert_eq!(last["summary"]["nothing_to_do"], 40, "{last}");
}

/// A table's layout from the config file (`[table."db.t"]`) reaches the job's tasks in the
/// settings file they run with: its partitions come back sorted as the section says, every
/// row kept, while a table without a section is compacted as it was.
#[test]
fn a_config_file_table_layout_is_applied_by_the_tasks() {
    if skipped() {
        return;
    }
    let _turn = one_job_at_a_time();
    let db = database("yarn_layout");
    let sorted_parts = parts(&db, &["yarn_c"]);
    let plain_parts = &parts(&db, &["yarn_b"])[..2];
    let before: Vec<Vec<Vec<String>>> = sorted_parts.iter().map(rows).collect();
    let config = std::env::temp_dir().join(format!("hoc-yarn-layout-{}.toml", std::process::id()));
    std::fs::write(
        &config,
        format!(
            "[table.\"{}.yarn_c\"]\nsort_by = [\"id DESC\"]\ncodec = \"zstd\"\n",
            db.fixtures.database
        ),
    )
    .unwrap();
    let specs: Vec<String> = sorted_parts
        .iter()
        .chain(plain_parts)
        .map(|p| format!("{}/{}", p.qualified(), p.spec))
        .collect();
    let list_file =
        std::env::temp_dir().join(format!("hoc-yarn-layout-{}.txt", std::process::id()));
    std::fs::write(&list_file, specs.join("\n")).unwrap();
    let dir = shared_yarn_dir();
    let o = on_yarn(&[
        "--config",
        config.to_str().unwrap(),
        "compact",
        "--partitions-from",
        list_file.to_str().unwrap(),
        "--stripes",
        "auto",
        "--on-yarn",
        "--tasks",
        "2",
        "--yarn-dir",
        &dir,
        "--json",
    ]);
    let _ = std::fs::remove_file(&config);
    let _ = std::fs::remove_file(&list_file);
    assert_eq!(code(&o), 0, "{}", describe(&o));
    let (by_key, last) = reports(&o);
    assert_eq!(last["summary"]["compacted"], 8, "{last}");
    for (part, rows_before) in sorted_parts.iter().zip(&before) {
        let key = format!("{}/{}", part.qualified(), part.spec);
        let r = &by_key[&key];
        assert_eq!(r["status"], "compacted", "{key}: {r}");
        let layout = r["layout"]["layout"].as_str().unwrap_or_default();
        assert!(
            layout.starts_with("sort(id DESC") && layout.contains("codec=ZSTD"),
            "{key}: the task applied the config file's layout: {r}"
        );
        let dir = part.location();
        let files: Vec<String> = list(&dir).0.iter().map(|f| format!("{dir}/{f}")).collect();
        let ids: Vec<i64> = java_rows(&files)
            .into_iter()
            .flatten()
            .map(|row| {
                serde_json::from_str::<Value>(&row).unwrap()["id"]
                    .as_i64()
                    .unwrap()
            })
            .collect();
        assert!(
            ids.windows(2).all(|w| w[0] >= w[1]),
            "{key}: rows sorted by id DESC as Java reads them: {ids:?}"
        );
        assert_eq!(&rows(part), rows_before, "{key}: every row, once");
    }
    for part in plain_parts {
        let key = format!("{}/{}", part.qualified(), part.spec);
        let r = &by_key[&key];
        assert_eq!(r["status"], "compacted", "{key}: {r}");
        assert!(r["layout"].is_null(), "{key}: no layout asked: {r}");
    }
    assert_work_dir_removed(&dir);
}

#[test]
fn a_dry_run_submits_nothing_and_prints_the_job() {
    if !common::alone(&["yarn"]) {
        return;
    }
    let db = database("yarn_dry");
    let parts = parts(&db, &ALL);
    let before: Vec<State> = parts.iter().map(|p| p.state(true)).collect();
    let dir = yarn_dir(&db);
    // A mapred that fails if it is called at all.
    let o = on_yarn(&[
        "compact",
        "--database",
        &db.fixtures.database,
        "--min-age",
        "0s",
        "--on-yarn",
        "--tasks",
        "3",
        "--hadoop-cmd",
        "/bin/false",
        "--yarn-dir",
        &dir,
        "--dry-run",
        "--json",
    ]);
    assert_eq!(code(&o), 0, "{}", describe(&o));
    let plan = &json(&o)["yarn_plan"];
    let work_list = plan["work_list"].as_array().unwrap();
    assert_eq!(work_list.len(), 40, "{plan}");
    assert_eq!(
        (plan["tasks"].as_u64(), plan["partitions_per_task"].as_u64()),
        (Some(3), Some(14))
    );
    let command: Vec<&str> = plan["command"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap())
        .collect();
    assert_eq!(command[..2], ["/bin/false", "streaming"]);
    // Not cached under this fresh directory: the run would upload it.
    let binary = &plan["binary"];
    assert_eq!(
        binary["path"].as_str().unwrap(),
        format!("{dir}/binaries/{}", binary_sha256()),
        "{plan}"
    );
    assert_eq!(binary["action"], "upload", "{plan}");
    for want in [
        "mapreduce.map.speculative=false",
        "stream.map.input.ignoreKey=true",
        // A vcore per --parallel partition (2 by default), which the task gets as --threads.
        "mapreduce.map.cpu.vcores=2",
    ] {
        assert!(command.contains(&want), "{command:?}");
    }
    let mapper = command[command.iter().position(|a| *a == "-mapper").unwrap() + 1];
    assert!(
        mapper.starts_with("./hoc compact --partitions-from - --yarn-task"),
        "{mapper}"
    );
    for (part, b) in parts.iter().zip(&before) {
        assert_untouched(part, b, &part.state(true), "a dry run with --on-yarn");
    }
    let (files, dirs) = list(&dir);
    assert!(
        files.is_empty() && dirs.is_empty(),
        "nothing written to {dir}"
    );
}

/// The task processes of this cluster's YARN: `hoc` processes (by name: the job client's command
/// line holds the task's too) whose working directory is a container's, under the cluster's
/// `yarn/` directory. The secure and fault clusters' tests run `hoc` beside this area, and a
/// kill meant for a task here once landed on a secure job's task instead, failing both tests.
#[cfg(feature = "failpoints")]
fn yarn_task_pids() -> Vec<String> {
    let yarn = std::path::Path::new(&env("CLUSTER_DIR")).join("yarn");
    let yarn = std::fs::canonicalize(&yarn).unwrap_or(yarn);
    let found = Command::new("pgrep").args(["-x", "hoc"]).output().unwrap();
    String::from_utf8_lossy(&found.stdout)
        .split_whitespace()
        .filter(|pid| {
            std::fs::read_link(format!("/proc/{pid}/cwd")).is_ok_and(|cwd| cwd.starts_with(&yarn))
        })
        .map(str::to_string)
        .collect()
}

#[cfg(feature = "failpoints")]
#[test]
fn a_task_killed_mid_partition_is_retried_and_nothing_is_lost_or_doubled() {
    if skipped() {
        return;
    }
    let _turn = one_job_at_a_time();
    let db = database("yarn_kill");
    let parts = parts(&db, &["yarn_c"]);
    let before: Vec<Vec<Vec<String>>> = parts.iter().map(rows).collect();
    let dir = shared_yarn_dir();
    let table = db.fixtures.qualified("yarn_c");
    // Each partition pauses before its swap, so a kill lands inside one. Without the lock the
    // retry need not wait for the dead attempt's lock to expire (that case is `busy`, below).
    let child = command(&env("HMS_URI"))
        .args([
            "compact",
            "--table",
            &table,
            "--all",
            "--min-age",
            "0s",
            "--on-yarn",
            "--tasks",
            "2",
            "--no-lock",
            "--yarn-dir",
            &dir,
            "--json",
        ])
        .env("FAILPOINTS", "compact::before-swap=sleep(2000)")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The first task process to start is killed while it sleeps before a swap.
    let started = Instant::now();
    let killed = loop {
        assert!(
            started.elapsed() < Duration::from_secs(240),
            "no task started"
        );
        if let Some(pid) = yarn_task_pids().first() {
            std::thread::sleep(Duration::from_millis(1500));
            let k = Command::new("kill").args(["-9", pid]).status().unwrap();
            assert!(k.success());
            break pid.to_string();
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    let o = child.wait_with_output().unwrap();
    eprintln!("killed task process {killed}\n{}", stderr(&o));
    assert_eq!(code(&o), 0, "{}", describe(&o));
    let (by_key, last) = reports(&o);
    assert_eq!(last["summary"]["compacted"], 6, "{last}");
    let failed = last["yarn"]["failed_attempts"].as_array().unwrap();
    assert_eq!(failed.len(), 1, "one attempt killed: {last}");
    for (part, rows_before) in parts.iter().zip(&before) {
        let key = format!("{}/{}", part.qualified(), part.spec);
        assert_eq!(by_key[&key]["status"], "compacted", "{key}");
        assert_eq!(&rows(part), rows_before, "{key}: every row once");
        let (_, params) = part.location_and_parameters();
        assert_eq!(params["numRows"], part.rows.to_string(), "{key}");
    }
    assert_work_dir_removed(&dir);
    // The killed attempt's staging is hidden and goes with cleanup.
    for part in &parts {
        part.cleanup(&["--staging-older-than", "0s"]);
    }
}

#[test]
fn busy_and_refused_partitions_are_reported_and_the_others_go_on() {
    if skipped() {
        return;
    }
    let _turn = one_job_at_a_time();
    let db = database("yarn_mixed");
    let parts = &parts(&db, &["yarn_c"])[..3];
    let locked = &parts[2];
    let held = locked.hold_lock("yarn-test");
    let locked_before = locked.state(true);
    // A partition of a full-ACID table of the shared fixtures: refused where it runs.
    let fx = fixtures();
    let acid = &fx.table("acid_full").partitions[0];
    let acid_key = format!("{}/{}", fx.qualified("acid_full"), acid.spec);
    let acid_part = Part::of(&fx, &env("HMS_URI"), "acid_full", &acid.spec);
    let acid_before = acid_part.state(true);
    let list_file = std::env::temp_dir().join(format!("hoc-yarn-{}.txt", std::process::id()));
    let mut lines: Vec<String> = parts
        .iter()
        .map(|p| format!("{}/{}", p.qualified(), p.spec))
        .collect();
    lines.push(acid_key.clone());
    std::fs::write(&list_file, lines.join("\n")).unwrap();
    let dir = shared_yarn_dir();
    let o = on_yarn(&[
        "compact",
        "--partitions-from",
        list_file.to_str().unwrap(),
        "--on-yarn",
        "--tasks",
        "2",
        "--lock-timeout",
        "0",
        "--yarn-dir",
        &dir,
        "--json",
    ]);
    let _ = std::fs::remove_file(&list_file);
    rt().block_on(held.release()).expect("unlock");
    // Busy outranks refused in the exit code.
    assert_eq!(code(&o), 4, "{}", describe(&o));
    let (by_key, last) = reports(&o);
    let status = |k: &str| by_key[k]["status"].as_str().unwrap().to_string();
    assert_eq!(
        status(&format!("{}/{}", parts[0].qualified(), parts[0].spec)),
        "compacted"
    );
    assert_eq!(
        status(&format!("{}/{}", parts[1].qualified(), parts[1].spec)),
        "compacted"
    );
    assert_eq!(
        status(&format!("{}/{}", locked.qualified(), locked.spec)),
        "busy"
    );
    assert_eq!(status(&acid_key), "refused");
    assert_eq!(by_key[&acid_key]["rule"], "transactional", "{last}");
    let attention = last["summary"]["attention"].as_array().unwrap();
    assert_eq!(attention.len(), 2, "{last}");
    assert_untouched(
        locked,
        &locked_before,
        &locked.state(true),
        "a busy partition",
    );
    assert_untouched(
        &acid_part,
        &acid_before,
        &acid_part.state(true),
        "a refused partition",
    );
    assert_work_dir_removed(&dir);
}

/// The work list holds only what a run on this host would compact. Half of a table is
/// compacted first (here, to spare a job): the dry run's work list is exactly the other half,
/// the partitions a local dry run would compact, and every partition has one report. The run
/// then sends only those; a partition left out is never locked by a task, which a lock held on
/// one of them by another client shows (it would be `busy`). After that run, a second one
/// submits no job at all: its `mapred` is never called, no binary is shipped, no work
/// directory made, and it says so in one line.
#[test]
fn only_partitions_with_work_are_sent_and_a_healthy_selection_submits_nothing() {
    if skipped() {
        return;
    }
    let _turn = one_job_at_a_time();
    let db = database("yarn_sift");
    let parts = parts(&db, &["yarn_c"]);
    let table = db.fixtures.qualified("yarn_c");
    let key = |p: &Part| format!("{}/{}", p.qualified(), p.spec);
    let selection = ["compact", "--table", &table, "--all", "--min-age", "0s"];
    fn with<'a>(selection: &[&'a str], extra: &[&'a str]) -> Vec<&'a str> {
        [selection, extra].concat()
    }

    let half = parts.len() / 2;
    let limit = half.to_string();
    let o = run(&with(&selection, &["--limit", &limit, "--json"]));
    assert_eq!(code(&o), 0, "{}", describe(&o));
    let (by_key, _) = reports(&o);
    let (healthy, unhealthy): (Vec<&Part>, Vec<&Part>) = parts
        .iter()
        .partition(|p| by_key[&key(p)]["status"] == "compacted");
    assert_eq!(healthy.len(), half, "{}", describe(&o));

    // A `mapred` that records being called and submits nothing.
    let dir = tempfile::tempdir().unwrap();
    let (mapred, called) = recording_mapred(dir.path());
    let mapred = mapred.to_str().unwrap();
    let yarn = shared_yarn_dir();
    let sorted = |mut keys: Vec<String>| {
        keys.sort();
        keys
    };
    let unhealthy_keys = sorted(unhealthy.iter().map(|p| key(p)).collect());

    // The dry run: the unhealthy half, as a local dry run sees it; the rest reported here.
    let every_key = sorted(parts.iter().map(key).collect());
    dry_run_sends_only(&selection, mapred, &yarn, &unhealthy_keys, &every_key);

    // Another client holds a healthy partition's lock throughout: no task or check asks for it.
    let held = healthy[0].hold_lock("yarn-test");

    // The run sends the unhealthy half only.
    let o = on_yarn(&with(
        &selection,
        &[
            "--on-yarn",
            "--tasks",
            "4",
            "--lock-timeout",
            "0",
            "--yarn-dir",
            &yarn,
            "--json",
        ],
    ));
    assert_eq!(code(&o), 0, "{}", describe(&o));
    let (by_key, last) = reports(&o);
    assert_eq!(by_key.len(), parts.len(), "{last}");
    for p in &unhealthy {
        assert_eq!(by_key[&key(p)]["status"], "compacted", "{}", key(p));
    }
    for p in &healthy {
        assert_eq!(by_key[&key(p)]["status"], "nothing-to-do", "{}", key(p));
    }
    let yarn_report = &last["yarn"];
    assert_eq!(yarn_report["succeeded"], true, "{last}");
    assert_eq!(
        yarn_report["tasks"],
        unhealthy.len(),
        "a task per sent partition: {last}"
    );
    assert_work_dir_removed(&yarn);

    // A second run: nothing to do anywhere, so no job, no binary, no work directory.
    let again = with(
        &selection,
        &[
            "--on-yarn",
            "--lock-timeout",
            "0",
            "--hadoop-cmd",
            mapred,
            "--yarn-dir",
            &yarn,
        ],
    );
    let o = on_yarn(&with(&again, &["--json"]));
    assert_eq!(code(&o), 0, "{}", describe(&o));
    let (by_key, last) = reports(&o);
    assert_eq!(by_key.len(), parts.len(), "{last}");
    assert_eq!(last["summary"]["nothing_to_do"], parts.len(), "{last}");
    let yarn_report = &last["yarn"];
    assert_eq!(
        yarn_report["no_job"],
        format!("none of the {} partitions has work to do", parts.len()),
        "{last}"
    );
    for field in ["application", "job", "binary", "error"] {
        assert!(yarn_report[field].is_null(), "{field}: {last}");
    }
    assert_eq!(yarn_report["tasks"], 0, "{last}");
    assert_work_dir_removed(&yarn);
    let o = on_yarn(&again);
    assert_eq!(code(&o), 0, "{}", describe(&o));
    let printed = stdout(&o);
    let no_job: Vec<&str> = printed.lines().filter(|l| l.starts_with("yarn:")).collect();
    assert_eq!(
        no_job,
        [format!(
            "yarn: no job submitted: none of the {} partitions has work to do",
            parts.len()
        )],
        "{}",
        describe(&o)
    );
    rt().block_on(held.release()).expect("unlock");
    assert!(!called.exists(), "mapred was called");
}

/// A `mapred` in `dir` that submits nothing and leaves the file it returns second when called.
fn recording_mapred(dir: &std::path::Path) -> (std::path::PathBuf, std::path::PathBuf) {
    let called = dir.join("called");
    let mapred = dir.join("mapred");
    std::fs::write(
        &mapred,
        format!("#!/bin/sh\ntouch '{}'\nexit 1\n", called.display()),
    )
    .unwrap();
    std::fs::set_permissions(&mapred, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    (mapred, called)
}

/// `--on-yarn --dry-run` over `selection`: its work list is `unhealthy_keys`, as a local dry
/// run sees it, and every other partition is reported here, nothing to do.
fn dry_run_sends_only(
    selection: &[&str],
    mapred: &str,
    yarn: &str,
    unhealthy_keys: &[String],
    every_key: &[String],
) {
    fn with<'a>(selection: &[&'a str], extra: &[&'a str]) -> Vec<&'a str> {
        [selection, extra].concat()
    }
    let sorted = |mut keys: Vec<String>| {
        keys.sort();
        keys
    };
    let local = run(&with(selection, &["--dry-run", "--json"]));
    let (local_by_key, _) = reports(&local);
    let would = |by_key: &std::collections::BTreeMap<String, Value>| {
        sorted(
            (by_key.iter())
                .filter(|(_, r)| r["status"] == "dry-run")
                .map(|(k, _)| k.clone())
                .collect(),
        )
    };
    assert_eq!(would(&local_by_key), unhealthy_keys, "{}", describe(&local));
    let o = on_yarn(&with(
        selection,
        &[
            "--on-yarn",
            "--tasks",
            "4",
            "--hadoop-cmd",
            mapred,
            "--yarn-dir",
            yarn,
            "--dry-run",
            "--json",
        ],
    ));
    assert_eq!(code(&o), 0, "{}", describe(&o));
    let lines: Vec<Value> = stdout(&o)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let work_list: Vec<String> = lines[0]["yarn_plan"]["work_list"]
        .as_array()
        .unwrap_or_else(|| panic!("the plan first: {}", describe(&o)))
        .iter()
        .map(|k| k.as_str().unwrap().to_string())
        .collect();
    assert_eq!(
        sorted(work_list.clone()),
        unhealthy_keys,
        "{}",
        describe(&o)
    );
    let here: Vec<String> = lines[1..]
        .iter()
        .map(|r| {
            assert_eq!(r["status"], "nothing-to-do", "{r}");
            format!(
                "{}/{}",
                r["table"].as_str().unwrap(),
                r["partition"].as_str().unwrap()
            )
        })
        .collect();
    let mut every = [work_list, here].concat();
    every.sort();
    assert_eq!(every, every_key, "one report each");
}

/// What a task runs, on an empty share: nothing to report, exit 0.
#[test]
fn an_empty_work_list_is_nothing_to_do() {
    if !common::alone(&["yarn"]) {
        return;
    }
    let o = run(&[
        "compact",
        "--partitions-from",
        "/dev/null",
        "--yarn-task",
        "--json",
    ]);
    assert_eq!(code(&o), 0, "{}", describe(&o));
    assert!(stdout(&o).trim().is_empty(), "{}", stdout(&o));
}

/// Two runs of one build upload it once: the second reuses the cached file as it is (YARN
/// refuses a shipped file whose modification time changed since its job was submitted, so
/// the use is recorded beside it). A truncated copy is replaced. `cleanup` removes a binary no
/// run used for --binaries-older-than, keeps fresh ones, and a dry run removes nothing.
#[test]
fn the_binary_is_uploaded_once_reused_and_swept_by_cleanup() {
    if skipped() {
        return;
    }
    let _turn = one_job_at_a_time();
    let db = database("yarn_cache");
    let c = BinaryCache::of(&db);
    let uploaded_at = the_first_run_uploads_it(&c);
    a_dry_run_sees_it_cached(&c);
    the_second_run_reuses_that_very_file(&c, uploaded_at);
    a_truncated_copy_is_replaced(&c);
    cleanup_sweeps_what_is_unused(&c);
}

/// The table and `--yarn-dir` of [`the_binary_is_uploaded_once_reused_and_swept_by_cleanup`],
/// and where the binary is cached in it.
struct BinaryCache {
    parts: Vec<Part>,
    table: String,
    dir: String,
    /// The cache directory, the cached binary (named by its SHA-256) and its use marker.
    cache: String,
    sha: String,
    cached: String,
    used: String,
    exe_length: u64,
}

impl BinaryCache {
    fn of(db: &OwnDatabase) -> BinaryCache {
        let dir = yarn_dir(db);
        let cache = format!("{dir}/binaries");
        let sha = binary_sha256();
        let cached = format!("{cache}/{sha}");
        BinaryCache {
            parts: parts(db, &["yarn_c"]),
            table: db.fixtures.qualified("yarn_c"),
            used: format!("{cached}.used"),
            exe_length: std::fs::metadata(binary()).unwrap().len(),
            dir,
            cache,
            sha,
            cached,
        }
    }

    /// `compact --on-yarn` of one partition: the run, the partition's status and the report's
    /// binary.
    fn compact(&self, part: &Part, extra: &[&str]) -> (Output, Value, Value) {
        let mut args = vec![
            "compact",
            "--table",
            &self.table,
            "--partition",
            &part.spec,
            "--on-yarn",
            "--yarn-dir",
            &self.dir,
            "--json",
        ];
        args.extend(extra);
        let o = on_yarn(&args);
        let (by_key, last) = reports(&o);
        let status = by_key[&format!("{}/{}", self.table, part.spec)]["status"].clone();
        (o, status, last["yarn"]["binary"].clone())
    }
}

/// The first run uploads it, readable by the user alone; when.
fn the_first_run_uploads_it(c: &BinaryCache) -> u64 {
    let (o, status, binary) = c.compact(&c.parts[0], &[]);
    assert_eq!(
        (code(&o), status.as_str()),
        (0, Some("compacted")),
        "{}",
        describe(&o)
    );
    assert_eq!(binary["path"].as_str(), Some(c.cached.as_str()), "{binary}");
    assert_eq!(binary["sha256"].as_str(), Some(c.sha.as_str()));
    assert_eq!(binary["action"], "upload", "{binary}");
    let (length, uploaded_at, permission) = stat(&c.cached);
    assert_eq!((length, permission), (c.exe_length, 0o700));
    assert_eq!(stat(&c.cache).2, 0o700, "the cache directory");
    assert_eq!(
        list(&c.cache).0,
        [c.sha.as_str()],
        "no temporary upload left"
    );
    assert_work_dir_removed(&c.dir);
    uploaded_at
}

/// A dry run sees it cached.
fn a_dry_run_sees_it_cached(c: &BinaryCache) {
    let o = on_yarn(&[
        "compact",
        "--table",
        &c.table,
        "--partition",
        &c.parts[1].spec,
        "--on-yarn",
        "--yarn-dir",
        &c.dir,
        "--hadoop-cmd",
        "/bin/false",
        "--dry-run",
        "--json",
    ]);
    assert_eq!(
        json(&o)["yarn_plan"]["binary"]["action"],
        "reuse",
        "{}",
        describe(&o)
    );
}

/// The second reuses that very file: not written, not touched; its use is on the marker.
fn the_second_run_reuses_that_very_file(c: &BinaryCache, uploaded_at: u64) {
    let second_starts = chrono::Utc::now().timestamp_millis() as u64;
    let (o, status, binary) = c.compact(&c.parts[1], &["-v"]);
    assert_eq!(
        (code(&o), status.as_str()),
        (0, Some("compacted")),
        "{}",
        describe(&o)
    );
    assert_eq!(binary["path"].as_str(), Some(c.cached.as_str()), "{binary}");
    assert_eq!(binary["action"], "reuse", "{binary}");
    assert_eq!(
        stat(&c.cached),
        (c.exe_length, uploaded_at, 0o700),
        "the same file"
    );
    let (_, last_use, _) = stat(&c.used);
    assert!(
        last_use + 1000 >= second_starts,
        "the use is recorded: {last_use}"
    );
    assert!(
        stderr(&o).contains("in the cache already"),
        "{}",
        stderr(&o)
    );
}

/// A truncated copy is replaced. (A mapred that fails: the upload comes before it, and the
/// partition stays as it was.)
fn a_truncated_copy_is_replaced(c: &BinaryCache) {
    assert!(rt()
        .block_on(common::hdfs::hdfs().delete(&common::hdfs::loc(&c.cached), false))
        .unwrap());
    common::hdfs::write_file(&c.cached, b"half a binary".to_vec());
    let before = c.parts[2].state(true);
    let (o, status, binary) = c.compact(&c.parts[2], &["--hadoop-cmd", "/bin/false"]);
    assert_eq!(
        (code(&o), status.as_str()),
        (1, Some("failed")),
        "{}",
        describe(&o)
    );
    assert_untouched(
        &c.parts[2],
        &before,
        &c.parts[2].state(true),
        "a job that did not start",
    );
    assert_eq!(binary["action"], "upload", "{binary}");
    assert_eq!(stat(&c.cached).0, c.exe_length, "replaced whole");
    assert!(stderr(&o).contains("replacing it"), "{}", stderr(&o));
}

/// cleanup: the binary and its marker unused for 40 days go; a build cached today and an
/// upload in progress stay, an upload abandoned 40 days ago goes.
fn cleanup_sweeps_what_is_unused(c: &BinaryCache) {
    let (table, dir, cache, sha) = (&c.table, &c.dir, &c.cache, &c.sha);
    let (cached, used) = (c.cached.clone(), c.used.clone());
    set_mtime(&cached, 40);
    set_mtime(&used, 40);
    let fresh = format!("{cache}/{}", "0".repeat(64));
    common::hdfs::write_file(&fresh, b"another build".to_vec());
    let uploading = format!(
        "{cache}/{}.20261205T000000Z-00000000.uploading",
        "0".repeat(64)
    );
    common::hdfs::write_file(&uploading, b"an upload going on".to_vec());
    let abandoned = format!("{cache}/{sha}.20261001T000000Z-00000000.uploading");
    common::hdfs::write_file(&abandoned, b"a crashed upload".to_vec());
    set_mtime(&abandoned, 40);
    let cleanup = |extra: &[&str]| {
        let mut args = vec!["cleanup", "--table", &table, "--yarn-dir", &dir, "--json"];
        args.extend(extra);
        let o = run(&args);
        assert_eq!(code(&o), 0, "{}", describe(&o));
        json(&o)["binaries"].clone()
    };
    let names = |v: &Value| -> Vec<String> {
        v.as_array()
            .unwrap()
            .iter()
            .map(|f| f.as_str().unwrap().to_string())
            .collect()
    };
    let everything = [&cached, &used, &fresh, &uploading, &abandoned];
    // A retention longer than their disuse keeps them.
    let b = cleanup(&["--binaries-older-than", "45d", "--dry-run"]);
    assert_eq!(names(&b["removed"]), Vec::<String>::new(), "{b}");
    let stale = [abandoned.clone(), cached.clone(), used.clone()];
    let b = cleanup(&["--dry-run"]);
    assert_eq!(names(&b["removed"]), stale, "{b}");
    assert_eq!(names(&b["kept"]), [fresh.as_str()], "{b}");
    for f in everything {
        assert!(common::hdfs::exists(f), "a dry run removed {f}");
    }
    let b = cleanup(&[]);
    assert_eq!(names(&b["removed"]), stale, "{b}");
    assert_eq!(b["error"], Value::Null);
    for f in [&cached, &used, &abandoned] {
        assert!(!common::hdfs::exists(f), "{f} is not removed");
    }
    for f in [&fresh, &uploading] {
        assert!(common::hdfs::exists(f), "{f} is removed");
    }
}
