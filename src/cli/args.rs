//! The command line's definition: every subcommand, flag and environment variable, with the
//! text of `--help`, the man pages and the completions (`docs.rs` renders the last two from
//! it). Values are checked by the parsers of `parse.rs`; what they mean is `options.rs`'s job.

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Parser, Subcommand, ValueEnum};
use clap_complete::Shell;
use hive_orc_compactor::fleet::Shard;
use hive_orc_compactor::operations::compact::{Stripes, VerifyLevel};
use hive_orc_compactor::orc::{Compression, RowOrder};
use hive_orc_compactor::resolve::TableName;

use super::parse::{
    parse_bytes, parse_codec, parse_duration, parse_file_ratio, parse_rate, parse_sort_by,
    parse_stripe_size, parse_stripes, parse_target_size, parse_verify, parse_zorder,
};

/// `--version`: the crate version, and for release builds the commit and target (build.rs).
pub const VERSION: &str = concat!(env!("CARGO_PKG_VERSION"), env!("HOC_BUILD_INFO"));

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
#[command(name = "hive-orc-compactor", version = VERSION, about = ABOUT, long_about = LONG_ABOUT)]
pub struct Cli {
    #[command(flatten)]
    pub global: Global,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Args)]
pub struct Global {
    /// Defaults for flags, as TOML (see docs/guide/cron-and-config.md); flags and
    /// environment variables override it
    #[arg(long, global = true, value_name = "FILE", env = "HOC_CONFIG")]
    pub config: Option<PathBuf>,
    /// Metastore URIs, comma-separated for failover: thrift://a:9083,thrift://b:9083
    #[arg(long, global = true, value_name = "URIS", env = "HOC_METASTORE")]
    pub metastore: Option<String>,
    /// Use the framed Thrift transport (hive.metastore.thrift.framed.transport.enabled)
    #[arg(long, global = true)]
    pub metastore_framed: bool,
    /// Metastore read timeout, e.g. 30s or 10m (default:
    /// hive.metastore.client.socket.timeout, else 120s)
    #[arg(long, global = true, value_name = "DURATION", value_parser = parse_duration)]
    pub metastore_timeout: Option<Duration>,
    /// Print one JSON object instead of text, for scripts
    #[arg(long, global = true)]
    pub json: bool,
    /// Log more (-v info, -vv debug); RUST_LOG overrides
    #[arg(short, long, global = true, action = clap::ArgAction::Count)]
    pub verbose: u8,
    /// Log line format on stderr
    #[arg(long, global = true, value_enum, default_value_t = LogFormat::Text)]
    pub log_format: LogFormat,
    /// Act on HDFS as this user, on clusters without Kerberos (e.g. the table's owner, so new
    /// files can keep their owner)
    #[arg(long, global = true, value_name = "NAME", env = "HADOOP_USER_NAME")]
    pub hadoop_user: Option<String>,
    /// Kerberos: log in as this principal (user@REALM), for HDFS and the metastore; without
    /// --keytab its tickets come from the cache (KRB5CCNAME, kinit)
    #[arg(long, global = true, value_name = "PRINCIPAL", env = "HOC_PRINCIPAL")]
    pub principal: Option<String>,
    /// Kerberos: the keytab of --principal; the tool then gets and renews its own tickets
    #[arg(long, global = true, value_name = "FILE", env = "HOC_KEYTAB")]
    pub keytab: Option<PathBuf>,
    /// Talk to the metastore over SASL/GSSAPI (Kerberos), as hive.metastore.sasl.enabled
    #[arg(long, global = true)]
    pub metastore_sasl: bool,
    /// The metastore's Kerberos principal, e.g. hive/_HOST@REALM (_HOST: the URI's host);
    /// default hive.metastore.kerberos.principal; implies --metastore-sasl
    #[arg(long, global = true, value_name = "PRINCIPAL")]
    pub metastore_principal: Option<String>,
    /// At most this many metastore calls a second (e.g. 50, or 0.5), however many --parallel
    /// connections run; --on-yarn gives each task its share (the rate divided by
    /// --tasks). Calls wait their turn before they are sent. Default: no limit. Every
    /// --json summary counts the calls by method (metastore_calls)
    #[arg(long, global = true, value_name = "CALLS", env = "HOC_METASTORE_RATE",
        value_parser = parse_rate)]
    pub metastore_rate: Option<f64>,
    /// Partitions read per metastore call when a run reads many (compact over a selection,
    /// analyze, cleanup, iceberg; default 500): fewer calls with larger pages, each answer a
    /// few KiB a partition [env: HOC_METASTORE_PAGE_SIZE]
    #[arg(long, global = true, value_name = "N", env = "HOC_METASTORE_PAGE_SIZE", hide_env = true,
        value_parser = clap::value_parser!(u16).range(1..=10000))]
    pub metastore_page_size: Option<u16>,
    /// CPU threads for the work of a run: decoding, sorting, encoding and reading back, shared
    /// by the --parallel partitions (default: the CPUs this process may use, counting its
    /// affinity mask and cgroup CPU quota, e.g. a container's limit, not the host's cores).
    /// One partition's outputs are the same bytes whatever the count [env: HOC_THREADS]
    #[arg(long, global = true, value_name = "N", env = "HOC_THREADS", hide_env = true,
        value_parser = clap::value_parser!(u16).range(1..=1024))]
    pub threads: Option<u16>,
}

