//! Reports as people and scripts read them: aligned text, or one JSON object per report.

use std::io::Write;

use bytesize::ByteSize;
use hive_orc_compactor::eligibility::Refusal;
use hive_orc_compactor::operations::compact::{CompactReport, Status};
use std::collections::BTreeMap;

use hive_orc_compactor::operations::inspect::{DirectoryReport, FileSizes, InspectReport};
use serde::Serialize;

fn json<T: Serialize>(value: &T) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    serde_json::to_writer(&mut out, value)?;
    writeln!(out)?;
    Ok(())
}

fn size(bytes: u64) -> String {
    ByteSize(bytes).display().iec().to_string()
}

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
    out: &mut impl Write,
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

pub fn inspect(r: &InspectReport, as_json: bool) -> anyhow::Result<()> {
    if as_json {
        return json(r);
    }
    let mut out = std::io::stdout().lock();
    writeln!(out, "table          {}", r.table)?;
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
        Some(d) => directory(&mut out, "", d, &r.statistics)?,
        None => writeln!(out, "location       {}", or_none(&r.location))?,
    }
    writeln!(out, "eligible       {}", eligibility(&r.refusal))?;
    if let Some(p) = &r.partition {
        writeln!(out, "partition      {}", p.name)?;
        if !p.values.is_empty() {
            writeln!(out, "  values       {}", p.values.join(" | "))?;
        }
        directory(&mut out, "  ", &p.directory, &p.statistics)?;
        writeln!(out, "  eligible     {}", eligibility(&p.refusal))?;
    }
    Ok(())
}

/// The one line cron mails: what was refused, where, and by which rule.
pub fn refusal(table: &str, partition: Option<&str>, refusal: &Refusal) {
    let rule = refusal.rule.as_str();
    match partition {
        Some(p) => eprintln!(
            "refused: {table} partition {p}: {} [{rule}]",
            refusal.reason
        ),
        None => eprintln!("refused: {table}: {} [{rule}]", refusal.reason),
    }
}

/// A byte progress bar on stderr while a partition is written; drawn only on a terminal.
pub struct ProgressBar(indicatif::ProgressBar);

impl ProgressBar {
    pub fn new(enabled: bool, label: &str) -> Self {
        use std::io::IsTerminal;
        let target = if enabled && std::io::stderr().is_terminal() {
            indicatif::ProgressDrawTarget::stderr()
        } else {
            indicatif::ProgressDrawTarget::hidden()
        };
        let bar = indicatif::ProgressBar::with_draw_target(None, target);
        bar.set_style(
            indicatif::ProgressStyle::with_template(
                "{msg} [{bar:30}] {bytes}/{total_bytes} {bytes_per_sec} eta {eta}",
            )
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar())
            .progress_chars("=> "),
        );
        bar.set_message(label.to_string());
        ProgressBar(bar)
    }

    pub fn finish(&self) {
        self.0.finish_and_clear();
    }
}

impl hive_orc_compactor::operations::compact::Progress for ProgressBar {
    fn planned(&self, bytes: u64) {
        self.0.set_length(bytes);
    }
    fn written(&self, bytes: u64) {
        self.0.inc(bytes);
    }
}

fn plural(n: usize, one: &str) -> String {
    if n == 1 {
        format!("1 {one}")
    } else {
        format!("{n} {one}s")
    }
}

/// One partition's outcome: a headline, the plan's details, then the reason or location.
pub fn compact(r: &CompactReport, as_json: bool) -> anyhow::Result<()> {
    if as_json {
        return json(r);
    }
    let mut out = std::io::stdout().lock();
    let status = match r.status {
        Status::Compacted => "compacted",
        Status::NothingToDo => "nothing to do",
        Status::DryRun => "dry run",
        Status::Refused => "refused",
        Status::Busy => "busy",
        Status::Failed => "failed",
        Status::VerificationFailed => "VERIFICATION FAILED",
    };
    writeln!(out, "{status}: {} partition {}", r.table, r.partition)?;
    if r.files_before > 0 {
        writeln!(
            out,
            "  files     {} ({}) -> {} ({}), {} rows",
            r.files_before,
            size(r.bytes_before),
            r.files_after,
            size(r.bytes_after),
            r.rows
        )?;
    }
    for (i, g) in r.groups.iter().enumerate() {
        writeln!(
            out,
            "  group {}   {} {}, {}, {}: {}",
            i + 1,
            plural(g.files, "file"),
            size(g.bytes),
            g.compression,
            g.writer,
            g.schema
        )?;
        for o in &g.outputs {
            let inputs = match o.inputs.as_slice() {
                [] => String::new(),
                [one] => one.clone(),
                [first, .., last] => format!("{first} .. {last}"),
            };
            writeln!(
                out,
                "    {} <- {} ({inputs}), {}, {} rows, {}",
                o.name,
                plural(o.inputs.len(), "file"),
                plural(o.stripes, "stripe"),
                o.rows,
                size(o.bytes)
            )?;
        }
    }
    for c in &r.carried {
        writeln!(
            out,
            "  unchanged {} ({}): {}",
            c.name,
            size(c.bytes),
            c.reason
        )?;
    }
    if !r.dropped_empty.is_empty() {
        writeln!(
            out,
            "  empty     {} (zero rows, not carried)",
            r.dropped_empty.join(", ")
        )?;
    }
    if let Some(l) = &r.new_location {
        writeln!(out, "  location  {l}")?;
        if let Some(old) = &r.old_location {
            writeln!(out, "  was       {old} (old files kept until cleanup)")?;
        }
    }
    if let Some(reason) = &r.reason {
        writeln!(out, "  reason    {reason}")?;
    }
    for w in &r.warnings {
        writeln!(out, "  warning   {w}")?;
    }
    writeln!(out, "  time      {:.1} s", r.seconds)?;
    drop(out);
    // Cron mails stderr: one line for anything that needs attention.
    match r.status {
        Status::Compacted | Status::NothingToDo | Status::DryRun => {}
        _ => eprintln!(
            "{status}: {} partition {}: {}{}",
            r.table,
            r.partition,
            r.reason.as_deref().unwrap_or(""),
            r.rule
                .map(|rule| format!(" [{}]", rule.as_str()))
                .unwrap_or_default()
        ),
    }
    Ok(())
}
