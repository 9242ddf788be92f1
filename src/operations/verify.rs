//! `verify`: check that a partition's current files are what the metastore and the journal say.
//!
//! Promises: read-only (it rebuilds a lost journal in memory, but only `cleanup` and `rollback`
//! write one). It compares the files in the partition's current location with the metastore's
//! basic statistics (`numFiles`, `totalSize`, and `numRows` against the ORC footers) and, when
//! the partition is in a run directory of this tool, with that run's journal (file names,
//! lengths, row counts; with `--checksums` the XXH3 of every copied stripe, or of every carried
//! file, read back from HDFS, and for a re-encoded output the digest of every column's values,
//! decoded again). Every mismatch is named; any mismatch is exit 5.

use std::collections::BTreeMap;

use crate::hdfs::Reader;
use anyhow::anyhow;
use serde::Serialize;
use tracing::Instrument;
use xxhash_rust::xxh3::Xxh3;

use crate::hdfs::{Hdfs, Location};
use crate::journal::{self, Journal, JournalOutput};
use crate::metastore::Metastore;
use crate::operations::outcome::{Outcome, Status};
use crate::orc::{digest_file, Digests, OrcError};
use crate::resolve::{self, ResolveError, TableName};
use crate::snapshot::{DataFile, Snapshot};

/// Largest read while hashing: memory stays bounded whatever the stripe size.
const CHUNK: u64 = 8 * 1024 * 1024;

/// What `--json` prints: the outcome (`verified`, or `verification-failed` with the first
/// mismatch and their count as reason), then what was checked.
#[derive(Debug, Serialize)]
pub struct VerifyReport {
    #[serde(flatten)]
    pub outcome: Outcome,
    pub location: String,
    pub files: usize,
    pub bytes: u64,
    /// From the ORC footers.
    pub rows: u64,
    /// The basic statistics the metastore holds.
    pub statistics: BTreeMap<String, String>,
    /// The run whose journal the files were checked against, if any.
    pub run_id: Option<String>,
    pub journal_rebuilt: bool,
    pub checksums_checked: usize,
    /// Files written to a location this partition's runs replaced, after the swap: no query
    /// reads them until `cleanup --adopt-late-files` (or `--discard-late-files` settles them).
    pub late_files: Vec<String>,
    /// Each one a sentence naming the file or statistic; empty means verified.
    pub mismatches: Vec<String>,
    /// What could not be checked, and why.
    pub notes: Vec<String>,
}

impl VerifyReport {
    /// The verdict, once every check has run.
    fn settle(&mut self) {
        match self.mismatches.as_slice() {
            [] => self.outcome.status = Status::Verified,
            [first, rest @ ..] => {
                self.outcome.status = Status::VerificationFailed;
                self.outcome.reason = Some(match rest.len() {
                    0 => first.clone(),
                    more => format!("{first} (and {more} more)"),
                });
            }
        }
    }
}

const STATISTICS: [&str; 3] = ["numFiles", "totalSize", "numRows"];

pub async fn verify(
    metastore: &Metastore,
    hdfs: &Hdfs,
    table: &TableName,
    spec: &str,
    checksums: bool,
    threads: usize,
) -> anyhow::Result<VerifyReport> {
    let span = tracing::info_span!("partition", table = %table, partition = spec);
    let mut report = verify_partition(metastore, hdfs, table, spec, checksums, threads)
        .instrument(span)
        .await?;
    report.settle();
    Ok(report)
}

