//! `compact --on-yarn` on the Kerberos cluster's own YARN (`scripts/cluster start --secure
//! --yarn`), as a real non-root user: the tool runs as that OS user (`scripts/cluster as-user`)
//! with its Kerberos ticket only (no keytab reaches the job), the job's containers run as that
//! user, and the tasks reach the metastore with the delegation token the job carries and HDFS
//! with the job's HDFS tokens. Without a secure cluster (SECURE_HMS_URI) or without its YARN
//! (SECURE_YARN unset: `scripts/test` with SKIP_YARN=1) every test here returns at once, saying
//! so.
//!
//! Environment (scripts/test): as tests/tokens.rs (SECURE_HMS_URI, SECURE_CONF_DIR,
//! SECURE_KRB5_CONFIG, SECURE_HDFS_URL, SECURE_CLUSTER_DIR), plus SECURE_YARN=1,
//! SECURE_HADOOP_HOME (the cluster's `mapred`), SECURE_YARN_USER and its
//! SECURE_YARN_USER_PRINCIPAL and SECURE_YARN_USER_KEYTAB; SECURE_TOKEN_MAX_LIFETIME (seconds),
//! when set, the delegation tokens' maximum lifetime the cluster was started with.

#![cfg(feature = "cluster-tests")]

use crate::common;

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use crate::common::metastore::location_of;
use crate::common::orc_tools::java_rows;
use crate::common::secure::{orc_table, token_login};
use crate::common::{describe, reports, rt, stderr};
use hive_orc_compactor::hdfs::{Hdfs, Location};
use hive_orc_compactor::kerberos;
use hive_orc_compactor::metastore::security::token::{read_credentials, DelegationToken};
use hive_orc_compactor::metastore::{Metastore, MetastoreConfig, MetastoreError};

struct SecureYarn {
    hms_uri: String,
    conf_dir: String,
    krb5_config: String,
    hdfs_url: String,
    realm: String,
    cluster_dir: String,
    hadoop_home: String,
    /// The local user YARN and its containers run as, its principal and keytab.
    user: String,
    principal: String,
}

/// The secure cluster with YARN, once per process (of these tests alone: the login and
/// configuration would reach every other test). This process then acts as the YARN user (its
/// keytab) to make and read its tables; Java readers get a ticket cache of its own.
fn cluster() -> Option<&'static SecureYarn> {
    static C: OnceLock<Option<SecureYarn>> = OnceLock::new();
    C.get_or_init(|| {
        if !common::alone(&["secure_yarn"]) {
            return None;
        }
        let v = |n: &str| std::env::var(n).ok();
        if v("SECURE_HMS_URI").is_none() {
            eprintln!("SECURE_HMS_URI is not set: no secured cluster, its tests skipped");
            return None;
        }
        if v("SECURE_YARN").as_deref() != Some("1") {
            eprintln!("the secured cluster runs no YARN (SKIP_YARN=1): its YARN tests skipped");
            return None;
        }
        let need = |n: &str| v(n).unwrap_or_else(|| panic!("{n} is not set"));
        let principal = need("SECURE_YARN_USER_PRINCIPAL");
        let keytab = need("SECURE_YARN_USER_KEYTAB");
        let c = SecureYarn {
            hms_uri: need("SECURE_HMS_URI"),
            conf_dir: need("SECURE_CONF_DIR"),
            krb5_config: need("SECURE_KRB5_CONFIG"),
            hdfs_url: need("SECURE_HDFS_URL"),
            realm: principal.rsplit('@').next().unwrap().to_owned(),
            cluster_dir: need("SECURE_CLUSTER_DIR"),
            hadoop_home: need("SECURE_HADOOP_HOME"),
            user: need("SECURE_YARN_USER"),
            principal,
        };
        std::env::set_var("KRB5_CONFIG", &c.krb5_config);
        std::env::set_var("HADOOP_CONF_DIR", &c.conf_dir);
        kerberos::set_login(kerberos::Login {
            principal: Some(c.principal.clone()),
            keytab: Some(PathBuf::from(&keytab)),
        })
        .unwrap();
        // scripts/orc-tools (Java) logs in from a ticket cache: one of this process's own, in
        // the cluster's state dir (the next start clears it).
        let cache = Path::new(&c.cluster_dir)
            .join("yarn-user")
            .join(format!("test-{}.krb5cc", std::process::id()));
        let o = Command::new("kinit")
            .args(["-k", "-t", &keytab, "-c"])
            .arg(&cache)
            .arg(&c.principal)
            .output()
            .expect("kinit runs");
        assert!(o.status.success(), "kinit: {}", describe(&o));
        std::env::set_var("KRB5CCNAME", format!("FILE:{}", cache.display()));
        std::env::set_var(
            "ORC_TOOLS_JAVA_OPTS",
            format!("-Djava.security.krb5.conf={}", c.krb5_config),
        );
        Some(c)
    })
    .as_ref()
}

