//! `inspect` against the real clusters `scripts/test` starts (no mocks): every fixture table and
//! partition reports what the fixture manifest says is there; every refusal exits 3 with one
//! stderr line and touches nothing; Hive-escaped specs resolve; failures exit 1 with one line
//! saying what to do; and HMS 3.1 and 4.x give the same facts.

#![cfg(feature = "cluster-tests")]

use std::collections::BTreeMap;
use std::fmt::Debug;
use std::process::Output;

use crate::common::{
    code, env, fingerprint, fixtures, fixtures_from, free_port, run_many, stderr, stdout,
    FixturePartition, FixtureTable, Fixtures,
};
use serde_json::{json, Value};

/// Statistics the manifest's params must agree with, key for key (absent on both sides is fine).
const COMPARED_STATS: &[&str] = &["numFiles", "totalSize", "numRows"];

fn args(table: &str, partition: Option<&str>, as_json: bool) -> Vec<String> {
    let mut a = vec![
        "inspect".to_string(),
        "--table".to_string(),
        table.to_string(),
    ];
    if let Some(p) = partition {
        a.extend(["--partition".to_string(), p.to_string()]);
    }
    if as_json {
        a.push("--json".to_string());
    }
    a
}

/// Collects every mismatch of one run, so a failure shows all of them at once.
struct Check {
    what: String,
    errors: Vec<String>,
}

impl Check {
    fn new(what: impl Into<String>) -> Self {
        Check {
            what: what.into(),
            errors: vec![],
        }
    }

    fn eq<T: PartialEq + Debug>(&mut self, field: &str, got: T, want: T) {
        if got != want {
            self.errors
                .push(format!("{field}: got {got:?}, want {want:?}"));
        }
    }

    fn fail(&mut self, msg: impl Into<String>) {
        self.errors.push(msg.into());
    }

    /// Appends this run's errors (with the output, for context) to `all`.
    fn into(self, o: &Output, all: &mut Vec<String>) {
        if !self.errors.is_empty() {
            all.push(format!(
                "{}:\n  {}\n  exit {} stdout: {}\n  stderr: {}",
                self.what,
                self.errors.join("\n  "),
                code(o),
                stdout(o).trim(),
                stderr(o).trim()
            ));
        }
    }
}

fn assert_no_errors(errors: Vec<String>) {
    assert!(errors.is_empty(), "{}", errors.join("\n\n"));
}

fn parse(o: &Output, c: &mut Check) -> Option<Value> {
    match serde_json::from_slice::<Value>(&o.stdout) {
        Ok(v) => Some(v),
        Err(e) => {
            c.fail(format!("stdout is not one JSON object: {e}"));
            None
        }
    }
}

fn rule_of(v: &Value) -> Option<String> {
    v["rule"].as_str().map(str::to_string)
}

/// The table-level facts every `inspect` of `t` reports.
fn check_table_facts(c: &mut Check, fx: &Fixtures, t: &FixtureTable, j: &Value) {
    c.eq("table", &j["table"], &json!(fx.qualified(&t.name)));
    c.eq("table_type", &j["table_type"], &json!(t.table_type));
    c.eq(
        "partition_keys",
        &j["partition_keys"],
        &json!(t.partition_keys),
    );
    c.eq("location", &j["location"], &json!(t.location));
    if t.partition_keys.is_empty() {
        c.eq("partitions", &j["partitions"], &Value::Null);
    } else {
        c.eq("partitions", &j["partitions"], &json!(t.partitions.len()));
        c.eq("directory", &j["directory"], &Value::Null);
        c.eq("statistics", &j["statistics"], &json!({}));
    }
}