async fn verify_partition(
    metastore: &Metastore,
    hdfs: &Hdfs,
    table: &TableName,
    spec: &str,
    checksums: bool,
    threads: usize,
) -> anyhow::Result<VerifyReport> {
    let info = resolve::table(metastore, table).await?;
    let (spec, partition) = match resolve::partition(metastore, &info, spec).await {
        Ok(found) => found,
        Err(ResolveError::Refused(r)) => return Err(r.into()),
        Err(ResolveError::Other(e)) => return Err(e),
    };
    let location = partition
        .storage
        .location
        .as_deref()
        .ok_or_else(|| anyhow!("the partition has no location"))?;
    let location = Location::parse(location)?;
    let mut report = VerifyReport {
        outcome: Outcome::new(&info.qualified_name(), &spec.name()),
        location: location.to_string(),
        files: 0,
        bytes: 0,
        rows: 0,
        statistics: STATISTICS
            .iter()
            .filter_map(|k| Some((k.to_string(), partition.params.get(*k)?.clone())))
            .collect(),
        run_id: None,
        journal_rebuilt: false,
        checksums_checked: 0,
        late_files: journal::late_files(hdfs, &info, &spec, &location).await?,
        mismatches: vec![],
        notes: vec![],
    };
    if !report.late_files.is_empty() {
        report.notes.push(format!(
            "{} late file(s) in a replaced location, read by no query: adopt or discard them \
             with cleanup",
            report.late_files.len()
        ));
    }
    let snapshot = match Snapshot::take(hdfs, &location).await {
        Ok(s) => s,
        Err(e) if e.refusal().is_some() => {
            report.mismatches.push(e.to_string());
            return Ok(report);
        }
        Err(e) => return Err(e.into()),
    };
    report.files = snapshot.files.len();
    report.bytes = snapshot.bytes();
    report.rows = snapshot.rows();
    let found = [report.files as u64, report.bytes, report.rows];
    for (key, value) in STATISTICS.iter().zip(found) {
        match partition.params.get(*key) {
            Some(v) if v.parse::<u64>().ok() == Some(value) => {}
            Some(v) => report.mismatches.push(format!(
                "{key} is {v} in the metastore, the files hold {value}"
            )),
            None => report
                .notes
                .push(format!("the metastore holds no {key} for the partition")),
        }
    }
    let run = journal::current_run(
        hdfs,
        &report.outcome.table,
        &report.outcome.partition,
        &spec.values,
        &partition.params,
        &location,
    )
    .await?;
    if let Some(run) = run {
        report.run_id = Some(run.journal.run_id.clone());
        report.journal_rebuilt = run.rebuilt;
        if run.rebuilt {
            report.notes.push(format!(
                "run {}'s journal was lost (a kill after its swap) and was rebuilt for this \
                 check; it has no checksums (cleanup writes it)",
                run.journal.run_id
            ));
        }
        against_journal(
            hdfs,
            &snapshot,
            &run.journal,
            checksums,
            threads,
            &mut report,
        )
        .await?;
    } else {
        report
            .notes
            .push("the partition is not in a run directory of this tool: no journal".into());
    }
    Ok(report)
}

async fn against_journal(
    hdfs: &Hdfs,
    snapshot: &Snapshot,
    journal: &Journal,
    checksums: bool,
    threads: usize,
    report: &mut VerifyReport,
) -> anyhow::Result<()> {
    let now: BTreeMap<&str, &DataFile> = snapshot
        .files
        .iter()
        .map(|f| (f.name.as_str(), f))
        .collect();
    let name = |path: &str| path.rsplit('/').next().unwrap_or(path).to_string();
    let named: Vec<String> = journal.outputs.iter().map(|o| name(&o.path)).collect();
    for f in &snapshot.files {
        if !named.contains(&f.name) {
            report.mismatches.push(format!(
                "{} is not one of the files run {} wrote",
                f.name, journal.run_id
            ));
        }
    }
    for (output, file_name) in journal.outputs.iter().zip(&named) {
        let Some(file) = now.get(file_name.as_str()) else {
            report.mismatches.push(format!(
                "{file_name} (written by run {}) is gone",
                journal.run_id
            ));
            continue;
        };
        let (checked, mismatches) = check_output(hdfs, file, output, checksums, threads).await?;
        report.checksums_checked += checked;
        report.mismatches.extend(mismatches);
    }
    Ok(())
}

