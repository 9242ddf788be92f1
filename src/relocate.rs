//! Pointing a partition at another directory: the one metastore call of compact's swap (and its
//! swap back), rollback's swap back and cleanup's statistics update after adopting late files.

use std::collections::BTreeMap;
use std::future::Future;
use std::time::Duration;

use anyhow::anyhow;

use crate::hdfs::Location;
use crate::metastore::{Metastore, MetastoreError, Partition, DO_NOT_UPDATE_STATS};
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

/// The two metastore calls a change of location makes, and how long its outcome takes to
/// settle: the seam where the rules below are unit-tested without a metastore ([`Metastore`] in
/// production).
pub trait PartitionStore: Sync {
    /// How long to keep reading back after an alter whose reply did not come back as a success.
    const READ_BACK_FOR: Duration = READ_BACK_FOR;
    /// How long to wait between two read-backs.
    const READ_BACK_EVERY: Duration = READ_BACK_EVERY;

    /// The partition of `values` (in the order of the table's partition keys).
    fn get_partition_by_values(
        &self,
        db: &str,
        table: &str,
        values: &[String],
    ) -> impl Future<Output = Result<Partition, MetastoreError>> + Send;

    /// Replaces the partition of `partition.values` with `partition`, once (never resent: on a
    /// lost or timed-out call the outcome is unknown).
    fn alter_partition(
        &self,
        db: &str,
        table: &str,
        partition: Partition,
        env: BTreeMap<String, String>,
    ) -> impl Future<Output = Result<(), MetastoreError>> + Send;
}

impl PartitionStore for Metastore {
    fn get_partition_by_values(
        &self,
        db: &str,
        table: &str,
        values: &[String],
    ) -> impl Future<Output = Result<Partition, MetastoreError>> + Send {
        Metastore::get_partition_by_values(self, db, table, values)
    }

    fn alter_partition(
        &self,
        db: &str,
        table: &str,
        partition: Partition,
        env: BTreeMap<String, String>,
    ) -> impl Future<Output = Result<(), MetastoreError>> + Send {
        Metastore::alter_partition(self, db, table, partition, env)
    }
}

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
pub async fn read_back<M: PartitionStore>(
    metastore: &M,
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
        tokio::time::sleep(M::READ_BACK_EVERY).await;
    }
}

/// Points the partition at `to`, provided it still points at `from`: one `alter_partition` from
/// the partition as the metastore holds it now (so no field we do not know is dropped), with
/// `DO_NOT_UPDATE_STATS` (so the metastore keeps exactly the parameters `params` makes of the
/// current ones), then a read-back: the change counts only once the metastore shows it. Returns
/// the parameters before and after.
pub async fn set_location<M: PartitionStore>(
    metastore: &M,
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
    match read_back(
        metastore,
        table,
        spec,
        &target,
        sent,
        settle,
        M::READ_BACK_FOR,
    )
    .await
    {
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
            M::READ_BACK_FOR.as_secs()
        ))),
    }
}

/// The parameters before and after a change of location.
pub type Relocated = (BTreeMap<String, String>, BTreeMap<String, String>);

/// The partition parameters a change of location sets, made from the current ones.
pub type Parameters<'a> =
    Box<dyn FnOnce(&BTreeMap<String, String>) -> BTreeMap<String, String> + Send + 'a>;

/// One partition's change of location in [`set_locations`].
pub struct Relocation<'a> {
    pub spec: &'a PartitionSpec,
    pub from: &'a Location,
    pub to: Location,
    pub params: Parameters<'a>,
}

