//! A batch: partitions of one table compacted together (`--batch-size`), each by the protocol's
//! steps, with the metastore's part done once for the batch rather than once per partition: one
//! lock request, one request for EXCLUSIVE, one `alter_partitions` for the verified swaps (which
//! the metastore applies in one transaction), one read-back, one unlock.
//!
//! Top to bottom:
//! 1. Every partition was planned without a lock ([`plan_partition`]): one with nothing to do
//!    costs no lock and never reaches a batch.
//! 2. [`compact_batch`] locks the batch's partitions in one request. A partition someone else
//!    holds leaves the batch, not the run: the request is withdrawn at once, the partitions
//!    others hold are locked on their own, waiting as a lone partition would, and the rest
//!    together again ([`lock_batch`]).
//! 3. Under the lock each partition is listed again; one a writer changed since its plan is
//!    planned again.
//! 4. to 6. Each partition is staged, verified and published, `parallel` at a time.
//! 7. EXCLUSIVE for the batch, the swap gate, and each partition's re-check.
//! 8. One alter for the partitions that passed (a lone partition keeps the single
//!    `alter_partition`), read back per partition: each is swapped, or not and untouched, or of
//!    unknown outcome with both directories kept, as for a partition on its own.
//! 9. Each swapped partition's journal; then the lock goes.
//!
//! A partition that fails anywhere before the swap is stopped alone (its run directories
//! removed) and leaves the batch; the journal, rollback and cleanup stay per partition.

use std::time::{Duration, Instant};

use futures::StreamExt;
use tracing::Instrument;

use super::options::CompactOptions;
use super::plan::{self, lock_stop, PartitionPlan, Which};
use super::progress::Progress;
use super::report::CompactReport;
use super::run::{Prepared, Run};
use crate::hdfs::Hdfs;
use crate::lock::{self, LockError, LockOptions, PartitionLock, Target};
use crate::metastore::Metastore;
use crate::operations::outcome::Stop;
use crate::relocate::{set_locations, Relocation};
use crate::table::{PartitionInfo, TableInfo};

/// A partition whose plan, made without a lock, finds work.
pub struct Planned {
    report: CompactReport,
    plan: PartitionPlan,
    started: Instant,
}

impl Planned {
    /// `db.table`: a batch holds partitions of one table.
    pub fn table(&self) -> String {
        self.plan.table.qualified_name()
    }

    /// The partition's escaped name.
    pub fn partition(&self) -> String {
        self.plan.spec.name()
    }
}

/// What planning a partition without a lock concluded.
pub enum Planning {
    /// Its report is final: nothing to do, a dry run, a refusal, a failure.
    Done(Box<CompactReport>),
    /// It has work, for a batch ([`compact_batch`]).
    Work(Box<Planned>),
}

/// Steps 1 to 3 without a lock: resolve, refuse, snapshot, plan. `known` is the partition as
/// the caller already read it from the metastore (else `spec` is resolved here).
pub async fn plan_partition(
    metastore: &Metastore,
    hdfs: &Hdfs,
    table: &TableInfo,
    spec: &str,
    known: Option<&PartitionInfo>,
    options: &CompactOptions,
) -> Planning {
    let started = Instant::now();
    let mut report = CompactReport::new(&table.qualified_name(), spec);
    let which = match known {
        Some(p) => Which::Read(p),
        None => Which::Spec(spec),
    };
    let span = tracing::info_span!("partition", table = %table.qualified_name(), partition = spec);
    let planned = planned(metastore, hdfs, table, which, options, &mut report)
        .instrument(span)
        .await;
    report.work_seconds = started.elapsed().as_secs_f64();
    match planned {
        Ok(Some(plan)) => Planning::Work(Box::new(Planned {
            report,
            plan,
            started,
        })),
        Ok(None) => {
            report.seconds = report.work_seconds;
            Planning::Done(Box::new(report))
        }
        Err(stop) => {
            report.outcome.stop(stop);
            report.seconds = report.work_seconds;
            Planning::Done(Box::new(report))
        }
    }
}

