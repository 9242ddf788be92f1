//! Pointing a partition at another directory: the one metastore call of compact's swap (and its
//! swap back), rollback's swap back and cleanup's statistics update after adopting late files.

use std::collections::BTreeMap;
use std::time::Duration;

use anyhow::anyhow;

use crate::hdfs::Location;
use crate::metastore::{Metastore, MetastoreError, DO_NOT_UPDATE_STATS};
use crate::partition_spec::PartitionSpec;
use crate::table::TableInfo;

#[derive(Debug, thiserror::Error)]
pub enum RelocateError {
    /// The partition no longer points where the caller expected: someone else moved it.
    #[error("partition {partition} of {table} moved to {current} meanwhile; retry later")]
    Moved {
        table: String,
        partition: String,
        current: String,
    },
    /// The call's outcome is unknown (timeout, broken connection) and the partition does not
    /// show the change yet: the metastore may still apply it (HMS retries internally), so the
    /// caller must keep `to` in place.
    #[error("{0}")]
    Unconfirmed(String),
    #[error(transparent)]
    Failed(#[from] anyhow::Error),
}

/// How long to keep reading back after an alter whose outcome is unknown. HMS retries a failed
/// transaction itself (10 times, 2 s apart, by default), so a change can land well after the
/// client gave up.
const CONFIRM_FOR: Duration = Duration::from_secs(60);
const CONFIRM_EVERY: Duration = Duration::from_secs(2);

/// Points the partition at `to`, provided it still points at `from`: one `alter_partition` from
/// the partition as the metastore holds it now (so no field we do not know is dropped), with
/// `DO_NOT_UPDATE_STATS` (so the metastore keeps exactly the parameters `params` makes of the
/// current ones), then a read-back: the change counts only once the metastore shows it. Returns
/// the parameters before and after.
pub async fn set_location(
    metastore: &Metastore,
    table: &TableInfo,
    spec: &PartitionSpec,
    from: &Location,
    to: &str,
    params: impl FnOnce(&BTreeMap<String, String>) -> BTreeMap<String, String>,
) -> Result<(BTreeMap<String, String>, BTreeMap<String, String>), RelocateError> {
    let what = || format!("partition {} of {}", spec.name(), table.qualified_name());
    let mut partition = metastore
        .get_partition_by_values(&table.db, &table.name, &spec.values)
        .await
        .map_err(|e| anyhow!("re-reading {} before changing its location: {e}", what()))?;
    let current = partition.sd.as_ref().and_then(|sd| sd.location.clone());
    if current
        .as_deref()
        .map(Location::parse)
        .and_then(Result::ok)
        .as_ref()
        != Some(from)
    {
        return Err(RelocateError::Moved {
            table: table.qualified_name(),
            partition: spec.name(),
            current: current.unwrap_or_default(),
        });
    }
    let before = partition.parameters.clone().unwrap_or_default();
    let after = params(&before);
    if let Some(sd) = partition.sd.as_mut() {
        sd.location = Some(to.to_string());
    }
    partition.parameters = Some(after.clone());
    let env = BTreeMap::from([(DO_NOT_UPDATE_STATS.to_string(), "true".to_string())]);
    if let Err(e) = metastore
        .alter_partition(&table.db, &table.name, partition, env)
        .await
    {
        // Whether the change happened is unknown after a timeout: read it back before saying.
        let outcome_unknown = matches!(
            e,
            MetastoreError::Timeout {
                outcome_unknown: true,
                ..
            } | MetastoreError::ConnectionLost {
                outcome_unknown: true,
                ..
            }
        );
        if !outcome_unknown {
            return Err(anyhow!("setting the location of {} to {to}: {e}", what()).into());
        }
        if !confirmed(metastore, table, spec, to).await {
            return Err(RelocateError::Unconfirmed(format!(
                "setting the location of {} to {to}: {e}; it did not show after {}s of reading back",
                what(),
                CONFIRM_FOR.as_secs()
            )));
        }
    }
    if !points_at(metastore, table, spec, to).await {
        return Err(anyhow!(
            "the metastore accepted the new location of {} but reading it back does not show {to}",
            what()
        )
        .into());
    }
    Ok((before, after))
}

/// Reads back until the partition points at `location`, for at most [`CONFIRM_FOR`].
async fn confirmed(
    metastore: &Metastore,
    table: &TableInfo,
    spec: &PartitionSpec,
    location: &str,
) -> bool {
    let deadline = tokio::time::Instant::now() + CONFIRM_FOR;
    loop {
        if points_at(metastore, table, spec, location).await {
            return true;
        }
        if tokio::time::Instant::now() >= deadline {
            return false;
        }
        tokio::time::sleep(CONFIRM_EVERY).await;
    }
}

async fn points_at(
    metastore: &Metastore,
    table: &TableInfo,
    spec: &PartitionSpec,
    location: &str,
) -> bool {
    metastore
        .get_partition_by_values(&table.db, &table.name, &spec.values)
        .await
        .ok()
        .and_then(|p| p.sd.and_then(|sd| sd.location))
        .is_some_and(|l| l == location)
}
