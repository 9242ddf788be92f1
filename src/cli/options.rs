//! Flags, environment variables (clap reads both) and the config file resolved once, into one
//! [`Options`] value each command runs from. Every default lives here or in the engine module
//! it belongs to, never twice.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use clap::parser::ValueSource;
use clap::{ArgMatches, CommandFactory};
use hive_orc_compactor::config;
use hive_orc_compactor::fleet::{Partitions, Selection, Tables};
use hive_orc_compactor::hdfs::{self, Hdfs};
use hive_orc_compactor::lock::{self, LockMode, LockOptions};
use hive_orc_compactor::metastore::meter::{Calls, Meter};
use hive_orc_compactor::metastore::{security::token, Metastore};
use hive_orc_compactor::operations::analyze::AnalyzeOptions;
use hive_orc_compactor::operations::batch::{
    Autopilot, BatchOptions, Budget, Thresholds, DEFAULT_SUSPEND_AFTER,
};
use hive_orc_compactor::operations::cleanup::CleanupOptions;
use hive_orc_compactor::operations::compact::{
    CompactOptions, Stripes, DEFAULT_MIN_STRIPE_SIZE, DEFAULT_STRIPE_SIZE, WRITE_IN_PROGRESS_AGE,
};
use hive_orc_compactor::operations::history::HistoryOptions;
use hive_orc_compactor::operations::iceberg;
use hive_orc_compactor::operations::on_yarn::YarnOptions;
use hive_orc_compactor::operations::token_lifetime;
use hive_orc_compactor::orc::DEFAULT_TARGET_SIZE;
use hive_orc_compactor::resolve::TableName;
use tokio_util::sync::CancellationToken;

use super::args::{
    AnalyzeFormat, Cli, Command, CompactArgs, IcebergCommand, Scope, Sizes, StripeArgs,
};
use super::layouts::layouts;
use super::on_yarn::{self, JobInputs};
use super::settings::Settings;
use crate::render::metrics_file::Recorder;
use crate::render::Format;

/// A quarter of the default target: files this small are what compaction exists for.
const DEFAULT_SMALL_FILE_SIZE: u64 = 64 * 1024 * 1024;
/// Hive and Spark jobs write a partition within minutes; an hour leaves room for retries.
const DEFAULT_MIN_AGE: Duration = Duration::from_secs(3600);
const DEFAULT_PARALLEL: usize = 2;
/// Per batch the metastore sees about seven calls (lock, EXCLUSIVE, a read, the alter, a
/// read-back, two unlocks): 50 partitions bring that under 0.2 a partition, while a batch's
/// lock request and transaction stay small.
const DEFAULT_BATCH_SIZE: usize = 50;
/// More threads than any edge node has cores: a typo's bound, not a tuning.
const MAX_THREADS: usize = 1024;
/// Longer than any job runs (a secure one ends within its tokens' 7-day maximum lifetime), and
/// than the gap between uses of one build by weekly or monthly runs; a build replaced by an
/// upgrade is gone a month later. A binary kept too long costs a few hundred MB; one removed too
/// early costs the next run one upload.
const DEFAULT_BINARIES_OLDER_THAN: Duration = Duration::from_secs(30 * 86400);

/// Everything a command needs to run, resolved.
pub struct Options {
    pub format: Format,
    /// `--metrics-file`: the gauges of this run, written when it ends.
    pub metrics: Option<Recorder>,
    /// Where the metastore is, and where that was found.
    pub metastore: config::Resolved,
    /// The Hadoop user we act as on clusters without Kerberos.
    pub hadoop_user: Option<String>,
    /// The Kerberos login: `--principal` and `--keytab`.
    pub principal: Option<String>,
    pub keytab: Option<PathBuf>,
    /// The threads the async runtime (decoding, verifying) and the encoders' pool each get.
    pub threads: usize,
    pub command: CommandOptions,
}

/// One command's own options.
pub enum CommandOptions {
    Inspect {
        table: TableName,
        partition: Option<String>,
        clustering: Vec<String>,
    },
    Analyze {
        tables: Tables,
        options: AnalyzeOptions,
        /// `--html`: where the census page goes as well.
        html: Option<std::path::PathBuf>,
    },
    Compact {
        selection: Selection,
        // Boxed: by far the largest command's options.
        options: Box<BatchOptions>,
        /// `--on-yarn`: the job the partitions are compacted in.
        yarn: Option<Box<YarnOptions>>,
        /// This process is one of an `--on-yarn` job's tasks.
        yarn_task: bool,
    },
    Rollback {
        table: TableName,
        partition: String,
        dry_run: bool,
    },
    Cleanup {
        tables: Tables,
        options: CleanupOptions,
    },
    Verify {
        table: TableName,
        partition: String,
        checksums: bool,
    },
    History {
        tables: Tables,
        options: HistoryOptions,
    },
    Iceberg(IcebergOptions),
}

