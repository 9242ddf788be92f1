//! The docs cannot drift from the tool: every link and anchor in the Markdown files resolves,
//! the README and BENCHMARKS.md stay short, and every block of command lines marked as tested
//! (a fence opened with ```` ```sh tested ````) in the README and the user guide runs, in order,
//! against the local cluster with the guide's tables (`sales.events`, `sales.clicks`).

use crate::common;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::{describe, env, repo};

/// The Markdown files of the project: the README, BENCHMARKS.md and everything under docs/.
fn markdown_files() -> Vec<PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        let mut entries: Vec<_> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        entries.sort();
        for p in entries {
            if p.is_dir() {
                walk(&p, out);
            } else if p.extension().is_some_and(|e| e == "md") {
                out.push(p);
            }
        }
    }
    let mut files = vec![repo().join("README.md"), repo().join("BENCHMARKS.md")];
    walk(&repo().join("docs"), &mut files);
    files
}

/// The lines outside fenced code blocks, with inline code spans blanked (links in code are
/// not links).
fn prose(text: &str) -> Vec<String> {
    let mut fenced = false;
    let mut out = vec![];
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if fenced {
            continue;
        }
        let mut kept = String::new();
        let mut in_code = false;
        for c in line.chars() {
            if c == '`' {
                in_code = !in_code;
            }
            kept.push(if in_code { ' ' } else { c });
        }
        out.push(kept);
    }
    out
}

/// GitHub's anchor for a heading: lower case, punctuation dropped but `-` and `_`, spaces made
/// dashes; a repeated heading gets `-1`, `-2`, ...
fn anchors(text: &str) -> BTreeSet<String> {
    let mut seen = BTreeSet::new();
    let mut fenced = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
        }
        if fenced || !line.starts_with('#') {
            continue;
        }
        let heading = line.trim_start_matches('#').trim();
        let slug: String = heading
            .to_lowercase()
            .chars()
            .filter(|c| c.is_alphanumeric() || matches!(c, '-' | '_' | ' '))
            .map(|c| if c == ' ' { '-' } else { c })
            .collect();
        let mut unique = slug.clone();
        let mut n = 0;
        while seen.contains(&unique) {
            n += 1;
            unique = format!("{slug}-{n}");
        }
        seen.insert(unique);
    }
    seen
}

/// Every `[text](target)` and `![alt](target)` of the prose.
fn links(text: &str) -> Vec<String> {
    let mut out = vec![];
    let joined = prose(text).join("\n");
    let mut rest = joined.as_str();
    while let Some(at) = rest.find("](") {
        let after = &rest[at + 2..];
        match after.find(')') {
            Some(end) => {
                out.push(after[..end].trim().to_string());
                rest = &after[end..];
            }
            None => break,
        }
    }
    out
}

#[test]
fn every_link_and_anchor_resolves() {
    let mut broken = vec![];
    for file in markdown_files() {
        let text = std::fs::read_to_string(&file).unwrap();
        for link in links(&text) {
            if link.starts_with("http://")
                || link.starts_with("https://")
                || link.starts_with("mailto:")
            {
                continue;
            }
            let (path, anchor) = link.split_once('#').unwrap_or((&link, ""));
            let target = if path.is_empty() {
                file.clone()
            } else {
                file.parent().unwrap().join(path)
            };
            if !target.exists() {
                broken.push(format!("{}: {link}: no such file", file.display()));
                continue;
            }
            if !anchor.is_empty() {
                let target_text = std::fs::read_to_string(&target).unwrap_or_default();
                if !anchors(&target_text).contains(anchor) {
                    broken.push(format!("{}: {link}: no such heading", file.display()));
                }
            }
        }
    }
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
}

#[test]
fn the_readme_and_the_benchmarks_stay_short() {
    for (file, most) in [("README.md", 300), ("BENCHMARKS.md", 350)] {
        let lines = std::fs::read_to_string(repo().join(file))
            .unwrap()
            .lines()
            .count();
        assert!(
            lines <= most,
            "{file} has {lines} lines; keep it under {most}"
        );
    }
}

#[test]
fn anchors_follow_github() {
    let a = anchors("# A `b` c, d!\n## A `b` c, d!\n```\n# not a heading\n```\n### 2026-12-02");
    assert_eq!(
        a,
        ["a-b-c-d", "a-b-c-d-1", "2026-12-02"]
            .into_iter()
            .map(String::from)
            .collect()
    );
    assert_eq!(
        links("see [x](a.md#b) and `[no](c.md)` ![i](p.png)"),
        ["a.md#b", "p.png"]
    );
}

/// The tested blocks of one file, in order, each with its fence's indentation removed.
fn tested_blocks(text: &str) -> Vec<String> {
    let mut blocks = vec![];
    let mut current: Option<(usize, Vec<String>)> = None;
    for line in text.lines() {
        let indent = line.len() - line.trim_start().len();
        let trimmed = line.trim_start();
        match &mut current {
            None if trimmed.starts_with("```sh tested") => current = Some((indent, vec![])),
            None => {}
            Some(_) if trimmed.starts_with("```") => {
                let (_, lines) = current.take().unwrap();
                blocks.push(lines.join("\n"));
            }
            Some((indent, lines)) => lines.push(line.get(*indent..).unwrap_or("").to_string()),
        }
    }
    blocks
}

#[test]
#[cfg_attr(
    not(feature = "cluster-tests"),
    ignore = "needs the local clusters, as the whole cluster suite: run it with scripts/test \
              (cargo test --features cluster-tests against clusters it starts)"
)]
fn the_guides_command_lines_run() {
    let hms_uri = env("HMS_URI");
    let hdfs_url = env("HDFS_URL");
    let bin_dir = Path::new(env!("CARGO_BIN_EXE_hive-orc-compactor"))
        .parent()
        .unwrap()
        .to_path_buf();
    let path = format!(
        "{}:{}",
        bin_dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut pages: Vec<PathBuf> = vec![repo().join("README.md")];
    pages.extend(
        markdown_files()
            .into_iter()
            .filter(|p| p.starts_with(repo().join("docs/guide"))),
    );
    let mut ran = 0;
    for page in pages {
        let blocks = tested_blocks(&std::fs::read_to_string(&page).unwrap());
        if blocks.is_empty() {
            continue;
        }
        // Each page starts from the tables as the guide describes them.
        common::fixtures::load("sales", "guide", &hms_uri, &hdfs_url);
        let dir = tempfile::tempdir().unwrap();
        for block in blocks {
            let o = Command::new("bash")
                .args([
                    "--noprofile",
                    "--norc",
                    "-e",
                    "-o",
                    "pipefail",
                    "-c",
                    &block,
                ])
                .current_dir(dir.path())
                .env("PATH", &path)
                .env("HMS_URI", &hms_uri)
                // The guide's tables were written seconds ago: selections would skip them.
                .env("HOC_MIN_AGE", "0s")
                .env_remove("HIVE_CONF_DIR")
                .env_remove("HOC_STRIPES")
                .env_remove("HOC_CONFIG")
                .output()
                .unwrap();
            assert!(
                o.status.success(),
                "{}: this block failed:\n{block}\n{}",
                page.strip_prefix(repo()).unwrap().display(),
                describe(&o)
            );
            ran += 1;
        }
    }
    assert!(ran >= 10, "only {ran} tested blocks found");
}
