//! `analyze`: which partitions of a table, or of a database's tables, are worth compacting.
//!
//! Promises: read-only. One metastore page per [`fleet`]'s page size of partitions and one
//! listing call per partition directory (a bounded number at once), so it is cheap enough to run
//! over a whole database; the eligibility shown is decided by the same rules `compact` applies
//! before it reads a file. With `deep` it also reads every ORC tail and plans each eligible
//! partition exactly as `compact --dry-run` does, showing merge groups and stripes.
//!
//! The figures: `files_needed = ceil(bytes / target_size)`, `excess_files = files - needed`
//! (never below 0): how many files compaction could remove at best. Rows come sorted by excess
//! files, most first. The NameNode objects a partition takes are its files' inodes and blocks;
//! the objects compaction would remove, and the file sizes after it, come from the plan with
//! `deep`, else from the same estimate as `excess_files` (the data in `files_needed` files of
//! equal size). A refused partition keeps what it has.

use futures::StreamExt;
use serde::Serialize;

use crate::census::{namenode_objects, SizeHistogram};
use crate::eligibility::Rule;
use crate::fleet::{self, Partitions, Selection, Survey, Tables};
use crate::hdfs::Hdfs;
use crate::metastore::Metastore;
use crate::operations::autopilot::estimate::{Estimate, Listed};
use crate::operations::autopilot::history::{self, Fingerprint, TableCensus, TableHistory};
use crate::operations::compact::{self, CompactOptions, GroupReport, Quiet, Stripes};
use crate::operations::outcome::Status;
use crate::table::TableInfo;

/// Partitions planned at once with `deep`: each reads its tails with its own concurrency.
const DEEP_PLANS_IN_FLIGHT: usize = 4;

#[derive(Debug, Clone)]
pub struct AnalyzeOptions {
    /// Files below this size count as small.
    pub small_file_size: u64,
    /// The output size compaction aims for (as `compact --target-size`).
    pub target_size: u64,
    /// Also read ORC tails and plan, as `compact --dry-run`.
    pub deep: bool,
    /// How `deep` plans each group's stripes (as `compact --stripes`, `--min-stripe-size`,
    /// `--stripe-size`).
    pub stripes: Stripes,
    pub min_stripe_size: u64,
    pub stripe_size: u64,
    /// The gate for pipelines: partitions holding more than this multiple of their ideal
    /// file count are named, and the run exits with its own code.
    pub fail_above: Option<f64>,
    /// As `compact --suspend-after`: which partitions compact would skip as suspended.
    pub suspend_after: usize,
}

/// One partition, or an unpartitioned table's directory (`partition` empty), or a refused or
/// unreadable table as a whole (`partition` empty, `eligible` false).
#[derive(Debug, Clone, Serialize)]
pub struct PartitionAnalysis {
    pub table: String,
    pub partition: String,
    pub location: Option<String>,
    pub files: usize,
    pub bytes: u64,
    pub mean_size: u64,
    /// The lower median: a real file's size.
    pub median_size: u64,
    pub small_files: usize,
    pub files_needed: usize,
    pub excess_files: usize,
    /// Inodes and blocks of the data files.
    pub namenode_objects: u64,
    /// How many of those compaction would remove (0 unless eligible).
    pub namenode_objects_removable: u64,
    pub eligible: bool,
    pub rule: Option<Rule>,
    pub reason: Option<String>,
    /// Bytes in healthy files (see [`Totals::health`]).
    pub healthy_bytes: u64,
    /// What compacting it is expected to take, at the rates the table's history shows
    /// (eligible partitions with files to remove).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub estimate: Option<Estimate>,
    /// Why `compact` would skip it as suspended: its last attempts all failed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub suspended: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub plan: Option<DeepPlan>,
    /// The files as listed, which a suspension is judged against.
    #[serde(skip)]
    pub fingerprint: Option<Fingerprint>,
    /// File sizes now and after compaction; summed into the totals, where JSON shows them.
    #[serde(skip)]
    pub sizes_before: SizeHistogram,
    #[serde(skip)]
    pub sizes_after: SizeHistogram,
}

/// What `compact --dry-run` would do with the partition (`deep` only).
#[derive(Debug, Clone, Serialize)]
pub struct DeepPlan {
    pub files_after: usize,
    pub rows: u64,
    /// Stripes of the merged outputs (planned: a re-encode's are an estimate).
    pub stripes: usize,
    /// Stripes of the data files now, and of the files after (merged outputs and files
    /// carried unchanged).
    pub stripes_before: usize,
    pub stripes_after: usize,
    /// Groups whose stripes would be re-encoded but are copied: their values cannot be
    /// re-encoded exactly (each output's `why` names the file, the column and the value).
    pub not_re_encodable: usize,
    pub groups: Vec<GroupReport>,
}

