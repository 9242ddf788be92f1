//! `compact` over many partitions: typed specs, or a selection (every partition of a table or of
//! a database's tables, those a metastore filter picks, one shard of them), filtered by
//! thresholds, capped by budgets, compacted a few at a time.
//!
//! Promises:
//! 1. Every partition the run considers gets exactly one report: compacted or not, and a
//!    partition left out by a threshold or budget is `skipped` with the reason.
//! 2. Each partition is compacted by the protocol of [`crate::operations::compact`], with all
//!    of its promises: planned without a lock (one with nothing to do is never locked), then
//!    locked, staged and swapped in a batch of partitions of its table
//!    ([`crate::operations::compact::batch`]); one partition's failure does not stop the
//!    others.
//! 3. At most `parallel` partitions are planned or staged at once.
//! 4. Once `cancel` fires no partition starts (those left are reported skipped), and running
//!    ones stop at their next safe point before the swap, or finish if already past it: no
//!    partition is left half swapped, and the run counts as failed.
//! 5. Thresholds and budgets are judged from one directory listing per partition and the
//!    tables' history, before any ORC file is read; [`plan`] does nothing else, so it is what
//!    `--dry-run` starts from. Partitions go by benefit per cost, each table with work first
//!    within its share of the budgets ([`admission`]).
//! 6. Every partition's report goes into its table's history as it ends, written after each
//!    batch, so a killed run leaves what it finished ([`history`]); a dry run records nothing.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytesize::ByteSize;
use futures::StreamExt;
use serde::Serialize;

use crate::exit::ExitCode;
use crate::fleet::{self, Candidate, Selection, Survey};
use crate::hdfs::Hdfs;
use crate::metastore::{Metastore, MetastorePool};
use crate::operations::autopilot::admission::{self, Budgets, Spent};
use crate::operations::autopilot::estimate::{Estimate, Listed, Rates};
use crate::operations::autopilot::history::{self, Fingerprint, Recorder, TableCensus};
use crate::operations::compact::{
    compact_batch, plan_partition, CompactOptions, CompactReport, Planned, Planning, Progress,
};
use crate::operations::outcome::Status;
use crate::table::TableInfo;

/// Partitions a run leaves alone, judged from their listing.
#[derive(Debug, Clone, Default)]
pub struct Thresholds {
    /// Skip partitions with fewer data files.
    pub min_files: Option<usize>,
    /// Skip partitions whose files are already this large on average.
    pub max_avg_size: Option<u64>,
    /// Skip partitions with a file modified more recently: a writer may still be adding files.
    pub min_age: Option<Duration>,
}

impl Thresholds {
    fn any(&self) -> bool {
        self.min_files.is_some() || self.max_avg_size.is_some() || self.min_age.is_some()
    }

    /// Why the surveyed partition is skipped, if it is. `now` is in ms since the epoch.
    fn skip(&self, s: &Survey, now: u64) -> Option<String> {
        if let Some(min) = self.min_files.filter(|&m| s.sizes.count < m) {
            return Some(format!(
                "{} data files, fewer than the minimum of {min}",
                s.sizes.count
            ));
        }
        if let Some(max) = self.max_avg_size.filter(|&m| s.mean_size() > m) {
            return Some(format!(
                "its files average {}, already above {}",
                size(s.mean_size()),
                size(max)
            ));
        }
        let age = self.min_age?;
        let newest = s.newest_modification?;
        let ago = Duration::from_millis(now.saturating_sub(newest));
        (ago < age).then(|| {
            format!(
                "a file was modified {}s ago, less than the minimum age of {}s: a writer may \
                 still be adding files",
                ago.as_secs(),
                age.as_secs()
            )
        })
    }
}

fn size(bytes: u64) -> String {
    ByteSize(bytes).display().iec().to_string()
}

