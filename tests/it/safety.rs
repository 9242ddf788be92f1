//! Nothing lost when the metastore fails mid-swap, when writers come after the swap, or when
//! readers go by path (issue 12): the real binary against the real cluster `scripts/test`
//! starts, rows counted by Java orc-tools (`scripts/orc-tools`) from wherever the metastore says
//! the partition is, metastore faults injected by `common::proxy`.
//!
//! One database of this area's own (`scripts/fixtures --set basic`); every test uses its own
//! partitions. `cleanup` works on whole tables, so the tests that run it take turns.

#![cfg(feature = "cluster-tests")]

use crate::common;

use std::collections::BTreeMap;
use std::process::{Command, Output, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use crate::common::hdfs::{copy, exists, hdfs, loc};
use crate::common::orc_tools::java_row_count;
use crate::common::proxy::{self, Fault, Proxy};
use crate::common::{code, describe, env, json, rt, stdout, Fixtures, OwnDatabase};
use hive_orc_compactor::lock;
use hive_orc_compactor::metastore::{
    LockRequest, LockState, LockType, Metastore, MetastoreConfig, Partition,
};
use hive_orc_compactor::partition_spec::PartitionSpec;
use hive_orc_compactor::relocate::{self, SwapOutcome};
use hive_orc_compactor::table::{StorageInfo, TableInfo};
use serde_json::Value;

const ALTER: &str = "alter_partition_with_environment_context";
/// What the issue asks the proxy to refuse new connections for after the cut.
const REFUSE_FOR: Duration = Duration::from_secs(20);

fn db() -> &'static Fixtures {
    static DB: OnceLock<OwnDatabase> = OnceLock::new();
    &common::own_database(&DB, "safety", "basic").fixtures
}

fn metastore_at(uri: &str) -> Metastore {
    rt().block_on(async {
        let mut cfg = MetastoreConfig::new(uri).expect("a metastore URI");
        cfg.io_timeout = Duration::from_secs(60);
        Metastore::connect(cfg)
            .await
            .expect("the metastore answers")
    })
}

fn metastore() -> Metastore {
    metastore_at(&env("HMS_URI"))
}

/// Runs the tool against `hms_uri` with `failpoints` (empty: none).
fn run_with(hms_uri: &str, failpoints: &str, args: &[&str]) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_hive-orc-compactor"));
    c.args(args)
        .env_remove("HIVE_CONF_DIR")
        .env("HMS_URI", hms_uri);
    if !failpoints.is_empty() {
        c.env("FAILPOINTS", failpoints);
    }
    c.output().expect("the binary runs")
}

/// One partition under test, as the fixtures made it.
struct Part {
    db: String,
    table: String,
    spec: String,
    values: Vec<String>,
    /// Where the fixtures put it: `<table>/<k=v>`.
    home: String,
    rows: u64,
    files: u64,
}

impl Part {
    fn of(table: &str, spec: &str) -> Part {
        let fx = db();
        let p = fx.table(table).partition(spec);
        Part {
            db: fx.database.clone(),
            table: table.to_string(),
            spec: spec.to_string(),
            values: p.values.clone(),
            home: p.location.clone(),
            rows: p.rows,
            files: p.file_count,
        }
    }

    fn qualified(&self) -> String {
        format!("{}.{}", self.db, self.table)
    }

    /// `command --table T --partition P --json extra...` against `hms_uri`.
    fn run_at(&self, hms_uri: &str, failpoints: &str, command: &str, extra: &[&str]) -> Output {
        let table = self.qualified();
        let mut args = vec![
            command,
            "--table",
            &table,
            "--partition",
            &self.spec,
            "--json",
        ];
        args.extend(extra);
        run_with(hms_uri, failpoints, &args)
    }

    fn run(&self, command: &str, extra: &[&str]) -> Output {
        self.run_at(&env("HMS_URI"), "", command, extra)
    }

    /// Runs `command`, checks its exit code, returns its JSON report.
    fn ok(&self, command: &str, extra: &[&str], exit: i32) -> Value {
        let out = self.run(command, extra);
        assert_eq!(code(&out), exit, "{command} {extra:?}: {}", describe(&out));
        json(&out)
    }

