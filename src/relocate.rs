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
    /// The alter's outcome is unknown (no read-back settled it, see [`read_back`]): the
    /// partition may point at `from` or `to`, so the caller must keep both in place.
    #[error("{0}")]
    Unconfirmed(String),
    #[error(transparent)]
    Failed(#[from] anyhow::Error),
}

/// How long to keep reading back after an alter whose reply did not come back as a success.
/// Long enough to outlast a metastore failover and HMS' own retries ([`HMS_RETRY_WINDOW`]).
pub const READ_BACK_FOR: Duration = Duration::from_secs(90);
const READ_BACK_EVERY: Duration = Duration::from_secs(2);

/// How long HMS may still apply a change after the client lost the call: its handler retries a
/// failed transaction itself (`hive.hmshandler.retry.attempts` 10, `.interval` 2 s), plus the
/// call's own time. Until then, a read-back showing the old location proves nothing.
pub const HMS_RETRY_WINDOW: Duration = Duration::from_secs(30);

/// Where an alter of a partition's location left it, as far as the metastore shows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SwapOutcome {
    /// The partition points at the new location.
    Swapped,
    /// The partition points at `location`, not the new one, and the metastore can no longer
    /// change that on its own: the new location is unreferenced.
    NotSwapped { location: String },
    /// No read-back settled it in time: the partition may point at either location, so no
    /// directory either may point at can be removed.
    Unknown { last: String },
}

/// One read-back of the partition's location.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Observation {
    Points(String),
    Failed(String),
}

/// The rule after an alter has been sent: `Some` once `observation`, made `elapsed` after the
/// alter was sent, settles where the partition points; `None`: keep reading. A location other
/// than `to` settles only after `settle` (the metastore may still apply the change until then).
pub fn decide(
    observation: &Observation,
    to: &Location,
    elapsed: Duration,
    settle: Duration,
) -> Option<SwapOutcome> {
    let Observation::Points(location) = observation else {
        return None;
    };
    if Location::parse(location).ok().as_ref() == Some(to) {
        return Some(SwapOutcome::Swapped);
    }
    (elapsed >= settle).then(|| SwapOutcome::NotSwapped {
        location: location.clone(),
    })
}

/// How long a read-back of the old location proves nothing after the alter ended with
/// `result`: after a success or an error the server answered, it is done; after a lost or
/// timed-out call it may still be working.
pub fn settle_after(result: &Result<(), MetastoreError>) -> Duration {
    match result {
        Ok(())
        | Err(
            MetastoreError::NotFound { .. }
            | MetastoreError::AlreadyExists { .. }
            | MetastoreError::Server { .. }
            | MetastoreError::Internal { .. }
            | MetastoreError::UnknownMethod { .. },
        ) => Duration::ZERO,
        Err(_) => HMS_RETRY_WINDOW,
    }
}

/// Reads the partition back (each read fails over across every metastore URI) until
/// [`decide`] settles where it points or `within` has passed since `sent` (when the alter was
/// sent). Callers remove a directory only on an outcome that shows the partition elsewhere.
pub async fn read_back(
    metastore: &Metastore,
    table: &TableInfo,
    spec: &PartitionSpec,
    to: &Location,
    sent: tokio::time::Instant,
    settle: Duration,
    within: Duration,
) -> SwapOutcome {
    loop {
        let observation = match metastore
            .get_partition_by_values(&table.db, &table.name, &spec.values)
            .await
        {
            Ok(p) => match p.sd.and_then(|sd| sd.location) {
                Some(l) => Observation::Points(l),
                None => Observation::Failed("the partition has no location".into()),
            },
            Err(e) => Observation::Failed(e.to_string()),
        };
        if let Some(outcome) = decide(&observation, to, sent.elapsed(), settle) {
            return outcome;
        }
        if sent.elapsed() >= within {
            return SwapOutcome::Unknown {
                last: match observation {
                    Observation::Points(l) => format!("it still points at {l}"),
                    Observation::Failed(e) => format!("reading it back: {e}"),
                },
            };
        }
        tokio::time::sleep(READ_BACK_EVERY).await;
    }
}

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
    let target = Location::parse(to).map_err(|e| anyhow!("{e}"))?;
    let sent = tokio::time::Instant::now();
    let result = metastore
        .alter_partition(&table.db, &table.name, partition, env)
        .await;
    // Once the alter is sent, any error may hide a committed change (the reply lost, the
    // connection cut right after it): only the metastore's own answer to a read-back counts.
    let settle = settle_after(&result);
    let error = result.err().map(|e| format!(": {e}")).unwrap_or_default();
    match read_back(metastore, table, spec, &target, sent, settle, READ_BACK_FOR).await {
        SwapOutcome::Swapped => Ok((before, after)),
        SwapOutcome::NotSwapped { location } => Err(anyhow!(
            "setting the location of {} to {to} did not take{error}; it points at {location}",
            what()
        )
        .into()),
        SwapOutcome::Unknown { last } => Err(RelocateError::Unconfirmed(format!(
            "setting the location of {} to {to}{error}: the outcome is unknown after {}s of \
             reading back ({last})",
            what(),
            READ_BACK_FOR.as_secs()
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn loc(s: &str) -> Location {
        Location::parse(s).unwrap()
    }

    const TO: &str = "hdfs://nn:8020/w/t/k=1/.hive-orc-compactor/run1";
    const FROM: &str = "hdfs://nn:8020/w/t/k=1";

    #[test]
    fn the_new_location_settles_it_at_once() {
        let seen = Observation::Points(TO.into());
        assert_eq!(
            decide(&seen, &loc(TO), Duration::ZERO, HMS_RETRY_WINDOW),
            Some(SwapOutcome::Swapped)
        );
    }

    #[test]
    fn the_old_location_proves_nothing_while_the_metastore_may_still_apply_the_change() {
        let seen = Observation::Points(FROM.into());
        let early = HMS_RETRY_WINDOW - Duration::from_secs(1);
        assert_eq!(decide(&seen, &loc(TO), early, HMS_RETRY_WINDOW), None);
        assert_eq!(
            decide(&seen, &loc(TO), HMS_RETRY_WINDOW, HMS_RETRY_WINDOW),
            Some(SwapOutcome::NotSwapped {
                location: FROM.into()
            })
        );
        // After an answered call the server is done: the old location counts at once.
        assert_eq!(
            decide(&seen, &loc(TO), Duration::ZERO, Duration::ZERO),
            Some(SwapOutcome::NotSwapped {
                location: FROM.into()
            })
        );
    }

    #[test]
    fn a_failed_read_never_settles_anything() {
        let seen = Observation::Failed("connection refused".into());
        assert_eq!(
            decide(&seen, &loc(TO), Duration::from_secs(3600), Duration::ZERO),
            None
        );
    }

    #[test]
    fn lost_calls_wait_for_the_retry_window_answered_ones_do_not() {
        let lost = MetastoreError::ConnectionLost {
            uri: "thrift://a:9083".into(),
            method: "alter_partition_with_environment_context",
            message: "reset".into(),
            outcome_unknown: true,
        };
        assert_eq!(settle_after(&Err(lost)), HMS_RETRY_WINDOW);
        assert_eq!(settle_after(&Ok(())), Duration::ZERO);
    }
}
