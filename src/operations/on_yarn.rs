//! `compact --on-yarn`: the partitions a batch plan chose, and whose unlocked plan finds work,
//! are compacted by the tasks of one map-only YARN job, the way DistCp copies: this host plans
//! and reports, the cluster does the I/O. Each task runs this same binary's `compact` on its
//! share of the work list, with the settings this host resolved in one file shipped beside it,
//! so every partition gets the one protocol with all of its promises and the same settings,
//! wherever it runs.
//!
//! Promises:
//! 1. Every partition of the plan gets exactly one report: the one its task printed, or, when
//!    no attempt of its task finished, `failed`, naming the job and how to read its logs.
//! 2. A task's share travels in its input lines (NLineInputFormat), so a retried attempt redoes
//!    exactly the partitions the failed one had, which the protocol makes safe: a partition
//!    already swapped is nothing to do, a lock a dead attempt left makes it `busy`, and a
//!    killed attempt leaves at most a hidden work directory that `cleanup` removes.
//! 3. Only the output of committed attempts is read (Hadoop's output committer drops the rest),
//!    so a partition is never counted twice.
//! 4. The job's work directory on HDFS is removed when the run ends, whatever happened.
//! 5. [`plan`] has no side effects: it is what `--dry-run` prints, and a dry run submits
//!    nothing.
//! 6. With a Kerberos metastore, the tasks log in with a metastore delegation token the job
//!    carries (no keytab leaves this host), renewed by this host while the job runs and
//!    cancelled when the job ends, whatever happened;
//!    with `--yarn-keytab`, with the keytab instead, readable by the job's user alone and
//!    removed with the work directory.
//! 7. No task starts a partition it might not finish before the job's tokens end for good
//!    (their maximum lifetime): those are reported failed, untouched ([`token_lifetime`]).
//! 8. Unless `--yarn-binary` names a build, the tasks run this program from the cache of
//!    [`binary_cache`] beside the work directories: uploaded only when the cache lacks it.
//! 9. The work list holds only the partitions the same selection run here would compact: those
//!    whose plan without a lock finds work ([`sift`]). The others are reported here as that
//!    plan says, so a task never locks a partition only to find nothing to do, and a selection
//!    with no work submits no job and takes no lock.

use std::path::PathBuf;
use std::time::Instant;

use bytes::Bytes;
use futures::StreamExt;
use serde::Serialize;

use crate::binary_cache::{self, LocalBinary};
use crate::fleet::{Candidate, LISTINGS_IN_FLIGHT};
use crate::hdfs::{Hdfs, Location};
use crate::metastore::meter::Calls;
use crate::metastore::security::token::write_credentials;
use crate::metastore::{DelegationToken, Metastore};
use crate::operations::batch::{BatchPlan, BatchSummary, Observer};
use crate::operations::compact::{compact_partition, CompactOptions, CompactReport, Quiet};
use crate::operations::outcome::Status;
use crate::operations::token_lifetime;
use crate::yarn::{self, Event, StreamingJob};

/// Where the job's files live while it runs, under the work directory.
const WORK_LIST: &str = "partitions.txt";
const OUTPUT: &str = "out";
/// Each task runs the binary under this name in its working directory.
const LINK: &str = "hoc";
/// With `--yarn-keytab`, each task finds the keytab under this name.
pub const KEYTAB_LINK: &str = "keytab";
/// Each task finds the run's settings file under this name.
pub const SETTINGS_LINK: &str = "settings.toml";
/// Status lines every minute keep a task alive however long one partition takes; ten
/// minutes of silence means it hangs.
const TASK_TIMEOUT_MS: u64 = 600_000;
/// Hadoop's default: a partition's task gets three retries.
const MAX_ATTEMPTS: u32 = 4;
/// The heap of the streaming task's own JVM, which only pipes lines to our process.
const TASK_HEAP_MB: u64 = 200;