    /// `cleanup --table T --older-than 0s --json extra...`: its output.
    fn cleanup(&self, extra: &[&str]) -> Output {
        let table = self.qualified();
        let mut args = vec!["cleanup", "--table", &table, "--older-than", "0s", "--json"];
        args.extend(extra);
        run_with(&env("HMS_URI"), "", &args)
    }

    fn partition(&self) -> Partition {
        rt().block_on(metastore().get_partition_by_values(&self.db, &self.table, &self.values))
            .unwrap_or_else(|e| panic!("partition {}: {e}", self.spec))
    }

    fn location(&self) -> String {
        self.partition()
            .sd
            .and_then(|sd| sd.location)
            .expect("a location")
    }

    fn params(&self) -> BTreeMap<String, String> {
        self.partition().parameters.unwrap_or_default()
    }

    /// Replaces the partition's parameters behind the tool's back, as another engine would.
    fn set_params(&self, change: impl FnOnce(&mut BTreeMap<String, String>)) {
        let mut p = self.partition();
        change(p.parameters.get_or_insert_with(BTreeMap::new));
        self.alter(p);
    }

    fn alter(&self, p: Partition) {
        let env = BTreeMap::from([("DO_NOT_UPDATE_STATS".to_string(), "true".to_string())]);
        rt().block_on(metastore().alter_partition(&self.db, &self.table, p, env))
            .expect("alter_partition");
    }

    /// Rows in the partition's current location, counted by Java orc-tools; the directory
    /// must exist.
    fn java_rows(&self) -> u64 {
        let dir = self.location();
        assert!(exists(&dir), "the partition points at {dir}, which is gone");
        java_row_count(&visible_files(&dir))
    }

    fn table_info(&self) -> TableInfo {
        let t = db().table(&self.table);
        TableInfo {
            db: self.db.clone(),
            name: self.table.clone(),
            table_type: t.table_type.clone(),
            owner: None,
            partition_keys: t.partition_keys.clone(),
            params: BTreeMap::new(),
            storage: StorageInfo {
                location: t.location.clone(),
                ..StorageInfo::none()
            },
        }
    }

    fn partition_spec(&self) -> PartitionSpec {
        PartitionSpec::from_values(&db().table(&self.table).partition_keys, &self.values)
    }
}

/// Paths of the visible files directly in `dir` (none when it does not exist).
fn visible_files(dir: &str) -> Vec<String> {
    match rt().block_on(hdfs().list(&loc(dir))).expect("listing") {
        Some(l) => l
            .files
            .iter()
            .map(|f| format!("{dir}/{}", f.name))
            .collect(),
        None => vec![],
    }
}

fn names(paths: &[String]) -> Vec<String> {
    paths
        .iter()
        .map(|p| p.rsplit('/').next().unwrap_or(p).to_string())
        .collect()
}

/// Held by every test that runs `cleanup`: it covers whole tables, so one test's cleanup
/// must not act on another's run in progress.
fn cleanup_turn() -> std::sync::MutexGuard<'static, ()> {
    static TURN: std::sync::Mutex<()> = std::sync::Mutex::new(());
    TURN.lock().unwrap_or_else(|p| p.into_inner())
}

/// Compacts `part` (exit 0, compacted); returns the new location.
fn compact(part: &Part) -> String {
    let r = part.ok("compact", &[], 0);
    assert_eq!(r["status"], "compacted", "{r}");
    r["new_location"]
        .as_str()
        .expect("new_location")
        .to_string()
}

// ---------------------------------------------------------------------------------------------
// The proxy itself.

