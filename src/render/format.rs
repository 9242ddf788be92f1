//! The shapes a report takes and the small pieces every renderer writes with: sizes, plurals,
//! a partition's headline, one JSON line, the progress bars' look.

use std::io::Write;

use bytesize::ByteSize;
use hive_orc_compactor::operations::outcome::Outcome;
use serde::Serialize;

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
pub(super) fn style(template: &str) -> indicatif::ProgressStyle {
    indicatif::ProgressStyle::with_template(template)
        .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar())
        .progress_chars("=> ")
}

pub(super) fn json<T: Serialize>(out: &mut dyn Write, value: &T) -> anyhow::Result<()> {
    serde_json::to_writer(&mut *out, value)?;
    writeln!(out)?;
    Ok(())
}

pub(super) fn size(bytes: u64) -> String {
    ByteSize(bytes).display().iec().to_string()
}

pub(super) fn plural(n: usize, one: &str) -> String {
    if n == 1 {
        format!("1 {one}")
    } else {
        format!("{n} {one}s")
    }
}

/// `<status>: <table> partition <partition>`, the first line of a partition's report.
pub(super) fn headline(out: &mut dyn Write, o: &Outcome) -> std::io::Result<()> {
    writeln!(
        out,
        "{}: {} partition {}",
        o.status.as_text(),
        o.table,
        o.partition
    )
}
