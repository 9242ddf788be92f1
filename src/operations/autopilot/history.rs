//! The history of `compact` runs, kept with the data: one JSON file per run and table in
//! `<table location>/.hive-orc-compactor-history/<run>.json`.
//!
//! Why there: it moves, is backed up and is permissioned with the table; every host that may
//! compact the table (an edge node, a shard of a fleet, a YARN task) reads and writes the same
//! place with the rights it already needs; and the directory is hidden, so no engine reads it.
//! One file per run, not one per table: hosts sharing a database write the same tables at once,
//! and HDFS has no compare-and-swap for a shared file, while a run owns its file alone.
//! Bounded: a run that writes deletes its table's oldest files beyond [`RUNS_KEPT`]; and it
//! records every partition it worked on, not those its thresholds skipped (only their count).
//!
//! A run rewrites its file after each batch of partitions (a hidden sibling, then one
//! overwriting rename), so a run killed midway leaves the partitions it finished, readable, and
//! `finished_at` unset.

use std::collections::BTreeMap;
use std::sync::Arc;

use anyhow::{anyhow, Context};
use bytes::Bytes;
use futures::StreamExt;
use serde::{Deserialize, Serialize};

use super::estimate::Rates;
use crate::hdfs::{Files, Hdfs, Location};
use crate::operations::compact::{CompactReport, OutputWriter};
use crate::operations::outcome::Status;
use crate::run_dirs;
use crate::table::TableInfo;

/// The hidden directory in a table's location holding its history.
pub const HISTORY_DIR: &str = ".hive-orc-compactor-history";
/// Runs kept per table: a month of nightly runs.
pub const RUNS_KEPT: usize = 31;
/// Runs read to plan: the rates and the failures in a row a suspension counts.
pub const RUNS_READ_TO_PLAN: usize = 10;
/// History files read at once.
const READS_IN_FLIGHT: usize = 8;

/// One run's record for one table.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunRecord {
    /// The run's id (its start time first, so ids sort by time); each compacted partition's
    /// own run directory id is in its record.
    pub run: String,
    pub table: String,
    pub started_at: String,
    /// Unset while the run works, and for ever if it was killed.
    #[serde(default)]
    pub finished_at: Option<String>,
    pub host: String,
    pub user: String,
    /// `--budget`, in seconds, when the run had one.
    #[serde(default)]
    pub budget_seconds: Option<f64>,
    /// The table as the run's survey found it: the daily metric of files and sizes.
    #[serde(default)]
    pub census: Option<TableCensus>,
    /// Partitions a threshold or the budget left out.
    #[serde(default)]
    pub skipped: usize,
    pub partitions: Vec<PartitionRecord>,
}

/// The surveyed partitions of a table, summed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct TableCensus {
    pub partitions: usize,
    pub files: usize,
    pub bytes: u64,
    /// Bytes in healthy files (all of a partition's when it holds no more files than its data
    /// needs, else those in files of at least the small-file size): the health's numerator.
    pub healthy_bytes: u64,
    /// Files beyond those the data needs at the target size, over the eligible partitions.
    pub excess_files: usize,
}

impl TableCensus {
    /// 0-100: the share of the bytes in healthy files (100 for an empty table).
    pub fn health(&self) -> u8 {
        match self.bytes {
            0 => 100,
            b => (self.healthy_bytes as f64 * 100.0 / b as f64).floor() as u8,
        }
    }

    pub fn mean_file_size(&self) -> u64 {
        self.bytes.checked_div(self.files as u64).unwrap_or(0)
    }
}

/// What the run did with one partition.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PartitionRecord {
    pub partition: String,
    pub status: Status,
    #[serde(default)]
    pub reason: Option<String>,
    /// The partition's run directory id when it was compacted.
    #[serde(default)]
    pub run_id: Option<String>,
    /// "copy", "rewrite" or "sort" (what its outputs were made by), when it was compacted.
    #[serde(default)]
    pub way: Option<String>,
    pub files_before: usize,
    pub files_after: usize,
    pub bytes_before: u64,
    pub bytes_after: u64,
    pub seconds: f64,
    /// Of those, its own work (see `CompactReport::work_seconds`): what rates are learnt from.
    #[serde(default)]
    pub work_seconds: f64,
    #[serde(default)]
    pub estimated_seconds: Option<f64>,
    /// The partition's files as listed before the run: a failure is forgiven once they change.
    #[serde(default)]
    pub fingerprint: Option<Fingerprint>,
}

