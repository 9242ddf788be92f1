//! `rollback`: swap a compacted partition back to the files it had before the run that
//! compacted it, with the parameters it had then.
//!
//! Promises: it swaps back only when the partition still points at that run's directory and
//! every input file the run's journal names is still in the previous location with the same
//! length and modification time, and nothing was written to the partition after the swap (see
//! `rows_after_swap`); otherwise it refuses and names what is missing, changed or added.
//! The swap back is the same single `alter_partition` (with read-back) as compact's swap. The
//! journal records it, so cleanup later removes that run's outputs instead of its inputs; the
//! run's files stay until then. A journal lost to a kill right after the swap is rebuilt from the
//! partition parameters first (`journal::rebuild`).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use anyhow::anyhow;
use serde::Serialize;
use tracing::Instrument;

use crate::eligibility::{Refusal, Rule};
use crate::hdfs::{Hdfs, Location};
use crate::journal::{self, CurrentRun, JournalOutput};
use crate::metastore::Metastore;
use crate::operations::outcome::{Outcome, Status, Stop};
use crate::partition_spec::PartitionSpec;
use crate::relocate::{set_location, RelocateError};
use crate::resolve::{self, ResolveError, TableName};
use crate::table::TableInfo;

/// What `--json` prints.
#[derive(Debug, Serialize)]
pub struct RollbackReport {
    #[serde(flatten)]
    pub outcome: Outcome,
    pub run_id: Option<String>,
    /// The run's directory, where the partition points now.
    pub from: Option<String>,
    /// The previous location it goes back to.
    pub to: Option<String>,
    /// Input files the journal names that are gone or changed (the reason to refuse).
    pub missing: Vec<String>,
    /// Files in the run's directory the journal does not name, or whose length changed: rows
    /// written after the swap (the reason to refuse with `rows_after_swap`).
    pub written_after_swap: Vec<String>,
    /// Partition parameters that differ from what the swap set (also `rows_after_swap`).
    pub changed_parameters: Vec<String>,
    /// The journal was lost (a kill after the swap) and rebuilt from the partition parameters.
    pub journal_rebuilt: bool,
}

/// Everything the swap back needs, checked; what `--dry-run` shows.
struct RollbackPlan {
    table: TableInfo,
    spec: PartitionSpec,
    run: CurrentRun,
}

pub async fn rollback(
    metastore: &Metastore,
    hdfs: &Hdfs,
    table: &TableName,
    spec: &str,
    dry_run: bool,
) -> RollbackReport {
    let span = tracing::info_span!("partition", table = %table, partition = spec);
    rollback_partition(metastore, hdfs, table, spec, dry_run)
        .instrument(span)
        .await
}

async fn rollback_partition(
    metastore: &Metastore,
    hdfs: &Hdfs,
    table: &TableName,
    spec: &str,
    dry_run: bool,
) -> RollbackReport {
    let mut report = RollbackReport {
        outcome: Outcome::new(&table.to_string(), spec),
        run_id: None,
        from: None,
        to: None,
        missing: vec![],
        written_after_swap: vec![],
        changed_parameters: vec![],
        journal_rebuilt: false,
    };
    let ended = match plan(metastore, hdfs, table, spec, &mut report).await {
        Ok(_) if dry_run => Ok(Status::DryRun),
        Ok(plan) => execute(metastore, hdfs, plan, &mut report)
            .await
            .map(|()| Status::RolledBack),
        Err(stop) => Err(stop),
    };
    report.outcome.end(ended);
    report
}

fn refuse(reason: String) -> Stop {
    Stop::Refused(Refusal::new(Rule::NotRollbackable, reason))
}

/// Resolves the partition and its run, and checks that the swap back is possible. No side
/// effects.
async fn plan(
    metastore: &Metastore,
    hdfs: &Hdfs,
    table: &TableName,
    spec: &str,
    report: &mut RollbackReport,
) -> Result<RollbackPlan, Stop> {
    let table = resolve::table(metastore, table).await?;
    let (spec, partition) = match resolve::partition(metastore, &table, spec).await {
        Ok(found) => found,
        Err(ResolveError::Refused(r)) => return Err(Stop::Refused(r)),
        Err(ResolveError::Other(e)) => return Err(Stop::Failed(e)),
    };
    report.outcome.partition = spec.name();
    let location = partition
        .storage
        .location
        .as_deref()
        .ok_or_else(|| refuse("the partition has no location".into()))?;
    report.from = Some(location.to_string());
    let location = Location::parse(location).map_err(|e| refuse(e.to_string()))?;
    let run = journal::current_run(
        hdfs,
        &table.qualified_name(),
        &spec.name(),
        &spec.values,
        &partition.params,
        &location,
    )
    .await?
    .ok_or_else(|| {
        refuse(format!(
            "the partition is not in a directory of a compaction by this tool ({location}); \
             nothing to roll back"
        ))
    })?;
    let j = &run.journal;
    report.run_id = Some(j.run_id.clone());
    report.to = Some(j.old_location.clone());
    report.journal_rebuilt = run.rebuilt;
    if Location::parse(&j.new_location).ok().as_ref() != Some(&location) {
        return Err(refuse(format!(
            "the partition points at {location}, not at run {}'s directory {}",
            j.run_id, j.new_location
        )));
    }
    rows_after_swap(hdfs, &location, &run, &partition.params, report).await?;
    for input in &j.inputs {
        let path = Location::parse(&input.path).map_err(|e| anyhow!("{e}"))?;
        match hdfs.status(&path).await.map_err(anyhow::Error::from)? {
            None => report.missing.push(format!("{} is gone", input.path)),
            Some(now)
                if now.length != input.length
                    || now.modification_time != input.modification_time =>
            {
                report.missing.push(format!("{} changed", input.path))
            }
            Some(_) => {}
        }
    }
    if !report.missing.is_empty() {
        return Err(refuse(format!(
            "{} of the {} files run {} replaced are gone or changed{}: {}",
            report.missing.len(),
            j.inputs.len(),
            j.run_id,
            if j.cleaned_at.is_some() {
                " (cleanup removed them)"
            } else {
                ""
            },
            report.missing.join(", ")
        )));
    }
    Ok(RollbackPlan { table, spec, run })
}