/// What the CLI resolved for the job.
#[derive(Debug, Clone)]
pub struct YarnOptions {
    /// Map tasks at most (fewer when there are fewer partitions).
    pub tasks: usize,
    pub queue: Option<String>,
    /// The edge node's `mapred` command.
    pub mapred: PathBuf,
    /// The build the tasks run.
    pub binary: TaskBinary,
    /// The run's files go to `<work_dir>/<run-id>`, the cached binaries to
    /// `<work_dir>/binaries`.
    pub work_dir: Location,
    /// The task's command line after the binary: `compact --partitions-from - ...`, naming
    /// [`SETTINGS_LINK`] (the CLI knows the flags; the engine does not).
    pub task_args: Vec<String>,
    /// The run's settings, the file each task reads as [`SETTINGS_LINK`]: shipped in the work
    /// directory, readable by the job's user alone.
    pub task_settings: String,
    pub task_memory_mb: u64,
    /// Each task's container vcores: its `--threads`.
    pub task_vcores: usize,
    /// `--json`'s name for this run, unique per submission.
    pub run_id: String,
    /// A Kerberos metastore: tasks have no ticket, so the job carries a metastore delegation
    /// token, got here and cancelled when the job ends.
    pub metastore_token: Option<TokenFor>,
    /// `--yarn-keytab`: this keytab goes to the tasks instead (uploaded, mode 0600).
    pub keytab: Option<PathBuf>,
    /// `--yarn-token-margin`: tasks start no partition once less than this remains of the
    /// job's tokens; `None`: the default (see [`token_lifetime`]).
    pub token_margin: Option<std::time::Duration>,
    /// Fired by SIGINT or SIGTERM: the job is killed, its work directory removed.
    pub cancel: tokio_util::sync::CancellationToken,
}

/// The build the tasks run.
#[derive(Debug, Clone)]
pub enum TaskBinary {
    /// `--yarn-binary`: a build on HDFS, used as it is.
    Given(Location),
    /// This program, through the cache under the work directory.
    ThisProgram(LocalBinary),
}

/// The binary a job ships: printed in the plan and the report.
#[derive(Debug, Clone, Serialize)]
pub struct ShippedBinary {
    /// The file on HDFS the tasks run.
    pub path: String,
    /// Its content hash (none for `--yarn-binary`).
    pub sha256: Option<String>,
    /// In the plan, what the run will do; in the report, what it did.
    pub action: binary_cache::Action,
}

/// Whom a metastore delegation token is for.
#[derive(Debug, Clone)]
pub struct TokenFor {
    /// The short user name the tasks act as (the client's own).
    pub owner: String,
    /// The Kerberos principal that may renew and cancel it (the client's own).
    pub renewer: String,
}

/// What the job will be: printed by `--dry-run`.
#[derive(Debug, Serialize)]
pub struct YarnPlan {
    pub job_name: String,
    pub tasks: usize,
    pub partitions_per_task: usize,
    pub work_dir: String,
    pub binary: ShippedBinary,
    /// The work list in file order, `db.table/partition` per line.
    pub work_list: Vec<String>,
    /// The `mapred` command line that submits it.
    pub command: Vec<String>,
    /// The settings file each task runs with.
    pub task_settings: String,
    #[serde(skip)]
    job: StreamingJob,
    #[serde(skip)]
    dir: Location,
}

/// What the job did, beside the partitions' reports: `--json` prints it with the summary.
#[derive(Debug, Default, Serialize)]
pub struct YarnReport {
    pub application: Option<String>,
    pub job: Option<String>,
    pub tasks: usize,
    /// The binary the tasks ran; none when the run did not get as far as shipping it.
    pub binary: Option<ShippedBinary>,
    pub succeeded: bool,
    /// Attempts that failed or were killed (each retried while attempts remained).
    pub failed_attempts: Vec<String>,
    /// How to read the tasks' logs.
    pub logs: Option<String>,
    /// Why the job could not be run or its output read, when that happened.
    pub error: Option<String>,
    /// Why no job was submitted although nothing went wrong: no partition had work for it.
    pub no_job: Option<String>,
    pub seconds: f64,
    /// The metastore calls of the committed task attempts (a failed attempt's are not known).
    pub metastore_calls: Calls,
}

