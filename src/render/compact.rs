//! `compact`: one report per partition as it ends, progress bars while a batch runs, and the
//! batch's summary.

use std::io::Write;

use hive_orc_compactor::binary_cache::Action;
use hive_orc_compactor::metastore::meter::{Calls, Meter};
use hive_orc_compactor::operations::batch::{self, BatchSummary, RunEstimate};
use hive_orc_compactor::operations::compact::{
    CompactReport, LayoutReport, OutputWriter, Progress, VerifyLevel,
};
use hive_orc_compactor::operations::on_yarn::{YarnPlan, YarnReport};
use hive_orc_compactor::operations::outcome::Status;

use super::format::{calls_line, headline, json, plural, size, style, with_calls, Format};

/// Follows a batch: one byte bar per running partition under a bar counting partitions, on
/// stderr and only on a terminal (cron gets none); each report printed as it comes, above them.
pub struct Batch {
    bars: indicatif::MultiProgress,
    done: indicatif::ProgressBar,
    format: Format,
    /// This process is a YARN task: Hadoop Streaming reads `reporter:` lines on stderr as the
    /// task's status and counters, and any such line as a sign of life.
    yarn_task: bool,
    /// Partitions reported on their own (named ones): each JSON report carries the run's
    /// metastore calls so far, the last one the run's total.
    calls: Option<Meter>,
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
        Batch {
            bars,
            done,
            format,
            yarn_task: false,
            calls: None,
        }
    }

    /// Each report carries the calls `meter` has counted so far (see [`Batch::calls`]).
    pub fn with_calls(self, meter: Meter) -> Self {
        Batch {
            calls: Some(meter),
            ..self
        }
    }

    /// A YARN task's observer: reports as JSON lines on stdout (the task's output), status
    /// and counters on stderr.
    pub fn yarn_task(partitions: usize) -> Self {
        Batch {
            yarn_task: true,
            ..Batch::new(Format::Json, partitions)
        }
    }

    /// A YARN job followed from this host: one bar of the map phase's percent.
    pub fn yarn_job(format: Format) -> indicatif::ProgressBar {
        let bar = Batch::new(format, 100).done;
        bar.set_style(style("YARN job [{bar:30}] {pos}% elapsed {elapsed}"));
        bar
    }

    pub fn finish(&self) {
        self.done.finish_and_clear();
    }
}

