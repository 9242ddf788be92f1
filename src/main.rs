//! The binary: starts (logging, the async runtime, the Kerberos login), hands the command line
//! to the `cli` wing, runs the engine's operation for the command, prints its report as text or
//! JSON, and exits with a code cron can act on. Nothing here knows how compaction works.

mod cli;
mod render;

use std::io::{stderr, stdout};
use std::process::ExitCode as ProcessExit;
use std::time::Duration;

use anyhow::Context;
use cli::{Command, CommandOptions, Global, IcebergOptions, LogFormat, Options};
use hive_orc_compactor::exit::ExitCode;
use hive_orc_compactor::fleet::{Selection, Tables};
use hive_orc_compactor::metastore::MetastorePool;
use hive_orc_compactor::operations::analyze::{self, AnalyzeOptions};
use hive_orc_compactor::operations::batch::{self, BatchOptions};
use hive_orc_compactor::operations::cleanup::{self, CleanupOptions};
use hive_orc_compactor::operations::on_yarn::{self, YarnOptions};
use hive_orc_compactor::operations::{history, iceberg, inspect};
use hive_orc_compactor::operations::{rollback, verify};
use hive_orc_compactor::resolve::TableName;
use tracing::Instrument;

/// jemalloc instead of glibc's malloc. Measured on 10,000 files of 60 rows (the re-encode
/// benchmark): glibc spent ~14% of the run in malloc and free, its arenas contended between
/// the decoding and encoding threads, and it kept freed memory: peak RSS about 190 MiB for a
/// heap that never passed 80 MiB. With jemalloc: user CPU 7.9 -> 5.9-6.6 s, peak RSS ~136 MiB.
/// mimalloc was as fast but held more at 100,000 files (BENCHMARKS.md, "What we learned").
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

/// jemalloc's settings, read once at its start (`_RJEM_MALLOC_CONF` still overrides them).
/// `oversize_threshold:0`: jemalloc serves allocations of 8 MiB and more (a stripe's streams, a
/// sorted run's index) from an arena that gives their pages back to the kernel as soon as they
/// are freed, so the next one faults them in again. A 1 GiB sort took 2.4 M page faults; with
/// this setting 1.3 M, and 4-10% less time in each of three runs timed in turn, at the same peak
/// RSS (BENCHMARKS.md, What we learned).
#[allow(non_upper_case_globals)]
#[export_name = "_rjem_malloc_conf"]
static malloc_conf: &[u8; 21] = b"oversize_threshold:0\0";

fn init_logging(global: &Global) {
    let default = match global.verbose {
        0 => "warn",
        1 => "info",
        _ => "debug",
    };
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default));
    // Colour only for people: cron mails and log files get plain text.
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_writer(std::io::stderr);
    match global.log_format {
        LogFormat::Text => builder.init(),
        LogFormat::Json => builder.json().init(),
    }
}

/// Cancels `cancel` on SIGINT or SIGTERM, so a batch stops at safe points instead of dying
/// mid-step (the process would otherwise end with the signal's default action).
fn cancel_on_signal(cancel: tokio_util::sync::CancellationToken) {
    tokio::spawn(async move {
        use tokio::signal::unix::{signal, SignalKind};
        let Ok(mut term) = signal(SignalKind::terminate()) else {
            return;
        };
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = term.recv() => {}
        }
        tracing::warn!(
            "signal received: no new partition starts; running ones stop before their swap"
        );
        cancel.cancel();
    });
}

async fn run(options: &Options) -> anyhow::Result<ExitCode> {
    match &options.command {
        CommandOptions::Inspect {
            table,
            partition,
            clustering,
        } => run_inspect(options, table, partition.as_deref(), clustering).await,
        CommandOptions::Analyze {
            tables,
            options: o,
            html,
        } => run_analyze(options, tables, o, html.as_deref()).await,
        CommandOptions::Compact {
            selection,
            options: o,
            yarn,
            yarn_task,
        } => run_compact(options, selection, o, yarn.as_deref(), *yarn_task).await,
        CommandOptions::Rollback {
            table,
            partition,
            dry_run,
        } => run_rollback(options, table, partition, *dry_run).await,
        CommandOptions::Cleanup { tables, options: o } => run_cleanup(options, tables, o).await,
        CommandOptions::Verify {
            table,
            partition,
            checksums,
        } => run_verify(options, table, partition, *checksums).await,
        CommandOptions::History { tables, options: o } => {
            let metastore = options.connect().await?;
            let report = history::history(&metastore, &options.hdfs(), tables, o).await?;
            render::history(&mut stdout(), &report, o, options.format)?;
            Ok(ExitCode::Ok)
        }
        CommandOptions::Iceberg(command) => run_iceberg(options, command).await,
    }
}

