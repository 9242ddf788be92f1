//! Steps 4 to 9 of the protocol for one partition, one method each: [`Run::prepare`] stages,
//! verifies and publishes (4 to 6), [`Run::swap_and_journal`] re-checks, swaps and writes the
//! journal (7 to 9). The batch around them ([`super::batch`]) holds the metastore lock and, for
//! a batch of several partitions, swaps them all with one call ([`Run::landed`] then takes each
//! partition's swap from there).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Instant;

use crate::hdfs::Reader;
use anyhow::anyhow;
use tokio::sync::mpsc::{self, UnboundedReceiver, UnboundedSender};
use tokio::task::JoinSet;
use tracing::Instrument;

use super::access::{keep_access, not_kept_warning};
use super::options::{CompactOptions, VerifyLevel};
use super::parameters::new_parameters;
use super::plan::{check_one_acl, PartitionPlan};
use super::progress::Progress;
use super::report::CompactReport;
use super::stage::{Closed, Staging};
use super::write::{StagedOutput, Written};
use crate::hdfs::{Access, Files, Hdfs, Location};
use crate::journal::{self, Journal, JournalInput, JournalOutput};
use crate::metastore::Metastore;
use crate::operations::file_copy::hash_file;
use crate::operations::outcome::Stop;
use crate::orc::{
    digest_file, read_tail, verify_output, verify_tail, ClusterSummary, OrcError, OrcTail,
    ReencodedOutput,
};
use crate::relocate::{set_location, PartitionStore, RelocateError, Relocated};
use crate::run_dirs::{self, PARAM_PREVIOUS_LOCATION};
use crate::snapshot::DataFile;

/// One compaction of a planned partition, from staging to journal. The steps from the re-check
/// on, and what a stopped run removes, need only the calls of [`PartitionStore`] and [`Files`]:
/// unit tests run them against in-memory doubles.
pub(super) struct Run<'a, M = Metastore, H = Hdfs> {
    metastore: &'a M,
    hdfs: &'a H,
    plan: &'a PartitionPlan,
    options: &'a CompactOptions,
    progress: &'a dyn Progress,
    id: String,
    staging: Location,
    published: Location,
    /// The metastore may point at `published`: from then on a failure must leave it in place.
    swapped: bool,
}

/// The access the new files and directories get: that of the old ones.
struct Inherited {
    dir: Access,
    /// The first input's: Hive writes a partition's files with one umask and the directory's
    /// default ACL.
    file: Access,
}

/// What step 4 wrote into the staging directory.
pub(super) struct Staged<'p> {
    /// Merged outputs, in plan order, with what the writer proved of each.
    outputs: Vec<(Location, StagedOutput)>,
    /// Carried files: staged copy, source, XXH3 of the bytes handed to the writer.
    copies: Vec<(Location, &'p DataFile, u64)>,
    /// What the sort of each group put in an order did.
    sorted: Vec<ClusterSummary>,
    /// Whether the new files are erasure coded (`None`: not known).
    coded: Option<bool>,
}

impl Staged<'_> {
    /// Every staged file's path once the staging directory is published as `published`.
    fn published_paths(&self, published: &Location) -> Vec<Location> {
        self.outputs
            .iter()
            .map(|(t, _)| t)
            .chain(self.copies.iter().map(|(t, _, _)| t))
            .map(|t| published.child(t.path.rsplit('/').next().unwrap_or("")))
            .collect()
    }

    /// Bytes of the new files.
    fn bytes(&self) -> u64 {
        self.outputs
            .iter()
            .map(|(_, m)| m.written.length())
            .sum::<u64>()
            + self.copies.iter().map(|(_, s, _)| s.length).sum::<u64>()
    }
}

/// Step 5 for a re-encoded output read back: its tail against what the writer reported and
/// the plan's `rows`, then every value against the digests of the rows handed to the writer;
/// the rows it holds.
async fn check_reencoded(
    reader: Reader,
    tail: &OrcTail,
    written: &ReencodedOutput,
    rows: u64,
    threads: usize,
) -> Result<u64, OrcError> {
    written.check_tail(tail, rows)?;
    let found = digest_file(reader, tail, threads).await?;
    written.digests.check(&found)?;
    Ok(tail.rows)
}

/// What step 8 changed: the partition parameters before and after the swap.
struct Swapped {
    before: BTreeMap<String, String>,
    after: BTreeMap<String, String>,
}

impl<'a, M: PartitionStore, H: Files> Run<'a, M, H> {
    /// The directory the new files are published as, which the swap points the partition at.
    pub(super) fn published(&self) -> &Location {
        &self.published
    }

