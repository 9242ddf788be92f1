//! The shapes a report takes and the small pieces every renderer writes with: sizes, plurals,
//! a partition's headline, one JSON line, the progress bars' look.

use std::io::Write;

use bytesize::ByteSize;
use hive_orc_compactor::metastore::meter::Calls;
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

/// A report object with the run's metastore calls added as `metastore_calls`.
pub(super) fn with_calls<T: Serialize>(
    report: &T,
    calls: &Calls,
) -> anyhow::Result<serde_json::Value> {
    let mut value = serde_json::to_value(report)?;
    if let Some(object) = value.as_object_mut() {
        object.insert("metastore_calls".into(), serde_json::to_value(calls)?);
    }
    Ok(value)
}

/// The run's metastore calls as one line of a text summary.
pub(super) fn calls_line(out: &mut dyn Write, calls: &Calls) -> std::io::Result<()> {
    writeln!(out, "metastore calls: {}", calls.line())
}

/// The closing line of a text report whose partitions were each reported on their own (and
/// which has no summary line to carry it): the run's metastore calls.
pub fn metastore_calls(out: &mut dyn Write, calls: &Calls, format: Format) -> anyhow::Result<()> {
    if format == Format::Text {
        calls_line(out, calls)?;
    }
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
