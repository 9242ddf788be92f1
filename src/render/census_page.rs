//! `analyze --html`: the census as one self-contained page (no network, no script or font from
//! elsewhere), for a browser or a mail. Charts are hand-made inline SVG: a histogram and a bar
//! chart are a few dozen rectangles, smaller and clearer than a plotting crate's output. The
//! markup is maud's: table names, partition specs and reasons come from the metastore and from
//! errors, and maud escapes every value it puts in, so none of them can break the page.
//!
//! Every figure is the JSON's: each number the page shows sits in an element with its raw value
//! in `data-v`, and the elements of the tables and summary name the JSON field they show in
//! `data-col`, so a test reads the page back and compares it with `--json` of the same run.

use std::collections::BTreeMap;

use hive_orc_compactor::census::{SizeHistogram, BUCKETS, BUCKET_FLOORS};
use hive_orc_compactor::operations::analyze::{
    AnalyzeOptions, AnalyzeReport, PartitionAnalysis, Totals, TrendPoint,
};
use maud::{html, Markup, PreEscaped, DOCTYPE};

use super::format::size;

/// Partitions the sortable table lists at most (those with the most excess files): a page of
/// 100,000 rows would not open; the JSON and CSV hold them all.
const PARTITION_ROWS: usize = 5_000;
/// Rows of the worst-partitions table, and bars of the per-table chart.
const WORST: usize = 20;
const TABLE_BARS: usize = 25;
/// Tables that get a histogram of their own.
const TABLE_HISTOGRAMS: usize = 40;

