//! `analyze`: one aligned row (or CSV line, or JSON object) per partition, and the totals.

use std::io::Write;

use hive_orc_compactor::census::BUCKET_FLOORS;
use hive_orc_compactor::operations::analyze::{
    self, AnalyzeOptions, AnalyzeReport, PartitionAnalysis, Totals,
};

use hive_orc_compactor::metastore::meter::Calls;

use super::format::{calls_line, json, plural, size, style, Format};

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
        cells.push(plan.map_or(String::new(), |d| d.ways()));
    }
    cells.push(match (&p.eligible, p.rule, &p.reason) {
        (true, _, _) => match (&p.suspended, human) {
            (None, _) => "yes".into(),
            (Some(why), true) => format!("yes, {why}"),
            (Some(_), false) => "suspended".into(),
        },
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
const DEEP_COLUMNS: &[&str] = &["after", "groups", "stripes", "ways"];

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
    options: &AnalyzeOptions,
    calls: &Calls,
) -> anyhow::Result<()> {
    let deep = options.deep;
    match format {
        Format::Json => {
            for p in &r.partitions {
                json(out, p)?;
            }
            let mut summary = serde_json::json!({
                "tables": r.tables,
                "total": r.total,
                "size_buckets": BUCKET_FLOORS,
                "metastore_calls": calls,
                "seconds": r.seconds,
            });
            if let Some(ratio) = options.fail_above {
                summary["fail_above"] = gate_json(r, ratio);
            }
            json(out, &serde_json::json!({ "summary": summary }))
        }
        Format::Html => Ok(out.write_all(super::census_page::census_page(r, options).as_bytes())?),
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
            calls_line(out, calls)?;
            writeln!(out, "analyzed in {:.1} s", r.seconds)?;
            Ok(())
        }
    }
}

/// `--fail-above` in the JSON summary: the ratio and every partition over it.
fn gate_json(r: &AnalyzeReport, ratio: f64) -> serde_json::Value {
    let over: Vec<serde_json::Value> = r
        .over_file_ratio(ratio)
        .iter()
        .map(|p| {
            serde_json::json!({
                "table": p.table,
                "partition": p.partition,
                "location": p.location,
                "files": p.files,
                "files_needed": p.files_needed,
            })
        })
        .collect();
    serde_json::json!({ "ratio": ratio, "over": over })
}

/// Lines of the gate's findings named on stderr, whatever stdout's format; a thousand bad
/// partitions would bury the summary, so the rest is a count (`--json` lists them all).
const GATE_LINES: usize = 20;

/// `--fail-above`'s findings on stderr: a line per partition over the ratio, saying what to do,
/// then the verdict. Returns whether any partition is over.
pub fn file_ratio_gate(
    err: &mut dyn Write,
    r: &AnalyzeReport,
    ratio: f64,
    target_size: u64,
) -> std::io::Result<bool> {
    let over = r.over_file_ratio(ratio);
    for p in over.iter().take(GATE_LINES) {
        let table = p.table.as_str();
        let spec = p.partition.as_str();
        writeln!(
            err,
            "{table} {spec}: {} where {} at the {} target would do, more than {ratio}x ({}): \
             compact it (compact --table {table}{}) and make its writer write fewer files",
            plural(p.files, "file"),
            p.files_needed.max(1),
            size(target_size),
            p.location.as_deref().unwrap_or("no location"),
            if spec.is_empty() {
                String::new()
            } else {
                format!(" --partition '{spec}'")
            },
        )?;
    }
    if over.len() > GATE_LINES {
        writeln!(
            err,
            "... and {} more (--json lists them all)",
            over.len() - GATE_LINES
        )?;
    }
    if !over.is_empty() {
        writeln!(
            err,
            "--fail-above {ratio}x: {} over the ratio (exit 6)",
            plural(over.len(), "partition")
        )?;
    }
    Ok(!over.is_empty())
}

