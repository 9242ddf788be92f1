//! `iceberg migrate`: plan from the metastore (the target, its name and location; nothing
//! written), then either count (a dry run) or execute: describe every data file to Iceberg in
//! new metadata files, and commit them to the metastore. A failure before the commit deletes
//! what was written.

use std::collections::{BTreeMap, HashMap};

use anyhow::{anyhow, bail, Context};
use iceberg::spec::{
    DataContentType, DataFileBuilder, DataFileFormat, PrimitiveType, Struct, Type,
};
use serde::Serialize;
use tokio_util::sync::CancellationToken;

use super::scan::{relist, scan, CheckOptions, Costs, Count, FileFacts, FileSink, Listing};
use super::source::{load, table_blocks, table_exists, Source};
use super::{unblocked, under_table_lock};
use crate::eligibility::{Refusal, Rule};
use crate::hdfs::{Hdfs, Location};
use crate::iceberg::catalog;
use crate::iceberg::column_metrics::{self, FileColumn};
use crate::iceberg::hive_type::HiveType;
use crate::iceberg::partition;
use crate::iceberg::schema::{self, ColumnNote, Converted};
use crate::iceberg::writer::{TableWriter, Written};
use crate::lock::LockOptions;
use crate::metastore::{Metastore, Table};
use crate::operations::outcome::{Outcome, Status, Stop};
use crate::resolve::TableName;

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

/// What `--json` prints: the outcome (`migrated`, `dry-run`, `refused` with the first block as
/// rule and reason, `busy`, `failed`) and what was (or would be) written.
#[derive(Debug, Serialize)]
pub struct MigrateReport {
    #[serde(flatten)]
    pub outcome: Outcome,
    /// The Iceberg table's name.
    pub iceberg_table: String,
    pub in_place: bool,
    pub dry_run: bool,
    pub blocks: Vec<Refusal>,
    pub conversions: Vec<ColumnNote>,
    pub costs: Costs,
    pub metadata_location: Option<String>,
    pub backup_table: Option<String>,
    pub manifests: usize,
}

/// What `migrate` will do, decided from the metastore alone.
struct Plan {
    source: Source,
    converted: Converted,
    /// The Iceberg table's location: the Hive table's in place, else a new directory.
    location: Location,
    /// Table properties the target needs beyond what the writer sets.
    properties: HashMap<String, String>,
    in_place: bool,
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
        outcome: Outcome::new(&name.to_string(), ""),
        iceberg_table: iceberg_name.to_string(),
        in_place,
        dry_run: options.dry_run,
        blocks: vec![],
        conversions: vec![],
        costs: Costs::default(),
        metadata_location: None,
        backup_table: None,
        manifests: 0,
    };
    let ended = match plan(metastore, name, &iceberg_name, options, &mut report).await {
        Ok(plan) if options.dry_run => count(metastore, hdfs, &plan, options, &mut report).await,
        Ok(plan) => execute(metastore, hdfs, &plan, &iceberg_name, options, &mut report).await,
        Err(stop) => Err(stop),
    };
    report.outcome.end(ended);
    report
}

/// Reads the table and decides the target; refuses what cannot move. Writes nothing.
async fn plan(
    metastore: &Metastore,
    name: &TableName,
    iceberg_name: &TableName,
    options: &MigrateOptions,
    report: &mut MigrateReport,
) -> Result<Plan, Stop> {
    let source = load(metastore, &name.db, &name.table).await?;
    report.blocks = table_blocks(&source);
    unblocked(&report.blocks)?;
    let converted = source
        .converted
        .clone()
        .map_err(|_| anyhow!("the schema did not convert"))?;
    report.conversions = converted.conversions.clone();
    let in_place = matches!(options.target, Target::InPlace);
    let backup = catalog::backup_name(&name.table);
    let (location, properties) = if in_place {
        if table_exists(metastore, &name.db, &backup).await? {
            report.blocks.push(Refusal::new(
                Rule::BackupExists,
                format!(
                    "{}.{backup} exists: the Hive table cannot be kept under that name; drop or \
                     rename it first",
                    name.db
                ),
            ));
            unblocked(&report.blocks)?;
        }
        (source.location()?, HashMap::new())
    } else {
        if table_exists(metastore, &iceberg_name.db, &iceberg_name.table).await? {
            report.blocks.push(Refusal::new(
                Rule::TargetExists,
                format!("{iceberg_name} exists already; choose another --to name"),
            ));
            unblocked(&report.blocks)?;
        }
        let db = metastore
            .database(&iceberg_name.db)
            .await
            .with_context(|| format!("reading database {}", iceberg_name.db))?;
        let db_location = db
            .location_uri
            .ok_or_else(|| anyhow!("database {} has no location", iceberg_name.db))?;
        (
            Location::parse(&db_location)
                .map_err(anyhow::Error::from)?
                .child(&iceberg_name.table),
            // Iceberg must never delete files it does not own: they are the Hive table's.
            HashMap::from([("gc.enabled".to_string(), "false".to_string())]),
        )
    };
    Ok(Plan {
        source,
        converted,
        location,
        properties,
        in_place,
    })
}