/// How much one run may take on.
#[derive(Debug, Clone, Default)]
pub struct Budget {
    /// At most this many partitions compacted.
    pub limit: Option<usize>,
    /// At most this many bytes of input (the partitions' data files) read.
    pub bytes: Option<u64>,
    /// No partition admitted that the estimates say would end the run after this long.
    pub time: Option<Duration>,
}

impl Budget {
    fn any(&self) -> bool {
        self.limit.is_some() || self.bytes.is_some() || self.time.is_some()
    }
}

/// What past runs (the table's history) decide for a run.
#[derive(Debug, Clone)]
pub struct Autopilot {
    /// A partition whose last this many attempts failed is skipped as suspended; 0: never.
    pub suspend_after: usize,
    /// Try suspended partitions again.
    pub retry_suspended: bool,
    /// Each table's weight in the budgets' shares (`db.table`; 1 when absent).
    pub weights: BTreeMap<String, f64>,
    /// Files smaller than this count against a table's health.
    pub small_file_size: u64,
    /// Record the run in each table's history (not for a dry run, which changes nothing).
    pub record: bool,
}

impl Default for Autopilot {
    fn default() -> Self {
        Autopilot {
            suspend_after: DEFAULT_SUSPEND_AFTER,
            retry_suspended: false,
            weights: BTreeMap::new(),
            small_file_size: 64 << 20,
            record: true,
        }
    }
}

/// `--suspend-after`'s default: as many failures in a row as a nightly run meets in a
/// long weekend.
pub const DEFAULT_SUSPEND_AFTER: usize = 3;

#[derive(Debug, Clone)]
pub struct BatchOptions {
    pub compact: CompactOptions,
    pub thresholds: Thresholds,
    pub budget: Budget,
    pub autopilot: Autopilot,
    /// Partitions compacted at once.
    pub parallel: usize,
    /// The run's threads (see [`CompactOptions::threads`]), shared by the partitions staged
    /// at once.
    pub threads: usize,
    /// Partitions of a table that share their lock request and their swap's metastore call.
    pub batch_size: usize,
    /// No partition is started after this (a YARN task whose delegation tokens are ending).
    pub start_by: Option<StartBy>,
}

/// A time after which a run starts no partition: a partition begun later might not finish
/// while its credentials still work, and one never begun loses nothing.
#[derive(Debug, Clone)]
pub struct StartBy {
    pub at: std::time::SystemTime,
    /// The report's reason for each partition left out: what ends, when, and what to do.
    pub reason: String,
}

/// What a run will do: partitions to compact, in order, and the ones already decided.
#[derive(Debug, Default)]
pub struct BatchPlan {
    pub runs: Vec<Candidate>,
    /// Skipped partitions, refused tables, tables whose partitions could not be listed.
    pub decided: Vec<CompactReport>,
    /// What the runs are expected to take, by [`Candidate::key`] (surveyed ones only).
    pub estimates: BTreeMap<String, Estimate>,
    /// The runs' files as the survey listed them, by key.
    pub fingerprints: BTreeMap<String, Fingerprint>,
    /// The surveyed tables, each with what its survey found.
    pub census: Vec<(Arc<TableInfo>, TableCensus)>,
    /// Keys of the partitions skipped as suspended, and tables all of whose partitions with
    /// work are.
    pub suspended: Vec<String>,
    pub tables_suspended: Vec<String>,
    /// The runs' estimates summed, and what the budgets left for later runs.
    pub estimate: Option<RunEstimate>,
    /// History files that could not be read: those runs do not count.
    pub history_problems: Vec<String>,
}

/// A run's estimate, as `--dry-run` shows it before and the summary beside the actual after.
#[derive(Debug, Clone, Default, Serialize)]
pub struct RunEstimate {
    /// The admitted partitions' work summed.
    #[serde(flatten)]
    pub admitted: Estimate,
    /// Their wall time: the work spread over `--parallel`.
    pub wall_seconds: f64,
    /// What the budgets left for later runs.
    pub left_for_later: Estimate,
    /// Partitions whose rates were learnt from the history (the rest use the defaults).
    pub learnt: usize,
}

