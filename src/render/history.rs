//! `history`: a table's runs, one line each with the table's census then; with `--run` or
//! `--partition`, a line per partition record.

use std::io::Write;

use hive_orc_compactor::operations::autopilot::history::{PartitionRecord, RunRecord};
use hive_orc_compactor::operations::history::{HistoryOptions, HistoryReport};
use hive_orc_compactor::operations::outcome::Status;

use super::format::{json, plural, size, Format};

pub fn history(
    out: &mut dyn Write,
    report: &HistoryReport,
    options: &HistoryOptions,
    format: Format,
) -> anyhow::Result<()> {
    if format == Format::Json {
        return json(out, report);
    }
    let by_partition = options.run.is_some() || options.partition.is_some();
    for t in &report.tables {
        let dir = t.dir.as_deref().unwrap_or("no HDFS location: no history");
        writeln!(out, "{}: {} in {dir}", t.table, plural(t.runs.len(), "run"))?;
        for u in &t.unreadable {
            writeln!(out, "  unreadable: {u}")?;
        }
        for r in &t.runs {
            run_line(out, r)?;
            if by_partition {
                for p in &r.partitions {
                    partition_line(out, p)?;
                }
            }
        }
    }
    Ok(())
}

fn run_line(out: &mut dyn Write, r: &RunRecord) -> anyhow::Result<()> {
    let count = |s: Status| r.partitions.iter().filter(|p| p.status == s).count();
    let compacted: Vec<&PartitionRecord> = r
        .partitions
        .iter()
        .filter(|p| p.status == Status::Compacted)
        .collect();
    let seconds: f64 = compacted.iter().map(|p| p.seconds).sum();
    let estimated: f64 = compacted.iter().filter_map(|p| p.estimated_seconds).sum();
    let files_before: usize = compacted.iter().map(|p| p.files_before).sum();
    let files_after: usize = compacted.iter().map(|p| p.files_after).sum();
    let read: u64 = compacted.iter().map(|p| p.bytes_before).sum();
    write!(
        out,
        "  {} {} by {}@{}: {} compacted ({} -> {} files, {} read, {seconds:.1} s of work",
        r.run,
        match &r.finished_at {
            Some(_) => "finished",
            None => "did not finish",
        },
        r.user,
        r.host,
        compacted.len(),
        files_before,
        files_after,
        size(read),
    )?;
    if estimated > 0.0 {
        write!(out, ", estimated {estimated:.1} s")?;
    }
    write!(
        out,
        "), {} nothing to do, {} failed, {} busy, {} refused, {} skipped",
        count(Status::NothingToDo),
        count(Status::Failed) + count(Status::VerificationFailed),
        count(Status::Busy),
        count(Status::Refused),
        r.skipped
    )?;
    if let Some(c) = &r.census {
        write!(
            out,
            "; table then: {} in {}, {} on average, health {}",
            plural(c.files, "file"),
            plural(c.partitions, "partition"),
            size(c.mean_file_size()),
            c.health()
        )?;
    }
    writeln!(out)?;
    Ok(())
}

fn partition_line(out: &mut dyn Write, p: &PartitionRecord) -> anyhow::Result<()> {
    write!(out, "    {}: {}", p.partition, p.status.as_text())?;
    if let Some(way) = &p.way {
        write!(
            out,
            " by {way}, {} -> {} files, {} -> {}",
            p.files_before,
            p.files_after,
            size(p.bytes_before),
            size(p.bytes_after)
        )?;
    }
    write!(out, ", {:.1} s", p.seconds)?;
    if let Some(e) = p.estimated_seconds {
        write!(out, " (estimated {e:.1} s)")?;
    }
    if let Some(reason) = p.reason.as_deref().filter(|r| !r.is_empty()) {
        write!(out, ": {reason}")?;
    }
    writeln!(out)?;
    Ok(())
}
