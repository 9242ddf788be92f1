//! `analyze --html`: the census as one self-contained page (no network, no script or font from
//! elsewhere), for a browser or a mail. Charts are hand-made inline SVG: a histogram and a bar
//! chart are a few dozen rectangles, smaller and clearer than a plotting crate's output.
//!
//! Every figure is the JSON's: each number the page shows sits in an element with its raw value
//! in `data-v`, and the elements of the tables and summary name the JSON field they show in
//! `data-col`, so a test reads the page back and compares it with `--json` of the same run.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use hive_orc_compactor::census::{SizeHistogram, BUCKETS, BUCKET_FLOORS};
use hive_orc_compactor::operations::analyze::{
    AnalyzeOptions, AnalyzeReport, PartitionAnalysis, Totals,
};

use super::size;

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

fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// A bucket's label: its floor ("<1 KiB" for the first, "4 GiB+" for the last).
fn bucket_label(i: usize) -> String {
    let short = |b: u64| size(b).replace(".0", "");
    match i {
        0 => format!("<{}", short(BUCKET_FLOORS[1])),
        i if i == BUCKETS - 1 => format!("{}+", short(BUCKET_FLOORS[i])),
        i => short(BUCKET_FLOORS[i]),
    }
}

/// One numeric cell: the value shown, and the raw number the JSON holds.
fn num(col: &str, raw: impl std::fmt::Display, shown: &str) -> String {
    format!(
        "<td data-col=\"{col}\" data-v=\"{raw}\">{}</td>",
        esc(shown)
    )
}

fn count(col: &str, n: impl Into<u64>) -> String {
    let n = n.into();
    num(col, n, &n.to_string())
}

fn bytes(col: &str, b: u64) -> String {
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
fn histogram(before: &SizeHistogram, after: &SizeHistogram, width: u32, title: &str) -> String {
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
    let mut svg = format!(
        "<svg class=\"histogram\" width=\"{width}\" height=\"{height}\" viewBox=\"0 0 {width} {height}\" \
         role=\"img\" aria-label=\"{}\"><text x=\"{left}\" y=\"14\">{}</text>",
        esc(title),
        esc(title)
    );
    for i in 0..BUCKETS {
        let x = left + slot * i as f64;
        let bar = (slot - 6.0) / 2.0;
        for (series, h, dx) in [("before", before, 3.0), ("after", after, 3.0 + bar)] {
            let n = h.counts()[i];
            let bh = scale(n);
            let y = top + plot - bh;
            let _ = write!(
                svg,
                "<rect class=\"{series}\" data-series=\"{series}\" data-bucket=\"{i}\" data-v=\"{n}\" \
                 x=\"{:.1}\" y=\"{y:.1}\" width=\"{bar:.1}\" height=\"{bh:.1}\"><title>{} {series}: {n} files</title></rect>",
                x + dx,
                esc(&bucket_label(i))
            );
            if n > 0 {
                let _ = write!(
                    svg,
                    "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\" font-size=\"9\">{n}</text>",
                    x + dx + bar / 2.0,
                    y - 2.0
                );
            }
        }
        let _ = write!(
            svg,
            "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{}</text>",
            x + slot / 2.0,
            top + plot + 14.0,
            esc(&bucket_label(i))
        );
    }
    let _ = write!(
        svg,
        "<rect class=\"before\" x=\"{left}\" y=\"{0}\" width=\"10\" height=\"10\"/><text x=\"{1}\" y=\"{2}\">now</text>\
         <rect class=\"after\" x=\"{3}\" y=\"{0}\" width=\"10\" height=\"10\"/><text x=\"{4}\" y=\"{2}\">after compaction</text></svg>",
        height - 12.0,
        left + 14.0,
        height - 3.0,
        left + 60.0,
        left + 74.0
    );
    svg
}

/// Per table, its files split into the ideal count (green) and the excess (orange).
fn excess_chart(tables: &[&Totals]) -> String {
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
    let mut svg = format!(
        "<svg class=\"excess\" width=\"{}\" height=\"{height}\" role=\"img\" aria-label=\"files per table\">\
         <text x=\"0\" y=\"12\">Files per table: ideal (green) and excess (orange)</text>",
        label_w + bar_w + 90.0
    );
    for (i, t) in top.iter().enumerate() {
        let y = 22.0 + row * i as f64;
        let ideal = t.files.saturating_sub(t.excess_files);
        let w_ideal = bar_w * ideal as f64 / max;
        let w_excess = bar_w * t.excess_files as f64 / max;
        let _ = write!(
            svg,
            "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">{}</text>\
             <rect class=\"after\" x=\"{label_w}\" y=\"{y:.1}\" width=\"{w_ideal:.1}\" height=\"13\"/>\
             <rect class=\"excess\" data-table=\"{}\" data-v=\"{}\" x=\"{:.1}\" y=\"{y:.1}\" width=\"{w_excess:.1}\" height=\"13\">\
             <title>{}: {} files, {} excess</title></rect>\
             <text x=\"{:.1}\" y=\"{:.1}\">{} excess</text>",
            label_w - 6.0,
            y + 11.0,
            esc(&t.scope),
            esc(&t.scope),
            t.excess_files,
            label_w + w_ideal,
            esc(&t.scope),
            t.files,
            t.excess_files,
            label_w + w_ideal + w_excess + 4.0,
            y + 11.0,
            t.excess_files
        );
    }
    svg.push_str("</svg>");
    svg
}

/// The columns every totals row shows, in order: (JSON field, header, cell).
fn totals_cells(t: &Totals, deep: bool) -> Vec<(&'static str, String)> {
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
        cells.push((
            "stripes now",
            num(
                "stripes_before",
                opt(t.stripes_before),
                &opt(t.stripes_before),
            ),
        ));
        cells.push((
            "stripes after",
            num("stripes_after", opt(t.stripes_after), &opt(t.stripes_after)),
        ));
        let kept = t.groups_not_re_encodable;
        cells.push((
            "groups not re-encodable",
            num("groups_not_re_encodable", opt(kept), &opt(kept)),
        ));
    }
    cells.push(("errors", count("errors", t.errors as u64)));
    cells
}