/// The dry run: lists and reads every footer as `execute` would, and writes nothing.
async fn count(
    metastore: &Metastore,
    hdfs: &Hdfs,
    plan: &Plan,
    options: &MigrateOptions,
    report: &mut MigrateReport,
) -> Result<Status, Stop> {
    let scan = scan(
        hdfs,
        metastore,
        &plan.source,
        &options.check,
        &options.cancel,
        &mut Count,
    )
    .await?;
    report.costs = scan.costs;
    report.blocks = scan.blocks;
    unblocked(&report.blocks)?;
    Ok(Status::DryRun)
}

/// Writes the Iceberg metadata and commits it; on any failure deletes what it wrote.
async fn execute(
    metastore: &Metastore,
    hdfs: &Hdfs,
    plan: &Plan,
    iceberg_name: &TableName,
    options: &MigrateOptions,
    report: &mut MigrateReport,
) -> Result<Status, Stop> {
    let (written, scanned) = write_table(metastore, hdfs, plan, options, report).await?;
    report.metadata_location = Some(written.metadata_location.clone());
    report.manifests = written.manifests;
    // Test builds can pause here (`FAILPOINTS=iceberg::before-commit=sleep(4000)`), to prove
    // that the commit notices files changed since they were described.
    #[cfg(feature = "failpoints")]
    fail::fail_point!("iceberg::before-commit");
    let committed = if plan.in_place {
        let (db, name) = (&plan.source.info.db, &plan.source.info.name);
        let mut warnings = vec![];
        let commit = commit_in_place(metastore, hdfs, plan, &written, &scanned, options, report);
        let (lock, cancel) = (&options.lock, &options.cancel);
        let done = under_table_lock(metastore, db, name, lock, cancel, &mut warnings, commit).await;
        report.outcome.warnings.extend(warnings);
        done
    } else {
        commit_snapshot(metastore, plan, iceberg_name, &written).await
    };
    if let Err(stop) = committed {
        for file in written.files.iter().rev() {
            if let Ok(l) = Location::parse(file) {
                if let Err(e) = hdfs.delete(&l, false).await {
                    report
                        .outcome
                        .warnings
                        .push(format!("could not delete {l}: {e}"));
                }
            }
        }
        // The directory too, when it is empty (non-recursive): an empty `metadata` left in an
        // unpartitioned table's directory would be a subdirectory Hive tools trip on.
        let _ = hdfs.delete(&plan.location.child("metadata"), false).await;
        report.metadata_location = None;
        return Err(stop);
    }
    Ok(Status::Migrated)
}

/// Describes each data file to Iceberg and adds it to the table being written.
struct Describe<'w, 'h> {
    writer: &'w mut TableWriter<'h>,
    /// Per data column: field id, Hive type, Iceberg type when primitive (metrics are kept for
    /// top-level primitive columns only).
    columns: Vec<(i32, HiveType, Option<PrimitiveType>)>,
    data_names: Vec<String>,
    /// The partition keys' Hive types, to turn a partition's values into Iceberg's tuple.
    key_types: Vec<HiveType>,
    spec_id: i32,
}