/// `iceberg check | migrate | revert`.
pub enum IcebergOptions {
    Check {
        tables: Tables,
        options: iceberg::CheckOptions,
    },
    Migrate {
        table: TableName,
        options: iceberg::MigrateOptions,
    },
    Revert {
        table: TableName,
        dry_run: bool,
        lock: LockOptions,
        cancel: CancellationToken,
    },
}

impl Options {
    /// Resolves the command line (`matches` tells flags given from defaults) against the
    /// config file. Usage errors exit as clap's do.
    pub fn resolve(cli: &Cli, matches: &ArgMatches) -> anyhow::Result<Options> {
        let settings = Settings::load(cli.global.config.as_deref())?;
        let r = Resolving {
            cli,
            matches,
            hadoop_user: cli
                .global
                .hadoop_user
                .clone()
                .or(settings.hadoop_user.clone()),
            principal: cli.global.principal.clone().or(settings.principal.clone()),
            keytab: cli.global.keytab.clone().or(settings.keytab.clone()),
            settings,
        };
        let command = r.command()?;
        Ok(Options {
            threads: r.threads(),
            format: format(&cli.command, cli.global.json),
            metrics: metrics(&cli.command),
            metastore: metastore_config(cli, &r.settings)?,
            command,
            principal: r.principal,
            keytab: r.keytab,
            hadoop_user: r.hadoop_user,
        })
    }

    pub async fn connect(&self) -> anyhow::Result<Metastore> {
        Metastore::connect(self.metastore.config.clone())
            .await
            .with_context(|| format!("metastore from {}", self.metastore.source))
    }

    /// The calls this process has sent to the metastore so far, by method.
    pub fn metastore_calls(&self) -> Calls {
        self.metastore.config.meter.calls()
    }

    pub fn hdfs(&self) -> Hdfs {
        Hdfs::as_user(self.hadoop_user.clone())
    }
}

/// The command line and the config file while a command's options are made from them, with
/// whom the tool acts as resolved first.
struct Resolving<'a> {
    cli: &'a Cli,
    matches: &'a ArgMatches,
    settings: Settings,
    /// `--hadoop-user` (or `$HADOOP_USER_NAME`), else the config file's.
    hadoop_user: Option<String>,
    /// `--principal` and `--keytab` (or their variables), else the config file's.
    principal: Option<String>,
    keytab: Option<PathBuf>,
}