/// A directory report (a partition, or an unpartitioned table's `directory`) against the
/// fixture's files. `read` says whether the tool read the ORC tails (the directory was not
/// refused), which is when it reports rows.
fn check_directory(c: &mut Check, d: &Value, p: &FixturePartition, read: bool) {
    c.eq("location", &d["location"], &json!(p.location));
    c.eq("exists", &d["exists"], &json!(true));
    let top = p.top_level_files();
    // The tool lists one level; nested files (which make it refuse) are not its data files.
    let (count, bytes) = if top.len() == p.files.len() {
        (p.file_count, p.total_bytes)
    } else {
        (top.len() as u64, top.iter().map(|f| f.bytes).sum())
    };
    c.eq("files.count", &d["files"]["count"], &json!(count));
    c.eq("files.bytes", &d["files"]["bytes"], &json!(bytes));
    let want_rows = if read { json!(p.rows) } else { Value::Null };
    c.eq("rows", &d["rows"], &want_rows);
    let (hidden, subdirs) = p.top_level_names();
    c.eq("hidden", &d["hidden"], &json!(hidden));
    c.eq("subdirectories", &d["subdirectories"], &json!(subdirs));
}

/// The metastore statistics the tool shows, against the params the fixture registered.
fn check_statistics(c: &mut Check, stats: &Value, params: &BTreeMap<String, String>) {
    let Some(stats) = stats.as_object() else {
        return c.fail(format!("statistics is not an object: {stats}"));
    };
    for key in COMPARED_STATS {
        c.eq(
            &format!("statistics.{key}"),
            stats.get(*key).and_then(Value::as_str),
            params.get(*key).map(String::as_str),
        );
    }
    for (key, value) in stats {
        c.eq(
            &format!("statistics.{key}"),
            value.as_str(),
            params.get(key).map(String::as_str),
        );
    }
}

/// `inspect --table T --json`.
fn check_table_run(fx: &Fixtures, t: &FixtureTable, o: &Output, errors: &mut Vec<String>) {
    let mut c = Check::new(format!("inspect --table {}", fx.qualified(&t.name)));
    // An unpartitioned table's directory is checked (and refused) with the table.
    let dir = t.partitions.iter().find(|p| p.spec.is_empty());
    let want_rule = t
        .refusal
        .clone()
        .or(dir.and_then(|p| p.rule()).map(String::from));
    c.eq(
        "exit code",
        code(o),
        if want_rule.is_some() { 3 } else { 0 },
    );
    if let Some(j) = parse(o, &mut c) {
        check_table_facts(&mut c, fx, t, &j);
        let status = if want_rule.is_some() {
            "refused"
        } else {
            "ready"
        };
        c.eq("status", &j["status"], &json!(status));
        c.eq("rule", rule_of(&j), want_rule.clone());
        c.eq("refusal.rule", rule_of(&j["refusal"]), want_rule.clone());
        c.eq("partition", &j["partition"], &json!(""));
        c.eq("partition_details", &j["partition_details"], &Value::Null);
        if t.partition_keys.is_empty() {
            match dir {
                Some(p) => {
                    check_directory(&mut c, &j["directory"], p, want_rule.is_none());
                    check_statistics(&mut c, &j["statistics"], &p.params);
                    if let Some(params) = &t.params {
                        check_statistics(&mut c, &j["statistics"], params);
                    }
                }
                // Views and storage-handler tables: no files the fixtures describe.
                None => c.eq(
                    "directory.location",
                    &j["directory"]["location"],
                    &json!(t.location),
                ),
            }
        }
    }
    match &want_rule {
        None => c.eq("stderr", stderr(o), String::new()),
        Some(rule) => {
            let err = stderr(o);
            if !(err.lines().count() == 1 && err.trim_end().ends_with(&format!("[{rule}]"))) {
                c.fail(format!("stderr is not one line ending in [{rule}]"));
            }
        }
    }
    c.into(o, errors);
}