async fn run_inspect(
    options: &Options,
    table: &TableName,
    partition: Option<&str>,
    clustering: &[String],
) -> anyhow::Result<ExitCode> {
    let metastore = options.connect().await?;
    let columns: Vec<&str> = clustering.iter().map(|c| c.trim()).collect();
    let report = inspect::inspect(&metastore, &options.hdfs(), table, partition, &columns).await?;
    render::inspect(&mut stdout(), &mut stderr(), &report, options.format)?;
    Ok(report.outcome.exit_code())
}

async fn run_analyze(
    options: &Options,
    tables: &Tables,
    analyze_options: &AnalyzeOptions,
    html: Option<&std::path::Path>,
) -> anyhow::Result<ExitCode> {
    let metastore = options.connect().await?;
    let report = analyze::analyze(
        &metastore,
        &options.hdfs(),
        tables.clone(),
        analyze_options,
        &render::Surveying::new(options.format),
    )
    .await?;
    if let Some(m) = &options.metrics {
        m.analyze(&report);
    }
    render::analyze(
        &mut stdout(),
        &report,
        options.format,
        analyze_options,
        &options.metastore_calls(),
    )?;
    if let Some(path) = html {
        let page = render::census_page(&report, analyze_options);
        hive_orc_compactor::local::write_atomically(path, page.as_bytes()).with_context(|| {
            format!(
                "writing the HTML report {}: check that its directory exists and is writable",
                path.display()
            )
        })?;
    }
    // An unreadable table outranks the gate: it saw only part of the selection.
    if report.total.errors > 0 {
        return Ok(ExitCode::Failed);
    }
    if let Some(ratio) = analyze_options.fail_above {
        let target = analyze_options.target_size;
        if render::file_ratio_gate(&mut stderr(), &report, ratio, target)? {
            return Ok(ExitCode::TooManyFiles);
        }
    }
    Ok(ExitCode::Ok)
}

async fn run_rollback(
    options: &Options,
    table: &TableName,
    partition: &str,
    dry_run: bool,
) -> anyhow::Result<ExitCode> {
    let metastore = options.connect().await?;
    let report = rollback::rollback(&metastore, &options.hdfs(), table, partition, dry_run).await;
    render::rollback(&mut stdout(), &mut stderr(), &report, options.format)?;
    Ok(report.outcome.exit_code())
}

async fn run_cleanup(
    options: &Options,
    tables: &Tables,
    cleanup_options: &CleanupOptions,
) -> anyhow::Result<ExitCode> {
    let metastore = options.connect().await?;
    let hdfs = options.hdfs();
    let mut report = cleanup::plan(&metastore, &hdfs, tables.clone(), cleanup_options).await?;
    if !cleanup_options.dry_run {
        report = cleanup::execute(&metastore, &hdfs, report, cleanup_options).await;
    }
    if let Some(m) = &options.metrics {
        m.cleanup(&report);
    }
    render::cleanup(
        &mut stdout(),
        &report,
        &options.metastore_calls(),
        options.format,
    )?;
    Ok(report.exit_code())
}

async fn run_verify(
    options: &Options,
    table: &TableName,
    partition: &str,
    checksums: bool,
) -> anyhow::Result<ExitCode> {
    let metastore = options.connect().await?;
    let report = verify::verify(
        &metastore,
        &options.hdfs(),
        table,
        partition,
        checksums,
        options.threads,
    )
    .await?;
    render::verify(&mut stdout(), &mut stderr(), &report, options.format)?;
    Ok(report.outcome.exit_code())
}

