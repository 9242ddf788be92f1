//! `iceberg check`, `iceberg migrate` and `iceberg revert`: hand a Hive ORC table over to
//! Apache Iceberg without rewriting or moving a data file, and give it back.
//!
//! Promises:
//! - `check` is read-only: metastore reads, one listing per partition, every ORC footer.
//! - `migrate` writes only new files under `<location>/metadata` until its metastore commit;
//!   a failure before the commit deletes them and leaves the table as it was. The commit is
//!   taken under an EXCLUSIVE metastore lock on the table, after checking that the table, its
//!   partitions and their files are still what was read.
//! - In place, the Hive table is kept, renamed to `<table>__hive_backup`, and its exact
//!   definition is saved beside the metadata; `revert` restores it while the Iceberg table is
//!   still at the version `migrate` committed.
//! - `--to` creates a second table over the same files (`gc.enabled=false`, so Iceberg never
//!   deletes them); the Hive table is not touched.

use std::collections::{BTreeMap, HashMap};

use anyhow::{anyhow, bail, Context};
use futures::StreamExt;
use iceberg::spec::{
    DataContentType, DataFileBuilder, DataFileFormat, PrimitiveType, Struct, Type,
};
use serde::Serialize;
use tokio_util::sync::CancellationToken;

use crate::eligibility::{self, Rule};
use crate::exit::ExitCode;
use crate::fleet::{self, Tables};
use crate::hdfs::{Hdfs, Location};
use crate::iceberg::catalog;
use crate::iceberg::hive_type::HiveType;
use crate::iceberg::metrics::{self, FileColumn};
use crate::iceberg::partition::{self, HIVE_DEFAULT_PARTITION};
use crate::iceberg::schema::{self, ColumnNote, Converted};
use crate::iceberg::writer::{TableWriter, Written};
use crate::lock::{self, LockOptions};
use crate::metastore::{Metastore, MetastoreError, Partition, Table};
use crate::orc::{read_tail, OrcTail, RangeRead};
use crate::partition_spec::PartitionSpec;
use crate::resolve::TableName;
use crate::table::TableInfo;

/// Footers read at once: enough to hide the NameNode and DataNode round trips, few enough that
/// the tails in flight stay small (a tail is usually a few KB, at most a few MB).
const FOOTERS_IN_FLIGHT: usize = 16;
const PARTITIONS_PER_PAGE: usize = 500;
/// Examples kept per kind of problem; the counts cover all of them.
const EXAMPLES: usize = 5;

/// One reason a table cannot move to Iceberg in place.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct Block {
    /// Stable name for scripts: the eligibility rule, or `column_type`, `partition_value`,
    /// `file_schema`, `unreadable_file`, `already_migrated`.
    pub rule: String,
    pub detail: String,
}

/// What a table holds, as Iceberg will see it.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Costs {
    pub partitions: usize,
    pub files: u64,
    pub bytes: u64,
    pub rows: u64,
    /// Files below the small-file size, and the files compaction would remove first.
    pub small_files: u64,
    pub excess_files: u64,
    /// Partitions with a `__HIVE_DEFAULT_PARTITION__` value: they become null partitions.
    pub null_partitions: usize,
    /// Zero-length files hold no rows; they are left out of the Iceberg table.
    pub empty_files: u64,
    /// Files written with Hive's positional column names (`_col0`, ...), read through the
    /// name mapping's aliases.
    pub positional_name_files: u64,
    /// Partitions outside the table directory or in a directory not named `k=v/...`: Iceberg
    /// lists their files by path and does not mind, but tools that assume the layout do.
    pub non_canonical_partitions: Vec<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Readiness {
    pub table: String,
    pub ready: bool,
    pub blocks: Vec<Block>,
    /// Columns whose type changes without changing any value (tinyint to int, ...).
    pub conversions: Vec<ColumnNote>,
    pub costs: Costs,
    /// Set when the table could not be read (the check is incomplete).
    pub error: Option<String>,
}

#[derive(Debug, Serialize)]
pub struct CheckReport {
    pub tables: Vec<Readiness>,
}

impl CheckReport {
    pub fn exit_code(&self) -> ExitCode {
        ExitCode::worst(self.tables.iter().map(|t| match (&t.error, t.ready) {
            (Some(_), _) => ExitCode::Failed,
            (None, false) => ExitCode::Refused,
            (None, true) => ExitCode::Ok,
        }))
    }

    pub fn text(&self) -> String {
        let mut out = String::new();
        for t in &self.tables {
            let c = &t.costs;
            let verdict = match (&t.error, t.ready) {
                (Some(e), _) => format!("could not be checked: {e}"),
                (None, true) => "ready to migrate in place".into(),
                (None, false) => "blocked".into(),
            };
            out.push_str(&format!("{}: {verdict}\n", t.table));
            for b in &t.blocks {
                out.push_str(&format!("  block   [{}] {}\n", b.rule, b.detail));
            }
            for n in &t.conversions {
                out.push_str(&format!(
                    "  type    {} {} -> {}: {}\n",
                    n.column,
                    n.hive_type,
                    n.iceberg_type.as_deref().unwrap_or("-"),
                    n.note
                ));
            }
            out.push_str(&format!(
                "  costs   {} partitions ({} null), {} files, {} bytes, {} rows; {} small files, \
                 {} of them removable by compacting first\n",
                c.partitions,
                c.null_partitions,
                c.files,
                c.bytes,
                c.rows,
                c.small_files,
                c.excess_files
            ));
            if c.empty_files > 0 || c.positional_name_files > 0 {
                out.push_str(&format!(
                    "  note    {} zero-length files left out; {} files with positional column \
                     names read by alias\n",
                    c.empty_files, c.positional_name_files
                ));
            }
            for p in &c.non_canonical_partitions {
                out.push_str(&format!("  note    non-canonical layout: {p}\n"));
            }
        }
        out
    }
}

