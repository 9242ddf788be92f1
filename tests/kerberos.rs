//! Kerberos end to end: the metastore over SASL/GSSAPI and HDFS with Kerberos, against the
//! secured cluster `scripts/cluster start --secure` runs (scripts/test starts one and sets
//! `SECURE_*`). Without `SECURE_HMS_URI` every test here returns at once, saying so.
//!
//! Environment: SECURE_HMS_URI, SECURE_CONF_DIR (core-, hdfs- and hive-site with the security
//! settings), SECURE_KRB5_CONFIG, SECURE_PRINCIPAL, SECURE_KEYTAB, SECURE_HDFS_URL.

mod common;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::{Command, Output};
use std::sync::OnceLock;

use common::{describe, json, rt, stderr};
use hive_orc_compactor::hdfs::{Hdfs, Location};
use hive_orc_compactor::kerberos;
use hive_orc_compactor::metastore::{
    FieldSchema, Metastore, MetastoreConfig, SerDeInfo, StorageDescriptor,
};

struct Secure {
    hms_uri: String,
    conf_dir: String,
    krb5_config: String,
    principal: String,
    keytab: String,
    hdfs_url: String,
    realm: String,
}

fn secure() -> Option<&'static Secure> {
    static S: OnceLock<Option<Secure>> = OnceLock::new();
    S.get_or_init(|| {
        let v = |n: &str| std::env::var(n).ok();
        let Some(hms_uri) = v("SECURE_HMS_URI") else {
            eprintln!("SECURE_HMS_URI is not set: no secured cluster, Kerberos tests skipped");
            return None;
        };
        let need = |n: &str| v(n).unwrap_or_else(|| panic!("{n} is not set"));
        let principal = need("SECURE_PRINCIPAL");
        let realm = principal.rsplit('@').next().unwrap().to_owned();
        let s = Secure {
            hms_uri,
            conf_dir: need("SECURE_CONF_DIR"),
            krb5_config: need("SECURE_KRB5_CONFIG"),
            principal,
            keytab: need("SECURE_KEYTAB"),
            hdfs_url: need("SECURE_HDFS_URL"),
            realm,
        };
        // This process's own Kerberos client (setup through the library): the same krb5.conf,
        // the test principal's keytab, the secured cluster's HDFS configuration.
        std::env::set_var("KRB5_CONFIG", &s.krb5_config);
        std::env::set_var("HADOOP_CONF_DIR", &s.conf_dir);
        kerberos::set_login(kerberos::Login {
            principal: Some(s.principal.clone()),
            keytab: Some(PathBuf::from(&s.keytab)),
        })
        .unwrap();
        Some(s)
    })
    .as_ref()
}

/// Runs the binary with only the secured cluster's configuration: HIVE_CONF_DIR and
/// HADOOP_CONF_DIR name its files (SASL and the server principal come from hive-site.xml), and
/// the ticket cache is an empty file of the test's own unless `ccache` says otherwise.
fn run(s: &Secure, args: &[&str], env: &[(&str, &str)]) -> Output {
    let dir = tempfile::tempdir().unwrap();
    let empty_cache = format!("FILE:{}", dir.path().join("no-ticket").display());
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_hive-orc-compactor"));
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
    cmd.output().expect("the binary runs")
}

fn with_keytab<'a>(s: &'a Secure, args: &[&'a str]) -> Vec<&'a str> {
    let mut all = vec!["--principal", &s.principal, "--keytab", &s.keytab];
    all.extend_from_slice(args);
    all
}

fn col(name: &str, ty: &str) -> FieldSchema {
    FieldSchema {
        name: Some(name.into()),
        type_: Some(ty.into()),
        comment: None,
    }
}

fn sd(location: &str) -> StorageDescriptor {
    StorageDescriptor {
        cols: Some(vec![col("a", "bigint"), col("s", "string")]),
        location: Some(location.into()),
        input_format: Some("org.apache.hadoop.hive.ql.io.orc.OrcInputFormat".into()),
        output_format: Some("org.apache.hadoop.hive.ql.io.orc.OrcOutputFormat".into()),
        compressed: Some(false),
        num_buckets: Some(-1),
        serde_info: Some(SerDeInfo {
            name: None,
            serialization_lib: Some("org.apache.hadoop.hive.ql.io.orc.OrcSerde".into()),
            parameters: Some(BTreeMap::from([(
                "serialization.format".to_string(),
                "1".to_string(),
            )])),
            description: None,
            serializer_class: None,
            deserializer_class: None,
            serde_type: None,
        }),
        bucket_cols: Some(vec![]),
        sort_cols: Some(vec![]),
        parameters: Some(BTreeMap::new()),
        skewed_info: None,
        stored_as_sub_directories: Some(false),
    }
}

const FILES: usize = 4;

/// A database with one external ORC table partitioned by dt, one partition of FILES copies of
/// a small ORC file, all made over SASL and Kerberos HDFS by the library; its name.
fn fixture(s: &Secure) -> &'static str {
    static DB: OnceLock<String> = OnceLock::new();
    DB.get_or_init(|| {
        let db = format!("krb_{}", std::process::id());
        let root = format!("{}/user/hive/external/{db}", s.hdfs_url);
        let part = format!("{root}/events/dt=2026-11-01");
        let orc = std::fs::read(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/data/orc/multi_stripe_zstd.orc"
        ))
        .unwrap();
        rt().block_on(async {
            let mut cfg = MetastoreConfig::new(&s.hms_uri).unwrap();
            cfg.sasl_principal = Some(format!("hive/localhost@{}", s.realm));
            let ms = Metastore::connect(cfg)
                .await
                .unwrap_or_else(|e| panic!("{e}"));
            let hdfs = Hdfs::new();
            let dir = Location::parse(&part).unwrap();
            hdfs.mkdirs(&dir, 0o755)
                .await
                .unwrap_or_else(|e| panic!("{e}"));
            for i in 0..FILES {
                let mut w = hdfs
                    .create(&dir.child(&format!("part-{i:05}.orc")), 0o644)
                    .await
                    .unwrap_or_else(|e| panic!("{e}"));
                w.write_bytes(orc.clone().into()).await.unwrap();
                w.close().await.unwrap();
            }
            ms.create_database(common::database(&db, &root, "tester", None))
                .await
                .unwrap_or_else(|e| panic!("{e}"));
            ms.create_table(common::external_table(
                &db,
                "events",
                "tester",
                sd(&format!("{root}/events")),
                vec![col("dt", "string")],
                BTreeMap::from([("EXTERNAL".into(), "TRUE".into())]),
            ))
            .await
            .unwrap_or_else(|e| panic!("{e}"));
            ms.add_partitions(vec![common::new_partition(
                &db,
                "events",
                &["2026-11-01"],
                sd(&part),
                BTreeMap::new(),
            )])
            .await
            .unwrap_or_else(|e| panic!("{e}"));
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
        inspected["partition"]["files"]["count"], FILES as u64,
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