/// The plan when it finds work to do now; `None` when the report is final.
async fn planned(
    metastore: &Metastore,
    hdfs: &Hdfs,
    table: &TableInfo,
    which: Which<'_>,
    options: &CompactOptions,
    report: &mut CompactReport,
) -> Result<Option<PartitionPlan>, Stop> {
    let plan = plan::plan(metastore, hdfs, table, which, options, report).await?;
    report.record_plan(&plan, options);
    if plan.outputs.is_empty() {
        report.record_nothing_to_do(&plan);
        return Ok(None);
    }
    if let Some(layout) = &plan.layout {
        let before = plan::stripe_lookups(hdfs, &plan, layout).await?;
        report.record_layout(layout, before);
    }
    if options.dry_run {
        report.record_dry_run(&plan, options);
        return Ok(None);
    }
    Ok(Some(plan))
}

/// Steps 2 to 9 for planned partitions of one table (see the module's notes); every partition
/// gets its report, in no particular order. `progress` makes each partition's progress display.
pub async fn compact_batch<'p>(
    metastore: &Metastore,
    hdfs: &Hdfs,
    batch: Vec<Planned>,
    options: &CompactOptions,
    parallel: usize,
    progress: &(dyn Fn(&str) -> Box<dyn Progress + 'p> + Sync + 'p),
) -> Vec<CompactReport> {
    let mut done = Vec::new();
    let (plans, mut members): (Vec<PartitionPlan>, Vec<Member>) = batch
        .into_iter()
        .map(|p| {
            let member = Member {
                report: p.report,
                started: p.started,
                stop: None,
                settled: false,
                began: false,
                journal: None,
            };
            (p.plan, member)
        })
        .unzip();
    let mut locks = lock_batch(metastore, &plans, options, &mut members).await;
    let plans = relisted(metastore, hdfs, plans, &mut members, options).await;
    let progresses: Vec<Box<dyn Progress + 'p>> = plans
        .iter()
        .map(|p| progress(&format!("{}/{}", p.table.qualified_name(), p.spec.name())))
        .collect();
    let mut runs: Vec<Run<'_>> = plans
        .iter()
        .zip(&progresses)
        .map(|(plan, progress)| Run::new(metastore, hdfs, plan, options, &**progress))
        .collect();

    // Steps 4 to 6, each partition on its own.
    let prepared: Vec<Option<Prepared<'_>>> = {
        let work = runs.iter_mut().zip(members.iter_mut()).zip(&plans).map(
            |((run, member), plan)| async move {
                if !member.active() {
                    return None;
                }
                member.began = true;
                let staging = Instant::now();
                let prepared = run.prepare(&mut member.report).instrument(span(plan)).await;
                member.report.work_seconds += staging.elapsed().as_secs_f64();
                prepared.map_err(|stop| member.stop = Some(stop)).ok()
            },
        );
        futures::stream::iter(work)
            .buffered(parallel.max(1))
            .collect()
            .await
    };

    // Steps 7 to 9 for those prepared: EXCLUSIVE, then the swap gate (a writer that queued
    // behind the staging lock gets in first, and we wait for it outside the gate).
    locks
        .upgrade(metastore, &plans, options, &mut members)
        .await;
    locks.check_lost(&mut members);
    {
        // One swap at a time per process (see `CompactOptions::swap_gate`).
        let _swap_turn = options.swap_gate.lock().await;
        swap(metastore, &mut runs, &prepared, &mut members, &plans).await;
    }
    for ((run, member), prepared) in runs.iter().zip(&mut members).zip(prepared) {
        match (member.stop.take(), prepared) {
            (Some(stop), _) if member.began => run.stopped(stop, &mut member.report).await,
            (Some(stop), _) => member.report.outcome.stop(stop),
            (None, Some(prepared)) => {
                if let Some(journal) = member.journal.take() {
                    run.finish(prepared, &journal, &mut member.report).await;
                }
            }
            (None, None) => {}
        }
    }
    locks.release(&mut members).await;
    for mut m in members {
        m.report.seconds = m.started.elapsed().as_secs_f64();
        done.push(m.report);
    }
    done
}

