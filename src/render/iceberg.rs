//! `iceberg check`, `migrate` and `revert`: a verdict line per table, then its blocks, type
//! conversions, costs and warnings.

use std::io::Write;

use hive_orc_compactor::eligibility::Refusal;
use hive_orc_compactor::operations::iceberg::{CheckReport, MigrateReport, RevertReport};
use hive_orc_compactor::operations::outcome::{Outcome, Status};

use hive_orc_compactor::metastore::meter::Calls;

use super::format::{calls_line, json, with_calls, Format};

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

pub fn iceberg_check(
    out: &mut dyn Write,
    r: &CheckReport,
    calls: &Calls,
    format: Format,
) -> anyhow::Result<()> {
    if format == Format::Json {
        return json(out, &with_calls(r, calls)?);
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
    calls_line(out, calls)?;
    Ok(())
}

pub fn iceberg_migrate(
    out: &mut dyn Write,
    r: &MigrateReport,
    calls: &Calls,
    format: Format,
) -> anyhow::Result<()> {
    if format == Format::Json {
        return json(out, &with_calls(r, calls)?);
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
    calls_line(out, calls)?;
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::render::testing::{assert_keys, object, printed, OUTCOME_KEYS};
    use hive_orc_compactor::eligibility::Rule;
    use hive_orc_compactor::iceberg::schema::ColumnNote;
    use hive_orc_compactor::operations::iceberg::{Costs, Readiness};
    use hive_orc_compactor::operations::outcome::Stop;

    fn costs() -> Costs {
        Costs {
            partitions: 2,
            files: 5,
            bytes: 500,
            rows: 40,
            small_files: 5,
            excess_files: 3,
            null_partitions: 1,
            empty_files: 1,
            ..Costs::default()
        }
    }

    fn check_report() -> CheckReport {
        let mut ready = Outcome::new("d.ok", "");
        ready.status = Status::Ready;
        let mut blocked = Outcome::new("d.b", "");
        let block = Refusal::new(Rule::ColumnType, "column c (char(3)): padded");
        blocked.stop(Stop::Refused(block.clone()));
        CheckReport {
            tables: vec![
                Readiness {
                    outcome: ready,
                    blocks: vec![],
                    conversions: vec![ColumnNote {
                        column: "t".into(),
                        hive_type: "tinyint".into(),
                        iceberg_type: Some("int".into()),
                        note: "widened".into(),
                    }],
                    costs: costs(),
                },
                Readiness {
                    outcome: blocked,
                    blocks: vec![block],
                    conversions: vec![],
                    costs: Costs::default(),
                },
            ],
        }
    }

    #[test]
    fn check_text() {
        let (out, _) =
            printed(|o, _| iceberg_check(o, &check_report(), &Calls::default(), Format::Text));
        assert_eq!(
            out,
            "d.ok: ready to migrate in place\n  type    t tinyint -> int: widened\n  costs   2 \
             partitions (1 null), 5 files, 500 bytes, 40 rows; 5 small files, 3 of them \
             removable by compacting first\n  note    1 zero-length files left out; 0 files \
             with positional column names read by alias\nd.b: blocked\n  block   \
             [column_type] column c (char(3)): padded\n  costs   0 partitions (0 null), 0 \
             files, 0 bytes, 0 rows; 0 small files, 0 of them removable by compacting first\n\
             metastore calls: 0\n"
        );
    }

    #[test]
    fn check_json() {
        let r = check_report();
        assert_eq!(r.exit_code(), hive_orc_compactor::exit::ExitCode::Refused);
        let (out, _) = printed(|o, _| iceberg_check(o, &r, &Calls::default(), Format::Json));
        let v = object(&out);
        let (ok, blocked) = (&v["tables"][0], &v["tables"][1]);
        assert_keys(ok, OUTCOME_KEYS);
        assert_eq!(
            (ok["table"].as_str(), ok["status"].as_str()),
            (Some("d.ok"), Some("ready"))
        );
        assert_eq!(ok["costs"]["excess_files"], 3);
        assert_eq!(ok["conversions"][0]["iceberg_type"], "int");
        assert_eq!(blocked["status"], "refused");
        assert_eq!(blocked["rule"], "column_type");
        assert_eq!(blocked["reason"], "column c (char(3)): padded");
        assert_eq!(blocked["blocks"][0]["rule"], "column_type");
        assert_eq!(blocked["blocks"][0]["reason"], "column c (char(3)): padded");
        assert_eq!(blocked["warnings"], serde_json::json!([]));
    }

    fn migrate_report(status: Status) -> MigrateReport {
        let mut outcome = Outcome::new("d.t", "");
        outcome.status = status;
        MigrateReport {
            outcome,
            iceberg_table: "d.t".into(),
            in_place: true,
            dry_run: status == Status::DryRun,
            blocks: vec![],
            conversions: vec![],
            costs: costs(),
            metadata_location: (status == Status::Migrated)
                .then(|| "hdfs://nn/t/metadata/00000.metadata.json".into()),
            backup_table: (status == Status::Migrated).then(|| "d.t__hive_backup".into()),
            manifests: 1,
        }
    }

    #[test]
    fn migrate_text() {
        let (out, _) = printed(|o, _| {
            iceberg_migrate(
                o,
                &migrate_report(Status::Migrated),
                &Calls::default(),
                Format::Text,
            )
        });
        assert_eq!(
            out,
            "d.t migrated to Iceberg table d.t: 4 files, 40 rows in 1 manifests\n  metadata \
             hdfs://nn/t/metadata/00000.metadata.json\n  the Hive table is kept as \
             d.t__hive_backup; `iceberg revert --table d.t` restores it\nmetastore calls: 0\n"
        );
        let (out, _) = printed(|o, _| {
            iceberg_migrate(
                o,
                &migrate_report(Status::DryRun),
                &Calls::default(),
                Format::Text,
            )
        });
        assert_eq!(
            out,
            "dry run: d.t would become Iceberg table d.t (in place; the Hive definition kept for \
             revert), listing 4 files, 40 rows of 2 partitions; nothing written\nmetastore \
             calls: 0\n"
        );
        let mut busy = migrate_report(Status::Failed);
        busy.outcome.stop(Stop::Busy("locked by 7".into()));
        busy.outcome.warnings.push("w".into());
        let (out, _) = printed(|o, _| iceberg_migrate(o, &busy, &Calls::default(), Format::Text));
        assert_eq!(
            out,
            "d.t: busy: locked by 7\n  warning w\nmetastore calls: 0\n"
        );
    }

    #[test]
    fn migrate_json() {
        let mut r = migrate_report(Status::Failed);
        let block = Refusal::new(Rule::BackupExists, "d.t__hive_backup exists");
        r.blocks.push(block.clone());
        r.outcome.stop(Stop::Refused(block));
        let (out, _) = printed(|o, _| iceberg_migrate(o, &r, &Calls::default(), Format::Json));
        let v = object(&out);
        assert_keys(&v, OUTCOME_KEYS);
        assert_keys(
            &v,
            &[
                "iceberg_table",
                "in_place",
                "dry_run",
                "blocks",
                "conversions",
                "costs",
                "metadata_location",
                "backup_table",
                "manifests",
            ],
        );
        assert_eq!(v["status"], "refused");
        assert_eq!(v["rule"], "backup_exists");
        assert_eq!(v["blocks"][0]["reason"], "d.t__hive_backup exists");
        let (out, _) = printed(|o, _| {
            iceberg_migrate(
                o,
                &migrate_report(Status::DryRun),
                &Calls::default(),
                Format::Json,
            )
        });
        assert_eq!(object(&out)["status"], "dry-run");
    }

    fn revert_report(status: Status) -> RevertReport {
        let mut outcome = Outcome::new("d.t", "");
        outcome.status = status;
        RevertReport {
            outcome,
            dry_run: status == Status::DryRun,
            backup_table: Some("d.t__hive_backup".into()),
            metadata_location: Some("hdfs://nn/t/metadata/00000.metadata.json".into()),
        }
    }

    #[test]
    fn revert_text_and_json() {
        let (out, _) =
            printed(|o, _| iceberg_revert(o, &revert_report(Status::Reverted), Format::Text));
        assert_eq!(
            out,
            "d.t is the Hive table again (restored from d.t__hive_backup); the Iceberg metadata \
             is deleted\n"
        );
        let (out, _) =
            printed(|o, _| iceberg_revert(o, &revert_report(Status::DryRun), Format::Text));
        assert_eq!(
            out,
            "dry run: would drop Iceberg table d.t (files kept), restore the Hive table from \
             d.t__hive_backup and delete hdfs://nn/t/metadata/00000.metadata.json\n"
        );
        let mut refused = revert_report(Status::Failed);
        refused.outcome.stop(Stop::Refused(Refusal::new(
            Rule::NotRevertible,
            "d.t has Iceberg commits since the migration",
        )));
        let (out, _) = printed(|o, _| iceberg_revert(o, &refused, Format::Text));
        assert_eq!(
            out,
            "d.t: refused: d.t has Iceberg commits since the migration\n"
        );
        let (out, _) = printed(|o, _| iceberg_revert(o, &refused, Format::Json));
        let v = object(&out);
        assert_keys(&v, OUTCOME_KEYS);
        assert_eq!(v["status"], "refused");
        assert_eq!(v["rule"], "not_revertible");
        assert_eq!(v["backup_table"], "d.t__hive_backup");
        assert_eq!(v["dry_run"], false);
        assert_eq!(v["partition"], "");
    }
}