/// The data files of a partition as one listing shows them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Fingerprint {
    pub files: usize,
    pub bytes: u64,
    pub newest_modification: Option<u64>,
}

impl PartitionRecord {
    fn attempted(&self) -> bool {
        self.status == Status::Compacted || self.status == Status::NothingToDo || self.failed()
    }

    /// A partition refused by its files (one unreadable, say) fails every night alike.
    fn failed(&self) -> bool {
        matches!(
            self.status,
            Status::Failed | Status::VerificationFailed | Status::Refused
        )
    }
}

/// A table's recent runs, oldest first.
#[derive(Debug, Clone, Default)]
pub struct TableHistory {
    pub runs: Vec<RunRecord>,
    /// Files that could not be read (named, with why): the runs they hold are not counted.
    pub unreadable: Vec<String>,
}

impl TableHistory {
    /// Why the partition is suspended, if it is: its last `after` attempts all failed, and its
    /// files are as they were at the last failure (`now`: as listed today; unknown counts as
    /// unchanged). Skips and busy partitions neither count nor forgive.
    pub fn suspension(
        &self,
        partition: &str,
        now: Option<&Fingerprint>,
        after: usize,
    ) -> Option<String> {
        if after == 0 {
            return None;
        }
        let attempts: Vec<&PartitionRecord> = self
            .runs
            .iter()
            .rev()
            .flat_map(|r| r.partitions.iter().filter(|p| p.partition == partition))
            .filter(|p| p.attempted())
            .take(after)
            .collect();
        if attempts.len() < after || !attempts.iter().all(|p| p.failed()) {
            return None;
        }
        let last = attempts[0];
        if let (Some(then), Some(now)) = (&last.fingerprint, now) {
            if then != now {
                return None;
            }
        }
        Some(format!(
            "suspended: failed or refused in {after} runs in a row (last: {}); fix the cause \
             (a changed file clears it), or run with --retry-suspended",
            last.reason.as_deref().unwrap_or("no reason recorded")
        ))
    }

    /// `(bytes read, seconds)` of every partition compacted in these runs.
    pub fn samples(&self) -> Vec<(u64, f64)> {
        self.runs
            .iter()
            .flat_map(|r| &r.partitions)
            .filter(|p| p.status == Status::Compacted)
            .map(|p| (p.bytes_before, p.work_seconds))
            .collect()
    }

    /// The table's rates: learnt from its own runs, else from `pooled` (every table the run
    /// read), else the defaults.
    pub fn rates(&self, sorted: bool, pooled: Option<Rates>) -> Rates {
        let defaults = Rates::defaults(sorted);
        Rates::learn(&self.samples(), defaults)
            .or(pooled.filter(|_| !sorted))
            .unwrap_or(defaults)
    }
}

/// `<table location>/.hive-orc-compactor-history`; `None` when the table has no HDFS location.
pub fn dir(table: &TableInfo) -> Option<Location> {
    let location = table.storage.location.as_deref()?;
    Location::parse(location).ok().map(|l| l.child(HISTORY_DIR))
}

fn file_name(run: &str) -> String {
    format!("{run}.json")
}

/// The run ids on record in `dir`, oldest first.
async fn runs_in(hdfs: &Hdfs, dir: &Location) -> anyhow::Result<Vec<String>> {
    let Some(listing) = hdfs.list(dir).await? else {
        return Ok(vec![]);
    };
    let mut runs: Vec<String> = listing
        .files
        .iter()
        .filter_map(|f| f.name.strip_suffix(".json").map(str::to_owned))
        .filter(|r| !r.starts_with('.'))
        .collect();
    runs.sort();
    Ok(runs)
}

