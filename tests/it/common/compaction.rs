//! A compaction checked from every side: the rows and statistics by Java, the partition object
//! by the metastore, the old files, the journal and the work directory by HDFS.

use std::collections::{BTreeMap, BTreeSet};
use std::process::Output;

use serde_json::Value;

use super::hdfs::{files_in, loc, read_file, tree, work_entries};
use super::metastore::location_of;
use super::orc_tools::{java_metas, java_rows};
use super::partition::{assert_untouched, Part, State};
use super::stats::{check_min_max, Digest};
use super::{code, describe, json, run_many, PREVIOUS_LOCATION, RUN_ID, WORK_DIR};

/// A partition about to be compacted: its state before, then the run's report.
pub struct Compaction {
    pub part: Part,
    pub before: State,
    /// The visible files of the old location, by name: (path, length).
    pub old_files: BTreeMap<String, (String, u64)>,
    pub report: Value,
}

fn prepare(part: &Part) -> (State, BTreeMap<String, (String, u64)>) {
    let before = part.state(true);
    let old_location = location_of(&before.partition);
    let old_files = files_in(&old_location)
        .into_iter()
        .map(|(n, l)| (n.clone(), (loc(&old_location).child(&n).to_string(), l)))
        .collect();
    (before, old_files)
}

/// Runs `compact` on every partition (in parallel), expecting each to compact.
pub fn compact_all(parts: &[Part]) -> Vec<Compaction> {
    compact_all_with(parts, &[])
}

/// [`compact_all`] with `extra` arguments for every run.
pub fn compact_all_with(parts: &[Part], extra: &[&str]) -> Vec<Compaction> {
    let prepared: Vec<_> = parts.iter().map(prepare).collect();
    let mut outputs = Vec::new();
    let by_uri: BTreeSet<&str> = parts.iter().map(|p| p.hms_uri.as_str()).collect();
    let mut results: Vec<Option<Output>> = vec![None; parts.len()];
    for uri in by_uri {
        let idx: Vec<usize> = (0..parts.len())
            .filter(|&i| parts[i].hms_uri == uri)
            .collect();
        let cases: Vec<Vec<String>> = idx
            .iter()
            .map(|&i| parts[i].args("compact", extra))
            .collect();
        for (i, o) in idx.into_iter().zip(run_many(uri, &cases)) {
            results[i] = Some(o);
        }
    }
    for ((part, (before, old_files)), out) in parts.iter().zip(prepared).zip(results) {
        let out = out.unwrap();
        assert_eq!(
            code(&out),
            0,
            "{} {}: {}",
            part.table,
            part.spec,
            describe(&out)
        );
        let report = json(&out);
        assert_eq!(report["status"], "compacted", "{} {report}", part.spec);
        let level = match extra.iter().position(|a| *a == "--verify") {
            Some(i) => extra[i + 1],
            None => "full",
        };
        assert_eq!(report["verify"], level, "{} {report}", part.spec);
        outputs.push(Compaction {
            part: part.clone(),
            before,
            old_files,
            report,
        });
    }
    outputs
}