#[derive(Clone, Copy, ValueEnum)]
pub enum LogFormat {
    Text,
    Json,
}

#[derive(Subcommand)]
pub enum Command {
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

--fail-above RATIO makes analyze a gate for pipelines: it names every partition holding more \
than RATIO times its ideal file count (files_needed, at least 1) and exits 6, so a job that \
writes a partition can fail before small files compound. Refused partitions count too: the \
gate watches the files, not what compact may do (a refused table is one row, without files).

Exit codes: 0 (refusals are findings, not errors); 1 when a table or directory could not be \
read; 6 when --fail-above finds a partition over its ratio (1 wins: the gate saw only part).

Examples:
  hive-orc-compactor analyze --table sales.events
  hive-orc-compactor analyze --table sales.events --fail-above 3x
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
        /// Exit 6, naming them, when partitions hold more than RATIO times their ideal file
        /// count (e.g. 3x, 2.5)
        #[arg(long, value_name = "RATIO", value_parser = parse_file_ratio)]
        fail_above: Option<f64>,
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
specs only with an explicit --min-age) and those suspended (their last --suspend-after attempts \
failed), compacts those that give back the most NameNode objects per second of work first \
within --budget (estimated time), --budget-bytes and --limit, each table with work getting its \
share, --parallel at a time, records what it did in each table's history (see `history`), and \
ends with a summary. --shard K/N takes a \
stable 1/N of the candidates, so N hosts can share a database. SIGINT or SIGTERM: no new \
partition starts, running ones stop before their swap (or finish if past it), exit 1.

Exit codes: 0 compacted, nothing to do, skipped, or dry run; 1 failed or interrupted; 3 \
refused; 4 busy (a writer changed the partition meanwhile: retry later); 5 verification \
failed (nothing swapped). With several partitions, the worst.

Examples:
  hive-orc-compactor compact --table sales.events --partition 'dt=2026-11-01' --dry-run
  hive-orc-compactor compact --table sales.events --partition 'dt=2026-11-01' --partition 'dt=2026-11-02'
  hive-orc-compactor compact --table sales.events --where \"dt < '2026-11-01'\" --min-files 10
  hive-orc-compactor compact --database sales --tables 'events_*' --parallel 4 --budget 2h --json")]
    #[command(group(clap::ArgGroup::new("what").required(true).args(["table", "database", "partitions_from"])))]
    Compact(Box<CompactArgs>),
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
    /// Show what past compact runs did: per run, per partition, and the table's files over time
    #[command(long_about = "\
Every compact run (not a dry run) records, in each table it surveyed or worked on, what it did \
to each partition (status, reason, the way its outputs were made, files and bytes before and \
after, seconds, the estimate it was admitted with) and the table as its survey found it (files, \
bytes, health). The records live with the data, in <table location>/.hive-orc-compactor-history/ \
(hidden from every engine), one file per run, the newest 31 runs kept; a run killed midway \
leaves the partitions it finished, its end unset. compact learns its estimates from them and \
suspends a partition whose last --suspend-after attempts failed. Read-only.

