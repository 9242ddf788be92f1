//! The command line: flags in, an operation of the engine run, its report printed as text or
//! JSON, and an exit code cron can act on. Nothing here knows how compaction works.

mod cli_docs;
mod options;
mod render;
mod settings;

use std::io::{stderr, stdout};
use std::path::PathBuf;
use std::process::ExitCode as ProcessExit;
use std::time::Duration;

use anyhow::Context;
use clap::{ArgMatches, Args, CommandFactory, FromArgMatches, Parser, Subcommand, ValueEnum};
use hive_orc_compactor::config;
use hive_orc_compactor::exit::ExitCode;
use hive_orc_compactor::fleet::{Selection, Shard, Tables};
use hive_orc_compactor::metastore::MetastorePool;
use hive_orc_compactor::operations::analyze::{self, AnalyzeOptions};
use hive_orc_compactor::operations::batch::{self, BatchOptions};
use hive_orc_compactor::operations::cleanup::{self, CleanupOptions};
use hive_orc_compactor::operations::compact::{Stripes, VerifyLevel};
use hive_orc_compactor::operations::on_yarn::{self, YarnOptions};
use hive_orc_compactor::operations::{iceberg, inspect};
use hive_orc_compactor::operations::{rollback, verify};
use hive_orc_compactor::orc::{Compression, RowOrder};
use hive_orc_compactor::resolve::TableName;
use options::{CommandOptions, IcebergOptions, Options};
use tracing::Instrument;

/// jemalloc instead of glibc's malloc. Measured on 10,000 files of 60 rows (the re-encode
/// benchmark): glibc spent ~14% of the run in malloc and free, its arenas contended between
/// the decoding and encoding threads, and it kept freed memory: peak RSS about 190 MiB for a
/// heap that never passed 80 MiB. With jemalloc: user CPU 7.9 -> 5.9-6.6 s, peak RSS ~136 MiB.
/// mimalloc was as fast but held more at 100,000 files (BENCHMARKS.md, "What we learned").
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

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
#[command(name = "hive-orc-compactor", version = cli_docs::VERSION, about = ABOUT, long_about = LONG_ABOUT)]
struct Cli {
    #[command(flatten)]
    global: Global,
    #[command(subcommand)]
    command: Command,
}

#[derive(Args)]
struct Global {
    /// Defaults for flags, as TOML (see docs/guide/cron-and-config.md); flags and
    /// environment variables override it
    #[arg(long, global = true, value_name = "FILE", env = "HOC_CONFIG")]
    config: Option<PathBuf>,
    /// Metastore URIs, comma-separated for failover: thrift://a:9083,thrift://b:9083
    #[arg(long, global = true, value_name = "URIS", env = "HOC_METASTORE")]
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
    /// Act on HDFS as this user, on clusters without Kerberos (e.g. the table's owner, so new
    /// files can keep their owner)
    #[arg(long, global = true, value_name = "NAME", env = "HADOOP_USER_NAME")]
    hadoop_user: Option<String>,
    /// Kerberos: log in as this principal (user@REALM), for HDFS and the metastore; without
    /// --keytab its tickets come from the cache (KRB5CCNAME, kinit)
    #[arg(long, global = true, value_name = "PRINCIPAL", env = "HOC_PRINCIPAL")]
    principal: Option<String>,
    /// Kerberos: the keytab of --principal; the tool then gets and renews its own tickets
    #[arg(long, global = true, value_name = "FILE", env = "HOC_KEYTAB")]
    keytab: Option<PathBuf>,
    /// Talk to the metastore over SASL/GSSAPI (Kerberos), as hive.metastore.sasl.enabled
    #[arg(long, global = true)]
    metastore_sasl: bool,
    /// The metastore's Kerberos principal, e.g. hive/_HOST@REALM (_HOST: the URI's host);
    /// default hive.metastore.kerberos.principal; implies --metastore-sasl
    #[arg(long, global = true, value_name = "PRINCIPAL")]
    metastore_principal: Option<String>,
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
        /// Also say how clustered the rows are on these columns: the share of stripes a point
        /// lookup on each must read, from the files' statistics (before and after a
        /// compact --sort-by or --zorder)
        #[arg(long, value_name = "COL[,COL...]", value_delimiter = ',')]
        clustering: Vec<String>,
    },
    /// Find the partitions worth compacting: files, sizes and excess files per partition
    #[command(long_about = "\
