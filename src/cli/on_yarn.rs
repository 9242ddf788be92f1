//! The job `compact --on-yarn` submits, made from the resolved options: its size and place, how
//! its tasks log in, and the one settings file they run with. The file is this run's settings
//! written as config-file keys, read by each task as a user's `--config` is read, so every
//! setting reaches the tasks (per-table layouts included) and a task compacts exactly as this
//! host would.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use hive_orc_compactor::binary_cache::LocalBinary;
use hive_orc_compactor::config;
use hive_orc_compactor::hdfs;
use hive_orc_compactor::lock::LockMode;
use hive_orc_compactor::metastore::meter::MIN_RATE;
use hive_orc_compactor::metastore::Transport;
use hive_orc_compactor::operations::batch::BatchOptions;
use hive_orc_compactor::operations::compact::Layout;
use hive_orc_compactor::operations::on_yarn::{self, TaskBinary, TokenFor, YarnOptions};
use hive_orc_compactor::orc::RowOrder;

use super::args::YarnArgs;
use super::parse::codec_name;
use super::settings::{LayoutSettings, Settings, TableSettings};

/// What the job is made from, resolved by `options.rs`.
pub struct JobInputs<'a> {
    pub yarn: &'a YarnArgs,
    pub batch: &'a BatchOptions,
    pub metastore: &'a config::Resolved,
    /// The Hadoop user this host acts as.
    pub user: String,
    /// The Kerberos login of this host: `--principal` and `--keytab`.
    pub principal: Option<&'a str>,
    pub keytab: Option<&'a PathBuf>,
    pub work_dir: hdfs::Location,
    pub token_margin: Option<Duration>,
    /// The age given for typed partitions too, which the tasks judge theirs by again: a writer
    /// may have added files since this host looked.
    pub min_age: Option<Duration>,
    /// The config file's `[table."db.t"]` layouts, as written.
    pub table_layouts: &'a BTreeMap<String, TableSettings>,
}

/// The job `--on-yarn` submits.
pub fn options(job: JobInputs) -> anyhow::Result<YarnOptions> {
    let yarn = job.yarn;
    let keytab = shipped_keytab(&job)?;
    let metastore_token = match keytab {
        Some(_) => None,
        None => metastore_token(&job)?,
    };
    let location = |flag: &str, uri: &str| {
        hdfs::Location::parse(uri).map_err(|e| anyhow::anyhow!("{flag}: {e}"))
    };
    let tasks = yarn.tasks.map_or(4, usize::from);
    let vcores = task_vcores(&job);
    Ok(YarnOptions {
        tasks,
        queue: yarn.queue.clone(),
        mapred: yarn
            .hadoop_cmd
            .clone()
            .unwrap_or_else(hive_orc_compactor::yarn::default_mapred),
        binary: match yarn.yarn_binary.as_deref() {
            Some(u) => TaskBinary::Given(location("--yarn-binary", u)?),
            None => TaskBinary::ThisProgram(LocalBinary::this_program()?),
        },
        task_args: [
            "compact",
            "--partitions-from",
            "-",
            "--yarn-task",
            "--json",
            "--config",
            on_yarn::SETTINGS_LINK,
        ]
        .map(String::from)
        .to_vec(),
        task_settings: task_settings(&job, keytab.is_some(), tasks).to_toml()?,
        task_memory_mb: yarn.task_memory.map_or(
            default_task_memory_mb(job.batch.parallel.max(vcores)),
            |b| b >> 20,
        ),
        task_vcores: vcores,
        run_id: hive_orc_compactor::run_dirs::new_run_id(),
        metastore_token,
        keytab: keytab.map(|(_, k)| k),
        token_margin: job.token_margin,
        cancel: job.batch.compact.cancel.clone(),
        work_dir: job.work_dir,
    })
}

/// `--yarn-keytab`: the principal and keytab the tasks log in with instead of a token.
fn shipped_keytab(job: &JobInputs) -> anyhow::Result<Option<(String, PathBuf)>> {
    match (job.yarn.yarn_keytab, job.principal, job.keytab) {
        (false, _, _) => Ok(None),
        (true, Some(principal), Some(keytab)) => Ok(Some((principal.into(), keytab.clone()))),
        (true, _, _) => anyhow::bail!(
            "--yarn-keytab ships this run's --keytab to the tasks: give --principal and --keytab"
        ),
    }
}

