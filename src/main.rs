//! The command line: flags in, an operation of the engine run, its report printed as text or
//! JSON, and an exit code cron can act on. Nothing here knows how compaction works.

mod render;

use std::process::ExitCode as ProcessExit;
use std::time::Duration;

use anyhow::Context;
use clap::{Args, Parser, Subcommand, ValueEnum};
use hive_orc_compactor::config;
use hive_orc_compactor::exit::ExitCode;
use hive_orc_compactor::hdfs::Hdfs;
use hive_orc_compactor::metastore::Metastore;
use hive_orc_compactor::operations::compact::{self, CompactOptions};
use hive_orc_compactor::operations::inspect;
use hive_orc_compactor::operations::resolve::{self, TableName};

const ABOUT: &str = "Compacts the small ORC files of legacy Hive tables on HDFS, safely.";

const LONG_ABOUT: &str = "\
Compacts the small ORC files of legacy (non-ACID) Hive tables on HDFS. It reads tables and \
partitions through the Hive Metastore's Thrift API, refuses anything it must not touch (ACID, \
bucketed, views, non-ORC, list-bucketed tables, partial partition specs), and swaps a partition \
to its compacted files with one metastore call, keeping the old files until cleanup.

Where things are found:
  metastore  --metastore, else hive.metastore.uris in $HIVE_CONF_DIR/hive-site.xml, else $HMS_URI
  HDFS       core-site.xml and hdfs-site.xml in $HADOOP_CONF_DIR (HA and viewfs included);
             $HADOOP_USER_NAME sets the user on clusters without Kerberos

Exit codes (for cron; a batch exits with the worst):
  0 success or nothing to do   1 failed (untouched unless the message says otherwise)
  2 usage                      3 refused
  4 busy, retry later          5 verification failed (nothing swapped; alert a human)";

#[derive(Parser)]
#[command(name = "hive-orc-compactor", version, about = ABOUT, long_about = LONG_ABOUT)]
struct Cli {
    #[command(flatten)]
    global: Global,
    #[command(subcommand)]
    command: Command,
}

#[derive(Args)]
struct Global {
    /// Metastore URIs, comma-separated for failover: thrift://a:9083,thrift://b:9083
    #[arg(long, global = true, value_name = "URIS")]
    metastore: Option<String>,
    /// Use the framed Thrift transport (hive.metastore.thrift.framed.transport.enabled)
    #[arg(long, global = true)]
    metastore_framed: bool,
    /// Metastore read timeout, e.g. 30s or 10m (default:
    /// hive.metastore.client.socket.timeout, else 120s)
    #[arg(long, global = true, value_name = "DURATION", value_parser = parse_duration)]
    metastore_timeout: Option<Duration>,
    /// Print one JSON object instead of text, for scripts
    #[arg(long, global = true)]
    json: bool,
    /// Log more (-v info, -vv debug); RUST_LOG overrides
    #[arg(short, long, global = true, action = clap::ArgAction::Count)]
    verbose: u8,
    /// Log line format on stderr
    #[arg(long, global = true, value_enum, default_value_t = LogFormat::Text)]
    log_format: LogFormat,
}

#[derive(Clone, Copy, ValueEnum)]
enum LogFormat {
    Text,
    Json,
}

#[derive(Subcommand)]
enum Command {
    /// Show what the tool knows about a table or partition, and whether it may compact it
    #[command(long_about = "\
Shows a table's type, format, partition keys, location and eligibility; with --partition also \
the partition's location, its data files (count, bytes, min/median/max size), the hidden entries \
readers skip, and the metastore's statistics. Read-only.

Exits 3 when the tool would refuse the table or partition, naming the rule.

Examples:
  hive-orc-compactor inspect --table sales.events
  hive-orc-compactor inspect --table sales.events --partition 'dt=2026-11-01/country=US'
  hive-orc-compactor inspect --table sales.events --partition 'ts=2026-11-01 10%3A00%3A00' --json")]
    Inspect {
        /// The table, as db.table
        #[arg(long, value_name = "DB.TABLE")]
        table: TableName,
        /// A full partition spec as SHOW PARTITIONS prints it (Hive-escaped values),
        /// e.g. 'dt=2026-11-01/country=US'
        #[arg(long, value_name = "SPEC")]
        partition: Option<String>,
    },
    /// Merge a partition's small ORC files into a few large ones and swap the partition to them
    #[command(long_about = "\
Merges the small ORC files of one or more partitions into a few large files, stripe by stripe \
(byte for byte: every value, type, encoding, index and bloom filter survives), verifies them \
against the originals, and swaps each partition to its new files with one metastore call \
(alter_partition), setting numFiles, totalSize and numRows. The old files stay where they were, \
so a swap can be rolled back until cleanup.

New files are written to <partition dir>/.hive-orc-compactor/<run-id>.staging, a hidden \
directory every engine ignores, then published as <partition dir>/.hive-orc-compactor/<run-id>, \
which becomes the partition's location. Any failure before the swap leaves the partition as it \
was. Files are grouped by schema, codec and writer; each group becomes outputs near \
--target-size. Files already near the target, or that cannot be merged, are copied unchanged; \
zero-length files hold no rows and are dropped.

Exit codes: 0 compacted, nothing to do, or dry run; 1 failed; 3 refused; 4 busy (a writer \
changed the partition meanwhile: retry later); 5 verification failed (nothing swapped). With \
several partitions, the worst.

Examples:
  hive-orc-compactor compact --table sales.events --partition 'dt=2026-11-01' --dry-run
  hive-orc-compactor compact --table sales.events --partition 'dt=2026-11-01' --partition 'dt=2026-11-02'
  hive-orc-compactor compact --table sales.events --partition 'dt=2026-11-01' --target-size 512MiB --json")]
    Compact {
        /// The table, as db.table
        #[arg(long, value_name = "DB.TABLE")]
        table: TableName,
        /// A full partition spec as SHOW PARTITIONS prints it; repeat for several
        #[arg(long, value_name = "SPEC", required = true)]
        partition: Vec<String>,
        /// Aim for output files of about this size (e.g. 128MiB, 1GiB)
        #[arg(long, value_name = "SIZE", default_value = "256MiB", value_parser = parse_size)]
        target_size: u64,
        /// Show the plan (groups, inputs, outputs, bytes) and change nothing
        #[arg(long)]
        dry_run: bool,
    },
}