/// The table's newest `last` runs (every run kept: [`RUNS_KEPT`]), oldest first. A file that
/// cannot be read or parsed is named in `unreadable`, not fatal: history informs, it never
/// stops a run.
pub async fn read(hdfs: &Hdfs, table: &TableInfo, last: usize) -> anyhow::Result<TableHistory> {
    let Some(dir) = dir(table) else {
        return Ok(TableHistory::default());
    };
    let mut runs = runs_in(hdfs, &dir)
        .await
        .with_context(|| format!("listing the history of {} in {dir}", table.qualified_name()))?;
    runs.drain(..runs.len().saturating_sub(last));
    let read: Vec<Result<RunRecord, String>> = futures::stream::iter(runs)
        .map(|run| {
            let path = dir.child(&file_name(&run));
            async move {
                read_one(hdfs, &path)
                    .await
                    .map_err(|e| format!("{path}: {e:#}"))
            }
        })
        .buffered(READS_IN_FLIGHT)
        .collect()
        .await;
    let mut history = TableHistory::default();
    for r in read {
        match r {
            Ok(run) => history.runs.push(run),
            Err(e) => history.unreadable.push(e),
        }
    }
    // Ids tell runs apart to the second; runs a second apart (a retry loop) go by their start.
    history.runs.sort_by(|a, b| {
        let at = |r: &RunRecord| chrono::DateTime::parse_from_rfc3339(&r.started_at).ok();
        at(a).cmp(&at(b)).then_with(|| a.run.cmp(&b.run))
    });
    Ok(history)
}

async fn read_one(hdfs: &Hdfs, path: &Location) -> anyhow::Result<RunRecord> {
    let status = hdfs.status(path).await?.ok_or_else(|| anyhow!("gone"))?;
    let bytes = hdfs
        .open(path)
        .await?
        .read_range(0, status.length as usize)
        .await
        .map_err(|e| anyhow!("reading it: {e}"))?;
    serde_json::from_slice(&bytes).context("not a history record of this tool")
}

/// Writes (or rewrites) a run's record for its table: a hidden sibling first, then one
/// overwriting rename, so a reader finds the old record or the new one.
pub async fn write(hdfs: &Hdfs, dir: &Location, record: &RunRecord) -> anyhow::Result<()> {
    hdfs.mkdirs(dir, 0o755).await?;
    let path = dir.child(&file_name(&record.run));
    let tmp = dir.child(&format!(
        ".{}.{}",
        record.run,
        uuid::Uuid::new_v4().simple()
    ));
    let json = Bytes::from(serde_json::to_vec(record)?);
    Files::write_new(hdfs, &tmp, futures::stream::iter([Ok(json)]), 0o644).await?;
    hdfs.replace(&tmp, &path).await?;
    Ok(())
}

/// Deletes the table's oldest records beyond [`RUNS_KEPT`].
pub async fn prune(hdfs: &Hdfs, dir: &Location) -> anyhow::Result<()> {
    let runs = runs_in(hdfs, dir).await?;
    for run in &runs[..runs.len().saturating_sub(RUNS_KEPT)] {
        hdfs.delete(&dir.child(&file_name(run)), false).await?;
    }
    Ok(())
}

/// The tables' histories by `db.table`, read [`READS_IN_FLIGHT`] tables at a time.
pub async fn read_tables(
    hdfs: &Hdfs,
    tables: &[Arc<TableInfo>],
    last: usize,
) -> BTreeMap<String, TableHistory> {
    futures::stream::iter(tables)
        .map(|t| async move {
            let history = read(hdfs, t, last).await.unwrap_or_else(|e| TableHistory {
                runs: vec![],
                unreadable: vec![format!("{e:#}")],
            });
            (t.qualified_name(), history)
        })
        .buffered(READS_IN_FLIGHT)
        .collect()
        .await
}

/// Records a run in the history of each table it surveyed or worked on, as its partitions end
/// (a table whose named partitions were all refused or skipped gets no record).
pub struct Recorder<'a> {
    hdfs: &'a Hdfs,
    tables: BTreeMap<String, Entry>,
    /// What could not be written (the run goes on: history informs, it never stops a run).
    pub problems: Vec<String>,
}

