//! The journal of a compaction run: what one swap replaced, kept next to the runs as
//! `<home>/.hive-orc-compactor/<run-id>.json` (step 9 of the protocol). `rollback`, `cleanup`
//! and `verify` work from it; it is the only record of exactly which files a swap replaced.
//!
//! A run killed between its swap and step 9 leaves no journal, but the partition parameters
//! name the run and its previous location: [`rebuild`] recovers the journal from them (see its
//! rule for which files count as inputs).

use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufWriter, Write};
use std::sync::Arc;

use anyhow::{anyhow, Context};
use bytes::Bytes;
use serde::{Deserialize, Serialize};

use crate::hdfs::{Files, Hdfs, Listing, Location, Probe};
use crate::orc::{ColumnDigest, MergedOutput, ReencodedOutput};
use crate::partition_spec::PartitionSpec;
use crate::run_dirs::{self, PARAM_PREVIOUS_LOCATION, PARAM_RUN_ID};
use crate::snapshot::{DataFile, Snapshot};
use crate::table::TableInfo;

/// What a run did, so that rollback and cleanup know exactly which files a compaction replaced.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Journal {
    pub run_id: String,
    pub table: String,
    pub partition: String,
    pub partition_values: Vec<String>,
    pub old_location: String,
    pub new_location: String,
    pub inputs: Vec<JournalInput>,
    pub outputs: Vec<JournalOutput>,
    pub dropped_empty: Vec<String>,
    pub parameters_before: BTreeMap<String, String>,
    pub parameters_after: BTreeMap<String, String>,
    pub finished_at: String,
    /// Set when the run died after its swap and `cleanup` or `verify` rebuilt this journal from
    /// the partition parameters: the rule that chose the inputs. Outputs then carry no checksums.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rebuilt: Option<String>,
    /// When `rollback` swapped the partition back: cleanup then deletes the outputs, not the inputs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rolled_back_at: Option<String>,
    /// When `cleanup` removed what this run left behind: a second cleanup skips it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cleaned_at: Option<String>,
    /// When `cleanup --rehome` copied the outputs to the partition's canonical directory and
    /// swapped the partition there: the run directory then goes after the retention.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rehomed_at: Option<String>,
    /// When cleanup removed the outputs from a rehomed run's directory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_dir_cleaned_at: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JournalInput {
    pub path: String,
    pub length: u64,
    pub modification_time: u64,
    pub rows: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JournalOutput {
    pub path: String,
    pub length: u64,
    pub rows: u64,
    /// Names of the input files (in the old location) this output was made from.
    pub inputs: Vec<String>,
    /// XXH3-64 of each copied stripe (for a carried file: of the whole file); empty for a
    /// re-encoded output, whose bytes are new.
    pub stripe_checksums: Vec<u64>,
    /// For a re-encoded output: the digest of each top-level column's values, in row order,
    /// as decoded from its inputs and proven equal in the output before the swap.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub column_digests: Vec<ColumnDigest>,
    /// For a re-encoded output with plain timestamps: the writer time zone of its rows, as
    /// runs of (zone, rows), proven equal to its inputs' before the swap.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub zones: Vec<(Option<String>, u64)>,
    /// Its modification time as HDFS listed it right after the swap (absent in journals of
    /// older versions): a file of this name with another time was written over since.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub modification_time: Option<u64>,
}

impl JournalInput {
    /// The record of an input file as the snapshot saw it.
    pub fn of(file: &DataFile) -> Self {
        JournalInput {
            path: file.location().to_string(),
            length: file.length,
            modification_time: file.modification_time,
            rows: file.rows(),
        }
    }
}

impl JournalOutput {
    /// A merged output of copied stripes, with each stripe's checksum.
    pub fn copied(
        path: String,
        merged: &MergedOutput,
        rows: u64,
        inputs: Vec<String>,
        modification_time: Option<u64>,
    ) -> Self {
        JournalOutput {
            stripe_checksums: merged.stripe_checksums.iter().map(|c| c.xxh3).collect(),
            ..JournalOutput::bare(path, merged.length, rows, inputs, modification_time)
        }
    }

