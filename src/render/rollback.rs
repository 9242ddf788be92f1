//! `rollback`: the headline and what was swapped back; the reason on stderr.

use std::io::Write;

use hive_orc_compactor::operations::rollback::RollbackReport;

use super::format::{headline, json, Format};

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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::render::testing::printed;
    use hive_orc_compactor::operations::outcome::{Outcome, Status};

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
}