/// `inspect --table T --partition P --json`.
fn check_partition_run(
    fx: &Fixtures,
    t: &FixtureTable,
    p: &FixturePartition,
    o: &Output,
    errors: &mut Vec<String>,
) {
    let mut c = Check::new(format!(
        "inspect --table {} --partition '{}'",
        fx.qualified(&t.name),
        p.spec
    ));
    let refused = t.refusal.is_some() || p.refusal.is_some();
    c.eq("exit code", code(o), if refused { 3 } else { 0 });
    if let Some(j) = parse(o, &mut c) {
        check_table_facts(&mut c, fx, t, &j);
        let status = if refused { "refused" } else { "ready" };
        c.eq("status", &j["status"], &json!(status));
        c.eq("partition", &j["partition"], &json!(p.spec));
        c.eq("refusal.rule", rule_of(&j["refusal"]), t.refusal.clone());
        let part = &j["partition_details"];
        c.eq("partition.name", &part["name"], &json!(p.spec));
        c.eq("partition.values", &part["values"], &json!(p.values));
        let part_rule = rule_of(&part["refusal"]);
        c.eq(
            "partition.eligible",
            &part["eligible"],
            &json!(part_rule.is_none()),
        );
        // The fixtures describe partition refusals of ORC tables; a refused table's partitions
        // may be refused for reasons of their own (its delta directories, its buckets).
        if t.refusal.is_none() {
            c.eq("partition.refusal.rule", part_rule.as_deref(), p.rule());
        }
        check_directory(&mut c, part, p, part_rule.is_none());
        check_statistics(&mut c, &part["statistics"], &p.params);
    }
    if !refused {
        c.eq("stderr", stderr(o), String::new());
    }
    c.into(o, errors);
}

/// Requirement 1: every table and every partition of the manifest, facts and exit codes.
#[test]
fn every_fixture_table_and_partition_matches_the_manifest() {
    let fx = fixtures();
    let mut cases: Vec<(&FixtureTable, Option<&FixturePartition>)> = vec![];
    for t in &fx.tables {
        cases.push((t, None));
        if !t.partition_keys.is_empty() {
            cases.extend(t.partitions.iter().map(|p| (t, Some(p))));
        }
    }
    let argv: Vec<Vec<String>> = cases
        .iter()
        .map(|(t, p)| args(&fx.qualified(&t.name), p.map(|p| p.spec.as_str()), true))
        .collect();
    let outputs = run_many(&env("HMS_URI"), &argv);
    let mut errors = vec![];
    for ((t, p), o) in cases.iter().zip(&outputs) {
        match p {
            None => check_table_run(&fx, t, o, &mut errors),
            Some(p) => check_partition_run(&fx, t, p, o, &mut errors),
        }
    }
    assert_no_errors(errors);
    // The run covered what it claims to: refusals of both levels and every rule the fixtures
    // exercise, not just eligible tables.
    assert!(fx.tables.iter().any(|t| t.refusal.is_some()));
    assert!(fx
        .tables
        .iter()
        .flat_map(|t| &t.partitions)
        .any(|p| p.refusal.is_some()));
}

/// One refusal to provoke: `--table table [--partition spec]`, the rule it must name, and
/// words the reason must contain.
struct Refused {
    table: String,
    spec: Option<String>,
    rule: String,
    mentions: Vec<String>,
}

fn refused(table: &str, spec: Option<&str>, rule: &str, mentions: &[&str]) -> Refused {
    Refused {
        table: table.to_string(),
        spec: spec.map(str::to_string),
        rule: rule.to_string(),
        mentions: mentions.iter().map(|s| s.to_string()).collect(),
    }
}