/// Narrows the plan's runs to the partitions whose unlocked plan finds work: each is planned as
/// `compact --dry-run` plans it (its listing and its files' tails, with neither a lock nor a
/// write), [`LISTINGS_IN_FLIGHT`] at a time and in the plan's order. The others join the
/// decided partitions with the report that plan gives (nothing to do, or refused, busy,
/// failed), as a run on this host would report them. Only each partition's verdict is kept:
/// what grows with the selection is its names, not its files.
pub async fn sift(
    metastore: &Metastore,
    hdfs: &Hdfs,
    batch: BatchPlan,
    options: &CompactOptions,
) -> BatchPlan {
    let started = Instant::now();
    let dry = CompactOptions {
        dry_run: true,
        ..options.clone()
    };
    let mut batch = batch;
    let runs = std::mem::take(&mut batch.runs);
    let planned = runs.len();
    let mut verdicts = futures::stream::iter(runs)
        .map(|c| {
            let dry = &dry;
            async move {
                if dry.cancel.is_cancelled() {
                    return (c, None);
                }
                let r = compact_partition(
                    metastore,
                    hdfs,
                    &c.table,
                    &c.name,
                    c.partition.as_ref(),
                    dry,
                    &Quiet,
                )
                .await;
                let verdict = (r.outcome.status != Status::DryRun).then(|| without_plan(r));
                (c, verdict)
            }
        })
        .buffered(LISTINGS_IN_FLIGHT);
    let mut runs = Vec::new();
    while let Some((c, verdict)) = verdicts.next().await {
        match verdict {
            Some(r) => batch.decided.push(r),
            None => runs.push(c),
        }
    }
    if options.cancel.is_cancelled() {
        // Interrupted while planning: the job is not submitted at all.
        batch.decided.extend(runs.drain(..).map(|c| {
            CompactReport::not_run(
                &c.table.qualified_name(),
                &c.name,
                Status::Skipped,
                "not started: the run was interrupted".into(),
                None,
            )
        }));
    }
    tracing::info!(
        "planned {planned} partitions here without locks in {:.1} s: {} have work for the job",
        started.elapsed().as_secs_f64(),
        runs.len()
    );
    BatchPlan { runs, ..batch }
}

/// A partition's verdict without the plan behind it: its status, reason and counts stay, the
/// lists of its files go.
fn without_plan(mut r: CompactReport) -> CompactReport {
    r.groups = Vec::new();
    r.carried = Vec::new();
    r.dropped_empty = Vec::new();
    r.layout = None;
    r
}

/// The job for the planned partitions; no side effects.
pub fn plan(batch: &BatchPlan, options: &YarnOptions) -> YarnPlan {
    let keys: Vec<String> = batch.runs.iter().map(Candidate::key).collect();
    let (work_list, partitions_per_task, tasks) = deal(keys, options.tasks.max(1));
    let dir = options.work_dir.child(&options.run_id);
    let (binary, shipped) = match &options.binary {
        TaskBinary::Given(l) => (l.clone(), None),
        TaskBinary::ThisProgram(b) => (b.cached(&options.work_dir), Some(b)),
    };
    let tables = {
        let mut t: Vec<&str> = batch.runs.iter().map(|c| c.table.name.as_str()).collect();
        t.sort_unstable();
        t.dedup();
        t.len()
    };
    let job = StreamingJob {
        name: format!(
            "hive-orc-compactor compact: {} partitions of {tables} tables ({})",
            work_list.len(),
            options.run_id
        ),
        queue: options.queue.clone(),
        input: dir.child(WORK_LIST).to_string(),
        output: dir.child(OUTPUT).to_string(),
        files: [
            format!("{binary}#{LINK}"),
            format!("{}#{SETTINGS_LINK}", dir.child(SETTINGS_LINK)),
        ]
        .into_iter()
        .chain(
            options
                .keytab
                .as_ref()
                .map(|_| format!("{}#{KEYTAB_LINK}", dir.child(KEYTAB_LINK))),
        )
        .collect(),
        mapper: std::iter::once(format!("./{LINK}"))
            .chain(options.task_args.iter().map(|a| quote(a)))
            .collect::<Vec<_>>()
            .join(" "),
        env: task_env(),
        lines_per_task: partitions_per_task,
        task_memory_mb: options.task_memory_mb,
        task_vcores: options.task_vcores,
        task_heap_mb: TASK_HEAP_MB,
        task_timeout_ms: TASK_TIMEOUT_MS,
        max_attempts: MAX_ATTEMPTS,
        credentials: options.metastore_token.as_ref().map(|_| {
            std::env::temp_dir().join(format!("hive-orc-compactor-{}.credentials", options.run_id))
        }),
    };
    let command = std::iter::once(options.mapred.display().to_string())
        .chain(job.args())
        .collect();
    YarnPlan {
        job_name: job.name.clone(),
        tasks,
        partitions_per_task,
        work_dir: dir.to_string(),
        binary: ShippedBinary {
            path: binary.to_string(),
            sha256: shipped.map(|b| b.sha256.clone()),
            // Until the cache is looked at: see [`YarnPlan::look_in_cache`].
            action: match shipped {
                None => binary_cache::Action::Given,
                Some(_) => binary_cache::Action::Upload,
            },
        },
        work_list,
        command,
        task_settings: options.task_settings.clone(),
        job,
        dir,
    }
}