async fn metastore(c: &SecureYarn) -> Metastore {
    let mut cfg = MetastoreConfig::new(&c.hms_uri).unwrap();
    cfg.sasl_principal = Some(format!("hive/localhost@{}", c.realm));
    Metastore::connect(cfg)
        .await
        .unwrap_or_else(|e| panic!("{e}"))
}

const FILES: usize = 3;
const DAYS: [&str; 2] = ["2026-11-01", "2026-11-02"];

/// A database of the YARN user's own under its HDFS home, one external ORC table `events`
/// partitioned by dt (DAYS), each partition FILES small ORC files, all made as that user; its
/// name.
fn fixture(c: &SecureYarn, name: &str) -> String {
    let db = format!("{name}_{}", std::process::id());
    let root = format!("{}/user/{}/{db}", c.hdfs_url, c.user);
    rt().block_on(async {
        let ms = metastore(c).await;
        ms.create_database(common::database(&db, &root, &c.user, None))
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        orc_table(&ms, (&db, "events"), &root, &c.user, &DAYS, FILES).await;
    });
    db
}

/// One partition as it stands: its location and its files (name, owner).
#[derive(Debug, PartialEq)]
struct PartState {
    location: String,
    files: Vec<(String, String)>,
}

fn state(c: &SecureYarn, db: &str, day: &str) -> PartState {
    rt().block_on(async {
        let ms = metastore(c).await;
        let p = ms
            .get_partition_by_name(db, "events", &format!("dt={day}"))
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        let location = location_of(&p);
        let listing = Hdfs::new()
            .list(&Location::parse(&location).unwrap())
            .await
            .unwrap_or_else(|e| panic!("{e}"))
            .unwrap_or_else(|| panic!("{location} is gone"));
        let mut files: Vec<(String, String)> = listing
            .files
            .into_iter()
            .map(|f| (f.name, f.owner))
            .collect();
        files.sort();
        PartState { location, files }
    })
}

/// The rows Java ORC reads from the partition's files, sorted.
fn rows(s: &PartState) -> Vec<String> {
    let paths: Vec<String> = s
        .files
        .iter()
        .map(|(name, _)| format!("{}/{name}", s.location))
        .collect();
    let mut all: Vec<String> = java_rows(&paths).into_iter().flatten().collect();
    all.sort();
    all
}

/// A `mapred` in front of the cluster's own: it keeps a copy of the credentials file the tool
/// hands the job client (`shipped`, readable by the test), waits while `hold` exists and no
/// `go` does, then runs the real one. In a directory the YARN user can write.
struct Wrapper {
    dir: tempfile::TempDir,
}

impl Wrapper {
    fn new(c: &SecureYarn) -> Wrapper {
        let dir = tempfile::tempdir().unwrap();
        std::fs::set_permissions(dir.path(), PermissionsExt::from_mode(0o777)).unwrap();
        let d = dir.path().display();
        let script = format!(
            "#!/bin/sh\nfor a in \"$@\"; do\n  case $a in\n    \
             mapreduce.job.credentials.binary=*) cp \"${{a#*=}}\" {d}/shipped.tmp && \
             chmod 644 {d}/shipped.tmp && mv {d}/shipped.tmp {d}/shipped ;;\n  esac\ndone\n\
             while [ -e {d}/hold ] && [ ! -e {d}/go ]; do sleep 0.2; done\n\
             exec {}/bin/mapred \"$@\"\n",
            c.hadoop_home
        );
        let mapred = dir.path().join("mapred");
        std::fs::write(&mapred, script).unwrap();
        std::fs::set_permissions(&mapred, PermissionsExt::from_mode(0o755)).unwrap();
        Wrapper { dir }
    }

    fn mapred(&self) -> PathBuf {
        self.dir.path().join("mapred")
    }

    fn shipped(&self) -> PathBuf {
        self.dir.path().join("shipped")
    }