impl Resolving<'_> {
    /// `--threads`, else the config file's, else the CPUs this process may use: the standard
    /// library counts the affinity mask and the cgroup's CPU quota (a YARN container's vcores
    /// under cgroups, a Kubernetes limit), not the host's cores.
    fn threads(&self) -> usize {
        self.cli
            .global
            .threads
            .map(usize::from)
            .or(self.settings.threads)
            .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
            .clamp(1, MAX_THREADS)
    }

    /// The user metastore locks and the default `--yarn-dir` are for.
    fn user(&self) -> String {
        hdfs::hadoop_user(self.hadoop_user.as_deref())
    }

    fn command(&self) -> anyhow::Result<CommandOptions> {
        Ok(match &self.cli.command {
            Command::Inspect {
                table,
                partition,
                clustering,
            } => CommandOptions::Inspect {
                table: table.clone(),
                partition: partition.clone(),
                clustering: clustering.iter().map(|c| c.to_lowercase()).collect(),
            },
            Command::Analyze {
                scope,
                sizes,
                deep,
                stripes,
                fail_above,
                html,
                ..
            } => CommandOptions::Analyze {
                html: html.clone(),
                options: AnalyzeOptions {
                    fail_above: *fail_above,
                    ..self.analyze(sizes, *deep, stripes)?
                },
                tables: tables(scope)?,
            },
            Command::Compact(args) => self.compact(args)?,
            Command::Rollback {
                table,
                partition,
                dry_run,
            } => CommandOptions::Rollback {
                table: table.clone(),
                partition: partition.clone(),
                dry_run: *dry_run,
            },
            Command::Cleanup { .. } => self.cleanup()?,
            Command::History {
                scope,
                run,
                partition,
            } => CommandOptions::History {
                tables: tables(scope)?,
                options: HistoryOptions {
                    run: run.clone(),
                    partition: partition.clone(),
                },
            },
            Command::Verify {
                table,
                partition,
                checksums,
            } => CommandOptions::Verify {
                table: table.clone(),
                partition: partition.clone(),
                checksums: *checksums,
            },
            Command::Docs(_) => unreachable!("main() prints docs before options are resolved"),
            Command::Iceberg(command) => CommandOptions::Iceberg(self.iceberg(command)?),
        })
    }

    fn analyze(
        &self,
        sizes: &Sizes,
        deep: bool,
        stripes: &StripeArgs,
    ) -> anyhow::Result<AnalyzeOptions> {
        let (stripes, min_stripe_size, stripe_size) = stripe_policy(stripes, &self.settings)?;
        Ok(AnalyzeOptions {
            small_file_size: small_file_size(sizes, &self.settings)?,
            target_size: target_size(sizes, &self.settings)?,
            deep,
            stripes,
            min_stripe_size,
            stripe_size,
            fail_above: None,
            suspend_after: self.settings.suspend_after.unwrap_or(DEFAULT_SUSPEND_AFTER),
        })
    }

    fn cleanup(&self) -> anyhow::Result<CommandOptions> {
        let Command::Cleanup {
            scope,
            older_than,
            staging_older_than,
            binaries_older_than,
            yarn_dir: cleanup_yarn_dir,
            trash,
            adopt_late_files,
            discard_late_files,
            rehome,
            dry_run,
            watch: _,
        } = &self.cli.command
        else {
            unreachable!("called for cleanup only")
        };
        let settings = &self.settings;
        Ok(CommandOptions::Cleanup {
            tables: tables(scope)?,
            options: CleanupOptions {
                older_than: *older_than,
                staging_older_than: *staging_older_than,
                binaries: self
                    .yarn_dir(cleanup_yarn_dir.as_deref())
                    .map(|d| hive_orc_compactor::binary_cache::dir(&d))?,
                binaries_older_than: match binaries_older_than {
                    Some(d) => *d,
                    None => settings
                        .binaries_older_than()?
                        .unwrap_or(DEFAULT_BINARIES_OLDER_THAN),
                },
                trash: *trash,
                adopt_late_files: *adopt_late_files,
                discard_late_files: *discard_late_files,
                rehome: *rehome,
                dry_run: *dry_run,
                lock: LockOptions {
                    user: self.user(),
                    ..LockOptions::default()
                },
            },
        })
    }

    fn iceberg(&self, command: &IcebergCommand) -> anyhow::Result<IcebergOptions> {
        let check = |sizes: &Sizes| -> anyhow::Result<iceberg::CheckOptions> {
            Ok(iceberg::CheckOptions {
                small_file_size: small_file_size(sizes, &self.settings)?,
                target_size: target_size(sizes, &self.settings)?,
            })
        };
        // A table lock, always asked for: a migration must not race a writer or another
        // migration.
        let lock = |wait: &Option<Duration>| -> anyhow::Result<LockOptions> {
            Ok(LockOptions {
                wait: self.lock_wait(*wait)?,
                user: self.user(),
                ..LockOptions::default()
            })
        };
        Ok(match command {
            IcebergCommand::Check { scope, sizes, .. } => IcebergOptions::Check {
                tables: tables(scope)?,
                options: check(sizes)?,
            },
            IcebergCommand::Migrate {
                table,
                to,
                sizes,
                dry_run,
                lock_timeout,
                ..
            } => IcebergOptions::Migrate {
                table: table.clone(),
                options: iceberg::MigrateOptions {
                    target: match to {
                        Some(to) => iceberg::Target::Snapshot(to.clone()),
                        None => iceberg::Target::InPlace,
                    },
                    dry_run: *dry_run,
                    check: check(sizes)?,
                    lock: lock(lock_timeout)?,
                    cancel: CancellationToken::new(),
                },
            },
            IcebergCommand::Revert {
                table,
                dry_run,
                lock_timeout,
                ..
            } => IcebergOptions::Revert {
                table: table.clone(),
                dry_run: *dry_run,
                lock: lock(lock_timeout)?,
                cancel: CancellationToken::new(),
            },
        })
    }

    /// `--lock-timeout`, else the config file's `lock_timeout`, else a minute.
    fn lock_wait(&self, flag: Option<Duration>) -> anyhow::Result<Duration> {
        Ok(match flag {
            Some(wait) => wait,
            None => self.settings.lock_timeout()?.unwrap_or(lock::DEFAULT_WAIT),
        })
    }

    fn compact(&self, args: &CompactArgs) -> anyhow::Result<CommandOptions> {
        let listed = args
            .partitions_from
            .as_deref()
            .map(read_work_list)
            .transpose()?;
        let partitions = match &listed {
            Some((_, p)) => p.clone(),
            None => partitions(args),
        };
        let min_age = self.min_age(args, partitions.named_one_by_one())?;
        let options = self.batch_options(args, min_age.judged)?;
        let yarn = match args.yarn.on_yarn {
            true => Some(Box::new(self.yarn(args, &options, min_age.given)?)),
            false => None,
        };
        Ok(CommandOptions::Compact {
            selection: Selection {
                tables: match listed {
                    Some((tables, _)) => Tables::Named(tables),
                    None => tables(&args.scope)?,
                },
                partitions,
                shard: args.shard,
            },
            options: Box::new(options),
            yarn,
            yarn_task: args.yarn.yarn_task,
        })
    }

    /// The age partitions are judged by. Typed specs are compacted whatever their age unless
    /// an age is given for them: `--min-age` itself, or in a YARN task the age its run judged
    /// by, from the settings it wrote. The default is for selections, where nobody looked at
    /// each partition.
    fn min_age(&self, args: &CompactArgs, typed: bool) -> anyhow::Result<MinAge> {
        let on_command_line = self
            .matches
            .subcommand_matches("compact")
            .and_then(|m| m.value_source("min_age"))
            == Some(ValueSource::CommandLine);
        let given = on_command_line || (args.yarn.yarn_task && self.settings.min_age.is_some());
        let judged = match (typed, given, args.min_age) {
            (true, false, _) => None,
            (_, _, Some(age)) => Some(age),
            (true, true, None) => self.settings.min_age()?,
            (false, _, None) => Some(self.settings.min_age()?.unwrap_or(DEFAULT_MIN_AGE)),
        };
        Ok(MinAge {
            judged,
            given: judged.filter(|_| given),
        })
    }

    fn batch_options(
        &self,
        args: &CompactArgs,
        min_age: Option<Duration>,
    ) -> anyhow::Result<BatchOptions> {
        let settings = &self.settings;
        let parallel = args
            .parallel
            .map(usize::from)
            .or(settings.parallel)
            .unwrap_or(DEFAULT_PARALLEL)
            .max(1);
        let token_margin = self.token_margin(args)?;
        Ok(BatchOptions {
            compact: self.compact_options(args, min_age)?,
            thresholds: Thresholds {
                min_files: args.min_files.or(settings.min_files),
                max_avg_size: match args.max_avg_size {
                    Some(s) => Some(s),
                    None => settings.max_avg_size()?,
                },
                min_age,
            },
            budget: Budget {
                limit: args.limit,
                bytes: args.budget_bytes,
                time: match args.budget {
                    Some(t) => Some(t),
                    None => settings.budget()?,
                },
            },
            autopilot: Autopilot {
                suspend_after: args
                    .suspend_after
                    .or(settings.suspend_after)
                    .unwrap_or(DEFAULT_SUSPEND_AFTER),
                retry_suspended: args.retry_suspended,
                weights: settings.weights(),
                small_file_size: small_file_size(&args.sizes, settings)?,
                record: !args.dry_run,
            },
            parallel,
            threads: self.threads(),
            batch_size: args
                .batch_size
                .map(usize::from)
                .or(settings.batch_size)
                .unwrap_or(DEFAULT_BATCH_SIZE)
                .clamp(1, 1000),
            start_by: match args.yarn.yarn_task {
                // A task whose credentials end for good stops starting partitions in time.
                true => token::credentials_from_environment()?
                    .and_then(|creds| token_lifetime::start_by(&creds, token_margin)),
                false => None,
            },
        })
    }

    /// The job `--on-yarn` submits.
    fn yarn(
        &self,
        args: &CompactArgs,
        options: &BatchOptions,
        min_age: Option<Duration>,
    ) -> anyhow::Result<YarnOptions> {
        on_yarn::options(JobInputs {
            yarn: &args.yarn,
            batch: options,
            metastore: &metastore_config(self.cli, &self.settings)?,
            user: self.user(),
            principal: self.principal.as_deref(),
            keytab: self.keytab.as_ref(),
            work_dir: self.yarn_dir(args.yarn.yarn_dir.as_deref())?,
            token_margin: self.token_margin(args)?,
            min_age,
            table_layouts: &self.settings.table,
        })
    }

    /// `--yarn-token-margin`, else the config file's `yarn_token_margin`.
    fn token_margin(&self, args: &CompactArgs) -> anyhow::Result<Option<Duration>> {
        Ok(match args.yarn.yarn_token_margin {
            Some(margin) => Some(margin),
            None => self.settings.yarn_token_margin()?,
        })
    }

    fn compact_options(
        &self,
        args: &CompactArgs,
        min_age: Option<Duration>,
    ) -> anyhow::Result<CompactOptions> {
        let settings = &self.settings;
        let (stripes, min_stripe_size, stripe_size) = stripe_policy(&args.stripes, settings)?;
        let (layout, table_layouts) = layouts(&args.layout, settings)?;
        if stripes == Stripes::Copy && (layout.is_some() || !table_layouts.is_empty()) {
            Cli::command()
                .error(
                    clap::error::ErrorKind::ArgumentConflict,
                    "--stripes copy keeps every stripe as it is, so it cannot sort rows or \
                     change the codec: drop --stripes copy, or --sort-by/--zorder/--codec (and \
                     the config file's [table] layouts)",
                )
                .exit();
        }
        Ok(CompactOptions {
            target_size: target_size(&args.sizes, settings)?,
            dry_run: args.dry_run,
            verify: match args.verify {
                Some(level) => level,
                None => settings.verify()?.unwrap_or_default(),
            },
            stripes,
            min_stripe_size,
            stripe_size,
            lock: self.compact_lock(args)?,
            write_in_progress_age: min_age.unwrap_or(WRITE_IN_PROGRESS_AGE),
            layout,
            table_layouts: Arc::new(table_layouts),
            ..CompactOptions::default()
        })
    }

    /// The partition lock: flags, else the config file's keys of the same names.
    fn compact_lock(&self, args: &CompactArgs) -> anyhow::Result<LockOptions> {
        let settings = &self.settings;
        let no_lock = args.no_lock || settings.no_lock == Some(true);
        let require_lock = args.require_lock || settings.require_lock == Some(true);
        Ok(LockOptions {
            mode: match (no_lock, require_lock) {
                (true, _) => LockMode::Off,
                (_, true) => LockMode::Required,
                _ => LockMode::IfSupported,
            },
            wait: self.lock_wait(args.lock_timeout)?,
            user: self.user(),
            ..LockOptions::default()
        })
    }

    /// Where `--on-yarn` keeps its work directories and its cache of binaries: `--yarn-dir`,
    /// else the config file's `yarn_dir`, else under the user's home. `cleanup` sweeps the
    /// same cache.
    fn yarn_dir(&self, flag: Option<&str>) -> anyhow::Result<hdfs::Location> {
        let (uri, from) = match (flag, &self.settings.yarn_dir) {
            (Some(d), _) => (d.to_string(), "--yarn-dir"),
            (None, Some(d)) => (d.clone(), "yarn_dir in the config file"),
            (None, None) => (
                format!("hdfs:///user/{}/.hive-orc-compactor/yarn", self.user()),
                "--yarn-dir",
            ),
        };
        hdfs::Location::parse(&uri).map_err(|e| anyhow::anyhow!("{from}: {e}"))
    }
}