impl YarnPlan {
    /// Whether the run would upload this program or reuse the cached copy (a dry run's
    /// answer); reads only.
    pub async fn look_in_cache(
        &mut self,
        hdfs: &Hdfs,
        options: &YarnOptions,
    ) -> anyhow::Result<()> {
        if let TaskBinary::ThisProgram(b) = &options.binary {
            self.binary.action = binary_cache::look_up(hdfs, b, &options.work_dir).await?;
        }
        Ok(())
    }
}

/// The keys in file order for `tasks` tasks of equal share, and (share, tasks). The plan's
/// order puts the partitions with the most work first; dealing them out in turn gives each
/// task a like mix, its heaviest first, where contiguous shares would give one task all the
/// heavy ones.
fn deal(keys: Vec<String>, tasks: usize) -> (Vec<String>, usize, usize) {
    let n = keys.len();
    if n == 0 {
        return (keys, 0, 0);
    }
    let share = n.div_ceil(tasks.min(n));
    let tasks = n.div_ceil(share);
    let mut shares: Vec<Vec<String>> = (0..tasks).map(|_| Vec::with_capacity(share)).collect();
    let capacity = |t: usize| {
        if t + 1 == tasks {
            n - share * (tasks - 1)
        } else {
            share
        }
    };
    let mut t = 0;
    for key in keys {
        while shares[t].len() == capacity(t) {
            t = (t + 1) % tasks;
        }
        shares[t].push(key);
        t = (t + 1) % tasks;
    }
    (shares.concat(), share, tasks)
}

/// Test builds hand their failure injections (`FAILPOINTS`, see `operations/compact`) on to the
/// tasks, so a test can pause or fail a partition inside a YARN task.
fn task_env() -> Vec<(String, String)> {
    #[cfg(feature = "failpoints")]
    if let Ok(f) = std::env::var("FAILPOINTS") {
        return vec![("FAILPOINTS".into(), f)];
    }
    vec![]
}

/// Hadoop Streaming splits the mapper command at spaces, honouring quotes.
fn quote(arg: &str) -> String {
    let plain = |c: char| c.is_ascii_alphanumeric() || "-_./=:,@%+".contains(c);
    if !arg.is_empty() && arg.chars().all(plain) {
        arg.to_string()
    } else {
        format!("'{}'", arg.replace('\'', "'\\''"))
    }
}