fn totals_line(out: &mut dyn Write, t: &Totals) -> std::io::Result<()> {
    writeln!(
        out,
        "{}: {} partitions ({} eligible), {} ({}), {} small; compaction would remove {} \
         ({} NameNode objects){}{}",
        t.scope,
        t.partitions,
        t.eligible,
        plural(t.files, "file"),
        size(t.bytes),
        t.small_files,
        plural(t.removable_files, "file"),
        t.namenode_objects_removable,
        match t.groups_not_re_encodable {
            Some(n) if n > 0 => format!(
                "; {} of tiny stripes copied, their values not re-encodable",
                plural(n, "group")
            ),
            _ => String::new(),
        },
        if t.errors > 0 {
            format!("; {} unreadable", t.errors)
        } else {
            String::new()
        }
    )?;
    writeln!(
        out,
        "  health {}/100; backlog: {}, about {:.0} s of work to clear ({} to read){}",
        t.health,
        plural(t.backlog.partitions, "partition"),
        t.backlog.seconds,
        size(t.backlog.bytes_read),
        match t.suspended {
            0 => String::new(),
            n => format!(
                "; {} suspended (compact --retry-suspended)",
                plural(n, "partition")
            ),
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

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::render::testing::{self, assert_keys, object, printed};
    use hive_orc_compactor::census::SizeHistogram;
    use hive_orc_compactor::eligibility::Rule;
    use hive_orc_compactor::operations::autopilot::estimate::Estimate;

    pub(crate) fn options() -> AnalyzeOptions {
        AnalyzeOptions {
            small_file_size: 64 << 20,
            target_size: 256 << 20,
            deep: false,
            stripes: hive_orc_compactor::operations::compact::Stripes::Auto,
            min_stripe_size: 8 << 20,
            stripe_size: 64 << 20,
            fail_above: None,
            suspend_after: 3,
        }
    }

    pub(crate) fn report() -> AnalyzeReport {
        let row = |partition: &str, refused: bool| PartitionAnalysis {
            table: "d.t".into(),
            partition: partition.into(),
            location: Some(format!("hdfs://nn/t/{partition}")),
            files: 10,
            bytes: 10 * 1024,
            mean_size: 1024,
            median_size: 1024,
            small_files: 10,
            files_needed: 1,
            excess_files: 9,
            namenode_objects: 20,
            namenode_objects_removable: if refused { 0 } else { 18 },
            eligible: !refused,
            rule: refused.then_some(Rule::NotOrc),
            reason: refused.then(|| "it is text".to_string()),
            healthy_bytes: 0,
            estimate: (!refused).then_some(Estimate {
                partitions: 1,
                seconds: 2.5,
                ..Estimate::default()
            }),
            suspended: None,
            plan: None,
            fingerprint: None,
            sizes_before: SizeHistogram::of([1024; 10]),
            sizes_after: if refused {
                SizeHistogram::of([1024; 10])
            } else {
                SizeHistogram::of([10 * 1024])
            },
        };
        let total = Totals {
            scope: "d.t".into(),
            partitions: 2,
            eligible: 1,
            files: 20,
            bytes: 20 * 1024,
            small_files: 20,
            files_needed: 2,
            excess_files: 18,
            removable_files: 9,
            namenode_objects: 40,
            namenode_objects_removable: 18,
            stripes_before: None,
            stripes_after: None,
            groups_not_re_encodable: None,
            files_by_size_before: SizeHistogram::of([1024; 20]),
            files_by_size_after: SizeHistogram::of([1024; 10].into_iter().chain([10 * 1024])),
            errors: 0,
            healthy_bytes: 0,
            health: 0,
            backlog: Estimate {
                partitions: 1,
                seconds: 2.5,
                ..Estimate::default()
            },
            suspended: 0,
        };
        AnalyzeReport {
            partitions: vec![row("dt=1", false), row("dt=2", true)],
            tables: vec![total.clone()],
            total,
            trends: vec![],
            seconds: 1.25,
        }
    }

    #[test]
    fn analyze_text_is_aligned_and_ends_with_the_totals() {
        let (out, _) =
            printed(|o, _| analyze(o, &report(), Format::Text, &options(), &testing::calls()));
        assert_eq!(
            out,
            "TABLE  PARTITION  FILES     BYTES     MEAN   MEDIAN  SMALL  NEEDED  EXCESS  \
             ELIGIBLE\n\
             d.t    dt=1          10  10.0 KiB  1.0 KiB  1.0 KiB     10       1       9  yes\n\
             d.t    dt=2          10  10.0 KiB  1.0 KiB  1.0 KiB     10       1       9  \
             no [not_orc]: it is text\n\
             \n\
             d.t: 2 partitions (1 eligible), 20 files (20.0 KiB), 20 small; compaction would \
             remove 9 files (18 NameNode objects)\n  \
             health 0/100; backlog: 1 partition, about 2 s of work to clear (0 B to read)\n\
             metastore calls: 5 (get_table_req 3, lock 2)\n\
             analyzed in 1.2 s\n"
        );
    }

    #[test]
    fn analyze_csv_has_raw_numbers_and_rules() {
        let (out, _) =
            printed(|o, _| analyze(o, &report(), Format::Csv, &options(), &testing::calls()));
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(
            lines,
            [
                "table,partition,files,bytes,mean,median,small,needed,excess,eligible",
                "d.t,dt=1,10,10240,1024,1024,10,1,9,yes",
                "d.t,dt=2,10,10240,1024,1024,10,1,9,no [not_orc]",
            ]
        );
    }

    #[test]
    fn analyze_json_is_a_line_per_partition_then_the_summary() {
        let (out, _) =
            printed(|o, _| analyze(o, &report(), Format::Json, &options(), &testing::calls()));
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines.len(), 3);
        let refused = object(lines[1]);
        assert_keys(
            &refused,
            &[
                "table",
                "partition",
                "location",
                "files",
                "bytes",
                "mean_size",
                "median_size",
                "small_files",
                "files_needed",
                "excess_files",
                "eligible",
                "rule",
                "reason",
            ],
        );
        assert_eq!(refused["rule"], "not_orc");
        assert!(refused.get("plan").is_none(), "only with --deep");
        let summary = object(lines[2]);
        assert_eq!(summary["summary"]["total"]["removable_files"], 9);
        assert_eq!(summary["summary"]["tables"][0]["scope"], "d.t");
        assert_eq!(summary["summary"]["metastore_calls"]["total"], 5);
        assert!(summary["summary"].get("fail_above").is_none());
    }

    #[test]
    fn the_gate_names_each_partition_over_the_ratio_and_lists_them_in_json() {
        let report = report();
        let (_, err) = printed(|_, e| {
            assert!(file_ratio_gate(e, &report, 5.0, 256 << 20)?);
            Ok(())
        });
        let lines: Vec<&str> = err.lines().collect();
        assert_eq!(lines.len(), 3, "{err}");
        assert_eq!(
            lines[0],
            "d.t dt=1: 10 files where 1 at the 256.0 MiB target would do, more than 5x \
             (hdfs://nn/t/dt=1): compact it (compact --table d.t --partition 'dt=1') and make \
             its writer write fewer files"
        );
        assert_eq!(
            lines[2],
            "--fail-above 5x: 2 partitions over the ratio (exit 6)"
        );
        let (_, err) = printed(|_, e| {
            assert!(!file_ratio_gate(e, &report, 10.0, 256 << 20)?);
            Ok(())
        });
        assert_eq!(err, "", "10 files is not more than 10x one");

        let gated = AnalyzeOptions {
            fail_above: Some(2.5),
            ..options()
        };
        let (out, _) = printed(|o, _| analyze(o, &report, Format::Json, &gated, &testing::calls()));
        let summary = object(out.lines().last().unwrap());
        let gate = &summary["summary"]["fail_above"];
        assert_eq!(gate["ratio"], 2.5);
        assert_eq!(gate["over"].as_array().unwrap().len(), 2);
        assert_eq!(gate["over"][1]["partition"], "dt=2");
        assert_eq!(gate["over"][1]["files_needed"], 1);
    }
}