/// Refusals beyond the fixtures' own: specs that are not one full partition.
fn spec_refusals(fx: &Fixtures) -> Vec<Refused> {
    let p3 = fx.table("ext_p3");
    let [k0, k1, k2] = &p3.partition_keys[..] else {
        panic!("ext_p3 has three partition keys: {:?}", p3.partition_keys)
    };
    let v = &p3.partitions[0].values;
    let (v0, v1, v2) = (&v[0], &v[1], &v[2]);
    let missing = format!("{k0}={v0}");
    let unknown = format!("{k0}={v0}/{k1}={v1}/minute={v2}");
    let repeated = format!("{k0}={v0}/{k0}={v0}/{k1}={v1}/{k2}={v2}");
    let malformed = format!("{k0}={v0}/{k1}/{k2}={v2}");
    let absent = format!("{k0}={v0}/{k1}={v1}/{k2}=no-such-hour");
    let empty = String::new();
    let escaped = fx.table("escaped");
    let slash = escaped
        .partitions
        .iter()
        .find(|p| p.values[0].contains('/'))
        .expect("an escaped partition whose first value holds '/'");
    // Typed unescaped, the '/' inside the value splits the spec: refused, not guessed.
    let unescaped_slash = format!(
        "{}={}/{}={}",
        escaped.partition_keys[0], slash.values[0], escaped.partition_keys[1], slash.values[1]
    );
    let t3 = fx.qualified("ext_p3");
    let p1 = fx.table("ext_p1");
    vec![
        refused(&t3, Some(&missing), "partition_spec", &[k1, k2]),
        refused(&t3, Some(&unknown), "partition_spec", &["minute"]),
        refused(&t3, Some(&repeated), "partition_spec", &[k0, "twice"]),
        refused(&t3, Some(&malformed), "partition_spec", &[k1]),
        refused(&t3, Some(&empty), "partition_spec", &[k0]),
        refused(&t3, Some(&absent), "no_such_partition", &["no-such-hour"]),
        refused(
            &fx.qualified("ext_p1"),
            Some(&format!("{}=1999-12-31", p1.partition_keys[0])),
            "no_such_partition",
            &["1999-12-31"],
        ),
        refused(
            &fx.qualified("ext_unpartitioned"),
            Some("dt=2024-01-01"),
            "partition_spec",
            &["not partitioned"],
        ),
        refused(
            &fx.qualified("escaped"),
            Some(&unescaped_slash),
            "partition_spec",
            &[],
        ),
        // A view refuses as a view, whatever the spec.
        refused(&fx.qualified("view_v"), Some("dt=2024-01-01"), "view", &[]),
    ]
}

/// Requirement 2: every refusal exits 3 with one stderr line naming the table, the partition
/// and the rule; `--json` says why; and neither the metastore nor HDFS changed.
#[test]
fn every_refusal_exits_3_with_one_line_and_touches_nothing() {
    let fx = fixtures();
    let hms = env("HMS_URI");
    let mut cases = vec![];
    for t in &fx.tables {
        let name = fx.qualified(&t.name);
        if let Some(rule) = &t.refusal {
            cases.push(refused(&name, None, rule, &[]));
            for p in t.partitions.iter().filter(|p| !p.spec.is_empty()) {
                cases.push(refused(&name, Some(&p.spec), rule, &[]));
            }
        } else {
            for p in &t.partitions {
                let Some(rule) = p.rule() else { continue };
                let spec = (!p.spec.is_empty()).then_some(p.spec.as_str());
                cases.push(refused(&name, spec, rule, &[]));
            }
        }
    }
    cases.extend(spec_refusals(&fx));

    let tables: std::collections::BTreeSet<&str> = cases.iter().map(|c| c.table.as_str()).collect();
    let fingerprints = |tables: &std::collections::BTreeSet<&str>| -> BTreeMap<String, _> {
        std::thread::scope(|s| {
            let handles: Vec<_> = tables
                .iter()
                .map(|t| {
                    let (db, table) = t.split_once('.').unwrap();
                    let hms = &hms;
                    (t.to_string(), s.spawn(move || fingerprint(hms, db, table)))
                })
                .collect();
            handles
                .into_iter()
                .map(|(t, h)| (t, h.join().expect("fingerprint")))
                .collect()
        })
    };
    let before = fingerprints(&tables);

    let argv: Vec<Vec<String>> = cases
        .iter()
        .flat_map(|c| [false, true].map(|as_json| args(&c.table, c.spec.as_deref(), as_json)))
        .collect();
    let outputs = run_many(&hms, &argv);

    let mut errors = vec![];
    for (case, pair) in cases.iter().zip(outputs.chunks(2)) {
        let (text, js) = (&pair[0], &pair[1]);
        let spec = case.spec.as_deref();
        let what = match spec {
            Some(s) => format!("inspect --table {} --partition '{s}'", case.table),
            None => format!("inspect --table {}", case.table),
        };
        // Where the partition is named: as typed for a spec that names no partition, else its
        // name as SHOW PARTITIONS prints it (the fixtures' specs are already that).
        let prefix = match spec {
            Some(s) => format!("refused: {} partition {s}: ", case.table),
            None => format!("refused: {}: ", case.table),
        };
        let suffix = format!(" [{}]", case.rule);
        for (o, mode) in [(text, "text"), (js, "--json")] {
            let mut c = Check::new(format!("{what} ({mode})"));
            c.eq("exit code", code(o), 3);
            let err = stderr(o);
            let line = err.strip_suffix('\n').unwrap_or(&err);
            if line.contains('\n') || !err.ends_with('\n') {
                c.fail("stderr is not exactly one line");
            }
            if !line.starts_with(&prefix) || !line.ends_with(&suffix) {
                c.fail(format!("stderr is not `{prefix}<reason>{suffix}`"));
            }
            for word in &case.mentions {
                if !line.contains(word.as_str()) {
                    c.fail(format!("the reason does not mention {word}"));
                }
            }
            if mode == "text" {
                if !stdout(o).contains(&suffix) {
                    c.fail(format!("the text report does not show{suffix}"));
                }
            } else if let Some(j) = parse(o, &mut c) {
                c.eq("status", &j["status"], &json!("refused"));
                c.eq("rule", rule_of(&j).as_deref(), Some(case.rule.as_str()));
                let rule = match rule_of(&j["refusal"]) {
                    Some(table_rule) => Some(table_rule),
                    None => {
                        let part = &j["partition_details"];
                        c.eq("partition.eligible", &part["eligible"], &json!(false));
                        rule_of(&part["refusal"])
                    }
                };
                c.eq("refusal.rule", rule.as_deref(), Some(case.rule.as_str()));
            }
            c.into(o, &mut errors);
        }
    }

    let after = fingerprints(&tables);
    for (table, b) in &before {
        assert!(
            !b.listings.is_empty() || table.ends_with(".view_v"),
            "{table}: the fingerprint holds no directory"
        );
        for d in b.differences(&after[table]) {
            errors.push(format!("{table} changed while being inspected: {d}"));
        }
    }
    assert_no_errors(errors);
}

