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
    pub old_files: Files,
    pub report: Value,
}

fn prepare(part: &Part) -> (State, Files) {
    let before = part.state(true);
    let old_files = files_at(&location_of(&before.partition));
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

/// The checks every successful compaction must pass (promises 2 to 5 of
/// docs/design/compaction-protocol.md, what the report says, and the journal), one function
/// each; promise 1 is the failed runs' (`assert_untouched`), promise 6 [`check_second_run`]'s.
pub fn check_compactions(runs: &[Compaction]) {
    let news: Vec<Files> = runs.iter().map(|c| files_at(new_location(c))).collect();
    let java = JavaRead::of(runs, &news);
    for (c, new_files) in runs.iter().zip(&news) {
        let run = Checked {
            c,
            new_files,
            what: format!("{} {}", c.part.table, c.part.spec),
            old_location: location_of(&c.before.partition),
            new_location: new_location(c),
            run_id: c.report["run_id"].as_str().expect("run_id"),
        };
        check_new_location(&run);
        let rows = check_same_rows(&run, &java);
        check_reported_files(&run);
        check_outputs_match_their_inputs(&run, &java);
        check_one_swap_of_location(&run, rows);
        check_true_statistics(&run, rows);
        check_old_files_kept(&run);
        check_journal_and_work_dir(&run);
    }
}

/// A directory's visible files, by name: (path, length).
pub type Files = BTreeMap<String, (String, u64)>;

fn files_at(location: &str) -> Files {
    files_in(location)
        .into_iter()
        .map(|(n, l)| (n.clone(), (loc(location).child(&n).to_string(), l)))
        .collect()
}

fn new_location(c: &Compaction) -> &str {
    c.report["new_location"].as_str().expect("new_location")
}

/// The non-empty old files of a run (an empty file holds no ORC for Java to read).
fn old_with_bytes(c: &Compaction) -> impl Iterator<Item = &String> {
    c.old_files.values().filter(|(_, l)| *l > 0).map(|(p, _)| p)
}

/// What Java read of every file of the runs, old and new, by path: two JVMs for everything,
/// started together.
struct JavaRead {
    rows: BTreeMap<String, Vec<String>>,
    metas: BTreeMap<String, Value>,
}

impl JavaRead {
    fn of(runs: &[Compaction], news: &[Files]) -> JavaRead {
        let mut all_files: Vec<String> = vec![];
        for (c, new_files) in runs.iter().zip(news) {
            all_files.extend(old_with_bytes(c).cloned());
            all_files.extend(new_files.values().map(|(p, _)| p.clone()));
        }
        let (rows, metas) = std::thread::scope(|s| {
            let rows = s.spawn(|| java_rows(&all_files));
            let metas = java_metas(&all_files);
            (rows.join().expect("orc-tools data"), metas)
        });
        JavaRead {
            rows: all_files.into_iter().zip(rows).collect(),
            metas,
        }
    }

    /// The rows of `files`: count and order-independent digest, and the sorted lines themselves
    /// when small.
    fn digest<'a>(&'a self, files: impl Iterator<Item = &'a String>) -> (Digest, Vec<&'a str>) {
        let files: Vec<&String> = files.collect();
        let mut d = Digest::default();
        for l in files.iter().flat_map(|f| self.rows[*f].iter()) {
            d.add(l);
        }
        let mut lines: Vec<&str> = vec![];
        if d.rows <= 50_000 {
            lines = files
                .iter()
                .flat_map(|f| self.rows[*f].iter().map(String::as_str))
                .collect();
            lines.sort_unstable();
        }
        (d, lines)
    }
}

/// One compaction under check: the run, the files at its new location and what names them.
struct Checked<'a> {
    c: &'a Compaction,
    new_files: &'a Files,
    what: String,
    old_location: String,
    new_location: &'a str,
    run_id: &'a str,
}