#[derive(Debug, Clone)]
pub struct CheckOptions {
    pub small_file_size: u64,
    pub target_size: u64,
}

/// A Hive table read from the metastore with everything a migration needs.
struct Source {
    raw: Table,
    info: TableInfo,
    /// Data columns then partition keys, with their Hive types.
    columns: Vec<(String, HiveType)>,
    data_columns: usize,
    converted: Result<Converted, schema::Blocked>,
    partitions: Vec<Partition>,
}

impl Source {
    fn location(&self) -> anyhow::Result<Location> {
        let l = self
            .info
            .storage
            .location
            .as_deref()
            .ok_or_else(|| anyhow!("table {} has no location", self.info.qualified_name()))?;
        Ok(Location::parse(l)?)
    }

    fn partition_keys(&self) -> Vec<String> {
        self.info.partition_keys.clone()
    }

    fn partition_name(&self, p: &Partition) -> String {
        PartitionSpec::from_values(
            &self.info.partition_keys,
            p.values.as_deref().unwrap_or_default(),
        )
        .name()
    }
}

fn columns_of(fields: Option<&Vec<crate::metastore::FieldSchema>>) -> Vec<(String, String)> {
    fields
        .into_iter()
        .flatten()
        .map(|f| {
            (
                f.name.clone().unwrap_or_default(),
                f.type_.clone().unwrap_or_default(),
            )
        })
        .collect()
}

async fn load(metastore: &Metastore, db: &str, name: &str) -> anyhow::Result<Source> {
    let raw = metastore
        .get_table(db, name)
        .await
        .with_context(|| format!("reading table {db}.{name}"))?;
    let info = TableInfo::from(&raw);
    let data = columns_of(raw.sd.as_ref().and_then(|sd| sd.cols.as_ref()));
    let keys = columns_of(raw.partition_keys.as_ref());
    let converted = schema::convert_table(&data, &keys);
    let columns = data
        .iter()
        .chain(&keys)
        .map(|(n, t)| {
            (
                n.clone(),
                HiveType::parse(t).unwrap_or(HiveType::Other(t.clone())),
            )
        })
        .collect();
    let mut partitions = vec![];
    if !keys.is_empty() && eligibility::check_table(&info).is_ok() {
        let mut names = metastore
            .partition_names(db, name)
            .await
            .with_context(|| format!("listing the partitions of {db}.{name}"))?;
        names.sort();
        for page in names.chunks(PARTITIONS_PER_PAGE) {
            partitions.extend(
                metastore
                    .partitions_by_names(db, name, page)
                    .await
                    .with_context(|| format!("reading the partitions of {db}.{name}"))?,
            );
        }
    }
    Ok(Source {
        raw,
        info,
        columns,
        data_columns: data.len(),
        converted,
        partitions,
    })
}

/// The table-level reasons not to migrate, before any file is read.
fn table_blocks(source: &Source) -> Vec<Block> {
    let mut blocks = vec![];
    if source
        .info
        .params
        .get(catalog::TABLE_TYPE)
        .is_some_and(|t| t.eq_ignore_ascii_case(catalog::ICEBERG))
    {
        blocks.push(Block {
            rule: "already_migrated".into(),
            detail: "it is already an Iceberg table".into(),
        });
        return blocks;
    }
    if let Err(r) = eligibility::check_table(&source.info) {
        let detail = if r.rule == Rule::Bucketed {
            "it is bucketed: Iceberg would drop the bucketing, and readers relying on it \
             (bucketed joins, sampling) would change"
                .to_string()
        } else {
            r.reason
        };
        blocks.push(Block {
            rule: r.rule.as_str().into(),
            detail,
        });
        return blocks;
    }
    if let Err(blocked) = &source.converted {
        blocks.extend(blocked.blocks.iter().map(|n| Block {
            rule: "column_type".into(),
            detail: format!("column {} ({}): {}", n.column, n.hive_type, n.note),
        }));
    }
    blocks
}

/// One data file as a migration sees it.
struct FileFacts {
    partition: Option<usize>,
    location: Location,
    length: u64,
    tail: Result<Option<OrcTail>, String>,
}

/// Collects problems of one kind: a count and the first few examples.
#[derive(Default)]
struct Problems {
    count: u64,
    examples: Vec<String>,
}

impl Problems {
    fn add(&mut self, what: String) {
        self.count += 1;
        if self.examples.len() < EXAMPLES {
            self.examples.push(what);
        }
    }

    fn block(&self, rule: &str, what: &str) -> Option<Block> {
        (self.count > 0).then(|| Block {
            rule: rule.into(),
            detail: format!("{} {what}, e.g. {}", self.count, self.examples.join("; ")),
        })
    }
}

/// Takes each readable data file of a scan, in order.
trait FileSink {
    async fn take(&mut self, file: FileFacts) -> anyhow::Result<()>;
}

/// A scan that only counts (`check`, the recount before a commit).
struct Count;

impl FileSink for Count {
    async fn take(&mut self, _: FileFacts) -> anyhow::Result<()> {
        Ok(())
    }
}

/// Everything learnt by listing and reading every footer.
struct Scan {
    costs: Costs,
    blocks: Vec<Block>,
    /// Every data file listed, with its length: what a commit checks is still there.
    files: Vec<(String, u64)>,
}

fn paths_and_lengths(files: &[Listed]) -> Vec<(String, u64)> {
    files.iter().map(|(_, l, n)| (l.to_string(), *n)).collect()
}

/// A data file to describe: the partition it belongs to (index into the source's
/// partitions; `None` for an unpartitioned table), its path and length.
type Listed = (Option<usize>, Location, u64);

