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
//!
//! `migrate` and `revert` first plan from the metastore alone (what `--dry-run` reports), then
//! execute; every report carries the shared [`Outcome`](crate::operations::outcome::Outcome),
//! and every early stop becomes it through [`Stop`].

mod check;
mod migrate;
mod revert;
mod scan;
mod source;

pub use check::{check, CheckReport, Readiness};
pub use migrate::{migrate, MigrateOptions, MigrateReport, Target};
pub use revert::{revert, RevertReport};
pub use scan::{CheckOptions, Costs};

use std::future::Future;

use anyhow::anyhow;
use tokio_util::sync::CancellationToken;

use crate::eligibility::Refusal;
use crate::lock::{self, LockOptions};
use crate::metastore::Metastore;
use crate::operations::outcome::Stop;

/// Refused with the first block (the report lists them all), or free to go on.
fn unblocked(blocks: &[Refusal]) -> Result<(), Stop> {
    match blocks.first() {
        Some(first) => Err(Stop::Refused(first.clone())),
        None => Ok(()),
    }
}

/// Runs `step` under an EXCLUSIVE metastore lock on the whole table, as Hive takes for DDL (and
/// Iceberg's HiveCatalog for a commit); the lock is released after it, whatever it returned (a
/// failure to release is a warning: the step itself is done).
async fn under_table_lock<T>(
    metastore: &Metastore,
    db: &str,
    table: &str,
    options: &LockOptions,
    cancel: &CancellationToken,
    warnings: &mut Vec<String>,
    step: impl Future<Output = Result<T, Stop>>,
) -> Result<T, Stop> {
    let target = lock::Target {
        db,
        table,
        partition: "",
    };
    let held = lock::acquire(metastore, &target, options, cancel, warnings)
        .await
        .map_err(|e| match e {
            lock::LockError::Busy { .. } | lock::LockError::Unanswered { .. } => {
                Stop::Busy(e.to_string())
            }
            other => Stop::Failed(anyhow!(other)),
        })?;
    let result = step.await;
    if let Some(held) = held {
        if let Err(e) = held.release().await {
            warnings.push(format!("releasing the table lock: {e}"));
        }
    }
    result
}