/// Requirement 3: Hive-escaped partition names, keys in another order or case, and values
/// typed unescaped all resolve to the same partition, reported by its escaped name.
#[test]
fn escaped_specs_resolve_in_any_key_order_and_unescaped() {
    let fx = fixtures();
    let t = fx.table("escaped");
    let name = fx.qualified("escaped");
    let keys = &t.partition_keys;
    assert_eq!(keys.len(), 2, "escaped has two partition keys");
    assert!(
        t.partitions.iter().any(|p| p.spec.contains('%')),
        "the escaped fixtures hold escaped names"
    );
    let escape_pairs =
        |p: &FixturePartition| -> Vec<String> { p.spec.split('/').map(str::to_string).collect() };
    // Unescaped typing is unambiguous unless a value holds '/' (it splits the spec) or a
    // '%XX' sequence (it reads as an escape).
    let typable = |v: &str| {
        !v.contains('/')
            && !v
                .as_bytes()
                .windows(3)
                .any(|w| w[0] == b'%' && w[1].is_ascii_hexdigit() && w[2].is_ascii_hexdigit())
    };
    let mut cases: Vec<(&FixturePartition, String)> = vec![];
    for p in &t.partitions {
        let pairs = escape_pairs(p);
        cases.push((p, p.spec.clone()));
        cases.push((p, format!("{}/{}", pairs[1], pairs[0])));
        // Hive lower-cases column names: keys match in any case.
        let (k0, v0) = pairs[0].split_once('=').expect("key=value");
        cases.push((p, format!("{}={v0}/{}", k0.to_uppercase(), pairs[1])));
        if p.values.iter().all(|v| typable(v)) {
            let raw = |i: usize| format!("{}={}", keys[i], p.values[i]);
            cases.push((p, format!("{}/{}", raw(0), raw(1))));
            cases.push((p, format!("{}/{}", raw(1), raw(0))));
        }
    }
    assert!(
        cases
            .iter()
            .any(|(_, s)| s.split('/').any(|kv| kv.matches('=').count() > 1)),
        "some case types a value holding '=' unescaped"
    );
    let argv: Vec<Vec<String>> = cases
        .iter()
        .map(|(_, s)| args(&name, Some(s), true))
        .collect();
    let outputs = run_many(&env("HMS_URI"), &argv);
    let mut errors = vec![];
    for ((p, spec), o) in cases.iter().zip(&outputs) {
        let mut c = Check::new(format!("inspect --table {name} --partition '{spec}'"));
        c.eq("exit code", code(o), 0);
        if let Some(j) = parse(o, &mut c) {
            let part = &j["partition_details"];
            c.eq("partition.name", &part["name"], &json!(p.spec));
            c.eq("partition.values", &part["values"], &json!(p.values));
            c.eq("partition.location", &part["location"], &json!(p.location));
            c.eq("files.count", &part["files"]["count"], &json!(p.file_count));
            c.eq("rows", &part["rows"], &json!(p.rows));
        }
        c.into(o, &mut errors);
    }
    assert_no_errors(errors);
}