Shows, for every partition of a table (or of a database's tables), its data files, bytes, mean \
and median file size, small files (below --small-file-size), the files its data needs at \
--target-size (ceil(bytes / target)), the excess files compaction could remove, and whether \
the tool may compact it (the refusal rule and reason otherwise). Sorted by excess files, most \
first; then totals per table and overall. Read-only: one listing per partition directory, no \
ORC file read, unless --deep, which plans every eligible partition as compact --dry-run does \
and shows its merge groups, stripes and files after, and which way each group's stripes would \
be made (copy or re-encode, by --stripes, --min-stripe-size and --stripe-size as in compact).

Each row also counts the NameNode objects (inodes and blocks) of the files and how many \
compaction would remove; the summary holds file-size histograms (log scale) before and after.

Unpartitioned tables show one row for the table directory; a refused table one row with the \
rule. Output: an aligned table; --json one object per partition per line, then one \
{\"summary\": ...} object; --csv one header line and one line per partition; --html FILE (or \
--format html on stdout) one self-contained page with charts and sortable tables, the same \
figures as --json. --metrics-file writes per-table gauges for Prometheus (see \"Watching it\" in \
the README).

Exit codes: 0 (refusals are findings, not errors); 1 when a table or directory could not be read.

Examples:
  hive-orc-compactor analyze --table sales.events
  hive-orc-compactor analyze --database sales --tables 'events_*' --json
  hive-orc-compactor analyze --table sales.events --deep --csv > events.csv
  hive-orc-compactor analyze --database sales --html census.html")]
    #[command(group(clap::ArgGroup::new("what").required(true).args(["table", "database"])))]
    Analyze {
        #[command(flatten)]
        scope: Scope,
        #[command(flatten)]
        sizes: Sizes,
        /// Also read every ORC tail and plan as compact --dry-run (slower: reads every file's footer)
        #[arg(long)]
        deep: bool,
        #[command(flatten)]
        stripes: StripeArgs,
        /// CSV instead of a table
        #[arg(long, conflicts_with = "json")]
        csv: bool,
        /// Also write the census as one self-contained HTML page (charts as inline SVG, no
        /// network needed: open it in any browser or mail it)
        #[arg(long, value_name = "FILE")]
        html: Option<PathBuf>,
        /// What stdout gets: text (the default), json, csv, or html (the page of --html)
        #[arg(long, value_enum, conflicts_with_all = ["json", "csv"])]
        format: Option<AnalyzeFormat>,
        #[command(flatten)]
        watch: Watch,
    },
    /// Merge partitions' small ORC files into a few large ones and swap each partition to them
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

Partitions: --partition specs, or a selection: --all, --where FILTER (evaluated by the \
metastore), or --database DB [--tables GLOB] (all partitions of those tables, or --where). A \
selection skips partitions by --min-files, --max-avg-size and --min-age (default 1h; typed \
specs only with an explicit --min-age), compacts those with the most excess files first within \
--limit and --max-bytes, --parallel at a time, and ends with a summary. --shard K/N takes a \
stable 1/N of the candidates, so N hosts can share a database. SIGINT or SIGTERM: no new \
partition starts, running ones stop before their swap (or finish if past it), exit 1.

Exit codes: 0 compacted, nothing to do, skipped, or dry run; 1 failed or interrupted; 3 \
refused; 4 busy (a writer changed the partition meanwhile: retry later); 5 verification \
failed (nothing swapped). With several partitions, the worst.

Examples:
  hive-orc-compactor compact --table sales.events --partition 'dt=2026-11-01' --dry-run
  hive-orc-compactor compact --table sales.events --partition 'dt=2026-11-01' --partition 'dt=2026-11-02'
  hive-orc-compactor compact --table sales.events --where \"dt < '2026-11-01'\" --min-files 10
  hive-orc-compactor compact --database sales --tables 'events_*' --parallel 4 --limit 500 --json")]
    #[command(group(clap::ArgGroup::new("what").required(true).args(["table", "database", "partitions_from"])))]
    Compact {
        #[command(flatten)]
        scope: Scope,
        /// A full partition spec as SHOW PARTITIONS prints it; repeat for several
        #[arg(long, value_name = "SPEC", conflicts_with_all = ["where_", "all", "database"])]
        partition: Vec<String>,
        /// Partitions matching a metastore filter, e.g. "dt < '2026-11-01'" (partition keys only)
        #[arg(long = "where", value_name = "FILTER", conflicts_with = "all")]
        where_: Option<String>,
        /// Every partition of the table (or tables)
        #[arg(long)]
        all: bool,
        #[command(flatten)]
        sizes: Sizes,
        /// Show the plan (groups, inputs, outputs, bytes) and change nothing
        #[arg(long)]
        dry_run: bool,
        /// Skip partitions with fewer data files [env: HOC_MIN_FILES]
        #[arg(long, value_name = "N", env = "HOC_MIN_FILES", hide_env = true)]
        min_files: Option<usize>,
        /// Skip partitions whose files already average more than this [env: HOC_MAX_AVG_SIZE]
        #[arg(long, value_name = "SIZE", value_parser = parse_bytes, env = "HOC_MAX_AVG_SIZE", hide_env = true)]
        max_avg_size: Option<u64>,
        /// Skip partitions with a file modified more recently (still being written); default 1h
        /// for selections [env: HOC_MIN_AGE]
        #[arg(long, value_name = "DURATION", value_parser = parse_duration, env = "HOC_MIN_AGE", hide_env = true)]
        min_age: Option<Duration>,
        /// Compact at most this many partitions in this run
        #[arg(long, value_name = "N")]
        limit: Option<usize>,
        /// Read at most this many bytes of input in this run (e.g. 500GiB)
        #[arg(long, value_name = "SIZE", value_parser = parse_bytes)]
        max_bytes: Option<u64>,
        /// Partitions compacted at once, each with its own metastore connection (default 2)
        /// [env: HOC_PARALLEL]
        #[arg(long, value_name = "N", env = "HOC_PARALLEL", hide_env = true, value_parser = clap::value_parser!(u16).range(1..=64))]
        parallel: Option<u16>,
        /// Take only shard K of N of the candidates (stable hash of db.table/partition)
        #[arg(long, value_name = "K/N")]
        shard: Option<Shard>,
        /// The partitions listed in FILE ('-': standard input), one db.table/partition-name
        /// per line, as `--on-yarn` hands them to its tasks; compacted as typed specs are
        #[arg(long, value_name = "FILE", conflicts_with_all = ["partition", "where_", "all", "table", "database", "shard"])]
        partitions_from: Option<PathBuf>,
        /// Do not take the metastore's EXCLUSIVE partition lock (writers using Hive's lock
        /// manager are then not kept out; the re-check before the swap still is)
        #[arg(long, conflicts_with = "require_lock")]
        no_lock: bool,
        /// Fail (exit 1) where the metastore has no lock manager, instead of warning and
        /// running without a lock
        #[arg(long)]
        require_lock: bool,
        /// How long to wait for a partition lock someone else holds before giving up as busy
        /// (exit 4); 0 = do not wait (default 1m)
        #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
        lock_timeout: Option<Duration>,
        /// Before the swap, re-read from HDFS every byte of the new files (full, the default) or
        /// only their tails (tail: about half the I/O; the bytes are then proven by in-process
        /// checksums of what was written and HDFS's own write checksums) [env: HOC_VERIFY]
        #[arg(long, value_name = "full|tail", value_parser = parse_verify, env = "HOC_VERIFY", hide_env = true)]
        verify: Option<VerifyLevel>,
        #[command(flatten)]
        stripes: StripeArgs,
        #[command(flatten)]
        layout: Box<LayoutArgs>,
        #[command(flatten)]
        yarn: Box<YarnArgs>,
        #[command(flatten)]
        watch: Watch,
    },
    /// Swap a compacted partition back to the files it had before
    #[command(long_about = "\
Swaps a partition back to the location and parameters it had before the compaction it points \
at now (the run named by its hive-orc-compactor.run-id parameter), with one metastore call, \
provided every file that run replaced is still there with the same length and modification \
time. Otherwise refuses (exit 3) and lists what is missing or changed. The run's own files stay \
until cleanup removes them. A later compact works as usual.

Exit codes: 0 rolled back or dry run; 1 failed; 3 refused; 4 the partition moved meanwhile.

Examples:
  hive-orc-compactor rollback --table sales.events --partition 'dt=2026-11-01' --dry-run
  hive-orc-compactor rollback --table sales.events --partition 'dt=2026-11-01'")]
    Rollback {
        /// The table, as db.table
        #[arg(long, value_name = "DB.TABLE")]
        table: TableName,
        /// A full partition spec as SHOW PARTITIONS prints it
        #[arg(long, value_name = "SPEC")]
        partition: String,
        /// Check and show what would happen; change nothing
        #[arg(long)]
        dry_run: bool,
    },
    /// Remove the files compactions replaced, once past the retention, and dead runs' leftovers
    #[command(long_about = "\
For every compaction journal older than --older-than: deletes exactly the input files the \
journal names (from the old location, only when the partition no longer points there, and only \
files with the journal's length and modification time), or for a rolled-back run its new \
directory's outputs (only the files the journal names: anything else there is reported as \
unknown_files and kept). Input files go only while the partition's directory holds every output \
the journal names. Files in an old location no journal names were written after the swap (no \
query sees them): every cleanup reports them (so do inspect and verify) until they are \
settled, with --adopt-late-files (renamed into the partition's current location; numFiles, \
totalSize and numRows then recomputed from the files' ORC tails; rawDataSize and \
COLUMN_STATS_ACCURATE dropped) or --discard-late-files (removed). Also removes staging \
directories and never-swapped run directories older than --staging-older-than, and rebuilds the \
journal of a run killed between its swap and its journal. Binaries that `compact --on-yarn` \
cached in <--yarn-dir>/binaries go once no run used them for --binaries-older-than (30 days), \
with uploads a run abandoned as long ago. Each partition is locked (as compact \
locks it while staging: readers go on), read again and planned again before anything is \
removed. Never touches a partition's current files, however its location is spelled. Journals \
are marked cleaned: a second cleanup removes nothing more.

With --rehome, a partition whose run's replaced files are gone is brought back to its canonical \
<table>/<k=v> directory, where readers that go by path look: the run's outputs are copied in \
under a hidden name, checked against the journal's checksums, made visible, and one alter \
points the partition there. The run's directory goes with a later cleanup, after --older-than.

Exit codes: 0 done (or nothing to do); 1 something could not be removed (the rest was).

Examples:
  hive-orc-compactor cleanup --table sales.events --dry-run
  hive-orc-compactor cleanup --database sales --tables 'events_*' --older-than 48h --trash")]
    #[command(group(clap::ArgGroup::new("what").required(true).args(["table", "database"])))]
    Cleanup {
        #[command(flatten)]
        scope: Scope,
        /// Keep the old files of compactions younger than this (engines' caches may read them)
        #[arg(long, value_name = "DURATION", value_parser = parse_duration, default_value = "24h")]
        older_than: Duration,
        /// Remove staging and never-swapped run directories only when older than this (longer
        /// than any run)
        #[arg(long, value_name = "DURATION", value_parser = parse_duration, default_value = "6h")]
        staging_older_than: Duration,
        /// Remove binaries `compact --on-yarn` cached under --yarn-dir that no run used for this
        /// long (longer than any job runs) [default: 30d; config: binaries_older_than]
        #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
        binaries_older_than: Option<Duration>,
        /// The --yarn-dir of `compact --on-yarn`, whose binaries/ cache is swept
        /// [default: hdfs:///user/<user>/.hive-orc-compactor/yarn; config: yarn_dir]
        #[arg(long, value_name = "URI")]
        yarn_dir: Option<String>,
        /// Move to /user/<user>/.Trash/Current instead of deleting (encryption zones' own
        /// trash directories are not detected yet)
        #[arg(long)]
        trash: bool,
        /// Rename files that arrived in an old location after the swap into the current one
        #[arg(long, conflicts_with = "discard_late_files")]
        adopt_late_files: bool,
        /// Remove files that arrived in an old location after the swap (their rows are lost
        /// for good; without --trash not even the trash keeps them)
        #[arg(long)]
        discard_late_files: bool,
        /// Once a run's replaced files are removed, bring the partition back to its canonical
        /// <table>/<k=v> directory (for readers that go by path: distcp, globs, MSCK)
        #[arg(long)]
        rehome: bool,
        /// Show what would be removed; change nothing
        #[arg(long)]
        dry_run: bool,
        #[command(flatten)]
        watch: Watch,
    },
    /// Check a partition's files against the metastore's statistics and the run's journal
    #[command(long_about = "\
Reads the partition's current files and their ORC footers, and compares them with the \
metastore's numFiles, totalSize and numRows, and, when the partition is in a compaction's \
directory, with that run's journal (names, lengths, rows; with --checksums every stripe's XXH3 \
read back from HDFS). Read-only. Names each mismatch.

Exit codes: 0 verified; 5 a mismatch; 1 could not check (e.g. no such partition).

Examples:
  hive-orc-compactor verify --table sales.events --partition 'dt=2026-11-01' --checksums")]
    Verify {
        /// The table, as db.table
        #[arg(long, value_name = "DB.TABLE")]
        table: TableName,
        /// A full partition spec as SHOW PARTITIONS prints it
        #[arg(long, value_name = "SPEC")]
        partition: String,
        /// Also re-read every stripe and compare its checksum with the journal's
        #[arg(long)]
        checksums: bool,
    },
    /// Hand a table over to Apache Iceberg without Spark: check, migrate, revert
    #[command(
        subcommand,
        long_about = "\
Hands a Hive ORC table over to Apache Iceberg (format v2) without rewriting or moving a data \
file: `check` reports what blocks the move and what it costs, `migrate` writes Iceberg metadata \
listing every data file with its partition values and column metrics from the ORC footers and \
commits the table in the metastore as Iceberg's HiveCatalog does, `revert` gives the Hive table \
back after an in-place migrate. Compact first: Iceberg lists every file, small ones cost it as \
much as they cost Hive.

Examples:
  hive-orc-compactor iceberg check --database sales --tables 'events_*'
  hive-orc-compactor iceberg migrate --table sales.events --dry-run
  hive-orc-compactor iceberg migrate --table sales.events --to sales.events_ice
  hive-orc-compactor iceberg revert --table sales.events"
    )]
    Iceberg(IcebergCommand),
    #[command(flatten)]
    Docs(cli_docs::Docs),
}

#[derive(Subcommand)]
enum IcebergCommand {
    /// Report whether tables can move to Iceberg in place, and what it costs
    #[command(long_about = "\
Reads every partition's listing and every ORC footer (read-only) and reports per table: what \
blocks an in-place move (not ORC, ACID, bucketed, views, column types Iceberg cannot hold such \
as uniontype and char, partition values it cannot express, files whose types the table's schema \
cannot read, subdirectories, unreadable files), the lossless type changes (tinyint and smallint \
become int, varchar becomes string), and the costs: partitions (and how many hold \
__HIVE_DEFAULT_PARTITION__, which becomes null), files, bytes, rows, small files, and the \
files compaction would remove first.

Exit codes: 0 every table ready; 3 a table is blocked; 1 a table could not be read.")]
    #[command(group(clap::ArgGroup::new("what").required(true).args(["table", "database"])))]
    Check {
        #[command(flatten)]
        scope: Scope,
        #[command(flatten)]
        sizes: Sizes,
        #[command(flatten)]
        watch: Watch,
    },
    /// Make a table an Iceberg table (in place, or a snapshot table beside it with --to)
    #[command(long_about = "\
Writes Iceberg metadata under <table location>/metadata: one snapshot whose manifests list \
every data file with its partition values (identity partitioning on the Hive partition keys; \
__HIVE_DEFAULT_PARTITION__ is null), record count, size and column metrics from the ORC footer \
(value and null counts; lower/upper bounds only where ORC's statistics are exact), and \
schema.name-mapping.default so readers find columns by name. Data files are neither rewritten \
nor moved. Footers are read 16 at a time; manifests are written as they fill.

In place (default): under an EXCLUSIVE metastore lock on the table, checks the table, its \
partitions and files are still as read, saves the Hive definition to \
<location>/metadata/hive-table.thrift, renames the Hive table to <table>__hive_backup and \
creates the Iceberg table under the original name (table_type=ICEBERG, metadata_location, \
Iceberg's storage handler). `iceberg revert` undoes it while no Iceberg commit happened since.

--to DB.NAME: creates a new Iceberg table over the same files (gc.enabled=false, so Iceberg \
never deletes them); the Hive table is untouched.

Exit codes: 0 migrated or dry run; 1 failed (nothing committed); 3 refused; 4 busy (the table \
is locked or changed meanwhile: retry later).")]
    Migrate {
        /// The Hive table, as db.table
        #[arg(long, value_name = "DB.TABLE")]
        table: TableName,
        /// Create a new Iceberg table with this name instead of replacing the Hive table
        #[arg(long, value_name = "DB.TABLE")]
        to: Option<TableName>,
        #[command(flatten)]
        sizes: Sizes,
        /// Read everything and report what would be written; write nothing
        #[arg(long)]
        dry_run: bool,
        /// How long to wait for the table lock before giving up as busy (exit 4; default 1m)
        #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
        lock_timeout: Option<Duration>,
        #[command(flatten)]
        watch: Watch,
    },
    /// Give back the Hive table an in-place migrate replaced
    #[command(long_about = "\
Drops the Iceberg table (its files are kept), restores the Hive table exactly as it was from \
the backup `migrate` saved (renaming <table>__hive_backup back), and deletes the Iceberg \
metadata. Refused (exit 3) once the Iceberg table has commits of its own: they would be lost.")]
    Revert {
        /// The table, as db.table
        #[arg(long, value_name = "DB.TABLE")]
        table: TableName,
        /// Check and report; change nothing
        #[arg(long)]
        dry_run: bool,
        /// How long to wait for the table lock before giving up as busy (exit 4; default 1m)
        #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
        lock_timeout: Option<Duration>,
        #[command(flatten)]
        watch: Watch,
    },
}

/// Which tables: one, or a database's (optionally matching a glob).
#[derive(Args)]
struct Scope {
    /// The table, as db.table
    #[arg(long, value_name = "DB.TABLE", conflicts_with = "database")]
    table: Option<TableName>,
    /// Every table of this database
    #[arg(long, value_name = "DB")]
    database: Option<String>,
    /// With --database: only tables whose name matches this glob, e.g. 'events_*'
    #[arg(long, value_name = "GLOB", requires = "database")]
    tables: Option<String>,
}

/// Where `compact` does its work: here, or in the tasks of a YARN job.
#[derive(Args)]
struct YarnArgs {
    /// Compact the selected partitions in a map-only YARN job (Hadoop Streaming, as DistCp
    /// runs): this host plans, writes the work list to HDFS (and itself, unless the cache in
    /// --yarn-dir has this build), submits the job with the Hadoop client's `mapred`, follows
    /// it and prints the usual reports and summary
    #[arg(long)]
    on_yarn: bool,
    /// With --on-yarn: map tasks, each compacting an equal share of the partitions, --parallel
    /// at a time (default 4)
    #[arg(long, value_name = "N", requires = "on_yarn", value_parser = clap::value_parser!(u16).range(1..))]
    tasks: Option<u16>,
    /// With --on-yarn: the YARN queue (mapreduce.job.queuename)
    #[arg(long, value_name = "QUEUE", requires = "on_yarn")]
    queue: Option<String>,
    /// With --on-yarn: the Hadoop client's mapred command (default $HADOOP_HOME/bin/mapred,
    /// else mapred on PATH) [env: HOC_HADOOP_CMD]
    #[arg(
        long,
        value_name = "PATH",
        requires = "on_yarn",
        env = "HOC_HADOOP_CMD",
        hide_env = true
    )]
    hadoop_cmd: Option<PathBuf>,
    /// With --on-yarn: a build already on HDFS for the tasks to run, as it is
    /// (hdfs://.../hive-orc-compactor); default: this binary, from the cache in
    /// <--yarn-dir>/binaries, uploaded there only when the cache lacks it
    #[arg(long, value_name = "URI", requires = "on_yarn")]
    yarn_binary: Option<String>,
    /// With --on-yarn: where the job's files go while it runs (<dir>/<run-id>, removed at its
    /// end), and the cache of this binary (<dir>/binaries, by content hash; see cleanup
    /// --binaries-older-than) [default: hdfs:///user/<user>/.hive-orc-compactor/yarn; config:
    /// yarn_dir]
    #[arg(long, value_name = "URI", requires = "on_yarn")]
    yarn_dir: Option<String>,
    /// With --on-yarn: each task's container memory (default 384MiB plus 512MiB per --parallel
    /// partition: the re-encoder's bound at 64 MiB stripes)
    #[arg(long, value_name = "SIZE", value_parser = parse_bytes, requires = "on_yarn")]
    task_memory: Option<u64>,
    /// With --on-yarn on Kerberos: ship --keytab to the tasks (uploaded to the job's work
    /// directory, mode 0600, removed with it) instead of a metastore delegation token, for
    /// metastores that refuse tokens
    #[arg(long, requires = "on_yarn")]
    yarn_keytab: bool,
    /// With --on-yarn on Kerberos: a task starts a partition only while this much remains of
    /// the job's delegation tokens, which nothing renews past their maximum lifetime (7 days by
    /// default); a partition left out is reported failed, untouched, for a new job
    /// [default: 1h, or a tenth of the tokens' lifetime where that is shorter]
    #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
    yarn_token_margin: Option<Duration>,
    /// Set by --on-yarn for its tasks: status lines on stderr, reports as JSON lines
    #[arg(long, hide = true, requires = "partitions_from")]
    yarn_task: bool,
}