    pub fn new(
        metastore: &'a M,
        hdfs: &'a H,
        plan: &'a PartitionPlan,
        options: &'a CompactOptions,
        progress: &'a dyn Progress,
    ) -> Self {
        let id = run_dirs::new_run_id();
        Run {
            metastore,
            hdfs,
            plan,
            options,
            progress,
            staging: run_dirs::staging_dir(&plan.home, &id),
            published: run_dirs::run_dir(&plan.home, &id),
            id,
            swapped: false,
        }
    }
}

/// What steps 4 to 6 leave for the swap: the new files, staged, verified and published.
pub(super) struct Prepared<'p> {
    pub staged: Staged<'p>,
    inherited: Inherited,
    /// The new files, published.
    pub files: usize,
    /// The rows they hold, verified.
    pub rows: u64,
    /// Access the new paths could not be given.
    not_kept: Vec<crate::hdfs::NotKept>,
}

impl<'a> Run<'a> {
    /// Steps 4 to 6, top to bottom: stage, verify, publish. Between them it stops where a test
    /// asks it to (failpoints) or a signal did (checkpoints); on a stop the caller calls
    /// [`Run::stopped`], which removes what the run wrote.
    pub(super) async fn prepare(
        &mut self,
        report: &mut CompactReport,
    ) -> Result<Prepared<'a>, Stop> {
        report.record_run(&self.id, self.options);
        let inherited = self.inherited_access().await?;
        failpoint!("compact::before-stage");
        self.checkpoint()?;

        // The ACL check's NameNode calls overlap the staging's reads and writes (the NameNode
        // is idle while a run stages). A refusal wins over a staging failure: it says what to
        // change; either way the staging directory is removed. Step 5 starts within step 4 for
        // a sorted group's outputs, which are written one at a time: each is read back once
        // closed, on the cores the next one's writing leaves idle.
        let (closed, to_read_back) = mpsc::unbounded_channel();
        let (staged, read_back, one_acl) = tokio::join!(
            self.stage(&inherited, closed),
            self.read_back_as_closed(to_read_back),
            check_one_acl(self.hdfs, &self.plan.snapshot)
        );
        one_acl?;
        let staged = staged?;
        report.record_staged(&staged.outputs, &staged.sorted);
        failpoint!("compact::after-stage");

        let rows = self.verify(&staged, read_back).await?;
        failpoint!("compact::after-verify");
        self.checkpoint()?;

