//! Flags, environment variables (clap reads both) and the config file resolved once, into one
//! [`Options`] value each command runs from. Every default lives here or in the engine module
//! it belongs to, never twice.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use clap::parser::ValueSource;
use clap::{ArgMatches, CommandFactory};
use hive_orc_compactor::binary_cache::LocalBinary;
use hive_orc_compactor::config;
use hive_orc_compactor::fleet::{Partitions, Selection, Tables};
use hive_orc_compactor::hdfs::{self, Hdfs};
use hive_orc_compactor::lock::{self, LockMode, LockOptions};
use hive_orc_compactor::metastore::{security::token, Metastore};
use hive_orc_compactor::operations::analyze::AnalyzeOptions;
use hive_orc_compactor::operations::batch::{BatchOptions, Budget, Thresholds};
use hive_orc_compactor::operations::cleanup::CleanupOptions;
use hive_orc_compactor::operations::compact::{
    CompactOptions, Layout, Stripes, DEFAULT_MIN_STRIPE_SIZE, DEFAULT_SORT_MEMORY,
    DEFAULT_STRIPE_SIZE, WRITE_IN_PROGRESS_AGE,
};
use hive_orc_compactor::operations::iceberg;
use hive_orc_compactor::operations::on_yarn::{self, TaskBinary, TokenFor, YarnOptions};
use hive_orc_compactor::operations::token_lifetime;
use hive_orc_compactor::orc::{Compression, RowOrder, DEFAULT_TARGET_SIZE};
use hive_orc_compactor::resolve::TableName;
use tokio_util::sync::CancellationToken;

use crate::render::metrics_file::Recorder;
use crate::render::Format;
use crate::settings::Settings;
use crate::{
    AnalyzeFormat, Cli, Command, Global, IcebergCommand, LayoutArgs, Scope, Sizes, StripeArgs,
};

/// A quarter of the default target: files this small are what compaction exists for.
const DEFAULT_SMALL_FILE_SIZE: u64 = 64 * 1024 * 1024;
/// Hive and Spark jobs write a partition within minutes; an hour leaves room for retries.
const DEFAULT_MIN_AGE: Duration = Duration::from_secs(3600);
const DEFAULT_PARALLEL: usize = 2;

/// Everything a command needs to run, resolved.
pub struct Options {
    pub format: Format,
    /// `--metrics-file`: the gauges of this run, written when it ends.
    pub metrics: Option<Recorder>,
    /// Where the metastore is, and where that was found.
    pub metastore: config::Resolved,
    /// The Hadoop user we act as on clusters without Kerberos.
    pub hadoop_user: Option<String>,
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
        let global = &cli.global;
        let settings = Settings::load(global.config.as_deref())?;
        let command = match &cli.command {
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
                html,
                ..
            } => CommandOptions::Analyze {
                html: html.clone(),
                options: {
                    let (stripes, min_stripe_size, stripe_size) =
                        stripe_policy(stripes, &settings)?;
                    AnalyzeOptions {
                        small_file_size: small_file_size(sizes, &settings)?,
                        target_size: target_size(sizes, &settings)?,
                        deep: *deep,
                        stripes,
                        min_stripe_size,
                        stripe_size,
                    }
                },
                tables: tables(scope)?,
            },
            Command::Compact { .. } => compact(cli, matches, &settings)?,
            Command::Rollback {
                table,
                partition,
                dry_run,
            } => CommandOptions::Rollback {
                table: table.clone(),
                partition: partition.clone(),
                dry_run: *dry_run,
            },
            Command::Cleanup {
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
            } => CommandOptions::Cleanup {
                tables: tables(scope)?,
                options: CleanupOptions {
                    older_than: *older_than,
                    staging_older_than: *staging_older_than,
                    binaries: yarn_dir(
                        cleanup_yarn_dir.as_deref(),
                        &settings,
                        &hdfs::hadoop_user(cli.global.hadoop_user.as_deref()),
                    )
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
                        user: hdfs::hadoop_user(cli.global.hadoop_user.as_deref()),
                        ..LockOptions::default()
                    },
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
            Command::Iceberg(command) => {
                CommandOptions::Iceberg(iceberg_options(cli, command, &settings)?)
            }
        };
        let csv = matches!(cli.command, Command::Analyze { csv: true, .. });
        let format = match (&cli.command, global.json, csv) {
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
        };
        Ok(Options {
            format,
            metrics: metrics(&cli.command),
            metastore: metastore_config(global, &settings)?,
            hadoop_user: global.hadoop_user.clone(),
            command,
        })
    }

    pub async fn connect(&self) -> anyhow::Result<Metastore> {
        Metastore::connect(self.metastore.config.clone())
            .await
            .with_context(|| format!("metastore from {}", self.metastore.source))
    }

    pub fn hdfs(&self) -> Hdfs {
        Hdfs::as_user(self.hadoop_user.clone())
    }
}

