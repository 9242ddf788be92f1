//! `verify`: the verdict and what was checked; each mismatch also on stderr.

use std::io::Write;

use hive_orc_compactor::operations::verify::VerifyReport;

use super::format::{headline, json, size, Format};

pub fn verify(
    out: &mut dyn Write,
    err: &mut dyn Write,
    r: &VerifyReport,
    format: Format,
) -> anyhow::Result<()> {
    if format == Format::Json {
        return json(out, r);
    }
    headline(out, &r.outcome)?;
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
        writeln!(
            err,
            "mismatch: {} partition {}: {m}",
            r.outcome.table, r.outcome.partition
        )?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::render::testing::{object, printed};
    use hive_orc_compactor::operations::outcome::{Outcome, Status};
    use std::collections::BTreeMap;

    fn report(mismatches: Vec<String>) -> VerifyReport {
        let mut outcome = Outcome::new("d.t", "dt=1");
        outcome.status = if mismatches.is_empty() {
            Status::Verified
        } else {
            Status::VerificationFailed
        };
        VerifyReport {
            outcome,
            location: "hdfs://nn/t/dt=1".into(),
            files: 2,
            bytes: 2048,
            rows: 30,
            statistics: BTreeMap::new(),
            run_id: Some("r1".into()),
            journal_rebuilt: false,
            checksums_checked: 4,
            late_files: vec![],
            mismatches,
            notes: vec!["no checksums for carried files".into()],
        }
    }

    #[test]
    fn verified_text() {
        let (out, err) = printed(|o, e| verify(o, e, &report(vec![]), Format::Text));
        assert_eq!(
            out,
            "verified: d.t partition dt=1\n  location  hdfs://nn/t/dt=1\n  files     2 (2.0 KiB), \
             30 rows\n  run       r1 (4 checksums checked)\n  note      no checksums for \
             carried files\n"
        );
        assert!(err.is_empty());
    }

    #[test]
    fn a_mismatch_is_named_on_stdout_and_stderr() {
        let r = report(vec!["a.orc: 3 rows, the journal says 4".into()]);
        let (out, err) = printed(|o, e| verify(o, e, &r, Format::Text));
        assert!(out.starts_with("VERIFICATION FAILED: d.t partition dt=1\n"));
        assert!(out.contains("  mismatch  a.orc: 3 rows, the journal says 4\n"));
        assert_eq!(
            err,
            "mismatch: d.t partition dt=1: a.orc: 3 rows, the journal says 4\n"
        );
        let (out, err) = printed(|o, e| verify(o, e, &r, Format::Json));
        let v = object(&out);
        assert_eq!(v["mismatches"][0], "a.orc: 3 rows, the journal says 4");
        assert_eq!(v["checksums_checked"], 4);
        assert_eq!(v["status"], "verification-failed");
        assert_eq!(v["table"], "d.t");
        assert!(err.is_empty(), "with --json the object says it all");
    }
}