/// Selects, surveys and filters; changes nothing but reading each selected table's history.
/// For a selection, partitions that give back the most NameNode objects per second of work
/// come first, within the budgets and each table's share of them; typed specs keep their
/// order and are never suspended (they were asked for by name).
pub async fn plan(
    metastore: &Metastore,
    hdfs: &Hdfs,
    selection: &Selection,
    options: &BatchOptions,
) -> anyhow::Result<BatchPlan> {
    let typed = selection.partitions.named_one_by_one();
    let mut plan = BatchPlan::default();
    let mut candidates = Vec::new();
    for t in fleet::select(metastore, selection).await? {
        let name = t.table.qualified_name();
        if let Some(e) = t.error {
            plan.decided
                .push(CompactReport::not_run(&name, "", Status::Failed, e, None));
        } else if let (Some(r), false) = (&t.refusal, typed) {
            plan.decided.push(CompactReport::not_run(
                &name,
                "",
                Status::Refused,
                r.reason.clone(),
                Some(r.rule),
            ));
        } else if t.table.partition_keys.is_empty() && !typed {
            plan.decided.push(CompactReport::not_run(
                &name,
                "",
                Status::Skipped,
                "unpartitioned: compact works on partitions".into(),
                None,
            ));
        } else {
            candidates.extend(t.candidates);
        }
    }
    let budget = &options.budget;
    if typed && !options.thresholds.any() && !budget.any() {
        plan.runs = candidates;
        return Ok(plan);
    }
    let target = options.compact.target_size;
    let small = options.autopilot.small_file_size;
    let now = chrono::Utc::now().timestamp_millis().max(0) as u64;
    let mut eligible = Vec::new();
    // A partition the survey cannot judge goes to compact, which reports why in its own words.
    let mut unjudged = Vec::new();
    let mut census: Vec<(Arc<TableInfo>, TableCensus)> = Vec::new();
    let mut surveys = std::pin::pin!(fleet::surveys(metastore, hdfs, candidates, small));
    while let Some(s) = surveys.next().await {
        if !s.eligible() {
            unjudged.push(s.candidate);
            continue;
        }
        count(&mut census, &s, target);
        if let Some(reason) = options.thresholds.skip(&s, now) {
            let c = &s.candidate;
            plan.decided.push(CompactReport::not_run(
                &c.table.qualified_name(),
                &c.name,
                Status::Skipped,
                reason,
                None,
            ));
        } else {
            eligible.push(s);
        }
    }
    let tables: Vec<Arc<TableInfo>> = census.iter().map(|(t, _)| t.clone()).collect();
    let histories = history::read_tables(hdfs, &tables, history::RUNS_READ_TO_PLAN).await;
    plan.history_problems = histories
        .values()
        .flat_map(|h| h.unreadable.iter().cloned())
        .collect();
    let pooled = Rates::learn(
        &histories
            .values()
            .flat_map(|h| h.samples())
            .collect::<Vec<_>>(),
        Rates::defaults(false),
    );
    let no_history = history::TableHistory::default();
    let mut rates_of: BTreeMap<String, Rates> = BTreeMap::new();
    let mut admissible = Vec::new();
    let mut with_work: BTreeMap<String, (usize, usize)> = BTreeMap::new();
    let mut learnt = 0;
    for s in eligible {
        let c = &s.candidate;
        let (table, key) = (c.table.qualified_name(), c.key());
        let fingerprint = Fingerprint {
            files: s.sizes.count,
            bytes: s.sizes.bytes,
            newest_modification: s.newest_modification,
        };
        let history = histories.get(&table).unwrap_or(&no_history);
        let work = with_work.entry(table.clone()).or_default();
        work.0 += usize::from(s.excess_files(target) > 0);
        let suspension = match typed || options.autopilot.retry_suspended {
            true => None,
            false => {
                history.suspension(&c.name, Some(&fingerprint), options.autopilot.suspend_after)
            }
        };
        if let Some(reason) = suspension {
            work.0 += usize::from(s.excess_files(target) == 0);
            work.1 += 1;
            plan.suspended.push(key);
            plan.decided.push(CompactReport::not_run(
                &table,
                &c.name,
                Status::Skipped,
                reason,
                None,
            ));
            continue;
        }
        let layout = options.compact.layout_for(&table);
        let sorted = layout.is_some_and(|l| l.order.is_some());
        let laid_out = layout.is_some();
        // Learnt once a table: the samples are every partition of its runs read.
        let rates = *rates_of
            .entry(table.clone())
            .or_insert_with(|| history.rates(sorted, pooled));
        learnt += usize::from(rates.learnt_from > 0);
        let listed = Listed {
            files: s.sizes.count,
            bytes: s.sizes.bytes,
            namenode_objects: s.namenode_objects,
            block_size: s.block_size,
        };
        let estimate = Estimate::of(&listed, target, options.batch_size, &rates, laid_out);
        plan.fingerprints.insert(key, fingerprint);
        admissible.push(admission::Candidate {
            item: s.candidate,
            table,
            estimate,
        });
    }
    plan.tables_suspended = with_work
        .into_iter()
        .filter(|(_, (all, suspended))| *suspended > 0 && all == suspended)
        .map(|(t, _)| t)
        .collect();
    let parallel = options.parallel.max(1);
    let budgets = Budgets {
        partitions: budget.limit,
        bytes: budget.bytes,
        seconds: budget.time.map(|t| t.as_secs_f64() * parallel as f64),
    };
    let admission::Admission { admitted, left } =
        admission::admit(admissible, &budgets, &options.autopilot.weights, !typed);
    let mut estimate = RunEstimate {
        learnt,
        ..RunEstimate::default()
    };
    for (c, spent) in left {
        estimate.left_for_later.add(&c.estimate);
        plan.fingerprints.remove(&c.item.key());
        plan.decided.push(over_budget(&c.item, spent.what()));
    }
    for c in admitted {
        estimate.admitted.add(&c.estimate);
        plan.estimates.insert(c.item.key(), c.estimate);
        plan.runs.push(c.item);
    }
    estimate.wall_seconds = estimate.admitted.seconds / parallel.min(plan.runs.len().max(1)) as f64;
    plan.estimate = Some(estimate);
    plan.census = census;
    plan.runs.extend(unjudged);
    Ok(plan)
}