const STYLE: &str = "
body{font:14px/1.4 system-ui,-apple-system,'Segoe UI',sans-serif;margin:24px;color:#1d2733;background:#fff}
h1{font-size:22px;margin:0 0 4px}h2{font-size:17px;margin:28px 0 8px;border-bottom:1px solid #d8dee6;padding-bottom:4px}
h3{font-size:14px;margin:16px 0 4px}.meta{color:#5a6878;margin:0 0 16px}
.cards{display:flex;flex-wrap:wrap;gap:10px}.card{border:1px solid #d8dee6;border-radius:6px;padding:8px 12px;min-width:130px}
.card b{display:block;font-size:18px}.card span{color:#5a6878;font-size:12px}
.wide{overflow-x:auto}table{border-collapse:collapse;margin:6px 0;font-size:13px}th,td{padding:3px 8px;border-bottom:1px solid #eef1f4;text-align:right;white-space:nowrap}
th{background:#f4f6f8;cursor:pointer;user-select:none}th.t,td.t{text-align:left}
th[data-dir=asc]::after{content:' \\25B2'}th[data-dir=desc]::after{content:' \\25BC'}
.charts{display:flex;flex-wrap:wrap;gap:16px}.note{color:#5a6878;font-size:12px}
svg text{font:11px system-ui,sans-serif;fill:#1d2733}.before{fill:#7d8fa3}.after{fill:#2e9e6a}.excess{fill:#e07b39}
";

/// Sorts a table by the clicked column (by `data-v` where cells have one), and marks the page
/// ready: the test takes a page without `data-ready` for one whose script failed.
const SCRIPT: &str = "
document.querySelectorAll('table.sortable').forEach(function(table){
  table.querySelectorAll('th').forEach(function(th, i){
    th.addEventListener('click', function(){
      var body = table.tBodies[0], rows = Array.prototype.slice.call(body.rows);
      var asc = th.dataset.dir !== 'asc';
      table.querySelectorAll('th').forEach(function(h){ delete h.dataset.dir; });
      th.dataset.dir = asc ? 'asc' : 'desc';
      rows.sort(function(a, b){
        var x = a.cells[i], y = b.cells[i], c;
        if (x.dataset.v !== undefined && y.dataset.v !== undefined) c = Number(x.dataset.v) - Number(y.dataset.v);
        else c = x.textContent.localeCompare(y.textContent);
        return asc ? c : -c;
      });
      rows.forEach(function(r){ body.appendChild(r); });
    });
  });
});
document.body.dataset.ready = '1';
";

/// A bucket's label: its floor ("<1 KiB" for the first, "4 GiB+" for the last).
fn bucket_label(i: usize) -> String {
    let short = |b: u64| size(b).replace(".0", "");
    match i {
        0 => format!("<{}", short(BUCKET_FLOORS[1])),
        i if i == BUCKETS - 1 => format!("{}+", short(BUCKET_FLOORS[i])),
        i => short(BUCKET_FLOORS[i]),
    }
}

/// A coordinate or length of a chart, to a tenth of a pixel.
fn px(v: f64) -> String {
    format!("{v:.1}")
}

/// One numeric cell: the value shown, and the raw number the JSON holds.
fn num(col: &str, raw: impl std::fmt::Display, shown: &str) -> Markup {
    html! { td data-col=(col) data-v=(raw) { (shown) } }
}

fn count(col: &str, n: impl Into<u64>) -> Markup {
    let n = n.into();
    num(col, n, &n.to_string())
}

fn bytes(col: &str, b: u64) -> Markup {
    num(col, b, &size(b))
}

fn ratio(part: usize, whole: usize) -> f64 {
    if whole == 0 {
        0.0
    } else {
        part as f64 / whole as f64
    }
}

/// File counts before (grey) and after (green) per size bucket, on a log scale of counts so
/// that 20,000 runts and three large files both show.
fn histogram(before: &SizeHistogram, after: &SizeHistogram, width: u32, title: &str) -> Markup {
    let height = 200.0;
    let (left, bottom, top) = (8.0, 34.0, 34.0);
    let plot = height - bottom - top;
    let slot = (f64::from(width) - left * 2.0) / BUCKETS as f64;
    let max = before
        .counts()
        .iter()
        .chain(after.counts())
        .copied()
        .max()
        .unwrap_or(0);
    let scale = |n: u64| {
        if max == 0 || n == 0 {
            0.0
        } else {
            plot * (1.0 + n as f64).log10() / (1.0 + max as f64).log10()
        }
    };
    let bar = (slot - 6.0) / 2.0;
    html! {
        svg.histogram width=(width) height=(height) viewBox={ "0 0 " (width) " " (height) }
            role="img" aria-label=(title) {
            text x=(left) y="14" { (title) }
            @for i in 0..BUCKETS {
                @let x = left + slot * i as f64;
                @for (series, h, dx) in [("before", before, 3.0), ("after", after, 3.0 + bar)] {
                    @let n = h.counts()[i];
                    @let bh = scale(n);
                    @let y = top + plot - bh;
                    rect class=(series) data-series=(series) data-bucket=(i) data-v=(n)
                        x=(px(x + dx)) y=(px(y)) width=(px(bar)) height=(px(bh)) {
                        title { (bucket_label(i)) " " (series) ": " (n) " files" }
                    }
                    @if n > 0 {
                        text x=(px(x + dx + bar / 2.0)) y=(px(y - 2.0)) text-anchor="middle"
                            font-size="9" { (n) }
                    }
                }
                text x=(px(x + slot / 2.0)) y=(px(top + plot + 14.0)) text-anchor="middle" {
                    (bucket_label(i))
                }
            }
            rect.before x=(left) y=(height - 12.0) width="10" height="10" {}
            text x=(left + 14.0) y=(height - 3.0) { "now" }
            rect.after x=(left + 60.0) y=(height - 12.0) width="10" height="10" {}
            text x=(left + 74.0) y=(height - 3.0) { "after compaction" }
        }
    }
}

/// Per table, its files split into the ideal count (green) and the excess (orange).
fn excess_chart(tables: &[&Totals]) -> Markup {
    let mut top: Vec<&&Totals> = tables.iter().filter(|t| t.files > 0).collect();
    top.sort_by(|a, b| {
        b.excess_files
            .cmp(&a.excess_files)
            .then(a.scope.cmp(&b.scope))
    });
    top.truncate(TABLE_BARS);
    let (label_w, bar_w, row) = (220.0, 420.0, 18.0);
    let height = 28.0 + row * top.len() as f64;
    let max = top.iter().map(|t| t.files).max().unwrap_or(0).max(1) as f64;
    html! {
        svg.excess width=(label_w + bar_w + 90.0) height=(height) role="img"
            aria-label="files per table" {
            text x="0" y="12" { "Files per table: ideal (green) and excess (orange)" }
            @for (i, t) in top.iter().enumerate() {
                @let y = 22.0 + row * i as f64;
                @let w_ideal = bar_w * t.files.saturating_sub(t.excess_files) as f64 / max;
                @let w_excess = bar_w * t.excess_files as f64 / max;
                text x=(px(label_w - 6.0)) y=(px(y + 11.0)) text-anchor="end" { (t.scope) }
                rect.after x=(label_w) y=(px(y)) width=(px(w_ideal)) height="13" {}
                rect.excess data-table=(t.scope) data-v=(t.excess_files) x=(px(label_w + w_ideal))
                    y=(px(y)) width=(px(w_excess)) height="13" {
                    title { (t.scope) ": " (t.files) " files, " (t.excess_files) " excess" }
                }
                text x=(px(label_w + w_ideal + w_excess + 4.0)) y=(px(y + 11.0)) {
                    (t.excess_files) " excess"
                }
            }
        }
    }
}

/// One figure of a table over its runs: a line through a point per run, each point with its
/// raw value in `data-v` and the run in its tooltip.
fn trend_chart(
    title: &str,
    points: &[(&TrendPoint, u64)],
    shown: impl Fn(u64) -> String,
) -> Markup {
    let (width, height) = (420.0, 150.0);
    let (left, right, top, bottom) = (54.0, 12.0, 24.0, 22.0);
    let plot_w = width - left - right;
    let plot_h = height - top - bottom;
    let max = points.iter().map(|(_, v)| *v).max().unwrap_or(0).max(1) as f64;
    let x = |i: usize| match points.len() {
        1 => left + plot_w / 2.0,
        n => left + plot_w * i as f64 / (n - 1) as f64,
    };
    let y = |v: u64| top + plot_h * (1.0 - v as f64 / max);
    let line: Vec<String> = points
        .iter()
        .enumerate()
        .map(|(i, (_, v))| format!("{},{}", px(x(i)), px(y(*v))))
        .collect();
    // `2026-12-06 01:15` (UTC, as the runs record their start).
    let day = |p: &TrendPoint| p.at.get(..16).unwrap_or(&p.at).replacen('T', " ", 1);
    html! {
        svg.trend width=(width) height=(height) role="img" aria-label=(title) {
            text x="0" y="14" { (title) }
            text x=(px(left - 4.0)) y=(px(top + 4.0)) text-anchor="end" font-size="9" {
                (shown(max as u64))
            }
            text x=(px(left - 4.0)) y=(px(top + plot_h)) text-anchor="end" font-size="9" { "0" }
            line x1=(left) y1=(px(top + plot_h)) x2=(px(left + plot_w)) y2=(px(top + plot_h))
                stroke="#d8dee6" {}
            polyline points=(line.join(" ")) fill="none" stroke="#2e6fb0" stroke-width="2" {}
            @for (i, (p, v)) in points.iter().enumerate() {
                circle.point data-run=(p.run) data-v=(v) cx=(px(x(i))) cy=(px(y(*v))) r="3"
                    fill="#2e6fb0" {
                    title { (p.at) ": " (shown(*v)) }
                }
            }
            @if let (Some((first, _)), Some((last, _))) = (points.first(), points.last()) {
                text x=(left) y=(px(height - 6.0)) font-size="9" { (day(first)) }
                text x=(px(left + plot_w)) y=(px(height - 6.0)) text-anchor="end" font-size="9" {
                    (day(last))
                }
            }
        }
    }
}

/// Files and their mean size per table over the runs its history holds: the daily metric.
fn trends(r: &AnalyzeReport) -> Markup {
    if r.trends.is_empty() {
        return html! {};
    }
    html! {
        h2 { "Over time" }
        p.note {
            "Each point is a compact run, as its survey found the table (from the table's \
             history; the newest 31 runs)."
        }
        @for t in r.trends.iter().take(TABLE_HISTOGRAMS) {
            h3 { (t.table) }
            div.charts data-table=(t.table) {
                (trend_chart(
                    "data files",
                    &t.points.iter().map(|p| (p, p.files as u64)).collect::<Vec<_>>(),
                    |v| v.to_string(),
                ))
                (trend_chart(
                    "mean file size",
                    &t.points.iter().map(|p| (p, p.mean_file_size)).collect::<Vec<_>>(),
                    size,
                ))
            }
        }
    }
}

/// The columns every totals row shows, in order: (header, cell).
fn totals_cells(t: &Totals, deep: bool) -> Vec<(&'static str, Markup)> {
    let mean = t.bytes.checked_div(t.files as u64).unwrap_or(0);
    let mut cells = vec![
        ("partitions", count("partitions", t.partitions as u64)),
        ("eligible", count("eligible", t.eligible as u64)),
        ("files", count("files", t.files as u64)),
        ("bytes", bytes("bytes", t.bytes)),
        ("mean size", num("mean_size", mean, &size(mean))),
        ("small", count("small_files", t.small_files as u64)),
        ("ideal", count("files_needed", t.files_needed as u64)),
        ("excess", count("excess_files", t.excess_files as u64)),
        (
            "removable",
            count("removable_files", t.removable_files as u64),
        ),
        (
            "NameNode objects",
            count("namenode_objects", t.namenode_objects),
        ),
        (
            "removable objects",
            count("namenode_objects_removable", t.namenode_objects_removable),
        ),
    ];
    if deep {
        let opt = |v: Option<usize>| v.map_or(String::new(), |v| v.to_string());
        for (header, col, v) in [
            ("stripes now", "stripes_before", t.stripes_before),
            ("stripes after", "stripes_after", t.stripes_after),
            (
                "groups not re-encodable",
                "groups_not_re_encodable",
                t.groups_not_re_encodable,
            ),
        ] {
            cells.push((header, num(col, opt(v), &opt(v))));
        }
    }
    cells.push(("errors", count("errors", t.errors as u64)));
    cells
}

fn totals_table(first: &str, rows: &[(&str, &Totals)], deep: bool) -> Markup {
    let Some((_, sample)) = rows.first() else {
        return html! {};
    };
    html! {
        div.wide { table.sortable.totals {
            thead { tr {
                th.t { (first) }
                @for (header, _) in totals_cells(sample, deep) { th { (header) } }
            } }
            tbody {
                @for (name, t) in rows {
                    tr data-scope=(name) {
                        td.t { (name) }
                        @for (_, cell) in totals_cells(t, deep) { (cell) }
                    }
                }
            }
        } }
    }
}

/// Sums of the tables of each database.
fn databases(tables: &[Totals]) -> BTreeMap<String, Totals> {
    let mut dbs: BTreeMap<String, Totals> = BTreeMap::new();
    for t in tables {
        let db = t.scope.split_once('.').map_or("", |(db, _)| db).to_string();
        let d = dbs.entry(db.clone()).or_insert_with(|| Totals {
            scope: db,
            ..Totals::default()
        });
        d.merge(t);
    }
    dbs
}

fn partition_row(p: &PartitionAnalysis, deep: bool) -> Markup {
    let runt = ratio(p.small_files, p.files);
    let per_file = |stripes: usize, files: usize| {
        let v = ratio(stripes, files);
        num("", format!("{v:.2}"), &format!("{v:.1}"))
    };
    let eligibility = match (&p.eligible, p.rule, &p.reason) {
        (true, _, _) => "yes".to_string(),
        (false, Some(rule), _) => format!("no [{}]", rule.as_str()),
        (false, None, reason) => format!("error: {}", reason.as_deref().unwrap_or("")),
    };
    html! {
        tr data-table=(p.table) data-partition=(p.partition) {
            td.t { (p.table) }
            td.t { (p.partition) }
            (count("files", p.files as u64))
            (bytes("bytes", p.bytes))
            (bytes("mean_size", p.mean_size))
            (bytes("median_size", p.median_size))
            (count("small_files", p.small_files as u64))
            (num("runt_ratio", format!("{runt:.4}"), &format!("{:.0}%", runt * 100.0)))
            (count("files_needed", p.files_needed as u64))
            (count("excess_files", p.excess_files as u64))
            (count("namenode_objects_removable", p.namenode_objects_removable))
            @if deep {
                @if let Some(plan) = &p.plan {
                    (count("files_after", plan.files_after as u64))
                    (per_file(plan.stripes_before, p.files))
                    (per_file(plan.stripes_after, plan.files_after))
                } @else {
                    td {} td {} td {}
                }
            }
            td.t data-col="eligible" title=(p.reason.as_deref().unwrap_or("")) { (eligibility) }
        }
    }
}

/// A table of partitions, one row each.
fn partition_table(class: &str, partitions: &[&PartitionAnalysis], deep: bool) -> Markup {
    html! {
        div.wide { table class={ "sortable " (class) } {
            thead { tr {
                th.t { "table" } th.t { "partition" } th { "files" } th { "bytes" }
                th { "mean" } th { "median" } th { "small" } th { "runts" } th { "ideal" }
                th { "excess" } th { "removable objects" }
                @if deep {
                    th { "files after" } th { "stripes/file now" } th { "stripes/file after" }
                }
                th.t { "eligible" }
            } }
            tbody { @for p in partitions { (partition_row(p, deep)) } }
        } }
    }
}

/// The title, what ran when, and the summary cards of the whole census.
fn summary(r: &AnalyzeReport, options: &AnalyzeOptions, title: &str) -> Markup {
    let t = &r.total;
    let mean = t.bytes.checked_div(t.files as u64).unwrap_or(0);
    let n = |v: usize| v as u64;
    let cards = [
        ("partitions", "partitions", n(t.partitions), false),
        ("eligible", "eligible", n(t.eligible), false),
        ("files", "data files", n(t.files), false),
        ("bytes", "bytes", t.bytes, true),
        ("mean_size", "mean file size", mean, true),
        ("small_files", "small files", n(t.small_files), false),
        ("files_needed", "ideal file count", n(t.files_needed), false),
        ("excess_files", "excess files", n(t.excess_files), false),
        (
            "removable_files",
            "files compaction removes",
            n(t.removable_files),
            false,
        ),
        (
            "namenode_objects_removable",
            "NameNode objects it removes",
            t.namenode_objects_removable,
            false,
        ),
        ("health", "health (0-100)", u64::from(t.health), false),
        (
            "backlog.partitions",
            "partitions in the backlog",
            n(t.backlog.partitions),
            false,
        ),
        ("suspended", "suspended partitions", n(t.suspended), false),
    ];
    html! {
        h1 { (title) }
        p.meta {
            "hive-orc-compactor " (env!("CARGO_PKG_VERSION")) " analyze"
            @if options.deep { " --deep" }
            ", " (chrono::Utc::now().format("%Y-%m-%d %H:%M")) " UTC. Target size "
            (size(options.target_size)) ", small files below " (size(options.small_file_size))
            ". After compaction: "
            @if options.deep {
                "as compact --dry-run plans each eligible partition"
            } @else {
                "estimated as the data in ceil(bytes / target) files per eligible partition"
            }
            "."
        }
        div.cards #total {
            @for (col, label, raw, in_bytes) in cards {
                div.card {
                    b data-col=(col) data-v=(raw) {
                        @if in_bytes { (size(raw)) } @else { (raw) }
                    }
                    span { (label) }
                }
            }
        }
    }
}

/// The size histograms and the excess per table, with the tables of databases and tables.
fn charts_and_tables(r: &AnalyzeReport, deep: bool) -> Markup {
    let t = &r.total;
    let tables: Vec<&Totals> = r.tables.iter().collect();
    let dbs = databases(&r.tables);
    let db_rows: Vec<(&str, &Totals)> = dbs.iter().map(|(name, t)| (name.as_str(), t)).collect();
    let table_rows: Vec<(&str, &Totals)> = r.tables.iter().map(|t| (t.scope.as_str(), t)).collect();
    let mut by_excess: Vec<&Totals> = r.tables.iter().filter(|t| t.files > 0).collect();
    by_excess.sort_by_key(|t| std::cmp::Reverse(t.excess_files));
    let all = format!(
        "All tables: {} files now, {} after",
        t.files_by_size_before.files(),
        t.files_by_size_after.files()
    );
    html! {
        h2 { "File sizes" }
        div.charts {
            (histogram(&t.files_by_size_before, &t.files_by_size_after, 640, &all))
            @if tables.len() > 1 { (excess_chart(&tables)) }
        }
        @if dbs.len() > 1 {
            h2 { "Databases" }
            (totals_table("database", &db_rows, deep))
        }
        h2 { "Tables" }
        (totals_table("table", &table_rows, deep))
        @if r.tables.len() > 1 {
            h3 { "Per table" }
            div.charts {
                @for t in by_excess.iter().take(TABLE_HISTOGRAMS) {
                    (histogram(&t.files_by_size_before, &t.files_by_size_after, 420, &t.scope))
                }
            }
        }
    }
}

/// Refused and unreadable partitions, one row per table and rule: a refused table refuses all
/// its partitions alike.
fn refusals(r: &AnalyzeReport) -> Markup {
    let mut by_rule: BTreeMap<(String, String), (usize, String)> = BTreeMap::new();
    for p in r.partitions.iter().filter(|p| !p.eligible) {
        let rule = p
            .rule
            .map_or("error".to_string(), |r| r.as_str().to_string());
        let e = by_rule
            .entry((p.table.clone(), rule))
            .or_insert((0, p.reason.clone().unwrap_or_default()));
        e.0 += 1;
    }
    html! {
        h2 { "Refused and unreadable" }
        @if by_rule.is_empty() {
            p { "None: the tool may compact every partition surveyed." }
        } @else {
            div.wide { table.sortable.refused {
                thead { tr {
                    th.t { "table" } th.t { "rule" } th { "partitions" }
                    th.t { "reason (the first)" }
                } }
                tbody {
                    @for ((table, rule), (n, reason)) in &by_rule {
                        tr {
                            td.t { (table) }
                            td.t data-col="rule" { (rule) }
                            (count("partitions", *n as u64))
                            td.t { (reason) }
                        }
                    }
                }
            } }
        }
    }
}

/// The worst partitions, then every partition up to [`PARTITION_ROWS`].
fn partitions(r: &AnalyzeReport, deep: bool) -> Markup {
    let mut worst: Vec<&PartitionAnalysis> = r
        .partitions
        .iter()
        .filter(|p| p.eligible && p.excess_files > 0)
        .collect();
    worst.sort_by(|a, b| {
        ratio(b.small_files, b.files)
            .total_cmp(&ratio(a.small_files, a.files))
            .then(b.excess_files.cmp(&a.excess_files))
    });
    worst.truncate(WORST);
    let listed: Vec<&PartitionAnalysis> = r.partitions.iter().take(PARTITION_ROWS).collect();
    html! {
        h2 { "Worst partitions" }
        p.note {
            "Eligible partitions with excess files, by the share of their files that are small \
             (runts), then by excess files."
        }
        (partition_table("worst", &worst, deep))
        h2 { "Partitions" }
        p.note {
            (listed.len()) " of " (r.partitions.len()) " partitions, most excess files first"
            @if listed.len() < r.partitions.len() { "; --json and --csv list them all" }
            ". Click a column to sort."
        }
        (partition_table("partitions", &listed, deep))
    }
}

/// The census page: summary, charts, tables, refusals, worst partitions, every partition.
pub fn census_page(r: &AnalyzeReport, options: &AnalyzeOptions) -> String {
    let title = format!("Small-file census: {}", r.total.scope);
    let page = html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width,initial-scale=1";
                title { (title) }
                style { (PreEscaped(STYLE)) }
            }
            body {
                (summary(r, options, &title))
                (trends(r))
                (charts_and_tables(r, options.deep))
                (refusals(r))
                (partitions(r, options.deep))
                script { (PreEscaped(SCRIPT)) }
            }
        }
    };
    page.into_string() + "\n"
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::render::analyze::tests::{options, report};

    #[test]
    fn the_page_is_whole_and_shows_the_json_figures() {
        let page = census_page(&report(), &options());
        assert!(page.starts_with("<!DOCTYPE html>") && page.ends_with("</html>\n"));
        assert!(
            !page.contains("http://") && !page.contains("https://"),
            "no network"
        );
        assert!(page.contains("<svg class=\"histogram\""));
        assert!(page.contains("<b data-col=\"removable_files\" data-v=\"9\">9</b>"));
        assert!(page.contains("data-series=\"before\" data-bucket=\"1\" data-v=\"20\""));
        assert!(page.contains("<tr data-scope=\"d.t\">"));
        assert!(page.contains("<td class=\"t\" data-col=\"rule\">not_orc</td>"));
        // Both partitions, and the eligible one among the worst.
        assert_eq!(
            page.matches("<tr data-table=\"d.t\" data-partition=\"dt=1\">")
                .count(),
            2
        );
        assert_eq!(page.matches("data-partition=\"dt=2\"").count(), 1);
    }

    #[test]
    fn labels() {
        assert_eq!(bucket_label(0), "<1 KiB");
        assert_eq!(bucket_label(2), "4 KiB");
        assert_eq!(bucket_label(BUCKETS - 1), "4 GiB+");
    }

    /// Names come from the metastore and reasons from errors: markup in them stays text.
    #[test]
    fn names_and_reasons_are_escaped() {
        let mut r = report();
        let hostile = "<script>alert('x')</script> & \"q\"";
        r.total.scope = hostile.into();
        r.tables[0].scope = hostile.into();
        for p in &mut r.partitions {
            p.table = hostile.into();
            p.reason = Some(hostile.into());
        }
        let page = census_page(&r, &options());
        assert!(!page.contains("<script>alert"), "{page}");
        assert_eq!(page.matches("<script>").count(), 1);
        assert!(page.contains("&lt;script&gt;alert('x')&lt;/script&gt; &amp; &quot;q&quot;"));
    }
}