/// [`set_location`] for several partitions of one table with one `alter_partitions`, which the
/// metastore applies in one transaction: one read of them all first (a partition that moved
/// meanwhile is left out and answered [`RelocateError::Moved`]), one alter of the rest, then
/// read-backs of them all, each settled by the rules a single change follows ([`decide`]).
/// Returns each relocation's outcome, in order.
pub async fn set_locations(
    metastore: &Metastore,
    table: &TableInfo,
    moves: Vec<Relocation<'_>>,
) -> Vec<Result<Relocated, RelocateError>> {
    let (db, name) = (&table.db, &table.name);
    let names: Vec<String> = moves.iter().map(|m| m.spec.name()).collect();
    let what = || format!("{} partitions of {}", moves.len(), table.qualified_name());
    let mut current = match metastore.partitions_by_names(db, name, &names).await {
        Ok(found) => by_name(table, found),
        Err(e) => {
            let e = format!("re-reading {} before changing their locations: {e}", what());
            return moves
                .iter()
                .map(|_| Err(RelocateError::Failed(anyhow!("{e}"))))
                .collect();
        }
    };
    let mut results: Vec<Option<Result<Relocated, RelocateError>>> = Vec::new();
    let mut sent = Vec::new();
    let mut altered = Vec::new();
    for (i, m) in moves.into_iter().enumerate() {
        let Some(mut partition) = current.remove(&names[i]) else {
            results.push(Some(Err(anyhow!(
                "partition {} of {} vanished from the metastore before its swap",
                names[i],
                table.qualified_name()
            )
            .into())));
            continue;
        };
        let location = partition.sd.as_ref().and_then(|sd| sd.location.clone());
        if location
            .as_deref()
            .map(Location::parse)
            .and_then(Result::ok)
            .as_ref()
            != Some(m.from)
        {
            results.push(Some(Err(RelocateError::Moved {
                table: table.qualified_name(),
                partition: names[i].clone(),
                current: location.unwrap_or_default(),
            })));
            continue;
        }
        let before = partition.parameters.clone().unwrap_or_default();
        let after = (m.params)(&before);
        if let Some(sd) = partition.sd.as_mut() {
            sd.location = Some(m.to.to_string());
        }
        partition.parameters = Some(after.clone());
        altered.push(partition);
        sent.push((i, m.to, (before, after)));
        results.push(None);
    }
    if !altered.is_empty() {
        let env = BTreeMap::from([(DO_NOT_UPDATE_STATS.to_string(), "true".to_string())]);
        let at = tokio::time::Instant::now();
        let result = metastore.alter_partitions(db, name, altered, env).await;
        let settle = settle_after(&result);
        let error = result.err().map(|e| format!(": {e}")).unwrap_or_default();
        let targets: Vec<(String, Location)> = sent
            .iter()
            .map(|(i, to, _)| (names[*i].clone(), to.clone()))
            .collect();
        let outcomes = read_back_all(metastore, table, &targets, at, settle).await;
        for ((i, to, params), outcome) in sent.into_iter().zip(outcomes) {
            let what = format!("partition {} of {}", names[i], table.qualified_name());
            results[i] = Some(match outcome {
                SwapOutcome::Swapped => Ok(params),
                SwapOutcome::NotSwapped { location } => Err(anyhow!(
                    "setting the location of {what} to {to} with {} others did not take{error}; \
                     it points at {location}",
                    targets.len() - 1
                )
                .into()),
                SwapOutcome::Unknown { last } => Err(RelocateError::Unconfirmed(format!(
                    "setting the location of {what} to {to} with {} others{error}: the outcome \
                     is unknown after {}s of reading back ({last})",
                    targets.len() - 1,
                    READ_BACK_FOR.as_secs()
                ))),
            });
        }
    }
    results.into_iter().flatten().collect()
}

/// Partitions by their escaped name.
fn by_name(
    table: &TableInfo,
    found: Vec<Partition>,
) -> std::collections::HashMap<String, Partition> {
    found
        .into_iter()
        .map(|p| {
            let values = p.values.clone().unwrap_or_default();
            (
                PartitionSpec::from_values(&table.partition_keys, &values).name(),
                p,
            )
        })
        .collect()
}