/// Adds a surveyed partition to its table's census.
fn count(census: &mut Vec<(Arc<TableInfo>, TableCensus)>, s: &Survey, target: u64) {
    let table = &s.candidate.table;
    let i = match census.iter().position(|(t, _)| Arc::ptr_eq(t, table)) {
        Some(i) => i,
        None => {
            census.push((table.clone(), TableCensus::default()));
            census.len() - 1
        }
    };
    let c = &mut census[i].1;
    c.partitions += 1;
    c.files += s.sizes.count;
    c.bytes += s.sizes.bytes;
    c.healthy_bytes += s.healthy_bytes(target);
    c.excess_files += s.excess_files(target);
}

fn over_budget(c: &Candidate, what: &str) -> CompactReport {
    CompactReport::not_run(
        &c.table.qualified_name(),
        &c.name,
        Status::Skipped,
        format!("left for a later run: {what} of this run is reached"),
        None,
    )
}

/// How the CLI follows a run: a progress display per partition and each report as it comes.
pub trait Observer: Sync {
    /// A partition starts; the returned progress lives until it ends.
    fn started(&self, key: &str) -> Box<dyn Progress + '_>;
    fn finished(&self, report: &CompactReport);
}

/// The end of a run, for cron: counts, what needs a look, and the exit code.
#[derive(Debug, Default, Serialize)]
pub struct BatchSummary {
    #[serde(flatten)]
    pub counts: Counts,
    /// The same counts per table, in the order the tables were first reported.
    pub tables: Vec<TableCounts>,
    pub seconds: f64,
    /// A signal stopped the run early.
    pub interrupted: bool,
    /// `db.table/partition: status: reason` of every refused, busy or failed partition.
    pub attention: Vec<String>,
    /// Partitions skipped as suspended, and tables whose partitions with work all are.
    pub suspended: Vec<String>,
    pub tables_suspended: Vec<String>,
    /// What the plan expected the run to take (a selection's surveyed partitions): beside
    /// `seconds` after a run, alone in a dry run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub estimate: Option<RunEstimate>,
    /// History that could not be read or written: those runs do not count.
    pub history_problems: Vec<String>,
    pub exit_code: i32,
}

