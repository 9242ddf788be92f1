//! `history`: what past `compact` runs did to a table, or to a database's tables, from the
//! records each run keeps in the table's location (see [`crate::operations::autopilot::history`]).
//! Read-only: one metastore read per table, one listing and a read per run kept.

use serde::Serialize;

use crate::fleet::{self, Tables};
use crate::hdfs::Hdfs;
use crate::metastore::Metastore;
use crate::operations::autopilot::history::{self, RunRecord, RUNS_KEPT};

/// One table's runs, oldest first.
#[derive(Debug, Serialize)]
pub struct TableRuns {
    pub table: String,
    /// Where its history is kept; `None` for a table without an HDFS location.
    pub dir: Option<String>,
    pub runs: Vec<RunRecord>,
    /// Records that could not be read, each with why.
    pub unreadable: Vec<String>,
}

#[derive(Debug, Serialize)]
pub struct HistoryReport {
    pub tables: Vec<TableRuns>,
}

/// What to show: every run kept, or one run; every partition, or one.
#[derive(Debug, Clone, Default)]
pub struct HistoryOptions {
    pub run: Option<String>,
    pub partition: Option<String>,
}

pub async fn history(
    metastore: &Metastore,
    hdfs: &Hdfs,
    tables: &Tables,
    options: &HistoryOptions,
) -> anyhow::Result<HistoryReport> {
    let mut out = Vec::new();
    for table in fleet::tables(metastore, tables).await? {
        let dir = history::dir(&table);
        let (mut runs, unreadable) = match history::read(hdfs, &table, RUNS_KEPT).await {
            Ok(h) => (h.runs, h.unreadable),
            Err(e) => (vec![], vec![format!("{e:#}")]),
        };
        if let Some(run) = &options.run {
            runs.retain(|r| &r.run == run);
        }
        if let Some(partition) = &options.partition {
            for r in &mut runs {
                r.partitions.retain(|p| &p.partition == partition);
            }
        }
        out.push(TableRuns {
            table: table.qualified_name(),
            dir: dir.map(|d| d.to_string()),
            runs,
            unreadable,
        });
    }
    Ok(HistoryReport { tables: out })
}