/// Lists every partition's directory (or the table directory), checking partition values and
/// directories on the way; fills the listing part of `costs` and pushes blocks.
async fn list_files(
    hdfs: &Hdfs,
    source: &Source,
    options: &CheckOptions,
    costs: &mut Costs,
    blocks: &mut Vec<Block>,
) -> anyhow::Result<Vec<Listed>> {
    let mut values = Problems::default();
    let mut subdirs = Problems::default();
    let table_location = source.location()?;
    let keys = source.partition_keys();
    let key_types: Vec<&HiveType> = source.columns[source.data_columns..]
        .iter()
        .map(|(_, t)| t)
        .collect();
    // (partition index, directory) of every directory to list.
    let mut dirs: Vec<(Option<usize>, Location)> = vec![];
    if keys.is_empty() {
        dirs.push((None, table_location.clone()));
    } else {
        costs.partitions = source.partitions.len();
        for (i, p) in source.partitions.iter().enumerate() {
            let name = source.partition_name(p);
            let vals = p.values.clone().unwrap_or_default();
            if vals.iter().any(|v| v == HIVE_DEFAULT_PARTITION) {
                costs.null_partitions += 1;
            }
            for (t, v) in key_types.iter().zip(&vals) {
                if let Err(e) = partition::value(t, v) {
                    values.add(format!("{name}: {e}"));
                }
            }
            let info = crate::table::PartitionInfo::from(p);
            if let Err(r) = eligibility::check_partition(&info.storage) {
                blocks.push(Block {
                    rule: r.rule.as_str().into(),
                    detail: format!("partition {name}: {}", r.reason),
                });
                continue;
            }
            let Some(loc) = info.storage.location.as_deref() else {
                blocks.push(Block {
                    rule: Rule::NotHdfs.as_str().into(),
                    detail: format!("partition {name} has no location"),
                });
                continue;
            };
            let loc = Location::parse(loc).map_err(|e| anyhow!("partition {name}: {e}"))?;
            if loc != table_location.child(&name) {
                costs
                    .non_canonical_partitions
                    .push(format!("{name} at {loc}"));
            }
            dirs.push((Some(i), loc));
        }
    }
    let mut files: Vec<Listed> = vec![];
    for (partition, dir) in &dirs {
        let listing = hdfs
            .list(dir)
            .await
            .with_context(|| format!("listing {dir}"))?
            .ok_or_else(|| {
                anyhow!("{dir} does not exist; run MSCK REPAIR or drop the partition")
            })?;
        if !listing.subdirs.is_empty() {
            subdirs.add(format!("{dir}: {}", listing.subdirs.join(", ")));
        }
        let sizes: Vec<u64> = listing.files.iter().map(|f| f.length).collect();
        let bytes: u64 = sizes.iter().sum();
        costs.small_files += sizes
            .iter()
            .filter(|&&s| s < options.small_file_size)
            .count() as u64;
        let needed = bytes.div_ceil(options.target_size.max(1));
        costs.excess_files += (sizes.len() as u64).saturating_sub(needed);
        for f in listing.files {
            files.push((*partition, dir.child(&f.name), f.length));
        }
    }
    blocks.extend(values.block("partition_value", "partition values Iceberg cannot express"));
    blocks.extend(subdirs.block(
        Rule::Subdirectories.as_str(),
        "directories hold subdirectories Hive does not read and Iceberg would not list",
    ));
    Ok(files)
}

/// Lists every partition (or the table directory), then reads every footer,
/// [`FOOTERS_IN_FLIGHT`] at a time, handing each readable file to `sink` in order while no
/// block is found.
async fn scan(
    hdfs: &Hdfs,
    source: &Source,
    options: &CheckOptions,
    cancel: &CancellationToken,
    sink: &mut impl FileSink,
) -> anyhow::Result<Scan> {
    let mut costs = Costs::default();
    let mut blocks = vec![];
    let mut unreadable = Problems::default();
    let mut mismatched = Problems::default();
    let files = list_files(hdfs, source, options, &mut costs, &mut blocks).await?;
    let listed = paths_and_lengths(&files);
    let facts = futures::stream::iter(files)
        .map(|(partition, location, length)| async move {
            let tail = match hdfs.open(&location).await {
                Ok(reader) => read_tail(&reader).await.map_err(|e| e.to_string()),
                Err(e) => Err(e.to_string()),
            };
            FileFacts {
                partition,
                location,
                length,
                tail,
            }
        })
        .buffered(FOOTERS_IN_FLIGHT);
    futures::pin_mut!(facts);
    let data_columns: Vec<String> = source.columns[..source.data_columns]
        .iter()
        .map(|(n, _)| n.clone())
        .collect();
    while let Some(f) = facts.next().await {
        if cancel.is_cancelled() {
            bail!("interrupted");
        }
        costs.files += 1;
        costs.bytes += f.length;
        match &f.tail {
            Err(e) => {
                unreadable.add(format!("{}: {e}", f.location));
                continue;
            }
            Ok(None) => {
                costs.empty_files += 1;
                continue;
            }
            Ok(Some(tail)) => {
                costs.rows += tail.rows;
                if schema::has_positional_names(&tail.footer.types) {
                    costs.positional_name_files += 1;
                }
                if let Some(m) = schema::unreadable_by_iceberg(&tail.footer.types) {
                    mismatched.add(format!("{}: {m}", f.location));
                    continue;
                }
                let at = schema::file_columns(&tail.footer.types, &data_columns);
                let mismatch = at.iter().zip(&source.columns).find_map(|(id, (name, t))| {
                    let m = schema::file_type_mismatch(&tail.footer.types, (*id)?, t)?;
                    Some(format!("{}: column {name}: {m}", f.location))
                });
                if let Some(m) = mismatch {
                    mismatched.add(m);
                    continue;
                }
            }
        }
        if blocks.is_empty() && unreadable.count == 0 && mismatched.count == 0 {
            sink.take(f).await?;
        }
    }
    blocks.extend(unreadable.block(Rule::UnreadableFile.as_str(), "files are not readable ORC"));
    blocks.extend(mismatched.block(
        "file_schema",
        "files hold types the table's schema cannot read through a name mapping",
    ));
    Ok(Scan {
        costs,
        blocks,
        files: listed,
    })
}