impl DeepPlan {
    /// How the groups' outputs would be made, as "rewrite", "copy" or "2 rewrite, 1 copy"
    /// (each group's reasons are in its outputs' `why`).
    pub fn ways(&self) -> String {
        let ways: Vec<&str> = self
            .groups
            .iter()
            .flat_map(|g| g.outputs.first())
            .map(|o| o.made_by.as_str())
            .collect();
        let count = |way: &str| ways.iter().filter(|w| **w == way).count();
        let parts: Vec<(usize, &str)> = ["rewrite", "copy"]
            .into_iter()
            .map(|w| (count(w), w))
            .filter(|(n, _)| *n > 0)
            .collect();
        match parts.as_slice() {
            [(_, only)] => only.to_string(),
            _ => parts
                .iter()
                .map(|(n, w)| format!("{n} {w}"))
                .collect::<Vec<_>>()
                .join(", "),
        }
    }
}

impl PartitionAnalysis {
    /// Whether it holds more than `ratio` times its ideal file count. A partition with data
    /// needs at least one file, so a lone empty file is not over any ratio; a refused one
    /// counts like any other (the gate watches the files, whoever may compact them).
    pub fn over_file_ratio(&self, ratio: f64) -> bool {
        self.files as f64 > ratio * self.files_needed.max(1) as f64
    }

    /// Files compaction would remove: the plan's count when there is one, else the estimate.
    pub fn removable_files(&self) -> usize {
        if !self.eligible {
            return 0;
        }
        match &self.plan {
            Some(p) => self.files.saturating_sub(p.files_after),
            None => self.excess_files,
        }
    }
}

/// Sums over a table, or over everything the run covered.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Totals {
    /// `db.table`, or the database (or table) the run covered.
    pub scope: String,
    pub partitions: usize,
    pub eligible: usize,
    pub files: usize,
    pub bytes: u64,
    pub small_files: usize,
    /// The files the data needs at the target size (the ideal count), and the files beyond it.
    pub files_needed: usize,
    pub excess_files: usize,
    pub removable_files: usize,
    pub namenode_objects: u64,
    pub namenode_objects_removable: u64,
    /// Stripes now and after, over the partitions `deep` planned.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stripes_before: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stripes_after: Option<usize>,
    /// Groups of those partitions copied because their values cannot be re-encoded exactly.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub groups_not_re_encodable: Option<usize>,
    /// Files per size bucket (`size_buckets` gives each bucket's smallest size), now and
    /// after compaction.
    pub files_by_size_before: SizeHistogram,
    pub files_by_size_after: SizeHistogram,
    /// Partitions or tables that could not be read.
    pub errors: usize,
    /// Bytes in files of at least the small-file size.
    pub healthy_bytes: u64,
    /// 0-100: the share of the bytes in healthy files: in a partition holding no more files
    /// than its data needs, all; else those of at least the small-file size (stripes are not
    /// counted: that takes reading every tail, as `--deep` does).
    pub health: u8,
    /// What compaction needs to clear what it would remove: partitions, seconds of work (the
    /// run's wall time is this divided by `--parallel`), bytes, calls, objects given back.
    pub backlog: Estimate,
    /// Partitions `compact` would skip as suspended.
    pub suspended: usize,
}

impl Totals {
    fn add(&mut self, p: &PartitionAnalysis) {
        self.partitions += 1;
        self.eligible += usize::from(p.eligible);
        self.files += p.files;
        self.bytes += p.bytes;
        self.small_files += p.small_files;
        self.files_needed += p.files_needed;
        self.excess_files += p.excess_files;
        self.removable_files += p.removable_files();
        self.namenode_objects += p.namenode_objects;
        self.namenode_objects_removable += p.namenode_objects_removable;
        if let Some(plan) = &p.plan {
            *self.stripes_before.get_or_insert(0) += plan.stripes_before;
            *self.stripes_after.get_or_insert(0) += plan.stripes_after;
            *self.groups_not_re_encodable.get_or_insert(0) += plan.not_re_encodable;
        }
        self.files_by_size_before.merge(&p.sizes_before);
        self.files_by_size_after.merge(&p.sizes_after);
        self.errors += usize::from(!p.eligible && p.rule.is_none());
        self.healthy_bytes += p.healthy_bytes;
        if p.suspended.is_some() {
            self.suspended += 1;
        } else if let Some(e) = &p.estimate {
            self.backlog.add(e);
        }
        self.health = health(self.healthy_bytes, self.bytes);
    }