    /// A re-encoded output, with the digests of its columns and time zones.
    pub fn reencoded(
        path: String,
        reencoded: &ReencodedOutput,
        rows: u64,
        inputs: Vec<String>,
        modification_time: Option<u64>,
    ) -> Self {
        JournalOutput {
            column_digests: reencoded.digests.columns.clone(),
            zones: reencoded.digests.zones.clone(),
            ..JournalOutput::bare(path, reencoded.length, rows, inputs, modification_time)
        }
    }

    /// A file carried over unchanged as `path`, with the checksum of its bytes.
    pub fn carried(
        path: String,
        source: &DataFile,
        checksum: u64,
        modification_time: Option<u64>,
    ) -> Self {
        JournalOutput {
            stripe_checksums: vec![checksum],
            ..JournalOutput::bare(
                path,
                source.length,
                source.rows(),
                vec![source.name.clone()],
                modification_time,
            )
        }
    }

    /// A late file adopted into the partition (`cleanup --adopt-late-files`): listed among its
    /// files, without checksums, as the run did not write it.
    pub fn adopted(file: &DataFile) -> Self {
        let path = file.location().to_string();
        JournalOutput::bare(
            path,
            file.length,
            file.rows(),
            vec![],
            Some(file.modification_time),
        )
    }

    fn bare(
        path: String,
        length: u64,
        rows: u64,
        inputs: Vec<String>,
        modification_time: Option<u64>,
    ) -> Self {
        JournalOutput {
            path,
            length,
            rows,
            inputs,
            stripe_checksums: vec![],
            column_digests: vec![],
            zones: vec![],
            modification_time,
        }
    }
}

impl Journal {
    /// When the swap happened, as far as the journal knows (milliseconds since the epoch).
    pub fn finished_millis(&self) -> Option<i64> {
        millis(&self.finished_at)
    }

    /// When the partition left the run's directory for its canonical one (`cleanup --rehome`).
    pub fn rehomed_millis(&self) -> Option<i64> {
        self.rehomed_at.as_deref().and_then(millis)
    }
}

fn millis(rfc3339: &str) -> Option<i64> {
    chrono::DateTime::parse_from_rfc3339(rfc3339)
        .ok()
        .map(|t| t.timestamp_millis())
}

/// Bytes of JSON sent to HDFS at a time.
const CHUNK: usize = 1 << 20;

/// Writes a new journal; fails if one exists.
///
/// The JSON goes to HDFS a chunk at a time as it is serialised (on a blocking thread: serde's
/// writers are synchronous), so it is never held whole: a run over 100,000 inputs has a
/// journal of about 40 MiB, which held in one buffer was the peak of that run's memory.
pub async fn write(
    hdfs: &impl Files,
    path: &Location,
    journal: Arc<Journal>,
) -> anyhow::Result<()> {
    let (tx, mut rx) = tokio::sync::mpsc::channel::<std::io::Result<Bytes>>(2);
    let serialise = tokio::task::spawn_blocking(move || {
        let mut out = BufWriter::with_capacity(CHUNK, Chunks(tx.clone()));
        let done = serde_json::to_writer_pretty(&mut out, &*journal)
            .map_err(std::io::Error::from)
            .and_then(|()| out.flush());
        if let Err(e) = done {
            // The writer stops at this: a journal cut short is never closed as a whole one.
            let _ = tx.blocking_send(Err(e));
        }
    });
    let chunks = futures::stream::poll_fn(move |cx| rx.poll_recv(cx));
    let written = hdfs.write_new(path, chunks, 0o644).await;
    serialise
        .await
        .map_err(|e| anyhow!("serialising the journal {path}: {e}"))?;
    written
}

/// The sending end of [`write`]'s chunks: each buffer the `BufWriter` hands over, in order.
struct Chunks(tokio::sync::mpsc::Sender<std::io::Result<Bytes>>);

