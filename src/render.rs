//! Reports as people and scripts read them: aligned text, or one JSON object per report.

use std::io::Write;

use bytesize::ByteSize;
use hive_orc_compactor::eligibility::Refusal;
use hive_orc_compactor::operations::analyze::{self, AnalyzeReport, PartitionAnalysis, Totals};
use hive_orc_compactor::operations::batch::{self, BatchSummary};
use hive_orc_compactor::operations::compact::{CompactReport, OutputWriter, Progress, VerifyLevel};
use hive_orc_compactor::operations::outcome::{Outcome, Status};
use std::collections::BTreeMap;

use hive_orc_compactor::operations::cleanup::{CleanupReport, RunAction};
use hive_orc_compactor::operations::inspect::{DirectoryReport, InspectReport};
use hive_orc_compactor::operations::rollback::RollbackReport;
use hive_orc_compactor::operations::verify::VerifyReport;
use hive_orc_compactor::snapshot::FileSizes;
use serde::Serialize;

fn json<T: Serialize>(out: &mut dyn Write, value: &T) -> anyhow::Result<()> {
    serde_json::to_writer(&mut *out, value)?;
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

pub fn inspect(out: &mut dyn Write, r: &InspectReport, format: Format) -> anyhow::Result<()> {
    if format == Format::Json {
        return json(out, r);
    }
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
        Some(d) => directory(out, "", d, &r.statistics)?,
        None => writeln!(out, "location       {}", or_none(&r.location))?,
    }
    writeln!(out, "eligible       {}", eligibility(&r.refusal))?;
    if let Some(p) = &r.partition {
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
pub fn refusal(
    err: &mut dyn Write,
    table: &str,
    partition: Option<&str>,
    refusal: &Refusal,
) -> std::io::Result<()> {
    let rule = refusal.rule.as_str();
    match partition {
        Some(p) => writeln!(
            err,
            "refused: {table} partition {p}: {} [{rule}]",
            refusal.reason
        ),
        None => writeln!(err, "refused: {table}: {} [{rule}]", refusal.reason),
    }
}

/// Follows `analyze`: a bar counting surveyed partitions, on stderr and only on a terminal.
pub struct Surveying(indicatif::ProgressBar);

impl Surveying {
    pub fn new(format: Format) -> Self {
        use std::io::IsTerminal;
        let bar = if format != Format::Json && std::io::stderr().is_terminal() {
            indicatif::ProgressBar::new(0)
        } else {
            indicatif::ProgressBar::hidden()
        };
        bar.set_style(style(
            "partitions surveyed [{bar:30}] {pos}/{len} eta {eta}",
        ));
        Surveying(bar)
    }
}

impl Drop for Surveying {
    fn drop(&mut self) {
        self.0.finish_and_clear();
    }
}

impl analyze::Tally for Surveying {
    fn found(&self, partitions: usize) {
        self.0.set_length(partitions as u64);
    }

    fn surveyed(&self) {
        self.0.inc(1);
    }
}

/// Follows a batch: one byte bar per running partition under a bar counting partitions, on
/// stderr and only on a terminal (cron gets none); each report printed as it comes, above them.
pub struct Batch {
    bars: indicatif::MultiProgress,
    done: indicatif::ProgressBar,
    format: Format,
}

fn style(template: &str) -> indicatif::ProgressStyle {
    indicatif::ProgressStyle::with_template(template)
        .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar())
        .progress_chars("=> ")
}

impl Batch {
    pub fn new(format: Format, partitions: usize) -> Self {
        use std::io::IsTerminal;
        let target = if format != Format::Json && std::io::stderr().is_terminal() {
            indicatif::ProgressDrawTarget::stderr()
        } else {
            indicatif::ProgressDrawTarget::hidden()
        };
        let bars = indicatif::MultiProgress::with_draw_target(target);
        let done = bars.add(indicatif::ProgressBar::new(partitions as u64));
        done.set_style(style("partitions [{bar:30}] {pos}/{len} elapsed {elapsed}"));
        Batch { bars, done, format }
    }

    pub fn finish(&self) {
        self.done.finish_and_clear();
    }
}

impl batch::Observer for Batch {
    fn started(&self, key: &str) -> Box<dyn Progress + '_> {
        let bar = self.bars.add(indicatif::ProgressBar::new(0));
        bar.set_style(style(
            "{msg} [{bar:30}] {bytes}/{total_bytes} {bytes_per_sec} eta {eta}",
        ));
        bar.set_message(key.to_string());
        Box::new(ProgressBar(bar))
    }

    fn finished(&self, report: &CompactReport) {
        self.done.inc(1);
        if let Err(e) = self.bars.suspend(|| {
            compact(
                &mut std::io::stdout().lock(),
                &mut std::io::stderr(),
                report,
                self.format,
            )
        }) {
            tracing::error!("printing the report of {}: {e}", report.outcome.partition);
        }
    }
}

