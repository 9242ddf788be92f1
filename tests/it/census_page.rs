//! `analyze --html`: the census page opened in headless Chromium shows exactly the figures of
//! `--json` of the same run; a page that cannot be written is a one-line error.

#![cfg(feature = "cluster-tests")]

use std::collections::BTreeMap;
use std::process::Command;

use crate::common::*;
use crate::fleet::split;
use serde_json::Value;
/// `s` with the entities an HTML serializer writes in attribute values and text undone.
fn unescape(s: &str) -> String {
    s.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&#39;", "'")
        .replace("&amp;", "&")
}

/// The element that starts with `start` in `dom`, up to the end of its row.
fn row_of<'a>(dom: &'a str, start: &str) -> &'a str {
    let at = dom
        .find(start)
        .unwrap_or_else(|| panic!("{start} not in the page"));
    let rest = &dom[at..];
    &rest[..rest.find("</tr>").unwrap_or(rest.len())]
}

/// The raw value of the first `data-col="col"` cell in `segment`.
fn cell(segment: &str, col: &str) -> Option<u64> {
    let key = format!("data-col=\"{col}\" data-v=\"");
    let at = segment.find(&key)? + key.len();
    let rest = &segment[at..];
    rest[..rest.find('"')?].parse().ok()
}

#[test]
fn analyze_html_report_opens_in_chromium_with_the_json_figures() {
    let f = fixtures();
    let dir = tempfile::tempdir().unwrap();
    let page = dir.path().join("census.html");
    let page_arg = page.to_str().unwrap();
    // One run gives both the JSON and the page.
    let o = run(&[
        "analyze",
        "--database",
        &f.database,
        "--json",
        "--html",
        page_arg,
    ]);
    assert!(matches!(code(&o), 0 | 1), "{}", describe(&o));
    let (rows, summary) = split(&o);
    let dom = rendered_by_chromium(page_arg, &dir.path().join("census.png"));
    the_tables_and_the_total_show_the_summary(&dom, &summary);
    the_first_histogram_is_the_totals(&dom, &summary);
    every_partition_row_shows_its_figures(&dom, &rows);
    // Refused tables are listed with their rule.
    let refused = dom
        .split("<table class=\"sortable refused\"")
        .nth(1)
        .unwrap();
    assert!(refused.contains(">view<"), "the view's rule");

    an_unwritable_page_is_a_one_line_error(&f);
    deep_html_shows_the_stripes(&f);
}

/// The DOM of the page once Chromium ran its script, which drew the charts, and its screenshot
/// at `shot`, checked to be a PNG of the window's size.
pub(crate) fn rendered_by_chromium(page_arg: &str, shot: &std::path::Path) -> String {
    let browser = Command::new(repo().join("scripts/browser"))
        .args([page_arg, shot.to_str().unwrap(), "1280x1800"])
        .output()
        .unwrap();
    assert!(browser.status.success(), "{}", describe(&browser));
    let dom = stdout(&browser);
    assert!(
        dom.contains("data-ready=\"1\""),
        "the page's script ran to its end"
    );
    assert!(
        dom.contains("<svg class=\"histogram\""),
        "the size histogram"
    );
    assert!(dom.contains("<svg class=\"excess\""), "the per-table chart");
    // A PNG of the window's size: the IHDR chunk holds width and height.
    let png = std::fs::read(shot).unwrap();
    assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
    let be = |at: usize| u32::from_be_bytes(png[at..at + 4].try_into().unwrap());
    assert_eq!((be(16), be(20)), (1280, 1800));
    dom
}

/// Every table's row and the total's cards show the JSON summary's figures.
fn the_tables_and_the_total_show_the_summary(dom: &str, summary: &Value) {
    let fields = [
        "partitions",
        "eligible",
        "files",
        "bytes",
        "small_files",
        "files_needed",
        "excess_files",
        "removable_files",
        "namenode_objects",
        "namenode_objects_removable",
        "errors",
    ];
    for t in summary["tables"].as_array().unwrap() {
        let scope = t["scope"].as_str().unwrap();
        let row = row_of(dom, &format!("<tr data-scope=\"{scope}\">"));
        for field in fields {
            assert_eq!(cell(row, field), t[field].as_u64(), "{scope} {field}");
        }
    }
    let cards = row_of(dom, "<div class=\"cards\" id=\"total\">");
    for field in [
        "files",
        "bytes",
        "excess_files",
        "removable_files",
        "namenode_objects_removable",
        "health",
        "suspended",
    ] {
        assert_eq!(
            cell(cards, field),
            summary["total"][field].as_u64(),
            "total {field}"
        );
    }
    assert!(
        summary["total"]["namenode_objects_removable"]
            .as_u64()
            .unwrap()
            > 0
    );
}

/// The first histogram is the total's: bucket by bucket, now and after.
fn the_first_histogram_is_the_totals(dom: &str, summary: &Value) {
    for (series, key) in [
        ("before", "files_by_size_before"),
        ("after", "files_by_size_after"),
    ] {
        for (i, n) in summary["total"][key].as_array().unwrap().iter().enumerate() {
            let bar = format!("data-series=\"{series}\" data-bucket=\"{i}\" data-v=\"{n}\"");
            assert!(dom.contains(&bar), "{bar}");
        }
    }
}

/// Every partition's row, found by its (escaped) names, shows its figures.
fn every_partition_row_shows_its_figures(dom: &str, rows: &[Value]) {
    let listed: BTreeMap<(String, String), &str> = dom
        .split("<tr data-table=\"")
        .skip(1)
        .filter_map(|r| {
            let (table, rest) = r.split_once("\" data-partition=\"")?;
            let (partition, rest) = rest.split_once('"')?;
            Some(((unescape(table), unescape(partition)), rest))
        })
        .collect();
    assert_eq!(
        listed.len(),
        rows.len(),
        "every partition once (the worst are listed again)"
    );
    for r in rows {
        let key = (
            r["table"].as_str().unwrap().to_string(),
            r["partition"].as_str().unwrap().to_string(),
        );
        let row = listed[&key];
        let row = &row[..row.find("</tr>").unwrap()];
        for field in [
            "files",
            "bytes",
            "small_files",
            "excess_files",
            "namenode_objects_removable",
        ] {
            assert_eq!(cell(row, field), r[field].as_u64(), "{key:?} {field}");
        }
        if let Some(rule) = r["rule"].as_str() {
            assert!(row.contains(&format!("no [{rule}]")), "{key:?}: {row}");
        }
    }
}

/// A page that cannot be written is a one-line error naming it.
fn an_unwritable_page_is_a_one_line_error(f: &Fixtures) {
    let o = run(&[
        "analyze",
        "--table",
        &f.qualified("ext_p3"),
        "--html",
        "/nonexistent/dir/c.html",
    ]);
    assert_eq!(code(&o), 1, "{}", describe(&o));
    assert!(
        stderr(&o).contains("/nonexistent/dir/c.html"),
        "{}",
        describe(&o)
    );
    assert_eq!(stderr(&o).lines().count(), 1, "{}", describe(&o));
}

/// --deep on stdout: the stripes before and after.
fn deep_html_shows_the_stripes(f: &Fixtures) {
    let o = run(&[
        "analyze",
        "--table",
        &f.qualified("ext_p3"),
        "--deep",
        "--format",
        "html",
    ]);
    assert!(o.status.success(), "{}", describe(&o));
    let html = stdout(&o);
    assert!(
        html.contains("<th>stripes/file now</th>") && html.contains("data-col=\"stripes_before\"")
    );
}