impl Write for Chunks {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0
            .blocking_send(Ok(Bytes::copy_from_slice(buf)))
            .map_err(|_| std::io::Error::new(std::io::ErrorKind::BrokenPipe, "writer stopped"))?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Replaces a journal atomically: the new text goes to a hidden sibling first, then one
/// overwriting rename, so a kill leaves the old journal or the new one, never half of one.
async fn replace(hdfs: &Hdfs, path: &Location, journal: &Journal) -> anyhow::Result<()> {
    let name = path.path.rsplit('/').next().unwrap_or("journal");
    let tmp = Location {
        fs: path.fs.clone(),
        path: format!(
            "{}/.{name}.{}",
            path.path.rsplit_once('/').map_or("", |(d, _)| d),
            uuid::Uuid::new_v4().simple()
        ),
    };
    write(hdfs, &tmp, Arc::new(journal.clone())).await?;
    hdfs.replace(&tmp, path).await?;
    Ok(())
}

/// Replaces the journal at `path` with `journal` only while it still reads as `expected` (the
/// copy the caller decided from), so that no `rolled_back_at`, cleaning or adoption another
/// command recorded meanwhile is overwritten. HDFS has no compare-and-swap: the re-read and the
/// rename are two calls, so commands that change journals also hold the partition's lock,
/// which closes the gap between them for every command but a `--no-lock` one.
pub async fn replace_if_unchanged(
    hdfs: &Hdfs,
    path: &Location,
    expected: &Journal,
    journal: &Journal,
) -> anyhow::Result<()> {
    match read(hdfs, path).await? {
        Some(now) if now == *expected => replace(hdfs, path, journal).await,
        Some(_) => Err(anyhow!(
            "{path} changed while this command worked (another rollback or cleanup?); \
             nothing recorded in it: run the command again"
        )),
        None => Err(anyhow!(
            "{path} disappeared while this command worked; nothing recorded: check who removed \
             it, then run the command again"
        )),
    }
}

/// Reads a journal; `Ok(None)` when there is none at `path`.
pub async fn read(hdfs: &Hdfs, path: &Location) -> anyhow::Result<Option<Journal>> {
    let Some(status) = hdfs.status(path).await? else {
        return Ok(None);
    };
    let reader = hdfs.open(path).await?;
    let bytes = reader
        .read_range(0, status.length as usize)
        .await
        .map_err(|e| anyhow!("reading {path}: {e}"))?;
    let journal = serde_json::from_slice(&bytes)
        .with_context(|| format!("{path} is not a journal of this tool"))?;
    Ok(Some(journal))
}

/// The journals under `<home>/.hive-orc-compactor/`, oldest run first (run ids sort by time).
pub async fn list(hdfs: &Hdfs, home: &Location) -> anyhow::Result<Vec<Location>> {
    let work = run_dirs::work_dir(home);
    let Some(listing) = hdfs.list(&work).await? else {
        return Ok(vec![]);
    };
    Ok(listing
        .files
        .iter()
        .filter(|f| run_dirs::journal_run_id(&f.name).is_some())
        .map(|f| work.child(&f.name))
        .collect())
}

/// Every journal of a partition's runs, in each of its homes ([`run_dirs::homes`]), once each
/// (a home spelled two ways lists the same journals twice), oldest run first.
pub async fn of_partition(
    hdfs: &Hdfs,
    table: &TableInfo,
    spec: &PartitionSpec,
    current: &Location,
) -> anyhow::Result<Vec<(Location, Journal)>> {
    let mut seen = BTreeSet::new();
    let mut out = vec![];
    for home in run_dirs::homes(table, spec, current) {
        for path in list(hdfs, &home).await? {
            if let Some(j) = read(hdfs, &path).await? {
                if seen.insert(j.run_id.clone()) {
                    out.push((path, j));
                }
            }
        }
    }
    out.sort_by(|a, b| a.1.run_id.cmp(&b.1.run_id));
    Ok(out)
}

/// The names of the visible files in a run's old location (`listing`) that its journal does not
/// name as inputs: files written there after the swap, which no query reads.
pub fn late_names<'a>(journal: &Journal, listing: &'a Listing) -> Vec<&'a str> {
    let inputs: BTreeSet<&str> = journal.inputs.iter().map(|i| file_name(&i.path)).collect();
    listing
        .files
        .iter()
        .map(|f| f.name.as_str())
        .filter(|name| !inputs.contains(name))
        .collect()
}

