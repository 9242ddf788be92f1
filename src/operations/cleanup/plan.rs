//! Planning one partition that the metastore has: rebuilt journals, dead runs, and per journal
//! what its run leaves to remove, read only (what `--dry-run` prints, and what `execute` plans
//! again under the lock).

use std::collections::{BTreeMap, BTreeSet};

use anyhow::anyhow;

use super::options::CleanupOptions;
use super::report::{PartitionCleanup, RunAction, RunCleanup};
use crate::hdfs::{Hdfs, Location, Probe};
use crate::journal::{self, file_name, Journal};
use crate::metastore::Metastore;
use crate::partition_spec::PartitionSpec;
use crate::run_dirs::{self, PARAM_RUN_ID};
use crate::table::{PartitionInfo, TableInfo};

/// The partition's current location, if it has one this tool can read.
pub(super) fn current_location(info: &PartitionInfo) -> Option<Location> {
    info.storage
        .location
        .as_deref()
        .and_then(|l| Location::parse(l).ok())
}

/// The partition as the metastore has it now: its parameters and location.
pub(super) async fn reread(
    metastore: &Metastore,
    table: &TableInfo,
    spec: &PartitionSpec,
) -> anyhow::Result<(BTreeMap<String, String>, Location)> {
    let partition = metastore
        .get_partition_by_values(&table.db, &table.name, &spec.values)
        .await?;
    let info = PartitionInfo::from(&partition);
    let current = current_location(&info).ok_or_else(|| {
        anyhow!(
            "{} partition {} has no HDFS location now; nothing removed",
            table.qualified_name(),
            spec.name()
        )
    })?;
    Ok((info.params, current))
}

/// Plans `p`, a partition the metastore has with `params`, from what HDFS holds now: journals
/// to rebuild, dead runs' directories, and per journal its run (see [`plan_run`]); then
/// whether `--rehome` applies. `probe` says whether directories may be told apart by a marker
/// file (only once the plan is to be done).
pub(super) async fn plan_partition(
    hdfs: &Hdfs,
    params: &BTreeMap<String, String>,
    options: &CleanupOptions,
    p: &mut PartitionCleanup,
    probe: Probe,
) -> anyhow::Result<()> {
    let now = chrono::Utc::now().timestamp_millis();
    let retention = options.older_than.as_millis() as i64;
    let dead_after = options.staging_older_than.as_millis() as i64;
    // A run killed after its swap and before its journal: rebuild the journal.
    if let Some(run) = journal::current_run(
        hdfs,
        &p.outcome.table,
        &p.outcome.partition,
        &p.spec.values,
        params,
        &p.current,
    )
    .await?
    // A run that swapped moments ago is writing its journal right now: leave it the time any
    // run may take.
    .filter(|r| {
        r.rebuilt
            && r.journal
                .finished_millis()
                .is_some_and(|t| now - t >= dead_after)
    }) {
        p.journals_rebuilt.push(run.journal.run_id.clone());
        p.rebuilt.push((run.path, run.journal));
    }
    let mut journals = p.rebuilt.clone();
    for home in run_dirs::homes(&p.table_info, &p.spec, &p.current) {
        let work = run_dirs::work_dir(&home);
        let Some(listing) = hdfs.list(&work).await? else {
            continue;
        };
        let journal_names: BTreeSet<&str> = listing
            .files
            .iter()
            .filter_map(|f| run_dirs::journal_run_id(&f.name))
            .collect();
        // Runs that died before their swap: staging, or published but never pointed at.
        for dir in &listing.subdirs {
            let run_dir = work.child(dir);
            let staging = run_dirs::is_staging(dir);
            if !staging && journal_names.contains(dir.as_str())
                || params.get(PARAM_RUN_ID) == Some(dir)
                || hdfs.within(&p.current, &run_dir, probe).await?
            {
                continue;
            }
            let Some(status) = hdfs.status(&run_dir).await? else {
                continue;
            };
            if now - (status.modification_time as i64) >= dead_after {
                p.dead_runs_removed.push(run_dir.to_string());
            }
        }
        for name in &journal_names {
            let path = run_dirs::journal_path(&home, name);
            if let Some(j) = journal::read(hdfs, &path).await? {
                journals.push((path, j));
            }
        }
    }
    // A home spelled two ways lists its journals twice.
    let mut seen = BTreeSet::new();
    journals.retain(|(_, j)| seen.insert(j.run_id.clone()));
    // The run whose directory the partition reads, by path; a run of the same old location
    // whose swap it overwrote (two unlocked runs that both re-read before either altered)
    // left a directory nothing needs.
    let reading = journals
        .iter()
        .find(|(_, j)| Location::parse(&j.new_location).is_ok_and(|n| n.path == p.current.path))
        .map(|(_, j)| (j.run_id.clone(), j.old_location.clone()));
    for (path, j) in journals {
        let cutoff = now - retention;
        let superseded = reading
            .as_ref()
            .is_some_and(|(id, old)| *id != j.run_id && *old == j.old_location);
        let wants = Wants {
            cutoff,
            rehome: options.rehome,
            superseded,
        };
        if let Some(run) = plan_run(hdfs, p, path, j, wants, probe).await? {
            if !run.missing_outputs.is_empty() {
                p.failed(anyhow!(
                    "run {}: the partition's directory {} lacks {} of the run's outputs ({}); \
                     its replaced files stay, the only copy of those rows: restore the outputs \
                     or roll back",
                    run.run_id,
                    p.current,
                    run.missing_outputs.len(),
                    run.missing_outputs.join(", ")
                ));
            }
            p.runs.push(run);
        }
    }
    // `--rehome` once the run the partition reads has had its inputs removed (now or before).
    let rehome_ready = p.runs.iter().any(|r| {
        r.partition_reads_it
            && matches!(r.action, RunAction::DeleteInputs | RunAction::Settled)
            && r.journal.rehomed_at.is_none()
    });
    if options.rehome && rehome_ready {
        p.rehomed_to = run_dirs::canonical_home(&p.table_info, &p.spec).map(|h| h.to_string());
    }
    Ok(())
}