        let new_files = staged.published_paths(&self.published);
        let not_kept = self.publish(&new_files, &inherited).await?;
        failpoint!("compact::after-publish");
        self.checkpoint()?;
        Ok(Prepared {
            staged,
            inherited,
            files: new_files.len(),
            rows,
            not_kept,
        })
    }

    /// After step 9: the journal gets the files' access, and what could not be kept of the new
    /// paths' access becomes a warning.
    pub(super) async fn finish(
        &self,
        prepared: Prepared<'_>,
        journal: &Location,
        report: &mut CompactReport,
    ) {
        let mut not_kept = prepared.not_kept;
        not_kept.extend(
            self.hdfs
                .copy_access(journal, &prepared.inherited.file)
                .await,
        );
        report.outcome.warnings.extend(not_kept_warning(&not_kept));
    }

    /// The access of the partition's directory and of its first file.
    async fn inherited_access(&self) -> Result<Inherited, Stop> {
        let hdfs = self.hdfs;
        let vanished = |l: &Location| Stop::Busy(format!("{l} vanished"));
        let dir = hdfs
            .access(&self.plan.location)
            .await?
            .ok_or_else(|| vanished(&self.plan.location))?;
        let file = match self.plan.snapshot.files.first() {
            Some(f) => hdfs
                .access(&f.location())
                .await?
                .ok_or_else(|| vanished(&f.location()))?,
            None => dir.clone(),
        };
        Ok(Inherited { dir, file })
    }

    /// Step 4: write every planned output and copy every carried file into the staging
    /// directory.
    async fn stage(
        &self,
        inherited: &Inherited,
        closed: UnboundedSender<Closed>,
    ) -> Result<Staged<'a>, Stop> {
        let started = Instant::now();
        let plan = self.plan;
        self.hdfs
            .mkdirs(&self.staging, inherited.dir.permission)
            .await?;
        let coded = self.check_redundancy().await?;
        let to_write = plan.bytes_to_write();
        self.progress.planned(to_write);
        let staging = Staging {
            hdfs: self.hdfs,
            dir: &self.staging,
            run_id: &self.id,
            permission: inherited.file.permission,
            options: self.options,
            progress: self.progress,
            closed,
        };
        let (outputs, sorted) = staging.outputs(plan, || self.checkpoint()).await?;
        let copies = staging.carried(plan, || self.checkpoint()).await?;
        tracing::debug!(
            outputs = outputs.len(),
            carried = copies.len(),
            bytes = to_write,
            seconds = started.elapsed().as_secs_f64(),
            "staged"
        );
        Ok(Staged {
            outputs,
            copies,
            sorted,
            coded,
        })
    }

    /// The staging directory's erasure coding, learnt from a probe written there before any
    /// output (it is the partition directory's: a new directory inherits its parent's policy).
    /// hdfs-native writes Reed-Solomon parity whatever the policy says, so a policy with one
    /// parity unit (XOR-2-1, the only such built-in policy) is refused before a byte of output
    /// is written. RS-LEGACY-6-3 lays files out as RS-6-3 does: it cannot be told apart here.
    async fn check_redundancy(&self) -> Result<Option<bool>, Stop> {
        use crate::eligibility::{Refusal, Rule};
        use crate::hdfs::Redundancy;
        match self.hdfs.new_file_redundancy(&self.staging).await? {
            Some(Redundancy::Striped { parity: 1 }) => Err(Stop::Refused(Refusal::new(
                Rule::ErasureCoding,
                format!(
                    "new files in {} are erasure coded with one parity unit (XOR-2-1-1024k or \
                     another XOR policy), which hdfs-native writes with wrong parity: give the \
                     directory a Reed-Solomon policy (`hdfs ec -setPolicy -path {} -policy \
                     RS-6-3-1024k`) or replication (`-replicate`), then compact again",
                    self.plan.location, self.plan.location.path
                ),
            ))),
            Some(Redundancy::Striped { .. }) => Ok(Some(true)),
            Some(Redundancy::Replicated) => Ok(Some(false)),
            None => Ok(None),
        }
    }

    /// Step 5's reading back of the outputs `closed` tells of while step 4 goes on (see
    /// [`Run::prepare`]), each in a task of its own; what each found, by its place in the plan.
    async fn read_back_as_closed(
        &self,
        mut closed: UnboundedReceiver<Closed>,
    ) -> BTreeMap<usize, Result<u64, Stop>> {
        let mut reading = JoinSet::new();
        let mut found = BTreeMap::new();
        while let Some(c) = closed.recv().await {
            tracing::debug!(output = %c.target, "a sorted output read back as soon as it was closed");
            match self.open_output(&c.target).await {
                Ok((reader, tail)) => {
                    let threads = self.options.threads;
                    let planned = self.plan.outputs.get(c.index).map_or(0, |o| o.plan.rows);
                    let check = async move {
                        let rows = check_reencoded(reader, &tail, &c.written, planned, threads)
                            .await
                            .map_err(|e| Stop::Verification(format!("{}: {e}", c.target)));
                        (c.index, rows)
                    };
                    reading.spawn(check.in_current_span());
                }
                Err(stop) => {
                    found.insert(c.index, Err(stop));
                }
            }
        }
        while let Some(done) = reading.join_next().await {
            match done {
                Ok((index, rows)) => {
                    found.insert(index, rows);
                }
                // A read-back that panicked leaves its output unchecked: step 5 checks it.
                Err(e) => tracing::warn!(error = %e, "reading an output back ended early"),
            }
        }
        found
    }

    /// A staged output opened for reading back, and its tail.
    async fn open_output(&self, target: &Location) -> Result<(Reader, OrcTail), Stop> {
        let reader = self.hdfs.open(target).await?;
        let tail = read_tail(&reader)
            .await
            .map_err(|e| Stop::Verification(format!("{target}: re-reading its tail: {e}")))?
            .ok_or_else(|| Stop::Verification(format!("{target} is empty after writing")))?;
        Ok((reader, tail))
    }

    /// Step 5: read the staged files back from HDFS (every byte, or with `--verify tail` the
    /// tails) and check them against the plan; returns the rows they hold. The outputs in
    /// `read_back` were read back during step 4: what they gave is taken.
    async fn verify(
        &self,
        staged: &Staged<'_>,
        mut read_back: BTreeMap<usize, Result<u64, Stop>>,
    ) -> Result<u64, Stop> {
        let started = Instant::now();
        let (hdfs, options) = (self.hdfs, self.options);
        let mut rows = 0;
        let outputs = staged.outputs.iter().zip(&self.plan.outputs);
        for (index, ((target, made), output)) in outputs.enumerate() {
            if let Some(found) = read_back.remove(&index) {
                rows += found?;
                continue;
            }
            let (reader, tail) = self.open_output(target).await?;
            let failed = |e: OrcError| Stop::Verification(format!("{target}: {e}"));
            match (&made.written, options.verify) {
                (Written::Copied(merged), VerifyLevel::Full) => {
                    verify_output(&output.plan, merged, &tail, &reader, &options.read_ahead)
                        .await
                        .map_err(failed)?
                }
                (Written::Copied(merged), VerifyLevel::Tail) => {
                    verify_tail(&output.plan, merged, &tail, &reader)
                        .await
                        .map_err(failed)?
                }
                (Written::Reencoded(reencoded), _) => {
                    check_reencoded(reader, &tail, reencoded, output.plan.rows, options.threads)
                        .await
                        .map_err(failed)?;
                }
            }
            rows += tail.rows;
        }
        for (target, source, hash) in &staged.copies {
            let found = match options.verify {
                VerifyLevel::Full => {
                    hash_file(hdfs, target, source.length, &options.read_ahead).await?
                }
                VerifyLevel::Tail => (hdfs.status(target).await?.map_or(0, |s| s.length), *hash),
            };
            if found != (source.length, *hash) {
                return Err(Stop::Verification(format!(
                    "{target}: the copy of {} reads back as {} bytes with checksum {:016x}, \
                     expected {} bytes with {hash:016x}",
                    source.location(),
                    found.0,
                    found.1,
                    source.length
                )));
            }
            rows += source.rows();
        }
        let expected = self.plan.snapshot.rows();
        if rows != expected {
            return Err(Stop::Verification(format!(
                "the new files hold {rows} rows, the old ones {expected}"
            )));
        }
        tracing::debug!(
            level = options.verify.as_str(),
            seconds = started.elapsed().as_secs_f64(),
            "verified"
        );
        Ok(rows)
    }

    /// Step 6: publish the staging directory (same parent, so the rename is atomic) and give
    /// the new paths the old ones' access; returns what could not be kept.
    async fn publish(
        &self,
        new_files: &[Location],
        inherited: &Inherited,
    ) -> Result<Vec<crate::hdfs::NotKept>, Stop> {
        self.hdfs
            .rename(&self.staging, &self.published)
            .await
            .map_err(|e| Stop::Failed(anyhow!("publishing {}: {e}", self.staging)))?;
        // Our work directory too: whoever owns the table must be able to use it later.
        let work = run_dirs::work_dir(&self.plan.home);
        let targets: Vec<(&Location, &Access)> = [(&work, &inherited.dir)]
            .into_iter()
            .chain(std::iter::once((&self.published, &inherited.dir)))
            .chain(new_files.iter().map(|f| (f, &inherited.file)))
            .collect();
        Ok(keep_access(self.hdfs, &targets).await)
    }
}