impl Checked<'_> {
    fn new_bytes(&self) -> u64 {
        self.new_files.values().map(|(_, l)| l).sum()
    }
}

/// The report names the old location, and the new one is `<home>/WORK_DIR/<run-id>`.
fn check_new_location(run: &Checked) {
    let what = &run.what;
    assert_eq!(
        run.c.report["old_location"].as_str(),
        Some(run.old_location.as_str())
    );
    assert_eq!(
        run.new_location,
        loc(&run.c.part.home)
            .child(WORK_DIR)
            .child(run.run_id)
            .to_string(),
        "{what}: the new location is <home>/{WORK_DIR}/<run-id>"
    );
}

/// Promise 3: the new files hold exactly the rows of the old ones, by an independent reader
/// (Java), as many as the report says; their number.
fn check_same_rows(run: &Checked, java: &JavaRead) -> u64 {
    let what = &run.what;
    let (old_digest, old_lines) = java.digest(old_with_bytes(run.c));
    let (new_digest, new_lines) = java.digest(run.new_files.values().map(|(p, _)| p));
    assert_eq!(old_digest, new_digest, "{what}: Java reads other rows");
    assert!(old_lines == new_lines, "{what}: Java reads other rows");
    assert_eq!(
        run.c.report["rows"].as_u64(),
        Some(new_digest.rows),
        "{what}: rows"
    );
    assert!(new_digest.rows > 0, "{what}: a partition with rows");
    new_digest.rows
}

/// The report's file counts and bytes: as planned, as listed, fewer files than before.
fn check_reported_files(run: &Checked) {
    let (r, what, new_files) = (&run.c.report, &run.what, run.new_files);
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
        Some(run.c.old_files.len() as u64),
        "{what}: files_before"
    );
    assert!(
        new_files.len() < run.c.old_files.len(),
        "{what}: fewer files"
    );
    assert_eq!(r["bytes_after"].as_u64(), Some(run.new_bytes()));
}

/// Promise 3, file by file: Java's meta on every output is clean, with its inputs' rows,
/// schema and file version, the codec and writer it must have, and min/max as the inputs'
/// extremes.
fn check_outputs_match_their_inputs(run: &Checked, java: &JavaRead) {
    let (r, what) = (&run.c.report, &run.what);
    for (name, (path, _)) in run.new_files {
        let out_meta = &java.metas[path];
        assert_eq!(out_meta["status"], "OK", "{what}: {name}: {out_meta}");
        let in_metas: Vec<&Value> = inputs_of(r, name, what)
            .iter()
            .map(|n| &java.metas[&run.c.old_files[n].0])
            .collect();
        let in_rows: u64 = in_metas
            .iter()
            .map(|m| m["numberOfRows"].as_u64().unwrap())
            .sum();
        assert_eq!(out_meta["numberOfRows"].as_u64(), Some(in_rows), "{name}");
        assert_eq!(
            java.rows[path].len() as u64,
            in_rows,
            "{what}: {name} rows read"
        );
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
}

/// Which old files the output `name` was made from: a merged output's planned inputs, or
/// itself, carried.
fn inputs_of(report: &Value, name: &str, what: &str) -> Vec<String> {
    report["groups"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|g| g["outputs"].as_array().unwrap())
        .find(|o| o["name"] == name)
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
                report["carried"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .any(|f| f["name"] == name),
                "{what}: {name} is neither an output nor carried"
            );
            vec![name.to_string()]
        })
}

/// The parameters a swap sets or, for [`check_true_statistics`], must make true.
const SWAP_PARAMETERS: [&str; 5] = [
    "numFiles",
    "totalSize",
    "numRows",
    PREVIOUS_LOCATION,
    RUN_ID,
];