/// A byte progress bar for one partition, cleared when the partition ends.
struct ProgressBar(indicatif::ProgressBar);

impl Drop for ProgressBar {
    fn drop(&mut self) {
        self.0.finish_and_clear();
    }
}

impl Progress for ProgressBar {
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

/// `<status>: <table> partition <partition>`, the first line of a partition's report.
fn headline(out: &mut dyn Write, o: &Outcome) -> std::io::Result<()> {
    writeln!(
        out,
        "{}: {} partition {}",
        o.status.as_text(),
        o.table,
        o.partition
    )
}

/// One partition's outcome: a headline, the plan's details, then the reason or location.
pub fn compact(
    out: &mut dyn Write,
    err: &mut dyn Write,
    r: &CompactReport,
    format: Format,
) -> anyhow::Result<()> {
    if format == Format::Json {
        return json(out, r);
    }
    let status = r.outcome.status.as_text();
    headline(out, &r.outcome)?;
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
            writeln!(out, "      {}: {}", o.made_by.as_str(), o.why)?;
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
    if let Some(level) = r.verify {
        if matches!(r.outcome.status, Status::Compacted | Status::DryRun) {
            let how = match level {
                VerifyLevel::Full => "every byte re-read from HDFS and checksummed",
                VerifyLevel::Tail => {
                    "tails re-read from HDFS; bytes checked in process and by HDFS write checksums"
                }
            };
            writeln!(out, "  verify    {} ({how})", level.as_str())?;
            let rewritten = r.groups.iter().flat_map(|g| &g.outputs);
            if rewritten
                .clone()
                .any(|o| o.made_by == OutputWriter::Rewrite)
            {
                writeln!(
                    out,
                    "            re-encoded files: decoded again from HDFS, every column's values \
                     compared with the inputs' by digest"
                )?;
            }
        }
    }
    if let Some(reason) = &r.outcome.reason {
        writeln!(out, "  reason    {reason}")?;
    }
    for w in &r.outcome.warnings {
        writeln!(out, "  warning   {w}")?;
    }
    writeln!(out, "  time      {:.1} s", r.seconds)?;
    // Cron mails stderr: one line for anything that needs attention.
    match r.outcome.status {
        Status::Compacted | Status::NothingToDo | Status::DryRun | Status::Skipped => {}
        _ => writeln!(
            err,
            "{status}: {} partition {}: {}{}",
            r.outcome.table,
            r.outcome.partition,
            r.outcome.reason.as_deref().unwrap_or(""),
            r.outcome
                .rule
                .map(|rule| format!(" [{}]", rule.as_str()))
                .unwrap_or_default()
        )?,
    }
    Ok(())
}

/// The end of a batch: one line of counts (and the partitions that need a look), or one
/// `{"summary": ...}` object after the partitions' JSON lines.
pub fn batch_summary(out: &mut dyn Write, s: &BatchSummary, format: Format) -> anyhow::Result<()> {
    if format == Format::Json {
        return json(out, &serde_json::json!({ "summary": s }));
    }
    writeln!(
        out,
        "summary: {} compacted, {} nothing to do, {} dry run, {} skipped, {} refused, {} busy, \
         {} failed, {} verification failed; {} removed, {} rewritten, {:.1} s{}",
        s.compacted,
        s.nothing_to_do,
        s.dry_run,
        s.skipped,
        s.refused,
        s.busy,
        s.failed,
        s.verification_failed,
        plural(s.files_removed, "file"),
        size(s.bytes_rewritten),
        s.seconds,
        if s.interrupted { " (interrupted)" } else { "" }
    )?;
    for a in &s.attention {
        writeln!(out, "  needs a look: {a}")?;
    }
    Ok(())
}

/// How every command prints its report: text for people, JSON for scripts, or (analyze only)
/// CSV; a command without a CSV shape prints text for it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    Text,
    Json,
    Csv,
}

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