Examples:
  hive-orc-compactor history --table sales.events
  hive-orc-compactor history --table sales.events --run 20261206T020000Z-1a2b3c4d
  hive-orc-compactor history --database sales --partition 'dt=2026-11-01' --json")]
    #[command(group(clap::ArgGroup::new("what").required(true).args(["table", "database"])))]
    History {
        #[command(flatten)]
        scope: Scope,
        /// Only this run (its id, as the list of runs shows it), partition by partition
        #[arg(long, value_name = "RUN")]
        run: Option<String>,
        /// Only this partition's records, as SHOW PARTITIONS prints it
        #[arg(long, value_name = "SPEC")]
        partition: Option<String>,
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
    Docs(Docs),
}

#[derive(Subcommand)]
pub enum IcebergCommand {
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

/// `compact`'s flags.
#[derive(Args)]
pub struct CompactArgs {
    #[command(flatten)]
    pub scope: Scope,
    /// A full partition spec as SHOW PARTITIONS prints it; repeat for several
    #[arg(long, value_name = "SPEC", conflicts_with_all = ["where_", "all", "database"])]
    pub partition: Vec<String>,
    /// Partitions matching a metastore filter, e.g. "dt < '2026-11-01'" (partition keys only)
    #[arg(long = "where", value_name = "FILTER", conflicts_with = "all")]
    pub where_: Option<String>,
    /// Every partition of the table (or tables)
    #[arg(long)]
    pub all: bool,
    #[command(flatten)]
    pub sizes: Sizes,
    /// Show the plan (groups, inputs, outputs, bytes) and change nothing
    #[arg(long)]
    pub dry_run: bool,
    /// Skip partitions with fewer data files [env: HOC_MIN_FILES]
    #[arg(long, value_name = "N", env = "HOC_MIN_FILES", hide_env = true)]
    pub min_files: Option<usize>,
    /// Skip partitions whose files already average more than this [env: HOC_MAX_AVG_SIZE]
    #[arg(long, value_name = "SIZE", value_parser = parse_bytes, env = "HOC_MAX_AVG_SIZE", hide_env = true)]
    pub max_avg_size: Option<u64>,
    /// Skip partitions with a file modified more recently (still being written); default 1h
    /// for selections [env: HOC_MIN_AGE]
    #[arg(long, value_name = "DURATION", value_parser = parse_duration, env = "HOC_MIN_AGE", hide_env = true)]
    pub min_age: Option<Duration>,
    /// Compact at most this many partitions in this run
    #[arg(long, value_name = "N")]
    pub limit: Option<usize>,
    /// Read at most this many bytes of input in this run (e.g. 500GiB); each selected table
    /// with work gets its weight's share first [env: HOC_BUDGET_BYTES]
    #[arg(long, visible_alias = "max-bytes", value_name = "SIZE", value_parser = parse_bytes, env = "HOC_BUDGET_BYTES", hide_env = true)]
    pub budget_bytes: Option<u64>,
    /// Admit no partition the estimates say would end the run after this long (e.g. 2h);
    /// running partitions finish. Estimates use the rates past runs showed (see `history`)
    /// [env: HOC_BUDGET]
    #[arg(long, value_name = "DURATION", value_parser = parse_duration, env = "HOC_BUDGET", hide_env = true)]
    pub budget: Option<Duration>,
    /// Skip a partition whose last N attempts failed, until its files change or
    /// --retry-suspended (default 3; 0: never) [env: HOC_SUSPEND_AFTER]
    #[arg(long, value_name = "N", env = "HOC_SUSPEND_AFTER", hide_env = true)]
    pub suspend_after: Option<usize>,
    /// Try suspended partitions again
    #[arg(long)]
    pub retry_suspended: bool,
    /// Partitions compacted at once, each with its own metastore connection (default 2)
    /// [env: HOC_PARALLEL]
    #[arg(long, value_name = "N", env = "HOC_PARALLEL", hide_env = true, value_parser = clap::value_parser!(u16).range(1..=64))]
    pub parallel: Option<u16>,
    /// Partitions of a table that share their metastore calls (default 50): one lock request,
    /// one alter of their verified swaps, which the metastore applies in one transaction.
    /// Larger batches spare the metastore; a batch's partitions stay locked against writers
    /// from its first staging to its swap. 1 locks and swaps each partition on its own
    /// [env: HOC_BATCH_SIZE]
    #[arg(long, value_name = "N", env = "HOC_BATCH_SIZE", hide_env = true, value_parser = clap::value_parser!(u16).range(1..=1000))]
    pub batch_size: Option<u16>,
    /// Take only shard K of N of the candidates (stable hash of db.table/partition)
    #[arg(long, value_name = "K/N")]
    pub shard: Option<Shard>,
    /// The partitions listed in FILE ('-': standard input), one db.table/partition-name
    /// per line, as `--on-yarn` hands them to its tasks; compacted as typed specs are
    #[arg(long, value_name = "FILE", conflicts_with_all = ["partition", "where_", "all", "table", "database", "shard"])]
    pub partitions_from: Option<PathBuf>,
    /// Do not take the metastore's EXCLUSIVE partition lock (writers using Hive's lock
    /// manager are then not kept out; the re-check before the swap still is)
    #[arg(long, conflicts_with = "require_lock")]
    pub no_lock: bool,
    /// Fail (exit 1) where the metastore has no lock manager, instead of warning and
    /// running without a lock
    #[arg(long)]
    pub require_lock: bool,
    /// How long to wait for a partition lock someone else holds before giving up as busy
    /// (exit 4); 0 = do not wait (default 1m)
    #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
    pub lock_timeout: Option<Duration>,
    /// Before the swap, re-read from HDFS every byte of the new files (full, the default) or
    /// only their tails (tail: about half the I/O; the bytes are then proven by in-process
    /// checksums of what was written and HDFS's own write checksums) [env: HOC_VERIFY]
    #[arg(long, value_name = "full|tail", value_parser = parse_verify, env = "HOC_VERIFY", hide_env = true)]
    pub verify: Option<VerifyLevel>,
    #[command(flatten)]
    pub stripes: StripeArgs,
    #[command(flatten)]
    pub layout: Box<LayoutArgs>,
    #[command(flatten)]
    pub yarn: Box<YarnArgs>,
    #[command(flatten)]
    pub watch: Watch,
}

/// Which tables: one, or a database's (optionally matching a glob).
#[derive(Args)]
pub struct Scope {
    /// The table, as db.table
    #[arg(long, value_name = "DB.TABLE", conflicts_with = "database")]
    pub table: Option<TableName>,
    /// Every table of this database
    #[arg(long, value_name = "DB")]
    pub database: Option<String>,
    /// With --database: only tables whose name matches this glob, e.g. 'events_*'
    #[arg(long, value_name = "GLOB", requires = "database")]
    pub tables: Option<String>,
}

/// Where `compact` does its work: here, or in the tasks of a YARN job.
#[derive(Args)]
pub struct YarnArgs {
    /// Compact the selected partitions in a map-only YARN job (Hadoop Streaming, as DistCp
    /// runs): this host plans each partition as --dry-run does (no lock), writes the work list
    /// of those with work to HDFS (and itself, unless the cache in --yarn-dir has this build),
    /// submits the job with the Hadoop client's `mapred`, follows it and prints the usual
    /// reports and summary. With no partition to compact, no job is submitted
    #[arg(long)]
    pub on_yarn: bool,
    /// With --on-yarn: map tasks, each compacting an equal share of the partitions, --parallel
    /// at a time (default 4)
    #[arg(long, value_name = "N", requires = "on_yarn", value_parser = clap::value_parser!(u16).range(1..))]
    pub tasks: Option<u16>,
    /// With --on-yarn: the YARN queue (mapreduce.job.queuename)
    #[arg(long, value_name = "QUEUE", requires = "on_yarn")]
    pub queue: Option<String>,
    /// With --on-yarn: the Hadoop client's mapred command (default $HADOOP_HOME/bin/mapred,
    /// else mapred on PATH) [env: HOC_HADOOP_CMD]
    #[arg(
        long,
        value_name = "PATH",
        requires = "on_yarn",
        env = "HOC_HADOOP_CMD",
        hide_env = true
    )]
    pub hadoop_cmd: Option<PathBuf>,
    /// With --on-yarn: a build already on HDFS for the tasks to run, as it is
    /// (hdfs://.../hive-orc-compactor); default: this binary, from the cache in
    /// <--yarn-dir>/binaries, uploaded there only when the cache lacks it
    #[arg(long, value_name = "URI", requires = "on_yarn")]
    pub yarn_binary: Option<String>,
    /// With --on-yarn: where the job's files go while it runs (<dir>/<run-id>, removed at its
    /// end), and the cache of this binary (<dir>/binaries, by content hash; see cleanup
    /// --binaries-older-than) [default: hdfs:///user/<user>/.hive-orc-compactor/yarn; config:
    /// yarn_dir]
    #[arg(long, value_name = "URI", requires = "on_yarn")]
    pub yarn_dir: Option<String>,
    /// With --on-yarn: each task's container memory (default 384MiB plus 512MiB per
    /// --parallel partition or --task-vcores, whichever is more: the re-encoder's bound at
    /// 64 MiB stripes per output written at once)
    #[arg(long, value_name = "SIZE", value_parser = parse_bytes, requires = "on_yarn")]
    pub task_memory: Option<u64>,
    /// With --on-yarn: each task's container vcores (mapreduce.map.cpu.vcores), which become
    /// the task's --threads; at most the scheduler's yarn.scheduler.maximum-allocation-vcores
    /// (default: --parallel, a core per partition, up to 4)
    #[arg(long, value_name = "N", requires = "on_yarn", value_parser = clap::value_parser!(u16).range(1..=1024))]
    pub task_vcores: Option<u16>,
    /// With --on-yarn on Kerberos: ship --keytab to the tasks (uploaded to the job's work
    /// directory, mode 0600, removed with it) instead of a metastore delegation token, for
    /// metastores that refuse tokens
    #[arg(long, requires = "on_yarn")]
    pub yarn_keytab: bool,
    /// With --on-yarn on Kerberos: a task starts a partition only while this much remains of
    /// the job's delegation tokens, which nothing renews past their maximum lifetime (7 days by
    /// default); a partition left out is reported failed, untouched, for a new job
    /// [default: 1h, or a tenth of the tokens' lifetime where that is shorter]
    #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
    pub yarn_token_margin: Option<Duration>,
    /// Set by --on-yarn for its tasks: status lines on stderr, reports as JSON lines
    #[arg(long, hide = true, requires = "partitions_from")]
    pub yarn_task: bool,
}