impl batch::Observer for Batch {
    fn started(&self, key: &str) -> Box<dyn Progress + '_> {
        if self.yarn_task {
            eprintln!(
                "reporter:status:compacting {key} ({} of {} done)",
                self.done.position(),
                self.done.length().unwrap_or(0)
            );
        }
        let bar = self.bars.add(indicatif::ProgressBar::new(0));
        bar.set_style(style(
            "{msg} [{bar:30}] {bytes}/{total_bytes} {bytes_per_sec} eta {eta}",
        ));
        bar.set_message(key.to_string());
        Box::new(ProgressBar(bar))
    }

    fn finished(&self, report: &CompactReport) {
        self.done.inc(1);
        if self.yarn_task {
            eprintln!(
                "reporter:counter:hive-orc-compactor,{},1",
                report.outcome.status.as_text()
            );
        }
        let calls = self.calls.as_ref().map(Meter::calls);
        if let Err(e) = self.bars.suspend(|| {
            compact(
                &mut std::io::stdout().lock(),
                &mut std::io::stderr(),
                report,
                calls.as_ref(),
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

/// One partition's outcome: a headline, the plan's details, then the reason or location.
/// `calls`, the run's metastore calls so far, go into the JSON report when given.
pub fn compact(
    out: &mut dyn Write,
    err: &mut dyn Write,
    r: &CompactReport,
    calls: Option<&Calls>,
    format: Format,
) -> anyhow::Result<()> {
    if format == Format::Json {
        return match calls {
            Some(calls) => json(out, &with_calls(r, calls)?),
            None => json(out, r),
        };
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
    groups(out, r)?;
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
    verification(out, r)?;
    if let Some(layout) = &r.layout {
        layout_lines(out, layout)?;
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

/// Each group of inputs and the outputs made from it.
fn groups(out: &mut dyn Write, r: &CompactReport) -> anyhow::Result<()> {
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
    Ok(())
}

/// How the outputs were verified, once they were (or would be).
fn verification(out: &mut dyn Write, r: &CompactReport) -> anyhow::Result<()> {
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
    Ok(())
}

/// The row order asked for, and how much of the files a lookup reads before and after.
fn layout_lines(out: &mut dyn Write, layout: &LayoutReport) -> anyhow::Result<()> {
    writeln!(out, "  layout    {}", layout.layout)?;
    for (column, share) in &layout.stripes_before {
        writeln!(
            out,
            "            a lookup on {column} reads {:.1}% of the stripes now (their statistics)",
            share * 100.0
        )?;
    }
    for (column, after) in &layout.after {
        let before = layout.before.get(column).copied().unwrap_or(f64::NAN);
        writeln!(
            out,
            "            a lookup on {column} reads {:.1}% of row groups, was {:.1}%",
            after * 100.0,
            before * 100.0
        )?;
    }
    if layout.spilled_runs > 0 {
        writeln!(
            out,
            "            sorted in {} runs spilled to disk ({})",
            layout.spilled_runs,
            bytesize::ByteSize(layout.spilled_bytes).display().iec()
        )?;
    }
    Ok(())
}

/// What `compact --on-yarn --dry-run` would submit.
pub fn yarn_plan(out: &mut dyn Write, p: &YarnPlan, format: Format) -> anyhow::Result<()> {
    if format == Format::Json {
        return json(out, &serde_json::json!({ "yarn_plan": p }));
    }
    if p.work_list.is_empty() {
        writeln!(
            out,
            "dry run: would submit no YARN job: no partition has work to do"
        )?;
        return Ok(());
    }
    writeln!(
        out,
        "dry run: would submit YARN job '{}': {} in {} of up to {} each",
        p.job_name,
        plural(p.work_list.len(), "partition"),
        plural(p.tasks, "task"),
        p.partitions_per_task
    )?;
    writeln!(
        out,
        "  work dir  {} (removed when the run ends)",
        p.work_dir
    )?;
    let binary = match p.binary.action {
        Action::Given => "given with --yarn-binary",
        Action::Upload => "not in the cache: would be uploaded",
        Action::Reuse => "in the cache: would be reused",
    };
    writeln!(out, "  binary    {} ({binary})", p.binary.path)?;
    writeln!(out, "  command   {}", p.command.join(" "))?;
    for (i, key) in p.work_list.iter().enumerate() {
        writeln!(
            out,
            "  task {:<4} {key}",
            i / p.partitions_per_task.max(1) + 1
        )?;
    }
    Ok(())
}

/// The end of a batch: one line of counts (and the partitions that need a look), or one
/// `{"summary": ...}` object after the partitions' JSON lines.
///
/// `calls` are the run's metastore calls: with `--on-yarn`, this host's and its tasks'
/// (`yarn.metastore_calls` holds the tasks' alone).
pub fn batch_summary(
    out: &mut dyn Write,
    s: &BatchSummary,
    yarn: Option<&YarnReport>,
    calls: &Calls,
    format: Format,
) -> anyhow::Result<()> {
    if format == Format::Json {
        let s = with_calls(s, calls)?;
        return match yarn {
            Some(y) => json(out, &serde_json::json!({ "summary": s, "yarn": y })),
            None => json(out, &serde_json::json!({ "summary": s })),
        };
    }
    if let Some(why) = yarn.and_then(|y| y.no_job.as_deref()) {
        writeln!(out, "yarn: no job submitted: {why}")?;
    } else if let Some(y) = yarn {
        writeln!(
            out,
            "yarn: job {} (application {}) {} in {:.1} s, {}",
            y.job.as_deref().unwrap_or("-"),
            y.application.as_deref().unwrap_or("-"),
            if y.succeeded { "succeeded" } else { "failed" },
            y.seconds,
            plural(y.tasks, "task"),
        )?;
        if let Some(b) = &y.binary {
            let how = match b.action {
                Action::Given => "given with --yarn-binary",
                Action::Upload => "uploaded to the cache",
                Action::Reuse => "reused from the cache",
            };
            writeln!(out, "  binary: {} ({how})", b.path)?;
        }
        for a in &y.failed_attempts {
            writeln!(out, "  failed attempt: {a}")?;
        }
        if let Some(e) = &y.error {
            writeln!(out, "  error: {e}")?;
        }
        if let Some(logs) = &y.logs {
            writeln!(out, "  task logs: {logs}")?;
        }
    }
    let c = &s.counts;
    writeln!(
        out,
        "summary: {} compacted, {} nothing to do, {} dry run, {} skipped, {} refused, {} busy, \
         {} failed, {} verification failed; {} removed, {} rewritten, {:.1} s{}",
        c.compacted,
        c.nothing_to_do,
        c.dry_run,
        c.skipped,
        c.refused,
        c.busy,
        c.failed,
        c.verification_failed,
        plural(c.files_removed, "file"),
        size(c.bytes_rewritten),
        s.seconds,
        if s.interrupted { " (interrupted)" } else { "" }
    )?;
    calls_line(out, calls)?;
    if let Some(e) = &s.estimate {
        estimate_line(out, e)?;
    }
    for a in &s.attention {
        writeln!(out, "  needs a look: {a}")?;
    }
    if !s.suspended.is_empty() {
        writeln!(
            out,
            "  suspended: {} (--retry-suspended tries them again)",
            plural(s.suspended.len(), "partition")
        )?;
    }
    for t in &s.tables_suspended {
        writeln!(
            out,
            "  needs a look: {t}: every partition with work is suspended"
        )?;
    }
    for p in &s.history_problems {
        writeln!(out, "  history: {p}")?;
    }
    Ok(())
}

/// What the plan expected: before a dry run's work, beside the actual after a run.
fn estimate_line(out: &mut dyn Write, e: &RunEstimate) -> anyhow::Result<()> {
    let a = &e.admitted;
    writeln!(
        out,
        "  estimate: {} in about {:.0} s ({:.0} s of work), {} read, {} written, {} NameNode \
         objects given back, about {} NameNode and {:.0} metastore calls; rates learnt for {} of \
         them",
        plural(a.partitions, "partition"),
        e.wall_seconds,
        a.seconds,
        size(a.bytes_read),
        size(a.bytes_written),
        a.namenode_objects_removed,
        a.namenode_calls,
        a.metastore_calls,
        e.learnt,
    )?;
    let l = &e.left_for_later;
    if l.partitions > 0 {
        writeln!(
            out,
            "  left for later runs by the budget: {}, about {:.0} s of work, {} NameNode objects",
            plural(l.partitions, "partition"),
            l.seconds,
            l.namenode_objects_removed
        )?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::render::testing::{self, assert_keys, printed, OUTCOME_KEYS};
    use hive_orc_compactor::eligibility::Rule;
    use hive_orc_compactor::operations::batch::Counts;
    use hive_orc_compactor::operations::compact::{CarriedFile, GroupReport, OutputReport};

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
            stripes: 1,
            reason: "already large".into(),
        }];
        r.new_location = Some("hdfs://nn/t/dt=1/.hive-orc-compactor/r".into());
        r.old_location = Some("hdfs://nn/t/dt=1".into());
        r.verify = Some(VerifyLevel::Full);
        r
    }

    #[test]
    fn compact_text() {
        let (out, err) = printed(|o, e| compact(o, e, &compacted(), None, Format::Text));
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
        let (out, err) = printed(|o, e| compact(o, e, &compacted(), None, Format::Json));
        assert!(err.is_empty());
        assert_eq!(out.lines().count(), 1, "one object per line");
        let v: serde_json::Value = serde_json::from_str(&out).unwrap();
        assert_keys(&v, OUTCOME_KEYS);
        assert_keys(
            &v,
            &[
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
            ],
        );
        assert_eq!(v["status"], "compacted");
        assert_eq!(v["verify"], "full");
        assert_eq!(v["groups"][0]["outputs"][0]["inputs"][1], "b.orc");
        assert!(v.get("metastore_calls").is_none());
        let calls = testing::calls();
        let (out, _) = printed(|o, e| compact(o, e, &compacted(), Some(&calls), Format::Json));
        let v: serde_json::Value = serde_json::from_str(&out).unwrap();
        assert_eq!(v["metastore_calls"]["lock"], 2);
        assert_eq!(v["metastore_calls"]["total"], 5);
        assert_eq!(v["status"], "compacted");
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
        let (out, err) = printed(|o, e| compact(o, e, &r, None, Format::Text));
        assert!(out.starts_with("refused: d.t partition dt=1\n"));
        assert!(out.contains("  reason    the table is transactional\n"));
        assert_eq!(
            err,
            "refused: d.t partition dt=1: the table is transactional [transactional]\n"
        );
        let (out, err) = printed(|o, e| compact(o, e, &r, None, Format::Json));
        let v: serde_json::Value = serde_json::from_str(&out).unwrap();
        assert_eq!(
            (v["status"].as_str(), v["rule"].as_str()),
            (Some("refused"), Some("transactional"))
        );
        assert!(err.is_empty(), "with --json the object says it all");
    }

    #[test]
    fn batch_summary_text_and_json() {
        let s = BatchSummary {
            counts: Counts {
                partitions: 3,
                compacted: 2,
                failed: 1,
                files_removed: 10,
                bytes_rewritten: 2048,
                ..Counts::default()
            },
            seconds: 1.25,
            attention: vec!["d.t/dt=1: failed: boom".into()],
            exit_code: 1,
            ..BatchSummary::default()
        };
        let calls = testing::calls();
        let (out, _) = printed(|o, _| batch_summary(o, &s, None, &calls, Format::Text));
        assert_eq!(
            out,
            "summary: 2 compacted, 0 nothing to do, 0 dry run, 0 skipped, 0 refused, 0 busy, \
             1 failed, 0 verification failed; 10 files removed, 2.0 KiB rewritten, 1.2 s\n\
             metastore calls: 5 (get_table_req 3, lock 2)\n  \
             needs a look: d.t/dt=1: failed: boom\n"
        );
        let (out, _) = printed(|o, _| batch_summary(o, &s, None, &calls, Format::Json));
        let v: serde_json::Value = serde_json::from_str(&out).unwrap();
        assert_eq!(v["summary"]["compacted"], 2);
        assert_eq!(v["summary"]["exit_code"], 1);
        assert_eq!(
            v["summary"]["metastore_calls"],
            serde_json::json!({"get_table_req": 3, "lock": 2, "total": 5})
        );
    }

    #[test]
    fn a_run_that_submits_no_job_says_so_in_one_line() {
        let s = BatchSummary {
            counts: Counts {
                partitions: 2,
                nothing_to_do: 2,
                ..Counts::default()
            },
            ..BatchSummary::default()
        };
        let y = YarnReport {
            no_job: Some("none of the 2 partitions has work to do".into()),
            ..YarnReport::default()
        };
        let (out, _) =
            printed(|o, _| batch_summary(o, &s, Some(&y), &Calls::default(), Format::Text));
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(
            lines[0],
            "yarn: no job submitted: none of the 2 partitions has work to do"
        );
        assert!(
            lines[1].starts_with("summary: 0 compacted, 2 nothing to do"),
            "{out}"
        );
        assert_eq!(lines[2], "metastore calls: 0", "{out}");
        assert_eq!(lines.len(), 3, "{out}");
        let (out, _) =
            printed(|o, _| batch_summary(o, &s, Some(&y), &Calls::default(), Format::Json));
        let v: serde_json::Value = serde_json::from_str(&out).unwrap();
        assert_eq!(
            v["yarn"]["no_job"],
            "none of the 2 partitions has work to do"
        );
        assert!(v["yarn"]["application"].is_null(), "{v}");
    }
}