/// Set by the metastore on every alter, never by a writer: not a sign of rows added.
const SET_BY_EVERY_ALTER: &[&str] = &["transient_lastDdlTime"];

/// Refuses when anything was written to the partition after the swap: a file in the run's
/// directory that is not one of the journal's outputs (by name and length: journals record no
/// output modification times, so a same-length rewrite under an output's name goes unseen), or
/// a partition parameter that is not what the swap left (an engine's INSERT updates numRows).
/// Swapping back would hide those rows from every query.
async fn rows_after_swap(
    hdfs: &Hdfs,
    location: &Location,
    run: &CurrentRun,
    params_now: &BTreeMap<String, String>,
    report: &mut RollbackReport,
) -> Result<(), Stop> {
    let j = &run.journal;
    let outputs: BTreeMap<&str, &JournalOutput> = j
        .outputs
        .iter()
        .map(|o| (journal::file_name(&o.path), o))
        .collect();
    let listing = hdfs
        .list(location)
        .await
        .map_err(anyhow::Error::from)?
        .unwrap_or_default();
    for f in &listing.files {
        match outputs.get(f.name.as_str()) {
            Some(o)
                if o.length == f.length
                    && o.modification_time.is_none_or(|t| t == f.modification_time) => {}
            Some(_) => report
                .written_after_swap
                .push(format!("{}/{} (written over)", location, f.name)),
            None => report
                .written_after_swap
                .push(format!("{}/{}", location, f.name)),
        }
    }
    report.written_after_swap.extend(
        listing
            .subdirs
            .iter()
            .map(|d| format!("{location}/{d}/ (a directory)")),
    );
    // A rebuilt journal took the parameters from the partition as found: nothing to compare.
    if !run.rebuilt {
        let keys: BTreeSet<&String> = params_now.keys().chain(j.parameters_after.keys()).collect();
        report.changed_parameters = keys
            .into_iter()
            .filter(|k| !SET_BY_EVERY_ALTER.contains(&k.as_str()))
            .filter(|k| params_now.get(*k) != j.parameters_after.get(*k))
            .map(|k| {
                format!(
                    "{k}: {} at the swap, {} now",
                    j.parameters_after.get(k).map_or("unset", String::as_str),
                    params_now.get(k).map_or("unset", String::as_str)
                )
            })
            .collect();
    }
    if report.written_after_swap.is_empty() && report.changed_parameters.is_empty() {
        return Ok(());
    }
    let mut what = vec![];
    if !report.written_after_swap.is_empty() {
        what.push(format!(
            "files run {} did not write (compared by name, length and modification time): {}",
            j.run_id,
            report.written_after_swap.join(", ")
        ));
    }
    if !report.changed_parameters.is_empty() {
        what.push(format!(
            "parameters changed since the swap: {}",
            report.changed_parameters.join("; ")
        ));
    }
    Err(Stop::Refused(Refusal::new(
        Rule::RowsAfterSwap,
        format!(
            "rows were written to the partition after run {}'s swap; swapping back would hide \
             them from every query. Found {}. Compact the partition again instead, or move \
             those rows into {} by hand and retry",
            j.run_id,
            what.join("; and "),
            j.old_location
        ),
    )))
}

/// Writes a rebuilt journal, swaps back, and records the rollback in the journal.
async fn execute(
    metastore: &Metastore,
    hdfs: &Hdfs,
    mut plan: RollbackPlan,
    report: &mut RollbackReport,
) -> Result<(), Stop> {
    let run = &mut plan.run;
    if run.rebuilt {
        journal::write(hdfs, &run.path, Arc::new(run.journal.clone())).await?;
    }
    let j = &run.journal;
    let from = Location::parse(&j.new_location).map_err(|e| anyhow!("{e}"))?;
    let before = j.parameters_before.clone();
    set_location(
        metastore,
        &plan.table,
        &plan.spec,
        &from,
        &j.old_location,
        |_| before,
    )
    .await
    .map_err(|e| match e {
        RelocateError::Unconfirmed(why) => Stop::Failed(anyhow::anyhow!(
            "{why}; check with `inspect` where the partition points before retrying"
        )),
        other => other.into(),
    })?;
    let read = run.journal.clone();
    run.journal.rolled_back_at = Some(chrono::Utc::now().to_rfc3339());
    if let Err(e) = journal::replace_if_unchanged(hdfs, &run.path, &read, &run.journal).await {
        // The partition is rolled back; cleanup still sees that from the partition's location
        // and never deletes files it points at.
        report.outcome.warnings.push(format!(
            "rolled back, but recording it in {} failed: {e:#}",
            run.path
        ));
    }
    Ok(())
}
