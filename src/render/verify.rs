//! `verify`: the verdict and what was checked; each mismatch also on stderr.

use std::io::Write;

use hive_orc_compactor::operations::verify::VerifyReport;

use super::{json, size, Format};

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