impl<'a, M: PartitionStore, H: Files> Run<'a, M, H> {
    /// A safe point: nothing readers see has changed yet, so an interrupted run stops here and
    /// takes the cleanup path every failure before the swap takes.
    fn checkpoint(&self) -> Result<(), Stop> {
        if self.options.cancel.is_cancelled() {
            return Err(Stop::Interrupted);
        }
        Ok(())
    }

    /// Steps 7 to 9 for a partition swapped on its own, once its new files are published and
    /// the batch holds EXCLUSIVE and the swap gate: the re-check, the swap, the journal;
    /// returns where the journal was written.
    pub(super) async fn swap_and_journal(
        &mut self,
        staged: &Staged<'_>,
        files: usize,
        rows: u64,
        report: &mut CompactReport,
    ) -> Result<Location, Stop> {
        self.ready_to_swap().await?;
        let plan = self.plan;
        let result = set_location(
            self.metastore,
            &plan.table,
            &plan.spec,
            &plan.location,
            &self.published.to_string(),
            self.parameters(staged, files, rows),
        )
        .await;
        self.landed(result, staged, files, rows, report).await
    }

    /// Step 7 and the last safe point before the swap: after it, readers may see the new files.
    pub(super) async fn ready_to_swap(&self) -> Result<(), Stop> {
        self.recheck().await?;
        failpoint!("compact::before-swap");
        self.checkpoint()
    }

