//! `analyze`: one aligned row (or CSV line, or JSON object) per partition, and the totals.

use std::io::Write;

use hive_orc_compactor::operations::analyze::{AnalyzeReport, PartitionAnalysis, Totals};

use super::{json, plural, size, Format};

/// The cells of one analyze row, in column order, for the table and the CSV alike.
fn analyze_cells(p: &PartitionAnalysis, deep: bool, human: bool) -> Vec<String> {
    let bytes = |b: u64| if human { size(b) } else { b.to_string() };
    let mut cells = vec![
        p.table.clone(),
        p.partition.clone(),
        p.files.to_string(),
        bytes(p.bytes),
        bytes(p.mean_size),
        bytes(p.median_size),
        p.small_files.to_string(),
        p.files_needed.to_string(),
        p.excess_files.to_string(),
    ];
    if deep {
        let plan = p.plan.as_ref();
        cells.push(plan.map_or(String::new(), |d| d.files_after.to_string()));
        cells.push(plan.map_or(String::new(), |d| d.groups.len().to_string()));
        cells.push(plan.map_or(String::new(), |d| d.stripes.to_string()));
    }
    cells.push(match (&p.eligible, p.rule, &p.reason) {
        (true, _, _) => "yes".into(),
        (false, Some(rule), Some(reason)) if human => format!("no [{}]: {reason}", rule.as_str()),
        (false, Some(rule), _) => format!("no [{}]", rule.as_str()),
        (false, None, reason) => format!("error: {}", reason.as_deref().unwrap_or("")),
    });
    cells
}

const ANALYZE_COLUMNS: &[&str] = &[
    "table",
    "partition",
    "files",
    "bytes",
    "mean",
    "median",
    "small",
    "needed",
    "excess",
];
const DEEP_COLUMNS: &[&str] = &["after", "groups", "stripes"];

fn analyze_header(deep: bool) -> Vec<&'static str> {
    let mut h = ANALYZE_COLUMNS.to_vec();
    if deep {
        h.extend(DEEP_COLUMNS);
    }
    h.push("eligible");
    h
}

pub fn analyze(
    out: &mut dyn Write,
    r: &AnalyzeReport,
    format: Format,
    deep: bool,
) -> anyhow::Result<()> {
    match format {
        Format::Json => {
            for p in &r.partitions {
                json(out, p)?;
            }
            json(
                out,
                &serde_json::json!({ "summary": { "tables": r.tables, "total": r.total } }),
            )
        }
        Format::Csv => {
            let mut w = csv::Writer::from_writer(&mut *out);
            w.write_record(analyze_header(deep))?;
            for p in &r.partitions {
                w.write_record(analyze_cells(p, deep, false))?;
            }
            w.flush()?;
            Ok(())
        }
        Format::Text => {
            let mut rows: Vec<Vec<String>> = vec![analyze_header(deep)
                .iter()
                .map(|h| h.to_ascii_uppercase())
                .collect()];
            rows.extend(r.partitions.iter().map(|p| analyze_cells(p, deep, true)));
            aligned(out, &rows)?;
            writeln!(out)?;
            if r.tables.len() > 1 {
                for t in &r.tables {
                    totals_line(out, t)?;
                }
            }
            totals_line(out, &r.total)?;
            Ok(())
        }
    }
}

fn totals_line(out: &mut dyn Write, t: &Totals) -> std::io::Result<()> {
    writeln!(
        out,
        "{}: {} partitions ({} eligible), {} ({}), {} small; compaction would remove {}{}",
        t.scope,
        t.partitions,
        t.eligible,
        plural(t.files, "file"),
        size(t.bytes),
        t.small_files,
        plural(t.removable_files, "file"),
        if t.errors > 0 {
            format!("; {} unreadable", t.errors)
        } else {
            String::new()
        }
    )
}

/// Columns padded to their widest cell; numbers right-aligned, text left-aligned. The last
/// column (eligibility and reason) is left unpadded.
fn aligned(out: &mut dyn Write, rows: &[Vec<String>]) -> std::io::Result<()> {
    let columns = rows.iter().map(Vec::len).max().unwrap_or(0);
    let widths: Vec<usize> = (0..columns)
        .map(|c| {
            rows.iter()
                .filter_map(|r| r.get(c))
                .map(|s| s.chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    for row in rows {
        let mut line = String::new();
        for (c, cell) in row.iter().enumerate() {
            let pad = widths[c].saturating_sub(cell.chars().count());
            let numeric = c >= 2 && c + 1 < row.len();
            if c + 1 == row.len() {
                line.push_str(cell);
            } else if numeric {
                line.push_str(&" ".repeat(pad));
                line.push_str(cell);
                line.push_str("  ");
            } else {
                line.push_str(cell);
                line.push_str(&" ".repeat(pad + 2));
            }
        }
        writeln!(out, "{}", line.trim_end())?;
    }
    Ok(())
}
