//! `cleanup`: per partition, what each run's cleanup removed, kept or found; then the counts.

use std::io::Write;

use hive_orc_compactor::operations::cleanup::{CleanupReport, RunAction};

use hive_orc_compactor::metastore::meter::Calls;

use super::format::{calls_line, json, with_calls, Format};

pub fn cleanup(
    out: &mut dyn Write,
    r: &CleanupReport,
    calls: &Calls,
    format: Format,
) -> anyhow::Result<()> {
    if format == Format::Json {
        return json(out, &with_calls(r, calls)?);
    }
    let will = if r.dry_run { "would remove" } else { "removed" };
    for p in &r.partitions {
        writeln!(out, "{} partition {}", p.outcome.table, p.outcome.partition)?;
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
        if let Some(reason) = &p.outcome.reason {
            writeln!(out, "  error   {reason}")?;
        }
    }
    let b = &r.binaries;
    for f in &b.removed {
        writeln!(out, "cached binary: {will} {f}")?;
    }
    if let Some(e) = &b.error {
        writeln!(out, "cached binaries: error {e}")?;
    }
    writeln!(
        out,
        "cleanup{}: {} partitions checked, {} with something to clean, {} errors; cached \
         binaries kept: {} in {}",
        if r.dry_run { " (dry run)" } else { "" },
        r.partitions_checked,
        r.partitions.len(),
        r.errors,
        b.kept.len(),
        b.dir,
    )?;
    calls_line(out, calls)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::render::testing::{self, assert_keys, object, printed};
    use hive_orc_compactor::operations::cleanup::BinariesCleanup;

    fn report() -> CleanupReport {
        CleanupReport {
            dry_run: true,
            partitions: vec![],
            tables_checked: vec!["d.t".into()],
            partitions_checked: 4,
            files_removed: 0,
            errors: 0,
            binaries: BinariesCleanup {
                dir: "hdfs://nn/y/binaries".into(),
                removed: vec!["hdfs://nn/y/binaries/ab".into()],
                kept: vec!["hdfs://nn/y/binaries/cd".into()],
                ..BinariesCleanup::default()
            },
        }
    }

    #[test]
    fn cleanup_text_ends_with_the_counts() {
        let (out, _) = printed(|o, _| cleanup(o, &report(), &testing::calls(), Format::Text));
        assert_eq!(
            out,
            "cached binary: would remove hdfs://nn/y/binaries/ab\n\
             cleanup (dry run): 4 partitions checked, 0 with something to clean, 0 errors; \
             cached binaries kept: 1 in hdfs://nn/y/binaries\n\
             metastore calls: 5 (get_table_req 3, lock 2)\n"
        );
    }

    #[test]
    fn cleanup_json_keeps_its_names() {
        let (out, _) = printed(|o, _| cleanup(o, &report(), &testing::calls(), Format::Json));
        let v = object(&out);
        assert_keys(
            &v,
            &[
                "dry_run",
                "partitions",
                "partitions_checked",
                "files_removed",
                "errors",
                "binaries",
            ],
        );
        assert_eq!(v["partitions_checked"], 4);
        assert_eq!(v["metastore_calls"]["lock"], 2);
        assert_keys(
            &v["binaries"],
            &["dir", "removed", "kept", "trashed_to", "error"],
        );
    }
}
