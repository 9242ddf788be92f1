//! `iceberg check`, `migrate` and `revert`: a verdict line per table, then its blocks, type
//! conversions, costs and warnings.

use std::io::Write;

use hive_orc_compactor::eligibility::Refusal;
use hive_orc_compactor::operations::iceberg::{CheckReport, MigrateReport, RevertReport};
use hive_orc_compactor::operations::outcome::{Outcome, Status};

use super::{json, Format};

fn blocks(out: &mut dyn Write, blocks: &[Refusal]) -> std::io::Result<()> {
    for b in blocks {
        writeln!(out, "  block   [{}] {}", b.rule.as_str(), b.reason)?;
    }
    Ok(())
}

fn warnings(out: &mut dyn Write, o: &Outcome) -> std::io::Result<()> {
    for w in &o.warnings {
        writeln!(out, "  warning {w}")?;
    }
    Ok(())
}

/// `<table>: <status>[: <reason>]`, for the outcomes without a line of their own.
fn ended(out: &mut dyn Write, o: &Outcome) -> std::io::Result<()> {
    let reason = o.reason.as_deref().map(|e| format!(": {e}"));
    writeln!(
        out,
        "{}: {}{}",
        o.table,
        o.status.as_text(),
        reason.unwrap_or_default()
    )
}

pub fn iceberg_check(out: &mut dyn Write, r: &CheckReport, format: Format) -> anyhow::Result<()> {
    if format == Format::Json {
        return json(out, r);
    }
    for t in &r.tables {
        let c = &t.costs;
        let verdict = match (t.outcome.status, &t.outcome.reason) {
            (Status::Ready, _) => "ready to migrate in place".to_string(),
            (Status::Refused, _) => "blocked".to_string(),
            (_, reason) => format!("could not be checked: {}", reason.as_deref().unwrap_or("-")),
        };
        writeln!(out, "{}: {verdict}", t.outcome.table)?;
        blocks(out, &t.blocks)?;
        for n in &t.conversions {
            writeln!(
                out,
                "  type    {} {} -> {}: {}",
                n.column,
                n.hive_type,
                n.iceberg_type.as_deref().unwrap_or("-"),
                n.note
            )?;
        }
        writeln!(
            out,
            "  costs   {} partitions ({} null), {} files, {} bytes, {} rows; {} small files, {} \
             of them removable by compacting first",
            c.partitions,
            c.null_partitions,
            c.files,
            c.bytes,
            c.rows,
            c.small_files,
            c.excess_files
        )?;
        if c.empty_files > 0 || c.positional_name_files > 0 {
            writeln!(
                out,
                "  note    {} zero-length files left out; {} files with positional column names \
                 read by alias",
                c.empty_files, c.positional_name_files
            )?;
        }
        for p in &c.non_canonical_partitions {
            writeln!(out, "  note    non-canonical layout: {p}")?;
        }
    }
    Ok(())
}

pub fn iceberg_migrate(
    out: &mut dyn Write,
    r: &MigrateReport,
    format: Format,
) -> anyhow::Result<()> {
    if format == Format::Json {
        return json(out, r);
    }
    let table = &r.outcome.table;
    let files = r.costs.files - r.costs.empty_files;
    match r.outcome.status {
        Status::Migrated => writeln!(
            out,
            "{table} migrated to Iceberg table {}: {files} files, {} rows in {} manifests\n  \
             metadata {}",
            r.iceberg_table,
            r.costs.rows,
            r.manifests,
            r.metadata_location.as_deref().unwrap_or("-"),
        )?,
        Status::DryRun => writeln!(
            out,
            "dry run: {table} would become Iceberg table {} ({}), listing {files} files, {} rows \
             of {} partitions; nothing written",
            r.iceberg_table,
            if r.in_place {
                "in place; the Hive definition kept for revert"
            } else {
                "a snapshot table; the Hive table untouched"
            },
            r.costs.rows,
            r.costs.partitions
        )?,
        _ => ended(out, &r.outcome)?,
    }
    if let Some(b) = &r.backup_table {
        writeln!(
            out,
            "  the Hive table is kept as {b}; `iceberg revert --table {table}` restores it"
        )?;
    }
    blocks(out, &r.blocks)?;
    warnings(out, &r.outcome)?;
    Ok(())
}

pub fn iceberg_revert(out: &mut dyn Write, r: &RevertReport, format: Format) -> anyhow::Result<()> {
    if format == Format::Json {
        return json(out, r);
    }
    let backup = r.backup_table.as_deref().unwrap_or("-");
    match r.outcome.status {
        Status::Reverted => writeln!(
            out,
            "{} is the Hive table again (restored from {backup}); the Iceberg metadata is deleted",
            r.outcome.table
        )?,
        Status::DryRun => writeln!(
            out,
            "dry run: would drop Iceberg table {} (files kept), restore the Hive table from \
             {backup} and delete {}",
            r.outcome.table,
            r.metadata_location.as_deref().unwrap_or("-")
        )?,
        _ => ended(out, &r.outcome)?,
    }
    warnings(out, &r.outcome)?;
    Ok(())
}