/// `--min-age` as it applies to a run.
struct MinAge {
    /// What partitions are judged by here; `None` for typed specs given no age.
    judged: Option<Duration>,
    /// The age given for typed specs too, which a YARN task judges its partitions by again:
    /// a writer may have added files since this host looked.
    given: Option<Duration>,
}

/// What `stdout` gets: `--json`, or `analyze`'s `--csv` and `--format`.
fn format(command: &Command, json: bool) -> Format {
    let csv = matches!(command, Command::Analyze { csv: true, .. });
    match (command, json, csv) {
        (
            Command::Analyze {
                format: Some(f), ..
            },
            _,
            _,
        ) => match f {
            AnalyzeFormat::Text => Format::Text,
            AnalyzeFormat::Json => Format::Json,
            AnalyzeFormat::Csv => Format::Csv,
            AnalyzeFormat::Html => Format::Html,
        },
        (_, true, _) => Format::Json,
        (_, _, true) => Format::Csv,
        _ => Format::Text,
    }
}

/// The recorder of `--metrics-file`, named for the command that writes it.
fn metrics(command: &Command) -> Option<Recorder> {
    let (watch, name) = match command {
        Command::Analyze { watch, .. } => (watch, "analyze"),
        Command::Compact(args) => (&args.watch, "compact"),
        Command::Cleanup { watch, .. } => (watch, "cleanup"),
        Command::Iceberg(IcebergCommand::Check { watch, .. }) => (watch, "iceberg-check"),
        Command::Iceberg(IcebergCommand::Migrate { watch, .. }) => (watch, "iceberg-migrate"),
        Command::Iceberg(IcebergCommand::Revert { watch, .. }) => (watch, "iceberg-revert"),
        Command::Inspect { .. }
        | Command::Rollback { .. }
        | Command::Verify { .. }
        | Command::History { .. } => return None,
        Command::Docs(_) => return None,
    };
    let path = watch.metrics_file.clone()?;
    Some(Recorder::new(path, name))
}