/// [`read_back`] for the partitions `targets` names (escaped name, where it should point), one
/// call for all of them per round, until each settles or [`READ_BACK_FOR`] has passed.
async fn read_back_all(
    metastore: &Metastore,
    table: &TableInfo,
    targets: &[(String, Location)],
    sent: tokio::time::Instant,
    settle: Duration,
) -> Vec<SwapOutcome> {
    let mut outcomes: Vec<Option<SwapOutcome>> = vec![None; targets.len()];
    loop {
        let pending: Vec<String> = targets
            .iter()
            .zip(&outcomes)
            .filter(|(_, o)| o.is_none())
            .map(|((n, _), _)| n.clone())
            .collect();
        let read = metastore
            .partitions_by_names(&table.db, &table.name, &pending)
            .await
            .map(|found| by_name(table, found));
        let mut last = vec![None; targets.len()];
        for (((n, to), outcome), last) in targets.iter().zip(outcomes.iter_mut()).zip(&mut last) {
            if outcome.is_some() {
                continue;
            }
            let observation = match &read {
                Ok(found) => match found.get(n).and_then(|p| p.sd.as_ref()?.location.clone()) {
                    Some(l) => Observation::Points(l),
                    None => Observation::Failed(format!("partition {n} was not found")),
                },
                Err(e) => Observation::Failed(e.to_string()),
            };
            *outcome = decide(&observation, to, sent.elapsed(), settle);
            *last = Some(observation);
        }
        if outcomes.iter().all(Option::is_some) {
            return outcomes.into_iter().flatten().collect();
        }
        if sent.elapsed() >= READ_BACK_FOR {
            return outcomes
                .into_iter()
                .zip(last)
                .map(|(o, last)| {
                    o.unwrap_or_else(|| SwapOutcome::Unknown {
                        last: match last {
                            Some(Observation::Points(l)) => format!("it still points at {l}"),
                            Some(Observation::Failed(e)) => format!("reading it back: {e}"),
                            None => String::new(),
                        },
                    })
                })
                .collect();
        }
        tokio::time::sleep(READ_BACK_EVERY).await;
    }
}

/// An in-memory metastore of one partition whose alters do what a test scripts: the double of
/// [`PartitionStore`] for the unit tests here and in the compaction's run.
#[cfg(test)]
pub(crate) mod fake {
    use std::collections::VecDeque;
    use std::sync::Mutex;

    use super::*;
    use crate::metastore::StorageDescriptor;

    /// What an alter does.
    #[derive(Clone, Copy, Debug)]
    pub enum Alter {
        /// Applies the change and answers.
        Apply,
        /// The server refuses it: nothing changes.
        Refuse,
        /// The connection breaks after the call was sent, with or without the change applied.
        Lose { applied: bool },
        /// As `Lose`, and no read gets through afterwards.
        LoseAll { applied: bool },
    }

    pub struct FakeMetastore {
        state: Mutex<State>,
    }

    struct State {
        location: String,
        parameters: BTreeMap<String, String>,
        /// What the next alters do; once none is left, they apply.
        alters: VecDeque<Alter>,
        reads_fail: bool,
        /// Every call, as `get` or `alter <location>`.
        calls: Vec<String>,
        /// The environment of the last alter.
        env: BTreeMap<String, String>,
    }

    impl FakeMetastore {
        /// The partition at `location`, with one parameter.
        pub fn at(location: &str) -> Self {
            FakeMetastore {
                state: Mutex::new(State {
                    location: location.into(),
                    parameters: BTreeMap::from([("numFiles".into(), "3".into())]),
                    alters: VecDeque::new(),
                    reads_fail: false,
                    calls: vec![],
                    env: BTreeMap::new(),
                }),
            }
        }

        fn state(&self) -> std::sync::MutexGuard<'_, State> {
            self.state.lock().unwrap()
        }

        /// What the next alters do, in order.
        pub fn alters(&self, alters: &[Alter]) {
            self.state().alters.extend(alters);
        }

        /// Every read from now on fails.
        pub fn fail_reads(&self) {
            self.state().reads_fail = true;
        }