pub fn rollback(
    out: &mut dyn Write,
    err: &mut dyn Write,
    r: &RollbackReport,
    format: Format,
) -> anyhow::Result<()> {
    if format == Format::Json {
        return json(out, r);
    }
    let status = r.outcome.status.as_text();
    headline(out, &r.outcome)?;
    if let Some(run) = &r.run_id {
        writeln!(out, "  run       {run}")?;
    }
    if let (Some(from), Some(to)) = (&r.from, &r.to) {
        writeln!(out, "  from      {from}\n  to        {to}")?;
    }
    if r.journal_rebuilt {
        writeln!(out, "  journal   rebuilt from the partition parameters")?;
    }
    for m in &r.missing {
        writeln!(out, "  missing   {m}")?;
    }
    for w in &r.outcome.warnings {
        writeln!(out, "  warning   {w}")?;
    }
    if let Some(reason) = &r.outcome.reason {
        writeln!(
            err,
            "{status}: {} partition {}: {reason}",
            r.outcome.table, r.outcome.partition
        )?;
    }
    Ok(())
}

pub fn cleanup(out: &mut dyn Write, r: &CleanupReport, format: Format) -> anyhow::Result<()> {
    if format == Format::Json {
        return json(out, r);
    }
    let will = if r.dry_run { "would remove" } else { "removed" };
    for p in &r.partitions {
        writeln!(out, "{} partition {}", p.table, p.partition)?;
        for id in &p.journals_rebuilt {
            writeln!(out, "  run {id}: journal rebuilt (killed after its swap)")?;
        }
        for run in &p.runs {
            let action = match run.action {
                RunAction::DeleteInputs => "replaced files",
                RunAction::DeleteOutputs => "rolled back: its own outputs",
                RunAction::Kept => "kept",
                RunAction::Settled => "cleaned before; files no journal names are left",
            };
            writeln!(out, "  run {}: {action}", run.run_id)?;
            // Hundreds of small files each: the first few name the directory, JSON has all.
            for f in run.removed.iter().take(3) {
                writeln!(out, "    {will} {f}")?;
            }
            if run.removed.len() > 3 {
                writeln!(out, "    {will} {} more", run.removed.len() - 3)?;
            }
            for f in &run.left {
                writeln!(out, "    left    {f}")?;
            }
            for f in &run.late_files {
                writeln!(
                    out,
                    "    late    {f} (written after the swap; queries do not see it)"
                )?;
            }
            for f in &run.missing_outputs {
                writeln!(out, "    missing {f} (its inputs stay)")?;
            }
            for f in &run.unknown_files {
                writeln!(
                    out,
                    "    unknown {f} (in the run directory, no journal names it; kept)"
                )?;
            }
            for f in &run.adopted {
                writeln!(out, "    adopted {f}")?;
            }
            for f in &run.discarded {
                writeln!(out, "    discarded {f}")?;
            }
        }
        for d in &p.dead_runs_removed {
            writeln!(out, "  dead run: {will} {d}")?;
        }
        for e in &p.errors {
            writeln!(out, "  error   {e}")?;
        }
    }
    writeln!(
        out,
        "cleanup{}: {} partitions checked, {} with something to clean, {} errors",
        if r.dry_run { " (dry run)" } else { "" },
        r.partitions_checked,
        r.partitions.len(),
        r.errors
    )?;
    Ok(())
}

/// A report whose operation renders its own text (the `iceberg` commands), or its JSON.
pub fn text_or_json<R: Serialize>(
    out: &mut dyn Write,
    report: &R,
    text: impl FnOnce() -> String,
    format: Format,
) -> anyhow::Result<()> {
    match format {
        Format::Json => json(out, report),
        Format::Text | Format::Csv => Ok(write!(out, "{}", text())?),
    }
}