/// What [`plan_run`] is asked besides the journal.
pub(super) struct Wants {
    /// Swaps (or rehomes) before this time (milliseconds since the epoch) are past the retention.
    cutoff: i64,
    /// `--rehome`: keep the run the partition reads in the plan.
    rehome: bool,
    /// Another run of the same old location overwrote this run's swap: its directory goes too.
    superseded: bool,
}

/// One journal's run; `None` when nothing about it is left to do or to report (with `rehome`,
/// the run the partition reads is always kept: its directory is what would be rehomed).
pub(super) async fn plan_run(
    hdfs: &Hdfs,
    p: &PartitionCleanup,
    journal_path: Location,
    j: Journal,
    wants: Wants,
    probe: Probe,
) -> anyhow::Result<Option<RunCleanup>> {
    let Wants {
        cutoff,
        rehome,
        superseded,
    } = wants;
    let old = Location::parse(&j.old_location)?;
    let new = Location::parse(&j.new_location)?;
    let on_old = hdfs.same_dir(&p.current, &old, probe).await?;
    let on_new = hdfs.same_dir(&p.current, &new, probe).await?;
    // The partition left the run's directory: swapped back, or rehomed after its inputs went.
    let rehomed = j.rehomed_at.is_some();
    let left_run_dir = j.rolled_back_at.is_some() || rehomed || (on_old && !on_new);
    // What this cleanup would remove is gone already.
    let done = if rehomed {
        j.run_dir_cleaned_at.is_some()
    } else {
        j.cleaned_at.is_some()
    };
    let since = if rehomed {
        j.rehomed_millis()
    } else {
        j.finished_millis()
    };
    let mut run = RunCleanup::new(journal_path, j, RunAction::Kept);
    run.partition_reads_it = on_new;
    if done {
        run.action = RunAction::Settled;
        if left_run_dir {
            run.unknown_files = unknown_files(hdfs, p, &new, &run.journal, probe).await?;
        } else if !on_old {
            run.late_files = late_files(hdfs, &old, &run.journal).await?;
            run.old_location = Some(old);
        }
        let unsettled = !run.unknown_files.is_empty() || !run.late_files.is_empty();
        return Ok((unsettled || (rehome && on_new)).then_some(run));
    }
    if since.is_none_or(|t| t > cutoff) {
        return Ok(Some(run));
    }
    if left_run_dir {
        run.action = RunAction::DeleteOutputs;
        if hdfs.within(&p.current, &new, probe).await? {
            run.left.push(format!("{new}: the partition reads it"));
            return Ok(Some(run));
        }
        outputs_in(hdfs, &new, &mut run).await?;
        return Ok(Some(run));
    }
    if on_old {
        // The partition points at the old files: they are live, not leftovers.
        return Ok(Some(run));
    }
    let listing = hdfs.list(&old).await?.unwrap_or_default();
    if on_new {
        // The inputs are the only other copy of the outputs' rows: they go only while every
        // output is where the partition reads.
        let live = hdfs.list(&p.current).await?.unwrap_or_default();
        run.missing_outputs = run
            .journal
            .outputs
            .iter()
            .filter(|o| {
                !live
                    .files
                    .iter()
                    .any(|f| f.name == file_name(&o.path) && f.length == o.length)
            })
            .map(|o| o.path.clone())
            .collect();
        if !run.missing_outputs.is_empty() {
            return Ok(Some(run));
        }
    }
    run.action = RunAction::DeleteInputs;
    for input in &run.journal.inputs {
        let name = file_name(&input.path);
        match listing.files.iter().find(|f| f.name == name) {
            Some(f)
                if f.length == input.length && f.modification_time == input.modification_time =>
            {
                run.removed.push(old.child(name).to_string())
            }
            Some(_) => run
                .left
                .push(format!("{} changed since the run; left", input.path)),
            None => run.left.push(format!("{} is gone already", input.path)),
        }
    }
    run.late_files = journal::late_names(&run.journal, &listing)
        .iter()
        .map(|n| old.child(n).to_string())
        .collect();
    run.old_location = Some(old);
    if superseded && !hdfs.within(&p.current, &new, probe).await? {
        outputs_in(hdfs, &new, &mut run).await?;
    }
    Ok(Some(run))
}