/// Checks one file against the journal's record of an output: length, rows by its footer, and
/// with `checksums` the XXH3 of every stripe (of the whole file for a carried one). Returns how
/// many checksums were compared and the mismatches, each a sentence naming the file. A
/// re-encoded file is read back `threads` columns at once.
pub async fn check_output(
    hdfs: &Hdfs,
    file: &DataFile,
    output: &JournalOutput,
    checksums: bool,
    threads: usize,
) -> anyhow::Result<(usize, Vec<String>)> {
    let file_name = &file.name;
    let mut mismatches = vec![];
    if file.length != output.length {
        mismatches.push(format!(
            "{file_name} is {} bytes, the journal says {}",
            file.length, output.length
        ));
        return Ok((0, mismatches));
    }
    if file.rows() != output.rows {
        mismatches.push(format!(
            "{file_name} holds {} rows by its footer, the journal says {}",
            file.rows(),
            output.rows
        ));
    }
    if !checksums {
        return Ok((0, mismatches));
    }
    if !output.column_digests.is_empty() {
        let (checked, wrong) = check_digests(hdfs, file, output, threads).await?;
        mismatches.extend(wrong);
        return Ok((checked, mismatches));
    }
    if output.stripe_checksums.is_empty() {
        return Ok((0, mismatches));
    }
    let reader = hdfs.open(&file.location()).await?;
    // A carried file keeps its input's name and has one checksum, of the whole file.
    let carried = output.inputs.len() == 1 && output.inputs[0] == journal::file_name(&output.path);
    let ranges: Vec<(u64, u64)> = match (&file.tail, carried) {
        (_, true) => vec![(0, file.length)],
        (Some(tail), false) => tail
            .stripes
            .iter()
            .map(|s| (s.offset, s.length()))
            .collect(),
        (None, false) => vec![],
    };
    if ranges.len() != output.stripe_checksums.len() {
        mismatches.push(format!(
            "{file_name} has {} stripes, the journal has checksums of {}",
            ranges.len(),
            output.stripe_checksums.len()
        ));
        return Ok((0, mismatches));
    }
    let mut checked = 0;
    for (i, ((offset, length), expected)) in ranges.iter().zip(&output.stripe_checksums).enumerate()
    {
        let found = xxh3_of(&reader, *offset, *length, &file.location()).await?;
        checked += 1;
        if found != *expected {
            mismatches.push(format!(
                "{file_name} stripe {i}: checksum {found:016x}, the journal says {expected:016x}"
            ));
        }
    }
    Ok((checked, mismatches))
}

/// Decodes a re-encoded output and compares its rows and column digests with the journal's:
/// how many digests were compared, and the mismatches.
async fn check_digests(
    hdfs: &Hdfs,
    file: &DataFile,
    output: &JournalOutput,
    threads: usize,
) -> anyhow::Result<(usize, Vec<String>)> {
    let Some(tail) = &file.tail else {
        return Ok((
            0,
            vec![format!(
                "{} is empty, the journal says {} rows",
                file.name, output.rows
            )],
        ));
    };
    let reader = hdfs.open(&file.location()).await?;
    let expected = Digests {
        rows: output.rows,
        columns: output.column_digests.clone(),
        zones: output.zones.clone(),
    };
    match digest_file(reader, tail, threads).await {
        Ok(found) => Ok((
            found.columns.len(),
            expected
                .check(&found)
                .err()
                .map(|e| format!("{}: {e}", file.name))
                .into_iter()
                .collect(),
        )),
        Err(OrcError::Io(e)) => Err(anyhow!("reading {}: {e}", file.location())),
        Err(e) => Ok((
            0,
            vec![format!("{}: its values cannot be decoded: {e}", file.name)],
        )),
    }
}

/// XXH3-64 of `length` bytes at `offset`, read in bounded chunks.
async fn xxh3_of(
    reader: &Reader,
    offset: u64,
    length: u64,
    file: &Location,
) -> anyhow::Result<u64> {
    if offset + length > reader.file_length() as u64 {
        return Err(anyhow!(
            "{file}: bytes {offset}..{} are past its end",
            offset + length
        ));
    }
    let mut hasher = Xxh3::new();
    let mut at = offset;
    while at < offset + length {
        let n = CHUNK.min(offset + length - at);
        let bytes = reader
            .read_range(at as usize, n as usize)
            .await
            .map_err(|e| anyhow!("reading {file}: {e}"))?;
        hasher.update(&bytes);
        at += n;
    }
    Ok(hasher.digest())
}