    /// The partition parameters step 8 sets, made from the current ones.
    pub(super) fn parameters(
        &self,
        staged: &Staged<'_>,
        files: usize,
        rows: u64,
    ) -> impl FnOnce(&BTreeMap<String, String>) -> BTreeMap<String, String> + Send + '_ {
        let old_location = self.plan.location.to_string();
        let (bytes, coded) = (staged.bytes(), staged.coded);
        move |p| new_parameters(p, &old_location, files, bytes, rows, coded, &self.id)
    }

    /// Where the published directory is once the swap was sent (alone or with its batch), and
    /// the step 9 that follows; returns where the journal was written.
    pub(super) async fn landed(
        &mut self,
        result: Result<Relocated, RelocateError>,
        staged: &Staged<'_>,
        files: usize,
        rows: u64,
        report: &mut CompactReport,
    ) -> Result<Location, Stop> {
        let swapped = self.swapped(result).await?;
        report.record_swapped(&self.published, files, staged.bytes(), rows);
        tracing::debug!("swapped");
        failpoint!("compact::after-swap");
        self.journal(staged, swapped).await
    }

    /// Step 7: re-check the snapshot: a writer that added or changed files means busy.
    async fn recheck(&self) -> Result<(), Stop> {
        let changes = self.changes_since_snapshot().await?;
        if !changes.is_empty() {
            return Err(Stop::Busy(format!(
                "the partition changed during the run ({}); a writer is active, retry later",
                changes.join(", ")
            )));
        }
        Ok(())
    }

    /// What changed in the partition's directory since the snapshot (empty: nothing).
    async fn changes_since_snapshot(&self) -> Result<Vec<String>, Stop> {
        let location = &self.plan.location;
        match self.hdfs.list(location).await? {
            Some(now) => Ok(self.plan.snapshot.changes(&now)),
            None => Ok(vec![format!("{location} vanished")]),
        }
    }

    /// Step 8's outcome: the partition points at the published directory (with the
    /// statistics we can vouch for) or the run stops; swaps back at once if a writer slipped in.
    async fn swapped(&mut self, swap: Result<Relocated, RelocateError>) -> Result<Swapped, Stop> {
        let plan = self.plan;
        let new_location = self.published.to_string();
        let old_location = plan.location.to_string();
        let (before, after) = match swap {
            Ok(params) => params,
            Err(RelocateError::Unconfirmed(why)) => {
                // The metastore may still point the partition here: the new files must stay.
                self.swapped = true;
                return Err(Stop::Failed(anyhow!(
                    "{why}; the new files stay in {new_location} in case the metastore applies \
                     the change later: check with `verify`; `cleanup` settles the run either way"
                )));
            }
            Err(e) => return Err(e.into()),
        };
        self.swapped = true;

        // A writer that slipped in between the re-check and the swap wrote where queries no
        // longer look: swap back at once (our directory is then unused and removed) and report
        // busy. Later writers to the old location are cleanup's "late files".
        let changes = self.changes_since_snapshot().await?;
        if changes.is_empty() {
            return Ok(Swapped { before, after });
        }
        let busy = format!(
            "the partition changed during the swap ({}); swapped back, a writer is active, retry later",
            changes.join(", ")
        );
        match set_location(
            self.metastore,
            &plan.table,
            &plan.spec,
            &self.published,
            &old_location,
            |_| before.clone(),
        )
        .await
        {
            Ok(_) => {
                self.swapped = false;
                Err(Stop::Busy(busy))
            }
            // Both directories stay: the metastore may point at either.
            Err(RelocateError::Unconfirmed(why)) => Err(Stop::Failed(anyhow!(
                "{busy}, but the swap back's outcome is unknown ({why}); both {new_location} and \
                 {old_location} stay: check with `verify`, then `cleanup` settles the run"
            ))),
            Err(e) => Err(Stop::Failed(anyhow!(
                "{busy}, but swapping back failed: {e}; the partition points at {new_location} \
                 without the new files in {old_location}: point it back at {old_location} \
                 (ALTER TABLE ... PARTITION ... SET LOCATION) and restore its statistics"
            ))),
        }
    }

    /// Step 9: the journal rollback and cleanup work from; returns where it was written.
    async fn journal(&self, staged: &Staged<'_>, swapped: Swapped) -> Result<Location, Stop> {
        let plan = self.plan;
        let files = &plan.snapshot.files;
        let published_path = |t: &Location| {
            self.published
                .child(t.path.rsplit('/').next().unwrap_or(""))
                .to_string()
        };
        // The outputs' times as published, so rollback can tell a file written over since; a
        // listing that fails only leaves them out (rollback then compares names and lengths).
        let mtimes: BTreeMap<String, u64> = match self.hdfs.list(&self.published).await {
            Ok(Some(l)) => l
                .files
                .into_iter()
                .map(|f| (f.name, f.modification_time))
                .collect(),
            _ => BTreeMap::new(),
        };
        let mtime = |t: &Location| mtimes.get(journal::file_name(&t.path)).copied();
        let journal = Arc::new(Journal {
            run_id: self.id.clone(),
            table: plan.table.qualified_name(),
            partition: plan.spec.name(),
            partition_values: plan.spec.values.clone(),
            old_location: plan.location.to_string(),
            new_location: self.published.to_string(),
            inputs: files.iter().map(JournalInput::of).collect(),
            outputs: staged
                .outputs
                .iter()
                .zip(&plan.outputs)
                .map(|((t, m), o)| {
                    let (path, rows, at) = (published_path(t), o.plan.rows, mtime(t));
                    let inputs = plan.inputs_of(o).iter().map(|f| f.name.clone()).collect();
                    match &m.written {
                        Written::Copied(c) => JournalOutput::copied(path, c, rows, inputs, at),
                        Written::Reencoded(r) => {
                            JournalOutput::reencoded(path, r, rows, inputs, at)
                        }
                    }
                })
                .chain(staged.copies.iter().map(|(t, source, checksum)| {
                    JournalOutput::carried(published_path(t), source, *checksum, mtime(t))
                }))
                .collect(),
            dropped_empty: plan
                .dropped_empty
                .iter()
                .map(|&i| files[i].location().to_string())
                .collect(),
            parameters_before: swapped.before,
            parameters_after: swapped.after,
            finished_at: chrono::Utc::now().to_rfc3339(),
            rebuilt: None,
            rolled_back_at: None,
            cleaned_at: None,
            rehomed_at: None,
            run_dir_cleaned_at: None,
        });
        let path = run_dirs::journal_path(&plan.home, &self.id);
        if let Err(e) = journal::write(self.hdfs, &path, Arc::clone(&journal)).await {
            // The swap is done and correct; only the record is missing. Say so loudly.
            return Err(Stop::Failed(anyhow!(
                "the partition was compacted and now points at {}, but writing the journal {} \
                 failed: {e:#}; rollback needs the previous location, recorded in the partition \
                 parameter {PARAM_PREVIOUS_LOCATION}",
                journal.new_location,
                path
            )));
        }
        Ok(path)
    }

    /// A stopped run: unless the metastore may point at the published directory, nothing
    /// readers see points at the run's directories, and they are removed.
    pub(super) async fn stopped(&self, stop: Stop, report: &mut CompactReport) {
        if !self.swapped {
            self.remove_run_dirs(report).await;
            report.new_location = None;
        }
        report.outcome.stop(stop);
    }

    /// After a failure before the swap nothing readers see points at the run's directories:
    /// remove them. If this fails too, only a hidden directory remains, which cleanup removes.
    /// The work directory goes too when that leaves it empty, as it was before the run made
    /// it: a non-recursive delete refuses a directory holding anything, such as other runs'.
    async fn remove_run_dirs(&self, report: &mut CompactReport) {
        for dir in [&self.staging, &self.published] {
            if let Err(e) = self.hdfs.delete(dir, true).await {
                report
                    .outcome
                    .warnings
                    .push(format!("could not remove {dir}: {e}; cleanup will"));
            }
        }
        let work = run_dirs::work_dir(&self.plan.home);
        if let Err(e) = self.hdfs.delete(&work, false).await {
            tracing::debug!(%work, error = %e, "the work directory stays");
        }
    }
}