/// A run's partitions by status, and what the compacted ones changed.
#[derive(Debug, Default, Clone, Serialize)]
pub struct Counts {
    pub partitions: usize,
    pub compacted: usize,
    pub nothing_to_do: usize,
    pub dry_run: usize,
    pub skipped: usize,
    pub refused: usize,
    pub busy: usize,
    pub failed: usize,
    pub verification_failed: usize,
    /// Data files and bytes of the compacted partitions, before and after.
    pub files_before: usize,
    pub files_after: usize,
    pub bytes_before: u64,
    pub bytes_after: u64,
    /// Data files the compacted partitions no longer list.
    pub files_removed: usize,
    /// Bytes written into new files.
    pub bytes_rewritten: u64,
}

#[derive(Debug, Clone, Serialize)]
pub struct TableCounts {
    pub table: String,
    #[serde(flatten)]
    pub counts: Counts,
}

impl Counts {
    /// Counts `r`; false for a status that is not a compaction's (counted as a partition only).
    fn add(&mut self, r: &CompactReport) -> bool {
        self.partitions += 1;
        let counter = match r.outcome.status {
            Status::Compacted => {
                self.files_before += r.files_before;
                self.files_after += r.files_after;
                self.bytes_before += r.bytes_before;
                self.bytes_after += r.bytes_after;
                self.files_removed += r.files_before.saturating_sub(r.files_after);
                self.bytes_rewritten += r.bytes_after;
                &mut self.compacted
            }
            Status::NothingToDo => &mut self.nothing_to_do,
            Status::DryRun => &mut self.dry_run,
            Status::Skipped => &mut self.skipped,
            Status::Refused => &mut self.refused,
            Status::Busy => &mut self.busy,
            Status::Failed => &mut self.failed,
            Status::VerificationFailed => &mut self.verification_failed,
            Status::RolledBack
            | Status::Cleaned
            | Status::Migrated
            | Status::Reverted
            | Status::Ready
            | Status::Verified => return false,
        };
        *counter += 1;
        true
    }
}

impl BatchSummary {
    pub(crate) fn add(&mut self, r: &CompactReport) {
        let table = &r.outcome.table;
        let i = match self.tables.iter().position(|t| &t.table == table) {
            Some(i) => i,
            None => {
                self.tables.push(TableCounts {
                    table: table.clone(),
                    counts: Counts::default(),
                });
                self.tables.len() - 1
            }
        };
        self.tables[i].counts.add(r);
        if !self.counts.add(r) {
            return;
        }
        if r.outcome.status.exit_code() != ExitCode::Ok {
            let status = serde_json::to_value(r.outcome.status)
                .ok()
                .and_then(|v| v.as_str().map(str::to_owned))
                .unwrap_or_default();
            self.attention.push(format!(
                "{}/{}: {status}: {}",
                r.outcome.table,
                r.outcome.partition,
                r.outcome.reason.as_deref().unwrap_or("")
            ));
        }
    }

    /// The worst outcome; an interrupted run is a failed one.
    pub fn exit(&self) -> ExitCode {
        let statuses = [
            (
                self.counts.verification_failed,
                ExitCode::VerificationFailed,
            ),
            (
                self.counts.failed + usize::from(self.interrupted),
                ExitCode::Failed,
            ),
            (self.counts.busy, ExitCode::Busy),
            (self.counts.refused, ExitCode::Refused),
        ];
        ExitCode::worst(
            statuses
                .into_iter()
                .filter(|(n, _)| *n > 0)
                .map(|(_, code)| code),
        )
    }
}

