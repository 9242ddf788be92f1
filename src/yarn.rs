//! The edge node's Hadoop client, as DistCp uses it: a map-only Hadoop Streaming job submitted
//! with the site's own `mapred` command, so the job gets the site's configuration, queues,
//! delegation tokens and log aggregation without this tool speaking YARN's protocols. Knows
//! nothing of compaction: a job is a work list, a command each task runs, and settings.

use std::path::{Path, PathBuf};
use std::process::Stdio;

use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::Command;

/// Hadoop's own input format that gives each map task a fixed number of the input's lines, so
/// a retried attempt redoes exactly the lines the failed one had.
const N_LINE_INPUT_FORMAT: &str = "org.apache.hadoop.mapred.lib.NLineInputFormat";

/// The edge node's `mapred` command: `$HADOOP_HOME/bin/mapred`, else `mapred` on `PATH`.
pub fn default_mapred() -> PathBuf {
    std::env::var_os("HADOOP_HOME")
        .map(|home| Path::new(&home).join("bin").join("mapred"))
        .filter(|p| p.is_file())
        .unwrap_or_else(|| PathBuf::from("mapred"))
}

/// A map-only streaming job.
#[derive(Debug, Clone)]
pub struct StreamingJob {
    /// What `mapred job -list` and the ResourceManager's UI show.
    pub name: String,
    pub queue: Option<String>,
    /// The work list on HDFS, one unit of work per line.
    pub input: String,
    /// A directory on HDFS that must not exist yet: the tasks' standard output, one file each.
    pub output: String,
    /// `-files` entries, `hdfs://...#link` for a file each task finds as `./link`.
    pub files: Vec<String>,
    /// The command each task runs, its lines on standard input.
    pub mapper: String,
    /// Environment of each task.
    pub env: Vec<(String, String)>,
    pub lines_per_task: usize,
    /// YARN memory of each task's container, and the heap of the task's own JVM inside it.
    pub task_memory_mb: u64,
    pub task_heap_mb: u64,
    /// YARN vcores of each task's container.
    pub task_vcores: usize,
    /// A task that prints nothing for this long is killed (status lines count).
    pub task_timeout_ms: u64,
    /// Attempts per task before the job fails.
    pub max_attempts: u32,
    /// A local Hadoop credentials file whose tokens the job carries to its tasks
    /// (`mapreduce.job.credentials.binary`; the client adds its HDFS tokens itself).
    pub credentials: Option<PathBuf>,
}

impl StreamingJob {
    /// `mapred streaming` arguments: generic options first, as Hadoop requires.
    pub fn args(&self) -> Vec<String> {
        let mut args = vec!["streaming".to_string()];
        let mut define = |k: &str, v: String| {
            args.push("-D".into());
            args.push(format!("{k}={v}"));
        };
        define("mapreduce.job.name", self.name.clone());
        define("mapreduce.job.reduces", "0".into());
        // A second attempt racing the first would run the same partitions twice at once.
        define("mapreduce.map.speculative", "false".into());
        define("mapreduce.map.maxattempts", self.max_attempts.to_string());
        define(
            "mapreduce.input.lineinputformat.linespermap",
            self.lines_per_task.to_string(),
        );
        // Without it the task reads `offset<TAB>line`.
        define("stream.map.input.ignoreKey", "true".into());
        define("mapreduce.map.memory.mb", self.task_memory_mb.to_string());
        define("mapreduce.map.cpu.vcores", self.task_vcores.to_string());
        define(
            "mapreduce.map.java.opts",
            format!("-Xmx{}m", self.task_heap_mb),
        );
        define("mapreduce.task.timeout", self.task_timeout_ms.to_string());
        if let Some(q) = &self.queue {
            define("mapreduce.job.queuename", q.clone());
        }
        if let Some(c) = &self.credentials {
            define("mapreduce.job.credentials.binary", c.display().to_string());
        }
        if !self.files.is_empty() {
            args.push("-files".into());
            args.push(self.files.join(","));
        }
        for (flag, value) in [
            ("-inputformat", N_LINE_INPUT_FORMAT),
            ("-input", &self.input),
            ("-output", &self.output),
            ("-mapper", &self.mapper),
        ] {
            args.push(flag.into());
            args.push(value.to_string());
        }
        for (k, v) in &self.env {
            args.push("-cmdenv".into());
            args.push(format!("{k}={v}"));
        }
        args
    }
}

