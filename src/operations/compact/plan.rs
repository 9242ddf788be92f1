//! Steps 1 to 3 of the protocol and the merge plan: resolve and refuse, snapshot the files and
//! their tails, group them by merge key and plan the outputs. No side effects, no lock: a
//! partition with nothing to do costs no lock, and one with work is locked by its batch, listed
//! again under the lock and planned again only if a writer changed it meanwhile
//! ([`super::batch`]). The plan is data: what `--dry-run` prints is made from it
//! ([`super::record`]).

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::anyhow;
use futures::StreamExt;

use super::options::{CompactOptions, Layout, Stripes};
use super::report::{CarryReason, CompactReport};
use super::write::{choose, OutputWriter, Way, NOT_RE_ENCODABLE};
use crate::eligibility::{self, Refusal, Rule};
use crate::hdfs::{Hdfs, Location};
use crate::lock::LockError;
use crate::metastore::Metastore;
use crate::operations::file_copy::copy_stop;
use crate::operations::outcome::Stop;
use crate::orc::{
    self, group_tails, plan_group, schema_groups, GroupPlan, Grouping, MergeKey, OrcTail,
    OutputPlan, OutputShape, PlanOptions,
};
use crate::partition_spec::PartitionSpec;
use crate::resolve;
use crate::run_dirs;
use crate::snapshot::{DataFile, Reads, Snapshot, SnapshotError};
use crate::table::{PartitionInfo, TableInfo};

/// The resolved partition and everything the plan is made of.
pub(super) struct PartitionPlan {
    pub table: TableInfo,
    pub spec: PartitionSpec,
    /// Where the partition's files are now.
    pub location: Location,
    /// The partition's own directory, where the run keeps its things (see [`layout`]).
    pub home: Location,
    pub snapshot: Snapshot,
    /// The merge groups planned, each with the outputs whose `group` is its index.
    pub groups: Vec<PlannedGroup>,
    pub outputs: Vec<PlannedOutput>,
    /// Indices into `snapshot.files` of the files carried unchanged, and why.
    pub carried: Vec<(usize, CarryReason)>,
    /// Indices into `snapshot.files` of the zero-length files.
    pub dropped_empty: Vec<usize>,
    /// Indices into `snapshot.files` of files that have a tail, in the order the planner saw.
    pub with_tail: Vec<usize>,
    /// The layout the outputs are asked to have, if any.
    pub layout: Option<Layout>,
}

/// Files planned together, in one way, into one or more outputs.
pub(super) struct PlannedGroup {
    /// The ORC schema the files share.
    pub schema: String,
    /// How its outputs are encoded (a copy keeps the inputs' encoding, which this is).
    pub shape: OutputShape,
    /// Indices into `with_tail`, in listing order.
    pub files: Vec<usize>,
}

/// One output: its inputs and stripes (indices into `with_tail`), and the way it is made.
pub(super) struct PlannedOutput {
    pub plan: OutputPlan,
    pub way: Way,
    /// The codec, block size and row index stride a re-encode writes.
    pub shape: OutputShape,
    /// Which planned group the output belongs to: a group put in an order is written as one
    /// sorted stream cut into its outputs.
    pub group: usize,
}

impl PartitionPlan {
    /// The input files of `output`, in output order.
    pub fn inputs_of(&self, output: &PlannedOutput) -> Vec<&DataFile> {
        output
            .plan
            .inputs
            .iter()
            .map(|&f| &self.snapshot.files[self.with_tail[f]])
            .collect()
    }

    /// The files carried unchanged.
    pub fn carried_files(&self) -> impl Iterator<Item = &DataFile> {
        self.carried.iter().map(|(i, _)| &self.snapshot.files[*i])
    }

    /// Bytes the run writes: every planned output and every carried file.
    pub fn bytes_to_write(&self) -> u64 {
        self.outputs
            .iter()
            .map(|o| o.plan.content_length)
            .sum::<u64>()
            + self.carried_files().map(|f| f.length).sum::<u64>()
    }
}