/// The one `error:` line of a failed run; other stderr lines may only be log lines.
fn error_line(c: &mut Check, o: &Output) -> String {
    let err = stderr(o);
    let errors: Vec<&str> = err.lines().filter(|l| l.starts_with("error: ")).collect();
    if errors.len() != 1
        || !err
            .trim_end()
            .lines()
            .last()
            .unwrap_or("")
            .starts_with("error: ")
    {
        c.fail("stderr does not end in exactly one `error: ` line");
    }
    for other in err.lines().filter(|l| !l.starts_with("error: ")) {
        if !other.contains("WARN") {
            c.fail(format!(
                "stderr holds a line that is neither the error nor a warning: {other}"
            ));
        }
    }
    errors.first().map(|s| s.to_string()).unwrap_or_default()
}

/// Requirement 4: failures exit 1 with one line that says what to do; metastore failover works.
#[test]
fn failures_exit_1_with_one_line_and_failover_works() {
    let fx = fixtures();
    let hms = env("HMS_URI");
    let table = fx.qualified("ext_p1");
    let no_table = fx.qualified("no_such_table");
    let dead = format!("thrift://127.0.0.1:{}", free_port());
    let failover = format!("{dead},{hms}");

    let argv: Vec<Vec<String>> = vec![
        args(&no_table, None, false),
        args(&no_table, None, true),
        args("no_such_db_for_inspect.t", None, true),
        [
            args(&table, None, false),
            vec!["--metastore".into(), dead.clone()],
        ]
        .concat(),
        [
            args(&table, None, true),
            vec!["--metastore".into(), dead.clone()],
        ]
        .concat(),
        [
            args(&table, None, true),
            vec!["--metastore".into(), failover.clone()],
        ]
        .concat(),
        args(&table, None, true),
        args("a.b.c", None, false),
    ];
    let o = run_many(&hms, &argv);
    let mut errors = vec![];

    for (o, what) in [
        (&o[0], format!("inspect --table {no_table}")),
        (&o[1], format!("inspect --table {no_table} --json")),
        (
            &o[2],
            "inspect --table no_such_db_for_inspect.t --json".to_string(),
        ),
    ] {
        let mut c = Check::new(what);
        c.eq("exit code", code(o), 1);
        c.eq("stdout", stdout(o), String::new());
        let line = error_line(&mut c, o);
        if !(line.contains("does not exist") && line.contains("SHOW TABLES")) {
            c.fail("the error does not say the table does not exist and how to check");
        }
        c.into(o, &mut errors);
    }
    let table_name_in_error = error_line(&mut Check::new(""), &o[0]);
    assert!(
        table_name_in_error.contains(&no_table),
        "{table_name_in_error}"
    );

    for (o, mode) in [(&o[3], "text"), (&o[4], "--json")] {
        let mut c = Check::new(format!("inspect --metastore {dead} ({mode})"));
        c.eq("exit code", code(o), 1);
        c.eq("stdout", stdout(o), String::new());
        let line = error_line(&mut c, o);
        if !line.contains(&dead) || !line.contains("is the metastore running") {
            c.fail("the error does not name the URI and what to check");
        }
        c.into(o, &mut errors);
    }

    let mut c = Check::new(format!("inspect --metastore {failover}"));
    c.eq("exit code", code(&o[5]), 0);
    if let (Some(failed_over), Some(direct)) = (parse(&o[5], &mut c), parse(&o[6], &mut c)) {
        c.eq("report", failed_over, direct);
    }
    c.into(&o[5], &mut errors);

    let mut c = Check::new("inspect --table a.b.c");
    c.eq("exit code (usage)", code(&o[7]), 2);
    c.into(&o[7], &mut errors);

    assert_no_errors(errors);
}