    /// Adds another scope's sums (a database's tables, say) to these.
    pub fn merge(&mut self, o: &Totals) {
        self.partitions += o.partitions;
        self.eligible += o.eligible;
        self.files += o.files;
        self.bytes += o.bytes;
        self.small_files += o.small_files;
        self.files_needed += o.files_needed;
        self.excess_files += o.excess_files;
        self.removable_files += o.removable_files;
        self.namenode_objects += o.namenode_objects;
        self.namenode_objects_removable += o.namenode_objects_removable;
        for (sum, part) in [
            (&mut self.stripes_before, o.stripes_before),
            (&mut self.stripes_after, o.stripes_after),
            (&mut self.groups_not_re_encodable, o.groups_not_re_encodable),
        ] {
            if let Some(v) = part {
                *sum.get_or_insert(0) += v;
            }
        }
        self.files_by_size_before.merge(&o.files_by_size_before);
        self.files_by_size_after.merge(&o.files_by_size_after);
        self.errors += o.errors;
        self.healthy_bytes += o.healthy_bytes;
        self.backlog.add(&o.backlog);
        self.suspended += o.suspended;
        self.health = health(self.healthy_bytes, self.bytes);
    }
}

fn health(healthy: u64, bytes: u64) -> u8 {
    TableCensus {
        bytes,
        healthy_bytes: healthy,
        ..TableCensus::default()
    }
    .health()
}

#[derive(Debug, Serialize)]
pub struct AnalyzeReport {
    pub partitions: Vec<PartitionAnalysis>,
    pub tables: Vec<Totals>,
    pub total: Totals,
    /// Each table's files over time, from the censuses its history holds (oldest first; a
    /// table with none is left out).
    pub trends: Vec<TableTrend>,
    /// How long the analysis took, from the first metastore call to the last listing.
    pub seconds: f64,
}

/// A table as past `compact` runs found it.
#[derive(Debug, Clone, Serialize)]
pub struct TableTrend {
    pub table: String,
    pub points: Vec<TrendPoint>,
}

#[derive(Debug, Clone, Serialize)]
pub struct TrendPoint {
    /// The run's id and start (RFC 3339).
    pub run: String,
    pub at: String,
    pub files: usize,
    pub bytes: u64,
    pub mean_file_size: u64,
    pub health: u8,
    pub excess_files: usize,
}

impl TableTrend {
    fn of(table: &str, history: &TableHistory) -> Option<TableTrend> {
        let points: Vec<TrendPoint> = history
            .runs
            .iter()
            .filter_map(|r| {
                let c = r.census?;
                Some(TrendPoint {
                    run: r.run.clone(),
                    at: r.started_at.clone(),
                    files: c.files,
                    bytes: c.bytes,
                    mean_file_size: c.mean_file_size(),
                    health: c.health(),
                    excess_files: c.excess_files,
                })
            })
            .collect();
        (!points.is_empty()).then(|| TableTrend {
            table: table.to_string(),
            points,
        })
    }
}

impl AnalyzeReport {
    /// The partitions `--fail-above` names, in the report's order (most excess files first).
    pub fn over_file_ratio(&self, ratio: f64) -> Vec<&PartitionAnalysis> {
        self.partitions
            .iter()
            .filter(|p| p.over_file_ratio(ratio))
            .collect()
    }
}

/// How the CLI follows a long analyze (a database can hold 100,000 partitions): how many
/// partitions the selection found, then each as its survey ends.
pub trait Tally: Sync {
    fn found(&self, partitions: usize);
    fn surveyed(&self);
}