async fn readiness(
    metastore: &Metastore,
    hdfs: &Hdfs,
    info: &TableInfo,
    options: &CheckOptions,
) -> Readiness {
    let mut r = Readiness {
        table: info.qualified_name(),
        ready: false,
        blocks: vec![],
        conversions: vec![],
        costs: Costs::default(),
        error: None,
    };
    let source = match load(metastore, &info.db, &info.name).await {
        Ok(s) => s,
        Err(e) => {
            r.error = Some(format!("{e:#}"));
            return r;
        }
    };
    r.blocks = table_blocks(&source);
    r.conversions = match &source.converted {
        Ok(c) => c.conversions.clone(),
        Err(b) => b.conversions.clone(),
    };
    if r.blocks.iter().any(|b| b.rule != "column_type") {
        return r;
    }
    match scan(
        hdfs,
        &source,
        options,
        &CancellationToken::new(),
        &mut Count,
    )
    .await
    {
        Ok(scan) => {
            r.blocks.extend(scan.blocks);
            r.costs = scan.costs;
        }
        Err(e) => r.error = Some(format!("{e:#}")),
    }
    r.ready = r.blocks.is_empty() && r.error.is_none();
    r
}

/// `iceberg check`: one readiness report per selected table.
pub async fn check(
    metastore: &Metastore,
    hdfs: &Hdfs,
    tables: Tables,
    options: &CheckOptions,
) -> anyhow::Result<CheckReport> {
    let infos = fleet::tables(metastore, &tables).await?;
    let mut out = vec![];
    for info in &infos {
        out.push(readiness(metastore, hdfs, info, options).await);
    }
    Ok(CheckReport { tables: out })
}

/// Where `migrate` puts the Iceberg table.
#[derive(Debug, Clone)]
pub enum Target {
    /// Replace the Hive table by an Iceberg table of the same name (kept for `revert`).
    InPlace,
    /// A new Iceberg table beside the Hive table, which stays as it is.
    Snapshot(TableName),
}

#[derive(Debug, Clone)]
pub struct MigrateOptions {
    pub target: Target,
    pub dry_run: bool,
    pub check: CheckOptions,
    pub lock: LockOptions,
    pub cancel: CancellationToken,
}

/// How a `migrate` or `revert` ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    Migrated,
    Reverted,
    /// A dry run: nothing written.
    Planned,
    Refused,
    /// The table is locked or changed meanwhile: retry later.
    Busy,
    Failed,
}

impl Outcome {
    pub fn exit_code(self) -> ExitCode {
        match self {
            Outcome::Migrated | Outcome::Reverted | Outcome::Planned => ExitCode::Ok,
            Outcome::Refused => ExitCode::Refused,
            Outcome::Busy => ExitCode::Busy,
            Outcome::Failed => ExitCode::Failed,
        }
    }

    fn as_str(self) -> &'static str {
        match self {
            Outcome::Migrated => "migrated",
            Outcome::Reverted => "reverted",
            Outcome::Planned => "planned",
            Outcome::Refused => "refused",
            Outcome::Busy => "busy",
            Outcome::Failed => "failed",
        }
    }
}

#[derive(Debug, Serialize)]
pub struct MigrateReport {
    pub table: String,
    /// The Iceberg table's name.
    pub iceberg_table: String,
    pub in_place: bool,
    pub dry_run: bool,
    pub outcome: Outcome,
    pub blocks: Vec<Block>,
    pub conversions: Vec<ColumnNote>,
    pub costs: Costs,
    pub metadata_location: Option<String>,
    pub backup_table: Option<String>,
    pub manifests: usize,
    pub warnings: Vec<String>,
    pub error: Option<String>,
}

impl MigrateReport {
    pub fn text(&self) -> String {
        let mut out = match self.outcome {
            Outcome::Migrated => format!(
                "{} migrated to Iceberg table {}: {} files, {} rows in {} manifests\n  metadata {}\n",
                self.table,
                self.iceberg_table,
                self.costs.files - self.costs.empty_files,
                self.costs.rows,
                self.manifests,
                self.metadata_location.as_deref().unwrap_or("-"),
            ),
            Outcome::Planned => format!(
                "dry run: {} would become Iceberg table {} ({}), listing {} files, {} rows of \
                 {} partitions; nothing written\n",
                self.table,
                self.iceberg_table,
                if self.in_place {
                    "in place; the Hive definition kept for revert"
                } else {
                    "a snapshot table; the Hive table untouched"
                },
                self.costs.files - self.costs.empty_files,
                self.costs.rows,
                self.costs.partitions
            ),
            other => format!(
                "{}: {}{}\n",
                self.table,
                other.as_str(),
                self.error
                    .as_deref()
                    .map(|e| format!(": {e}"))
                    .unwrap_or_default()
            ),
        };
        if let Some(b) = &self.backup_table {
            out.push_str(&format!(
                "  the Hive table is kept as {b}; `iceberg revert --table {}` restores it\n",
                self.table
            ));
        }
        for b in &self.blocks {
            out.push_str(&format!("  block   [{}] {}\n", b.rule, b.detail));
        }
        for w in &self.warnings {
            out.push_str(&format!("  warning {w}\n"));
        }
        out
    }
}