/// The run's metrics, for the commands cron runs.
#[derive(Args)]
struct Watch {
    /// When the command ends, write what it did as Prometheus metrics to this file, atomically
    /// (for node_exporter's textfile collector, e.g.
    /// /var/lib/node_exporter/textfile/hoc_compact.prom) [env: HOC_METRICS_FILE]
    #[arg(long, value_name = "FILE", env = "HOC_METRICS_FILE", hide_env = true)]
    metrics_file: Option<PathBuf>,
}

/// What `analyze` prints on stdout.
#[derive(Clone, Copy, ValueEnum)]
enum AnalyzeFormat {
    Text,
    Json,
    Csv,
    Html,
}

/// How merged files get their stripes, shared by compact and analyze --deep.
#[derive(Args)]
struct StripeArgs {
    /// How merged files get their stripes: copied byte for byte (copy), or the rows decoded
    /// and re-encoded into stripes of --stripe-size (rewrite); auto (the default)
    /// re-encodes a merge group whose mean input stripe is under --min-stripe-size and
    /// copies the others [env: HOC_STRIPES]
    #[arg(long, value_name = "auto|copy|rewrite", value_parser = parse_stripes, env = "HOC_STRIPES", hide_env = true)]
    stripes: Option<Stripes>,
    /// With --stripes auto: re-encode groups whose mean input stripe is smaller (default
    /// 8MiB) [env: HOC_MIN_STRIPE_SIZE]
    #[arg(long, value_name = "SIZE", value_parser = parse_bytes, env = "HOC_MIN_STRIPE_SIZE", hide_env = true)]
    min_stripe_size: Option<u64>,
    /// Stripe size of re-encoded files (default 64MiB) [env: HOC_STRIPE_SIZE]
    #[arg(long, value_name = "SIZE", value_parser = parse_stripe_size, env = "HOC_STRIPE_SIZE", hide_env = true)]
    stripe_size: Option<u64>,
}