async fn run_iceberg(options: &Options, command: &IcebergOptions) -> anyhow::Result<ExitCode> {
    let metastore = options.connect().await?;
    let hdfs = options.hdfs();
    match command {
        IcebergOptions::Check { tables, options: o } => {
            let report = iceberg::check(&metastore, &hdfs, tables.clone(), o).await?;
            if let Some(m) = &options.metrics {
                m.iceberg_check(&report);
            }
            let calls = options.metastore_calls();
            render::iceberg_check(&mut stdout(), &report, &calls, options.format)?;
            Ok(report.exit_code())
        }
        IcebergOptions::Migrate { table, options: o } => {
            cancel_on_signal(o.cancel.clone());
            let report = iceberg::migrate(&metastore, &hdfs, table, o).await;
            if let Some(m) = &options.metrics {
                m.iceberg_migrate(&report);
            }
            let calls = options.metastore_calls();
            render::iceberg_migrate(&mut stdout(), &report, &calls, options.format)?;
            Ok(report.outcome.exit_code())
        }
        IcebergOptions::Revert {
            table,
            dry_run,
            lock,
            cancel,
        } => {
            cancel_on_signal(cancel.clone());
            let report = iceberg::revert(&metastore, &hdfs, table, *dry_run, lock, cancel).await;
            if let Some(m) = &options.metrics {
                m.iceberg_revert(&report);
            }
            render::iceberg_revert(&mut stdout(), &report, options.format)?;
            Ok(report.outcome.exit_code())
        }
    }
}

/// Plans the selection on one connection, then compacts on a pool: a connection per batch in flight and planning's own,
/// or hands the planned partitions to a YARN job.
async fn run_compact(
    options: &Options,
    selection: &Selection,
    batch_options: &BatchOptions,
    yarn: Option<&YarnOptions>,
    yarn_task: bool,
) -> anyhow::Result<ExitCode> {
    cancel_on_signal(batch_options.compact.cancel.clone());
    if yarn_task {
        // Tests hold a task here, before its first login, to see the job's token renewed.
        fail::fail_point!("yarn-task::starting");
    }
    let metastore = options.connect().await?;
    let hdfs = options.hdfs();
    let plan = batch::plan(&metastore, &hdfs, selection, batch_options).await?;
    if let Some(yarn) = yarn {
        return run_on_yarn(options, &metastore, plan, batch_options, yarn).await;
    }
    drop(metastore);
    let resolved = &options.metastore;
    // A connection per batch in flight (at most one per --parallel), and planning's own.
    let pool = MetastorePool::connect(
        resolved.config.clone(),
        batch_options.parallel.min(plan.runs.len()) + 1,
    )
    .await
    .with_context(|| format!("metastore from {}", resolved.source))?;
    let partitions = plan.runs.len() + plan.decided.len();
    if yarn_task {
        keep_task_alive();
    }
    let observer = match yarn_task {
        true => render::Batch::yarn_task(partitions),
        false => render::Batch::new(options.format, partitions),
    };
    let named = selection.partitions.named_one_by_one();
    let observer = match named {
        true => observer.with_calls(resolved.config.meter.clone()),
        false => observer,
    };
    let summary = batch::execute(&pool, &hdfs, plan, batch_options, &observer).await;
    observer.finish();
    if let Some(m) = &options.metrics {
        m.compact(&summary);
    }
    let calls = options.metastore_calls();
    if named {
        render::metastore_calls(&mut stdout(), &calls, options.format)?;
    } else {
        render::batch_summary(&mut stdout(), &summary, None, &calls, options.format)?;
    }
    // A task's outcomes are its report lines; a failing exit would only make YARN run the
    // same partitions again. Exit 0 once every partition is reported.
    Ok(if yarn_task {
        ExitCode::Ok
    } else {
        summary.exit()
    })
}

/// A YARN task that prints nothing for `mapreduce.task.timeout` is killed; one partition may
/// take longer than that, so a status line goes out every minute while the task works.
fn keep_task_alive() {
    tokio::spawn(async {
        let mut every = tokio::time::interval(Duration::from_secs(60));
        loop {
            every.tick().await;
            eprintln!("reporter:status:hive-orc-compactor is compacting");
        }
    });
}