fn tables(scope: &Scope) -> anyhow::Result<Tables> {
    Ok(match (&scope.table, &scope.database) {
        (Some(t), _) => Tables::One(t.clone()),
        (None, Some(db)) => Tables::database(db, scope.tables.as_deref())
            .with_context(|| format!("--tables {}", scope.tables.as_deref().unwrap_or("")))?,
        (None, None) => unreachable!("clap requires --table or --database"),
    })
}

/// The partitions `compact` was given by flags (`--partitions-from` aside).
fn partitions(args: &CompactArgs) -> Partitions {
    match (args.partition.is_empty(), &args.where_, args.all) {
        (false, _, _) => Partitions::Specs(args.partition.clone()),
        (true, Some(filter), _) => Partitions::Where(filter.clone()),
        (true, None, true) => Partitions::All,
        (true, None, false) if args.scope.database.is_some() => Partitions::All,
        (true, None, false) => Cli::command()
            .error(
                clap::error::ErrorKind::MissingRequiredArgument,
                "compact --table needs --partition SPEC, --where FILTER or --all",
            )
            .exit(),
    }
}

fn target_size(sizes: &Sizes, settings: &Settings) -> anyhow::Result<u64> {
    Ok(match sizes.target_size {
        Some(s) => s,
        None => settings.target_size()?.unwrap_or(DEFAULT_TARGET_SIZE),
    })
}