/// The run's metrics, for the commands cron runs.
#[derive(Args)]
pub struct Watch {
    /// When the command ends, write what it did as Prometheus metrics to this file, atomically
    /// (for node_exporter's textfile collector, e.g.
    /// /var/lib/node_exporter/textfile/hoc_compact.prom) [env: HOC_METRICS_FILE]
    #[arg(long, value_name = "FILE", env = "HOC_METRICS_FILE", hide_env = true)]
    pub metrics_file: Option<PathBuf>,
}

/// What `analyze` prints on stdout.
#[derive(Clone, Copy, ValueEnum)]
pub enum AnalyzeFormat {
    Text,
    Json,
    Csv,
    Html,
}

/// How merged files get their stripes, shared by compact and analyze --deep.
#[derive(Args)]
pub struct StripeArgs {
    /// How merged files get their stripes: copied byte for byte (copy), or the rows decoded
    /// and re-encoded into stripes of --stripe-size (rewrite); auto (the default)
    /// re-encodes a merge group whose mean input stripe is under --min-stripe-size and
    /// copies the others [env: HOC_STRIPES]
    #[arg(long, value_name = "auto|copy|rewrite", value_parser = parse_stripes, env = "HOC_STRIPES", hide_env = true)]
    pub stripes: Option<Stripes>,
    /// With --stripes auto: re-encode groups whose mean input stripe is smaller (default
    /// 8MiB) [env: HOC_MIN_STRIPE_SIZE]
    #[arg(long, value_name = "SIZE", value_parser = parse_bytes, env = "HOC_MIN_STRIPE_SIZE", hide_env = true)]
    pub min_stripe_size: Option<u64>,
    /// Stripe size of re-encoded files (default 64MiB) [env: HOC_STRIPE_SIZE]
    #[arg(long, value_name = "SIZE", value_parser = parse_stripe_size, env = "HOC_STRIPE_SIZE", hide_env = true)]
    pub stripe_size: Option<u64>,
}

