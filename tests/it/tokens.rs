//! Delegation tokens end to end, as a YARN task uses them: a client with a Kerberos login gets a
//! metastore token, a credentials file carries it (with an HDFS token from Hadoop's own
//! `fetchdt`), and the binary, run with no ticket and no keytab, reaches the metastore over SASL
//! DIGEST-MD5 and HDFS with its token. Against the secured cluster of `scripts/cluster start
//! --secure`; without `SECURE_HMS_URI` every test here returns at once, saying so.
//!
//! Environment: as tests/kerberos.rs (SECURE_HMS_URI, SECURE_CONF_DIR, SECURE_KRB5_CONFIG,
//! SECURE_PRINCIPAL, SECURE_KEYTAB, SECURE_HDFS_URL), plus SECURE_CLUSTER_DIR, the cluster's
//! state directory, for `scripts/cluster fetchdt` (the HDFS token) and `scripts/cluster hms
//! restart` (the metastore's protection).

#![cfg(feature = "cluster-tests")]

use crate::common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::{OnceLock, PoisonError, RwLock, RwLockReadGuard};
use std::time::{Duration, Instant};

use crate::common::{describe, json, rt, stderr, stdout};
use hive_orc_compactor::hdfs::{Hdfs, Location};
use hive_orc_compactor::metastore::security::token::{
    read_credentials, write_credentials, DelegationToken, HIVE_DELEGATION_KIND,
};
use hive_orc_compactor::metastore::{Metastore, MetastoreConfig};

use crate::common::secure::{conf_with, orc_table, restart_metastore, secure, token_login, Secure};

/// The metastore's protection belongs to the whole secured cluster: the test that restarts it
/// with another holds this for writing, every other test here for reading, so none sees the
/// metastore go away or loses its token (the metastore keeps tokens in memory only).
static METASTORE: RwLock<()> = RwLock::new(());

fn shared_metastore() -> RwLockReadGuard<'static, ()> {
    METASTORE.read().unwrap_or_else(PoisonError::into_inner)
}

/// The binary as a task runs it: the cluster's configuration, an empty ticket cache of its own,
/// no keytab, and the job's credentials file in HADOOP_TOKEN_FILE_LOCATION.
fn run_as_task(s: &Secure, token_file: &Path, args: &[&str]) -> Output {
    run_as_task_with(s, token_file, args, &[])
}

/// [`run_as_task`] with `env` added (e.g. HIVE_CONF_DIR for another configuration).
fn run_as_task_with(s: &Secure, token_file: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    let dir = tempfile::tempdir().unwrap();
    let empty_cache = format!("FILE:{}", dir.path().join("no-ticket").display());
    Command::new(env!("CARGO_BIN_EXE_hive-orc-compactor"))
        .args(args)
        .env_remove("HMS_URI")
        .env_remove("HOC_PRINCIPAL")
        .env_remove("HOC_KEYTAB")
        .env_remove("HADOOP_USER_NAME")
        .env("HIVE_CONF_DIR", &s.conf_dir)
        .env("HADOOP_CONF_DIR", &s.conf_dir)
        .env("KRB5_CONFIG", &s.krb5_config)
        .env("KRB5CCNAME", &empty_cache)
        .env("HADOOP_TOKEN_FILE_LOCATION", token_file)
        .envs(env.iter().copied())
        .output()
        .unwrap()
}

async fn kerberos_metastore(s: &Secure) -> Metastore {
    let mut cfg = MetastoreConfig::new(&s.hms_uri).unwrap();
    cfg.sasl_principal = Some(format!("hive/localhost@{}", s.realm));
    Metastore::connect(cfg)
        .await
        .unwrap_or_else(|e| panic!("{e}"))
}