/// The layout compact rewrites a partition in: its rows in an order, a codec.
#[derive(Args)]
struct LayoutArgs {
    /// Rewrite every file of the partition with its rows sorted by these columns, across all
    /// outputs, so each output and each row group (10,000 rows) holds a narrow range and
    /// readers skip the rest by min/max: `col [ASC|DESC] [NULLS FIRST|NULLS LAST], ...`
    /// (Hive's defaults: ASC NULLS FIRST, DESC NULLS LAST); `addr.city` names a struct field.
    /// Large files are rewritten too; a partition already sorted so is left alone
    /// [env: HOC_SORT_BY]
    #[arg(long, value_name = "COLUMNS", value_parser = parse_sort_by, env = "HOC_SORT_BY", hide_env = true, conflicts_with = "zorder")]
    sort_by: Option<RowOrder>,
    /// Like --sort-by, along a z-order curve of two or more columns: lookups and ranges on
    /// any of them skip most row groups (a sort serves its first column best) [env: HOC_ZORDER]
    #[arg(long, value_name = "COL,COL[,...]", value_parser = parse_zorder, env = "HOC_ZORDER", hide_env = true)]
    zorder: Option<RowOrder>,
    /// Rewrite every file of the partition with this codec (zstd, zlib, snappy, lz4, none)
    /// [env: HOC_CODEC]
    #[arg(long, value_name = "CODEC", value_parser = parse_codec, env = "HOC_CODEC", hide_env = true)]
    codec: Option<Compression>,
    /// The --codec's level: zstd 1-22 (default 3), zlib 0-9 (default 2)
    /// [env: HOC_CODEC_LEVEL]
    #[arg(
        long,
        value_name = "N",
        requires = "codec",
        env = "HOC_CODEC_LEVEL",
        hide_env = true
    )]
    codec_level: Option<i32>,
    /// Decoded rows sorted in memory at once (default 256MiB); a partition with more sorts in
    /// runs spilled to --spill-dir and merged [env: HOC_SORT_MEMORY]
    #[arg(long, value_name = "SIZE", value_parser = parse_bytes, env = "HOC_SORT_MEMORY", hide_env = true)]
    sort_memory: Option<u64>,
    /// Where sorted runs spill (default: the system's temporary directory); needs up to the
    /// partition's decoded size free [env: HOC_SPILL_DIR]
    #[arg(long, value_name = "DIR", env = "HOC_SPILL_DIR", hide_env = true)]
    spill_dir: Option<PathBuf>,
}

