//! `iceberg check`: for each selected table, what blocks its move to Iceberg and what the move
//! costs. Read-only: metastore reads, one listing per partition, every ORC footer.

use serde::Serialize;
use tokio_util::sync::CancellationToken;

use super::scan::{scan, CheckOptions, Costs, Count};
use super::source::{load, table_blocks};
use crate::eligibility::{Refusal, Rule};
use crate::exit::ExitCode;
use crate::fleet::{self, Tables};
use crate::hdfs::Hdfs;
use crate::iceberg::schema::ColumnNote;
use crate::metastore::Metastore;
use crate::operations::outcome::{Outcome, Status, Stop};
use crate::table::TableInfo;

/// One table: `ready`, `refused` (the first block as rule and reason) or `failed` (it could
/// not be read, and the check is incomplete).
#[derive(Debug, Clone, Serialize)]
pub struct Readiness {
    #[serde(flatten)]
    pub outcome: Outcome,
    /// Every reason the table cannot move in place.
    pub blocks: Vec<Refusal>,
    /// Columns whose type changes without changing any value (tinyint to int, ...).
    pub conversions: Vec<ColumnNote>,
    pub costs: Costs,
}

#[derive(Debug, Serialize)]
pub struct CheckReport {
    pub tables: Vec<Readiness>,
}

impl CheckReport {
    pub fn exit_code(&self) -> ExitCode {
        ExitCode::worst(self.tables.iter().map(|t| t.outcome.exit_code()))
    }
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

async fn readiness(
    metastore: &Metastore,
    hdfs: &Hdfs,
    info: &TableInfo,
    options: &CheckOptions,
) -> Readiness {
    let mut r = Readiness {
        outcome: Outcome::new(&info.qualified_name(), ""),
        blocks: vec![],
        conversions: vec![],
        costs: Costs::default(),
    };
    let ended = assess(metastore, hdfs, info, options, &mut r).await;
    r.outcome.end(ended);
    r
}

async fn assess(
    metastore: &Metastore,
    hdfs: &Hdfs,
    info: &TableInfo,
    options: &CheckOptions,
    r: &mut Readiness,
) -> Result<Status, Stop> {
    let source = load(metastore, &info.db, &info.name).await?;
    r.blocks = table_blocks(&source);
    r.conversions = match &source.converted {
        Ok(c) => c.conversions.clone(),
        Err(b) => b.conversions.clone(),
    };
    // Column types block the move but not the scan: the costs are still worth knowing.
    if r.blocks.iter().any(|b| b.rule != Rule::ColumnType) {
        super::unblocked(&r.blocks)?;
    }
    let scan = scan(
        hdfs,
        metastore,
        &source,
        options,
        &CancellationToken::new(),
        &mut Count,
    )
    .await?;
    r.blocks.extend(scan.blocks);
    r.costs = scan.costs;
    super::unblocked(&r.blocks)?;
    Ok(Status::Ready)
}