fn parse_size(s: &str) -> Result<u64, String> {
    let size: bytesize::ByteSize = s
        .parse()
        .map_err(|e| format!("'{s}' is not a size (examples: 128MiB, 1GiB): {e}"))?;
    if size.as_u64() < 1024 * 1024 {
        return Err(format!("'{s}' is too small a target: use at least 1MiB"));
    }
    Ok(size.as_u64())
}

fn parse_duration(s: &str) -> Result<Duration, String> {
    config::parse_duration(s, Duration::from_secs(1))
        .ok_or_else(|| format!("'{s}' is not a duration (examples: 30s, 10m, 1h)"))
}

fn init_logging(global: &Global) {
    let default = match global.verbose {
        0 => "warn",
        1 => "info",
        _ => "debug",
    };
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    match global.log_format {
        LogFormat::Text => builder.init(),
        LogFormat::Json => builder.json().init(),
    }
}

async fn connect(global: &Global) -> anyhow::Result<Metastore> {
    let resolved = config::metastore(
        global.metastore.as_deref(),
        global.metastore_framed,
        global.metastore_timeout,
    )?;
    Metastore::connect(resolved.config)
        .await
        .with_context(|| format!("metastore from {}", resolved.source))
}

async fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    let global = &cli.global;
    match &cli.command {
        Command::Inspect { table, partition } => {
            let metastore = connect(global).await?;
            let hdfs = Hdfs::new();
            let report = inspect::inspect(&metastore, &hdfs, table, partition.as_deref()).await?;
            render::inspect(&report, global.json)?;
            Ok(match report.refusal() {
                Some(refusal) => {
                    render::refusal(
                        &report.table,
                        report.partition.as_ref().map(|p| p.name.as_str()),
                        refusal,
                    );
                    ExitCode::Refused
                }
                None => ExitCode::Ok,
            })
        }
        Command::Compact {
            table,
            partition,
            target_size,
            dry_run,
        } => {
            let metastore = connect(global).await?;
            let hdfs = Hdfs::new();
            let info = resolve::table(&metastore, table).await?;
            let options = CompactOptions {
                target_size: *target_size,
                dry_run: *dry_run,
                ..CompactOptions::default()
            };
            let mut codes = Vec::new();
            for spec in partition {
                let bar = render::ProgressBar::new(!global.json, spec);
                let report =
                    compact::compact_partition(&metastore, &hdfs, &info, spec, &options, &bar)
                        .await;
                bar.finish();
                render::compact(&report, global.json)?;
                codes.push(report.status.exit_code());
            }
            Ok(ExitCode::worst(codes))
        }
    }
}

fn main() -> ProcessExit {
    // Test builds only: FAILPOINTS=compact::before-swap=return (see operations/compact.rs).
    #[cfg(feature = "failpoints")]
    let _failpoints = fail::FailScenario::setup();
    let cli = Cli::parse();
    init_logging(&cli.global);
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return ProcessExit::from(ExitCode::Failed.code() as u8);
        }
    };
    let code = match runtime.block_on(run(cli)) {
        Ok(code) => code,
        Err(e) => {
            // One line: the chain of contexts, outermost first.
            let chain: Vec<String> = e.chain().map(|c| c.to_string()).collect();
            eprintln!("error: {}", chain.join(": "));
            ExitCode::Failed
        }
    };
    ProcessExit::from(code.code() as u8)
}
