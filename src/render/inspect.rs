//! `inspect`: the table's (and partition's) facts, and the refusal line cron mails.

use std::collections::BTreeMap;
use std::io::Write;

use hive_orc_compactor::eligibility::Refusal;
use hive_orc_compactor::operations::inspect::{DirectoryReport, InspectReport};
use hive_orc_compactor::operations::outcome::{Outcome, Status};
use hive_orc_compactor::snapshot::FileSizes;

use super::format::{json, size, Format};

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
    if let Some(stripes) = d.stripes {
        writeln!(out, "{}{stripes}", pad("stripes"))?;
    }
    for (column, share) in &d.clustering {
        writeln!(
            out,
            "{}a lookup on {column} reads {:.1}% of the stripes",
            pad("clustering"),
            share * 100.0
        )?;
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
        Format::Text | Format::Csv | Format::Html => text(out, r)?,
    }
    if r.outcome.status == Status::Refused {
        refusal(err, &r.outcome, r.partition_details.is_some())?;
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

/// The one line cron mails: what was refused, where (the partition as named, even when the
/// name is empty), and by which rule.
fn refusal(err: &mut dyn Write, o: &Outcome, with_partition: bool) -> std::io::Result<()> {
    let rule = o.rule.map(|r| r.as_str()).unwrap_or("-");
    let reason = o.reason.as_deref().unwrap_or("");
    if with_partition {
        writeln!(
            err,
            "refused: {} partition {}: {reason} [{rule}]",
            o.table, o.partition
        )
    } else {
        writeln!(err, "refused: {}: {reason} [{rule}]", o.table)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::render::testing::{assert_keys, object, printed, OUTCOME_KEYS};
    use hive_orc_compactor::eligibility::Rule;
    use hive_orc_compactor::operations::inspect::PartitionReport;
    use hive_orc_compactor::operations::outcome::Stop;

    fn report(partition_refusal: Option<Refusal>) -> InspectReport {
        let mut outcome = Outcome::new("d.t", "dt=1");
        match &partition_refusal {
            Some(r) => outcome.stop(Stop::Refused(r.clone())),
            None => outcome.status = Status::Ready,
        }
        InspectReport {
            outcome,
            table_type: "EXTERNAL_TABLE".into(),
            owner: Some("hive".into()),
            input_format: None,
            output_format: None,
            serde: None,
            partition_keys: vec!["dt".into()],
            partitions: Some(3),
            location: Some("hdfs://nn/t".into()),
            directory: None,
            statistics: BTreeMap::new(),
            refusal: None,
            partition_details: Some(PartitionReport {
                name: "dt=1".into(),
                values: vec!["1".into()],
                input_format: None,
                serde: None,
                directory: DirectoryReport {
                    location: Some("hdfs://nn/t/dt=1".into()),
                    exists: true,
                    files: Some(FileSizes::of(&[1024, 2048])),
                    rows: Some(7),
                    stripes: Some(2),
                    hidden: vec!["_SUCCESS".into()],
                    subdirectories: vec![],
                    clustering: BTreeMap::new(),
                },
                statistics: BTreeMap::from([("numRows".to_string(), "7".to_string())]),
                eligible: partition_refusal.is_none(),
                refusal: partition_refusal,
                late_files: vec![],
            }),
        }
    }

    #[test]
    fn inspect_text() {
        let (out, err) = printed(|o, e| inspect(o, e, &report(None), Format::Text));
        assert_eq!(
            out,
            "table          d.t\ntype           EXTERNAL_TABLE\nowner          hive\ninput format   \
             (none)\nserde          (none)\npartitioned    by dt (3 partitions)\nlocation       \
             hdfs://nn/t\neligible       yes\npartition      dt=1\n  values       1\n  location     \
             hdfs://nn/t/dt=1\n  files        2 (3.0 KiB; min 1.0 KiB, median 1.0 KiB, max \
             2.0 KiB)\n  rows         7 (from the ORC footers)\n  stripes      2\n  hidden       _SUCCESS (ignored, \
             as readers do)\n  statistics   numRows=7\n  eligible     yes\n"
        );
        assert!(err.is_empty());
    }

    #[test]
    fn a_refusal_is_one_line_on_stderr_in_both_formats() {
        let r = report(Some(Refusal::new(Rule::NotOrc, "it is text")));
        for format in [Format::Text, Format::Json] {
            let (_, err) = printed(|o, e| inspect(o, e, &r, format));
            assert_eq!(err, "refused: d.t partition dt=1: it is text [not_orc]\n");
        }
        let mut table_only = report(None);
        table_only.partition_details = None;
        table_only.outcome = Outcome::new("d.t", "");
        table_only
            .outcome
            .stop(Stop::Refused(Refusal::new(Rule::View, "a view")));
        let (_, err) = printed(|o, e| inspect(o, e, &table_only, Format::Text));
        assert_eq!(err, "refused: d.t: a view [view]\n");
    }

    #[test]
    fn inspect_json() {
        let r = report(Some(Refusal::new(Rule::NotOrc, "it is text")));
        let (out, _) = printed(|o, e| inspect(o, e, &r, Format::Json));
        let v = object(&out);
        assert_keys(&v, OUTCOME_KEYS);
        assert_eq!(v["table"], "d.t");
        assert_eq!(v["partition"], "dt=1");
        assert_eq!(v["status"], "refused");
        assert_eq!(v["rule"], "not_orc");
        assert_eq!(v["reason"], "it is text");
        assert_eq!(v["refusal"], serde_json::Value::Null, "the table's own");
        assert_eq!(v["partitions"], 3);
        let p = &v["partition_details"];
        assert_eq!(p["name"], "dt=1");
        assert_eq!(p["eligible"], false);
        assert_eq!(p["refusal"]["rule"], "not_orc");
        assert_eq!(p["files"]["count"], 2, "the directory is flattened");
        assert_eq!(p["rows"], 7);
    }
}