fn parse_sort_by(s: &str) -> Result<RowOrder, String> {
    RowOrder::parse_sort(s)
}

fn parse_zorder(s: &str) -> Result<RowOrder, String> {
    RowOrder::parse_zorder(s)
}

fn parse_codec(s: &str) -> Result<Compression, String> {
    match s.to_ascii_lowercase().as_str() {
        "zstd" => Ok(Compression::Zstd),
        "zlib" => Ok(Compression::Zlib),
        "snappy" => Ok(Compression::Snappy),
        "lz4" => Ok(Compression::Lz4),
        "none" => Ok(Compression::None),
        _ => Err(format!(
            "'{s}' is not a codec we write (zstd, zlib, snappy, lz4 or none)"
        )),
    }
}

/// Sizes shared by analyze and compact.
#[derive(Args)]
struct Sizes {
    /// Aim for output files of about this size (default 256MiB) [env: HOC_TARGET_SIZE]
    #[arg(long, value_name = "SIZE", value_parser = parse_target_size, env = "HOC_TARGET_SIZE", hide_env = true)]
    target_size: Option<u64>,
    /// Files below this size count as small (default 64MiB) [env: HOC_SMALL_FILE_SIZE]
    #[arg(long, value_name = "SIZE", value_parser = parse_bytes, env = "HOC_SMALL_FILE_SIZE", hide_env = true)]
    small_file_size: Option<u64>,
}