impl FileSink for Describe<'_, '_> {
    fn take(&mut self, f: FileFacts) -> anyhow::Result<()> {
        let Ok(Some((tail, statistics))) = f.tail else {
            bail!("{}: not a readable ORC file", f.location);
        };
        let at = schema::file_columns(&tail.footer.types, &self.data_names);
        let statistics = statistics.file;
        let mut cols = vec![];
        for ((id, hive, prim), at) in self.columns.iter().zip(&at) {
            if let (Some(prim), Some(at)) = (prim, at) {
                if let Some(stats) = statistics.get(*at as usize) {
                    cols.push(FileColumn {
                        field_id: *id,
                        hive,
                        iceberg: prim,
                        stats,
                    });
                }
            }
        }
        let m = column_metrics::of_file(tail.rows, tail.writer_version, &cols);
        let partition = match &f.partition {
            Some(values) => Struct::from_iter(
                self.key_types
                    .iter()
                    .zip(values.iter())
                    .map(|(t, v)| partition::value(t, v).ok().flatten()),
            ),
            None => Struct::empty(),
        };
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
        self.writer.add(file)
    }

    async fn settle(&mut self) -> anyhow::Result<()> {
        self.writer.roll().await
    }
}

/// Writes manifests, manifest list and metadata JSON; refused when the scan finds blocks (then
/// nothing is left behind).
async fn write_table(
    metastore: &Metastore,
    hdfs: &Hdfs,
    plan: &Plan,
    options: &MigrateOptions,
    report: &mut MigrateReport,
) -> Result<(Written, Listing), Stop> {
    let Plan {
        source,
        converted,
        location,
        ..
    } = plan;
    let mut properties = plan.properties.clone();
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
    let mut sink = Describe {
        writer: &mut writer,
        columns,
        data_names,
        key_types,
        spec_id,
    };
    let scan = scan(
        hdfs,
        metastore,
        source,
        &options.check,
        &options.cancel,
        &mut sink,
    )
    .await;
    let scan = match scan {
        Ok(s) => s,
        Err(e) => {
            writer.abandon().await;
            return Err(e.into());
        }
    };
    report.costs = scan.costs;
    if let Err(stop) = unblocked(&scan.blocks) {
        report.blocks = scan.blocks;
        writer.abandon().await;
        return Err(stop);
    }
    let positional = report.costs.positional_name_files > 0;
    let mapping = schema::name_mapping(&schema, positional);
    properties.insert(
        "schema.name-mapping.default".into(),
        serde_json::to_string(&mapping).map_err(anyhow::Error::from)?,
    );
    properties.insert("engine.hive.enabled".into(), "true".into());
    writer.set_properties(properties);
    Ok((writer.finish().await?, scan.listing))
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
    plan: &Plan,
    to: &TableName,
    written: &Written,
) -> Result<(), Stop> {
    let Plan {
        source,
        converted,
        location,
        ..
    } = plan;
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
        .with_context(|| format!("creating {to} in the metastore"))?;
    Ok(())
}

/// The in-place commit, run under an EXCLUSIVE table lock: check nothing changed, save the Hive
/// definition, rename the Hive table to its backup name, create the Iceberg table.
async fn commit_in_place(
    metastore: &Metastore,
    hdfs: &Hdfs,
    plan: &Plan,
    written: &Written,
    scanned: &Listing,
    options: &MigrateOptions,
    report: &mut MigrateReport,
) -> Result<(), Stop> {
    let Plan {
        source,
        converted,
        location,
        ..
    } = plan;
    let (db, name) = (&source.info.db, &source.info.name);
    // The expected previous state: the table, its partitions and their files as scanned.
    let metastore_changed = || {
        Stop::Busy(format!(
            "{db}.{name} or its partitions changed in the metastore while the Iceberg metadata \
             was written; nothing changed, run again"
        ))
    };
    let now = load(metastore, db, name).await?;
    if now.raw != source.raw || now.partition_names != source.partition_names {
        return Err(metastore_changed());
    }
    // Listings only: footers are not read again while the lock keeps Hive's queries waiting.
    let now_listed = relist(hdfs, metastore, &now, &options.check).await?;
    if now_listed.partitions != scanned.partitions {
        return Err(metastore_changed());
    }
    if now_listed.files != scanned.files {
        return Err(Stop::Busy(format!(
            "files of {db}.{name} changed while the Iceberg metadata was written; nothing \
             changed, run again"
        )));
    }
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
            return Err(Stop::Failed(anyhow!(
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
        return Err(Stop::Failed(anyhow!(
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
        report.outcome.warnings.push(format!(
            "could not restore {db}.{name} from {db}.{current}: {e}; run `iceberg revert` \
             or rename it back by hand"
        ));
    }
}