struct Entry {
    dir: Option<Location>,
    record: RunRecord,
    dirty: bool,
    /// Whether the table gets a record at all: one the run surveyed, or one with a partition
    /// it worked on. A run that only refused or skipped named partitions of a table writes
    /// nothing there: a refusal leaves the table exactly as it was.
    kept: bool,
}

impl<'a> Recorder<'a> {
    /// A record for each of `tables`, with its census when the run surveyed it.
    pub fn new(
        hdfs: &'a Hdfs,
        tables: impl IntoIterator<Item = (Arc<TableInfo>, Option<TableCensus>)>,
        budget_seconds: Option<f64>,
    ) -> Self {
        let run = run_dirs::new_run_id();
        let started_at = chrono::Utc::now().to_rfc3339();
        let host = whoami::hostname().unwrap_or_else(|_| "unknown".into());
        let user = hdfs.user();
        let mut out = BTreeMap::new();
        for (table, census) in tables {
            let name = table.qualified_name();
            let kept = census.is_some();
            out.entry(name.clone()).or_insert_with(|| Entry {
                dir: dir(&table),
                kept,
                record: RunRecord {
                    run: run.clone(),
                    table: name,
                    started_at: started_at.clone(),
                    finished_at: None,
                    host: host.clone(),
                    user: user.clone(),
                    budget_seconds,
                    census,
                    skipped: 0,
                    partitions: vec![],
                },
                dirty: true,
            });
        }
        Recorder {
            hdfs,
            tables: out,
            problems: vec![],
        }
    }

    /// Adds a partition's report (skips only counted), with what it was expected to take and
    /// its files as listed before.
    pub fn record(
        &mut self,
        report: &CompactReport,
        estimated_seconds: Option<f64>,
        fingerprint: Option<Fingerprint>,
    ) {
        let Some(entry) = self.tables.get_mut(&report.outcome.table) else {
            return;
        };
        entry.dirty = true;
        entry.kept |= !matches!(report.outcome.status, Status::Skipped | Status::Refused);
        if report.outcome.status == Status::Skipped {
            entry.record.skipped += 1;
            return;
        }
        entry.record.partitions.push(PartitionRecord {
            partition: report.outcome.partition.clone(),
            status: report.outcome.status,
            reason: report.outcome.reason.clone(),
            run_id: report.run_id.clone(),
            way: (report.outcome.status == Status::Compacted).then(|| way(report)),
            files_before: report.files_before,
            files_after: report.files_after,
            bytes_before: report.bytes_before,
            bytes_after: report.bytes_after,
            seconds: report.seconds,
            work_seconds: report.work_seconds,
            estimated_seconds,
            fingerprint,
        });
    }

    /// Writes the records changed since the last flush.
    pub async fn flush(&mut self) {
        let hdfs = self.hdfs;
        for entry in self.tables.values_mut().filter(|e| e.dirty && e.kept) {
            entry.dirty = false;
            let Some(dir) = &entry.dir else { continue };
            if let Err(e) = write(hdfs, dir, &entry.record).await {
                let problem = format!(
                    "the history of {} could not be written in {dir}: {e:#}",
                    entry.record.table
                );
                tracing::warn!("{problem}");
                self.problems.push(problem);
                // Once is enough: the next flush would fail the same way.
                entry.dir = None;
            }
        }
    }

    /// Marks every record finished, writes it and prunes each table's oldest runs.
    pub async fn finish(mut self) -> Vec<String> {
        let now = chrono::Utc::now().to_rfc3339();
        for entry in self.tables.values_mut() {
            entry.record.finished_at = Some(now.clone());
            entry.dirty = true;
        }
        self.flush().await;
        for entry in self.tables.values().filter(|e| e.kept) {
            let Some(dir) = &entry.dir else { continue };
            if let Err(e) = prune(self.hdfs, dir).await {
                tracing::warn!("pruning the history in {dir}: {e:#}");
            }
        }
        self.problems
    }
}