/// What the job client says while the job runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    /// YARN accepted the job.
    Submitted {
        application: String,
    },
    Job {
        id: String,
    },
    /// The map phase's progress, in percent.
    Progress(u8),
    /// An attempt failed or was killed; the task may be retried.
    AttemptFailed {
        attempt: String,
        status: String,
    },
}

/// One line of `mapred streaming`'s standard error, read as an event where it is one. The
/// lines come from Hadoop's `Job` and `YarnClientImpl` logs, e.g.
/// `... INFO impl.YarnClientImpl: Submitted application application_1_0001`,
/// `... INFO mapreduce.Job:  map 50% reduce 0%`,
/// `... INFO mapreduce.Job: Task Id : attempt_1_0001_m_000001_0, Status : FAILED`.
pub fn event(line: &str) -> Option<Event> {
    let word_after = |marker: &str| {
        let rest = &line[line.find(marker)? + marker.len()..];
        rest.split_whitespace()
            .next()
            .map(|w| w.trim_end_matches(',').to_string())
    };
    if line.contains("Submitted application") {
        return word_after("Submitted application")
            .map(|application| Event::Submitted { application });
    }
    if line.contains("Running job:") {
        return word_after("Running job:").map(|id| Event::Job { id });
    }
    if let Some(attempt) = word_after("Task Id :") {
        let status = word_after("Status :").unwrap_or_default();
        return Some(Event::AttemptFailed { attempt, status });
    }
    let pct = word_after(" map ")?;
    pct.strip_suffix('%')?.parse().ok().map(Event::Progress)
}

/// Whether a job client line says the job reached its final state (Hadoop's `Job` logs
/// `Job job_... completed successfully` or `Job job_... failed with state FAILED due to: ...`):
/// then nothing of it runs on the cluster any more.
fn job_ended(line: &str) -> bool {
    line.contains("mapreduce.Job: Job job_")
        && (line.contains(" completed successfully") || line.contains(" failed with state "))
}

/// How the job ended, as far as its client says.
#[derive(Debug, Default)]
pub struct JobEnd {
    pub succeeded: bool,
    pub application: Option<String>,
    pub job: Option<String>,
    pub failed_attempts: Vec<String>,
    /// The client's last lines of standard error: why it failed, when it did.
    pub tail: Vec<String>,
}

/// Runs the job and waits for it, handing each event to `on_event`. Cancelling `cancel` kills
/// the job on the cluster (`mapred job -kill`) before returning.
pub async fn run(
    mapred: &Path,
    job: &StreamingJob,
    cancel: &tokio_util::sync::CancellationToken,
    on_event: &(dyn Fn(&Event) + Sync),
) -> anyhow::Result<JobEnd> {
    let mut child = Command::new(mapred)
        .args(job.args())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| {
            anyhow::anyhow!(
                "cannot run {}: {e}: install a Hadoop client on this host, or name its mapred \
                 command with --hadoop-cmd",
                mapred.display()
            )
        })?;
    let stderr = child.stderr.take().expect("piped");
    let stdout = child.stdout.take().expect("piped");
    let mut end = JobEnd::default();
    let mut lines = BufReader::new(stderr).lines();
    let mut out_lines = BufReader::new(stdout).lines();
    let mut out_open = true;
    let mut ended = false;
    loop {
        tokio::select! {
            line = lines.next_line() => {
                let Some(line) = line? else { break };
                tracing::debug!(target: "hive_orc_compactor::yarn", "{line}");
                ended |= job_ended(&line);
                if let Some(e) = event(&line) {
                    match &e {
                        Event::Submitted { application } => end.application = Some(application.clone()),
                        Event::Job { id } => end.job = Some(id.clone()),
                        Event::AttemptFailed { attempt, status } => {
                            end.failed_attempts.push(format!("{attempt} ({status})"));
                        }
                        Event::Progress(_) => {}
                    }
                    on_event(&e);
                }
                if end.tail.len() == 20 {
                    end.tail.remove(0);
                }
                end.tail.push(line);
            }
            line = out_lines.next_line(), if out_open => {
                match line? {
                    Some(line) => tracing::debug!(target: "hive_orc_compactor::yarn", "{line}"),
                    None => out_open = false,
                }
            }
            _ = cancel.cancelled() => {
                if let Some(id) = &end.job {
                    kill(mapred, id).await;
                }
                let _ = child.kill().await;
                return Ok(end);
            }
        }
    }
    end.succeeded = child.wait().await?.success();
    // A client that died leaves its job running, with nobody to read what it does. One that
    // reported the job's end leaves nothing to kill (and `mapred job -kill` of a finished job
    // only asks the JobHistory server, for seconds, and logs that it failed).
    if let (false, false, Some(id)) = (end.succeeded, ended, &end.job) {
        kill(mapred, id).await;
    }
    Ok(end)
}