/// The protocol's end (re-check, swap, swap back, journal, and what a stopped run removes)
/// against in-memory doubles of the metastore and HDFS, with failures injected at each call.
#[cfg(test)]
mod tests {
    use super::*;
    use crate::hdfs::fake::MemFiles;
    use crate::operations::compact::progress::Quiet;
    use crate::operations::outcome::Status;
    use crate::relocate::fake::{table, Alter, FakeMetastore};
    use crate::snapshot::Snapshot;

    const OLD: &str = "hdfs://nn:8020/w/t/k=1";

    /// A partition of no files (so a file in its directory is one that appeared) whose new
    /// files are published: the state step 6 leaves.
    struct Published {
        metastore: FakeMetastore,
        files: MemFiles,
        plan: PartitionPlan,
        options: CompactOptions,
    }

    impl Published {
        fn new() -> Self {
            let (table, spec) = table();
            let old = Location::parse(OLD).unwrap();
            let files = MemFiles::default();
            files.mkdir(&old);
            Published {
                metastore: FakeMetastore::at(OLD),
                files,
                plan: PartitionPlan {
                    table,
                    spec,
                    location: old.clone(),
                    home: old.clone(),
                    snapshot: Snapshot {
                        dir: old,
                        files: vec![],
                        hidden: vec![],
                    },
                    groups: vec![],
                    outputs: vec![],
                    carried: vec![],
                    dropped_empty: vec![],
                    with_tail: vec![],
                    layout: None,
                },
                options: CompactOptions::default(),
            }
        }

        fn old(&self) -> Location {
            self.plan.location.clone()
        }

