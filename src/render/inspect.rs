//! `inspect`: the table's (and partition's) facts, and the refusal line cron mails.

use std::collections::BTreeMap;
use std::io::Write;

use hive_orc_compactor::eligibility::Refusal;
use hive_orc_compactor::operations::inspect::{DirectoryReport, InspectReport};
use hive_orc_compactor::operations::outcome::{Outcome, Status};
use hive_orc_compactor::snapshot::FileSizes;

use super::{json, size, Format};

fn sizes(s: &FileSizes) -> String {
    if s.count == 0 {
        return "none".to_string();
    }
    format!(
        "{} ({}; min {}, median {}, max {})",
        s.count,
        size(s.bytes),
        size(s.min),
        size(s.median),
        size(s.max)
    )
}

fn or_none(v: &Option<String>) -> &str {
    v.as_deref().unwrap_or("(none)")
}

fn eligibility(refusal: &Option<Refusal>) -> String {
    match refusal {
        None => "yes".to_string(),
        Some(r) => format!("no: {} [{}]", r.reason, r.rule.as_str()),
    }
}

/// The directory and statistics lines shared by a partition and an unpartitioned table.
fn directory(
    out: &mut dyn Write,
    indent: &str,
    d: &DirectoryReport,
    statistics: &BTreeMap<String, String>,
) -> std::io::Result<()> {
    let pad = |label: &str| format!("{indent}{label:<width$}", width = 15 - indent.len());
    writeln!(out, "{}{}", pad("location"), or_none(&d.location))?;
    if d.location.is_some() && !d.exists {
        writeln!(out, "{}(does not exist on HDFS)", pad(""))?;
    }
    if let Some(files) = &d.files {
        writeln!(out, "{}{}", pad("files"), sizes(files))?;
    }
    if let Some(rows) = d.rows {
        writeln!(out, "{}{rows} (from the ORC footers)", pad("rows"))?;
    }
    if !d.hidden.is_empty() {
        writeln!(
            out,
            "{}{} (ignored, as readers do)",
            pad("hidden"),
            d.hidden.join(", ")
        )?;
    }
    if !d.subdirectories.is_empty() {
        writeln!(out, "{}{}", pad("subdirs"), d.subdirectories.join(", "))?;
    }
    if !statistics.is_empty() {
        let stats: Vec<String> = statistics.iter().map(|(k, v)| format!("{k}={v}")).collect();
        writeln!(out, "{}{}", pad("statistics"), stats.join(" "))?;
    }
    Ok(())
}

/// The report on stdout; a refusal also as one line on stderr, whatever the format.
pub fn inspect(
    out: &mut dyn Write,
    err: &mut dyn Write,
    r: &InspectReport,
    format: Format,
) -> anyhow::Result<()> {
    match format {
        Format::Json => json(out, r)?,
        Format::Text | Format::Csv => text(out, r)?,
    }
    if r.outcome.status == Status::Refused {
        refusal(err, &r.outcome)?;
    }
    Ok(())
}

fn text(out: &mut dyn Write, r: &InspectReport) -> std::io::Result<()> {
    writeln!(out, "table          {}", r.outcome.table)?;
    writeln!(out, "type           {}", r.table_type)?;
    writeln!(out, "owner          {}", or_none(&r.owner))?;
    writeln!(out, "input format   {}", or_none(&r.input_format))?;
    writeln!(out, "serde          {}", or_none(&r.serde))?;
    if r.partition_keys.is_empty() {
        writeln!(out, "partitioned    no")?;
    } else {
        writeln!(
            out,
            "partitioned    by {} ({} partitions)",
            r.partition_keys.join(", "),
            r.partitions.unwrap_or(0)
        )?;
    }
    match &r.directory {
        Some(d) => directory(out, "", d, &r.statistics)?,
        None => writeln!(out, "location       {}", or_none(&r.location))?,
    }
    writeln!(out, "eligible       {}", eligibility(&r.refusal))?;
    if let Some(p) = &r.partition_details {
        writeln!(out, "partition      {}", p.name)?;
        if !p.values.is_empty() {
            writeln!(out, "  values       {}", p.values.join(" | "))?;
        }
        directory(out, "  ", &p.directory, &p.statistics)?;
        writeln!(out, "  eligible     {}", eligibility(&p.refusal))?;
    }
    Ok(())
}

/// The one line cron mails: what was refused, where, and by which rule.
fn refusal(err: &mut dyn Write, o: &Outcome) -> std::io::Result<()> {
    let rule = o.rule.map(|r| r.as_str()).unwrap_or("-");
    let reason = o.reason.as_deref().unwrap_or("");
    match o.partition.as_str() {
        "" => writeln!(err, "refused: {}: {reason} [{rule}]", o.table),
        p => writeln!(err, "refused: {} partition {p}: {reason} [{rule}]", o.table),
    }
}