/// Where one partition of the batch is.
struct Member {
    report: CompactReport,
    started: Instant,
    /// Why it left the batch; set, the run stops at its next step.
    stop: Option<Stop>,
    /// Its report is final without a stop: its re-plan under the lock found nothing to do.
    settled: bool,
    /// Its run began writing (the staging directory may exist).
    began: bool,
    /// Where its journal was written, once it is swapped.
    journal: Option<crate::hdfs::Location>,
}

impl Member {
    fn active(&self) -> bool {
        self.stop.is_none() && !self.settled
    }

    fn landed(&mut self, result: Result<crate::hdfs::Location, Stop>) {
        match result {
            Ok(journal) => self.journal = Some(journal),
            Err(stop) => self.stop = Some(stop),
        }
    }
}

fn span(plan: &PartitionPlan) -> tracing::Span {
    tracing::info_span!("partition", table = %plan.table.qualified_name(), partition = %plan.spec.name())
}

/// Partitions locked (or listed again under the lock) at once when each goes on its own.
const AT_ONCE: usize = 16;

/// The batch's metastore locks: one for the batch, or one per partition when some partition
/// was busy; each with the members it covers.
struct Locks {
    held: Vec<(PartitionLock, Vec<usize>)>,
}

/// Step 2: the staging lock for every partition of the batch (see the module's notes); a
/// partition that cannot be locked gets its stop. The batch is asked for whole, without
/// waiting; when another client holds one of its partitions, the table's locks are read (one
/// call), the partitions others hold are locked on their own, waiting as a lone partition
/// does, and the rest asked for again as a batch. Anything less clear (a table lock, a
/// partition locked meanwhile) locks every partition on its own.
async fn lock_batch(
    metastore: &Metastore,
    plans: &[PartitionPlan],
    options: &CompactOptions,
    members: &mut [Member],
) -> Locks {
    let mut locks = Locks { held: Vec::new() };
    if options.lock.mode == lock::LockMode::Off {
        return locks;
    }
    let all: Vec<usize> = (0..plans.len()).collect();
    let mut alone = all.clone();
    if plans.len() > 1 {
        match lock_together(metastore, plans, &all, options, members).await {
            Ok(Some(held)) => {
                locks.held.push((held, all));
                return locks;
            }
            Ok(None) => return locks,
            Err(LockError::Busy { .. }) => {
                let table = &plans[0].table;
                let taken: std::collections::HashSet<String> =
                    match metastore.show_locks(&table.db, &table.name, "").await {
                        Ok(held) => held.into_iter().filter_map(|l| l.partname).collect(),
                        Err(_) => plans.iter().map(|p| p.spec.name()).collect(),
                    };
                let (busy, free): (Vec<usize>, Vec<usize>) = all
                    .into_iter()
                    .partition(|&i| taken.contains(&plans[i].spec.name()));
                tracing::debug!(busy = busy.len(), "partitions of the batch are locked");
                if !busy.is_empty() && free.len() > 1 {
                    match lock_together(metastore, plans, &free, options, members).await {
                        Ok(held) => {
                            locks.held.extend(held.map(|l| (l, free)));
                            alone = busy;
                        }
                        Err(LockError::Busy { .. }) => {}
                        Err(e) => {
                            for &i in &free {
                                members[i].stop = Some(lock_stop(&e));
                            }
                            alone = busy;
                        }
                    }
                }
            }
            Err(e) => {
                for m in members.iter_mut() {
                    m.stop = Some(lock_stop(&e));
                }
                return locks;
            }
        }
    }
    for (i, held, warnings) in lock_each(metastore, plans, alone, options, false).await {
        members[i].report.outcome.warnings.extend(warnings);
        match held {
            Ok(held) => locks.held.extend(held.map(|l| (l, vec![i]))),
            Err(e) => members[i].stop = Some(lock_stop(&e)),
        }
    }
    locks
}

