//! Kerberos end to end: the metastore over SASL/GSSAPI and HDFS with Kerberos, against the
//! secured cluster `scripts/cluster start --secure` runs (scripts/test starts one and sets
//! `SECURE_*`). Without `SECURE_HMS_URI` every test here returns at once, saying so.
//!
//! Environment: SECURE_HMS_URI, SECURE_CONF_DIR (core-, hdfs- and hive-site with the security
//! settings), SECURE_KRB5_CONFIG, SECURE_PRINCIPAL, SECURE_KEYTAB, SECURE_HDFS_URL.

#![cfg(feature = "cluster-tests")]

use crate::common;

use std::path::Path;
use std::process::{Command, Output};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use crate::common::{describe, json, rt, stderr};
use hive_orc_compactor::hdfs::{Hdfs, Location};
use hive_orc_compactor::metastore::{Metastore, MetastoreConfig};

use crate::common::secure::{conf_with, orc_table, secure, Secure};

/// Runs the binary with only the secured cluster's configuration: HIVE_CONF_DIR and
/// HADOOP_CONF_DIR name its files (SASL and the server principal come from hive-site.xml), and
/// the ticket cache is an empty file of the test's own unless `ccache` says otherwise.
fn run(s: &Secure, args: &[&str], env: &[(&str, &str)]) -> Output {
    run_program(s, env!("CARGO_BIN_EXE_hive-orc-compactor"), args, env)
}

/// [`run`] for another program (the binary under `faketime`).
fn run_program(s: &Secure, program: &str, args: &[&str], env: &[(&str, &str)]) -> Output {
    let dir = tempfile::tempdir().unwrap();
    let empty_cache = format!("FILE:{}", dir.path().join("no-ticket").display());
    let mut cmd = Command::new(program);
    cmd.args(args)
        .env_remove("HMS_URI")
        .env_remove("HOC_PRINCIPAL")
        .env_remove("HOC_KEYTAB")
        .env_remove("HADOOP_USER_NAME")
        .env("HIVE_CONF_DIR", &s.conf_dir)
        .env("HADOOP_CONF_DIR", &s.conf_dir)
        .env("KRB5_CONFIG", &s.krb5_config)
        .env("KRB5CCNAME", &empty_cache);
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().unwrap_or_else(|e| {
        panic!("{program} does not run ({e}); scripts/install-prereqs installs faketime")
    })
}

fn with_keytab<'a>(s: &'a Secure, args: &[&'a str]) -> Vec<&'a str> {
    let mut all = vec!["--principal", &s.principal, "--keytab", &s.keytab];
    all.extend_from_slice(args);
    all
}

const FILES: usize = 4;
/// `events` is compacted, `to_iceberg` migrated and reverted, by tests that run at once.
const TABLES: [&str; 2] = ["events", "to_iceberg"];

/// A database with two external ORC tables (TABLES) partitioned by dt, each one partition of
/// FILES copies of a small ORC file, all made over SASL and Kerberos HDFS by the library; its
/// name.
fn fixture(s: &Secure) -> &'static str {
    static DB: OnceLock<String> = OnceLock::new();
    DB.get_or_init(|| {
        let db = format!("krb_{}", std::process::id());
        let root = format!("{}/user/hive/external/{db}", s.hdfs_url);
        rt().block_on(async {
            let mut cfg = MetastoreConfig::new(&s.hms_uri).unwrap();
            cfg.sasl_principal = Some(format!("hive/localhost@{}", s.realm));
            let ms = Metastore::connect(cfg)
                .await
                .unwrap_or_else(|e| panic!("{e}"));
            ms.create_database(common::database(&db, &root, "tester", None))
                .await
                .unwrap_or_else(|e| panic!("{e}"));
            for table in TABLES {
                orc_table(&ms, (&db, table), &root, "tester", &["2026-11-01"], FILES).await;
            }
        });
        db
    })
}