fn parse_bytes(s: &str) -> Result<u64, String> {
    let size: bytesize::ByteSize = s
        .parse()
        .map_err(|e| format!("'{s}' is not a size (examples: 128MiB, 1GiB): {e}"))?;
    Ok(size.as_u64())
}

fn parse_target_size(s: &str) -> Result<u64, String> {
    let size = parse_bytes(s)?;
    if size < 1024 * 1024 {
        return Err(format!("'{s}' is too small a target: use at least 1MiB"));
    }
    Ok(size)
}

fn parse_verify(s: &str) -> Result<VerifyLevel, String> {
    s.parse()
}

fn parse_stripes(s: &str) -> Result<Stripes, String> {
    s.parse()
}

fn parse_stripe_size(s: &str) -> Result<u64, String> {
    let size = parse_bytes(s)?;
    if size < 64 * 1024 {
        return Err(format!("'{s}' is too small a stripe: use at least 64KiB"));
    }
    Ok(size)
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
    render::analyze(&mut stdout(), &report, options.format, analyze_options)?;
    if let Some(path) = html {
        let page = render::census_page(&report, analyze_options);
        hive_orc_compactor::local::write_atomically(path, page.as_bytes()).with_context(|| {
            format!(
                "writing the HTML report {}: check that its directory exists and is writable",
                path.display()
            )
        })?;
    }
    Ok(if report.total.errors > 0 {
        ExitCode::Failed
    } else {
        ExitCode::Ok
    })
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
    render::cleanup(&mut stdout(), &report, options.format)?;
    Ok(report.exit_code())
}