fn small_file_size(sizes: &Sizes, settings: &Settings) -> anyhow::Result<u64> {
    Ok(match sizes.small_file_size {
        Some(s) => s,
        None => settings
            .small_file_size()?
            .unwrap_or(DEFAULT_SMALL_FILE_SIZE),
    })
}

/// The stripe mode and sizes: flags first, then the config file, then the defaults.
fn stripe_policy(args: &StripeArgs, settings: &Settings) -> anyhow::Result<(Stripes, u64, u64)> {
    let stripes = match args.stripes {
        Some(mode) => mode,
        None => settings.stripes()?.unwrap_or_default(),
    };
    let min_stripe_size = match args.min_stripe_size {
        Some(s) => s,
        None => settings
            .min_stripe_size()?
            .unwrap_or(DEFAULT_MIN_STRIPE_SIZE),
    };
    let stripe_size = match args.stripe_size {
        Some(s) => s,
        None => settings.stripe_size()?.unwrap_or(DEFAULT_STRIPE_SIZE),
    };
    Ok((stripes, min_stripe_size, stripe_size))
}

/// `--partitions-from`: a file, or `-` for standard input (how a YARN task gets its share).
fn read_work_list(path: &std::path::Path) -> anyhow::Result<(Vec<TableName>, Partitions)> {
    let text = if path == std::path::Path::new("-") {
        std::io::read_to_string(std::io::stdin()).context("reading the work list from stdin")?
    } else {
        std::fs::read_to_string(path)
            .with_context(|| format!("reading the work list {}", path.display()))?
    };
    Partitions::from_keys(text.lines())
        .map_err(|e| anyhow::anyhow!("work list {}: {e}", path.display()))
}