/// The last component of a path or URL.
pub fn file_name(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

/// Every late file ([`late_names`]) of a partition's runs, as `inspect` and `verify` report
/// them; read-only, so an old location spelled otherwise than the current one counts as the
/// current one (see [`Hdfs::within`]) and its files are not called late.
pub async fn late_files(
    hdfs: &Hdfs,
    table: &TableInfo,
    spec: &PartitionSpec,
    current: &Location,
) -> anyhow::Result<Vec<String>> {
    let mut late = BTreeSet::new();
    for (_, j) in of_partition(hdfs, table, spec, current).await? {
        let old = Location::parse(&j.old_location)?;
        if j.rolled_back_at.is_some() || hdfs.same_dir(current, &old, Probe::ReadOnly).await? {
            continue;
        }
        if let Some(listing) = hdfs.list(&old).await? {
            late.extend(
                late_names(&j, &listing)
                    .iter()
                    .map(|n| old.child(n).to_string()),
            );
        }
    }
    Ok(late.into_iter().collect())
}

/// The run a partition points at now, with its journal.
#[derive(Debug)]
pub struct CurrentRun {
    pub home: Location,
    /// Where the journal is (or, when rebuilt, belongs).
    pub path: Location,
    pub journal: Journal,
    /// No journal was found: this one was rebuilt and is not written yet.
    pub rebuilt: bool,
}

/// The journal of the run the partition points at (`location`, named by the parameters), read
/// or rebuilt; `None` when the partition is not in a run directory of this tool.
pub async fn current_run(
    hdfs: &Hdfs,
    table: &str,
    partition: &str,
    partition_values: &[String],
    parameters: &BTreeMap<String, String>,
    location: &Location,
) -> anyhow::Result<Option<CurrentRun>> {
    let Some(run_id) = parameters.get(PARAM_RUN_ID) else {
        return Ok(None);
    };
    let Some(home) = run_dirs::home_of_run(location, run_id) else {
        return Ok(None);
    };
    let path = run_dirs::journal_path(&home, run_id);
    let (journal, rebuilt) = match read(hdfs, &path).await? {
        Some(j) => (j, false),
        None => (
            rebuild(
                hdfs,
                table,
                partition,
                partition_values,
                parameters,
                location,
            )
            .await?,
            true,
        ),
    };
    Ok(Some(CurrentRun {
        home,
        path,
        journal,
        rebuilt,
    }))
}

/// The rule [`rebuild`] applies, recorded in the rebuilt journal.
pub const REBUILD_RULE: &str = "inputs: the files in the previous location last modified no \
     later than the newest file of the run's new location (the run's own re-checks before and \
     right after its swap prove that no file appeared or changed there from its snapshot until \
     its swap; files written later, or copied in with preserved older times, cannot be told \
     apart from inputs by this rule)";

/// Rebuilds the journal of a run that died after its swap and before writing it, from what the
/// metastore and HDFS still say: `parameters` are the partition's current ones (naming the run
/// and its previous location) and `location` its current location (the run's directory).
///
/// Inputs are chosen by [`REBUILD_RULE`]. The parameters before the swap are the current ones
/// with the run's own keys removed and the basic statistics of the inputs: what the swap
/// replaced. Outputs carry no checksums (the run's are lost); `verify` says so.
pub async fn rebuild(
    hdfs: &Hdfs,
    table: &str,
    partition: &str,
    partition_values: &[String],
    parameters: &BTreeMap<String, String>,
    location: &Location,
) -> anyhow::Result<Journal> {
    let run_id = parameters
        .get(PARAM_RUN_ID)
        .ok_or_else(|| anyhow!("the partition parameters name no run ({PARAM_RUN_ID})"))?;
    let previous = parameters.get(PARAM_PREVIOUS_LOCATION).ok_or_else(|| {
        anyhow!("the partition parameters name no previous location ({PARAM_PREVIOUS_LOCATION})")
    })?;
    let outputs = Snapshot::take(hdfs, location)
        .await
        .with_context(|| format!("reading the run directory {location}"))?;
    let swapped_after = outputs
        .files
        .iter()
        .map(|f| f.modification_time)
        .max()
        .ok_or_else(|| anyhow!("the run directory {location} holds no files"))?;
    let old = Location::parse(previous)?;
    let inputs = Snapshot::take(hdfs, &old)
        .await
        .with_context(|| format!("reading the previous location {old}"))?;
    let inputs: Vec<_> = inputs
        .files
        .into_iter()
        .filter(|f| f.modification_time <= swapped_after)
        .collect();
    let mut before = parameters.clone();
    before.remove(PARAM_RUN_ID);
    before.remove(PARAM_PREVIOUS_LOCATION);
    before.insert("numFiles".into(), inputs.len().to_string());
    before.insert(
        "totalSize".into(),
        inputs.iter().map(|f| f.length).sum::<u64>().to_string(),
    );
    before.insert(
        "numRows".into(),
        inputs.iter().map(|f| f.rows()).sum::<u64>().to_string(),
    );
    // The swap may have rewritten the erasure-coded count; the old one is unknown.
    if before.get("numFilesErasureCoded").is_some_and(|n| n != "0") {
        before.remove("numFilesErasureCoded");
    }
    let finished_at = chrono::DateTime::from_timestamp_millis(swapped_after as i64)
        .unwrap_or_else(chrono::Utc::now)
        .to_rfc3339();
    Ok(Journal {
        run_id: run_id.clone(),
        table: table.to_string(),
        partition: partition.to_string(),
        partition_values: partition_values.to_vec(),
        old_location: old.to_string(),
        new_location: location.to_string(),
        inputs: inputs.iter().map(JournalInput::of).collect(),
        outputs: outputs
            .files
            .iter()
            .map(|f| JournalOutput {
                path: f.location().to_string(),
                length: f.length,
                rows: f.rows(),
                inputs: vec![],
                stripe_checksums: vec![],
                column_digests: vec![],
                zones: vec![],
                modification_time: Some(f.modification_time),
            })
            .collect(),
        dropped_empty: vec![],
        parameters_before: before,
        parameters_after: parameters.clone(),
        finished_at,
        rebuilt: Some(REBUILD_RULE.to_string()),
        rolled_back_at: None,
        cleaned_at: None,
        rehomed_at: None,
        run_dir_cleaned_at: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn old_journals_read_without_the_new_fields() {
        let text = r#"{"run_id":"r","table":"d.t","partition":"dt=1","partition_values":["1"],
            "old_location":"hdfs://nn/a","new_location":"hdfs://nn/a/.hive-orc-compactor/r",
            "inputs":[],"outputs":[],"dropped_empty":[],"parameters_before":{},
            "parameters_after":{},"finished_at":"2026-11-30T08:30:00+00:00"}"#;
        let j: Journal = serde_json::from_str(text).unwrap();
        assert!(j.rolled_back_at.is_none() && j.cleaned_at.is_none() && j.rebuilt.is_none());
        assert_eq!(j.finished_millis(), Some(1_796_027_400_000));
    }

    fn file(name: &str) -> crate::hdfs::Entry {
        crate::hdfs::Entry {
            name: name.into(),
            length: 1,
            block_size: Some(128 << 20),
            modification_time: 0,
            owner: "o".into(),
            group: "g".into(),
            permission: 0o644,
        }
    }

    #[test]
    fn late_files_are_the_visible_files_no_input_names() {
        let text = r#"{"run_id":"r","table":"d.t","partition":"dt=1","partition_values":["1"],
            "old_location":"hdfs://nn/a","new_location":"hdfs://nn/a/.hive-orc-compactor/r",
            "inputs":[{"path":"hdfs://nn/a/000000_0","length":1,"modification_time":0,"rows":1}],
            "outputs":[],"dropped_empty":[],"parameters_before":{},
            "parameters_after":{},"finished_at":"2026-11-30T08:30:00+00:00"}"#;
        let j: Journal = serde_json::from_str(text).unwrap();
        let listing = Listing {
            files: vec![file("000000_0"), file("late.orc")],
            hidden: vec![".hive-orc-compactor".into()],
            subdirs: vec![],
        };
        assert_eq!(late_names(&j, &listing), vec!["late.orc"]);
        assert!(j.rehomed_millis().is_none());
    }
}
