//! The client of each namespace, built lazily with the cluster's configuration, and the user
//! it acts as.

use std::collections::HashMap;
use std::sync::Mutex;

use hdfs_native::{ClientBuilder, HdfsError};

use super::error::FsError;
use super::location::Location;
use super::tasks::Client;

/// The target of this module's log lines, the same from each of its files, as before they
/// were split: what users filter and read them by.
pub(super) const LOG_TARGET: &str = "hive_orc_compactor::hdfs";

/// `core-site.xml` and `hdfs-site.xml` as hdfs-native finds them (`$HADOOP_CONF_DIR`, else
/// `$HADOOP_HOME/etc/hadoop`); empty when there are none or they cannot be read (hdfs-native
/// then says why when it reads them itself).
fn hadoop_site() -> std::collections::BTreeMap<String, String> {
    let dir = std::env::var_os("HADOOP_CONF_DIR")
        .map(std::path::PathBuf::from)
        .or_else(|| {
            std::env::var_os("HADOOP_HOME").map(|h| std::path::PathBuf::from(h).join("etc/hadoop"))
        });
    let mut out = std::collections::BTreeMap::new();
    if let Some(dir) = dir {
        for file in ["core-site.xml", "hdfs-site.xml"] {
            let path = dir.join(file);
            if path.exists() {
                if let Ok(conf) = crate::config::read_site_xml(&path) {
                    out.extend(conf);
                }
            }
        }
    }
    out
}

const OBSERVER_PROVIDER: &str =
    "org.apache.hadoop.hdfs.server.namenode.ha.ObserverReadProxyProvider";
const FAILOVER_PROVIDER: &str =
    "org.apache.hadoop.hdfs.server.namenode.ha.ConfiguredFailoverProxyProvider";

/// The configuration that sends every call of the tool to the active NameNode of a nameservice
/// configured for observer reads. hdfs-native's observer client sends `msync` only before its
/// first write, so its listings before that (the run's snapshot) and long after it (the
/// re-check before the swap) may come from an observer that has not yet seen a file a writer
/// just closed: a decision on them could leave that file behind. The tool's NameNode load is a
/// few listings and block lookups per partition; the active serves them.
pub fn observer_overrides(
    site: &std::collections::BTreeMap<String, String>,
) -> Vec<(String, String)> {
    site.iter()
        .filter(|(k, v)| {
            k.starts_with("dfs.client.failover.proxy.provider.") && v.trim() == OBSERVER_PROVIDER
        })
        .map(|(k, _)| (k.clone(), FAILOVER_PROVIDER.to_string()))
        .collect()
}

/// One client per filesystem, built lazily: a table's partitions may live on several
/// namespaces (viewfs, federation, old locations on another cluster).
#[derive(Default)]
pub struct Hdfs {
    clients: Mutex<HashMap<String, Client>>,
    /// `--hadoop-user`: the user to act as on clusters without Kerberos.
    pub(super) user: Option<String>,
    /// Which pairs of filesystem names (`scheme://authority`) were proven to be one namespace,
    /// or two: a namespace does not change names while the tool runs.
    pub(super) namespaces: Mutex<HashMap<(String, String), bool>>,
}

/// Whether [`Hdfs::within`] may create a hidden marker file to tell two filesystem names apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Probe {
    /// Yes: callers that go on to delete must know.
    Allowed,
    /// No (read-only commands, dry runs): where only a marker could tell, the answer is "within",
    /// the answer under which nothing is deleted.
    ReadOnly,
}

/// The Hadoop user of a simple-auth cluster: `explicit` (`--hadoop-user`), else
/// `$HADOOP_USER_NAME`, else the login name, as hdfs-native decides it.
pub fn hadoop_user(explicit: Option<&str>) -> String {
    explicit
        .map(str::to_owned)
        .or_else(|| std::env::var("HADOOP_USER_NAME").ok())
        .or_else(|| whoami::username().ok())
        .unwrap_or_else(|| "unknown".into())
}

impl Hdfs {
    pub fn new() -> Self {
        Self::default()
    }

    /// Acts as `user` (simple authentication; with Kerberos, as its proxy user) instead of
    /// `$HADOOP_USER_NAME` or the login name.
    pub fn as_user(user: Option<String>) -> Self {
        Hdfs {
            user,
            ..Self::default()
        }
    }

    /// The user this client acts as, on clusters without Kerberos.
    pub fn user(&self) -> String {
        hadoop_user(self.user.as_deref())
    }

    pub fn client(&self, location: &Location) -> Result<Client, FsError> {
        let mut clients = self.clients.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(c) = clients.get(&location.fs) {
            return Ok(c.clone());
        }
        let mut builder = ClientBuilder::new();
        // `hdfs:///path` means "the default filesystem": let hdfs-native take fs.defaultFS.
        if !location.fs.ends_with("://") {
            builder = builder.with_url(location.fs.clone());
        }
        if let Some(user) = &self.user {
            builder = builder.with_user(user.clone());
        }
        // --principal/--keytab (hdfs-native then uses them instead of the default ticket
        // cache); Kerberos itself is on when core-site.xml says so.
        let login = crate::kerberos::login();
        if let Some(principal) = login.principal {
            builder = builder.with_kerberos_principal(principal);
        }
        if let Some(keytab) = login.keytab {
            builder = builder.with_kerberos_keytab(keytab.to_string_lossy().into_owned());
        }
        let overrides = observer_overrides(&hadoop_site());
        if !overrides.is_empty() {
            builder = builder.with_config(overrides);
        }
        let client = Client::new(builder.build().map_err(|error| FsError::Client {
            fs: location.fs.clone(),
            error,
        })?);
        clients.insert(location.fs.clone(), client.clone());
        Ok(client)
    }

    pub(super) fn io<'a>(
        op: &'static str,
        location: &'a Location,
    ) -> impl FnOnce(HdfsError) -> FsError + 'a {
        move |error| FsError::Io {
            op,
            location: location.to_string(),
            error,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_observer_nameservices_are_sent_to_the_active() {
        let site: std::collections::BTreeMap<String, String> = [
            ("dfs.client.failover.proxy.provider.ns1", OBSERVER_PROVIDER),
            ("dfs.client.failover.proxy.provider.ns2", FAILOVER_PROVIDER),
            ("dfs.nameservices", "ns1,ns2"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        assert_eq!(
            observer_overrides(&site),
            vec![(
                "dfs.client.failover.proxy.provider.ns1".to_string(),
                FAILOVER_PROVIDER.to_string()
            )]
        );
    }
}