/// Reports the decided partitions, then compacts the planned ones: each planned without a lock,
/// `parallel` at a time, and those with work in batches of `batch_size` partitions of one table
/// ([`compact_batch`]). Partitions are taken table by table, each table's in plan order.
pub async fn execute(
    pool: &MetastorePool,
    hdfs: &Hdfs,
    plan: BatchPlan,
    options: &BatchOptions,
    observer: &dyn Observer,
) -> BatchSummary {
    let started = Instant::now();
    let mut summary = BatchSummary {
        suspended: plan.suspended,
        tables_suspended: plan.tables_suspended,
        estimate: plan.estimate,
        history_problems: plan.history_problems,
        ..BatchSummary::default()
    };
    let recorder = options.autopilot.record.then(|| {
        let worked_on = plan.runs.iter().map(|c| (c.table.clone(), None));
        let surveyed = plan.census.into_iter().map(|(t, c)| (t, Some(c)));
        let budget = options.budget.time.map(|t| t.as_secs_f64());
        Recorder::new(hdfs, surveyed.chain(worked_on), budget)
    });
    let estimates = &plan.estimates;
    let mut reporting = Reporting {
        observer,
        summary: &mut summary,
        recorder,
        estimates,
        fingerprints: plan.fingerprints,
    };
    reporting.report(&plan.decided).await;
    // Planning's few metastore calls (resolving typed specs) share one connection of the
    // pool for the whole run; the batches take the others, one each. Planning pauses while
    // the batches in flight are busy, so it must not wait for their connections.
    let planner = pool.get().await;
    let planner = &*planner;
    // The threads and the sort memory are the run's, shared by the partitions staged at once.
    let staged_at_once = options.parallel.min(plan.runs.len());
    let options = &BatchOptions {
        compact: options.compact.shared_by(staged_at_once, options.threads),
        ..options.clone()
    };
    let planned = futures::stream::iter(by_table(plan.runs))
        .map(|c| async move {
            let table = c.table.qualified_name();
            if let Some(not) = not_started(options) {
                return Planning::Done(Box::new(not.report(&table, &c.name)));
            }
            // Past the time budget by the estimate: left for a later run.
            let expected = estimates.get(&c.key()).map_or(0.0, |e| e.seconds);
            let late = options
                .budget
                .time
                .is_some_and(|t| started.elapsed().as_secs_f64() + expected > t.as_secs_f64());
            if late {
                return Planning::Done(Box::new(over_budget(&c, Spent::Time.what())));
            }
            let (table, known) = (&c.table, c.partition.as_ref());
            plan_partition(planner, hdfs, table, &c.name, known, &options.compact).await
        })
        .buffered(options.parallel.max(1));
    // `parallel` partitions staged at once: in one batch, or in several small ones.
    let size = options.batch_size.max(1);
    let in_flight = (options.parallel / size).max(1);
    let inner = (options.parallel / in_flight).max(1);
    let mut reports = std::pin::pin!(batches(Box::pin(planned), size)
        .map(|item| async move {
            match item {
                Item::Done(r) => vec![*r],
                Item::Batch(b) => compact(pool, hdfs, b, options, inner, observer).await,
            }
        })
        .buffer_unordered(in_flight));
    while let Some(done) = reports.next().await {
        reporting.report(&done).await;
    }
    let recorder = reporting.recorder.take();
    drop(reporting);
    if let Some(recorder) = recorder {
        let problems = recorder.finish().await;
        summary.history_problems.extend(problems);
    }
    summary.interrupted = options.compact.cancel.is_cancelled();
    summary.exit_code = summary.exit().code();
    summary.seconds = started.elapsed().as_secs_f64();
    summary
}