/// The partition to plan: named by a spec, or as the caller already read it from the metastore.
pub(super) enum Which<'a> {
    Spec(&'a str),
    Read(&'a PartitionInfo),
}

/// The partition as step 1 found it.
struct Resolved {
    spec: PartitionSpec,
    location: Location,
    home: Location,
}

/// Resolves, checks and plans one partition (with no outputs when there is nothing to do).
pub(super) async fn plan(
    metastore: &Metastore,
    hdfs: &Hdfs,
    table: &TableInfo,
    partition: Which<'_>,
    options: &CompactOptions,
    report: &mut CompactReport,
) -> Result<PartitionPlan, Stop> {
    let found = resolve(metastore, table, partition, report).await?;
    let started = Instant::now();
    let snapshot = take_snapshot(hdfs, &found.location, !options.dry_run).await?;
    tracing::debug!(
        files = snapshot.files.len(),
        seconds = started.elapsed().as_secs_f64(),
        "listed and read every tail"
    );
    check_no_write_in_progress(&snapshot, options.write_in_progress_age, SystemTime::now())?;
    check_one_mode(&snapshot)?;
    check_order_columns(&snapshot, options.layout_for(&table.qualified_name()))?;
    if options.dry_run {
        check_one_acl(hdfs, &snapshot).await?;
    }
    report.record_snapshot(&snapshot);
    let unfit = unfit_for_re_encoding(hdfs, &snapshot, options).await?;
    let calendar_free = calendar_free_files(hdfs, &snapshot, options).await?;
    Ok(group_and_plan(
        table,
        found,
        snapshot,
        options,
        &unfit,
        &calendar_free,
    ))
}

/// Per key column of the plan's layout, the mean fraction of the partition's stripes a point
/// lookup reads before the run, from the files' stripe statistics.
pub(super) async fn stripe_lookups(
    hdfs: &Hdfs,
    plan: &PartitionPlan,
    layout: &Layout,
) -> Result<BTreeMap<String, f64>, Stop> {
    let columns = layout
        .order
        .as_ref()
        .map(|o| o.columns())
        .unwrap_or_default();
    plan.snapshot
        .stripe_lookup_fractions(hdfs, &columns)
        .await
        .map_err(|e| {
            copy_stop(
                &format!("reading the statistics in {}", plan.snapshot.dir),
                e,
            )
        })
}

/// Step 1: resolve the partition (unless the caller already read it), and refuse what the tool
/// must not touch.
async fn resolve(
    metastore: &Metastore,
    table: &TableInfo,
    partition: Which<'_>,
    report: &mut CompactReport,
) -> Result<Resolved, Stop> {
    eligibility::check_table(table).map_err(Stop::Refused)?;
    let (spec, partition) = match partition {
        Which::Read(p) => (
            PartitionSpec::from_values(&table.partition_keys, &p.values),
            p.clone(),
        ),
        Which::Spec(spec) => match resolve::partition(metastore, table, spec).await {
            Ok(found) => found,
            Err(resolve::ResolveError::Refused(r)) => return Err(Stop::Refused(r)),
            Err(resolve::ResolveError::Other(e)) => return Err(Stop::Failed(e)),
        },
    };
    report.outcome.partition = spec.name();
    eligibility::check_partition(&partition.storage).map_err(Stop::Refused)?;
    let location = partition.storage.location.as_deref().ok_or_else(|| {
        Stop::Refused(Refusal::new(Rule::NotHdfs, "the partition has no location"))
    })?;
    report.old_location = Some(location.to_string());
    let location = Location::parse(location)
        .map_err(|e| Stop::Refused(Refusal::new(Rule::NotHdfs, e.to_string())))?;
    let home = run_dirs::home_of(table, &spec, &location);
    Ok(Resolved {
        spec,
        location,
        home,
    })
}

/// Busy when a zero-length data file is younger than `age`: it is probably a file being
/// written, and compacting without it would leave its rows, once written, in the old directory,
/// where no query looks after the swap.
fn check_no_write_in_progress(
    snapshot: &Snapshot,
    age: Duration,
    now: SystemTime,
) -> Result<(), Stop> {
    let now_ms = now
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
    let writing = |f: &&DataFile| is_write_in_progress(f.length, f.modification_time, age, now_ms);
    match snapshot.files.iter().find(writing) {
        Some(f) => Err(Stop::Busy(format!(
            "{} is empty and was modified {}s ago, less than {}s: a writer is probably still \
             writing it; retry once it is closed (a truly empty file is compacted once it is \
             older; --min-age sets how old)",
            f.location(),
            now_ms.saturating_sub(f.modification_time) / 1000,
            age.as_secs()
        ))),
        None => Ok(()),
    }
}

/// Whether a file of `length` bytes last modified at `modified` (ms since the epoch) is taken
/// for one being written at `now_ms`.
fn is_write_in_progress(length: u64, modified: u64, age: Duration, now_ms: u64) -> bool {
    length == 0 && u128::from(now_ms.saturating_sub(modified)) < age.as_millis()
}

/// Refuses a partition whose data files differ in who may read them: owner, group or
/// permission bits (from the listing; their ACLs are [`check_one_acl`]'s). One output gets one
/// access, so merging them (or copying them with the first file's access) would change who may
/// read some rows. Zero-length files hold no rows and are left out.
fn check_one_mode(snapshot: &Snapshot) -> Result<(), Stop> {
    let mut files = snapshot.files.iter().filter(|f| f.length > 0);
    let Some(first) = files.next() else {
        return Ok(());
    };
    fn bits(f: &DataFile) -> (&str, &str, u16) {
        (&f.owner, &f.group, f.permission)
    }
    match files.find(|other| bits(other) != bits(first)) {
        Some(other) => Err(mixed(
            format!(
                "{} ({}:{} {:o}) and {} ({}:{} {:o})",
                first.location(),
                first.owner,
                first.group,
                first.permission,
                other.location(),
                other.owner,
                other.group,
                other.permission
            ),
            "one owner, group and mode (hdfs dfs -chown/-chmod)",
        )),
        None => Ok(()),
    }
}

/// The layout's key columns must be in every file: found here, a missing one (a typo, or a
/// column added after some files were written) stops `--dry-run` too, not the write after other
/// groups were staged.
fn check_order_columns(snapshot: &Snapshot, layout: Option<&Layout>) -> Result<(), Stop> {
    let Some(order) = layout.and_then(|l| l.order.as_ref()) else {
        return Ok(());
    };
    for file in &snapshot.files {
        let Some(tail) = &file.tail else { continue };
        if let Some(column) = order
            .columns()
            .into_iter()
            .find(|c| orc::column_id(tail, c).is_none())
        {
            return Err(Stop::Failed(anyhow!(
                "{} has no column {column} to put the rows in {order}: name a column every \
                 file has (--sort-by/--zorder, or the table's sort_by/zorder in the config \
                 file), or compact this partition without them",
                file.location()
            )));
        }
    }
    Ok(())
}

/// [`check_one_mode`] for the ACL entries, which take one NameNode call per file: a Hadoop 3
/// listing marks files with an ACL only in a flag hdfs-native does not pass on. A dry run
/// calls it while planning; a run calls it while it stages (see [`super::run`]), so a
/// partition of mixed ACLs is refused after its outputs were written to the staging directory,
/// which the refusal removes.
pub(super) async fn check_one_acl(hdfs: &Hdfs, snapshot: &Snapshot) -> Result<(), Stop> {
    let difference = snapshot.acl_difference(hdfs).await.map_err(snapshot_stop)?;
    match difference {
        Some(d) => Err(mixed(
            format!(
                "{} ({} ACL entries) and {} ({} ACL entries)",
                d.first.location(),
                d.first_entries,
                d.other.location(),
                d.other_entries
            ),
            "one ACL (hdfs dfs -setfacl)",
        )),
        None => Ok(()),
    }
}

/// The refusal of two files (`which`) that may be read by different people; `give` is what
/// would make them alike.
fn mixed(which: String, give: &str) -> Stop {
    Stop::Refused(Refusal::new(
        Rule::MixedPermissions,
        format!(
            "{which} may be read by different people; merging them would change who can read \
             their rows: give the files {give} if that is intended, or leave the partition as is"
        ),
    ))
}

/// What a lock error means for the run: someone else (or a lost lock) is busy. One error may
/// stop every partition of a batch, so it is read, not taken.
pub(super) fn lock_stop(e: &LockError) -> Stop {
    match e {
        LockError::Busy { .. } | LockError::Lost(_) | LockError::Unanswered { .. } => {
            Stop::Busy(e.to_string())
        }
        LockError::Interrupted => Stop::Interrupted,
        LockError::Unsupported(_) | LockError::Failed(_) => Stop::Failed(anyhow!("{e}")),
    }
}

/// Steps 2 and 3: snapshot the files, read every tail, and keep what the copy will read when
/// it will (`to_read`: not on a dry run).
async fn take_snapshot(hdfs: &Hdfs, location: &Location, to_read: bool) -> Result<Snapshot, Stop> {
    let reads = Reads { sources: to_read };
    let snapshot = Snapshot::take_with(hdfs, location, reads).await;
    snapshot.map_err(snapshot_stop)
}

/// What a snapshot error means for the run.
fn snapshot_stop(e: SnapshotError) -> Stop {
    match e.refusal() {
        Some(r) => Stop::Refused(r),
        None => match e {
            SnapshotError::Missing(_) => Stop::Failed(anyhow!(
                "{e}: the metastore points at a directory that is gone; fix the partition's \
                 location (ALTER TABLE ... PARTITION ... SET LOCATION)"
            )),
            other => Stop::Failed(other.into()),
        },
    }
}

/// Under `--stripes auto`, the files of tiny stripes (a mean under `--min-stripe-size`) from
/// writers other than ORC Java whose stored values a re-encode would refuse (see [`orc::check_stored`]), by index into
/// `snapshot.files`, with the reason: their groups are planned as copies, so the dry run (and
/// `analyze --deep`) says so and the run does not try. Values the decoder turns out unable to
/// read while re-encoding are copied then, with the reason.
async fn unfit_for_re_encoding(
    hdfs: &Hdfs,
    snapshot: &Snapshot,
    options: &CompactOptions,
) -> Result<BTreeMap<usize, String>, Stop> {
    /// Files looked at concurrently: each is a stripe footer and a stream or two per stripe.
    const AT_ONCE: usize = 16;
    if options.stripes != Stripes::Auto {
        return Ok(BTreeMap::new());
    }
    // ORC Java never writes nanoseconds out of range (its own reader refuses them), and our
    // outputs say ORC Java too: tables written by Hive and Spark cost no read here.
    const ORC_JAVA: u32 = 0;
    let tiny = |t: &OrcTail| {
        let bytes: u64 = t.stripes.iter().map(|s| s.length()).sum();
        !t.stripes.is_empty() && bytes / (t.stripes.len() as u64) < options.min_stripe_size
    };
    let looked_at = |t: &OrcTail| t.writer != ORC_JAVA && tiny(t);
    let checks = snapshot.files.iter().enumerate().filter_map(|(i, f)| {
        let tail = f.tail.as_ref().filter(|t| looked_at(t))?;
        Some(async move { (i, orc::check_stored(f.peek(hdfs), tail).await) })
    });
    let checked: Vec<_> = futures::stream::iter(checks)
        .buffer_unordered(AT_ONCE)
        .collect()
        .await;
    let mut unfit = BTreeMap::new();
    for (i, checked) in checked {
        let file = &snapshot.files[i];
        match checked {
            Ok(()) => {}
            Err(orc::OrcError::Decode(why) | orc::OrcError::Corrupt(why)) => {
                unfit.insert(i, format!("{} {NOT_RE_ENCODABLE} ({why})", file.name));
            }
            Err(e) => return Err(copy_stop(&format!("reading {}", file.location()), e)),
        }
    }
    Ok(unfit)
}

/// The files (by index into `snapshot.files`) whose calendar does not matter for a re-encode
/// ([`orc::calendar_free`]): all of them when no two files of one schema differ in calendar
/// (nothing to decide, nothing read), else those whose statistics say so (one tail read each;
/// files of ORC Java, hybrid Julian-Gregorian, and ORC C++, proleptic, differ only there).
async fn calendar_free_files(
    hdfs: &Hdfs,
    snapshot: &Snapshot,
    options: &CompactOptions,
) -> Result<BTreeSet<usize>, Stop> {
    /// Files looked at concurrently.
    const AT_ONCE: usize = 16;
    let tails: Vec<(usize, &OrcTail)> = snapshot
        .files
        .iter()
        .enumerate()
        .filter_map(|(i, f)| Some((i, f.tail.as_ref()?)))
        .collect();
    // Distinct keys: a partition has a handful, whatever its files.
    let keys: std::collections::HashSet<MergeKey> = tails
        .iter()
        .filter_map(|(_, t)| orc::merge_key(t).ok())
        .collect();
    let differ = keys
        .iter()
        .any(|a| keys.iter().any(|b| a.calendars_differ(b)));
    if options.stripes == Stripes::Copy || !differ {
        return Ok(tails.iter().map(|(i, _)| *i).collect());
    }
    let checks = tails.iter().map(|&(i, tail)| async move {
        let file = &snapshot.files[i];
        let reader = file.peek(hdfs).await?;
        let stats = orc::read_statistics_again(&reader, tail, false).await?;
        Ok::<_, orc::OrcError>((i, orc::calendar_free(tail, &stats.file)))
    });
    let checked: Vec<_> = futures::stream::iter(checks)
        .buffer_unordered(AT_ONCE)
        .collect()
        .await;
    let mut free = BTreeSet::new();
    for checked in checked {
        let (i, is_free) = checked
            .map_err(|e| copy_stop(&format!("reading the statistics in {}", snapshot.dir), e))?;
        if is_free {
            free.insert(i);
        }
    }
    Ok(free)
}

/// Groups the files by merge key and plans each group's outputs, those with `unfit` files
/// (by index into the snapshot's files) as copies; every other file is carried, with why.
fn group_and_plan(
    table: &TableInfo,
    found: Resolved,
    snapshot: Snapshot,
    options: &CompactOptions,
    unfit: &BTreeMap<usize, String>,
    calendar_free: &BTreeSet<usize>,
) -> PartitionPlan {
    let files = &snapshot.files;
    let (with_tail, dropped_empty): (Vec<usize>, Vec<usize>) =
        (0..files.len()).partition(|&i| files[i].tail.is_some());
    let tails: Vec<&OrcTail> = with_tail
        .iter()
        .filter_map(|&i| files[i].tail.as_ref())
        .collect();
    let layout = options.layout_for(&table.qualified_name()).cloned();
    let planner = Planner {
        // By index into `tails`, as the planner counts.
        unfit: with_tail
            .iter()
            .enumerate()
            .filter_map(|(t, i)| unfit.get(i).map(|why| (t, why.as_str())))
            .collect(),
        grouping: group_tails(&tails),
        tails,
        options,
        layout: layout.as_ref(),
        // A layout is for every file: large ones and lone ones are rewritten too.
        plan_options: PlanOptions {
            target_size: options.target_size,
            large_file_fraction: match layout {
                Some(_) => f64::INFINITY,
                None => options.large_file_fraction,
            },
            alone_too: layout.is_some(),
        },
    };
    let grouping = &planner.grouping;
    let mut carried: Vec<(usize, CarryReason)> = grouping
        .unmergeable
        .iter()
        .map(|u| {
            (
                with_tail[u.file],
                CarryReason::Unmergeable(u.reason.clone()),
            )
        })
        .collect();
    let clusters: Vec<Vec<usize>> = match options.stripes {
        Stripes::Copy => (0..grouping.groups.len()).map(|g| vec![g]).collect(),
        Stripes::Auto | Stripes::Rewrite => schema_groups(grouping, &planner.tails, &|t| {
            calendar_free.contains(&with_tail[t])
        }),
    };
    let (mut groups, mut outputs) = (Vec::new(), Vec::new());
    for cluster in clusters {
        if let Some(marker) = planner.laid_out(&cluster) {
            let files = cluster.iter().flat_map(|&g| &grouping.groups[g].files);
            carried.extend(files.map(|&f| (with_tail[f], CarryReason::LaidOut(marker.clone()))));
            continue;
        }
        for p in planner.plan_cluster(&cluster) {
            let left = p.plan.left_alone.iter();
            carried.extend(
                left.map(|l| (with_tail[l.file], CarryReason::LeftAlone(l.reason.clone()))),
            );
            let group = groups.len();
            outputs.extend(p.plan.outputs.into_iter().map(|plan| PlannedOutput {
                plan,
                way: p.way.clone(),
                shape: p.shape,
                group,
            }));
            groups.push(PlannedGroup {
                schema: p.schema,
                shape: p.shape,
                files: p.files,
            });
        }
    }
    carried.sort_by_key(|(i, _)| *i);
    PartitionPlan {
        table: table.clone(),
        spec: found.spec,
        location: found.location,
        home: found.home,
        snapshot,
        groups,
        outputs,
        carried,
        dropped_empty,
        with_tail,
        layout,
    }
}

/// What planning the merge groups of one partition reads: its files' tails and merge groups,
/// which are unfit for re-encoding, and how outputs are to be cut and made.
struct Planner<'a> {
    tails: Vec<&'a OrcTail>,
    grouping: Grouping,
    /// By index into `tails`: why the file cannot be re-encoded.
    unfit: BTreeMap<usize, &'a str>,
    options: &'a CompactOptions,
    layout: Option<&'a Layout>,
    plan_options: PlanOptions,
}