/// The staging lock for the partitions `which` in one request, without waiting (one busy
/// partition would hold up the others); its warnings go to each of them.
async fn lock_together(
    metastore: &Metastore,
    plans: &[PartitionPlan],
    which: &[usize],
    options: &CompactOptions,
    members: &mut [Member],
) -> Result<Option<PartitionLock>, LockError> {
    let names: Vec<String> = which.iter().map(|&i| plans[i].spec.name()).collect();
    let targets: Vec<Target<'_>> = which
        .iter()
        .zip(&names)
        .map(|(&i, name)| Target {
            db: &plans[i].table.db,
            table: &plans[i].table.name,
            partition: name,
        })
        .collect();
    let at_once = LockOptions {
        wait: Duration::ZERO,
        ..options.lock.clone()
    };
    let mut warnings = Vec::new();
    let cancel = &options.cancel;
    let held =
        lock::acquire_staging_batch(metastore, &targets, &at_once, cancel, &mut warnings).await?;
    for &i in which {
        members[i]
            .report
            .outcome
            .warnings
            .extend(warnings.iter().cloned());
    }
    Ok(held)
}

/// What locking one partition on its own gave: its index, the lock, the warnings.
type LockedAlone = (usize, Result<Option<PartitionLock>, LockError>, Vec<String>);

/// Locks each of the partitions `which` (indices into `plans`) on its own, [`AT_ONCE`] at a
/// time, waiting as a lone partition does: the staging lock, or `exclusive`.
async fn lock_each(
    metastore: &Metastore,
    plans: &[PartitionPlan],
    which: impl IntoIterator<Item = usize>,
    options: &CompactOptions,
    exclusive: bool,
) -> Vec<LockedAlone> {
    let each = which.into_iter().map(|i| async move {
        let name = plans[i].spec.name();
        let target = Target {
            db: &plans[i].table.db,
            table: &plans[i].table.name,
            partition: &name,
        };
        let (lock, cancel) = (&options.lock, &options.cancel);
        let mut warnings = Vec::new();
        let held = if exclusive {
            lock::acquire(metastore, &target, lock, cancel, &mut warnings).await
        } else {
            lock::acquire_staging(metastore, &target, lock, cancel, &mut warnings).await
        };
        (i, held, warnings)
    });
    futures::stream::iter(each)
        .buffer_unordered(AT_ONCE)
        .collect()
        .await
}

impl Locks {
    /// EXCLUSIVE for the re-check and the swap, for each lock that covers a partition still
    /// in the batch. A batch's lock is upgraded without waiting (it was asked for so): a writer
    /// that queued behind the staging lock of one partition gets in as the lock changes hands,
    /// and would hold up the whole batch. Then each of its partitions asks for EXCLUSIVE on its
    /// own, waiting as a lone partition does: the one the writer took ends busy (its re-check
    /// would say so anyway), the others go on.
    async fn upgrade(
        &mut self,
        metastore: &Metastore,
        plans: &[PartitionPlan],
        options: &CompactOptions,
        members: &mut [Member],
    ) {
        let mut alone = Vec::new();
        let mut kept = Vec::new();
        for (mut lock, covers) in std::mem::take(&mut self.held) {
            if !covers.iter().any(|&i| members[i].active()) {
                kept.push((lock, covers));
                continue;
            }
            match lock.upgrade(&options.cancel).await {
                Ok(()) => kept.push((lock, covers)),
                Err(LockError::Busy { .. }) if covers.len() > 1 => {
                    alone.extend(covers.into_iter().filter(|&i| members[i].active()))
                }
                Err(e) => {
                    for &i in &covers {
                        if members[i].active() {
                            members[i].stop = Some(lock_stop(&e));
                        }
                    }
                    kept.push((lock, covers));
                }
            }
        }
        self.held = kept;
        for (i, held, _) in lock_each(metastore, plans, alone, options, true).await {
            match held {
                Ok(held) => self.held.extend(held.map(|l| (l, vec![i]))),
                Err(e) => members[i].stop = Some(lock_stop(&e)),
            }
        }
    }

    /// A lock the metastore timed out no longer keeps writers away: its partitions do not swap.
    fn check_lost(&self, members: &mut [Member]) {
        for (lock, covers) in &self.held {
            let Some(why) = lock.lost() else { continue };
            for &i in covers {
                if members[i].active() {
                    members[i].stop = Some(Stop::Busy(format!(
                        "the metastore lock was lost during the run ({why}); retry later"
                    )));
                }
            }
        }
    }