pub async fn analyze(
    metastore: &Metastore,
    hdfs: &Hdfs,
    tables: Tables,
    options: &AnalyzeOptions,
    tally: &dyn Tally,
) -> anyhow::Result<AnalyzeReport> {
    let scope = match &tables {
        Tables::One(name) => name.to_string(),
        Tables::Named(names) => names
            .iter()
            .map(|n| n.to_string())
            .collect::<Vec<_>>()
            .join(","),
        Tables::Database { db, .. } => db.clone(),
    };
    let selection = Selection {
        tables,
        partitions: Partitions::All,
        shard: None,
    };
    let started = std::time::Instant::now();
    let mut rows = Vec::new();
    let mut tables = Vec::new();
    let mut trends = Vec::new();
    let selected = fleet::select(metastore, &selection).await?;
    tally.found(selected.iter().map(|t| t.candidates.len()).sum());
    for t in selected {
        let name = t.table.qualified_name();
        tables.push(name.clone());
        let problem = t
            .refusal
            .map(|r| (Some(r.rule), r.reason))
            .or(t.error.map(|e| (None, e)));
        if let Some((rule, reason)) = problem {
            rows.push(PartitionAnalysis {
                table: name,
                partition: String::new(),
                location: t.table.storage.location.clone(),
                files: 0,
                bytes: 0,
                mean_size: 0,
                median_size: 0,
                small_files: 0,
                files_needed: 0,
                excess_files: 0,
                namenode_objects: 0,
                namenode_objects_removable: 0,
                eligible: false,
                rule,
                reason: Some(reason),
                healthy_bytes: 0,
                estimate: None,
                suspended: None,
                plan: None,
                fingerprint: None,
                sizes_before: SizeHistogram::default(),
                sizes_after: SizeHistogram::default(),
            });
            continue;
        }
        // Each survey shrinks to its row as it ends: memory holds rows, not partitions.
        let table_rows = fleet::surveys(metastore, hdfs, t.candidates, options.small_file_size)
            .map(|s| {
                tally.surveyed();
                (row(&s, options.target_size), s.block_size)
            });
        let table = &t.table;
        let mut table_rows: Vec<(PartitionAnalysis, Option<u64>)> = if options.deep {
            table_rows
                .map(|(r, block_size)| async move {
                    let r = deepen(metastore, hdfs, table, r, block_size, options).await;
                    (r, block_size)
                })
                .buffered(DEEP_PLANS_IN_FLIGHT)
                .collect()
                .await
        } else {
            table_rows.collect().await
        };
        let history = history::read(hdfs, table, history::RUNS_KEPT)
            .await
            .unwrap_or_default();
        trends.extend(TableTrend::of(&name, &history));
        for (r, block_size) in &mut table_rows {
            from_history(r, *block_size, &history, options);
        }
        rows.extend(table_rows.into_iter().map(|(r, _)| r));
    }
    rows.sort_by(|a, b| {
        b.excess_files
            .cmp(&a.excess_files)
            .then_with(|| (&a.table, &a.partition).cmp(&(&b.table, &b.partition)))
    });
    let mut per_table: Vec<Totals> = tables
        .into_iter()
        .map(|scope| Totals {
            scope,
            ..Default::default()
        })
        .collect();
    let mut total = Totals {
        scope,
        ..Default::default()
    };
    for r in &rows {
        total.add(r);
        if let Some(t) = per_table.iter_mut().find(|t| t.scope == r.table) {
            t.add(r);
        }
    }
    Ok(AnalyzeReport {
        partitions: rows,
        tables: per_table,
        total,
        trends,
        seconds: started.elapsed().as_secs_f64(),
    })
}

fn row(s: &Survey, target_size: u64) -> PartitionAnalysis {
    let needed = s.files_needed(target_size);
    let excess = s.excess_files(target_size);
    let (mut sizes_after, mut objects_after) = (s.histogram, s.namenode_objects);
    if s.eligible() && excess > 0 {
        // The estimate: the data in `needed` files of equal size.
        let each = s.sizes.bytes.div_ceil(needed as u64);
        sizes_after = SizeHistogram::default();
        sizes_after.add(each, needed as u64);
        objects_after = needed as u64 * namenode_objects(each, s.block_size);
    }
    PartitionAnalysis {
        table: s.candidate.table.qualified_name(),
        partition: s.candidate.name.clone(),
        location: s.location.clone(),
        files: s.sizes.count,
        bytes: s.sizes.bytes,
        mean_size: s.mean_size(),
        median_size: s.sizes.median,
        small_files: s.small_files,
        files_needed: needed,
        excess_files: excess,
        namenode_objects: s.namenode_objects,
        namenode_objects_removable: s.namenode_objects.saturating_sub(objects_after),
        eligible: s.eligible(),
        rule: s.refusal.as_ref().map(|r| r.rule),
        reason: s
            .refusal
            .as_ref()
            .map(|r| r.reason.clone())
            .or(s.error.clone()),
        healthy_bytes: s.healthy_bytes(target_size),
        estimate: None,
        suspended: None,
        plan: None,
        fingerprint: Some(Fingerprint {
            files: s.sizes.count,
            bytes: s.sizes.bytes,
            newest_modification: s.newest_modification,
        }),
        sizes_before: s.histogram,
        sizes_after,
    }
}