pub fn verify(
    out: &mut dyn Write,
    err: &mut dyn Write,
    r: &VerifyReport,
    format: Format,
) -> anyhow::Result<()> {
    if format == Format::Json {
        return json(out, r);
    }
    let verdict = if r.mismatches.is_empty() {
        "verified"
    } else {
        "MISMATCH"
    };
    writeln!(out, "{verdict}: {} partition {}", r.table, r.partition)?;
    writeln!(out, "  location  {}", r.location)?;
    writeln!(
        out,
        "  files     {} ({}), {} rows",
        r.files,
        size(r.bytes),
        r.rows
    )?;
    if let Some(run) = &r.run_id {
        writeln!(
            out,
            "  run       {run} ({} checksums checked)",
            r.checksums_checked
        )?;
    }
    for n in &r.notes {
        writeln!(out, "  note      {n}")?;
    }
    for m in &r.mismatches {
        writeln!(out, "  mismatch  {m}")?;
    }
    for m in &r.mismatches {
        writeln!(err, "mismatch: {} partition {}: {m}", r.table, r.partition)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use hive_orc_compactor::eligibility::Rule;
    use hive_orc_compactor::operations::compact::{
        CarriedFile, GroupReport, OutputReport, OutputWriter,
    };

    /// What a renderer wrote to stdout and stderr.
    fn printed(
        render: impl FnOnce(&mut dyn Write, &mut dyn Write) -> anyhow::Result<()>,
    ) -> (String, String) {
        let (mut out, mut err) = (Vec::new(), Vec::new());
        render(&mut out, &mut err).unwrap();
        (
            String::from_utf8(out).unwrap(),
            String::from_utf8(err).unwrap(),
        )
    }

    fn compacted() -> CompactReport {
        let mut r = CompactReport::not_run("d.t", "dt=1", Status::Compacted, String::new(), None);
        r.outcome.reason = None;
        r.files_before = 3;
        r.files_after = 2;
        r.bytes_before = 3 * 1024;
        r.bytes_after = 2 * 1024;
        r.rows = 30;
        r.groups = vec![GroupReport {
            schema: "struct<a:int>".into(),
            compression: "ZLIB".into(),
            writer: "ORC Java".into(),
            files: 2,
            bytes: 2048,
            outputs: vec![OutputReport {
                name: "part-r-00000.orc".into(),
                inputs: vec!["a.orc".into(), "b.orc".into()],
                stripes: 2,
                rows: 20,
                bytes: 1024,
                made_by: OutputWriter::StripeCopy,
                why: "--stripes copy".into(),
            }],
        }];
        r.carried = vec![CarriedFile {
            name: "c.orc".into(),
            bytes: 1024,
            reason: "already large".into(),
        }];
        r.new_location = Some("hdfs://nn/t/dt=1/.hive-orc-compactor/r".into());
        r.old_location = Some("hdfs://nn/t/dt=1".into());
        r.verify = Some(VerifyLevel::Full);
        r
    }

    #[test]
    fn compact_text() {
        let (out, err) = printed(|o, e| compact(o, e, &compacted(), Format::Text));
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines[0], "compacted: d.t partition dt=1");
        assert_eq!(lines[1], "  files     3 (3.0 KiB) -> 2 (2.0 KiB), 30 rows");
        assert_eq!(
            lines[2],
            "  group 1   2 files 2.0 KiB, ZLIB, ORC Java: struct<a:int>"
        );
        assert_eq!(
            lines[3],
            "    part-r-00000.orc <- 2 files (a.orc .. b.orc), 2 stripes, 20 rows, 1.0 KiB"
        );
        assert_eq!(lines[4], "      copy: --stripes copy");
        assert_eq!(lines[5], "  unchanged c.orc (1.0 KiB): already large");
        assert!(out.contains("  location  hdfs://nn/t/dt=1/.hive-orc-compactor/r\n"));
        assert!(out.contains("  verify    full ("));
        assert!(err.is_empty(), "success mails nothing: {err}");
    }

    #[test]
    fn compact_json_keeps_its_names() {
        let (out, err) = printed(|o, e| compact(o, e, &compacted(), Format::Json));
        assert!(err.is_empty());
        assert_eq!(out.lines().count(), 1, "one object per line");
        let v: serde_json::Value = serde_json::from_str(&out).unwrap();
        for key in [
            "table",
            "partition",
            "status",
            "reason",
            "rule",
            "files_before",
            "files_after",
            "bytes_before",
            "bytes_after",
            "rows",
            "groups",
            "carried",
            "dropped_empty",
            "old_location",
            "new_location",
            "run_id",
            "verify",
            "seconds",
            "warnings",
        ] {
            assert!(v.get(key).is_some(), "{key} missing from {v}");
        }
        assert_eq!(v["status"], "compacted");
        assert_eq!(v["verify"], "full");
        assert_eq!(v["groups"][0]["outputs"][0]["inputs"][1], "b.orc");
    }

    #[test]
    fn a_refusal_is_one_line_on_stderr() {
        let r = CompactReport::not_run(
            "d.t",
            "dt=1",
            Status::Refused,
            "the table is transactional".into(),
            Some(Rule::Transactional),
        );
        let (out, err) = printed(|o, e| compact(o, e, &r, Format::Text));
        assert!(out.starts_with("refused: d.t partition dt=1\n"));
        assert!(out.contains("  reason    the table is transactional\n"));
        assert_eq!(
            err,
            "refused: d.t partition dt=1: the table is transactional [transactional]\n"
        );
        let (out, err) = printed(|o, e| compact(o, e, &r, Format::Json));
        let v: serde_json::Value = serde_json::from_str(&out).unwrap();
        assert_eq!(
            (v["status"].as_str(), v["rule"].as_str()),
            (Some("refused"), Some("transactional"))
        );
        assert!(err.is_empty(), "with --json the object says it all");
    }

    #[test]
    fn rollback_text_and_json() {
        let mut outcome = Outcome::new("d.t", "dt=1");
        outcome.status = Status::RolledBack;
        let r = RollbackReport {
            outcome,
            run_id: Some("r1".into()),
            from: Some("hdfs://nn/t/dt=1/.hive-orc-compactor/r1".into()),
            to: Some("hdfs://nn/t/dt=1".into()),
            missing: vec![],
            written_after_swap: vec![],
            changed_parameters: vec![],
            journal_rebuilt: true,
        };
        let (out, err) = printed(|o, e| rollback(o, e, &r, Format::Text));
        assert_eq!(
            out,
            "rolled back: d.t partition dt=1\n  run       r1\n  from      \
             hdfs://nn/t/dt=1/.hive-orc-compactor/r1\n  to        hdfs://nn/t/dt=1\n  \
             journal   rebuilt from the partition parameters\n"
        );
        assert!(err.is_empty());
        let (out, _) = printed(|o, e| rollback(o, e, &r, Format::Json));
        let v: serde_json::Value = serde_json::from_str(&out).unwrap();
        assert_eq!(v["status"], "rolled-back");
        assert_eq!(v["run_id"], "r1");
        assert_eq!(v["journal_rebuilt"], true);
        assert_eq!(v["warnings"], serde_json::json!([]));
    }

    #[test]
    fn batch_summary_text_and_json() {
        let s = BatchSummary {
            partitions: 3,
            compacted: 2,
            failed: 1,
            files_removed: 10,
            bytes_rewritten: 2048,
            seconds: 1.25,
            attention: vec!["d.t/dt=1: failed: boom".into()],
            exit_code: 1,
            ..BatchSummary::default()
        };
        let (out, _) = printed(|o, _| batch_summary(o, &s, Format::Text));
        assert_eq!(
            out,
            "summary: 2 compacted, 0 nothing to do, 0 dry run, 0 skipped, 0 refused, 0 busy, \
             1 failed, 0 verification failed; 10 files removed, 2.0 KiB rewritten, 1.2 s\n  \
             needs a look: d.t/dt=1: failed: boom\n"
        );
        let (out, _) = printed(|o, _| batch_summary(o, &s, Format::Json));
        let v: serde_json::Value = serde_json::from_str(&out).unwrap();
        assert_eq!(v["summary"]["compacted"], 2);
        assert_eq!(v["summary"]["exit_code"], 1);
    }
}