        /// Steps 7 to 9, and on a stop what `execute` does; the report, the published
        /// directory and where the journal goes.
        async fn finish(&self) -> (CompactReport, Location, Location) {
            let mut run = Run::new(
                &self.metastore,
                &self.files,
                &self.plan,
                &self.options,
                &Quiet,
            );
            self.files.mkdir(&run.published);
            let staged = Staged {
                outputs: vec![],
                copies: vec![],
                sorted: vec![],
                coded: None,
            };
            let mut report = CompactReport::new("db.t", "k=1");
            if let Err(stop) = run.swap_and_journal(&staged, 0, 0, &mut report).await {
                run.stopped(stop, &mut report).await;
            }
            let journal = run_dirs::journal_path(&self.plan.home, &run.id);
            (report, run.published.clone(), journal)
        }
    }

    /// The partition points at `published`, and the report says so.
    fn assert_compacted(p: &Published, report: &CompactReport, published: &Location) {
        let why = reason(report);
        assert_eq!(report.outcome.status, Status::Compacted, "{why}");
        assert_eq!(p.metastore.location(), published.to_string());
        assert_eq!(report.new_location, Some(published.to_string()));
    }

    fn reason(report: &CompactReport) -> &str {
        report.outcome.reason.as_deref().unwrap_or_default()
    }

    #[tokio::test]
    async fn the_swap_points_the_partition_at_the_published_files_then_the_journal_is_written() {
        let p = Published::new();
        let (report, published, journal) = p.finish().await;
        assert_compacted(&p, &report, &published);
        let written = p.files.written(&journal).expect("journal written");
        let journal: Journal = serde_json::from_slice(&written).unwrap();
        assert_eq!(journal.old_location, OLD);
        assert_eq!(journal.new_location, published.to_string());
        // What the swap changed, as only a done swap knows it.
        assert_eq!(journal.parameters_after, p.metastore.parameters());
        assert!(p.files.exists(&published));
    }

    #[tokio::test]
    async fn a_file_that_appeared_before_the_swap_makes_the_run_busy_and_nothing_is_altered() {
        let p = Published::new();
        p.files.add_file(&p.old(), "000001_0", 10);
        let (report, published, _) = p.finish().await;
        assert_eq!(report.outcome.status, Status::Busy);
        assert!(
            reason(&report).contains("000001_0 appeared"),
            "{}",
            reason(&report)
        );
        assert!(p.metastore.calls().is_empty(), "{:?}", p.metastore.calls());
        assert!(
            !p.files.exists(&published),
            "the unused run directory is removed"
        );
        assert_eq!(report.new_location, None);
    }

    #[tokio::test]
    async fn a_vanished_partition_directory_is_busy_before_the_swap() {
        let p = Published::new();
        p.files.delete(&p.old(), true).await.unwrap();
        let (report, _, _) = p.finish().await;
        assert_eq!(report.outcome.status, Status::Busy);
        assert!(reason(&report).contains("vanished"), "{}", reason(&report));
        assert!(p.metastore.calls().is_empty());
    }

    #[tokio::test]
    async fn a_failed_recheck_listing_stops_before_the_swap() {
        let p = Published::new();
        p.files.fail("list", &p.old());
        let (report, published, _) = p.finish().await;
        assert_eq!(report.outcome.status, Status::Failed);
        assert!(p.metastore.calls().is_empty());
        assert!(!p.files.exists(&published));
    }

    #[tokio::test]
    async fn an_interrupted_run_stops_at_the_last_safe_point_before_the_swap() {
        let p = Published::new();
        p.options.cancel.cancel();
        let (report, published, _) = p.finish().await;
        assert!(
            reason(&report).contains("interrupted"),
            "{}",
            reason(&report)
        );
        assert!(p.metastore.calls().is_empty());
        assert!(!p.files.exists(&published));
    }

    #[tokio::test]
    async fn a_refused_swap_leaves_the_partition_and_removes_the_run_directories() {
        let p = Published::new();
        p.metastore.alters(&[Alter::Refuse]);
        let (report, published, journal) = p.finish().await;
        assert_eq!(report.outcome.status, Status::Failed);
        assert_eq!(p.metastore.location(), OLD);
        assert!(!p.files.exists(&published));
        assert_eq!(p.files.written(&journal), None);
    }

