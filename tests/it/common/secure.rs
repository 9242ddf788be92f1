//! The Kerberos-secured cluster `scripts/test` starts beside the others (`scripts/cluster start
//! --secure`), as its SECURE_* variables name it. Without SECURE_HMS_URI there is none and the
//! tests that need it return at once, saying so (SKIP_SECURE=1).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Command;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use hive_orc_compactor::hdfs::{Hdfs, Location};
use hive_orc_compactor::kerberos;
use hive_orc_compactor::metastore::security::token::{DelegationToken, TokenLogin};
use hive_orc_compactor::metastore::{Metastore, MetastoreConfig};

pub struct Secure {
    pub hms_uri: String,
    pub conf_dir: String,
    pub krb5_config: String,
    /// The test client's principal (`tester@REALM`) and its keytab.
    pub principal: String,
    pub keytab: String,
    pub hdfs_url: String,
    pub realm: String,
    /// The cluster's state directory (`scripts/cluster fetchdt` needs it), when exported.
    pub cluster_dir: Option<String>,
}

/// The secured cluster, once per process; this process then logs in as its client principal
/// from the keytab, with the cluster's krb5.conf and HDFS configuration. Only in a process of
/// tests/it/kerberos.rs or tests/it/tokens.rs alone: that login and configuration would reach
/// every other test.
pub fn secure() -> Option<&'static Secure> {
    static S: OnceLock<Option<Secure>> = OnceLock::new();
    S.get_or_init(|| {
        if !super::alone(&["kerberos", "tokens"]) {
            return None;
        }
        let v = |n: &str| std::env::var(n).ok();
        let Some(hms_uri) = v("SECURE_HMS_URI") else {
            eprintln!("SECURE_HMS_URI is not set: no secured cluster, its tests skipped");
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
            cluster_dir: v("SECURE_CLUSTER_DIR"),
        };
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

/// A copy of the cluster's client configuration with `extra` properties added to `file`
/// (core-site.xml, hive-site.xml, ...).
pub fn conf_with(s: &Secure, file: &str, extra: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for entry in std::fs::read_dir(&s.conf_dir).unwrap() {
        let entry = entry.unwrap();
        std::fs::copy(entry.path(), dir.path().join(entry.file_name())).unwrap();
    }
    let path = dir.path().join(file);
    let props: String = extra
        .iter()
        .map(|(k, v)| format!("  <property><name>{k}</name><value>{v}</value></property>\n"))
        .collect();
    let text = std::fs::read_to_string(&path).unwrap();
    std::fs::write(
        &path,
        text.replace("</configuration>", &format!("{props}</configuration>")),
    )
    .unwrap();
    dir
}

/// `scripts/cluster hms restart` of the secured cluster, its metastore then offering
/// `protection` (its hadoop.rpc.protection; `None`: all three, the cluster's default). How long
/// it took, or what the script said.
pub fn restart_metastore(s: &Secure, protection: Option<&str>) -> Result<Duration, String> {
    let dir = s
        .cluster_dir
        .as_deref()
        .ok_or("SECURE_CLUSTER_DIR is not set")?;
    let mut cmd = Command::new(concat!(env!("CARGO_MANIFEST_DIR"), "/scripts/cluster"));
    cmd.args(["hms", "restart"]).env("CLUSTER_DIR", dir);
    match protection {
        Some(p) => cmd.env("CLUSTER_HMS_RPC_PROTECTION", p),
        None => cmd.env_remove("CLUSTER_HMS_RPC_PROTECTION"),
    };
    let t0 = Instant::now();
    let o = cmd.output().map_err(|e| e.to_string())?;
    let said = String::from_utf8_lossy(&o.stderr).into_owned();
    eprint!("{said}");
    if o.status.success() {
        Ok(t0.elapsed())
    } else {
        Err(said)
    }
}

/// A new partition directory `dir` holding `files` copies of a small ORC file
/// (`part-00000.orc`, ...), written over Kerberos HDFS.
pub async fn small_orc_files(hdfs: &Hdfs, dir: &str, files: usize) {
    let orc = std::fs::read(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/data/orc/multi_stripe_zstd.orc"
    ))
    .unwrap();
    let dir = Location::parse(dir).unwrap();
    hdfs.mkdirs(&dir, 0o755)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    for i in 0..files {
        let mut w = hdfs
            .create(&dir.child(&format!("part-{i:05}.orc")), 0o644)
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        w.write_bytes(orc.clone().into()).await.unwrap();
        w.close().await.unwrap();
    }
}

/// An external ORC table `db.table` at `root/table` (columns a bigint, s string), partitioned
/// by dt, with one partition per day of `files` copies of a small ORC file, made through `ms`
/// and this process's HDFS login (the secured clusters' tests' fixture).
pub async fn orc_table(
    ms: &Metastore,
    (db, table): (&str, &str),
    root: &str,
    owner: &str,
    days: &[&str],
    files: usize,
) {
    let sd = |location: &str| {
        super::objects::orc_storage(
            location,
            vec![
                super::objects::column("a", "bigint"),
                super::objects::column("s", "string"),
            ],
        )
    };
    let hdfs = Hdfs::new();
    ms.create_table(super::external_table(
        db,
        table,
        owner,
        sd(&format!("{root}/{table}")),
        vec![super::objects::column("dt", "string")],
        BTreeMap::from([("EXTERNAL".into(), "TRUE".into())]),
    ))
    .await
    .unwrap_or_else(|e| panic!("{e}"));
    let mut parts = Vec::new();
    for day in days {
        let part = format!("{root}/{table}/dt={day}");
        small_orc_files(&hdfs, &part, files).await;
        parts.push(super::new_partition(
            db,
            table,
            &[day],
            sd(&part),
            BTreeMap::new(),
        ));
    }
    ms.add_partitions(parts)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
}

/// The configuration of a login to the metastore at `hms_uri` with `token` alone, over SASL
/// DIGEST-MD5, as a YARN task logs in.
pub fn token_login(hms_uri: &str, token: &DelegationToken) -> MetastoreConfig {
    let mut cfg = MetastoreConfig::new(hms_uri).unwrap();
    cfg.sasl_principal = Some(String::new());
    cfg.delegation_token = Some(TokenLogin {
        token: token.clone(),
        source: "the test".into(),
    });
    cfg
}
