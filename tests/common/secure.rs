//! The Kerberos-secured cluster `scripts/test` starts beside the others (`scripts/cluster start
//! --secure`), as its SECURE_* variables name it. Without SECURE_HMS_URI there is none and the
//! tests that need it return at once, saying so (SKIP_SECURE=1).

use std::path::PathBuf;
use std::sync::OnceLock;

use hive_orc_compactor::kerberos;

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