fn totals_table(out: &mut String, first: &str, rows: &[(&str, &Totals)], deep: bool) {
    let Some((_, sample)) = rows.first() else {
        return;
    };
    let _ = write!(
        out,
        "<div class=\"wide\"><table class=\"sortable totals\"><thead><tr><th class=\"t\">{first}</th>"
    );
    for (header, _) in totals_cells(sample, deep) {
        let _ = write!(out, "<th>{header}</th>");
    }
    out.push_str("</tr></thead><tbody>");
    for (name, t) in rows {
        let _ = write!(
            out,
            "<tr data-scope=\"{}\"><td class=\"t\">{}</td>",
            esc(name),
            esc(name)
        );
        for (_, cell) in totals_cells(t, deep) {
            out.push_str(&cell);
        }
        out.push_str("</tr>");
    }
    out.push_str("</tbody></table></div>");
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

fn partition_row(out: &mut String, p: &PartitionAnalysis, deep: bool) {
    let _ = write!(
        out,
        "<tr data-table=\"{}\" data-partition=\"{}\"><td class=\"t\">{}</td><td class=\"t\">{}</td>",
        esc(&p.table),
        esc(&p.partition),
        esc(&p.table),
        esc(&p.partition)
    );
    let runt = ratio(p.small_files, p.files);
    for cell in [
        count("files", p.files as u64),
        bytes("bytes", p.bytes),
        bytes("mean_size", p.mean_size),
        bytes("median_size", p.median_size),
        count("small_files", p.small_files as u64),
        num(
            "runt_ratio",
            format!("{runt:.4}"),
            &format!("{:.0}%", runt * 100.0),
        ),
        count("files_needed", p.files_needed as u64),
        count("excess_files", p.excess_files as u64),
        count("namenode_objects_removable", p.namenode_objects_removable),
    ] {
        out.push_str(&cell);
    }
    if deep {
        let per_file = |stripes: usize, files: usize| {
            let v = ratio(stripes, files);
            num("", format!("{v:.2}"), &format!("{v:.1}"))
        };
        match &p.plan {
            Some(plan) => {
                out.push_str(&count("files_after", plan.files_after as u64));
                out.push_str(&per_file(plan.stripes_before, p.files));
                out.push_str(&per_file(plan.stripes_after, plan.files_after));
            }
            None => out.push_str("<td></td><td></td><td></td>"),
        }
    }
    let eligibility = match (&p.eligible, p.rule, &p.reason) {
        (true, _, _) => "yes".to_string(),
        (false, Some(rule), _) => format!("no [{}]", rule.as_str()),
        (false, None, reason) => format!("error: {}", reason.as_deref().unwrap_or("")),
    };
    let _ = write!(
        out,
        "<td class=\"t\" data-col=\"eligible\" title=\"{}\">{}</td></tr>",
        esc(p.reason.as_deref().unwrap_or("")),
        esc(&eligibility)
    );
}

fn partition_header(out: &mut String, deep: bool) {
    out.push_str(
        "<thead><tr><th class=\"t\">table</th><th class=\"t\">partition</th><th>files</th><th>bytes</th>\
         <th>mean</th><th>median</th><th>small</th><th>runts</th><th>ideal</th><th>excess</th>\
         <th>removable objects</th>",
    );
    if deep {
        out.push_str("<th>files after</th><th>stripes/file now</th><th>stripes/file after</th>");
    }
    out.push_str("<th class=\"t\">eligible</th></tr></thead>");
}

/// The census page: summary, charts, tables, refusals, worst partitions, every partition.
pub fn census_page(r: &AnalyzeReport, options: &AnalyzeOptions) -> String {
    let deep = options.deep;
    let t = &r.total;
    let mut out = String::with_capacity(64 * 1024 + r.partitions.len().min(PARTITION_ROWS) * 400);
    let title = format!("Small-file census: {}", r.total.scope);
    let _ = write!(
        out,
        "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width,initial-scale=1\">\
         <title>{}</title><style>{STYLE}</style></head><body><h1>{}</h1>\
         <p class=\"meta\">hive-orc-compactor {} analyze{}, {} UTC. Target size {}, small files below {}. \
         After compaction: {}.</p>",
        esc(&title),
        esc(&title),
        env!("CARGO_PKG_VERSION"),
        if deep { " --deep" } else { "" },
        chrono::Utc::now().format("%Y-%m-%d %H:%M"),
        size(options.target_size),
        size(options.small_file_size),
        if deep {
            "as compact --dry-run plans each eligible partition"
        } else {
            "estimated as the data in ceil(bytes / target) files per eligible partition"
        }
    );

    out.push_str("<div class=\"cards\" id=\"total\">");
    let mean = t.bytes.checked_div(t.files as u64).unwrap_or(0);
    let n = |v: usize| v as u64;
    for (col, label, raw, in_bytes) in [
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
    ] {
        let shown = if in_bytes { size(raw) } else { raw.to_string() };
        let _ = write!(
            out,
            "<div class=\"card\"><b data-col=\"{col}\" data-v=\"{raw}\">{}</b><span>{label}</span></div>",
            esc(&shown)
        );
    }
    out.push_str("</div>");

    out.push_str("<h2>File sizes</h2><div class=\"charts\">");
    out.push_str(&histogram(
        &t.files_by_size_before,
        &t.files_by_size_after,
        640,
        &format!(
            "All tables: {} files now, {} after",
            t.files_by_size_before.files(),
            t.files_by_size_after.files()
        ),
    ));
    let tables: Vec<&Totals> = r.tables.iter().collect();
    if tables.len() > 1 {
        out.push_str(&excess_chart(&tables));
    }
    out.push_str("</div>");

    let dbs = databases(&r.tables);
    if dbs.len() > 1 {
        out.push_str("<h2>Databases</h2>");
        let rows: Vec<(&str, &Totals)> = dbs.iter().map(|(name, t)| (name.as_str(), t)).collect();
        totals_table(&mut out, "database", &rows, deep);
    }
    out.push_str("<h2>Tables</h2>");
    let rows: Vec<(&str, &Totals)> = r.tables.iter().map(|t| (t.scope.as_str(), t)).collect();
    totals_table(&mut out, "table", &rows, deep);
    if r.tables.len() > 1 {
        out.push_str("<h3>Per table</h3><div class=\"charts\">");
        let mut by_excess: Vec<&Totals> = r.tables.iter().filter(|t| t.files > 0).collect();
        by_excess.sort_by_key(|t| std::cmp::Reverse(t.excess_files));
        for t in by_excess.iter().take(TABLE_HISTOGRAMS) {
            out.push_str(&histogram(
                &t.files_by_size_before,
                &t.files_by_size_after,
                420,
                &t.scope,
            ));
        }
        out.push_str("</div>");
    }

    let refused: Vec<&PartitionAnalysis> = r.partitions.iter().filter(|p| !p.eligible).collect();
    out.push_str("<h2>Refused and unreadable</h2>");
    if refused.is_empty() {
        out.push_str("<p>None: the tool may compact every partition surveyed.</p>");
    } else {
        // One row per table and rule: a refused table refuses all its partitions alike.
        let mut by_rule: BTreeMap<(String, String), (usize, String)> = BTreeMap::new();
        for p in &refused {
            let rule = p
                .rule
                .map_or("error".to_string(), |r| r.as_str().to_string());
            let e = by_rule
                .entry((p.table.clone(), rule))
                .or_insert((0, p.reason.clone().unwrap_or_default()));
            e.0 += 1;
        }
        out.push_str(
            "<div class=\"wide\"><table class=\"sortable refused\"><thead><tr><th class=\"t\">table</th><th class=\"t\">rule</th>\
             <th>partitions</th><th class=\"t\">reason (the first)</th></tr></thead><tbody>",
        );
        for ((table, rule), (n, reason)) in &by_rule {
            let _ = write!(
                out,
                "<tr><td class=\"t\">{}</td><td class=\"t\" data-col=\"rule\">{}</td>{}<td class=\"t\">{}</td></tr>",
                esc(table),
                esc(rule),
                count("partitions", *n as u64),
                esc(reason)
            );
        }
        out.push_str("</tbody></table></div>");
    }

    out.push_str("<h2>Worst partitions</h2><p class=\"note\">Eligible partitions with excess files, by the share of their files that are small (runts), then by excess files.</p>");
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
    out.push_str("<div class=\"wide\"><table class=\"sortable worst\">");
    partition_header(&mut out, deep);
    out.push_str("<tbody>");
    for p in worst.iter().take(WORST) {
        partition_row(&mut out, p, deep);
    }
    out.push_str("</tbody></table></div>");

    let shown = r.partitions.len().min(PARTITION_ROWS);
    let _ = write!(
        out,
        "<h2>Partitions</h2><p class=\"note\">{shown} of {} partitions, most excess files first{}. \
         Click a column to sort.</p><div class=\"wide\"><table class=\"sortable partitions\">",
        r.partitions.len(),
        if shown < r.partitions.len() {
            "; --json and --csv list them all"
        } else {
            ""
        }
    );
    partition_header(&mut out, deep);
    out.push_str("<tbody>");
    for p in r.partitions.iter().take(PARTITION_ROWS) {
        partition_row(&mut out, p, deep);
    }
    out.push_str("</tbody></table></div><script>");
    out.push_str(SCRIPT);
    out.push_str("</script></body></html>\n");
    out
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
    fn labels_and_escapes() {
        assert_eq!(bucket_label(0), "<1 KiB");
        assert_eq!(bucket_label(2), "4 KiB");
        assert_eq!(bucket_label(BUCKETS - 1), "4 GiB+");
        assert_eq!(
            esc("<a href='x'>&\"</a>"),
            "&lt;a href=&#39;x&#39;&gt;&amp;&quot;&lt;/a&gt;"
        );
    }
}