    /// Every path ends here, so the locks are released whatever happened.
    async fn release(self, members: &mut [Member]) {
        for (lock, covers) in self.held {
            if let Err(e) = lock.release().await {
                for i in covers {
                    members[i].report.outcome.warnings.push(format!(
                        "could not release the metastore lock ({e}); it expires when the \
                         metastore times it out (hive.txn.timeout)"
                    ));
                }
            }
        }
    }
}

/// Step 3 under the lock: each partition listed again; one a writer changed since its plan is
/// planned again (and may then have nothing left to do).
async fn relisted(
    metastore: &Metastore,
    hdfs: &Hdfs,
    plans: Vec<PartitionPlan>,
    members: &mut [Member],
    options: &CompactOptions,
) -> Vec<PartitionPlan> {
    let work = plans.into_iter().zip(members.iter_mut()).map(|(plan, member)| async move {
        if member.stop.is_some() {
            return plan;
        }
        let unchanged = match hdfs.list(&plan.location).await {
            Ok(Some(now)) => plan.snapshot.changes(&now).is_empty(),
            Ok(None) => false,
            Err(e) => {
                member.stop = Some(Stop::Failed(anyhow::anyhow!(
                    "listing {} again under the metastore lock: {e}",
                    plan.location
                )));
                return plan;
            }
        };
        if unchanged {
            return plan;
        }
        tracing::debug!(partition = %plan.spec.name(), "changed since its plan; planning again");
        let spec = plan.spec.name();
        let mut report = CompactReport::new(&plan.table.qualified_name(), &spec);
        let again = planned(metastore, hdfs, &plan.table, Which::Spec(&spec), options, &mut report)
            .instrument(span(&plan))
            .await;
        member.report = report;
        match again {
            Ok(Some(new)) => new,
            Ok(None) => {
                member.settled = true;
                plan
            }
            Err(stop) => {
                member.stop = Some(stop);
                plan
            }
        }
    });
    futures::stream::iter(work)
        .buffered(AT_ONCE)
        .collect()
        .await
}

/// Steps 7 to 9 for the partitions still in the batch, under EXCLUSIVE and the swap gate.
async fn swap(
    metastore: &Metastore,
    runs: &mut [Run<'_>],
    prepared: &[Option<Prepared<'_>>],
    members: &mut [Member],
    plans: &[PartitionPlan],
) {
    let ready: Vec<usize> = (0..runs.len())
        .filter(|&i| members[i].active() && prepared[i].is_some())
        .collect();
    let prepared_of = |i: usize| prepared[i].as_ref().expect("filtered above");
    if let [i] = ready[..] {
        // A lone partition swaps as it always has: one alter_partition.
        let p = prepared_of(i);
        let journal = runs[i]
            .swap_and_journal(&p.staged, p.files, p.rows, &mut members[i].report)
            .instrument(span(&plans[i]))
            .await;
        members[i].landed(journal);
        return;
    }
    let mut passed = Vec::new();
    for i in ready {
        match runs[i].ready_to_swap().instrument(span(&plans[i])).await {
            Ok(()) => passed.push(i),
            Err(stop) => members[i].stop = Some(stop),
        }
    }
    let Some(&first) = passed.first() else { return };
    let moves = passed
        .iter()
        .map(|&i| {
            let p = prepared_of(i);
            Relocation {
                spec: &plans[i].spec,
                from: &plans[i].location,
                to: runs[i].published().clone(),
                params: Box::new(runs[i].parameters(&p.staged, p.files, p.rows)),
            }
        })
        .collect();
    let results = set_locations(metastore, &plans[first].table, moves).await;
    for (i, result) in passed.into_iter().zip(results) {
        let p = prepared_of(i);
        let journal = runs[i]
            .landed(result, &p.staged, p.files, p.rows, &mut members[i].report)
            .instrument(span(&plans[i]))
            .await;
        members[i].landed(journal);
    }
}