/// Kills a running job; failures are logged, not raised: the caller is already stopping.
pub async fn kill(mapred: &Path, job: &str) {
    tracing::warn!("killing YARN job {job}");
    match Command::new(mapred)
        .args(["job", "-kill", job])
        .stdin(Stdio::null())
        .output()
        .await
    {
        Ok(o) if o.status.success() => {}
        Ok(o) => tracing::error!(
            "mapred job -kill {job} failed: {}",
            String::from_utf8_lossy(&o.stderr).trim()
        ),
        Err(e) => tracing::error!("mapred job -kill {job}: {e}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn job_client_lines_become_events() {
        let cases = [
            (
                "26/12/04 17:01:02 INFO impl.YarnClientImpl: Submitted application application_1764_0001",
                Some(Event::Submitted {
                    application: "application_1764_0001".into(),
                }),
            ),
            (
                "INFO mapreduce.Job: Running job: job_1764_0001",
                Some(Event::Job {
                    id: "job_1764_0001".into(),
                }),
            ),
            (
                "INFO mapreduce.Job:  map 75% reduce 0%",
                Some(Event::Progress(75)),
            ),
            (
                "INFO mapreduce.Job: Task Id : attempt_1764_0001_m_000002_0, Status : FAILED",
                Some(Event::AttemptFailed {
                    attempt: "attempt_1764_0001_m_000002_0".into(),
                    status: "FAILED".into(),
                }),
            ),
            ("INFO mapreduce.JobSubmitter: number of splits:4", None),
            ("packageJobJar: [] [] /tmp/streamjob.jar tmpDir=null", None),
        ];
        for (line, want) in cases {
            assert_eq!(event(line), want, "{line}");
        }
    }

    #[test]
    fn the_job_clients_last_word_is_recognised() {
        for line in [
            "2026-12-05 11:53:15,505 INFO mapreduce.Job: Job job_1796_0003 failed with state \
             FAILED due to: Task failed task_1796_0003_m_000000",
            "INFO mapreduce.Job: Job job_1764_0001 completed successfully",
            "INFO mapreduce.Job: Job job_1764_0001 failed with state KILLED due to: killed",
        ] {
            assert!(job_ended(line), "{line}");
        }
        for line in [
            "INFO mapreduce.Job: Running job: job_1764_0001",
            "INFO mapreduce.Job: Task Id : attempt_1764_0001_m_000002_0, Status : FAILED",
            "ERROR streaming.StreamJob: Job not successful!",
        ] {
            assert!(!job_ended(line), "{line}");
        }
    }

    #[test]
    fn generic_options_come_first() {
        let job = StreamingJob {
            name: "hive-orc-compactor compact: 2 partitions".into(),
            queue: Some("etl".into()),
            input: "/w/list".into(),
            output: "/w/out".into(),
            files: vec!["hdfs://nn/w/bin#hoc".into()],
            mapper: "./hoc compact --partitions-from -".into(),
            env: vec![("RUST_LOG".into(), "info".into())],
            lines_per_task: 3,
            task_memory_mb: 1024,
            task_vcores: 2,
            task_heap_mb: 200,
            task_timeout_ms: 600_000,
            max_attempts: 4,
            credentials: Some(PathBuf::from("/tmp/x.credentials")),
        };
        let args = job.args();
        let first_plain = args.iter().position(|a| a == "-inputformat").unwrap();
        let files = args.iter().position(|a| a == "-files").unwrap();
        assert!(args.iter().rposition(|a| a == "-D").unwrap() < first_plain);
        assert!(files < first_plain);
        for want in [
            "mapreduce.map.speculative=false",
            "mapreduce.input.lineinputformat.linespermap=3",
            "stream.map.input.ignoreKey=true",
            "mapreduce.job.queuename=etl",
            "mapreduce.map.java.opts=-Xmx200m",
            "mapreduce.job.credentials.binary=/tmp/x.credentials",
        ] {
            assert!(args.iter().any(|a| a == want), "{want}");
        }
        assert_eq!(args.last().unwrap(), "RUST_LOG=info");
    }
}