/// The metastore: `--metastore`, else the config file's, else hive-site.xml or `$HMS_URI`
/// (see [`config::metastore`]), with the transport and SASL flags or keys.
fn metastore_config(cli: &Cli, settings: &Settings) -> anyhow::Result<config::Resolved> {
    let global = &cli.global;
    let mut resolved = config::metastore(
        global
            .metastore
            .as_deref()
            .or(settings.metastore.as_deref()),
        global.metastore_framed || settings.metastore_framed == Some(true),
        match global.metastore_timeout {
            Some(t) => Some(t),
            None => settings.metastore_timeout()?,
        },
    )?;
    if global.metastore.is_none() && settings.metastore.is_some() {
        resolved.source = "the config file".into();
    }
    if let Some(rate) = global.metastore_rate.or(settings.metastore_rate()?) {
        resolved.config.meter = Meter::limited(rate);
    }
    if let Some(size) = global
        .metastore_page_size
        .map(usize::from)
        .or(settings.metastore_page_size)
    {
        resolved.config.page_size = size.clamp(1, 10_000);
    }
    let sasl = global.metastore_sasl || settings.metastore_sasl == Some(true);
    if let Some(p) = global
        .metastore_principal
        .as_ref()
        .or(settings.metastore_principal.as_ref())
    {
        resolved.config.sasl_principal = Some(p.clone());
    } else if sasl && resolved.config.sasl_principal.is_none() {
        resolved.config.sasl_principal = Some(String::new());
    }
    // A task in a YARN container: no ticket, but the job's credentials file may hold a
    // metastore token (HADOOP_TOKEN_FILE_LOCATION), which then replaces Kerberos, as in Hive.
    if resolved.config.sasl_principal.is_some() {
        resolved.config.delegation_token =
            token::from_environment(&resolved.config.token_signature)?;
    }
    if resolved.config.sasl_principal.as_deref() == Some("")
        && resolved.config.delegation_token.is_none()
    {
        anyhow::bail!(
            "the metastore uses Kerberos (SASL) but its principal is not known: set \
             hive.metastore.kerberos.principal in hive-site.xml or pass --metastore-principal \
             (e.g. hive/_HOST@REALM)"
        );
    }
    Ok(resolved)
}

#[cfg(test)]
mod tests {
    use clap::FromArgMatches;
    use hive_orc_compactor::operations::compact::Layout;

    use super::*;

    fn resolve(args: &[&str]) -> Options {
        let matches = Cli::command()
            .try_get_matches_from(std::iter::once("hive-orc-compactor").chain(args.iter().copied()))
            .unwrap();
        let cli = Cli::from_arg_matches(&matches).unwrap();
        Options::resolve(&cli, &matches).unwrap()
    }

    fn compact(o: &Options) -> (&BatchOptions, Option<&YarnOptions>) {
        match &o.command {
            CommandOptions::Compact { options, yarn, .. } => (options, yarn.as_deref()),
            _ => panic!("not compact"),
        }
    }

    /// What a run compacts with, spill directories aside (a task spills to its container's).
    fn compacting(o: &Options) -> String {
        let (b, _) = compact(o);
        let c = &b.compact;
        let layout = |l: &Layout| {
            format!(
                "{:?} {:?} {:?} {}",
                l.order, l.codec, l.codec_level, l.sort_memory
            )
        };
        let tables: Vec<String> = c
            .table_layouts
            .iter()
            .map(|(t, l)| format!("{t}: {}", layout(l)))
            .collect();
        format!(
            "{} {:?} {} {} {:?} {:?} {:?} {} {:?} {:?} {} {:?} {:?} {:?} {:?} {:?}",
            c.target_size,
            c.stripes,
            c.min_stripe_size,
            c.stripe_size,
            c.verify,
            c.lock.mode,
            c.lock.wait,
            c.lock.user,
            c.layout.as_ref().map(layout),
            tables,
            b.parallel,
            b.thresholds.min_age,
            o.metastore.config.uris,
            o.metastore.config.io_timeout,
            o.metastore.config.transport,
            o.metastore.config.sasl_principal,
        )
    }