/// Reports the decided partitions, then ships the binary, writes the work list to HDFS,
/// submits the job, follows it, reads the tasks' reports and removes the work directory.
pub async fn execute(
    metastore: &Metastore,
    hdfs: &Hdfs,
    batch: BatchPlan,
    job: YarnPlan,
    options: &YarnOptions,
    observer: &dyn Observer,
    progress: &(dyn Fn(u8) + Sync),
) -> (BatchSummary, YarnReport) {
    let cancel = &options.cancel;
    let started = Instant::now();
    let mut summary = BatchSummary::default();
    let mut report = YarnReport {
        tasks: job.tasks,
        ..YarnReport::default()
    };
    for r in &batch.decided {
        observer.finished(r);
        summary.add(r);
    }
    let mut reports = Vec::new();
    if job.work_list.is_empty() {
        report.no_job = Some(match batch.decided.len() {
            0 => "the selection holds no partition".to_string(),
            n => format!("none of the {n} partitions has work to do"),
        });
    } else {
        match submit(metastore, hdfs, &job, options, progress, &mut report).await {
            Ok(done) => reports = done,
            Err(e) => {
                tracing::error!("{e:#}");
                report.error = Some(format!("{e:#}"));
            }
        }
        if let Err(e) = hdfs.delete(&job.dir, true).await {
            tracing::warn!("could not remove the job's work directory {}: {e}", job.dir);
        }
    }
    let why_missing = match (&report.application, cancel.is_cancelled()) {
        (_, true) => "not finished: the run was interrupted and its YARN job killed".to_string(),
        // The tasks may have compacted it: only their reports are missing.
        (Some(app), _) if report.error.is_some() => format!(
            "the YARN job ran but its reports could not be read ({}): `inspect` the partition \
             and see `yarn logs -applicationId {app}`",
            report.error.as_deref().unwrap_or("")
        ),
        (Some(app), _) => format!(
            "its YARN task did not finish (job {}): see `yarn logs -applicationId {app}`",
            report.job.as_deref().unwrap_or("?")
        ),
        (None, _) => format!(
            "the YARN job did not start ({}); nothing ran on the cluster",
            report.error.as_deref().unwrap_or("")
        ),
    };
    for c in &batch.runs {
        let key = c.key();
        let found = reports.iter().position(|r: &CompactReport| {
            r.outcome.table == c.table.qualified_name() && r.outcome.partition == c.name
        });
        let r = match found {
            Some(i) => reports.swap_remove(i),
            None => CompactReport::not_run(
                &c.table.qualified_name(),
                &c.name,
                if cancel.is_cancelled() {
                    Status::Skipped
                } else {
                    Status::Failed
                },
                why_missing.clone(),
                None,
            ),
        };
        tracing::debug!("{key}: {:?}", r.outcome.status);
        observer.finished(&r);
        summary.add(&r);
    }
    report.logs = report
        .application
        .as_ref()
        .map(|app| format!("yarn logs -applicationId {app}"));
    report.seconds = started.elapsed().as_secs_f64();
    summary.interrupted = cancel.is_cancelled();
    summary.exit_code = summary.exit().code();
    summary.seconds = report.seconds;
    (summary, report)
}

async fn submit(
    metastore: &Metastore,
    hdfs: &Hdfs,
    job: &YarnPlan,
    options: &YarnOptions,
    progress: &(dyn Fn(u8) + Sync),
    report: &mut YarnReport,
) -> anyhow::Result<Vec<CompactReport>> {
    let action = match &options.binary {
        TaskBinary::Given(_) => binary_cache::Action::Given,
        TaskBinary::ThisProgram(b) => {
            binary_cache::ship(hdfs, b, &options.work_dir, &options.run_id).await?
        }
    };
    report.binary = Some(ShippedBinary {
        action,
        ..job.binary.clone()
    });
    let token = match (&options.metastore_token, &job.job.credentials) {
        (Some(t), Some(file)) => Some(ship_token(metastore, t, file).await?),
        _ => None,
    };
    let done = match &token {
        Some(token) => match token_lifetime::check_before_submit(token, options.token_margin) {
            Err(e) => Err(e),
            // The metastore token lives only as long as this host renews it.
            Ok(()) => tokio::select! {
                done = run_job(hdfs, job, options, progress, report) => done,
                () = token_lifetime::keep_renewing(metastore, token, options.token_margin) => {
                    unreachable!("renewal goes on until the job ends")
                }
            },
        },
        None => run_job(hdfs, job, options, progress, report).await,
    };
    if let (Some(token), Some(file)) = (token, &job.job.credentials) {
        // Whatever happened: a token left valid outlives the job that needed it.
        if let Err(e) = metastore.cancel_delegation_token(&token).await {
            tracing::warn!(
                "could not cancel the job's metastore token ({e}); it expires by itself"
            );
        }
        let _ = std::fs::remove_file(file);
    }
    done
}