/// The checks every successful compaction must pass (promises 1 to 5, and the journal).
pub fn check_compactions(runs: &[Compaction]) {
    // Gather every file once: old (non-empty) files at the old location, new ones at the new.
    let mut news: Vec<BTreeMap<String, (String, u64)>> = vec![];
    let mut all_files: Vec<String> = vec![];
    for c in runs {
        let r = &c.report;
        let new_location = r["new_location"]
            .as_str()
            .expect("new_location")
            .to_string();
        let new_files: BTreeMap<String, (String, u64)> = files_in(&new_location)
            .into_iter()
            .map(|(n, l)| (n.clone(), (loc(&new_location).child(&n).to_string(), l)))
            .collect();
        all_files.extend(
            c.old_files
                .values()
                .filter(|(_, l)| *l > 0)
                .map(|(p, _)| p.clone()),
        );
        all_files.extend(new_files.values().map(|(p, _)| p.clone()));
        news.push(new_files);
    }
    // Two JVMs for everything, started together.
    let (rows, metas) = std::thread::scope(|s| {
        let rows = s.spawn(|| java_rows(&all_files));
        let metas = java_metas(&all_files);
        (rows.join().expect("orc-tools data"), metas)
    });
    let rows: BTreeMap<&String, &Vec<String>> = all_files.iter().zip(&rows).collect();

    for (c, new_files) in runs.iter().zip(&news) {
        let r = &c.report;
        let what = format!("{} {}", c.part.table, c.part.spec);
        let old_location = location_of(&c.before.partition);
        let new_location = r["new_location"].as_str().unwrap();
        let run_id = r["run_id"].as_str().expect("run_id");
        assert_eq!(r["old_location"].as_str(), Some(old_location.as_str()));
        assert_eq!(
            new_location,
            loc(&c.part.home).child(WORK_DIR).child(run_id).to_string(),
            "{what}: the new location is <home>/{WORK_DIR}/<run-id>"
        );

        // Same rows, by an independent reader: count and order-independent digest (and the
        // sorted lines themselves when small).
        let digest = |files: &mut dyn Iterator<Item = &String>| {
            let files: Vec<&String> = files.collect();
            let mut d = Digest::default();
            for l in files.iter().flat_map(|f| rows[*f].iter()) {
                d.add(l);
            }
            let mut lines: Vec<&str> = vec![];
            if d.rows <= 50_000 {
                lines = files
                    .iter()
                    .flat_map(|f| rows[*f].iter().map(String::as_str))
                    .collect();
                lines.sort_unstable();
            }
            (d, lines)
        };
        let (old_digest, old_lines) =
            digest(&mut c.old_files.values().filter(|(_, l)| *l > 0).map(|(p, _)| p));
        let (new_digest, new_lines) = digest(&mut new_files.values().map(|(p, _)| p));
        assert_eq!(old_digest, new_digest, "{what}: Java reads other rows");
        assert!(old_lines == new_lines, "{what}: Java reads other rows");
        assert_eq!(r["rows"].as_u64(), Some(new_digest.rows), "{what}: rows");
        assert!(new_digest.rows > 0, "{what}: a partition with rows");

        // File counts: as planned, as listed, fewer than before.
        let planned: usize = r["groups"]
            .as_array()
            .unwrap()
            .iter()
            .map(|g| g["outputs"].as_array().unwrap().len())
            .sum::<usize>()
            + r["carried"].as_array().unwrap().len();
        assert_eq!(r["files_after"].as_u64(), Some(new_files.len() as u64));
        assert_eq!(planned, new_files.len(), "{what}: outputs + carried");
        assert_eq!(
            r["files_before"].as_u64(),
            Some(c.old_files.len() as u64),
            "{what}: files_before"
        );
        assert!(new_files.len() < c.old_files.len(), "{what}: fewer files");
        let new_bytes: u64 = new_files.values().map(|(_, l)| l).sum();
        assert_eq!(r["bytes_after"].as_u64(), Some(new_bytes));

        // Java's meta on every output: clean, and min/max as the inputs' extremes.
        let meta_of = |p: &String| &metas[p];
        for (name, (path, _)) in new_files {
            let out_meta = meta_of(path);
            assert_eq!(out_meta["status"], "OK", "{what}: {name}: {out_meta}");
            // Which old files it was made from: a merged output's planned inputs, or itself.
            let inputs: Vec<String> = r["groups"]
                .as_array()
                .unwrap()
                .iter()
                .flat_map(|g| g["outputs"].as_array().unwrap())
                .find(|o| o["name"] == name.as_str())
                .map(|o| {
                    o["inputs"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .map(|v| v.as_str().unwrap().to_string())
                        .collect()
                })
                .unwrap_or_else(|| {
                    assert!(
                        r["carried"]
                            .as_array()
                            .unwrap()
                            .iter()
                            .any(|f| f["name"] == name.as_str()),
                        "{what}: {name} is neither an output nor carried"
                    );
                    vec![name.clone()]
                });
            let in_metas: Vec<&Value> = inputs.iter().map(|n| meta_of(&c.old_files[n].0)).collect();
            let in_rows: u64 = in_metas
                .iter()
                .map(|m| m["numberOfRows"].as_u64().unwrap())
                .sum();
            assert_eq!(out_meta["numberOfRows"].as_u64(), Some(in_rows), "{name}");
            assert_eq!(rows[path].len() as u64, in_rows, "{what}: {name} rows read");
            for key in ["schemaString", "fileVersion"] {
                assert_eq!(out_meta[key], in_metas[0][key], "{what}: {name} {key}");
            }
            // A stripe copy keeps its inputs' codec and writer; a re-encode writes the codec
            // its group was planned with, as the current Java writer (docs/design/orc-writer.md).
            let rewritten = group_of(r, name).filter(|g| g.1["made_by"] == "rewrite");
            let reencoded = rewritten.is_some();
            let (compression, writer) = match rewritten {
                Some(g) => (
                    g.0["compression"].clone(),
                    Value::from(REWRITE_WRITER_VERSION),
                ),
                _ => (
                    in_metas[0]["compression"].clone(),
                    in_metas[0]["writerVersion"].clone(),
                ),
            };
            assert_eq!(out_meta["compression"], compression, "{what}: {name}");
            assert_eq!(out_meta["writerVersion"], writer, "{what}: {name}");
            check_min_max(&format!("{what}: {name}"), &in_metas, out_meta, reencoded);
        }

        // The metastore: new location, true statistics, the previous location, nothing else
        // changed.
        let after = c.part.partition();
        assert_eq!(location_of(&after), new_location, "{what}: location");
        let before_params = c.before.partition.parameters.clone().unwrap_or_default();
        let after_params = after.parameters.clone().unwrap_or_default();
        assert_eq!(
            after_params.get("numFiles"),
            Some(&new_files.len().to_string())
        );
        assert_eq!(after_params.get("totalSize"), Some(&new_bytes.to_string()));
        assert_eq!(
            after_params.get("numRows"),
            Some(&new_digest.rows.to_string()),
            "{what}: numRows"
        );
        assert_eq!(
            after_params.get(PREVIOUS_LOCATION),
            Some(&old_location),
            "{what}"
        );
        assert_eq!(
            after_params.get(RUN_ID).map(String::as_str),
            Some(run_id),
            "{what}"
        );
        let changed = [
            "numFiles",
            "totalSize",
            "numRows",
            PREVIOUS_LOCATION,
            RUN_ID,
        ];
        let strip = |p: &BTreeMap<String, String>| -> BTreeMap<String, String> {
            p.iter()
                .filter(|(k, _)| !changed.contains(&k.as_str()))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect()
        };
        // A stale numRows means rawDataSize and COLUMN_STATS_ACCURATE described other rows:
        // the swap drops them (issue 12); otherwise every other parameter is kept.
        let mut expected = strip(&before_params);
        if before_params.get("numRows") != Some(&new_digest.rows.to_string()) {
            expected.remove("rawDataSize");
            expected.remove("COLUMN_STATS_ACCURATE");
        }
        assert_eq!(
            strip(&after_params),
            expected,
            "{what}: other parameters changed"
        );
        // Everything else of the partition object as it was.
        let mut same = after.clone();
        same.parameters = c.before.partition.parameters.clone();
        if let Some(sd) = same.sd.as_mut() {
            sd.location = Some(old_location.clone());
        }
        assert!(
            same == c.before.partition,
            "{what}: the partition changed beyond location and parameters:\nbefore {:#?}\nafter {:#?}",
            c.before.partition,
            after
        );

        // The old files (and hidden leftovers) are all still there, unchanged.
        let now = tree(&c.part.home, true);
        for (dir, listing) in &c.before.tree {
            assert_eq!(
                Some(listing),
                now.get(dir),
                "{what}: old directory {dir} changed"
            );
        }

        // The journal, next to the run.
        let journal_path = loc(&c.part.home)
            .child(WORK_DIR)
            .child(&format!("{run_id}.json"))
            .to_string();
        let journal: Value = serde_json::from_slice(&read_file(&journal_path))
            .unwrap_or_else(|e| panic!("{what}: journal {journal_path}: {e}"));
        assert_eq!(journal["run_id"], run_id);
        assert_eq!(
            journal["old_location"].as_str(),
            Some(old_location.as_str())
        );
        assert_eq!(journal["new_location"].as_str(), Some(new_location));
        assert_eq!(
            journal["inputs"].as_array().map(Vec::len),
            Some(c.old_files.len()),
            "{what}: journal inputs"
        );
        assert_eq!(
            journal["outputs"].as_array().map(Vec::len),
            Some(new_files.len()),
            "{what}: journal outputs"
        );
        // Only the run's directory and journal in the work directory: no staging left.
        let mut work = work_entries(&c.part.home);
        work.sort();
        let mut expected = vec![run_id.to_string(), format!("{run_id}.json")];
        expected.sort();
        assert_eq!(work, expected, "{what}: {WORK_DIR} holds");
    }
}

/// The writer version our re-encoded outputs claim, as orc-tools names it.
pub const REWRITE_WRITER_VERSION: &str = "ORC_14";

/// The planned group and output named `name` in a compaction report.
pub fn group_of<'a>(report: &'a Value, name: &str) -> Option<(&'a Value, &'a Value)> {
    report["groups"].as_array()?.iter().find_map(|g| {
        g["outputs"]
            .as_array()?
            .iter()
            .find(|o| o["name"] == name)
            .map(|o| (g, o))
    })
}

/// Promise 6: a second run finds nothing to do and changes nothing at all.
pub fn check_second_run(parts: &[Part]) {
    let befores: Vec<State> = parts.iter().map(|p| p.state(true)).collect();
    let cases: Vec<Vec<String>> = parts.iter().map(|p| p.args("compact", &[])).collect();
    let outs = run_many(&parts[0].hms_uri, &cases);
    for ((p, before), out) in parts.iter().zip(&befores).zip(&outs) {
        assert_eq!(code(out), 0, "{} {}: {}", p.table, p.spec, describe(out));
        let r = json(out);
        assert_eq!(r["status"], "nothing-to-do", "{} {}: {r}", p.table, p.spec);
        assert_eq!(r["files_after"], r["files_before"]);
        let after = p.state(true);
        assert_untouched(p, before, &after, "a second run");
    }
}