/// The recorder of `--metrics-file`, named for the command that writes it.
fn metrics(command: &Command) -> Option<Recorder> {
    let (watch, name) = match command {
        Command::Analyze { watch, .. } => (watch, "analyze"),
        Command::Compact { watch, .. } => (watch, "compact"),
        Command::Cleanup { watch, .. } => (watch, "cleanup"),
        Command::Iceberg(IcebergCommand::Check { watch, .. }) => (watch, "iceberg-check"),
        Command::Iceberg(IcebergCommand::Migrate { watch, .. }) => (watch, "iceberg-migrate"),
        Command::Iceberg(IcebergCommand::Revert { watch, .. }) => (watch, "iceberg-revert"),
        Command::Inspect { .. } | Command::Rollback { .. } | Command::Verify { .. } => return None,
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

fn iceberg_options(
    cli: &Cli,
    command: &IcebergCommand,
    settings: &Settings,
) -> anyhow::Result<IcebergOptions> {
    let check = |sizes: &Sizes| -> anyhow::Result<iceberg::CheckOptions> {
        Ok(iceberg::CheckOptions {
            small_file_size: small_file_size(sizes, settings)?,
            target_size: target_size(sizes, settings)?,
        })
    };
    // A table lock, always asked for: a migration must not race a writer or another migration.
    let lock = |wait: &Option<Duration>| LockOptions {
        wait: wait.unwrap_or(lock::DEFAULT_WAIT),
        user: hdfs::hadoop_user(cli.global.hadoop_user.as_deref()),
        ..LockOptions::default()
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
                lock: lock(lock_timeout),
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
            lock: lock(lock_timeout),
            cancel: CancellationToken::new(),
        },
    })
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

fn compact(cli: &Cli, matches: &ArgMatches, settings: &Settings) -> anyhow::Result<CommandOptions> {
    let Command::Compact {
        scope,
        partition,
        where_,
        all,
        sizes,
        dry_run,
        min_files,
        max_avg_size,
        min_age,
        limit,
        max_bytes,
        parallel,
        shard,
        partitions_from,
        no_lock,
        require_lock,
        lock_timeout,
        verify,
        stripes,
        layout,
        yarn,
        watch: _,
    } = &cli.command
    else {
        unreachable!("called for compact only")
    };
    let listed = partitions_from.as_deref().map(read_work_list).transpose()?;
    let partitions = match (partition.is_empty(), where_, all) {
        _ if listed.is_some() => listed.as_ref().map(|(_, p)| p.clone()).expect("listed"),
        (false, _, _) => Partitions::Specs(partition.clone()),
        (true, Some(filter), _) => Partitions::Where(filter.clone()),
        (true, None, true) => Partitions::All,
        (true, None, false) if scope.database.is_some() => Partitions::All,
        (true, None, false) => Cli::command()
            .error(
                clap::error::ErrorKind::MissingRequiredArgument,
                "compact --table needs --partition SPEC, --where FILTER or --all",
            )
            .exit(),
    };
    let typed = partitions.named_one_by_one();
    // Typed specs are compacted whatever their age unless --min-age itself is given: the age
    // default is for selections, where nobody looked at each partition.
    let min_age_on_command_line = matches
        .subcommand_matches("compact")
        .and_then(|m| m.value_source("min_age"))
        == Some(ValueSource::CommandLine);
    let min_age = match (typed, min_age_on_command_line) {
        (true, false) => None,
        (true, true) => *min_age,
        (false, _) => Some(match min_age {
            Some(age) => *age,
            None => settings.min_age()?.unwrap_or(DEFAULT_MIN_AGE),
        }),
    };
    let (stripes, min_stripe_size, stripe_size) = stripe_policy(stripes, settings)?;
    let (layout, table_layouts) = layouts(layout, settings)?;
    if stripes == Stripes::Copy && (layout.is_some() || !table_layouts.is_empty()) {
        Cli::command()
            .error(
                clap::error::ErrorKind::ArgumentConflict,
                "--stripes copy keeps every stripe as it is, so it cannot sort rows or change the \
                 codec: drop --stripes copy, or --sort-by/--zorder/--codec (and the config \
                 file's [table] layouts)",
            )
            .exit();
    }
    let options = BatchOptions {
        compact: CompactOptions {
            target_size: target_size(sizes, settings)?,
            dry_run: *dry_run,
            verify: match verify {
                Some(level) => *level,
                None => settings.verify()?.unwrap_or_default(),
            },
            stripes,
            min_stripe_size,
            stripe_size,
            lock: LockOptions {
                mode: match (no_lock, require_lock) {
                    (true, _) => LockMode::Off,
                    (_, true) => LockMode::Required,
                    _ => LockMode::IfSupported,
                },
                wait: lock_timeout.unwrap_or(lock::DEFAULT_WAIT),
                user: hdfs::hadoop_user(cli.global.hadoop_user.as_deref()),
                ..LockOptions::default()
            },
            write_in_progress_age: min_age.unwrap_or(WRITE_IN_PROGRESS_AGE),
            layout,
            table_layouts: Arc::new(table_layouts),
            ..CompactOptions::default()
        },
        thresholds: Thresholds {
            min_files: min_files.or(settings.min_files),
            max_avg_size: match max_avg_size {
                Some(s) => Some(*s),
                None => settings.max_avg_size()?,
            },
            min_age,
        },
        budget: Budget {
            limit: *limit,
            max_bytes: *max_bytes,
        },
        parallel: parallel
            .map(usize::from)
            .or(settings.parallel)
            .unwrap_or(DEFAULT_PARALLEL)
            .max(1),
        start_by: match yarn.yarn_task {
            // A task whose credentials end for good stops starting partitions in time.
            true => token::credentials_from_environment()?
                .and_then(|creds| token_lifetime::start_by(&creds, yarn.yarn_token_margin)),
            false => None,
        },
    };
    let yarn_options = match yarn.on_yarn {
        true => Some(Box::new(yarn_options(
            cli,
            yarn,
            &options,
            settings,
            min_age_on_command_line,
        )?)),
        false => None,
    };
    Ok(CommandOptions::Compact {
        selection: Selection {
            tables: match listed {
                Some((tables, _)) => Tables::Named(tables),
                None => tables(scope)?,
            },
            partitions,
            shard: *shard,
        },
        options: Box::new(options),
        yarn: yarn_options,
        yarn_task: yarn.yarn_task,
    })
}

/// The layout asked on the command line (for every table), and those of the config file's
/// `[table."db.t"]` sections.
fn layouts(
    args: &LayoutArgs,
    settings: &Settings,
) -> anyhow::Result<(Option<Layout>, BTreeMap<String, Layout>)> {
    let sort_memory = match args.sort_memory {
        Some(m) => m,
        None => settings.sort_memory()?.unwrap_or(DEFAULT_SORT_MEMORY),
    };
    let spill_dir = args
        .spill_dir
        .clone()
        .or_else(|| settings.spill_dir().map(Path::to_path_buf))
        .unwrap_or_else(std::env::temp_dir);
    let layout = |order: Option<RowOrder>, codec: Option<Compression>, level: Option<i32>| {
        if let (Some(level), Some(codec)) = (level, codec) {
            let range = match codec {
                Compression::Zstd => 1..=22,
                Compression::Zlib => 0..=9,
                other => anyhow::bail!(
                    "{} has no compression levels: drop the codec level",
                    format!("{other:?}").to_ascii_lowercase()
                ),
            };
            anyhow::ensure!(
                range.contains(&level),
                "codec level {level} is out of range for {codec:?} ({}-{})",
                range.start(),
                range.end()
            );
        }
        Ok(Layout {
            order,
            codec,
            codec_level: level,
            sort_memory,
            spill_dir: spill_dir.clone(),
        })
    };
    let from_flags = match (args.sort_by.clone().or(args.zorder.clone()), args.codec) {
        (None, None) => None,
        (order, codec) => Some(layout(order, codec, args.codec_level)?),
    };
    let mut per_table = BTreeMap::new();
    for (name, t) in &settings.table {
        let context = |what: &str| format!("[table.\"{name}\"] {what} in the config file");
        let order = match (&t.sort_by, &t.zorder) {
            (Some(_), Some(_)) => {
                anyhow::bail!("{}: give sort_by or zorder, not both", context(""))
            }
            (Some(columns), None) => Some(
                RowOrder::parse_sort(&columns.join(","))
                    .map_err(|e| anyhow::anyhow!("{}: {e}", context("sort_by")))?,
            ),
            (None, Some(columns)) => Some(
                RowOrder::parse_zorder(&columns.join(","))
                    .map_err(|e| anyhow::anyhow!("{}: {e}", context("zorder")))?,
            ),
            (None, None) => None,
        };
        let codec = t
            .codec
            .as_deref()
            .map(crate::parse_codec)
            .transpose()
            .map_err(|e| anyhow::anyhow!("{}: {e}", context("codec")))?;
        if order.is_none() && codec.is_none() {
            anyhow::bail!("{}: give sort_by, zorder or codec", context("the section"));
        }
        let l = layout(order, codec, t.codec_level)
            .map_err(|e| anyhow::anyhow!("{}: {e}", context("codec_level")))?;
        per_table.insert(name.to_ascii_lowercase(), l);
    }
    Ok((from_flags, per_table))
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

/// Container memory of a task: the streaming JVM's share plus our bound per partition at once
/// (the re-encoder's peak stays under 512 MiB at 64 MiB stripes, see BENCHMARKS.md).
/// Longer than any job runs (a secure one ends within its tokens' 7-day maximum lifetime), and
/// than the gap between uses of one build by weekly or monthly runs; a build replaced by an
/// upgrade is gone a month later. A binary kept too long costs a few hundred MB; one removed too
/// early costs the next run one upload.
const DEFAULT_BINARIES_OLDER_THAN: Duration = Duration::from_secs(30 * 86400);

fn default_task_memory_mb(parallel: usize) -> u64 {
    384 + 512 * parallel as u64
}

/// The job `--on-yarn` submits, with the command line its tasks run: this run's settings as
/// flags, so every task compacts exactly as this host would.
fn yarn_options(
    cli: &Cli,
    yarn: &crate::YarnArgs,
    options: &BatchOptions,
    settings: &Settings,
    min_age_on_command_line: bool,
) -> anyhow::Result<YarnOptions> {
    let global = &cli.global;
    let metastore = metastore_config(global, settings)?;
    // Tasks have no Kerberos ticket: they get a metastore token from the job, for the
    // principal this host logs in as.
    let keytab = match (yarn.yarn_keytab, &global.principal, &global.keytab) {
        (false, _, _) => None,
        (true, Some(principal), Some(keytab)) => Some((principal.clone(), keytab.clone())),
        (true, _, _) => anyhow::bail!(
            "--yarn-keytab ships this run's --keytab to the tasks: give --principal and --keytab"
        ),
    };
    let metastore_token = match &metastore.config.sasl_principal {
        None => None,
        Some(_) if keytab.is_some() => None,
        Some(_) => {
            // The tasks' token is for whom this host is: --principal, else the ticket cache's.
            let principal = match &global.principal {
                Some(p) => p.clone(),
                None => hive_orc_compactor::metastore::cache_principal().map_err(|e| {
                    anyhow::anyhow!(
                        "--on-yarn with a Kerberos metastore gets the job's tasks a metastore \
                         delegation token for this host's principal, and there is none: {e}"
                    )
                })?,
            };
            let owner = principal.split(['/', '@']).next().unwrap_or(&principal);
            Some(TokenFor {
                owner: owner.to_string(),
                renewer: principal.clone(),
            })
        }
    };
    let user = hdfs::hadoop_user(global.hadoop_user.as_deref());
    let c = &options.compact;
    let uris: Vec<String> = metastore
        .config
        .uris
        .iter()
        .map(|u| u.to_string())
        .collect();
    let mut args: Vec<String> = [
        "compact",
        "--partitions-from",
        "-",
        "--yarn-task",
        "--json",
        "--metastore",
        &uris.join(","),
        "--metastore-timeout",
        &format!("{}s", metastore.config.io_timeout.as_secs().max(1)),
        "--hadoop-user",
        &user,
        "--target-size",
        &c.target_size.to_string(),
        "--stripes",
        c.stripes.as_str(),
        "--min-stripe-size",
        &c.min_stripe_size.to_string(),
        "--stripe-size",
        &c.stripe_size.to_string(),
        "--verify",
        c.verify.as_str(),
        "--parallel",
        &options.parallel.to_string(),
        "--lock-timeout",
        &format!("{}s", c.lock.wait.as_secs()),
    ]
    .into_iter()
    .map(String::from)
    .collect();
    if let Some(margin) = yarn.yarn_token_margin {
        args.extend([
            "--yarn-token-margin".into(),
            format!("{}s", margin.as_secs()),
        ]);
    }
    if let Some((principal, _)) = &keytab {
        args.extend([
            "--principal".into(),
            principal.clone(),
            "--keytab".into(),
            on_yarn::KEYTAB_LINK.into(),
        ]);
    }
    match metastore.config.sasl_principal.as_deref() {
        Some("") => args.push("--metastore-sasl".into()),
        Some(p) => args.extend(["--metastore-principal".into(), p.to_string()]),
        None => {}
    }
    if matches!(
        metastore.config.transport,
        hive_orc_compactor::metastore::Transport::Framed
    ) {
        args.push("--metastore-framed".into());
    }
    match c.lock.mode {
        LockMode::Off => args.push("--no-lock".into()),
        LockMode::Required => args.push("--require-lock".into()),
        LockMode::IfSupported => {}
    }
    // The age this host judged by, judged again where the partition is compacted: a writer
    // may have added files since.
    if let Some(age) = options
        .thresholds
        .min_age
        .filter(|_| min_age_on_command_line)
    {
        args.extend(["--min-age".into(), format!("{}s", age.as_secs())]);
    }
    match &c.layout {
        Some(layout) => {
            match &layout.order {
                Some(order @ RowOrder::Sort(_)) => {
                    args.extend(["--sort-by".into(), order.as_flag()])
                }
                Some(order @ RowOrder::ZOrder(_)) => {
                    args.extend(["--zorder".into(), order.as_flag()])
                }
                None => {}
            }
            if let Some(codec) = layout.codec {
                args.extend(["--codec".into(), format!("{codec:?}").to_ascii_lowercase()]);
            }
            if let Some(level) = layout.codec_level {
                args.extend(["--codec-level".into(), level.to_string()]);
            }
            // Spills go to the container's own temporary directory.
            args.extend(["--sort-memory".into(), layout.sort_memory.to_string()]);
        }
        None if !c.table_layouts.is_empty() => anyhow::bail!(
            "--on-yarn does not hand the config file's [table.\"...\"] layouts to its tasks: \
             give the layout as --sort-by/--zorder/--codec, or compact those tables on this host"
        ),
        None => {}
    }
    let location = |flag: &str, uri: &str| {
        hdfs::Location::parse(uri).map_err(|e| anyhow::anyhow!("{flag}: {e}"))
    };
    Ok(YarnOptions {
        tasks: yarn.tasks.map_or(4, usize::from),
        queue: yarn.queue.clone(),
        mapred: yarn
            .hadoop_cmd
            .clone()
            .unwrap_or_else(hive_orc_compactor::yarn::default_mapred),
        binary: match yarn.yarn_binary.as_deref() {
            Some(u) => TaskBinary::Given(location("--yarn-binary", u)?),
            None => TaskBinary::ThisProgram(LocalBinary::this_program()?),
        },
        work_dir: yarn_dir(yarn.yarn_dir.as_deref(), settings, &user)?,
        task_args: args,
        task_memory_mb: yarn
            .task_memory
            .map_or(default_task_memory_mb(options.parallel), |b| b >> 20),
        run_id: hive_orc_compactor::run_dirs::new_run_id(),
        metastore_token,
        keytab: keytab.map(|(_, k)| k),
        token_margin: yarn.yarn_token_margin,
        cancel: c.cancel.clone(),
    })
}

/// Where `--on-yarn` keeps its work directories and its cache of binaries: `--yarn-dir`, else
/// the config file's `yarn_dir`, else under the user's home. `cleanup` sweeps the same cache.
fn yarn_dir(flag: Option<&str>, settings: &Settings, user: &str) -> anyhow::Result<hdfs::Location> {
    let (uri, from) = match (flag, &settings.yarn_dir) {
        (Some(d), _) => (d.to_string(), "--yarn-dir"),
        (None, Some(d)) => (d.clone(), "yarn_dir in the config file"),
        (None, None) => (
            format!("hdfs:///user/{user}/.hive-orc-compactor/yarn"),
            "--yarn-dir",
        ),
    };
    hdfs::Location::parse(&uri).map_err(|e| anyhow::anyhow!("{from}: {e}"))
}

fn metastore_config(global: &Global, settings: &Settings) -> anyhow::Result<config::Resolved> {
    let mut resolved = config::metastore(
        global
            .metastore
            .as_deref()
            .or(settings.metastore.as_deref()),
        global.metastore_framed,
        global.metastore_timeout,
    )?;
    if global.metastore.is_none() && settings.metastore.is_some() {
        resolved.source = "the config file".into();
    }
    if let Some(p) = &global.metastore_principal {
        resolved.config.sasl_principal = Some(p.clone());
    } else if global.metastore_sasl && resolved.config.sasl_principal.is_none() {
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