/// `iceberg migrate`.
pub async fn migrate(
    metastore: &Metastore,
    hdfs: &Hdfs,
    name: &TableName,
    options: &MigrateOptions,
) -> MigrateReport {
    let (iceberg_name, in_place) = match &options.target {
        Target::InPlace => (name.clone(), true),
        Target::Snapshot(to) => (to.clone(), false),
    };
    let mut report = MigrateReport {
        table: name.to_string(),
        iceberg_table: iceberg_name.to_string(),
        in_place,
        dry_run: options.dry_run,
        outcome: Outcome::Failed,
        blocks: vec![],
        conversions: vec![],
        costs: Costs::default(),
        metadata_location: None,
        backup_table: None,
        manifests: 0,
        warnings: vec![],
        error: None,
    };
    if let Err(e) = migrate_into(metastore, hdfs, name, &iceberg_name, options, &mut report).await {
        if report.outcome == Outcome::Failed {
            report.error = Some(format!("{e:#}"));
        }
    }
    report
}

async fn migrate_into(
    metastore: &Metastore,
    hdfs: &Hdfs,
    name: &TableName,
    iceberg_name: &TableName,
    options: &MigrateOptions,
    report: &mut MigrateReport,
) -> anyhow::Result<()> {
    let source = load(metastore, &name.db, &name.table).await?;
    report.blocks = table_blocks(&source);
    if !report.blocks.is_empty() {
        report.outcome = Outcome::Refused;
        return Ok(());
    }
    let converted = source
        .converted
        .clone()
        .map_err(|_| anyhow!("the schema did not convert"))?;
    report.conversions = converted.conversions.clone();
    let in_place = matches!(options.target, Target::InPlace);
    let backup = catalog::backup_name(&name.table);
    let (location, properties) = if in_place {
        if table_exists(metastore, &name.db, &backup).await? {
            report.blocks.push(Block {
                rule: "backup_exists".into(),
                detail: format!(
                    "{}.{backup} exists: the Hive table cannot be kept under that name; drop or \
                     rename it first",
                    name.db
                ),
            });
            report.outcome = Outcome::Refused;
            return Ok(());
        }
        (source.location()?, HashMap::new())
    } else {
        if table_exists(metastore, &iceberg_name.db, &iceberg_name.table).await? {
            report.blocks.push(Block {
                rule: "target_exists".into(),
                detail: format!("{iceberg_name} exists already; choose another --to name"),
            });
            report.outcome = Outcome::Refused;
            return Ok(());
        }
        let db = metastore
            .database(&iceberg_name.db)
            .await
            .with_context(|| format!("reading database {}", iceberg_name.db))?;
        let db_location = db
            .location_uri
            .ok_or_else(|| anyhow!("database {} has no location", iceberg_name.db))?;
        (
            Location::parse(&db_location)?.child(&iceberg_name.table),
            // Iceberg must never delete files it does not own: they are the Hive table's.
            HashMap::from([("gc.enabled".to_string(), "false".to_string())]),
        )
    };
    if options.dry_run {
        let scan = scan(hdfs, &source, &options.check, &options.cancel, &mut Count).await?;
        report.costs = scan.costs;
        report.blocks = scan.blocks;
        report.outcome = if report.blocks.is_empty() {
            Outcome::Planned
        } else {
            Outcome::Refused
        };
        return Ok(());
    }
    let written = write_table(
        hdfs, &source, &converted, &location, properties, options, report,
    )
    .await;
    let (written, scanned) = match written {
        Ok(Some(w)) => w,
        Ok(None) => {
            report.outcome = Outcome::Refused;
            return Ok(());
        }
        Err(e) => return Err(e),
    };
    report.metadata_location = Some(written.metadata_location.clone());
    report.manifests = written.manifests;
    let committed = if in_place {
        commit_in_place(
            metastore, hdfs, &source, &converted, &written, &scanned, options, report,
        )
        .await
    } else {
        commit_snapshot(
            metastore,
            &source,
            iceberg_name,
            &location,
            &written,
            &converted,
        )
        .await
        .map_err(Failure::Failed)
    };
    match committed {
        Ok(()) => {
            report.outcome = Outcome::Migrated;
            Ok(())
        }
        Err(f) => {
            for file in written.files.iter().rev() {
                if let Ok(l) = Location::parse(file) {
                    if let Err(e) = hdfs.delete(&l, false).await {
                        report.warnings.push(format!("could not delete {l}: {e}"));
                    }
                }
            }
            // The directory too, when it is empty (non-recursive): an empty `metadata` left in
            // an unpartitioned table's directory would be a subdirectory Hive tools trip on.
            let _ = hdfs.delete(&location.child("metadata"), false).await;
            report.metadata_location = None;
            match f {
                Failure::Busy(e) => {
                    report.outcome = Outcome::Busy;
                    report.error = Some(e);
                    Ok(())
                }
                Failure::Changed(e) => {
                    report.outcome = Outcome::Busy;
                    report.error = Some(format!("{e}; nothing changed, run again"));
                    Ok(())
                }
                Failure::Failed(e) => Err(e),
            }
        }
    }
}

/// Describes each data file to Iceberg and adds it to the table being written.
struct Describe<'w, 'h> {
    writer: &'w mut TableWriter<'h>,
    /// Per data column: field id, Hive type, Iceberg type when primitive (metrics are kept for
    /// top-level primitive columns only).
    columns: Vec<(i32, HiveType, Option<PrimitiveType>)>,
    data_names: Vec<String>,
    /// Per partition of the source, its Iceberg partition tuple.
    partition_values: Vec<Struct>,
    spec_id: i32,
}

