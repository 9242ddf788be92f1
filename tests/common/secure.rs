//! The Kerberos-secured cluster `scripts/test` starts beside the others (`scripts/cluster start
//! --secure`), as its SECURE_* variables name it. Without SECURE_HMS_URI there is none and the
//! tests that need it return at once, saying so (SKIP_SECURE=1).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::OnceLock;

use hive_orc_compactor::hdfs::{Hdfs, Location};
use hive_orc_compactor::kerberos;
use hive_orc_compactor::metastore::Metastore;

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

/// The secured cluster, once per test binary; this process then logs in as its client
/// principal from the keytab, with the cluster's krb5.conf and HDFS configuration.
pub fn secure() -> Option<&'static Secure> {
    static S: OnceLock<Option<Secure>> = OnceLock::new();
    S.get_or_init(|| {
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
    let orc = std::fs::read(super::repo().join("tests/data/orc/multi_stripe_zstd.orc")).unwrap();
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
        let dir = Location::parse(&part).unwrap();
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