    #[test]
    fn a_yarn_task_resolves_the_settings_its_run_resolved() {
        let dir = tempfile::tempdir().unwrap();
        let config = dir.path().join("hoc.toml");
        std::fs::write(
            &config,
            "target_size = \"128MiB\"\nparallel = 3\nsort_memory = \"64MiB\"\n\
             [table.\"sales.events\"]\nsort_by = [\"a\", \"b DESC\"]\ncodec = \"zstd\"\n",
        )
        .unwrap();
        let config = config.to_str().unwrap();
        for extra in [
            &[][..],
            &["--zorder", "a,b", "--codec", "zlib", "--codec-level", "4"],
            &[
                "--no-lock",
                "--lock-timeout",
                "5m",
                "--metastore-framed",
                "--verify",
                "tail",
            ],
        ] {
            let edge = resolve(
                &[
                    &[
                        "--config",
                        config,
                        "--metastore",
                        "thrift://h1:9083,thrift://h2:9083",
                        "--metastore-timeout",
                        "45s",
                        "--hadoop-user",
                        "etl",
                        "compact",
                        "--database",
                        "sales",
                        "--min-age",
                        "2h",
                        "--stripes",
                        "rewrite",
                        "--on-yarn",
                        "--yarn-binary",
                        "hdfs://nn/bin/hoc",
                    ][..],
                    extra,
                ]
                .concat(),
            );
            let yarn = compact(&edge).1.expect("--on-yarn");
            let settings = dir.path().join("settings.toml");
            std::fs::write(&settings, &yarn.task_settings).unwrap();
            let mut task_args: Vec<&str> = yarn.task_args.iter().map(String::as_str).collect();
            let at = task_args.iter().position(|a| *a == "-").unwrap();
            task_args[at] = "/dev/null";
            let last = task_args.len() - 1;
            let settings = settings.to_str().unwrap();
            task_args[last] = settings;
            let task = resolve(&task_args);
            assert_eq!(
                compacting(&task),
                compacting(&edge),
                "{}",
                yarn.task_settings
            );
            assert_eq!(task.hadoop_user.as_deref(), Some("etl"));
        }
    }

    #[test]
    fn the_metastore_rate_comes_from_the_flag_else_the_file_and_tasks_share_it() {
        let rate = |o: &Options| o.metastore.config.meter.rate();
        let dir = tempfile::tempdir().unwrap();
        let config_file = |name: &str, rate: &str| {
            let path = dir.path().join(name);
            let text = format!("metastore = \"thrift://h:9083\"\nmetastore_rate = {rate}\n");
            std::fs::write(&path, text).unwrap();
            path.to_str().unwrap().to_owned()
        };
        let config = &config_file("hoc.toml", "40");
        let analyze = ["analyze", "--table", "d.t"];
        assert_eq!(
            rate(&resolve(&[&["--config", config][..], &analyze].concat())),
            Some(40.0)
        );
        let flag = ["--config", config, "--metastore-rate", "0.5"];
        assert_eq!(rate(&resolve(&[&flag[..], &analyze].concat())), Some(0.5));
        let unpaced = ["--metastore", "thrift://h:9083"];
        assert_eq!(rate(&resolve(&[&unpaced[..], &analyze].concat())), None);
        for bad in ["0", "-1", "0.0001", "inf", "NaN", "fast"] {
            let flag = format!("--metastore-rate={bad}");
            let refused = Cli::command().try_get_matches_from([
                "hive-orc-compactor",
                &flag,
                "analyze",
                "--table",
                "d.t",
            ]);
            let e = refused.expect_err(bad).to_string();
            assert!(e.contains("positive number such as 50"), "{bad}: {e}");
        }
        let zero = config_file("zero.toml", "0");
        let matches = Cli::command()
            .try_get_matches_from(
                ["hive-orc-compactor", "--config", &zero]
                    .into_iter()
                    .chain(analyze),
            )
            .unwrap();
        let cli = Cli::from_arg_matches(&matches).unwrap();
        let e = Options::resolve(&cli, &matches).err().unwrap().to_string();
        assert!(e.contains("metastore_rate in the config file"), "{e}");

        // Four tasks may run at once: each paces itself to a quarter of the run's rate.
        let edge = resolve(&[
            "--metastore",
            "thrift://h:9083",
            "--metastore-rate",
            "12",
            "compact",
            "--database",
            "sales",
            "--on-yarn",
            "--tasks",
            "4",
            "--yarn-binary",
            "hdfs://nn/bin/hoc",
        ]);
        let yarn = compact(&edge).1.expect("--on-yarn");
        let settings = dir.path().join("settings.toml");
        std::fs::write(&settings, &yarn.task_settings).unwrap();
        let task = resolve(&[
            "--config",
            settings.to_str().unwrap(),
            "compact",
            "--partitions-from",
            "/dev/null",
            "--yarn-task",
        ]);
        assert_eq!(rate(&task), Some(3.0), "{}", yarn.task_settings);
    }
}
