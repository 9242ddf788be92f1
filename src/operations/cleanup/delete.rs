//! Doing one partition's plan under its lock: rebuilt journals written, dead runs, replaced
//! inputs and rolled-back outputs removed (or trashed), late files adopted or discarded, the
//! journals marked, then `--rehome`.

use std::sync::Arc;

use anyhow::anyhow;

use super::adopt::adopt;
use super::options::CleanupOptions;
use super::plan::reread;
use super::rehome::rehome;
use super::report::{PartitionCleanup, RunAction, RunCleanup};
use crate::hdfs::{Hdfs, Location, Probe};
use crate::journal;
use crate::metastore::Metastore;
use crate::run_dirs;

/// Does `p`'s plan, made under the partition's lock: writes the rebuilt journals, removes dead
/// runs, then run by run (each after checking the partition has not moved) settles late files,
/// removes what the run left, marks its journal, and last rehomes the partition if asked.
pub(super) async fn execute_partition(
    metastore: &Metastore,
    hdfs: &Hdfs,
    p: &mut PartitionCleanup,
    options: &CleanupOptions,
) -> anyhow::Result<()> {
    for (path, j) in &p.rebuilt {
        journal::write(hdfs, path, Arc::new(j.clone())).await?;
    }
    for dir in &p.dead_runs_removed {
        remove(
            hdfs,
            &Location::parse(dir)?,
            options.trash,
            &mut p.trashed_to,
        )
        .await?;
    }
    for run in &mut p.runs {
        if run.action == RunAction::Kept {
            continue;
        }
        // Right before removing anything of this run: is the partition still where it was?
        let (_, now) = reread(metastore, &p.table_info, &p.spec).await?;
        if now != p.current {
            return Err(anyhow!(
                "{} partition {} moved to {now} while cleanup worked (it was at {}); nothing \
                 more removed from it: run cleanup again",
                p.outcome.table,
                p.outcome.partition,
                p.current
            ));
        }
        if !run.late_files.is_empty() {
            if options.adopt_late_files {
                adopt(
                    metastore,
                    hdfs,
                    p.current.clone(),
                    &p.table_info,
                    &p.spec,
                    run,
                )
                .await?;
            } else if options.discard_late_files {
                discard(hdfs, run, options.trash, &mut p.trashed_to).await?;
            }
        }
        for target in &run.removed {
            let target = Location::parse(target)?;
            let dir = Location {
                fs: target.fs.clone(),
                path: target
                    .path
                    .rsplit_once('/')
                    .map_or("/", |(d, _)| d)
                    .to_string(),
            };
            // The one rule above all: never a file of the partition's current directory.
            if hdfs.within(&p.current, &target, Probe::Allowed).await?
                || hdfs.same_dir(&dir, &p.current, Probe::Allowed).await?
            {
                return Err(anyhow!(
                    "refusing to remove {target}: the partition reads it"
                ));
            }
            remove(hdfs, &target, options.trash, &mut p.trashed_to).await?;
        }
        // An emptied run directory goes too (a non-recursive delete, which fails rather than
        // remove anything left in it): an old location that was one, or a rolled-back run's.
        let emptied = run
            .old_location
            .iter()
            .filter(|old| run_dirs::is_in_work_dir(old))
            .chain(&run.run_dir);
        for dir in emptied {
            remove_if_empty(hdfs, dir).await?;
        }
        let now = Some(chrono::Utc::now().to_rfc3339());
        match run.action {
            RunAction::Settled | RunAction::Kept => {}
            _ if run.journal.rehomed_at.is_some() => run.journal.run_dir_cleaned_at = now,
            _ => run.journal.cleaned_at = now,
        }
        if run.journal != run.journal_read {
            journal::replace_if_unchanged(hdfs, &run.journal_path, &run.journal_read, &run.journal)
                .await?;
            run.journal_read = run.journal.clone();
        }
    }
    if let Some(home) = &p.rehomed_to {
        let home = Location::parse(home)?;
        rehome(metastore, hdfs, p, &home).await?;
    }
    Ok(())
}

/// Removes a directory only if it holds nothing at all.
pub(super) async fn remove_if_empty(hdfs: &Hdfs, dir: &Location) -> anyhow::Result<()> {
    if hdfs
        .list(dir)
        .await?
        .is_some_and(|l| l.files.is_empty() && l.subdirs.is_empty() && l.hidden.is_empty())
    {
        hdfs.delete(dir, false).await?;
    }
    Ok(())
}

/// `--discard-late-files`: removes the run's late files, recording them as discarded.
pub(super) async fn discard(
    hdfs: &Hdfs,
    run: &mut RunCleanup,
    trash: bool,
    trashed_to: &mut Vec<String>,
) -> anyhow::Result<()> {
    for late in std::mem::take(&mut run.late_files) {
        remove(hdfs, &Location::parse(&late)?, trash, trashed_to).await?;
        run.discarded.push(late);
    }
    Ok(())
}

/// Deletes `target` (recursively), or moves it to the trash, recording where it went.
pub(super) async fn remove(
    hdfs: &Hdfs,
    target: &Location,
    trash: bool,
    trashed_to: &mut Vec<String>,
) -> anyhow::Result<()> {
    if trash {
        trashed_to.push(hdfs.trash(target).await?.to_string());
    } else {
        hdfs.delete(target, true).await?;
    }
    Ok(())
}