impl FileSink for Describe<'_, '_> {
    async fn take(&mut self, f: FileFacts) -> anyhow::Result<()> {
        let Ok(Some(tail)) = f.tail else {
            bail!("{}: not a readable ORC file", f.location);
        };
        let at = schema::file_columns(&tail.footer.types, &self.data_names);
        let mut cols = vec![];
        for ((id, hive, prim), at) in self.columns.iter().zip(&at) {
            if let (Some(prim), Some(at)) = (prim, at) {
                if let Some(stats) = tail.footer.statistics.get(*at as usize) {
                    cols.push(FileColumn {
                        field_id: *id,
                        hive,
                        iceberg: prim,
                        stats,
                    });
                }
            }
        }
        let m = metrics::of_file(tail.rows, tail.writer_version, &cols);
        let partition = f
            .partition
            .map(|i| self.partition_values[i].clone())
            .unwrap_or_else(Struct::empty);
        let file = DataFileBuilder::default()
            .content(DataContentType::Data)
            .file_path(f.location.to_string())
            .file_format(DataFileFormat::Orc)
            .partition(partition)
            .record_count(tail.rows)
            .file_size_in_bytes(f.length)
            .value_counts(m.value_counts)
            .null_value_counts(m.null_value_counts)
            .lower_bounds(m.lower_bounds)
            .upper_bounds(m.upper_bounds)
            .split_offsets(Some(tail.stripes.iter().map(|s| s.offset as i64).collect()))
            .partition_spec_id(self.spec_id)
            .build()
            .map_err(|e| anyhow!("describing {}: {e}", f.location))?;
        self.writer.add(file).await
    }
}

async fn table_exists(metastore: &Metastore, db: &str, name: &str) -> anyhow::Result<bool> {
    match metastore.get_table(db, name).await {
        Ok(_) => Ok(true),
        Err(MetastoreError::NotFound { .. }) => Ok(false),
        Err(e) => Err(anyhow!("reading {db}.{name}: {e}")),
    }
}

/// Writes manifests, manifest list and metadata JSON; `None` when the scan found blocks (then
/// nothing is left behind).
async fn write_table(
    hdfs: &Hdfs,
    source: &Source,
    converted: &Converted,
    location: &Location,
    mut properties: HashMap<String, String>,
    options: &MigrateOptions,
    report: &mut MigrateReport,
) -> anyhow::Result<Option<(Written, Vec<(String, u64)>)>> {
    let mut writer = TableWriter::new(
        hdfs,
        converted.schema.clone(),
        &converted.partition_keys,
        location,
        HashMap::new(),
    )?;
    let schema = writer.schema().clone();
    let spec_id = writer.partition_spec_id();
    let columns: Vec<(i32, HiveType, Option<PrimitiveType>)> = source.columns
        [..source.data_columns]
        .iter()
        .map(|(n, t)| {
            let f = schema
                .field_by_name(n)
                .expect("every column is in the schema");
            let p = match f.field_type.as_ref() {
                Type::Primitive(p) => Some(p.clone()),
                _ => None,
            };
            (f.id, t.clone(), p)
        })
        .collect();
    let data_names: Vec<String> = source.columns[..source.data_columns]
        .iter()
        .map(|(n, _)| n.clone())
        .collect();
    let key_types: Vec<HiveType> = source.columns[source.data_columns..]
        .iter()
        .map(|(_, t)| t.clone())
        .collect();
    let partition_values: Vec<Struct> = source
        .partitions
        .iter()
        .map(|p| {
            Struct::from_iter(
                key_types
                    .iter()
                    .zip(p.values.iter().flatten())
                    .map(|(t, v)| partition::value(t, v).ok().flatten()),
            )
        })
        .collect();
    let mut sink = Describe {
        writer: &mut writer,
        columns,
        data_names,
        partition_values,
        spec_id,
    };
    let scan = scan(hdfs, source, &options.check, &options.cancel, &mut sink).await;
    let scan = match scan {
        Ok(s) => s,
        Err(e) => {
            writer.abandon().await;
            return Err(e);
        }
    };
    report.costs = scan.costs;
    if !scan.blocks.is_empty() {
        report.blocks = scan.blocks;
        writer.abandon().await;
        return Ok(None);
    }
    let positional = report.costs.positional_name_files > 0;
    let mapping = schema::name_mapping(&schema, positional);
    properties.insert(
        "schema.name-mapping.default".into(),
        serde_json::to_string(&mapping)?,
    );
    properties.insert("engine.hive.enabled".into(), "true".into());
    writer.set_properties(properties);
    Ok(Some((writer.finish().await?, scan.files)))
}

enum Failure {
    /// Someone holds the table lock.
    Busy(String),
    /// The table changed since it was read.
    Changed(String),
    Failed(anyhow::Error),
}

impl From<anyhow::Error> for Failure {
    fn from(e: anyhow::Error) -> Self {
        Failure::Failed(e)
    }
}

fn extra_params(written: &Written) -> BTreeMap<String, String> {
    BTreeMap::from([
        ("uuid".to_string(), written.table_uuid.clone()),
        (
            "current-snapshot-id".to_string(),
            written.snapshot_id.to_string(),
        ),
    ])
}

async fn commit_snapshot(
    metastore: &Metastore,
    source: &Source,
    to: &TableName,
    location: &Location,
    written: &Written,
    converted: &Converted,
) -> anyhow::Result<()> {
    let mut extra = extra_params(written);
    extra.insert("external.table.purge".into(), "FALSE".into());
    let table = catalog::iceberg_table(
        &source.raw,
        &to.db,
        &to.table,
        &location.to_string(),
        &written.metadata_location,
        &converted.schema,
        extra,
    );
    metastore
        .create_table(table)
        .await
        .with_context(|| format!("creating {to} in the metastore"))
}

/// An EXCLUSIVE metastore lock on the whole table, as Hive takes for DDL (and Iceberg's
/// HiveCatalog for a commit).
async fn lock_table(
    metastore: &Metastore,
    db: &str,
    table: &str,
    options: &LockOptions,
    cancel: &CancellationToken,
    warnings: &mut Vec<String>,
) -> Result<Option<lock::PartitionLock>, Failure> {
    let target = lock::Target {
        db,
        table,
        partition: "",
    };
    lock::acquire(metastore, &target, options, cancel, warnings)
        .await
        .map_err(|e| match e {
            lock::LockError::Busy { .. } => Failure::Busy(e.to_string()),
            other => Failure::Failed(anyhow!(other)),
        })
}