/// An HDFS delegation token for the client, from Hadoop's own `hdfs fetchdt` (so the credentials
/// file it writes is read here too).
fn hdfs_token(s: &Secure, dir: &Path) -> DelegationToken {
    let file = dir.join("hdfs.token");
    let o = Command::new(concat!(env!("CARGO_MANIFEST_DIR"), "/scripts/cluster"))
        .args(["fetchdt", "--renewer", "tester"])
        .arg(&file)
        .env(
            "CLUSTER_DIR",
            s.cluster_dir
                .as_deref()
                .expect("SECURE_CLUSTER_DIR is not set"),
        )
        .output()
        .unwrap();
    assert!(o.status.success(), "fetchdt: {}", describe(&o));
    let creds = read_credentials(&file).unwrap_or_else(|e| panic!("{e}"));
    let (_, t) = creds
        .tokens
        .iter()
        .find(|(_, t)| t.kind == "HDFS_DELEGATION_TOKEN")
        .unwrap_or_else(|| panic!("no HDFS token in {creds:?}"));
    t.clone()
}

/// The one error line a failed run ends with (log lines, e.g. a per-URI warning, may precede it):
/// exactly one line starts with "error:" and it is the last.
fn error_line(o: &Output) -> String {
    let err = stderr(o);
    let errors: Vec<&str> = err.lines().filter(|l| l.starts_with("error:")).collect();
    assert_eq!(errors.len(), 1, "{err}");
    assert_eq!(err.trim_end().lines().last(), Some(errors[0]), "{err}");
    errors[0].to_owned()
}

const FILES: usize = 3;

/// The fixture's partitions: the first for the token tests, the others for the metastore under
/// privacy and under integrity.
const PARTITIONS: [&str; 3] = ["2026-11-01", "2026-11-02", "2026-11-03"];

/// A database with two external ORC tables, `events` and `waiting`, partitioned by dt, each of
/// [`PARTITIONS`] of FILES small ORC files, made with the client's Kerberos login; its name.
fn fixture(s: &Secure) -> &'static str {
    static DB: OnceLock<String> = OnceLock::new();
    DB.get_or_init(|| {
        let db = format!("tok_{}", std::process::id());
        let root = format!("{}/user/hive/external/{db}", s.hdfs_url);
        rt().block_on(async {
            let ms = kerberos_metastore(s).await;
            ms.create_database(common::database(&db, &root, "tester", None))
                .await
                .unwrap_or_else(|e| panic!("{e}"));
            orc_table(&ms, (&db, "events"), &root, "tester", &PARTITIONS, FILES).await;
            // For the `--on-yarn` tests, which submit to a refusing `mapred`: a table no other
            // test compacts, so its partitions always have work and reach the job's work list.
            orc_table(&ms, (&db, "waiting"), &root, "tester", &PARTITIONS, FILES).await;
        });
        db
    })
}

#[test]
fn a_task_with_only_a_token_file_inspects_and_compacts_until_the_token_is_cancelled() {
    let Some(s) = secure() else { return };
    let _shared = shared_metastore();
    let table = format!("{}.events", fixture(s));
    let part = "dt=2026-11-01";
    let dir = tempfile::tempdir().unwrap();

    // The submitting client: a metastore token for itself, renewable by itself.
    let ms = rt().block_on(kerberos_metastore(s));
    let token = rt()
        .block_on(ms.delegation_token("tester", &s.principal))
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(token.kind, HIVE_DELEGATION_KIND);
    let id = token.identifier().expect("Hadoop's identifier layout");
    assert_eq!(id.owner, "tester", "{id:?}");
    assert!(id.max_date > id.issue_date, "{id:?}");
    // The string form round-trips to what the metastore gave.
    assert_eq!(DelegationToken::decode(&token.encode()).unwrap(), token);

    // The job's credentials file, as YARN would hand it to a container: HDFS and metastore.
    let file = dir.path().join("container_tokens");
    write_credentials(&file, &[hdfs_token(s, dir.path()), token.clone()])
        .unwrap_or_else(|e| panic!("{e}"));
    let back = read_credentials(&file).unwrap();
    assert_eq!(back.metastore_token(""), Some(&token));

    let inspect = ["inspect", "--table", &table, "--partition", part, "--json"];
    let o = run_as_task(s, &file, &inspect);
    assert_eq!(o.status.code(), Some(0), "{}", describe(&o));
    assert_eq!(
        json(&o)["partition_details"]["files"]["count"],
        FILES as u64,
        "{}",
        describe(&o)
    );

    let o = run_as_task(
        s,
        &file,
        &["compact", "--table", &table, "--partition", part, "--json"],
    );
    assert_eq!(o.status.code(), Some(0), "{}", describe(&o));
    let report = json(&o);
    assert_eq!(report["status"], "compacted", "{report}");
    assert_eq!(report["files_after"], 1, "{report}");

    // Cancelled: the same task is refused, in one line that says why and what to do.
    rt().block_on(ms.cancel_delegation_token(&token))
        .unwrap_or_else(|e| panic!("{e}"));
    let o = run_as_task(s, &file, &inspect);
    assert_ne!(o.status.code(), Some(0), "{}", describe(&o));
    let line = error_line(&o);
    assert!(line.contains("invalid or expired"), "{line}");
    assert!(line.contains("get a new one"), "{line}");
    assert!(line.contains(&file.display().to_string()), "{line}");
}