async fn run_verify(
    options: &Options,
    table: &TableName,
    partition: &str,
    checksums: bool,
) -> anyhow::Result<ExitCode> {
    let metastore = options.connect().await?;
    let report = verify::verify(&metastore, &options.hdfs(), table, partition, checksums).await?;
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
            render::iceberg_check(&mut stdout(), &report, options.format)?;
            Ok(report.exit_code())
        }
        IcebergOptions::Migrate { table, options: o } => {
            cancel_on_signal(o.cancel.clone());
            let report = iceberg::migrate(&metastore, &hdfs, table, o).await;
            if let Some(m) = &options.metrics {
                m.iceberg_migrate(&report);
            }
            render::iceberg_migrate(&mut stdout(), &report, options.format)?;
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

/// Plans the selection on one connection, then compacts on a pool of `--parallel` connections,
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
    let pool = MetastorePool::connect(
        resolved.config.clone(),
        batch_options.parallel.min(plan.runs.len()),
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
    let summary = batch::execute(&pool, &hdfs, plan, batch_options, &observer).await;
    observer.finish();
    if let Some(m) = &options.metrics {
        m.compact(&summary);
    }
    if !selection.partitions.named_one_by_one() {
        render::batch_summary(&mut stdout(), &summary, None, options.format)?;
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

/// `--on-yarn`: the plan's partitions go to the tasks of one YARN job (a dry run prints the
/// job instead); their reports come back into the usual summary.
async fn run_on_yarn(
    options: &Options,
    metastore: &hive_orc_compactor::metastore::Metastore,
    plan: batch::BatchPlan,
    batch_options: &BatchOptions,
    yarn: &YarnOptions,
) -> anyhow::Result<ExitCode> {
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
    }
    render::batch_summary(&mut stdout(), &summary, Some(&report), options.format)?;
    Ok(summary.exit())
}

/// Resolves the options, logs in, and runs the command.
async fn start(cli: Cli, matches: ArgMatches) -> anyhow::Result<ExitCode> {
    let options = Options::resolve(&cli, &matches)?;
    hive_orc_compactor::kerberos::set_login(hive_orc_compactor::kerberos::Login {
        principal: cli.global.principal.clone(),
        keytab: cli.global.keytab.clone(),
    })
    .map_err(anyhow::Error::msg)?;
    let result = run(&options).await;
    let Some(metrics) = &options.metrics else {
        return result;
    };
    // Written whatever happened: an alert must see the failed run too.
    let code = result.as_ref().map_or(ExitCode::Failed, |c| *c);
    match metrics.finish(code) {
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
    let matches = Cli::command().get_matches();
    let cli = match Cli::from_arg_matches(&matches) {
        Ok(cli) => cli,
        Err(e) => e.exit(),
    };
    if let Command::Docs(docs) = &cli.command {
        return cli_docs::run(docs, Cli::command());
    }
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
    // Every log line names the command it comes from.
    let span = tracing::info_span!("command", name = matches.subcommand_name().unwrap_or(""));
    let code = match runtime.block_on(start(cli, matches).instrument(span)) {
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