#[test]
fn inspect_analyze_and_compact_over_sasl_and_kerberos_hdfs() {
    let Some(s) = secure() else { return };
    let db = fixture(s);
    let table = format!("{db}.events");
    let part = "dt=2026-11-01";

    let o = run(
        s,
        &with_keytab(
            s,
            &["inspect", "--table", &table, "--partition", part, "--json"],
        ),
        &[],
    );
    assert_eq!(o.status.code(), Some(0), "{}", describe(&o));
    let inspected = json(&o);
    assert_eq!(
        inspected["partition_details"]["files"]["count"], FILES as u64,
        "{inspected}"
    );

    let o = run(
        s,
        &with_keytab(s, &["analyze", "--table", &table, "--json"]),
        &[],
    );
    assert_eq!(o.status.code(), Some(0), "{}", describe(&o));
    assert!(
        String::from_utf8_lossy(&o.stdout).contains(part),
        "{}",
        describe(&o)
    );

    let o = run(
        s,
        &with_keytab(
            s,
            &["compact", "--table", &table, "--partition", part, "--json"],
        ),
        &[],
    );
    assert_eq!(o.status.code(), Some(0), "{}", describe(&o));
    let report = json(&o);
    assert_eq!(report["status"], "compacted", "{report}");
    assert_eq!(report["files_before"], FILES as u64, "{report}");
    assert_eq!(report["files_after"], 1, "{report}");
    // Nothing secret in what the tool said: no keytab bytes, no ticket.
    assert!(!stderr(&o).contains("BEGIN"), "{}", stderr(&o));
}

/// The Iceberg hand-over over Kerberos: the footers are read over SASL HDFS, the commit goes
/// through the SASL metastore under its lock, and revert gives the Hive table back.
#[test]
fn iceberg_check_migrate_and_revert_over_kerberos() {
    let Some(s) = secure() else { return };
    let table = format!("{}.to_iceberg", fixture(s));
    let step = |command: &str, code: i32| {
        let o = run(
            s,
            &with_keytab(s, &["iceberg", command, "--table", &table, "--json"]),
            &[],
        );
        assert_eq!(o.status.code(), Some(code), "{}", describe(&o));
        json(&o)
    };
    let check = |code: i32, status: &str| {
        let report = step("check", code);
        assert_eq!(report["tables"][0]["status"], status, "{report}");
    };
    check(0, "ready");
    let migrated = step("migrate", 0);
    assert_eq!(migrated["status"], "migrated", "{migrated}");
    assert_eq!(migrated["costs"]["files"], FILES as u64, "{migrated}");
    check(3, "refused");
    assert_eq!(step("revert", 0)["status"], "reverted");
    check(0, "ready");
}

#[test]
fn the_host_placeholder_becomes_the_uri_host() {
    let Some(s) = secure() else { return };
    // The cluster's principal is hive/localhost: reach it as thrift://localhost:port.
    let uri = s.hms_uri.replace("127.0.0.1", "localhost");
    let principal = format!("hive/_HOST@{}", s.realm);
    let o = run(
        s,
        &with_keytab(
            s,
            &[
                "--metastore",
                &uri,
                "--metastore-principal",
                &principal,
                "analyze",
                "--database",
                "default",
            ],
        ),
        &[],
    );
    assert_eq!(o.status.code(), Some(0), "{}", describe(&o));
}

#[test]
fn no_ticket_says_kinit() {
    let Some(s) = secure() else { return };
    let o = run(s, &["analyze", "--database", "default"], &[]);
    assert_eq!(o.status.code(), Some(1), "{}", describe(&o));
    let err = stderr(&o);
    let last = err.lines().last().unwrap_or_default();
    assert!(last.contains("no Kerberos ticket"), "{err}");
    assert!(last.contains("kinit"), "{err}");
}

#[test]
fn a_wrong_server_principal_is_named() {
    let Some(s) = secure() else { return };
    let wrong = format!("hive/nosuchhost@{}", s.realm);
    let o = run(
        s,
        &with_keytab(
            s,
            &[
                "--metastore-principal",
                &wrong,
                "analyze",
                "--database",
                "default",
            ],
        ),
        &[],
    );
    assert_eq!(o.status.code(), Some(1), "{}", describe(&o));
    let err = stderr(&o);
    assert!(
        err.contains(&format!("does not know the server principal {wrong}")),
        "{err}"
    );
}

