//! `rollback`: swap a compacted partition back to the files it had before the run that
//! compacted it, with the parameters it had then.
//!
//! Promises: it swaps back only when the partition still points at that run's directory and
//! every input file the run's journal names is still in the previous location with the same
//! length and modification time; otherwise it refuses and names what is missing or changed.
//! The swap back is the same single `alter_partition` (with read-back) as compact's swap. The
//! journal records it, so cleanup later removes that run's outputs instead of its inputs; the
//! run's files stay until then. A journal lost to a kill right after the swap is rebuilt from the
//! partition parameters first (`journal::rebuild`).

use anyhow::anyhow;
use serde::Serialize;
use tracing::Instrument;

use crate::eligibility::{Refusal, Rule};
use crate::hdfs::{Hdfs, Location};
use crate::journal::{self, CurrentRun};
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
        journal_rebuilt: false,
    };
    let result = match plan(metastore, hdfs, table, spec, &mut report).await {
        Ok(_) if dry_run => {
            report.outcome.status = Status::DryRun;
            return report;
        }
        Ok(plan) => execute(metastore, hdfs, plan, &mut report).await,
        Err(stop) => Err(stop),
    };
    match result {
        Ok(()) => report.outcome.status = Status::RolledBack,
        Err(stop) => report.outcome.stop(stop),
    }
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

/// Writes a rebuilt journal, swaps back, and records the rollback in the journal.
async fn execute(
    metastore: &Metastore,
    hdfs: &Hdfs,
    mut plan: RollbackPlan,
    report: &mut RollbackReport,
) -> Result<(), Stop> {
    let run = &mut plan.run;
    if run.rebuilt {
        journal::write(hdfs, &run.path, &run.journal).await?;
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
    run.journal.rolled_back_at = Some(chrono::Utc::now().to_rfc3339());
    if let Err(e) = journal::replace(hdfs, &run.path, &run.journal).await {
        // The partition is rolled back; cleanup still sees that from the partition's location
        // and never deletes files it points at.
        report.outcome.warnings.push(format!(
            "rolled back, but recording it in {} failed: {e:#}",
            run.path
        ));
    }
    Ok(())
}