/// Promise 2: the swap changed the partition's location, naming the previous one and the run,
/// and nothing else: every other parameter is kept (but statistics that described other rows)
/// and the rest of the partition object is as it was.
fn check_one_swap_of_location(run: &Checked, rows: u64) {
    let (c, what) = (run.c, &run.what);
    let after = c.part.partition();
    assert_eq!(location_of(&after), run.new_location, "{what}: location");
    let before_params = c.before.partition.parameters.clone().unwrap_or_default();
    let after_params = after.parameters.clone().unwrap_or_default();
    assert_eq!(
        after_params.get(PREVIOUS_LOCATION),
        Some(&run.old_location),
        "{what}"
    );
    assert_eq!(
        after_params.get(RUN_ID).map(String::as_str),
        Some(run.run_id),
        "{what}"
    );
    let strip = |p: &BTreeMap<String, String>| -> BTreeMap<String, String> {
        p.iter()
            .filter(|(k, _)| !SWAP_PARAMETERS.contains(&k.as_str()))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect()
    };
    // A stale numRows means rawDataSize and COLUMN_STATS_ACCURATE described other rows:
    // the swap drops them (issue 12); otherwise every other parameter is kept.
    let mut expected = strip(&before_params);
    if before_params.get("numRows") != Some(&rows.to_string()) {
        expected.remove("rawDataSize");
        expected.remove("COLUMN_STATS_ACCURATE");
    }
    assert_eq!(
        strip(&after_params),
        expected,
        "{what}: other parameters changed"
    );
    let mut same = after.clone();
    same.parameters = c.before.partition.parameters.clone();
    if let Some(sd) = same.sd.as_mut() {
        sd.location = Some(run.old_location.clone());
    }
    assert!(
        same == c.before.partition,
        "{what}: the partition changed beyond location and parameters:\nbefore {:#?}\nafter {:#?}",
        c.before.partition,
        after
    );
}

/// Promise 4: after the swap the partition's basic statistics are true.
fn check_true_statistics(run: &Checked, rows: u64) {
    let after = run.c.part.partition().parameters.unwrap_or_default();
    assert_eq!(
        after.get("numFiles"),
        Some(&run.new_files.len().to_string())
    );
    assert_eq!(after.get("totalSize"), Some(&run.new_bytes().to_string()));
    assert_eq!(
        after.get("numRows"),
        Some(&rows.to_string()),
        "{}: numRows",
        run.what
    );
}

/// Promise 5: the old files (and hidden leftovers) are all still there, unchanged, for a
/// rollback.
fn check_old_files_kept(run: &Checked) {
    let now = tree(&run.c.part.home, true);
    for (dir, listing) in &run.c.before.tree {
        assert_eq!(
            Some(listing),
            now.get(dir),
            "{}: old directory {dir} changed",
            run.what
        );
    }
}

/// The journal, next to the run, names both locations, the inputs and the outputs; only the
/// run's directory and journal are in the work directory: no staging left.
fn check_journal_and_work_dir(run: &Checked) {
    let (what, run_id, home) = (&run.what, run.run_id, &run.c.part.home);
    let journal_path = loc(home)
        .child(WORK_DIR)
        .child(&format!("{run_id}.json"))
        .to_string();
    let journal: Value = serde_json::from_slice(&read_file(&journal_path))
        .unwrap_or_else(|e| panic!("{what}: journal {journal_path}: {e}"));
    assert_eq!(journal["run_id"], run_id);
    assert_eq!(
        journal["old_location"].as_str(),
        Some(run.old_location.as_str())
    );
    assert_eq!(journal["new_location"].as_str(), Some(run.new_location));
    assert_eq!(
        journal["inputs"].as_array().map(Vec::len),
        Some(run.c.old_files.len()),
        "{what}: journal inputs"
    );
    assert_eq!(
        journal["outputs"].as_array().map(Vec::len),
        Some(run.new_files.len()),
        "{what}: journal outputs"
    );
    let mut work = work_entries(home);
    work.sort();
    let mut expected = vec![run_id.to_string(), format!("{run_id}.json")];
    expected.sort();
    assert_eq!(work, expected, "{what}: {WORK_DIR} holds");
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