/// Requirement 5: HMS 3.1 and 4.x give the same report for every fixture both hold, once the
/// differences that are the clusters' and not the tool's are normalised: the HDFS authority
/// (each cluster has its own NameNode port) and, for a table HMS 4 translated (its manifest
/// `notes` say so), the table's location.
#[test]
fn hms_31_and_4x_report_the_same_facts() {
    let fx4 = fixtures();
    let fx31 = fixtures_from("FIXTURES31_MANIFEST");
    let (hms4, hms31) = (env("HMS_URI"), env("HMS31_URI"));
    assert_eq!(
        fx4.database, fx31.database,
        "both clusters hold the same database"
    );

    struct Case<'a> {
        t4: &'a FixtureTable,
        t31: &'a FixtureTable,
        spec: Option<&'a str>,
    }
    let mut cases = vec![];
    for t4 in &fx4.tables {
        let Some(t31) = fx31.tables.iter().find(|t| t.name == t4.name) else {
            continue;
        };
        cases.push(Case {
            t4,
            t31,
            spec: None,
        });
        for p in t4.partitions.iter().filter(|p| !p.spec.is_empty()) {
            if t31.partitions.iter().any(|q| q.spec == p.spec) {
                cases.push(Case {
                    t4,
                    t31,
                    spec: Some(&p.spec),
                });
            }
        }
    }
    assert!(
        cases.len() > 20,
        "only {} cases in both manifests",
        cases.len()
    );
    let argv: Vec<Vec<String>> = cases
        .iter()
        .map(|c| args(&fx4.qualified(&c.t4.name), c.spec, true))
        .collect();
    let (out4, out31) = std::thread::scope(|s| {
        let a = s.spawn(|| run_many(&hms4, &argv));
        let b = s.spawn(|| run_many(&hms31, &argv));
        (a.join().unwrap(), b.join().unwrap())
    });

    let normalise = |o: &Output, fx: &Fixtures, t: &FixtureTable, translated: bool| {
        let fix = |s: String| {
            let s = match (&t.location, translated) {
                (Some(loc), true) => s.replace(loc.as_str(), "<table location>"),
                _ => s,
            };
            s.replace(fx.default_fs.trim_end_matches('/'), "hdfs://<namenode>")
        };
        let out = fix(stdout(o));
        let mut json: Value = serde_json::from_str(&out).unwrap_or(Value::String(out));
        // A metastore on MariaDB (Hive's latin1 schema) holds fewer partitions of a table with
        // names beyond latin1 (its manifest leaves them out): each count is its manifest's.
        if json["partitions"] == t.partitions.len() {
            json["partitions"] = Value::from("<the manifest's partitions>");
        }
        (code(o), json, fix(stderr(o)))
    };
    let mut errors = vec![];
    for ((c, a), b) in cases.iter().zip(&out4).zip(&out31) {
        let translated = !c.t4.notes.is_empty() || !c.t31.notes.is_empty();
        let n4 = normalise(a, &fx4, c.t4, translated);
        let n31 = normalise(b, &fx31, c.t31, translated);
        if n4 != n31 {
            errors.push(format!(
                "inspect --table {} {} differs:\n  HMS 4.x: {n4:?}\n  HMS 3.1: {n31:?}",
                c.t4.name,
                c.spec
                    .map(|s| format!("--partition '{s}'"))
                    .unwrap_or_default()
            ));
        }
    }
    assert_no_errors(errors);
}