#[test]
fn proxy_parses_thrift_messages_whole_and_only_whole() {
    // A REPLY to `ping` (seqid 7) carrying a struct { 1: string "ok" }, buffered and framed.
    let mut m = vec![0x80, 0x01, 0x00, 0x02, 0, 0, 0, 4];
    m.extend(b"ping");
    m.extend([0, 0, 0, 7]);
    m.extend([11, 0, 1, 0, 0, 0, 2, b'o', b'k', 0]);
    assert_eq!(proxy::message(&m), Some((m.len(), "ping".into(), 2)));
    for cut in 0..m.len() {
        assert_eq!(
            proxy::message(&m[..cut]),
            None,
            "{cut} bytes are not a message"
        );
    }
    let mut framed = (m.len() as u32).to_be_bytes().to_vec();
    framed.extend(&m);
    assert_eq!(
        proxy::message(&framed),
        Some((framed.len(), "ping".into(), 2))
    );
}

#[test]
fn proxy_passes_through_and_cuts_after_the_named_reply() {
    let database = &db().database;
    let through = Proxy::start(&env("HMS_URI"), Fault::PassThrough);
    let ms = metastore_at(&through.uri());
    let seen = rt().block_on(ms.databases()).expect("through the proxy");
    assert!(seen.contains(database), "{seen:?}");

    let cut = Proxy::start(
        &env("HMS_URI"),
        Fault::CutAfterReply {
            method: "get_all_databases".into(),
            nth: 2,
            refuse_for: Duration::from_secs(3),
        },
    );
    let mut cfg = MetastoreConfig::new(&cut.uri()).unwrap();
    cfg.retries = 0;
    let ms = rt().block_on(Metastore::connect(cfg)).expect("connects");
    rt().block_on(ms.databases())
        .expect("the first reply passes");
    assert!(!cut.cut());
    // The second reply is forwarded, then every connection goes.
    rt().block_on(ms.databases())
        .expect("the second reply is forwarded");
    // The proxy marks the cut after it forwarded the reply, which the client may read first.
    let t0 = Instant::now();
    while !cut.cut() {
        assert!(t0.elapsed() < Duration::from_secs(10), "never cut");
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(cut.replies(), 2);
    // The next call finds its connection cut; the one after that, a refusal.
    assert!(rt().block_on(ms.databases()).is_err(), "cut");
    assert!(rt().block_on(ms.databases()).is_err(), "refused");
    assert!(cut.refused() > 0);
    // After the refusal it relays again.
    let t0 = Instant::now();
    while rt().block_on(ms.databases()).is_err() {
        assert!(
            t0.elapsed() < Duration::from_secs(30),
            "never relayed again"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

// ---------------------------------------------------------------------------------------------
// 1. The metastore fails right after it committed the swap.

/// The issue's fault: every connection dropped right after the first alter's reply, new ones
/// refused for 20 s.
fn cut_after_the_alter() -> Proxy {
    Proxy::start(
        &env("HMS_URI"),
        Fault::CutAfterReply {
            method: ALTER.into(),
            nth: 1,
            refuse_for: REFUSE_FOR,
        },
    )
}

#[test]
fn a_metastore_cut_right_after_the_swap_leaves_the_partition_on_every_row() {
    let part = Part::of("ext_p3", "region=us/dt=2024-01-01/hour=00");
    let cut = cut_after_the_alter();
    let out = part.run_at(&cut.uri(), "", "compact", &[]);
    assert!(cut.cut(), "the swap never went through: {}", describe(&out));
    // Whatever the run reported, the partition must read every row from where it points.
    assert_eq!(part.java_rows(), part.rows, "{}", describe(&out));
    let r = json(&out);
    if code(&out) != 0 {
        // A run that could not tell must say so and keep both directories.
        let reason = r["reason"].as_str().unwrap_or_default();
        assert!(reason.contains("unknown"), "{r}");
        assert_eq!(visible_files(&part.home).len() as u64, part.files, "{r}");
    }
}

#[test]
fn set_location_reads_back_through_a_cut_until_the_metastore_shows_the_swap() {
    let part = Part::of("ext_p3", "region=us/dt=2024-01-02/hour=13");
    // A copy of the partition's files elsewhere to point it at (and back).
    let to = format!("{}/.safety-readback", part.home);
    rt().block_on(hdfs().mkdirs(&loc(&to), 0o755))
        .expect("mkdirs");
    for f in visible_files(&part.home) {
        copy(&f, &format!("{to}/{}", names(std::slice::from_ref(&f))[0]));
    }
    let cut = cut_after_the_alter();
    let ms = metastore_at(&cut.uri());
    let (table, spec) = (part.table_info(), part.partition_spec());
    let swapped = rt().block_on(relocate::set_location(
        &ms,
        &table,
        &spec,
        &loc(&part.home),
        &to,
        |p| p.clone(),
    ));
    assert!(cut.cut());
    assert!(swapped.is_ok(), "{:?}", swapped.err());
    assert_eq!(loc(&part.location()), loc(&to));
    // The decision alone, against the real metastore: it shows the new location.
    let outcome = rt().block_on(relocate::read_back(
        &metastore(),
        &table,
        &spec,
        &loc(&to),
        tokio::time::Instant::now(),
        relocate::HMS_RETRY_WINDOW,
        Duration::from_secs(10),
    ));
    assert_eq!(outcome, SwapOutcome::Swapped);
    // Back home, for the other checks of this partition.
    let ms = metastore();
    rt().block_on(relocate::set_location(
        &ms,
        &table,
        &spec,
        &loc(&to),
        &part.home,
        |p| p.clone(),
    ))
    .expect("swapped back");
    rt().block_on(hdfs().delete(&loc(&to), true))
        .expect("removed");
}

// ---------------------------------------------------------------------------------------------
// 2. Rows written after the swap.

#[test]
fn rollback_refuses_when_files_were_written_after_the_swap() {
    let part = Part::of("ext_p3", "region=eu/dt=2024-01-02/hour=00");
    let new_location = compact(&part);
    let first = visible_files(&new_location)[0].clone();
    let late = format!("{new_location}/000000_0_copy_1");
    copy(&first, &late);
    let before = (part.location(), part.params());

    let r = part.ok("rollback", &[], 3);
    assert_eq!(r["rule"], "rows_after_swap", "{r}");
    assert!(
        r.to_string().contains("000000_0_copy_1"),
        "names the file: {r}"
    );
    assert_eq!((part.location(), part.params()), before, "untouched");
    assert!(exists(&late));
}

#[test]
fn rollback_refuses_when_the_partition_changed_after_the_swap() {
    let part = Part::of("ext_p3", "region=eu/dt=2024-01-02/hour=13");
    compact(&part);
    // An engine's INSERT updated the statistics.
    part.set_params(|p| {
        let rows: u64 = p["numRows"].parse().unwrap();
        p.insert("numRows".into(), (rows + 10).to_string());
    });
    let before = (part.location(), part.params());
    let r = part.ok("rollback", &[], 3);
    assert_eq!(r["rule"], "rows_after_swap", "{r}");
    assert!(r.to_string().contains("numRows"), "names the change: {r}");
    assert_eq!((part.location(), part.params()), before, "untouched");
}

#[test]
fn cleanup_deletes_only_files_a_journal_names_and_reports_the_others() {
    let _turn = cleanup_turn();
    let part = Part::of("ext_p1", "dt=2024-01-03");
    let new_location = compact(&part);
    let outputs = visible_files(&new_location);
    part.ok("rollback", &[], 0);
    // A job that had resolved the partition to the run directory before the rollback.
    let stranger = format!("{new_location}/part-00000-straggler.orc");
    copy(&outputs[0], &stranger);

    let out = part.cleanup(&[]);
    let r = json(&out);
    assert!(
        exists(&stranger),
        "a file no journal names was deleted: {r}"
    );
    for o in &outputs {
        assert!(!exists(o), "{o}: the journal's output stays: {r}");
    }
    let run = &r["partitions"][0]["runs"][0];
    assert!(
        run["unknown_files"]
            .to_string()
            .contains("part-00000-straggler.orc"),
        "reported: {r}"
    );
    // The partition itself never changed.
    assert_eq!(loc(&part.location()), loc(&part.home));
    assert_eq!(part.java_rows(), part.rows);
}

// ---------------------------------------------------------------------------------------------
// 3. Late files stay adoptable.

#[test]
fn late_files_stay_listed_and_adoptable_whatever_runs_first() {
    let _turn = cleanup_turn();
    let part = Part::of("managed_p1", "dt=2024-01-01");
    compact(&part);
    let first = visible_files(&part.home)[0].clone();
    let late_rows = java_row_count(std::slice::from_ref(&first));
    let late = format!("{}/late-0.orc", part.home);
    copy(&first, &late);

    let listed = |what: &str, v: &Value| {
        assert!(v.to_string().contains("late-0.orc"), "{what} lists it: {v}");
    };
    // In any order, any number of times: cleanup reports it and does not forget it.
    listed("inspect", &part.ok("inspect", &[], 0));
    listed("first cleanup", &json(&part.cleanup(&[])));
    listed("second cleanup", &json(&part.cleanup(&[])));
    listed("verify", &json(&part.run("verify", &[])));
    listed("inspect after cleanup", &part.ok("inspect", &[], 0));
    assert!(exists(&late));

    let adopted = json(&part.cleanup(&["--adopt-late-files"]));
    assert!(
        adopted["partitions"][0]["runs"][0]["adopted"]
            .to_string()
            .contains("late-0.orc"),
        "{adopted}"
    );
    assert_eq!(part.java_rows(), part.rows + late_rows);
}

#[test]
fn late_files_go_only_when_discarded_by_name() {
    let _turn = cleanup_turn();
    let part = Part::of("managed_p1", "dt=2024-01-02");
    compact(&part);
    let first = visible_files(&part.home)[0].clone();
    let late = format!("{}/late-1.orc", part.home);
    copy(&first, &late);
    part.cleanup(&[]);
    part.cleanup(&[]);
    assert!(exists(&late), "kept until adopted or discarded");
    let out = part.cleanup(&["--discard-late-files"]);
    assert_eq!(code(&out), 0, "{}", describe(&out));
    let r = json(&out);
    assert!(
        r["partitions"][0]["runs"][0]["discarded"]
            .to_string()
            .contains("late-1.orc"),
        "{r}"
    );
    assert!(!exists(&late));
    assert_eq!(part.java_rows(), part.rows);
}

// ---------------------------------------------------------------------------------------------
// 4. Readers that go by path.

#[test]
fn cleanup_rehome_brings_the_partition_back_to_its_canonical_directory() {
    let _turn = cleanup_turn();
    let part = Part::of("legacy_colnames", "dt=2015-06-01");
    let new_location = compact(&part);
    let out = part.cleanup(&["--rehome"]);
    assert_eq!(code(&out), 0, "{}", describe(&out));
    let r = json(&out);
    // The metastore points at <table>/<k=v> again, which holds every row and nothing stale.
    assert_eq!(loc(&part.location()), loc(&part.home), "{r}");
    assert_eq!(part.java_rows(), part.rows, "{r}");
    assert_eq!(
        visible_files(&part.home).len(),
        visible_files(&new_location).len(),
        "the home holds the compacted files only: {r}"
    );
    assert_eq!(part.params()["numRows"], part.rows.to_string());
    // The run directory goes with a later cleanup.
    let out = part.cleanup(&[]);
    assert_eq!(code(&out), 0, "{}", describe(&out));
    assert!(!exists(&new_location), "{}", describe(&out));
    assert_eq!(part.java_rows(), part.rows);
    part.ok("verify", &[], 0);
}

#[test]
fn after_a_managed_drop_partition_cleanup_leaves_nothing_msck_could_bring_back() {
    let _turn = cleanup_turn();
    let part = Part::of("managed_p3", "year=2024/month=01/day=01");
    compact(&part);
    // DROP PARTITION on a managed table: the metastore deletes the directory it points at (the
    // run directory); the replaced files are still in <table>/<k=v>.
    rt().block_on(metastore().drop_partition(&part.db, &part.table, &part.values, true))
        .expect("drop partition");
    assert!(
        !visible_files(&part.home).is_empty(),
        "the old files stay at first"
    );
    let out = part.cleanup(&[]);
    assert_eq!(code(&out), 0, "{}", describe(&out));
    // MSCK REPAIR TABLE would re-add <table>/<k=v> with whatever visible files it holds.
    assert_eq!(
        visible_files(&part.home),
        Vec::<String>::new(),
        "stale rows left for MSCK: {}",
        describe(&out)
    );
}

// ---------------------------------------------------------------------------------------------
// 5. Cleanup acts on what is true now.

/// The same directory under another name of the same NameNode.
fn respelled(location: &str) -> String {
    let l = loc(location);
    let s = l.to_string();
    assert!(s.contains("127.0.0.1"), "{s}");
    s.replacen("127.0.0.1", "localhost", 1)
}

#[test]
fn cleanup_knows_one_directory_under_two_names() {
    let _turn = cleanup_turn();
    let part = Part::of("managed_p1", "dt=2024-01-03");
    compact(&part);
    // An admin points the partition back at its old files by hand (ALTER TABLE ... SET
    // LOCATION), spelling the same directory otherwise.
    let mut p = part.partition();
    if let Some(sd) = p.sd.as_mut() {
        sd.location = Some(respelled(&part.home));
    }
    part.alter(p);
    let out = part.cleanup(&[]);
    assert_eq!(
        visible_files(&part.home).len() as u64,
        part.files,
        "the live files were deleted as replaced inputs: {}",
        describe(&out)
    );
    assert_eq!(part.java_rows(), part.rows, "{}", describe(&out));
    assert_eq!(code(&out), 0, "{}", describe(&out));
}

#[test]
fn cleanup_keeps_the_inputs_while_the_live_directory_lacks_an_output() {
    let _turn = cleanup_turn();
    let part = Part::of("ext_p1", "dt=2024-01-04");
    let new_location = compact(&part);
    // Someone removed an output behind the tool's back: the inputs are the only copy of its rows.
    let outputs = visible_files(&new_location);
    rt().block_on(hdfs().delete(&loc(&outputs[0]), false))
        .expect("delete");
    let out = part.cleanup(&[]);
    assert_eq!(
        visible_files(&part.home).len() as u64,
        part.files,
        "inputs deleted: {}",
        describe(&out)
    );
    assert!(
        stdout(&out).contains(&names(&outputs[..1])[0]),
        "names the missing output: {}",
        describe(&out)
    );
}

// ---------------------------------------------------------------------------------------------
// 6. Readers never wait for a whole run.

fn lock_request(part: &Part, kind: LockType) -> LockRequest {
    let target = lock::Target {
        db: &part.db,
        table: &part.table,
        partition: &part.spec,
    };
    let someone = lock::LockOptions {
        user: "hive-query".into(),
        hostname: "elsewhere".into(),
        ..lock::LockOptions::default()
    };
    lock::request(&target, kind, &someone)
}

/// Another client's lock request: its state at once (withdrawn before returning).
fn other_lock(part: &Part, kind: LockType) -> LockState {
    let ms = metastore();
    rt().block_on(async {
        let r = ms.lock(lock_request(part, kind)).await.expect("lock");
        ms.unlock(r.lockid).await.expect("unlock");
        r.state
    })
}

#[cfg(feature = "failpoints")]
#[test]
fn a_reader_is_granted_its_lock_at_once_during_staging() {
    let part = Part::of("ext_p3", "region=eu/dt=2024-01-01/hour=00");
    let table = part.qualified();
    let mut run = Command::new(env!("CARGO_BIN_EXE_hive-orc-compactor"))
        .args([
            "compact",
            "--table",
            &table,
            "--partition",
            &part.spec,
            "--json",
        ])
        .env_remove("HIVE_CONF_DIR")
        .env("HMS_URI", env("HMS_URI"))
        .env("FAILPOINTS", "compact::after-stage=sleep(20000)")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the binary starts");
    // Staging has begun once the staging directory shows.
    let work = format!("{}/.hive-orc-compactor", part.home);
    let t0 = Instant::now();
    loop {
        let staging = rt()
            .block_on(hdfs().list(&loc(&work)))
            .expect("listing")
            .is_some_and(|l| l.subdirs.iter().any(|d| d.ends_with(".staging")));
        if staging {
            break;
        }
        assert!(
            run.try_wait().expect("wait").is_none(),
            "the run ended early"
        );
        assert!(t0.elapsed() < Duration::from_secs(60), "never staged");
        std::thread::sleep(Duration::from_millis(50));
    }
    let reader = other_lock(&part, LockType::SHARED_READ);
    let writer = other_lock(&part, LockType::EXCLUSIVE);
    let out = run.wait_with_output().expect("the run ends");
    assert_eq!(reader, LockState::ACQUIRED, "a reader waited for staging");
    assert_eq!(writer, LockState::WAITING, "a writer got in during staging");
    assert_eq!(code(&out), 0, "{}", describe(&out));
    assert_eq!(part.java_rows(), part.rows);
}

// ---------------------------------------------------------------------------------------------
// 7. Smaller holes.

#[test]
fn a_young_empty_file_is_a_write_in_progress_and_the_partition_is_busy() {
    let part = Part::of("ext_p3", "region=us/dt=2024-01-02/hour=00");
    let writing = format!("{}/000099_0", part.home);
    rt().block_on(async {
        let mut w = hdfs().create(&loc(&writing), 0o644).await.expect("create");
        w.close().await.expect("close");
    });
    let before = (part.location(), part.params());
    let r = part.ok("compact", &[], 4);
    assert_eq!(r["status"], "busy", "{r}");
    assert!(r["reason"].to_string().contains("000099_0"), "{r}");
    assert_eq!((part.location(), part.params()), before);
    assert!(exists(&writing));
}

#[test]
fn when_the_row_count_was_wrong_every_statistic_about_the_rows_goes() {
    let part = Part::of("ext_p3", "region=us/dt=2024-01-01/hour=13");
    part.set_params(|p| {
        p.insert("numRows".into(), (part.rows + 7).to_string());
        p.insert("rawDataSize".into(), "123456".into());
        p.insert(
            "COLUMN_STATS_ACCURATE".into(),
            r#"{"BASIC_STATS":"true","COLUMN_STATS":{"id":"true"}}"#.into(),
        );
    });
    compact(&part);
    let params = part.params();
    assert_eq!(params["numRows"], part.rows.to_string(), "{params:?}");
    assert!(!params.contains_key("rawDataSize"), "{params:?}");
    assert!(!params.contains_key("COLUMN_STATS_ACCURATE"), "{params:?}");
}

#[test]
fn files_readable_by_different_people_are_never_merged_into_one() {
    let part = Part::of("ext_p3", "region=eu/dt=2024-01-01/hour=13");
    let private = visible_files(&part.home)[0].clone();
    rt().block_on(hdfs().set_permission(&loc(&private), 0o600))
        .expect("chmod");
    let out = part.run("compact", &[]);
    let r = json(&out);
    match code(&out) {
        3 => {
            assert_eq!(r["rule"], "mixed_permissions", "{r}");
            assert_eq!(loc(&part.location()), loc(&part.home));
        }
        0 => {
            // Separate outputs: the private file's rows only in a file as private as it was.
            let dir = part.location();
            let modes: Vec<u16> = visible_files(&dir)
                .iter()
                .map(|f| {
                    rt().block_on(hdfs().status(&loc(f)))
                        .unwrap()
                        .unwrap()
                        .permission
                })
                .collect();
            assert!(modes.contains(&0o600), "{modes:?}: {r}");
            assert!(modes.contains(&0o644), "{modes:?}: {r}");
        }
        _ => panic!("{}", describe(&out)),
    }
}

#[test]
fn files_with_different_acls_are_never_merged_into_one() {
    use hdfs_native::acl::{AclEntry, AclEntryScope, AclEntryType, FsAction};
    let part = Part::of("legacy_colnames", "dt=2015-06-02");
    let shared = loc(&visible_files(&part.home)[0]);
    let bob = AclEntry::new(
        AclEntryType::User,
        AclEntryScope::Access,
        FsAction::Read,
        Some("bob".into()),
    );
    rt().block_on(async {
        let client = hdfs().client(&shared).expect("client");
        client
            .modify_acl_entries(&shared.path, vec![bob])
            .await
            .expect("setfacl")
    });
    let before = (part.location(), part.params());
    // A dry run reads the ACLs while planning, a run while it stages: the same refusal.
    for extra in [&["--dry-run"][..], &[]] {
        let r = part.ok("compact", extra, 3);
        assert_eq!(r["rule"], "mixed_permissions", "{extra:?}: {r}");
        assert!(r["reason"].to_string().contains("ACL"), "{extra:?}: {r}");
        assert_eq!((part.location(), part.params()), before, "untouched");
    }
    // What the run staged before the refusal is gone.
    let work = format!("{}/.hive-orc-compactor", part.home);
    let left = rt().block_on(hdfs().list(&loc(&work))).expect("listing");
    assert!(
        left.as_ref().is_none_or(|l| l.subdirs.is_empty()),
        "{left:?}"
    );
}

/// Two hosts compact one partition with no lock manager between them (`--no-lock`): the first
/// pauses before its swap while the second runs whole; whichever swaps second finds the
/// partition moved and stops busy, its copy removed, and every row stays readable.
#[cfg(feature = "failpoints")]
#[test]
fn two_unlocked_runs_on_one_partition_swap_once() {
    // Cleanup works on whole tables: none may run while the first run's copy is published.
    let _turn = cleanup_turn();
    let part = Part::of("managed_p3", "year=2024/month=02/day=29");
    let first = spawn_compact(&part, "compact::before-swap=sleep(20000)", &["--no-lock"]);
    // The first run has staged and verified once its run directory is published.
    let work = format!("{}/.hive-orc-compactor", part.home);
    let t0 = Instant::now();
    while !has_published_run(&work) {
        assert!(t0.elapsed() < Duration::from_secs(120), "never published");
        std::thread::sleep(Duration::from_millis(50));
    }
    let second = part.run("compact", &["--no-lock"]);
    let first = first.wait_with_output().expect("the run ends");
    let mut codes = [code(&first), code(&second)];
    codes.sort();
    assert_eq!(codes, [0, 4], "{}\n{}", describe(&first), describe(&second));
    let loser = if code(&first) == 4 { &first } else { &second };
    assert_eq!(json(loser)["status"], "busy", "{}", describe(loser));
    assert_eq!(part.java_rows(), part.rows);
}

#[test]
fn cleanup_removes_the_copy_of_a_swap_an_unlocked_twin_overwrote() {
    let _turn = cleanup_turn();
    let part = Part::of("managed_p3", "year=2024/month=01/day=02");
    // What two unlocked runs that both re-read the partition before either altered it leave:
    // two journals of one old location, the partition on the later run's directory.
    let overwritten = compact(&part);
    let mut p = part.partition();
    if let Some(sd) = p.sd.as_mut() {
        sd.location = Some(part.home.clone());
    }
    part.alter(p);
    let standing = compact(&part);
    let out = part.cleanup(&[]);
    assert_eq!(code(&out), 0, "{}", describe(&out));
    assert!(!exists(&overwritten), "{}", describe(&out));
    assert!(exists(&standing));
    assert_eq!(loc(&part.location()), loc(&standing));
    assert_eq!(visible_files(&part.home), Vec::<String>::new());
    assert_eq!(part.java_rows(), part.rows);
}

/// `compact --table T --partition P --json extra...` started in the background with
/// `failpoints`.
fn spawn_compact(part: &Part, failpoints: &str, extra: &[&str]) -> std::process::Child {
    let table = part.qualified();
    Command::new(env!("CARGO_BIN_EXE_hive-orc-compactor"))
        .args([
            "compact",
            "--table",
            &table,
            "--partition",
            &part.spec,
            "--json",
        ])
        .args(extra)
        .env_remove("HIVE_CONF_DIR")
        .env("HMS_URI", env("HMS_URI"))
        .env("FAILPOINTS", failpoints)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the binary starts")
}

/// Whether a run directory (not a staging one) shows in the work directory `work`.
fn has_published_run(work: &str) -> bool {
    rt().block_on(hdfs().list(&loc(work)))
        .expect("listing")
        .is_some_and(|l| l.subdirs.iter().any(|d| !d.ends_with(".staging")))
}