/// The layout compact rewrites a partition in: its rows in an order, a codec.
#[derive(Args)]
pub struct LayoutArgs {
    /// Rewrite every file of the partition with its rows sorted by these columns, across all
    /// outputs, so each output and each row group (10,000 rows) holds a narrow range and
    /// readers skip the rest by min/max: `col [ASC|DESC] [NULLS FIRST|NULLS LAST], ...`
    /// (Hive's defaults: ASC NULLS FIRST, DESC NULLS LAST); `addr.city` names a struct field.
    /// Large files are rewritten too; a partition already sorted so is left alone
    /// [env: HOC_SORT_BY]
    #[arg(long, value_name = "COLUMNS", value_parser = parse_sort_by, env = "HOC_SORT_BY", hide_env = true, conflicts_with = "zorder")]
    pub sort_by: Option<RowOrder>,
    /// Like --sort-by, along a z-order curve of two or more columns: lookups and ranges on
    /// any of them skip most row groups (a sort serves its first column best) [env: HOC_ZORDER]
    #[arg(long, value_name = "COL,COL[,...]", value_parser = parse_zorder, env = "HOC_ZORDER", hide_env = true)]
    pub zorder: Option<RowOrder>,
    /// Rewrite every file of the partition with this codec (zstd, zlib, snappy, lz4, none)
    /// [env: HOC_CODEC]
    #[arg(long, value_name = "CODEC", value_parser = parse_codec, env = "HOC_CODEC", hide_env = true)]
    pub codec: Option<Compression>,
    /// The --codec's level: zstd 1-22 (default 3), zlib 0-9 (default 2)
    /// [env: HOC_CODEC_LEVEL]
    #[arg(
        long,
        value_name = "N",
        requires = "codec",
        env = "HOC_CODEC_LEVEL",
        hide_env = true
    )]
    pub codec_level: Option<i32>,
    /// Decoded rows sorted in memory at once (default 256MiB); a partition with more sorts in
    /// runs spilled to --spill-dir and merged [env: HOC_SORT_MEMORY]
    #[arg(long, value_name = "SIZE", value_parser = parse_bytes, env = "HOC_SORT_MEMORY", hide_env = true)]
    pub sort_memory: Option<u64>,
    /// Where sorted runs spill (default: the system's temporary directory); needs up to the
    /// partition's decoded size free, half that when short of space (then LZ4-compressed)
    /// [env: HOC_SPILL_DIR]
    #[arg(long, value_name = "DIR", env = "HOC_SPILL_DIR", hide_env = true)]
    pub spill_dir: Option<PathBuf>,
}