/// Puts the metastore back to offering every protection when dropped, however the test ends:
/// the other tests share it.
struct DefaultProtectionAfter<'a>(&'a Secure);

impl Drop for DefaultProtectionAfter<'_> {
    fn drop(&mut self) {
        match restart_metastore(self.0, None) {
            Ok(took) => eprintln!("metastore back to all three protections in {took:?}"),
            // Not a panic: this may run while one unwinds.
            Err(e) => eprintln!("could not restore the metastore's protections: {e}"),
        }
    }
}

/// The metastore restarted to offer `privacy` only, then `integrity` only: a task with only a
/// token file (SASL DIGEST-MD5, 3DES for privacy) inspects and compacts a partition, the
/// Kerberos client (GSSAPI) works too, and a client that accepts only `authentication` is
/// refused in one line that names both sides' protections and the setting to change.
#[test]
fn a_privacy_or_integrity_only_metastore_serves_token_and_kerberos_logins() {
    let Some(s) = secure() else { return };
    let _alone = METASTORE.write().unwrap_or_else(PoisonError::into_inner);
    let table = format!("{}.events", fixture(s));
    let dir = tempfile::tempdir().unwrap();
    let t0 = Instant::now();
    let mut restarts = Duration::ZERO;
    let _restore = DefaultProtectionAfter(s);
    let debug = ("RUST_LOG", "hive_orc_compactor::metastore::session=debug");
    for (protection, dt, cipher) in [
        ("privacy", PARTITIONS[1], "3des"),
        ("integrity", PARTITIONS[2], "none"),
    ] {
        restarts += restart_metastore(s, Some(protection)).unwrap_or_else(|e| panic!("{e}"));
        // Kerberos: the library's own login (the strongest offered: the only one).
        let ms = rt().block_on(kerberos_metastore(s));
        let token = rt()
            .block_on(ms.delegation_token("tester", &s.principal))
            .unwrap_or_else(|e| panic!("{protection}: {e}"));
        // The HDFS token too is fetched after the restart: nothing renews it, and one fetched
        // before both restarts (each up to half a minute) expired at the test cluster's 60 s
        // renew interval.
        let own = dir.path().join(protection);
        std::fs::create_dir(&own).unwrap();
        let hdfs = hdfs_token(s, &own);
        let file = dir.path().join(format!("tokens-{protection}"));
        write_credentials(&file, &[hdfs, token.clone()]).unwrap();

        let part = format!("dt={dt}");
        let inspect = ["inspect", "--table", &table, "--partition", &part, "--json"];
        let o = run_as_task_with(s, &file, &inspect, &[debug]);
        assert_eq!(o.status.code(), Some(0), "{protection}: {}", describe(&o));
        assert_eq!(
            json(&o)["partition_details"]["files"]["count"],
            FILES as u64
        );
        let negotiated = format!("qop=\"{protection}\" cipher=\"{cipher}\"");
        assert!(
            stderr(&o).contains(&negotiated),
            "{negotiated}: {}",
            describe(&o)
        );
        let compact = ["compact", "--table", &table, "--partition", &part, "--json"];
        let o = run_as_task(s, &file, &compact);
        assert_eq!(o.status.code(), Some(0), "{protection}: {}", describe(&o));
        let report = json(&o);
        assert_eq!(report["status"], "compacted", "{protection}: {report}");
        assert_eq!(report["files_after"], 1, "{protection}: {report}");

        // The client accepting only authentication: the token login, then Kerberos.
        let conf = conf_with(
            s,
            "hive-site.xml",
            &[("hadoop.rpc.protection", "authentication")],
        );
        let conf = conf.path().to_str().unwrap();
        let o = run_as_task_with(s, &file, &inspect, &[("HIVE_CONF_DIR", conf)]);
        assert_eq!(o.status.code(), Some(1), "{protection}: {}", describe(&o));
        let line = error_line(&o);
        for says in [
            "delegation token authentication to metastore",
            &format!(
                "offers SASL protection {protection}, this client accepts only authentication"
            ),
            "set hadoop.rpc.protection",
        ] {
            assert!(line.contains(says), "{says}: {line}");
        }
        let mut cfg = MetastoreConfig::new(&s.hms_uri).unwrap();
        cfg.sasl_principal = Some(format!("hive/localhost@{}", s.realm));
        cfg.sasl_protection = Some("authentication".into());
        match rt().block_on(Metastore::connect(cfg)) {
            Err(e) => {
                let e = e.to_string();
                assert!(e.starts_with("Kerberos authentication to metastore"), "{e}");
                assert!(
                    e.contains(&format!("offers SASL protection {protection}")),
                    "{e}"
                );
            }
            Ok(_) => panic!("{protection}: an authentication-only client logged in"),
        }
        rt().block_on(ms.cancel_delegation_token(&token))
            .unwrap_or_else(|e| panic!("{e}"));
    }
    eprintln!(
        "two protections in {:?}, of which the two metastore restarts {restarts:?}",
        t0.elapsed()
    );
}

