//! `iceberg revert`: gives back the Hive table an in-place `migrate` replaced, while the
//! Iceberg table is still at the version that migrate committed. The plan reads the metastore
//! and the saved definition (what `--dry-run` reports); execute swaps the tables under the
//! table lock and deletes the Iceberg metadata.

use std::collections::BTreeMap;

use anyhow::{anyhow, Context};
use serde::Serialize;
use tokio_util::sync::CancellationToken;

use super::under_table_lock;
use crate::eligibility::{Refusal, Rule};
use crate::hdfs::{Hdfs, Location};
use crate::iceberg::catalog;
use crate::lock::LockOptions;
use crate::metastore::{Metastore, Table};
use crate::operations::outcome::{Outcome, Status, Stop};
use crate::orc::RangeRead;
use crate::resolve::TableName;

/// What `--json` prints: the outcome (`reverted`, `dry-run`, `refused` with rule
/// `not_revertible`, `busy`, `failed`) and the tables and metadata involved.
#[derive(Debug, Serialize)]
pub struct RevertReport {
    #[serde(flatten)]
    pub outcome: Outcome,
    pub dry_run: bool,
    pub backup_table: Option<String>,
    pub metadata_location: Option<String>,
}

/// What `revert` will do, read from the metastore and the saved definition.
struct Plan {
    /// The Iceberg table as read: it must be unchanged when the lock is held.
    current: Table,
    /// The name the Hive table is kept under.
    backup: String,
    /// The Hive table's definition as `migrate` saved it.
    original: Table,
    /// The metadata file `migrate` committed.
    migrated: String,
}

/// `iceberg revert`.
pub async fn revert(
    metastore: &Metastore,
    hdfs: &Hdfs,
    name: &TableName,
    dry_run: bool,
    lock_options: &LockOptions,
    cancel: &CancellationToken,
) -> RevertReport {
    let mut report = RevertReport {
        outcome: Outcome::new(&name.to_string(), ""),
        dry_run,
        backup_table: None,
        metadata_location: None,
    };
    let ended = match plan(metastore, hdfs, name, &mut report).await {
        Ok(_) if dry_run => Ok(Status::DryRun),
        Ok(plan) => {
            execute(
                metastore,
                hdfs,
                name,
                &plan,
                lock_options,
                cancel,
                &mut report,
            )
            .await
        }
        Err(stop) => Err(stop),
    };
    report.outcome.end(ended);
    report
}

fn not_revertible(reason: String) -> Stop {
    Stop::Refused(Refusal::new(Rule::NotRevertible, reason))
}

/// Checks the table is as `migrate` left it and reads what to restore. Writes nothing.
async fn plan(
    metastore: &Metastore,
    hdfs: &Hdfs,
    name: &TableName,
    report: &mut RevertReport,
) -> Result<Plan, Stop> {
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
        return Err(not_revertible(format!(
            "{name} was not migrated in place by this tool (no {} parameter)",
            catalog::BACKUP_TABLE
        )));
    };
    if params.get(catalog::METADATA_LOCATION) != Some(migrated) {
        return Err(not_revertible(format!(
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
    Ok(Plan {
        backup: backup.clone(),
        migrated: migrated.clone(),
        current,
        original,
    })
}

/// Under the table lock: drop the Iceberg table (files kept), restore the Hive table from its
/// backup, then delete the Iceberg metadata.
async fn execute(
    metastore: &Metastore,
    hdfs: &Hdfs,
    name: &TableName,
    plan: &Plan,
    lock_options: &LockOptions,
    cancel: &CancellationToken,
    report: &mut RevertReport,
) -> Result<Status, Stop> {
    let warnings = &mut report.outcome.warnings;
    let swap = swap_back(metastore, name, plan);
    under_table_lock(
        metastore,
        &name.db,
        &name.table,
        lock_options,
        cancel,
        warnings,
        swap,
    )
    .await?;
    let metadata_dir = Location::parse(&plan.migrated).ok().and_then(|l| {
        l.path.rsplit_once('/').map(|(dir, _)| Location {
            fs: l.fs.clone(),
            path: dir.to_string(),
        })
    });
    if let Some(dir) = metadata_dir {
        if let Err(e) = hdfs.delete(&dir, true).await {
            warnings.push(format!("could not delete the Iceberg metadata {dir}: {e}"));
        }
    }
    Ok(Status::Reverted)
}

async fn swap_back(metastore: &Metastore, name: &TableName, plan: &Plan) -> Result<(), Stop> {
    let (db, t) = (&name.db, &name.table);
    let again = metastore
        .get_table(db, t)
        .await
        .map_err(|e| anyhow!("reading {name}: {e}"))?;
    if again != plan.current {
        return Err(not_revertible(format!(
            "{name} changed while reverting; nothing was done"
        )));
    }
    metastore
        .drop_table(db, t, false)
        .await
        .map_err(|e| anyhow!("dropping the Iceberg table {name} (files kept): {e}"))?;
    if let Err(e) = metastore
        .alter_table(db, &plan.backup, plan.original.clone(), BTreeMap::new())
        .await
    {
        // Put the Iceberg table back so the data stays reachable under its name.
        let restored = metastore.create_table(plan.current.clone()).await;
        return Err(Stop::Failed(anyhow!(
            "restoring {name} from {db}.{}: {e}{}",
            plan.backup,
            match restored {
                Ok(()) => "; the Iceberg table is back as it was".to_string(),
                Err(e2) => format!("; re-creating the Iceberg table failed too: {e2}"),
            }
        )));
    }
    Ok(())
}

async fn read_backup(hdfs: &Hdfs, file: &Location) -> anyhow::Result<Table> {
    let reader = hdfs.open(file).await?;
    let len = reader.len().await?;
    let bytes = reader.read(0..len).await?;
    catalog::decode(&bytes).with_context(|| format!("reading the Hive definition in {file}"))
}