/// Files planned together: their outputs, the way those are made, and how a re-encode encodes
/// them.
struct Members {
    /// Indices into the planner's tails, in listing order.
    files: Vec<usize>,
    schema: String,
    plan: GroupPlan,
    way: Way,
    shape: OutputShape,
}

impl Planner<'_> {
    /// The layout's marker when every file of the `cluster` of merge groups has it already:
    /// they are carried as they are.
    fn laid_out(&self, cluster: &[usize]) -> Option<String> {
        let marker = self.layout?.marker();
        let mut files = cluster.iter().flat_map(|&g| &self.grouping.groups[g].files);
        files
            .all(|&f| orc::layout_of(self.tails[f]) == Some(marker.as_str()))
            .then_some(marker)
    }

    /// Plans a `cluster` of merge groups of one schema: as one when they are re-encoded; a way
    /// that turns out to be a copy plans them merge key by merge key, as a copy needs.
    fn plan_cluster(&self, cluster: &[usize]) -> Vec<Members> {
        let groups = &self.grouping.groups;
        if cluster.len() > 1 {
            let mut members: Vec<usize> = cluster
                .iter()
                .flat_map(|&g| groups[g].files.iter().copied())
                .collect();
            members.sort_unstable();
            let together = self.plan_members(members, cluster.len(), &groups[cluster[0]].key);
            if together.way.writer == OutputWriter::Rewrite {
                return vec![together];
            }
        }
        cluster
            .iter()
            .map(|&g| self.plan_members(groups[g].files.clone(), 1, &groups[g].key))
            .collect()
    }

    /// Plans `files` (of `keys` merge keys, all of `key`'s schema) into outputs and chooses
    /// their way by the policy (see [`choose`]), a copy where a file is unfit for re-encoding.
    /// Files of several keys can only be re-encoded together; the reason says so.
    fn plan_members(&self, files: Vec<usize>, keys: usize, key: &MergeKey) -> Members {
        let tails = &self.tails;
        let plan = plan_group(&files, tails, &self.plan_options);
        let merged = plan.outputs.iter().flat_map(|o| &o.stripes);
        let mut way = match self.layout {
            Some(layout) => Way {
                writer: OutputWriter::Rewrite,
                why: format!("laid out as {}", layout.marker()),
            },
            None => choose(
                self.options,
                merged.clone().count(),
                merged.map(|s| s.length).sum(),
            ),
        };
        if way.writer == OutputWriter::Rewrite {
            if let Some(why) = files.iter().find_map(|f| self.unfit.get(f)) {
                way = Way {
                    writer: OutputWriter::StripeCopy,
                    why: format!("{}, but copied: {why}", way.why),
                };
            }
        }
        let inputs = plan.outputs.iter().flat_map(|o| &o.inputs);
        let mut shape = OutputShape::dominant(inputs.map(|&f| tails[f]))
            .unwrap_or_else(|| OutputShape::of(tails[files[0]]));
        if let Some(codec) = self.layout.and_then(|l| l.codec) {
            shape = shape.with_codec(codec);
        }
        if keys > 1 {
            way.why = format!(
                "{}; merges files of {keys} codecs, block sizes, writers or strides that a stripe \
                 copy keeps apart, re-encoded as the most bytes are ({shape})",
                way.why
            );
        }
        Members {
            files,
            schema: key.schema.clone(),
            plan,
            way,
            shape,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lock_held_elsewhere_or_lost_makes_the_run_busy() {
        let busy = LockError::Busy {
            holder: None,
            waited: Duration::from_secs(60),
        };
        assert!(matches!(lock_stop(&busy), Stop::Busy(_)));
        assert!(matches!(
            lock_stop(&LockError::Lost("timed out".into())),
            Stop::Busy(_)
        ));
        let unanswered = LockError::Unanswered {
            call: crate::metastore::MetastoreError::Timeout {
                uri: "thrift://a:9083".into(),
                method: "lock",
                after: Duration::from_secs(120),
                outcome_unknown: true,
            },
            settled: "the metastore holds no lock from that call".into(),
        };
        assert!(matches!(lock_stop(&unanswered), Stop::Busy(_)));
        assert!(matches!(
            lock_stop(&LockError::Interrupted),
            Stop::Interrupted
        ));
        assert!(matches!(
            lock_stop(&LockError::Failed("x".into())),
            Stop::Failed(_)
        ));
    }

    #[test]
    fn only_young_empty_files_are_writes_in_progress() {
        let age = Duration::from_secs(600);
        let now = 1_000_000_000;
        assert!(is_write_in_progress(0, now, age, now));
        assert!(is_write_in_progress(0, now - 599_999, age, now));
        assert!(!is_write_in_progress(0, now - 600_000, age, now));
        assert!(!is_write_in_progress(1, now, age, now), "not empty");
        // A clock behind the NameNode's: the file counts as just written.
        assert!(is_write_in_progress(0, now + 5_000, age, now));
        // --min-age 0: nothing counts as being written.
        assert!(!is_write_in_progress(0, now, Duration::ZERO, now));
    }
}