#[test]
fn a_corrupt_credentials_file_is_one_line_naming_it() {
    let Some(s) = secure() else { return };
    let _shared = shared_metastore();
    let table = format!("{}.events", fixture(s));
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("container_tokens");
    for bytes in [&b"HDTS\x00\x02\x05ali"[..], b"not a token file at all"] {
        std::fs::write(&file, bytes).unwrap();
        let o = run_as_task(s, &file, &["inspect", "--table", &table]);
        assert_ne!(o.status.code(), Some(0), "{}", describe(&o));
        let line = error_line(&o);
        assert!(line.contains(&file.display().to_string()), "{line}");
        assert!(line.contains("credentials file"), "{line}");
    }
}

#[test]
fn a_token_from_one_metastore_connection_is_refused_once_cancelled() {
    // The library alone: a second token, cancelled, then a DIGEST-MD5 login with it fails with
    // the error callers branch on; a live one succeeds.
    let Some(s) = secure() else { return };
    let _shared = shared_metastore();
    rt().block_on(async {
        let ms = kerberos_metastore(s).await;
        let live = ms.delegation_token("tester", &s.principal).await.unwrap();
        let dead = ms.delegation_token("tester", &s.principal).await.unwrap();
        ms.cancel_delegation_token(&dead).await.unwrap();
        let with = |t: &DelegationToken| token_login(&s.hms_uri, t);
        let over_token = Metastore::connect(with(&live))
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(over_token
            .databases()
            .await
            .unwrap()
            .contains(&"default".to_owned()));
        match Metastore::connect(with(&dead)).await {
            Err(hive_orc_compactor::metastore::MetastoreError::TokenRejected { .. }) => {}
            Err(e) => panic!("{e}"),
            Ok(_) => panic!("a cancelled token logged in"),
        }
        ms.cancel_delegation_token(&live).await.unwrap();
    });
}

