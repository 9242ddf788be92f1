//! The metastore as the tests read it.

use std::time::Duration;

use hive_orc_compactor::metastore::{Metastore, MetastoreConfig, Partition};

use super::rt;

/// A client configuration for `uris` with the tests' timeouts: quick to find nothing listening,
/// patient with a busy embedded Derby.
pub fn config(uris: &str) -> MetastoreConfig {
    let mut cfg = MetastoreConfig::new(uris).expect("a metastore URI");
    cfg.connect_timeout = Duration::from_secs(5);
    cfg.io_timeout = Duration::from_secs(60);
    cfg
}

pub async fn connect(uris: &str) -> Metastore {
    Metastore::connect(config(uris))
        .await
        .unwrap_or_else(|e| panic!("connecting to {uris}: {e}"))
}

/// [`connect`], blocking.
pub fn metastore(uris: &str) -> Metastore {
    rt().block_on(connect(uris))
}

pub fn get_partition(ms: &Metastore, db: &str, table: &str, values: &[String]) -> Partition {
    rt().block_on(ms.get_partition_by_values(db, table, values))
        .unwrap_or_else(|e| panic!("get_partition {db}.{table} {values:?}: {e}"))
}

pub fn location_of(p: &Partition) -> String {
    p.sd.as_ref()
        .and_then(|sd| sd.location.clone())
        .expect("a partition location")
}
