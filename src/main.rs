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
use hive_orc_compactor::operations::inspect;
use hive_orc_compactor::operations::resolve::TableName;

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
                    render::refusal(&report.table, report.partition.as_ref().map(|p| p.name.as_str()), refusal);
                    ExitCode::Refused
                }
                None => ExitCode::Ok,
            })
        }
    }
}

fn main() -> ProcessExit {
    let cli = Cli::parse();
    init_logging(&cli.global);
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
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