/// Gets a metastore delegation token and writes it where the job client takes it from.
async fn ship_token(
    metastore: &Metastore,
    t: &TokenFor,
    file: &std::path::Path,
) -> anyhow::Result<DelegationToken> {
    let token = metastore
        .delegation_token(&t.owner, &t.renewer)
        .await
        .map_err(|e| {
            anyhow::anyhow!("getting a metastore delegation token for the job's tasks: {e}")
        })?;
    if let Err(e) = write_credentials(file, std::slice::from_ref(&token)) {
        let _ = metastore.cancel_delegation_token(&token).await;
        return Err(e.into());
    }
    tracing::info!("the job carries metastore token {}", token.describe());
    Ok(token)
}

async fn run_job(
    hdfs: &Hdfs,
    job: &YarnPlan,
    options: &YarnOptions,
    progress: &(dyn Fn(u8) + Sync),
    report: &mut YarnReport,
) -> anyhow::Result<Vec<CompactReport>> {
    hdfs.mkdirs(&job.dir, 0o700).await?;
    let mut list = job.work_list.join("\n");
    list.push('\n');
    write(hdfs, &job.dir.child(WORK_LIST), Bytes::from(list), 0o600).await?;
    let settings = Bytes::from(options.task_settings.clone());
    write(hdfs, &job.dir.child(SETTINGS_LINK), settings, 0o600).await?;
    if let Some(keytab) = &options.keytab {
        upload(hdfs, keytab, &job.dir.child(KEYTAB_LINK), 0o600).await?;
    }
    tracing::info!(
        "submitting {} partitions to YARN in {} tasks: {}",
        job.work_list.len(),
        job.tasks,
        job.command.join(" ")
    );
    let on_event = |e: &Event| match e {
        Event::Submitted { application } => {
            tracing::info!("YARN application {application} submitted")
        }
        Event::Progress(p) => progress(*p),
        Event::AttemptFailed { attempt, status } => {
            tracing::warn!("task attempt {attempt}: {status} (retried while attempts remain)")
        }
        Event::Job { .. } => {}
    };
    let cancel = &options.cancel;
    let end = yarn::run(&options.mapred, &job.job, cancel, &on_event).await?;
    report.application = end.application;
    report.job = end.job;
    report.succeeded = end.succeeded;
    report.failed_attempts.extend(end.failed_attempts);
    if !end.succeeded && !cancel.is_cancelled() {
        tracing::error!(
            "the YARN job failed; its client's last lines:\n{}",
            end.tail.join("\n")
        );
        if report.application.is_none() {
            // Why it was never submitted is the client's last error, if it gave one.
            let why = end
                .tail
                .iter()
                .rev()
                .find(|l| l.contains("ERROR") || l.contains("Exception"))
                .or(end.tail.last())
                .map_or("", String::as_str);
            anyhow::bail!(
                "{} exited before submitting it: {why}",
                options.mapred.display()
            );
        }
    }
    let (reports, calls) = read_reports(hdfs, &job.dir.child(OUTPUT)).await?;
    report.metastore_calls = calls;
    Ok(reports)
}

/// A task's report line, for the metastore calls it carries: the task's so far, so its last
/// line has the task's total.
#[derive(serde::Deserialize)]
struct CallsSoFar {
    metastore_calls: Option<Calls>,
}