#[test]
fn an_unreachable_kdc_is_named() {
    let Some(s) = secure() else { return };
    let dir = tempfile::tempdir().unwrap();
    let conf = std::fs::read_to_string(&s.krb5_config).unwrap();
    let port = common::free_port();
    let moved: String = conf
        .lines()
        .map(|l| {
            if l.trim_start().starts_with("kdc =") {
                format!("    kdc = 127.0.0.1:{port}")
            } else {
                l.to_owned()
            }
        })
        .collect::<Vec<_>>()
        .join("\n");
    let path = dir.path().join("krb5.conf");
    std::fs::write(&path, moved).unwrap();
    let o = run(
        s,
        &with_keytab(s, &["analyze", "--database", "default"]),
        &[("KRB5_CONFIG", path.to_str().unwrap())],
    );
    assert_eq!(o.status.code(), Some(1), "{}", describe(&o));
    assert!(
        stderr(&o).contains("cannot reach the KDC"),
        "{}",
        describe(&o)
    );
}

/// `kinit -k -t KEYTAB PRINCIPAL` (and `extra`, e.g. `-l 2s`) into the FILE cache `cache`,
/// with the cluster's krb5.conf: a ticket cache as a user's `kinit` leaves it.
fn kinit(s: &Secure, cache: &Path, extra: &[&str]) -> String {
    let name = format!("FILE:{}", cache.display());
    let o = Command::new("kinit")
        .args(extra)
        .args(["-k", "-t", &s.keytab, &s.principal])
        .env("KRB5_CONFIG", &s.krb5_config)
        .env("KRB5CCNAME", &name)
        .output()
        .expect("kinit runs (scripts/install-prereqs installs krb5-user)");
    assert!(o.status.success(), "kinit: {}", describe(&o));
    name
}

/// The last line the tool wrote to stderr: its error.
fn last_line(o: &Output) -> String {
    stderr(o).lines().last().unwrap_or_default().to_owned()
}

/// The cluster's krb5.conf with `lines` added to [libdefaults], in `dir`.
fn krb5_conf_with(s: &Secure, dir: &Path, lines: &str) -> String {
    let conf = std::fs::read_to_string(&s.krb5_config).unwrap();
    let path = dir.join("krb5.conf");
    std::fs::write(
        &path,
        conf.replacen("[libdefaults]", &format!("[libdefaults]\n{lines}"), 1),
    )
    .unwrap();
    path.to_str().unwrap().to_owned()
}

#[test]
fn a_kinit_ticket_cache_serves_the_metastore_and_hdfs() {
    let Some(s) = secure() else { return };
    let db = fixture(s);
    let table = format!("{db}.events");
    let dir = tempfile::tempdir().unwrap();
    let cache = kinit(s, &dir.path().join("cc"), &[]);
    // No --principal/--keytab: the cache's default principal, for both services.
    let o = run(
        s,
        &[
            "inspect",
            "--table",
            &table,
            "--partition",
            "dt=2026-11-01",
            "--json",
        ],
        &[("KRB5CCNAME", &cache)],
    );
    assert_eq!(o.status.code(), Some(0), "{}", describe(&o));
    assert_eq!(
        json(&o)["partition_details"]["files"]["count"],
        FILES as u64
    );
    let o = run(
        s,
        &["analyze", "--table", &table, "--json"],
        &[("KRB5CCNAME", &cache)],
    );
    assert_eq!(o.status.code(), Some(0), "{}", describe(&o));
    assert!(stdout_has(&o, "dt=2026-11-01"), "{}", describe(&o));
}

fn stdout_has(o: &Output, what: &str) -> bool {
    String::from_utf8_lossy(&o.stdout).contains(what)
}