/// Each report as it comes: to the observer, the summary and the tables' history.
struct Reporting<'a, 'h> {
    observer: &'a dyn Observer,
    summary: &'a mut BatchSummary,
    recorder: Option<Recorder<'h>>,
    estimates: &'a BTreeMap<String, Estimate>,
    fingerprints: BTreeMap<String, Fingerprint>,
}

impl Reporting<'_, '_> {
    /// Reports that ended together (a batch): recorded and written to HDFS first, where a run
    /// killed later leaves them, then shown, so a partition's failure stays the last word on
    /// stderr after any warning the history's write gave.
    async fn report(&mut self, reports: &[CompactReport]) {
        if let Some(recorder) = self.recorder.as_mut() {
            for r in reports {
                let key = format!("{}/{}", r.outcome.table, r.outcome.partition);
                let estimated = self.estimates.get(&key).map(|e| e.seconds);
                recorder.record(r, estimated, self.fingerprints.remove(&key));
            }
            recorder.flush().await;
        }
        for r in reports {
            self.observer.finished(r);
            self.summary.add(r);
        }
    }
}

/// What the planning of a run yields: a final report, or a batch to compact.
enum Item {
    Done(Box<CompactReport>),
    Batch(Vec<Planned>),
}

/// The planned partitions cut into batches: at most `size` partitions with work, of one table,
/// in the order planned; final reports pass through as they come.
fn batches<S>(planned: S, size: usize) -> impl futures::Stream<Item = Item>
where
    S: futures::Stream<Item = Planning> + Unpin,
{
    futures::stream::unfold(
        (planned, Vec::new()),
        move |(mut planned, mut batch)| async move {
            loop {
                let Some(next) = planned.next().await else {
                    return (!batch.is_empty())
                        .then(|| (Item::Batch(batch), (planned, Vec::new())));
                };
                match next {
                    Planning::Done(r) => return Some((Item::Done(r), (planned, batch))),
                    Planning::Work(w) if batch.first().is_some_and(|b| b.table() != w.table()) => {
                        let full = std::mem::replace(&mut batch, vec![*w]);
                        return Some((Item::Batch(full), (planned, batch)));
                    }
                    Planning::Work(w) => {
                        batch.push(*w);
                        if batch.len() >= size {
                            return Some((Item::Batch(batch), (planned, Vec::new())));
                        }
                    }
                }
            }
        },
    )
}

/// The runs with each table's partitions together, tables in the order of their first run.
fn by_table(runs: Vec<Candidate>) -> Vec<Candidate> {
    let mut tables: Vec<(String, Vec<Candidate>)> = Vec::new();
    for c in runs {
        let name = c.table.qualified_name();
        match tables.iter_mut().find(|(t, _)| *t == name) {
            Some((_, runs)) => runs.push(c),
            None => tables.push((name, vec![c])),
        }
    }
    tables.into_iter().flat_map(|(_, runs)| runs).collect()
}

/// Why no partition may start now, if none may.
enum NotStarted<'a> {
    Interrupted,
    Late(&'a StartBy),
}

impl NotStarted<'_> {
    fn report(&self, table: &str, partition: &str) -> CompactReport {
        match self {
            NotStarted::Interrupted => CompactReport::not_run(
                table,
                partition,
                Status::Skipped,
                "not started: the run was interrupted".into(),
                None,
            ),
            NotStarted::Late(late) => {
                CompactReport::not_run(table, partition, Status::Failed, late.reason.clone(), None)
            }
        }
    }
}

fn not_started(options: &BatchOptions) -> Option<NotStarted<'_>> {
    if options.compact.cancel.is_cancelled() {
        return Some(NotStarted::Interrupted);
    }
    options
        .start_by
        .as_ref()
        .filter(|s| std::time::SystemTime::now() >= s.at)
        .map(NotStarted::Late)
}