    #[tokio::test]
    async fn a_stopped_run_removes_the_work_directory_only_when_nothing_else_is_in_it() {
        for other_run in [false, true] {
            let p = Published::new();
            let work = run_dirs::work_dir(&p.plan.home);
            p.files.mkdir(&work);
            let other = run_dirs::run_dir(&p.plan.home, "20260101T000000Z-0badcafe");
            if other_run {
                p.files.mkdir(&other);
            }
            p.metastore.alters(&[Alter::Refuse]);
            let (report, published, _) = p.finish().await;
            assert_eq!(report.outcome.status, Status::Failed);
            assert!(!p.files.exists(&published));
            assert_eq!(p.files.exists(&work), other_run, "other run: {other_run}");
            assert_eq!(p.files.exists(&other), other_run, "other run: {other_run}");
        }
    }

    #[tokio::test]
    async fn a_run_directory_that_cannot_be_removed_is_left_to_cleanup_with_a_warning() {
        let p = Published::new();
        p.metastore.alters(&[Alter::Refuse]);
        p.files.fail("delete", &run_dirs::work_dir(&p.plan.home));
        let (report, published, _) = p.finish().await;
        assert_eq!(report.outcome.status, Status::Failed);
        assert!(p.files.exists(&published));
        let warnings = &report.outcome.warnings;
        assert!(
            warnings.iter().any(|w| w.contains("cleanup will")),
            "{warnings:?}"
        );
    }

    #[tokio::test]
    async fn a_swap_of_unknown_outcome_keeps_the_published_directory() {
        let p = Published::new();
        p.metastore.alters(&[Alter::Lose { applied: false }]);
        let (report, published, _) = p.finish().await;
        assert_eq!(report.outcome.status, Status::Failed);
        assert!(reason(&report).contains("unknown"), "{}", reason(&report));
        // The metastore may still point the partition there.
        assert!(p.files.exists(&published));
        assert!(!p.files.calls().iter().any(|c| c.starts_with("delete")));
    }

    #[tokio::test]
    async fn a_lost_swap_that_landed_is_a_compaction() {
        let p = Published::new();
        p.metastore.alters(&[Alter::Lose { applied: true }]);
        let (report, published, journal) = p.finish().await;
        assert_compacted(&p, &report, &published);
        assert!(p.files.written(&journal).is_some());
    }

    #[tokio::test]
    async fn a_writer_during_the_swap_is_swapped_back_and_the_run_is_busy() {
        let p = Published::new();
        // Listed once by the re-check; the file shows in the listing after the swap.
        p.files.appears(&p.old(), 1, "000001_0");
        let (report, published, journal) = p.finish().await;
        assert_eq!(report.outcome.status, Status::Busy);
        assert!(
            reason(&report).contains("swapped back"),
            "{}",
            reason(&report)
        );
        assert_eq!(p.metastore.location(), OLD);
        // The statistics as they were before the swap.
        assert_eq!(
            p.metastore.parameters().get("numFiles").map(String::as_str),
            Some("3")
        );
        assert!(!p.files.exists(&published));
        assert_eq!(p.files.written(&journal), None);
    }

    #[tokio::test]
    async fn a_failed_swap_back_keeps_the_published_directory_the_partition_points_at() {
        let p = Published::new();
        p.files.appears(&p.old(), 1, "000001_0");
        p.metastore.alters(&[Alter::Apply, Alter::Refuse]);
        let (report, published, _) = p.finish().await;
        assert_eq!(report.outcome.status, Status::Failed);
        assert!(
            reason(&report).contains("swapping back failed"),
            "{}",
            reason(&report)
        );
        assert_eq!(p.metastore.location(), published.to_string());
        assert!(p.files.exists(&published));
    }

    #[tokio::test]
    async fn a_swap_back_of_unknown_outcome_keeps_both_directories() {
        let p = Published::new();
        p.files.appears(&p.old(), 1, "000001_0");
        p.metastore
            .alters(&[Alter::Apply, Alter::Lose { applied: false }]);
        let (report, published, _) = p.finish().await;
        assert_eq!(report.outcome.status, Status::Failed);
        assert!(
            reason(&report).contains("outcome is unknown"),
            "{}",
            reason(&report)
        );
        assert!(p.files.exists(&published));
        assert!(p.files.exists(&p.old()));
    }

    #[tokio::test]
    async fn a_journal_that_cannot_be_written_fails_the_run_but_keeps_the_swap() {
        let p = Published::new();
        p.files.fail("write", &run_dirs::work_dir(&p.plan.home));
        let (report, published, _) = p.finish().await;
        assert_eq!(report.outcome.status, Status::Failed);
        let why = reason(&report);
        assert!(why.contains("now points at"), "{why}");
        assert!(why.contains(PARAM_PREVIOUS_LOCATION), "{why}");
        // The partition reads the new files: they stay.
        assert_eq!(p.metastore.location(), published.to_string());
        assert!(p.files.exists(&published));
        assert_eq!(report.new_location, Some(published.to_string()));
    }
}