#[test]
fn an_expired_ticket_says_kinit() {
    let Some(s) = secure() else { return };
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("cc");
    // The KDC (Kerby) grants the few seconds asked for.
    let cache = kinit(s, &path, &["-l", "5s"]);
    let deadline = Instant::now() + Duration::from_secs(30);
    // `klist -s`: exit 0 while the cache holds a valid ticket.
    while Command::new("klist")
        .args(["-s", "-c", &cache])
        .status()
        .unwrap()
        .success()
    {
        assert!(Instant::now() < deadline, "the 5 s ticket did not expire");
        std::thread::sleep(Duration::from_millis(500));
    }
    let o = run(
        s,
        &["analyze", "--database", "default"],
        &[("KRB5CCNAME", &cache)],
    );
    assert_eq!(o.status.code(), Some(1), "{}", describe(&o));
    let last = last_line(&o);
    assert!(last.contains("the Kerberos ticket has expired"), "{last}");
    assert!(last.contains("run `kinit"), "{last}");
}

#[test]
fn no_ticket_for_hdfs_says_kinit() {
    let Some(s) = secure() else { return };
    let db = fixture(s);
    let dir = tempfile::tempdir().unwrap();
    // A cache with a ticket for the metastore only (no TGT): the metastore lets the tool in,
    // and the first HDFS call is what has no ticket.
    let service = format!("hive/localhost@{}", s.realm);
    let cache = kinit(s, &dir.path().join("cc"), &["-S", &service]);
    let o = run(
        s,
        &[
            "inspect",
            "--table",
            &format!("{db}.events"),
            "--partition",
            "dt=2026-11-01",
        ],
        &[("KRB5CCNAME", &cache)],
    );
    assert_eq!(o.status.code(), Some(1), "{}", describe(&o));
    let last = last_line(&o);
    assert!(
        last.contains("Kerberos authentication to HDFS failed: no Kerberos ticket: run `kinit"),
        "{last}"
    );
}

#[test]
fn clock_skew_is_named() {
    let Some(s) = secure() else { return };
    let dir = tempfile::tempdir().unwrap();
    // MIT corrects its clock from the KDC's reply unless kdc_timesync = 0.
    let no_sync = krb5_conf_with(s, dir.path(), "  kdc_timesync = 0");
    let bin = env!("CARGO_BIN_EXE_hive-orc-compactor");
    let skewed = |krb5: &str, cache: Option<&str>| {
        // Two hours ahead (the KDC allows five minutes); tokio's monotonic clock untouched.
        let mut args = vec!["-f", "+2h", bin];
        let command = ["analyze", "--database", "default"];
        match cache {
            Some(_) => args.extend(command),
            None => args.extend(with_keytab(s, &command)),
        }
        let mut env = vec![("KRB5_CONFIG", krb5), ("FAKETIME_DONT_FAKE_MONOTONIC", "1")];
        env.extend(cache.map(|c| ("KRB5CCNAME", c)));
        run_program(s, "faketime", &args, &env)
    };
    let says_skew = |o: &Output| {
        assert_eq!(o.status.code(), Some(1), "{}", describe(o));
        let last = last_line(o);
        assert!(last.contains("clock skew too great"), "{last}");
        assert!(last.contains("NTP"), "{last}");
    };
    // A keytab login: the client refuses the KDC's reply ("Clock skew too great in KDC reply").
    says_skew(&skewed(&no_sync, None));
    // With MIT's default (kdc_timesync = 1) a keytab login adopts the KDC's time.
    let o = skewed(&s.krb5_config, None);
    assert_eq!(o.status.code(), Some(0), "{}", describe(&o));
    // Tickets `kinit` got at the right time, used from the skewed clock: the KDC refuses.
    let cache = kinit(s, &dir.path().join("cc"), &[]);
    says_skew(&skewed(&s.krb5_config, Some(&cache)));
}