/// What the table's history says of a partition: whether `compact` would skip it as
/// suspended, else what compacting it is expected to take.
fn from_history(
    row: &mut PartitionAnalysis,
    block_size: Option<u64>,
    history: &TableHistory,
    options: &AnalyzeOptions,
) {
    if !row.eligible || row.removable_files() == 0 {
        return;
    }
    row.suspended = history.suspension(
        &row.partition,
        row.fingerprint.as_ref(),
        options.suspend_after,
    );
    if row.suspended.is_none() {
        let listed = Listed {
            files: row.files,
            bytes: row.bytes,
            namenode_objects: row.namenode_objects,
            block_size,
        };
        let rates = history.rates(false, None);
        let estimate = Estimate::of(&listed, options.target_size, 1, &rates, false);
        row.estimate = Some(estimate);
    }
}

/// Plans an eligible partition as `compact --dry-run` does. A file the listing could not judge
/// (not ORC, unreadable) turns up here and makes the partition ineligible, as in `compact`.
/// Unpartitioned tables have no partition to plan and keep the estimate.
async fn deepen(
    metastore: &Metastore,
    hdfs: &Hdfs,
    table: &TableInfo,
    mut row: PartitionAnalysis,
    block_size: Option<u64>,
    options: &AnalyzeOptions,
) -> PartitionAnalysis {
    if !row.eligible || row.partition.is_empty() {
        return row;
    }
    let compact_options = CompactOptions {
        target_size: options.target_size,
        dry_run: true,
        stripes: options.stripes,
        min_stripe_size: options.min_stripe_size,
        stripe_size: options.stripe_size,
        ..CompactOptions::default()
    };
    let report = compact::compact_partition(
        metastore,
        hdfs,
        table,
        &row.partition,
        None,
        &compact_options,
        &Quiet,
    )
    .await;
    match report.outcome.status {
        Status::DryRun | Status::NothingToDo => {
            let outputs = report.groups.iter().flat_map(|g| &g.outputs);
            let after: Vec<(u64, usize)> = outputs
                .map(|o| (o.bytes, o.stripes))
                .chain(report.carried.iter().map(|c| (c.bytes, c.stripes)))
                .collect();
            let objects_after: u64 = after
                .iter()
                .map(|&(bytes, _)| namenode_objects(bytes, block_size))
                .sum();
            // Zero-length files are dropped: they cost an inode each.
            row.namenode_objects_removable = row.namenode_objects.saturating_sub(objects_after);
            row.sizes_after = SizeHistogram::of(after.iter().map(|&(bytes, _)| bytes));
            row.plan = Some(DeepPlan {
                files_after: report.files_after,
                rows: report.rows,
                stripes: report
                    .groups
                    .iter()
                    .flat_map(|g| &g.outputs)
                    .map(|o| o.stripes)
                    .sum(),
                stripes_before: report.stripes_before,
                stripes_after: after.iter().map(|&(_, stripes)| stripes).sum(),
                not_re_encodable: report
                    .groups
                    .iter()
                    .filter(|g| {
                        g.outputs
                            .iter()
                            .any(|o| o.why.contains(compact::NOT_RE_ENCODABLE))
                    })
                    .count(),
                groups: report.groups,
            });
        }
        _ => {
            row.eligible = false;
            row.rule = report.outcome.rule;
            row.reason = report.outcome.reason;
            row.namenode_objects_removable = 0;
            row.sizes_after = row.sizes_before;
        }
    }
    row
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::operations::compact::{OutputReport, OutputWriter};

    fn group(way: OutputWriter) -> GroupReport {
        GroupReport {
            schema: "struct<a:int>".into(),
            compression: "ZLIB".into(),
            writer: "ORC Java".into(),
            files: 2,
            bytes: 10,
            outputs: vec![OutputReport {
                name: String::new(),
                inputs: vec!["a".into(), "b".into()],
                stripes: 1,
                rows: 2,
                bytes: 10,
                made_by: way,
                why: String::new(),
            }],
        }
    }

    #[test]
    fn ways_name_the_one_way_or_count_both() {
        let plan = |groups| DeepPlan {
            files_after: 1,
            rows: 2,
            stripes: 1,
            stripes_before: 2,
            stripes_after: 1,
            not_re_encodable: 0,
            groups,
        };
        let (r, c) = (OutputWriter::Rewrite, OutputWriter::StripeCopy);
        assert_eq!(plan(vec![group(r), group(r)]).ways(), "rewrite");
        assert_eq!(plan(vec![group(c)]).ways(), "copy");
        assert_eq!(
            plan(vec![group(c), group(r), group(r)]).ways(),
            "2 rewrite, 1 copy"
        );
        assert_eq!(plan(vec![]).ways(), "");
    }
}