/// `--on-yarn`: the plan's partitions that have work go to the tasks of one YARN job (a dry run
/// prints the job instead); their reports come back into the usual summary.
async fn run_on_yarn(
    options: &Options,
    metastore: &hive_orc_compactor::metastore::Metastore,
    plan: batch::BatchPlan,
    batch_options: &BatchOptions,
    yarn: &YarnOptions,
) -> anyhow::Result<ExitCode> {
    let plan = on_yarn::sift(metastore, &options.hdfs(), plan, &batch_options.compact).await;
    let mut job = on_yarn::plan(&plan, yarn);
    if batch_options.compact.dry_run {
        job.look_in_cache(&options.hdfs(), yarn).await?;
        render::yarn_plan(&mut stdout(), &job, options.format)?;
        let observer = render::Batch::new(options.format, plan.decided.len());
        for r in &plan.decided {
            batch::Observer::finished(&observer, r);
        }
        observer.finish();
        return Ok(ExitCode::Ok);
    }
    let observer = render::Batch::new(options.format, plan.runs.len() + plan.decided.len());
    let bar = render::Batch::yarn_job(options.format);
    let progress = |pct: u8| bar.set_position(u64::from(pct));
    let (summary, report) = on_yarn::execute(
        metastore,
        &options.hdfs(),
        plan,
        job,
        yarn,
        &observer,
        &progress,
    )
    .await;
    bar.finish_and_clear();
    observer.finish();
    if let Some(m) = &options.metrics {
        m.compact(&summary);
        m.tasks_calls(&report.metastore_calls);
    }
    // What the run cost the metastore: this host's calls and the tasks'.
    let calls = options.metastore_calls().plus(&report.metastore_calls);
    render::batch_summary(
        &mut stdout(),
        &summary,
        Some(&report),
        &calls,
        options.format,
    )?;
    Ok(summary.exit())
}

/// Logs in, and runs the command.
async fn start(options: Options) -> anyhow::Result<ExitCode> {
    hive_orc_compactor::kerberos::set_login(hive_orc_compactor::kerberos::Login {
        principal: options.principal.clone(),
        keytab: options.keytab.clone(),
    })
    .map_err(anyhow::Error::msg)?;
    let result = run(&options).await;
    let Some(metrics) = &options.metrics else {
        return result;
    };
    // Written whatever happened: an alert must see the failed run too.
    let code = result.as_ref().map_or(ExitCode::Failed, |c| *c);
    match metrics.finish(code, &options.metastore_calls()) {
        Ok(()) => result,
        Err(e) => {
            eprintln!("error: {e:#}");
            result.map(|c| ExitCode::worst([c, ExitCode::Failed]))
        }
    }
}

fn main() -> ProcessExit {
    // Test builds only: FAILPOINTS=compact::before-swap=return (see operations/compact/mod.rs).
    #[cfg(feature = "failpoints")]
    let _failpoints = fail::FailScenario::setup();
    let (cli, matches) = cli::parse();
    if let Command::Docs(docs) = &cli.command {
        return cli::print_docs(docs);
    }
    init_logging(&cli.global);
    let options = match Options::resolve(&cli, &matches) {
        Ok(options) => options,
        Err(e) => return failed(&e),
    };
    // The CPU work runs in the runtime's tasks (inputs decoded ahead, columns read back) and
    // on the encoders' pool (a batch's columns at once); --threads sizes both. The command's
    // own future runs on this thread, which waits while the encoders work. One thread is
    // this one alone: every task takes its turn on it.
    let runtime = match options.threads {
        1 => tokio::runtime::Builder::new_current_thread(),
        n => {
            let mut multi = tokio::runtime::Builder::new_multi_thread();
            multi.worker_threads(n);
            multi
        }
    }
    .enable_all()
    .build();
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(options.threads)
        .thread_name(|i| format!("encoder-{i}"))
        .build_global();
    let runtime = match (runtime, pool) {
        (Ok(rt), Ok(())) => rt,
        (Err(e), _) => return failed(&anyhow::anyhow!("cannot start the async runtime: {e}")),
        (_, Err(e)) => return failed(&anyhow::anyhow!("cannot start the encoders' threads: {e}")),
    };
    // Every log line names the command it comes from.
    let span = tracing::info_span!("command", name = matches.subcommand_name().unwrap_or(""));
    match runtime.block_on(start(options).instrument(span)) {
        Ok(code) => ProcessExit::from(code.code() as u8),
        Err(e) => failed(&e),
    }
}

/// Prints the error on one line, the chain of contexts outermost first, and exits failed.
fn failed(e: &anyhow::Error) -> ProcessExit {
    let chain: Vec<String> = e.chain().map(|c| c.to_string()).collect();
    eprintln!("error: {}", chain.join(": "));
    ProcessExit::from(ExitCode::Failed.code() as u8)
}