#[test]
fn the_client_chooses_the_protection_by_hadoop_rpc_protection() {
    let Some(s) = secure() else { return };
    let db = fixture(s);
    let table = format!("{db}.events");
    // The cluster's metastore offers all three; hive-site.xml wins over core-site.xml.
    for (file, value, chosen) in [
        ("hive-site.xml", "integrity", "integrity"),
        ("core-site.xml", "privacy", "privacy"),
        ("core-site.xml", "authentication", "authentication"),
        (
            "core-site.xml",
            "authentication,integrity",
            "authentication",
        ),
    ] {
        let conf = conf_with(s, file, &[("hadoop.rpc.protection", value)]);
        let dir = conf.path().to_str().unwrap();
        let o = run(
            s,
            &with_keytab(
                s,
                &["inspect", "--table", &table, "--partition", "dt=2026-11-01"],
            ),
            &[
                ("HIVE_CONF_DIR", dir),
                ("HADOOP_CONF_DIR", dir),
                ("RUST_LOG", "hive_orc_compactor::metastore::session=debug"),
            ],
        );
        assert_eq!(o.status.code(), Some(0), "{value}: {}", describe(&o));
        // Every call went through the negotiated layer (wrapped unless authentication).
        assert!(
            stderr(&o).contains(&format!("qop=\"{chosen}\"")),
            "{value}: {}",
            describe(&o)
        );
    }
}

/// Set in the child process of [`a_keytab_login_outlives_its_tickets`].
const SHORT_TICKETS: &str = "KERBEROS_TEST_SHORT_TICKETS";

#[test]
fn a_keytab_login_outlives_its_tickets() {
    let Some(s) = secure() else { return };
    let lifetime = Duration::from_secs(8);
    if std::env::var_os(SHORT_TICKETS).is_none() {
        // This test again, in a process of its own whose krb5.conf asks for 8 s tickets (the
        // Kerberos library reads it per process; the other tests keep theirs).
        let dir = tempfile::tempdir().unwrap();
        let conf = krb5_conf_with(s, dir.path(), "  ticket_lifetime = 8s");
        let trace = dir.path().join("krb5.trace");
        let o = Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                // Its name in the one test binary: the area's module, then the test.
                "kerberos::a_keytab_login_outlives_its_tickets",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(SHORT_TICKETS, "1")
            .env("SECURE_KRB5_CONFIG", &conf)
            .env("KRB5_TRACE", &trace)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", describe(&o));
        assert!(stdout_has(&o, "1 passed"), "{}", describe(&o));
        // MIT's trace ("[pid] seconds.micros: message"; never printed here, it holds key
        // prefixes): the keytab logins, and the last a lifetime after the first.
        let logins: Vec<f64> = std::fs::read_to_string(&trace)
            .unwrap()
            .lines()
            .filter(|l| l.contains("Getting initial credentials for"))
            .filter_map(|l| l.split_once("] ")?.1.split_once(':')?.0.parse().ok())
            .collect();
        let span = logins.last().unwrap_or(&0.0) - logins.first().unwrap_or(&0.0);
        assert!(
            span >= lifetime.as_secs_f64(),
            "no new keytab login once the first tickets expired: {logins:?}"
        );
        return;
    }
    rt().block_on(async {
        let mut cfg = MetastoreConfig::new(&s.hms_uri).unwrap();
        cfg.sasl_principal = Some(format!("hive/localhost@{}", s.realm));
        // A failure must show, not be retried on a new connection.
        cfg.retries = 0;
        let ms = Metastore::connect(cfg.clone())
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        let hdfs = Hdfs::new();
        let root = Location::parse(&format!("{}/user/hive", s.hdfs_url)).unwrap();
        hdfs.list(&root).await.unwrap_or_else(|e| panic!("{e}"));
        ms.databases().await.unwrap_or_else(|e| panic!("{e}"));
        // Every ticket the process holds, and the metastore's security context, expire.
        tokio::time::sleep(lifetime + Duration::from_secs(2)).await;
        ms.databases()
            .await
            .unwrap_or_else(|e| panic!("the connection after its ticket expired: {e}"));
        hdfs.list(&root)
            .await
            .unwrap_or_else(|e| panic!("HDFS after the ticket expired: {e}"));
        // New connections: new tickets from the keytab.
        let again = Metastore::connect(cfg)
            .await
            .unwrap_or_else(|e| panic!("a new connection after the ticket expired: {e}"));
        again.databases().await.unwrap_or_else(|e| panic!("{e}"));
        Hdfs::new()
            .list(&root)
            .await
            .unwrap_or_else(|e| panic!("a new HDFS client after the ticket expired: {e}"));
    });
}