/// "sort" for a laid-out partition, "rewrite" when any output was re-encoded, else "copy".
fn way(report: &CompactReport) -> String {
    let sorted = report
        .layout
        .as_ref()
        .is_some_and(|l| l.layout.starts_with("sort") || l.layout.starts_with("zorder"));
    let rewritten = report
        .groups
        .iter()
        .flat_map(|g| &g.outputs)
        .any(|o| o.made_by == OutputWriter::Rewrite);
    match (sorted, rewritten) {
        (true, _) => "sort",
        (false, true) => "rewrite",
        (false, false) => "copy",
    }
    .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(partition: &str, status: Status, files: usize) -> PartitionRecord {
        PartitionRecord {
            partition: partition.into(),
            status,
            reason: Some(format!("{status:?}")),
            run_id: None,
            way: None,
            files_before: files,
            files_after: 0,
            bytes_before: 0,
            bytes_after: 0,
            seconds: 1.0,
            work_seconds: 1.0,
            estimated_seconds: None,
            fingerprint: Some(Fingerprint {
                files,
                bytes: 10,
                newest_modification: Some(5),
            }),
        }
    }

    fn history(runs: Vec<Vec<PartitionRecord>>) -> TableHistory {
        TableHistory {
            runs: runs
                .into_iter()
                .enumerate()
                .map(|(i, partitions)| RunRecord {
                    run: format!("r{i}"),
                    table: "d.t".into(),
                    started_at: String::new(),
                    finished_at: None,
                    host: String::new(),
                    user: String::new(),
                    budget_seconds: None,
                    census: None,
                    skipped: 0,
                    partitions,
                })
                .collect(),
            unreadable: vec![],
        }
    }

    #[test]
    fn suspends_after_failures_in_a_row_until_the_files_change() {
        let f = |s| record("p=1", s, 3);
        let h = history(vec![
            vec![f(Status::Failed)],
            vec![f(Status::Busy)],
            vec![f(Status::Failed), record("p=2", Status::Compacted, 1)],
            vec![f(Status::VerificationFailed)],
        ]);
        let same = f(Status::Failed).fingerprint.unwrap();
        let why = h.suspension("p=1", Some(&same), 3).unwrap();
        assert!(
            why.starts_with("suspended: failed or refused in 3 runs"),
            "{why}"
        );
        assert!(why.contains("VerificationFailed"), "{why}");
        assert!(h.suspension("p=1", None, 3).is_some());
        assert!(h.suspension("p=1", Some(&same), 4).is_none());
        assert!(h.suspension("p=1", Some(&same), 0).is_none());
        assert!(h.suspension("p=2", None, 1).is_none());
        let changed = Fingerprint { files: 4, ..same };
        assert!(h.suspension("p=1", Some(&changed), 3).is_none());
        let healed = history(vec![
            vec![f(Status::Failed)],
            vec![f(Status::Failed)],
            vec![f(Status::Compacted)],
            vec![f(Status::Failed)],
        ]);
        assert!(healed.suspension("p=1", Some(&same), 2).is_none());
    }

    #[test]
    fn health_is_the_share_of_bytes_in_large_files() {
        let c = TableCensus {
            partitions: 1,
            files: 4,
            bytes: 400,
            healthy_bytes: 301,
            excess_files: 2,
        };
        assert_eq!((c.health(), c.mean_file_size()), (75, 100));
        assert_eq!(TableCensus::default().health(), 100);
    }

    #[test]
    fn rates_come_from_the_table_then_the_pool_then_the_defaults() {
        let mut compacted = record("p=1", Status::Compacted, 3);
        compacted.bytes_before = 1 << 30;
        compacted.work_seconds = 12.0;
        let h = history(vec![vec![compacted.clone(), compacted.clone(), compacted]]);
        assert!((h.rates(false, None).seconds_per_gib - 10.0).abs() < 1e-6);
        let empty = TableHistory::default();
        let pooled = Rates {
            seconds_per_partition: 1.0,
            seconds_per_gib: 5.0,
            learnt_from: 9,
        };
        assert_eq!(empty.rates(false, Some(pooled)), pooled);
        assert_eq!(empty.rates(true, Some(pooled)), Rates::defaults(true));
    }
}
