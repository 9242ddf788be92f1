//! Reports as people and scripts read them: aligned text, or one JSON object per report. One
//! module per command; each renderer writes to any `io::Write` and is tested for both shapes.

use std::io::Write;

use bytesize::ByteSize;
use hive_orc_compactor::operations::outcome::Outcome;
use serde::Serialize;

mod analyze;
mod census_page;
mod cleanup;
mod compact;
mod iceberg;
mod inspect;
pub mod metrics_file;
mod rollback;
mod verify;

pub use analyze::{analyze, Surveying};
pub use census_page::census_page;
pub use cleanup::cleanup;
pub use compact::{batch_summary, yarn_plan, Batch};
pub use iceberg::{iceberg_check, iceberg_migrate, iceberg_revert};
pub use inspect::inspect;
pub use rollback::rollback;
pub use verify::verify;

/// How every command prints its report: text for people, JSON for scripts, or (analyze only)
/// CSV or the HTML census page; a command without such a shape prints text for it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    Text,
    Json,
    Csv,
    Html,
}

/// Progress bars' look, shared by every command that shows one.
fn style(template: &str) -> indicatif::ProgressStyle {
    indicatif::ProgressStyle::with_template(template)
        .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar())
        .progress_chars("=> ")
}

fn json<T: Serialize>(out: &mut dyn Write, value: &T) -> anyhow::Result<()> {
    serde_json::to_writer(&mut *out, value)?;
    writeln!(out)?;
    Ok(())
}

fn size(bytes: u64) -> String {
    ByteSize(bytes).display().iec().to_string()
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

#[cfg(test)]
pub(crate) mod testing {
    use std::io::Write;

    /// What a renderer wrote to stdout and stderr.
    pub(crate) fn printed(
        render: impl FnOnce(&mut dyn Write, &mut dyn Write) -> anyhow::Result<()>,
    ) -> (String, String) {
        let (mut out, mut err) = (Vec::new(), Vec::new());
        render(&mut out, &mut err).unwrap();
        (
            String::from_utf8(out).unwrap(),
            String::from_utf8(err).unwrap(),
        )
    }

    /// The keys every report's outcome flattens into its object.
    pub(crate) const OUTCOME_KEYS: &[&str] =
        &["table", "partition", "status", "reason", "rule", "warnings"];

    /// Fails naming the first of `keys` that `v` lacks.
    pub(crate) fn assert_keys(v: &serde_json::Value, keys: &[&str]) {
        for key in keys {
            assert!(v.get(key).is_some(), "{key} missing from {v}");
        }
    }

    /// The one JSON object a renderer printed.
    pub(crate) fn object(out: &str) -> serde_json::Value {
        assert_eq!(out.lines().count(), 1, "one object per line: {out}");
        serde_json::from_str(out).unwrap()
    }
}