/// Every report line of the committed tasks' output files (one file a task), and the tasks'
/// metastore calls.
async fn read_reports(hdfs: &Hdfs, dir: &Location) -> anyhow::Result<(Vec<CompactReport>, Calls)> {
    let Some(listing) = hdfs.list(dir).await? else {
        return Ok((vec![], Calls::default()));
    };
    let mut out = Vec::new();
    let mut calls = Calls::default();
    for f in listing
        .files
        .iter()
        .filter(|f| f.name.starts_with("part-") && f.length > 0)
    {
        let file = dir.child(&f.name);
        let reader = hdfs.open(&file).await?;
        // Within the listed length: hdfs-native panics on reads past the end.
        let bytes = reader
            .read_range(0, f.length as usize)
            .await
            .map_err(|e| anyhow::anyhow!("reading {file}: {e}"))?;
        let text = String::from_utf8_lossy(&bytes);
        // TextOutputFormat writes `key<TAB>value`; our lines are all key.
        let lines = text
            .lines()
            .map(|l| l.trim_end_matches('\t').trim())
            .filter(|l| !l.is_empty());
        for line in lines.clone() {
            match serde_json::from_str::<CompactReport>(line) {
                Ok(r) => out.push(r),
                Err(e) => tracing::warn!("{file}: a line that is not a report ({e}): {line}"),
            }
        }
        if let Some(Ok(CallsSoFar {
            metastore_calls: Some(task),
        })) = lines.clone().next_back().map(serde_json::from_str)
        {
            calls = calls.plus(&task);
        }
    }
    Ok((out, calls))
}

async fn write(hdfs: &Hdfs, file: &Location, bytes: Bytes, permission: u16) -> anyhow::Result<()> {
    let mut w = hdfs.create(file, permission).await?;
    w.write_bytes(bytes)
        .await
        .map_err(|e| anyhow::anyhow!("writing {file}: {e}"))?;
    w.close()
        .await
        .map_err(|e| anyhow::anyhow!("closing {file}: {e}"))?;
    Ok(())
}

/// Copies a local file to HDFS in pieces, so memory does not hold it whole.
async fn upload(
    hdfs: &Hdfs,
    from: &std::path::Path,
    to: &Location,
    permission: u16,
) -> anyhow::Result<()> {
    use tokio::io::AsyncReadExt;
    let mut file = tokio::fs::File::open(from)
        .await
        .map_err(|e| anyhow::anyhow!("opening {}: {e}", from.display()))?;
    let mut w = hdfs.create(to, permission).await?;
    let mut buf = vec![0u8; 4 << 20];
    loop {
        let n = file.read(&mut buf).await?;
        if n == 0 {
            break;
        }
        w.write_bytes(Bytes::copy_from_slice(&buf[..n]))
            .await
            .map_err(|e| anyhow::anyhow!("writing {to}: {e}"))?;
    }
    w.close()
        .await
        .map_err(|e| anyhow::anyhow!("closing {to}: {e}"))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys(n: usize) -> Vec<String> {
        (0..n).map(|i| format!("k{i}")).collect()
    }

    #[test]
    fn shares_are_dealt_heaviest_first_and_fill_every_split() {
        let (list, share, tasks) = deal(keys(10), 4);
        assert_eq!((share, tasks), (3, 4));
        // Splits of `share` lines, in file order: each task's first line is among the heaviest.
        let splits: Vec<&[String]> = list.chunks(share).collect();
        assert_eq!(splits.len(), 4);
        let firsts: Vec<&str> = splits.iter().map(|s| s[0].as_str()).collect();
        assert_eq!(firsts, ["k0", "k1", "k2", "k3"]);
        let mut all = list.clone();
        all.sort();
        let mut want = keys(10);
        want.sort();
        assert_eq!(all, want);
        assert_eq!(deal(keys(3), 8), (keys(3), 1, 3));
        assert_eq!(deal(vec![], 4), (vec![], 0, 0));
        let (list, share, tasks) = deal(keys(40), 4);
        assert_eq!((share, tasks, list.len()), (10, 4, 40));
    }

    #[test]
    fn mapper_arguments_survive_streaming_splitting() {
        assert_eq!(quote("--target-size"), "--target-size");
        assert_eq!(
            quote("thrift://h:9083,thrift://g:9083"),
            "thrift://h:9083,thrift://g:9083"
        );
        assert_eq!(quote("a b"), "'a b'");
        assert_eq!(quote(""), "''");
    }
}