/// Plans the removal of the outputs `run`'s journal names from its directory `new`, then of the
/// directory if nothing else is in it; what else is there is reported, never removed.
pub(super) async fn outputs_in(
    hdfs: &Hdfs,
    new: &Location,
    run: &mut RunCleanup,
) -> anyhow::Result<()> {
    let named: BTreeSet<&str> = run
        .journal
        .outputs
        .iter()
        .map(|o| file_name(&o.path))
        .collect();
    if let Some(listing) = hdfs.list(new).await? {
        run.removed.extend(
            listing
                .files
                .iter()
                .filter(|f| named.contains(f.name.as_str()))
                .map(|f| new.child(&f.name).to_string()),
        );
        run.unknown_files = unknown_in(new, &listing, &named);
        run.run_dir = Some(new.clone());
    }
    Ok(())
}

/// The late files in a cleaned run's old location: every visible file its journal does not
/// name as an input.
pub(super) async fn late_files(
    hdfs: &Hdfs,
    old: &Location,
    j: &Journal,
) -> anyhow::Result<Vec<String>> {
    Ok(match hdfs.list(old).await? {
        Some(listing) => journal::late_names(j, &listing)
            .iter()
            .map(|n| old.child(n).to_string())
            .collect(),
        None => vec![],
    })
}

/// What is in a rolled-back run's directory that its journal does not name as an output.
pub(super) async fn unknown_files(
    hdfs: &Hdfs,
    p: &PartitionCleanup,
    run_dir: &Location,
    j: &Journal,
    probe: Probe,
) -> anyhow::Result<Vec<String>> {
    if hdfs.within(&p.current, run_dir, probe).await? {
        return Ok(vec![]);
    }
    let named: BTreeSet<&str> = j.outputs.iter().map(|o| file_name(&o.path)).collect();
    Ok(match hdfs.list(run_dir).await? {
        Some(listing) => unknown_in(run_dir, &listing, &named),
        None => vec![],
    })
}

pub(super) fn unknown_in(
    dir: &Location,
    listing: &crate::hdfs::Listing,
    named: &BTreeSet<&str>,
) -> Vec<String> {
    listing
        .files
        .iter()
        .map(|f| &f.name)
        .filter(|n| !named.contains(n.as_str()))
        .chain(&listing.subdirs)
        .map(|n| dir.child(n).to_string())
        .collect()
}
