//! `--rehome`: a partition brought back from its run's directory to its canonical one.

use std::collections::BTreeMap;

use anyhow::{anyhow, Context};

use super::report::{PartitionCleanup, RunCleanup};
use crate::hdfs::{Hdfs, Location};
use crate::journal::{self, file_name, JournalOutput};
use crate::metastore::Metastore;
use crate::operations::file_copy::{copy_file, hash_file};
use crate::operations::verify;
use crate::orc::ReadAhead;
use crate::relocate::{set_location, RelocateError};
use crate::run_dirs::{self, PARAM_PREVIOUS_LOCATION, PARAM_RUN_ID};
use crate::snapshot::{Reads, Snapshot};

/// `--rehome`: brings a partition whose run's inputs are gone back to its canonical directory,
/// where readers that go by path (distcp, globs, `spark.read.orc(dir)`, MSCK) look. The run's
/// outputs are copied in under a hidden directory, checked against the journal (lengths, rows,
/// every stripe's checksum) and against the bytes read, renamed in, and then one alter points
/// the partition there; metastore readers see the run's directory until that alter and the same
/// files after it. The run's directory goes with a later cleanup, after the retention.
pub(super) async fn rehome(
    metastore: &Metastore,
    hdfs: &Hdfs,
    p: &mut PartitionCleanup,
    home: &Location,
) -> anyhow::Result<()> {
    let what = format!(
        "{} partition {}: not rehomed",
        p.outcome.table, p.outcome.partition
    );
    let Some(i) = p.runs.iter().position(|r| r.partition_reads_it) else {
        return Ok(());
    };
    let run = &p.runs[i];
    if run.journal.cleaned_at.is_none() || run.journal.rehomed_at.is_some() {
        p.rehomed_to = None;
        return Ok(());
    }
    check_home_empty(hdfs, home, &what).await?;
    let staging = run_dirs::work_dir(home).child(&format!("{}.rehome", run.run_id));
    let copies = copy_in(hdfs, &p.current, run, &staging, &what).await?;
    swap_in(metastore, hdfs, p, home, &copies, &what).await?;
    hdfs.delete(&staging, false).await?;
    let run = &mut p.runs[i];
    run.journal.rehomed_at = Some(chrono::Utc::now().to_rfc3339());
    journal::replace_if_unchanged(hdfs, &run.journal_path, &run.journal_read, &run.journal).await?;
    run.journal_read = run.journal.clone();
    p.current = home.clone();
    p.location = home.to_string();
    Ok(())
}

/// The canonical directory must hold nothing visible: files there (late files of the old
/// location) would join the partition's rows.
async fn check_home_empty(hdfs: &Hdfs, home: &Location, what: &str) -> anyhow::Result<()> {
    if let Some(listing) = hdfs.list(home).await? {
        let visible: Vec<&str> = listing
            .files
            .iter()
            .map(|f| f.name.as_str())
            .chain(listing.subdirs.iter().map(String::as_str))
            .collect();
        if !visible.is_empty() {
            return Err(anyhow!(
                "{what}: {home} still holds {} (late files? settle them with \
                 --adopt-late-files or --discard-late-files first)",
                visible.join(", ")
            ));
        }
    }
    Ok(())
}

/// Copies the run's outputs from `current` into `staging` and checks every copy against the
/// journal and against the bytes read; returns the copies.
async fn copy_in(
    hdfs: &Hdfs,
    current: &Location,
    run: &RunCleanup,
    staging: &Location,
    what: &str,
) -> anyhow::Result<Snapshot> {
    let records: BTreeMap<&str, &JournalOutput> = run
        .journal
        .outputs
        .iter()
        .map(|o| (file_name(&o.path), o))
        .collect();
    let to_read = Reads { sources: true };
    let outputs = Snapshot::take_with(hdfs, current, to_read)
        .await
        .with_context(|| format!("{what}: reading {current}"))?;
    if let Some(stranger) = outputs
        .files
        .iter()
        .find(|f| !records.contains_key(f.name.as_str()))
    {
        return Err(anyhow!(
            "{what}: {} is not one of run {}'s outputs; check the partition with verify",
            stranger.location(),
            run.run_id
        ));
    }
    hdfs.mkdirs(staging, 0o755).await?;
    let read_ahead = ReadAhead::default();
    let mut sent = BTreeMap::new();
    for f in &outputs.files {
        let hash = copy_file(hdfs, f, &staging.child(&f.name), f.permission, &read_ahead)
            .await
            .map_err(|e| anyhow!("{what}: {e}"))?;
        sent.insert(f.name.clone(), hash);
    }
    let copies = Snapshot::take(hdfs, staging)
        .await
        .with_context(|| format!("{what}: reading {staging}"))?;
    for c in &copies.files {
        // A rare repair: one column read back at a time holds the least.
        let (_, mut wrong) =
            verify::check_output(hdfs, c, records[c.name.as_str()], true, 1).await?;
        let (_, hash) = hash_file(hdfs, &c.location(), c.length, &read_ahead)
            .await
            .map_err(|e| anyhow!("{what}: {e}"))?;
        if sent.get(&c.name) != Some(&hash) {
            wrong.push(format!("{} differs from the bytes read", c.name));
        }
        if !wrong.is_empty() {
            return Err(anyhow!(
                "{what}: the copy in {staging} is not the run's output: {}; the copies stay \
                 hidden there (cleanup removes them)",
                wrong.join("; ")
            ));
        }
    }
    if copies.files.len() != outputs.files.len() {
        return Err(anyhow!(
            "{what}: {staging} lacks copies; it stays hidden there"
        ));
    }
    Ok(copies)
}

/// Renames the checked copies into `home` and points the partition there with one alter; if
/// the alter surely failed, hides the copies again, so the partition is as it was.
async fn swap_in(
    metastore: &Metastore,
    hdfs: &Hdfs,
    p: &PartitionCleanup,
    home: &Location,
    copies: &Snapshot,
    what: &str,
) -> anyhow::Result<()> {
    let mut shown = vec![];
    let swapped = async {
        for c in &copies.files {
            let to = home.child(&c.name);
            hdfs.rename(&c.location(), &to).await?;
            shown.push((to, c.location()));
        }
        set_location(
            metastore,
            &p.table_info,
            &p.spec,
            &p.current,
            &home.to_string(),
            |before| {
                let mut after = before.clone();
                after.remove(PARAM_RUN_ID);
                after.remove(PARAM_PREVIOUS_LOCATION);
                after
            },
        )
        .await?;
        anyhow::Ok(())
    }
    .await;
    if let Err(e) = swapped {
        if matches!(e.downcast_ref(), Some(RelocateError::Unconfirmed(_))) {
            return Err(anyhow!(
                "{what} for sure: {e:#}; the copies stay in {home}: check with verify where the \
                 partition points"
            ));
        }
        // The partition still reads the run's directory: hide the copies again.
        for (shown, hidden) in shown {
            hdfs.rename(&shown, &hidden).await?;
        }
        return Err(anyhow!("{what}: {e:#}; the partition is as it was"));
    }
    Ok(())
}