/// The in-place commit, under an EXCLUSIVE table lock: check nothing changed, save the Hive
/// definition, rename the Hive table to its backup name, create the Iceberg table.
#[allow(clippy::too_many_arguments)]
async fn commit_in_place(
    metastore: &Metastore,
    hdfs: &Hdfs,
    source: &Source,
    converted: &Converted,
    written: &Written,
    scanned: &[(String, u64)],
    options: &MigrateOptions,
    report: &mut MigrateReport,
) -> Result<(), Failure> {
    let (db, name) = (&source.info.db, &source.info.name);
    let held = lock_table(
        metastore,
        db,
        name,
        &options.lock,
        &options.cancel,
        &mut report.warnings,
    )
    .await?;
    let result = commit_locked(
        metastore, hdfs, source, converted, written, scanned, options, report,
    )
    .await;
    if let Some(held) = held {
        if let Err(e) = held.release().await {
            report
                .warnings
                .push(format!("releasing the table lock: {e}"));
        }
    }
    result
}

#[allow(clippy::too_many_arguments)]
async fn commit_locked(
    metastore: &Metastore,
    hdfs: &Hdfs,
    source: &Source,
    converted: &Converted,
    written: &Written,
    scanned: &[(String, u64)],
    options: &MigrateOptions,
    report: &mut MigrateReport,
) -> Result<(), Failure> {
    let (db, name) = (&source.info.db, &source.info.name);
    // The expected previous state: the table, its partitions and their files as scanned.
    let now = load(metastore, db, name).await?;
    if now.raw != source.raw || now.partitions != source.partitions {
        return Err(Failure::Changed(format!(
            "{db}.{name} or its partitions changed in the metastore while the Iceberg metadata \
             was written"
        )));
    }
    // Listings only: footers are not read again while the lock keeps Hive's queries waiting.
    let (mut c, mut b) = (Costs::default(), vec![]);
    let now_files = list_files(hdfs, &now, &options.check, &mut c, &mut b).await?;
    if paths_and_lengths(&now_files) != *scanned {
        return Err(Failure::Changed(format!(
            "files of {db}.{name} changed while the Iceberg metadata was written"
        )));
    }
    let location = source.location()?;
    let backup_file = location.child("metadata").child("hive-table.thrift");
    let bytes = catalog::encode(&source.raw)?;
    let mut w = hdfs
        .create(&backup_file, 0o644)
        .await
        .map_err(|e| anyhow!("saving the Hive definition to {backup_file}: {e}"))?;
    w.write_bytes(bytes.into())
        .await
        .map_err(|e| anyhow!("writing {backup_file}: {e}"))?;
    w.close()
        .await
        .map_err(|e| anyhow!("closing {backup_file}: {e}"))?;
    let backup = catalog::backup_name(name);
    // Made external first, so the rename moves no data (the metastore moves a managed
    // table's directory on rename), then renamed in a second call.
    let mut external = source.raw.clone();
    external.table_type = Some("EXTERNAL_TABLE".into());
    external
        .parameters
        .get_or_insert_with(BTreeMap::new)
        .insert("EXTERNAL".into(), "TRUE".into());
    let mut renamed = external.clone();
    renamed.table_name = Some(backup.clone());
    let steps: [(&str, Table); 2] = [(name, external), (name, renamed)];
    let mut done = 0;
    for (from, table) in steps {
        if let Err(e) = metastore
            .alter_table(db, from, table, BTreeMap::new())
            .await
        {
            undo_rename(metastore, db, name, &backup, done, &source.raw, report).await;
            let _ = hdfs.delete(&backup_file, false).await;
            return Err(Failure::Failed(anyhow!(
                "keeping the Hive table as {db}.{backup}: {e}"
            )));
        }
        done += 1;
    }
    let mut extra = extra_params(written);
    extra.insert(catalog::BACKUP_TABLE.into(), backup.clone());
    extra.insert(catalog::BACKUP_FILE.into(), backup_file.to_string());
    extra.insert(
        catalog::MIGRATED_METADATA.into(),
        written.metadata_location.clone(),
    );
    let table = catalog::iceberg_table(
        &source.raw,
        db,
        name,
        &location.to_string(),
        &written.metadata_location,
        &converted.schema,
        extra,
    );
    if let Err(e) = metastore.create_table(table).await {
        undo_rename(metastore, db, name, &backup, done, &source.raw, report).await;
        let _ = hdfs.delete(&backup_file, false).await;
        return Err(Failure::Failed(anyhow!(
            "creating the Iceberg table {db}.{name}: {e}"
        )));
    }
    report.backup_table = Some(format!("{db}.{backup}"));
    Ok(())
}

/// Puts the Hive table back after a failed in-place commit (`done` alter calls were made).
async fn undo_rename(
    metastore: &Metastore,
    db: &str,
    name: &str,
    backup: &str,
    done: usize,
    original: &Table,
    report: &mut MigrateReport,
) {
    if done == 0 {
        return;
    }
    let current = if done >= 2 { backup } else { name };
    if let Err(e) = metastore
        .alter_table(db, current, original.clone(), BTreeMap::new())
        .await
    {
        report.warnings.push(format!(
            "could not restore {db}.{name} from {db}.{current}: {e}; run `iceberg revert` \
             or rename it back by hand"
        ));
    }
}

#[derive(Debug, Serialize)]
pub struct RevertReport {
    pub table: String,
    pub dry_run: bool,
    pub outcome: Outcome,
    pub reason: Option<String>,
    pub backup_table: Option<String>,
    pub metadata_location: Option<String>,
    pub warnings: Vec<String>,
}