/// One batch, `parallel` of its partitions staged at once, unless no partition may start any
/// more.
async fn compact(
    pool: &MetastorePool,
    hdfs: &Hdfs,
    batch: Vec<Planned>,
    options: &BatchOptions,
    parallel: usize,
    observer: &dyn Observer,
) -> Vec<CompactReport> {
    if let Some(not) = not_started(options) {
        return batch
            .iter()
            .map(|p| not.report(&p.table(), &p.partition()))
            .collect();
    }
    let metastore = pool.get().await;
    let progress = |key: &str| observer.started(key);
    compact_batch(
        &metastore,
        hdfs,
        batch,
        &options.compact,
        parallel,
        &progress,
    )
    .await
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::snapshot::FileSizes;
    use crate::table::{StorageInfo, TableInfo};
    use std::sync::Arc;

    fn survey(lengths: &[u64], newest: u64) -> Survey {
        Survey {
            candidate: Candidate {
                table: Arc::new(TableInfo {
                    db: "d".into(),
                    name: "t".into(),
                    table_type: "EXTERNAL_TABLE".into(),
                    owner: None,
                    partition_keys: vec!["dt".into()],
                    params: Default::default(),
                    storage: StorageInfo::none(),
                }),
                name: "dt=1".into(),
                partition: None,
                listed: false,
            },
            location: None,
            sizes: FileSizes::of(lengths),
            histogram: Default::default(),
            namenode_objects: 0,
            block_size: None,
            small_files: lengths.len(),
            small_bytes: lengths.iter().sum(),
            newest_modification: Some(newest),
            refusal: None,
            error: None,
        }
    }

    #[test]
    fn thresholds_skip_with_reasons() {
        let now = 10_000_000;
        let s = survey(&[100, 200, 300], now - 60_000);
        assert!(Thresholds::default().skip(&s, now).is_none());
        let min_files = Thresholds {
            min_files: Some(4),
            ..Default::default()
        };
        assert!(min_files.skip(&s, now).unwrap().contains("fewer than"));
        let avg = Thresholds {
            max_avg_size: Some(199),
            ..Default::default()
        };
        assert!(avg.skip(&s, now).unwrap().contains("average"));
        let avg_ok = Thresholds {
            max_avg_size: Some(200),
            ..Default::default()
        };
        assert!(avg_ok.skip(&s, now).is_none());
        let hot = Thresholds {
            min_age: Some(Duration::from_secs(3600)),
            ..Default::default()
        };
        assert!(hot.skip(&s, now).unwrap().contains("writer"));
        let cold = Thresholds {
            min_age: Some(Duration::from_secs(30)),
            ..Default::default()
        };
        assert!(cold.skip(&s, now).is_none());
    }

    #[test]
    fn summary_counts_and_worst_code() {
        let mut s = BatchSummary::default();
        let mut ok = CompactReport::not_run("d.t", "dt=1", Status::Compacted, String::new(), None);
        ok.files_before = 10;
        ok.files_after = 1;
        ok.bytes_after = 500;
        s.add(&ok);
        s.add(&CompactReport::not_run(
            "d.t",
            "dt=2",
            Status::Refused,
            "r".into(),
            None,
        ));
        s.add(&CompactReport::not_run(
            "d.t",
            "dt=3",
            Status::Failed,
            "gone".into(),
            None,
        ));
        assert_eq!(
            (s.counts.compacted, s.counts.refused, s.counts.failed),
            (1, 1, 1)
        );
        assert_eq!((s.counts.files_removed, s.counts.bytes_rewritten), (9, 500));
        assert_eq!((s.counts.files_before, s.counts.files_after), (10, 1));
        assert_eq!(s.tables.len(), 1);
        assert_eq!(
            (s.tables[0].table.as_str(), s.tables[0].counts.failed),
            ("d.t", 1)
        );
        assert_eq!(s.exit(), ExitCode::Failed);
        assert_eq!(
            s.attention,
            vec!["d.t/dt=2: refused: r", "d.t/dt=3: failed: gone"]
        );
        let mut interrupted = BatchSummary {
            interrupted: true,
            ..Default::default()
        };
        interrupted.add(&ok);
        assert_eq!(interrupted.exit(), ExitCode::Failed);
    }
}