/// A `mapred` of the test's own in `dir`, standing in for Hadoop's job client up to the
/// submission: it keeps its arguments (`<capture>.args`) and the credentials file it is given
/// (`<capture>`), then fails the submission. Returns (mapred, capture).
fn refusing_mapred(dir: &Path) -> (PathBuf, PathBuf) {
    let capture = dir.join("shipped");
    let mapred = dir.join("mapred");
    std::fs::write(
        &mapred,
        format!(
            "#!/bin/sh\nprintf '%s\\n' \"$@\" > {capture}.args\nfor a in \"$@\"; do\n  case $a in\n    \
             mapreduce.job.credentials.binary=*) cp \"${{a#*=}}\" {capture} ;;\n  esac\ndone\n\
             echo 'ERROR streaming.StreamJob: not submitted by the test' >&2\nexit 1\n",
            capture = capture.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&mapred, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    (mapred, capture)
}

/// `compact --on-yarn` of the fixture table as the Kerberos client, with `mapred`, then `extra`.
fn on_yarn_as_client(s: &Secure, table: &str, mapred: &Path, extra: &[&str]) -> Output {
    let keytab = &s.keytab;
    Command::new(env!("CARGO_BIN_EXE_hive-orc-compactor"))
        .args([
            "compact",
            "--table",
            table,
            "--all",
            "--min-age",
            "0s",
            "--json",
        ])
        .args(["--principal", &s.principal, "--keytab", keytab])
        .args(["--on-yarn", "--hadoop-cmd"])
        .arg(mapred)
        .args(["--yarn-dir", &format!("{}/tmp/tok-yarn", s.hdfs_url)])
        .args(extra)
        .env_remove("HMS_URI")
        .env_remove("HADOOP_TOKEN_FILE_LOCATION")
        .env("HIVE_CONF_DIR", &s.conf_dir)
        .env("HADOOP_CONF_DIR", &s.conf_dir)
        .env("KRB5_CONFIG", &s.krb5_config)
        .output()
        .unwrap()
}

/// The settings file a `compact --on-yarn` of the table would ship to its tasks (its
/// `--dry-run` prints it), with `extra`.
fn task_settings(s: &Secure, table: &str, mapred: &Path, extra: &[&str]) -> String {
    let o = on_yarn_as_client(s, table, mapred, &[extra, &["--dry-run"]].concat());
    assert_eq!(o.status.code(), Some(0), "{}", describe(&o));
    let plan = stdout(&o)
        .lines()
        .find_map(|l| {
            serde_json::from_str::<serde_json::Value>(l)
                .ok()?
                .get("yarn_plan")
                .cloned()
        })
        .unwrap_or_else(|| panic!("a yarn_plan: {}", describe(&o)));
    plan["task_settings"].as_str().unwrap().to_string()
}

/// `compact --on-yarn` against the Kerberos metastore, up to the job's submission: the client
/// gets a metastore token for its principal, hands it to the job client in
/// `mapreduce.job.credentials.binary`, tells the tasks to log in over SASL, and cancels the
/// token when the job ends. A secure YARN does not run here (its container executor refuses
/// root), so a `mapred` of the test's own takes the place of Hadoop's job client: it keeps
/// the credentials file and the arguments, and fails the submission. What a task then does
/// with such a file is the test above.
#[test]
fn on_yarn_ships_a_metastore_token_to_the_job_and_cancels_it() {
    let Some(s) = secure() else { return };
    let _shared = shared_metastore();
    let table = format!("{}.waiting", fixture(s));
    let dir = tempfile::tempdir().unwrap();
    let (mapred, capture) = refusing_mapred(dir.path());
    let keytab = &s.keytab;
    let o = on_yarn_as_client(s, &table, &mapred, &[]);
    assert_eq!(
        o.status.code(),
        Some(1),
        "the job was not submitted: {}",
        describe(&o)
    );
    assert!(
        stderr(&o).contains("not submitted by the test"),
        "{}",
        describe(&o)
    );

    // The job client was handed a credentials file holding a metastore token for the
    // client's principal, and the tasks were told to log in over SASL.
    let shipped = read_credentials(&capture).unwrap_or_else(|e| panic!("{e}"));
    let token = shipped
        .metastore_token("")
        .expect("a metastore token")
        .clone();
    assert_eq!(token.identifier().unwrap().owner, "tester");
    let args = std::fs::read_to_string(format!("{}.args", capture.display())).unwrap();
    let mapper = args.lines().skip_while(|l| *l != "-mapper").nth(1).unwrap();
    assert!(mapper.ends_with("--config settings.toml"), "{mapper}");
    let settings = task_settings(s, &table, &mapred, &[]);
    assert!(settings.contains("metastore_principal = "), "{settings}");
    assert!(
        !args.contains(keytab.as_str()),
        "no keytab reaches the tasks: {args}"
    );
    // The local file is gone, and the token cancelled: a login with it is refused.
    let local = args
        .lines()
        .find_map(|l| l.strip_prefix("mapreduce.job.credentials.binary="))
        .unwrap();
    assert!(!Path::new(local).exists(), "{local} left behind");
    rt().block_on(async {
        match Metastore::connect(token_login(&s.hms_uri, &token)).await {
            Err(hive_orc_compactor::metastore::MetastoreError::TokenRejected { .. }) => {}
            Err(e) => panic!("{e}"),
            Ok(_) => panic!("the job's token is still valid after the job"),
        }
    });
}

/// `--yarn-keytab`, for metastores that refuse tokens: the tasks get the keytab (uploaded with
/// the job and localised as `keytab`) and log in with it; no token is shipped.
#[test]
fn on_yarn_with_yarn_keytab_ships_the_keytab_not_a_token() {
    let Some(s) = secure() else { return };
    let _shared = shared_metastore();
    let table = format!("{}.waiting", fixture(s));
    let dir = tempfile::tempdir().unwrap();
    let (mapred, capture) = refusing_mapred(dir.path());
    let o = on_yarn_as_client(s, &table, &mapred, &["--yarn-keytab"]);
    assert_eq!(
        o.status.code(),
        Some(1),
        "the job was not submitted: {}",
        describe(&o)
    );
    let args = std::fs::read_to_string(format!("{}.args", capture.display())).unwrap();
    assert!(!capture.exists(), "no credentials file: {args}");
    let files = args.lines().skip_while(|l| *l != "-files").nth(1).unwrap();
    assert!(files.ends_with("/keytab#keytab"), "{files}");
    assert!(files.contains("/settings.toml#settings.toml,"), "{files}");
    let settings = task_settings(s, &table, &mapred, &["--yarn-keytab"]);
    assert!(settings.contains("keytab = \"keytab\""), "{settings}");
    assert!(
        settings.contains(&format!("principal = \"{}\"", s.principal)),
        "{settings}"
    );
    // The work directory, keytab and settings included, is gone.
    let last = files.rsplit(',').next().unwrap();
    let dir = last.trim_end_matches("/keytab#keytab");
    let listed = rt().block_on(Hdfs::new().list(&Location::parse(dir).unwrap()));
    assert!(matches!(listed, Ok(None)), "{dir}: {listed:?}");
}

/// The seconds a token lives between renewals on this metastore, from a renewal of `t` (which
/// answers its new expiry).
async fn renew_interval(ms: &Metastore, t: &DelegationToken) -> u64 {
    let expiry = ms
        .renew_delegation_token(t)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64;
    ((expiry - now).max(0) / 1000) as u64
}

/// What `--on-yarn`'s client does while a job runs: it renews the job's metastore token ahead
/// of each expiry, so a task can still log in after the metastore's renew interval (set to
/// seconds on the test cluster: SECURE_TOKEN_RENEW_INTERVAL) has passed, when a token nobody
/// renewed is refused.
#[test]
fn a_job_token_the_client_renews_outlives_the_renew_interval() {
    let Some(s) = secure() else { return };
    let _shared = shared_metastore();
    rt().block_on(async {
        let ms = kerberos_metastore(s).await;
        let kept = ms.delegation_token("tester", &s.principal).await.unwrap();
        let left = ms.delegation_token("tester", &s.principal).await.unwrap();
        let interval = renew_interval(&ms, &left).await;
        if interval > 120 {
            eprintln!(
                "the metastore renews tokens for {interval} s: too long to wait for here \
                 (scripts/test starts the secure cluster with a short renew interval)"
            );
            return;
        }
        let renewing = {
            let kept = kept.clone();
            tokio::spawn(async move {
                let ms = kerberos_metastore(s).await;
                hive_orc_compactor::operations::token_lifetime::keep_renewing(&ms, &kept, None)
                    .await
            })
        };
        tokio::time::sleep(std::time::Duration::from_secs(interval + 10)).await;
        let with = |t: &DelegationToken| token_login(&s.hms_uri, t);
        let logged_in = Metastore::connect(with(&kept)).await;
        renewing.abort();
        logged_in.unwrap_or_else(|e| panic!("the renewed token was refused: {e}"));
        match Metastore::connect(with(&left)).await {
            Err(hive_orc_compactor::metastore::MetastoreError::TokenRejected { .. }) => {}
            Err(e) => panic!("{e}"),
            Ok(_) => panic!("a token nobody renewed logged in after its renew interval"),
        }
        ms.cancel_delegation_token(&kept).await.unwrap();
        let _ = ms.cancel_delegation_token(&left).await;
    });
}

/// A YARN task whose tokens reach their maximum lifetime within `--yarn-token-margin` starts
/// no partition: each is reported failed, untouched, with the limit and what to do.
#[test]
fn a_task_starts_no_partition_when_its_tokens_end_within_the_margin() {
    let Some(s) = secure() else { return };
    let _shared = shared_metastore();
    let db = fixture(s);
    let dir = tempfile::tempdir().unwrap();
    let ms = rt().block_on(kerberos_metastore(s));
    let token = rt()
        .block_on(ms.delegation_token("tester", &s.principal))
        .unwrap_or_else(|e| panic!("{e}"));
    let file = dir.path().join("container_tokens");
    write_credentials(&file, &[hdfs_token(s, dir.path()), token.clone()])
        .unwrap_or_else(|e| panic!("{e}"));
    // However long the cluster's tokens live (minutes on the test cluster, a week by
    // default), a margin a minute longer than what is left leaves no room.
    let now_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64;
    let left_s = (token.identifier().unwrap().max_date - now_ms) / 1000;
    let margin = format!("{}s", left_s + 60);
    let work_list = dir.path().join("work");
    std::fs::write(&work_list, format!("{db}.events/dt=2026-11-01\n")).unwrap();
    let part_dir = Location::parse(&format!(
        "{}/user/hive/external/{db}/events/dt=2026-11-01",
        s.hdfs_url
    ))
    .unwrap();
    let files = || {
        let mut names: Vec<String> = rt()
            .block_on(Hdfs::new().list(&part_dir))
            .unwrap()
            .unwrap()
            .files
            .into_iter()
            .map(|f| format!("{} {}", f.name, f.length))
            .collect();
        names.sort();
        names
    };
    let before = files();
    let o = run_as_task(
        s,
        &file,
        &[
            "compact",
            "--partitions-from",
            &work_list.display().to_string(),
            "--yarn-task",
            "--json",
            "--yarn-token-margin",
            &margin,
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", describe(&o));
    let report = json(&o);
    assert_eq!(report["status"], "failed", "{report}");
    let reason = report["reason"].as_str().unwrap_or_default();
    assert!(reason.contains("maximum lifetime"), "{reason}");
    assert!(reason.contains("--yarn-token-margin"), "{reason}");
    assert!(reason.contains("new job"), "{reason}");
    assert_eq!(files(), before, "the partition is untouched");
    rt().block_on(ms.cancel_delegation_token(&token)).unwrap();
}

/// The edge node refuses, before submitting, a job whose metastore token would end before a
/// task could start anything; the token it got is cancelled.
#[test]
fn on_yarn_refuses_a_job_its_tokens_cannot_carry() {
    let Some(s) = secure() else { return };
    let _shared = shared_metastore();
    let table = format!("{}.waiting", fixture(s));
    let dir = tempfile::tempdir().unwrap();
    let (mapred, capture) = refusing_mapred(dir.path());
    let o = on_yarn_as_client(s, &table, &mapred, &["--yarn-token-margin", "1000000h"]);
    assert_eq!(o.status.code(), Some(1), "{}", describe(&o));
    let err = stderr(&o);
    assert!(err.contains("maximum lifetime"), "{err}");
    assert!(err.contains("nothing was submitted"), "{err}");
    assert!(!capture.exists(), "the job client was never called");
}