        pub fn location(&self) -> String {
            self.state().location.clone()
        }

        pub fn parameters(&self) -> BTreeMap<String, String> {
            self.state().parameters.clone()
        }

        pub fn calls(&self) -> Vec<String> {
            self.state().calls.clone()
        }

        pub fn env(&self) -> BTreeMap<String, String> {
            self.state().env.clone()
        }
    }

    /// A table `db.t` partitioned by `k`, and its partition `k=1`.
    pub fn table() -> (TableInfo, PartitionSpec) {
        let storage = crate::table::StorageInfo {
            location: Some("hdfs://nn:8020/w/t".into()),
            ..crate::table::StorageInfo::none()
        };
        let table = TableInfo {
            db: "db".into(),
            name: "t".into(),
            table_type: "EXTERNAL_TABLE".into(),
            owner: None,
            partition_keys: vec!["k".into()],
            params: BTreeMap::new(),
            storage,
        };
        let spec = PartitionSpec {
            keys: vec!["k".into()],
            values: vec!["1".into()],
        };
        (table, spec)
    }

    fn lost() -> MetastoreError {
        MetastoreError::ConnectionLost {
            uri: "thrift://fake:9083".into(),
            method: "alter_partition_with_environment_context",
            message: "reset by peer".into(),
            outcome_unknown: true,
        }
    }

    impl PartitionStore for FakeMetastore {
        const READ_BACK_FOR: Duration = Duration::from_millis(60);
        const READ_BACK_EVERY: Duration = Duration::from_millis(5);

        async fn get_partition_by_values(
            &self,
            db: &str,
            table: &str,
            values: &[String],
        ) -> Result<Partition, MetastoreError> {
            let mut state = self.state();
            state.calls.push("get".into());
            if state.reads_fail {
                return Err(MetastoreError::Unreachable {
                    uris: "thrift://fake:9083".into(),
                    last_error: "connection refused".into(),
                });
            }
            Ok(Partition {
                values: Some(values.to_vec()),
                db_name: Some(db.into()),
                table_name: Some(table.into()),
                create_time: None,
                last_access_time: None,
                sd: Some(StorageDescriptor {
                    cols: None,
                    location: Some(state.location.clone()),
                    input_format: None,
                    output_format: None,
                    compressed: None,
                    num_buckets: None,
                    serde_info: None,
                    bucket_cols: None,
                    sort_cols: None,
                    parameters: None,
                    skewed_info: None,
                    stored_as_sub_directories: None,
                }),
                parameters: Some(state.parameters.clone()),
                privileges: None,
                cat_name: None,
                write_id: None,
                is_stats_compliant: None,
                col_stats: None,
                file_metadata: None,
            })
        }

        async fn alter_partition(
            &self,
            _db: &str,
            _table: &str,
            partition: Partition,
            env: BTreeMap<String, String>,
        ) -> Result<(), MetastoreError> {
            let mut state = self.state();
            let to = partition.sd.and_then(|sd| sd.location).unwrap_or_default();
            state.calls.push(format!("alter {to}"));
            state.env = env;
            let alter = state.alters.pop_front().unwrap_or(Alter::Apply);
            let applied = match alter {
                Alter::Apply => true,
                Alter::Refuse => false,
                Alter::Lose { applied } | Alter::LoseAll { applied } => applied,
            };
            if applied {
                state.location = to;
                state.parameters = partition.parameters.unwrap_or_default();
            }
            match alter {
                Alter::Apply => Ok(()),
                Alter::Refuse => Err(MetastoreError::Server {
                    uri: "thrift://fake:9083".into(),
                    method: "alter_partition_with_environment_context",
                    exception: "InvalidOperationException",
                    message: "refused".into(),
                }),
                Alter::Lose { .. } => Err(lost()),
                Alter::LoseAll { .. } => {
                    state.reads_fail = true;
                    Err(lost())
                }
            }
        }
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

    use super::fake::{table, Alter, FakeMetastore};

    /// Moves the fake's partition from FROM to TO, adding a parameter.
    async fn relocate(
        metastore: &FakeMetastore,
    ) -> Result<(BTreeMap<String, String>, BTreeMap<String, String>), RelocateError> {
        let (table, spec) = table();
        set_location(metastore, &table, &spec, &loc(FROM), TO, |p| {
            let mut after = p.clone();
            after.insert("run".into(), "1".into());
            after
        })
        .await
    }

    #[tokio::test]
    async fn an_answered_alter_counts_once_read_back_and_keeps_the_metastore_off_the_statistics() {
        let ms = FakeMetastore::at(FROM);
        let (before, after) = relocate(&ms).await.expect("swapped");
        assert_eq!(ms.location(), TO);
        assert_eq!(before.get("run"), None);
        assert_eq!(after.get("run").map(String::as_str), Some("1"));
        assert_eq!(ms.parameters(), after);
        assert_eq!(ms.calls(), ["get", &format!("alter {TO}"), "get"]);
        assert_eq!(
            ms.env().get(DO_NOT_UPDATE_STATS).map(String::as_str),
            Some("true")
        );
    }

    #[tokio::test]
    async fn a_partition_moved_meanwhile_is_never_altered() {
        let ms = FakeMetastore::at("hdfs://nn:8020/elsewhere");
        let e = relocate(&ms).await.unwrap_err();
        assert!(matches!(e, RelocateError::Moved { .. }), "{e}");
        assert_eq!(ms.calls(), ["get"]);
    }

    #[tokio::test]
    async fn a_failed_read_before_the_alter_changes_nothing() {
        let ms = FakeMetastore::at(FROM);
        ms.fail_reads();
        let e = relocate(&ms).await.unwrap_err();
        assert!(matches!(e, RelocateError::Failed(_)), "{e}");
        assert_eq!(ms.calls(), ["get"]);
    }

    #[tokio::test]
    async fn a_refused_alter_is_a_definite_failure_at_once() {
        let ms = FakeMetastore::at(FROM);
        ms.alters(&[Alter::Refuse]);
        let e = relocate(&ms).await.unwrap_err();
        // Definite: the caller may remove the new directory.
        assert!(matches!(e, RelocateError::Failed(_)), "{e}");
        assert!(e.to_string().contains("did not take"), "{e}");
        assert_eq!(ms.location(), FROM);
        // The server answered: one read-back settles it, no waiting.
        assert_eq!(ms.calls().len(), 3, "{:?}", ms.calls());
    }

    #[tokio::test]
    async fn a_lost_alter_that_landed_counts_as_done() {
        let ms = FakeMetastore::at(FROM);
        ms.alters(&[Alter::Lose { applied: true }]);
        relocate(&ms).await.expect("the read-back shows the swap");
        assert_eq!(ms.location(), TO);
    }

    /// The error of a relocation whose alter does `alter`, which must be unconfirmed.
    async fn unconfirmed(alter: Alter) -> (FakeMetastore, String) {
        let ms = FakeMetastore::at(FROM);
        ms.alters(&[alter]);
        let e = relocate(&ms).await.unwrap_err();
        assert!(matches!(e, RelocateError::Unconfirmed(_)), "{e}");
        (ms, e.to_string())
    }

    #[tokio::test]
    async fn a_lost_alter_not_seen_within_the_retry_window_is_unconfirmed() {
        // The metastore may still apply it: the old location proves nothing yet.
        let (ms, e) = unconfirmed(Alter::Lose { applied: false }).await;
        assert!(e.contains("unknown"), "{e}");
        assert!(ms.calls().len() > 3, "kept reading back: {:?}", ms.calls());
    }

    #[tokio::test]
    async fn a_lost_alter_that_cannot_be_read_back_is_unconfirmed_even_if_it_landed() {
        let (_, e) = unconfirmed(Alter::LoseAll { applied: true }).await;
        assert!(e.contains("reading it back"), "{e}");
    }

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