/// Tasks have no Kerberos ticket: with a Kerberos metastore they get a metastore token from
/// the job, for the principal this host logs in as.
fn metastore_token(job: &JobInputs) -> anyhow::Result<Option<TokenFor>> {
    if job.metastore.config.sasl_principal.is_none() {
        return Ok(None);
    }
    // The tasks' token is for whom this host is: --principal, else the ticket cache's.
    let principal = match job.principal {
        Some(p) => p.to_string(),
        None => hive_orc_compactor::metastore::cache_principal().map_err(|e| {
            anyhow::anyhow!(
                "--on-yarn with a Kerberos metastore gets the job's tasks a metastore \
                 delegation token for this host's principal, and there is none: {e}"
            )
        })?,
    };
    let owner = principal.split(['/', '@']).next().unwrap_or(&principal);
    Ok(Some(TokenFor {
        owner: owner.to_string(),
        renewer: principal.clone(),
    }))
}

/// The settings the tasks run with: this run's, as config-file keys. What only this host
/// does (selecting, `--limit`, thresholds, the YARN flags) stays out; so does `spill_dir`:
/// a task spills to its container's own temporary directory.
fn task_settings(job: &JobInputs, keytab: bool, tasks: usize) -> Settings {
    let c = &job.batch.compact;
    let m = &job.metastore.config;
    let seconds = |d: Duration| format!("{}s", d.as_secs());
    let mut settings = Settings {
        metastore: Some(
            m.uris
                .iter()
                .map(|u| u.to_string())
                .collect::<Vec<_>>()
                .join(","),
        ),
        metastore_timeout: Some(format!("{}s", m.io_timeout.as_secs().max(1))),
        metastore_framed: matches!(m.transport, Transport::Framed).then_some(true),
        metastore_sasl: (m.sasl_principal.as_deref() == Some("")).then_some(true),
        metastore_principal: m.sasl_principal.clone().filter(|p| !p.is_empty()),
        // The tasks may all run at once: each gets its share of the run's rate (when fewer
        // tasks than asked for run, the job stays under the rate), but not less than the
        // slowest pace a task accepts.
        metastore_rate: m
            .meter
            .rate()
            .map(|r| (r / tasks.max(1) as f64).max(MIN_RATE)),
        metastore_page_size: Some(m.page_size),
        hadoop_user: Some(job.user.clone()),
        principal: job.principal.filter(|_| keytab).map(String::from),
        keytab: keytab.then(|| on_yarn::KEYTAB_LINK.into()),
        target_size: Some(c.target_size.to_string()),
        min_age: job.min_age.map(seconds),
        parallel: Some(job.batch.parallel),
        // A task's CPUs are its container's vcores, not the host's cores it may see.
        threads: Some(task_vcores(job)),
        batch_size: Some(job.batch.batch_size),
        verify: Some(c.verify.as_str().into()),
        stripes: Some(c.stripes.as_str().into()),
        min_stripe_size: Some(c.min_stripe_size.to_string()),
        stripe_size: Some(c.stripe_size.to_string()),
        lock_timeout: Some(seconds(c.lock.wait)),
        no_lock: (c.lock.mode == LockMode::Off).then_some(true),
        require_lock: (c.lock.mode == LockMode::Required).then_some(true),
        // Every layout sorts alike (`--sort-memory`, `sort_memory`).
        sort_memory: c
            .layout
            .iter()
            .chain(c.table_layouts.values())
            .next()
            .map(|l| l.sort_memory.to_string()),
        yarn_token_margin: job.token_margin.map(seconds),
        table: job.table_layouts.clone(),
        ..Settings::default()
    };
    if let Some(layout) = &c.layout {
        settings.set_layout(layout_keys(layout));
    }
    settings
}

/// A layout as the config file's keys.
fn layout_keys(layout: &Layout) -> LayoutSettings {
    let columns = |order: &RowOrder| order.as_flag().split(',').map(String::from).collect();
    LayoutSettings {
        sort_by: match &layout.order {
            Some(order @ RowOrder::Sort(_)) => Some(columns(order)),
            _ => None,
        },
        zorder: match &layout.order {
            Some(order @ RowOrder::ZOrder(_)) => Some(columns(order)),
            _ => None,
        },
        codec: layout.codec.map(codec_name),
        codec_level: layout.codec_level,
    }
}

/// `--task-vcores`, else a core per partition a task compacts at once, up to YARN's default
/// largest container (yarn.scheduler.maximum-allocation-vcores, 4): a larger request fails.
fn task_vcores(job: &JobInputs) -> usize {
    job.yarn
        .task_vcores
        .map_or(job.batch.parallel.min(DEFAULT_MAX_VCORES), usize::from)
}

const DEFAULT_MAX_VCORES: usize = 4;

/// Container memory of a task: the streaming JVM's share plus our bound per output written at
/// once (the re-encoder's peak stays under 512 MiB at 64 MiB stripes, see BENCHMARKS.md).
fn default_task_memory_mb(outputs: usize) -> u64 {
    384 + 512 * outputs as u64
}