impl RevertReport {
    pub fn text(&self) -> String {
        let mut out = match self.outcome {
            Outcome::Reverted => format!(
                "{} is the Hive table again (restored from {}); the Iceberg metadata is deleted\n",
                self.table,
                self.backup_table.as_deref().unwrap_or("-")
            ),
            Outcome::Planned => format!(
                "dry run: would drop Iceberg table {} (files kept), restore the Hive table from \
                 {} and delete {}\n",
                self.table,
                self.backup_table.as_deref().unwrap_or("-"),
                self.metadata_location.as_deref().unwrap_or("-")
            ),
            other => format!(
                "{}: {}{}\n",
                self.table,
                other.as_str(),
                self.reason
                    .as_deref()
                    .map(|e| format!(": {e}"))
                    .unwrap_or_default()
            ),
        };
        for w in &self.warnings {
            out.push_str(&format!("  warning {w}\n"));
        }
        out
    }
}

/// `iceberg revert`: gives back the Hive table an in-place `migrate` replaced, while the
/// Iceberg table is still at the version that migrate committed.
pub async fn revert(
    metastore: &Metastore,
    hdfs: &Hdfs,
    name: &TableName,
    dry_run: bool,
    lock_options: &LockOptions,
    cancel: &CancellationToken,
) -> RevertReport {
    let mut report = RevertReport {
        table: name.to_string(),
        dry_run,
        outcome: Outcome::Failed,
        reason: None,
        backup_table: None,
        metadata_location: None,
        warnings: vec![],
    };
    match revert_into(
        metastore,
        hdfs,
        name,
        dry_run,
        lock_options,
        cancel,
        &mut report,
    )
    .await
    {
        Ok(()) => {}
        Err(Failure::Busy(e)) => {
            report.outcome = Outcome::Busy;
            report.reason = Some(e);
        }
        Err(Failure::Changed(e)) => {
            report.outcome = Outcome::Refused;
            report.reason = Some(e);
        }
        Err(Failure::Failed(e)) => report.reason = Some(format!("{e:#}")),
    }
    report
}

async fn revert_into(
    metastore: &Metastore,
    hdfs: &Hdfs,
    name: &TableName,
    dry_run: bool,
    lock_options: &LockOptions,
    cancel: &CancellationToken,
    report: &mut RevertReport,
) -> Result<(), Failure> {
    let (db, t) = (&name.db, &name.table);
    let current = metastore
        .get_table(db, t)
        .await
        .map_err(|e| anyhow!("reading {name}: {e}"))?;
    let params = current.parameters.clone().unwrap_or_default();
    let (Some(backup), Some(backup_file), Some(migrated)) = (
        params.get(catalog::BACKUP_TABLE),
        params.get(catalog::BACKUP_FILE),
        params.get(catalog::MIGRATED_METADATA),
    ) else {
        return Err(Failure::Changed(format!(
            "{name} was not migrated in place by this tool (no {} parameter)",
            catalog::BACKUP_TABLE
        )));
    };
    if params.get(catalog::METADATA_LOCATION) != Some(migrated) {
        return Err(Failure::Changed(format!(
            "{name} has Iceberg commits since the migration (metadata_location is {}, the \
             migration wrote {migrated}); reverting would lose them",
            params
                .get(catalog::METADATA_LOCATION)
                .map(String::as_str)
                .unwrap_or("unset")
        )));
    }
    report.backup_table = Some(format!("{db}.{backup}"));
    report.metadata_location = Some(migrated.clone());
    let backup_file = Location::parse(backup_file).map_err(|e| anyhow!(e))?;
    let original = read_backup(hdfs, &backup_file).await?;
    metastore
        .get_table(db, backup)
        .await
        .map_err(|e| anyhow!("the kept Hive table {db}.{backup}: {e}"))?;
    if dry_run {
        report.outcome = Outcome::Planned;
        return Ok(());
    }
    let held = lock_table(metastore, db, t, lock_options, cancel, &mut report.warnings).await?;
    let result = async {
        let again = metastore
            .get_table(db, t)
            .await
            .map_err(|e| anyhow!("reading {name}: {e}"))?;
        if again != current {
            return Err(Failure::Changed(format!(
                "{name} changed while reverting; nothing was done"
            )));
        }
        metastore
            .drop_table(db, t, false)
            .await
            .map_err(|e| anyhow!("dropping the Iceberg table {name} (files kept): {e}"))?;
        if let Err(e) = metastore
            .alter_table(db, backup, original.clone(), BTreeMap::new())
            .await
        {
            // Put the Iceberg table back so the data stays reachable under its name.
            let restored = metastore.create_table(current.clone()).await;
            return Err(Failure::Failed(anyhow!(
                "restoring {name} from {db}.{backup}: {e}{}",
                match restored {
                    Ok(()) => "; the Iceberg table is back as it was".to_string(),
                    Err(e2) => format!("; re-creating the Iceberg table failed too: {e2}"),
                }
            )));
        }
        Ok(())
    }
    .await;
    if let Some(held) = held {
        if let Err(e) = held.release().await {
            report
                .warnings
                .push(format!("releasing the table lock: {e}"));
        }
    }
    result?;
    let metadata_dir = Location::parse(migrated).ok().and_then(|l| {
        l.path.rsplit_once('/').map(|(dir, _)| Location {
            fs: l.fs.clone(),
            path: dir.to_string(),
        })
    });
    if let Some(dir) = metadata_dir {
        if let Err(e) = hdfs.delete(&dir, true).await {
            report
                .warnings
                .push(format!("could not delete the Iceberg metadata {dir}: {e}"));
        }
    }
    report.outcome = Outcome::Reverted;
    Ok(())
}

async fn read_backup(hdfs: &Hdfs, file: &Location) -> anyhow::Result<Table> {
    let reader = hdfs.open(file).await?;
    let len = reader.len().await?;
    let bytes = reader.read(0..len).await?;
    catalog::decode(&bytes).with_context(|| format!("reading the Hive definition in {file}"))
}