    /// The metastore token the job carried.
    fn token(&self) -> DelegationToken {
        let creds = read_credentials(&self.shipped()).unwrap_or_else(|e| panic!("{e}"));
        creds
            .metastore_token("")
            .unwrap_or_else(|| panic!("no metastore token in {creds:?}"))
            .clone()
    }
}

/// `compact --on-yarn` of the table, as the YARN user with its ticket cache (no keytab), the
/// job submitted through `mapred`, then `extra`.
fn on_yarn(c: &SecureYarn, db: &str, mapred: &Path, extra: &[&str]) -> Command {
    let mut cmd = Command::new(common::repo().join("scripts/cluster"));
    cmd.arg("as-user")
        .arg(env!("CARGO_BIN_EXE_hive-orc-compactor"))
        .args(["compact", "--table", &format!("{db}.events"), "--all"])
        .args(["--min-age", "0s", "--json"])
        .args(extra)
        .args(["--on-yarn", "--tasks", "2", "--hadoop-cmd"])
        .arg(mapred)
        .env("CLUSTER_DIR", &c.cluster_dir)
        .env("HADOOP_HOME", &c.hadoop_home)
        // A directory the user may enter.
        .current_dir("/");
    only_the_cluster(c, &mut cmd);
    cmd
}

/// The tool's configuration is the secure cluster's alone.
fn only_the_cluster(c: &SecureYarn, cmd: &mut Command) {
    cmd.env_remove("HMS_URI")
        .env_remove("HOC_PRINCIPAL")
        .env_remove("HOC_KEYTAB")
        .env("HIVE_CONF_DIR", &c.conf_dir)
        .env("HADOOP_CONF_DIR", &c.conf_dir)
        .env("KRB5_CONFIG", &c.krb5_config);
}

fn timed(mut cmd: Command) -> Output {
    let t0 = Instant::now();
    let o = cmd.output().expect("scripts/cluster as-user runs");
    eprintln!(
        "compact --on-yarn as the YARN user: exit {:?} in {:.1}s\n{}",
        o.status.code(),
        t0.elapsed().as_secs_f64(),
        stderr(&o)
    );
    o
}

/// A login with the token after the job is refused: the client cancelled it.
fn assert_cancelled(c: &SecureYarn, token: DelegationToken) {
    rt().block_on(async {
        match Metastore::connect(token_login(&c.hms_uri, &token)).await {
            Err(MetastoreError::TokenRejected { .. }) => {}
            Err(e) => panic!("{e}"),
            Ok(_) => panic!("the job's metastore token is still valid after the job"),
        }
    });
}

/// The standard error files of the application's containers on the NodeManager's disk (log
/// aggregation is off on the secure YARN), with the uid owning each.
fn container_stderr(c: &SecureYarn, application: &str) -> Vec<(PathBuf, u32)> {
    fn walk(dir: &Path, application: &str, inside: bool, out: &mut Vec<(PathBuf, u32)>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for e in entries.flatten() {
            let path = e.path();
            let md = e.metadata().unwrap();
            let here = inside || e.file_name().to_string_lossy() == application;
            if md.is_dir() {
                walk(&path, application, here, out);
            } else if here && e.file_name() == "stderr" {
                out.push((path, md.uid()));
            }
        }
    }
    let mut out = Vec::new();
    walk(
        &Path::new(&c.cluster_dir).join("yarn/work"),
        application,
        false,
        &mut out,
    );
    out
}

fn uid_of(user: &str) -> u32 {
    let o = Command::new("id").args(["-u", user]).output().unwrap();
    String::from_utf8_lossy(&o.stdout).trim().parse().unwrap()
}