/// Sizes shared by analyze and compact.
#[derive(Args)]
pub struct Sizes {
    /// Aim for output files of about this size (default 256MiB) [env: HOC_TARGET_SIZE]
    #[arg(long, value_name = "SIZE", value_parser = parse_target_size, env = "HOC_TARGET_SIZE", hide_env = true)]
    pub target_size: Option<u64>,
    /// Files below this size count as small (default 64MiB) [env: HOC_SMALL_FILE_SIZE]
    #[arg(long, value_name = "SIZE", value_parser = parse_bytes, env = "HOC_SMALL_FILE_SIZE", hide_env = true)]
    pub small_file_size: Option<u64>,
}

#[derive(Subcommand)]
pub enum Docs {
    /// Print a shell completion script (bash, zsh, fish, elvish, powershell)
    #[command(long_about = "\
Prints the completion script for a shell on stdout. The RPM and DEB packages install them \
already; otherwise:

  bash  hive-orc-compactor completions bash > /etc/bash_completion.d/hive-orc-compactor
  zsh   hive-orc-compactor completions zsh > \"${fpath[1]}/_hive-orc-compactor\"
  fish  hive-orc-compactor completions fish > ~/.config/fish/completions/hive-orc-compactor.fish")]
    Completions {
        #[arg(value_enum)]
        shell: Shell,
    },
    /// Print the man page (roff), or write one page per subcommand to a directory
    #[command(long_about = "\
Prints the hive-orc-compactor(1) man page as roff on stdout, or with --out-dir writes it and \
one page per subcommand (hive-orc-compactor-compact.1, ...) to that directory.

Examples:
  hive-orc-compactor man | man -l -
  hive-orc-compactor man --out-dir /usr/local/share/man/man1")]
    Man {
        /// Write hive-orc-compactor.1 and a page per subcommand here instead
        #[arg(long, value_name = "DIR")]
        out_dir: Option<PathBuf>,
    },
}