#[test]
fn a_secure_job_runs_as_the_user_on_tokens_only_and_compacts_its_partitions() {
    let Some(c) = cluster() else { return };
    let db = fixture(c, "sy_ok");
    let before: Vec<PartState> = DAYS.iter().map(|d| state(c, &db, d)).collect();
    let rows_before: Vec<Vec<String>> = before.iter().map(rows).collect();
    let wrapper = Wrapper::new(c);
    // Who the job is for comes from the ticket cache: no --principal, no keytab.
    let o = timed(on_yarn(c, &db, &wrapper.mapred(), &[]));
    assert_eq!(o.status.code(), Some(0), "{}", describe(&o));
    let (by_part, last) = reports(&o);
    assert_eq!(last["summary"]["compacted"], 2, "{last}");
    assert_eq!(last["yarn"]["succeeded"], true, "{last}");
    let application = last["yarn"]["application"].as_str().unwrap().to_owned();

    for ((day, old), rows_old) in DAYS.iter().zip(&before).zip(&rows_before) {
        let r = &by_part[&format!("{db}.events/dt={day}")];
        assert_eq!(r["status"], "compacted", "{r}");
        assert_eq!(r["files_after"], 1, "{r}");
        let now = state(c, &db, day);
        assert_ne!(now.location, old.location, "dt={day} was swapped");
        assert_eq!(now.files.len(), 1, "{now:?}");
        // Written by the tasks with the job's HDFS token: the user's own.
        assert_eq!(now.files[0].1, c.user, "{now:?}");
        assert_eq!(&rows(&now), rows_old, "dt={day}");
    }

    // Every container of the job ran as the user: its logs on the NodeManager's disk are its.
    let logs = container_stderr(c, &application);
    assert!(logs.len() >= 2, "no container logs of {application}");
    let uid = uid_of(&c.user);
    assert!(logs.iter().all(|(_, o)| *o == uid), "{logs:?} (want {uid})");

    // The job carried a metastore token of the user, and the client cancelled it.
    let token = wrapper.token();
    let id = token.identifier().unwrap();
    assert_eq!(id.owner, c.user);
    // The metastore's maximum lifetime is the cluster's (CLUSTER_TOKEN_MAX_LIFETIME).
    if let Ok(max) = std::env::var("SECURE_TOKEN_MAX_LIFETIME") {
        let max: i64 = max.parse().unwrap();
        assert_eq!(id.max_date - id.issue_date, max * 1000, "{id:?}");
    }
    assert_cancelled(c, token);
}

#[test]
fn a_job_whose_metastore_token_is_cancelled_leaves_its_partitions_untouched() {
    let Some(c) = cluster() else { return };
    let db = fixture(c, "sy_cancelled");
    let before: Vec<PartState> = DAYS.iter().map(|d| state(c, &db, d)).collect();
    // The job client holds the token: cancel it before the job is submitted.
    let (o, _) = held_job(c, &db, &["--principal", &c.principal], |token| {
        rt().block_on(async { metastore(c).await.cancel_delegation_token(token).await })
            .unwrap_or_else(|e| panic!("{e}"));
        true
    });
    assert_ne!(o.status.code(), Some(0), "{}", describe(&o));
    // The job failed by itself: nothing is left to kill.
    assert!(!stderr(&o).contains("killing YARN job"), "{}", describe(&o));
    let (by_part, last) = reports(&o);
    assert_eq!(last["summary"]["failed"], 2, "{last}");
    // Its tasks were refused for the token, each attempt saying so in one line.
    let application = last["yarn"]["application"].as_str().unwrap();
    let refused = container_stderr(c, application)
        .iter()
        .filter(|(f, _)| {
            std::fs::read_to_string(f)
                .unwrap_or_default()
                .lines()
                .any(|l| l.starts_with("error:") && l.contains("refused the delegation token"))
        })
        .count();
    assert!(
        refused >= 2,
        "no task attempt of {application} was refused the token"
    );
    for (day, old) in DAYS.iter().zip(&before) {
        let r = &by_part[&format!("{db}.events/dt={day}")];
        assert_eq!(r["status"], "failed", "{r}");
        assert_eq!(&state(c, &db, day), old, "dt={day} is untouched");
    }
}

/// The job client is held until `ready` says the job's token may be let go; returns the run's
/// output and the token the job carried.
fn held_job(
    c: &SecureYarn,
    db: &str,
    extra: &[&str],
    ready: impl Fn(&DelegationToken) -> bool,
) -> (Output, DelegationToken) {
    let wrapper = Wrapper::new(c);
    std::fs::write(wrapper.dir.path().join("hold"), b"").unwrap();
    let mut cmd = on_yarn(c, db, &wrapper.mapred(), extra);
    cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
    let t0 = Instant::now();
    let child = cmd.spawn().expect("scripts/cluster as-user runs");
    while !wrapper.shipped().exists() {
        assert!(
            t0.elapsed() < Duration::from_secs(120),
            "the tool never reached the job client"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    let token = wrapper.token();
    while !ready(&token) {
        std::thread::sleep(Duration::from_millis(500));
    }
    std::fs::write(wrapper.dir.path().join("go"), b"").unwrap();
    let o = child.wait_with_output().unwrap();
    eprintln!(
        "compact --on-yarn, its job client held: exit {:?} in {:.1}s\n{}",
        o.status.code(),
        t0.elapsed().as_secs_f64(),
        stderr(&o)
    );
    (o, token)
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
}

/// The metastore's renew interval is a minute on the test cluster (scripts/test): the job is
/// held until the token it carries has outlived it, so every task logs in with a token only
/// this host's renewals keep valid (without them the tasks are refused, as the test above
/// shows for a cancelled one).
#[test]
fn the_client_renews_the_jobs_token_so_tasks_log_in_after_its_renew_interval() {
    let Some(c) = cluster() else { return };
    let interval_s: i64 = std::env::var("CLUSTER_TOKEN_RENEW_INTERVAL")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(60);
    if interval_s > 120 {
        eprintln!("tokens live {interval_s}s between renewals: too long to wait for here");
        return;
    }
    let db = fixture(c, "sy_renew");
    let (o, token) = held_job(c, &db, &["-v"], |t| {
        now_ms() > t.identifier().unwrap().issue_date + (interval_s + 10) * 1000
    });
    assert_eq!(o.status.code(), Some(0), "{}", describe(&o));
    let (_, last) = reports(&o);
    assert_eq!(last["summary"]["compacted"], 2, "{last}");
    let renewals = stderr(&o)
        .lines()
        .filter(|l| l.contains("renewed the job's metastore token"))
        .count();
    assert!(renewals >= 2, "{}", describe(&o));
    assert_cancelled(c, token);
}

/// A job whose tokens reach their maximum lifetime (30 minutes on the test cluster) within
/// `--yarn-token-margin` of its tasks' start: the tasks start nothing, every partition is
/// reported failed with the limit and what to do, untouched, and the run exits 1.
#[test]
fn tasks_start_nothing_once_the_tokens_end_within_the_margin() {
    let Some(c) = cluster() else { return };
    let Some(max_s) = std::env::var("SECURE_TOKEN_MAX_LIFETIME")
        .ok()
        .and_then(|v| v.parse::<i64>().ok())
    else {
        eprintln!("SECURE_TOKEN_MAX_LIFETIME is not set (scripts/test sets it): skipped");
        return;
    };
    let db = fixture(c, "sy_margin");
    let before: Vec<PartState> = DAYS.iter().map(|d| state(c, &db, d)).collect();
    // Room at submission (20 s), none by the time a task starts (held 30 s, then YARN's start).
    let margin = format!("{}s", max_s - 20);
    let (o, token) = held_job(c, &db, &["--yarn-token-margin", &margin], |t| {
        now_ms() > t.identifier().unwrap().issue_date + 30_000
    });
    assert_eq!(o.status.code(), Some(1), "{}", describe(&o));
    let (by_part, last) = reports(&o);
    assert_eq!(last["summary"]["failed"], 2, "{last}");
    assert_eq!(last["yarn"]["succeeded"], true, "the tasks ran: {last}");
    for (day, old) in DAYS.iter().zip(&before) {
        let r = &by_part[&format!("{db}.events/dt={day}")];
        assert_eq!(r["status"], "failed", "{r}");
        let reason = r["reason"].as_str().unwrap();
        assert!(reason.contains("maximum lifetime"), "{reason}");
        assert!(reason.contains("new job"), "{reason}");
        assert_eq!(&state(c, &db, day), old, "dt={day} is untouched");
    }
    assert_cancelled(c, token);
}

#[test]
fn without_a_ticket_or_a_principal_the_job_is_refused_in_one_line() {
    let Some(c) = cluster() else { return };
    let db = fixture(c, "sy_no_ticket");
    let before: Vec<PartState> = DAYS.iter().map(|d| state(c, &db, d)).collect();
    let dir = tempfile::tempdir().unwrap();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_hive-orc-compactor"));
    cmd.args(["compact", "--table", &format!("{db}.events"), "--all"])
        .args(["--min-age", "0s", "--on-yarn", "--hadoop-cmd", "false"])
        .env(
            "KRB5CCNAME",
            format!("FILE:{}", dir.path().join("no-ticket").display()),
        );
    only_the_cluster(c, &mut cmd);
    let o = cmd.output().unwrap();
    assert_ne!(o.status.code(), Some(0), "{}", describe(&o));
    let err = stderr(&o);
    let last = err.trim_end().lines().last().unwrap_or_default();
    assert!(
        last.starts_with("error:") && last.contains("kinit"),
        "{}",
        describe(&o)
    );
    for (day, old) in DAYS.iter().zip(&before) {
        assert_eq!(&state(c, &db, day), old, "dt={day} is untouched");
    }
}
