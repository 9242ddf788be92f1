//! Integration tests of the metastore client against a REAL running metastore.
//!
//! Needs `HMS_URI` (thrift://host:port) and `HDFS_URL` (hdfs://host:port, for table
//! locations). With the project's local cluster:
//!
//!     scripts/cluster start && eval "$(scripts/cluster env)" &&
//!         cargo test --features cluster-tests --test it metastore::
//!
//! Each test makes its own database (unique name) through the client and drops it at the end.

#![cfg(feature = "cluster-tests")]

use crate::common;

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crate::common::metastore::config;
use futures::FutureExt;
use hive_orc_compactor::metastore::{
    FieldSchema, LockComponent, LockLevel, LockRequest, LockState, LockType, Metastore,
    MetastoreError, Order, Partition, SerDeInfo, SkewedInfo, StorageDescriptor, Table, Transport,
    DO_NOT_UPDATE_STATS,
};

const ORC_INPUT: &str = "org.apache.hadoop.hive.ql.io.orc.OrcInputFormat";
const ORC_OUTPUT: &str = "org.apache.hadoop.hive.ql.io.orc.OrcOutputFormat";
const ORC_SERDE: &str = "org.apache.hadoop.hive.ql.io.orc.OrcSerde";

fn required_env(name: &str) -> String {
    match std::env::var(name) {
        Ok(v) if !v.trim().is_empty() => v.trim().to_owned(),
        _ => panic!(
            "{name} is not set: these tests need a running metastore and HDFS. Start them with \
             `scripts/cluster start`, then `eval \"$(scripts/cluster env)\"` and run \
             `cargo test --features cluster-tests --test it metastore::` again"
        ),
    }
}

fn hms_uri() -> String {
    required_env("HMS_URI")
}

fn hdfs_url() -> String {
    required_env("HDFS_URL").trim_end_matches('/').to_owned()
}

async fn connect() -> Metastore {
    Metastore::connect(config(&hms_uri()))
        .await
        .unwrap_or_else(|e| panic!("{e}"))
}

fn unique(prefix: &str) -> String {
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    format!(
        "{prefix}_{}_{}",
        std::process::id(),
        nanos % 1_000_000_000_000
    )
}

fn col(name: &str, ty: &str, comment: Option<&str>) -> FieldSchema {
    FieldSchema {
        name: Some(name.into()),
        type_: Some(ty.into()),
        comment: comment.map(Into::into),
    }
}

fn map(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// A storage descriptor with every part filled in that a round trip could lose.
fn orc_sd(location: &str) -> StorageDescriptor {
    StorageDescriptor {
        cols: Some(vec![
            col("id", "bigint", Some("the id")),
            col("name", "string", None),
            col("tags", "map<string,array<int>>", Some("nested")),
        ]),
        location: Some(location.into()),
        input_format: Some(ORC_INPUT.into()),
        output_format: Some(ORC_OUTPUT.into()),
        compressed: Some(false),
        num_buckets: Some(-1),
        serde_info: Some(SerDeInfo {
            name: None,
            serialization_lib: Some(ORC_SERDE.into()),
            parameters: Some(map(&[
                ("serialization.format", "1"),
                ("x.custom", "ü \"q\""),
            ])),
            description: None,
            serializer_class: None,
            deserializer_class: None,
            serde_type: None,
        }),
        bucket_cols: Some(vec![]),
        sort_cols: Some(vec![Order {
            col: Some("id".into()),
            order: Some(1),
        }]),
        parameters: Some(map(&[("sd.param", "v")])),
        skewed_info: Some(SkewedInfo {
            skewed_col_names: Some(vec!["name".into()]),
            skewed_col_values: Some(vec![vec!["a".into()], vec!["b".into()]]),
            skewed_col_value_location_maps: Some(BTreeMap::new()),
        }),
        stored_as_sub_directories: Some(false),
    }
}

fn external_orc_table(db: &str, name: &str, location: &str) -> Table {
    common::external_table(
        db,
        name,
        "hive-orc-compactor-test",
        orc_sd(location),
        vec![col("dt", "string", None), col("h", "int", None)],
        map(&[("EXTERNAL", "TRUE"), ("table.param", "t")]),
    )
}

fn partition(db: &str, table: &str, values: &[&str], location: &str) -> Partition {
    common::new_partition(
        db,
        table,
        values,
        orc_sd(location),
        map(&[
            ("numFiles", "3"),
            ("totalSize", "300"),
            ("numRows", "30"),
            ("custom.key", "kept"),
        ]),
    )
}

/// A database of its own with one partitioned external ORC table and three partitions;
/// everything is dropped afterwards, even when the test body panics.
struct Fixture {
    ms: Metastore,
    db: String,
    table: String,
    table_location: String,
}

async fn with_fixture<F, Fut>(body: F)
where
    F: FnOnce(Arc<Fixture>) -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    let ms = connect().await;
    let db = unique("hoc_ms_test");
    let db_location = format!("{}/tmp/hoc-ms-test/{db}.db", hdfs_url());
    ms.create_database(common::database(
        &db,
        &db_location,
        "hive-orc-compactor-test",
        Some("hive-orc-compactor metastore test"),
    ))
    .await
    .unwrap_or_else(|e| panic!("{e}"));

    let table = "events".to_owned();
    let table_location = format!("{db_location}/{table}");
    let result = async {
        ms.create_table(external_orc_table(&db, &table, &table_location))
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        let parts = [
            ("2024-01-01", "0"),
            ("2024-01-01", "1"),
            ("2024-01-02", "0"),
        ]
        .iter()
        .map(|(dt, h)| {
            partition(
                &db,
                &table,
                &[dt, h],
                &format!("{table_location}/dt={dt}/h={h}"),
            )
        })
        .collect();
        assert_eq!(
            ms.add_partitions(parts)
                .await
                .unwrap_or_else(|e| panic!("{e}")),
            3
        );
        let fixture = Arc::new(Fixture {
            ms: ms.clone(),
            db: db.clone(),
            table: table.clone(),
            table_location: table_location.clone(),
        });
        std::panic::AssertUnwindSafe(body(fixture))
            .catch_unwind()
            .await
    }
    .await;

    // The table is external: dropping it keeps its files, so drop the database with data.
    let _ = ms.drop_table(&db, &table, true).await;
    if let Err(e) = ms.drop_database(&db, true, true).await {
        eprintln!("cleanup: dropping database {db} failed: {e}");
    }
    if let Err(panic) = result {
        std::panic::resume_unwind(panic);
    }
}

#[tokio::test]
async fn connects_and_lists_databases() {
    let ms = connect().await;
    let expected = hms_uri()
        .parse::<hive_orc_compactor::metastore::MetastoreUri>()
        .unwrap();
    assert_eq!(ms.uri(), expected.to_string());
    let dbs = ms.databases().await.unwrap();
    assert!(dbs.iter().any(|d| d == "default"), "{dbs:?}");
    let default = ms.database("default").await.unwrap();
    assert_eq!(default.name.as_deref(), Some("default"));
}

#[tokio::test]
async fn reads_go_through_request_style_calls_or_their_legacy_fallbacks() {
    with_fixture(|fx| async move {
        let ms = &fx.ms;
        // Twice each: the second round must use what the first learnt about this server.
        for round in 0..2 {
            let t = ms.get_table(&fx.db, &fx.table).await.unwrap();
            assert_eq!(t.table_name.as_deref(), Some(fx.table.as_str()));
            assert_eq!(t.table_type.as_deref(), Some("EXTERNAL_TABLE"));
            assert_eq!(
                t.sd.as_ref().unwrap().location.as_deref(),
                Some(fx.table_location.as_str())
            );

            let names = ms.partition_names(&fx.db, &fx.table).await.unwrap();
            let mut sorted = names.clone();
            sorted.sort();
            assert_eq!(
                sorted,
                [
                    "dt=2024-01-01/h=0",
                    "dt=2024-01-01/h=1",
                    "dt=2024-01-02/h=0"
                ]
            );

            let by_values = ms
                .get_partition_by_values(&fx.db, &fx.table, &["2024-01-01".into(), "1".into()])
                .await
                .unwrap();
            let by_name = ms
                .get_partition_by_name(&fx.db, &fx.table, "dt=2024-01-01/h=1")
                .await
                .unwrap();
            assert_eq!(by_values, by_name);

            let all = ms.partitions(&fx.db, &fx.table, None).await.unwrap();
            assert_eq!(all.len(), 3);
            assert_eq!(
                ms.partitions(&fx.db, &fx.table, Some(2))
                    .await
                    .unwrap()
                    .len(),
                2
            );

            let filtered = ms
                .partitions_by_filter(&fx.db, &fx.table, "dt = \"2024-01-01\"", None)
                .await
                .unwrap();
            assert_eq!(filtered.len(), 2);
            assert!(filtered.contains(&by_name));

            let tables = ms.tables(&fx.db, None).await.unwrap();
            assert_eq!(tables, std::slice::from_ref(&fx.table));
            assert_eq!(
                ms.tables(&fx.db, Some("ev*")).await.unwrap(),
                std::slice::from_ref(&fx.table)
            );
            assert!(ms.tables(&fx.db, Some("nope*")).await.unwrap().is_empty());

            eprintln!(
                "round {round}: {} lacks {:?}",
                ms.uri(),
                ms.unsupported_methods().await
            );
        }
    })
    .await;
}

#[tokio::test]
async fn missing_table_and_partition_are_not_found() {
    with_fixture(|fx| async move {
        let ms = &fx.ms;
        let e = ms.get_table(&fx.db, "no_such_table").await.unwrap_err();
        assert!(matches!(e, MetastoreError::NotFound { .. }), "{e}");
        let e = ms.get_table("no_such_db_hoc", "t").await.unwrap_err();
        assert!(matches!(e, MetastoreError::NotFound { .. }), "{e}");
        let e = ms
            .get_partition_by_values(&fx.db, &fx.table, &["1999-01-01".into(), "0".into()])
            .await
            .unwrap_err();
        assert!(matches!(e, MetastoreError::NotFound { .. }), "{e}");
        let e = ms
            .get_partition_by_name(&fx.db, &fx.table, "dt=1999-01-01/h=0")
            .await
            .unwrap_err();
        assert!(matches!(e, MetastoreError::NotFound { .. }), "{e}");
        eprintln!("not found reads: {e}");
        // The connection is still good after the server's exceptions.
        ms.get_table(&fx.db, &fx.table).await.unwrap();
    })
    .await;
}

#[tokio::test]
async fn alter_partition_round_trip_changes_only_what_we_changed() {
    with_fixture(|fx| async move {
        let ms = &fx.ms;
        let values = vec!["2024-01-02".to_string(), "0".to_string()];
        let before = ms
            .get_partition_by_values(&fx.db, &fx.table, &values)
            .await
            .unwrap();
        let sd = before.sd.as_ref().unwrap();
        assert_eq!(sd.cols.as_ref().unwrap().len(), 3);
        assert_eq!(
            sd.serde_info.as_ref().unwrap().parameters.as_ref().unwrap()["x.custom"],
            "ü \"q\""
        );
        assert_eq!(
            sd.skewed_info.as_ref().unwrap().skewed_col_names.as_deref(),
            Some(&["name".to_string()][..])
        );
        assert_eq!(before.parameters.as_ref().unwrap()["custom.key"], "kept");
        // An absent field must stay absent (not become "" through the client).
        assert_eq!(sd.serde_info.as_ref().unwrap().name, None);

        let mut changed = before.clone();
        changed
            .parameters
            .as_mut()
            .unwrap()
            .insert("hive-orc-compactor.test".into(), "1".into());
        ms.alter_partition(
            &fx.db,
            &fx.table,
            changed.clone(),
            map(&[(DO_NOT_UPDATE_STATS, "true")]),
        )
        .await
        .unwrap();

        let after = ms
            .get_partition_by_name(&fx.db, &fx.table, "dt=2024-01-02/h=0")
            .await
            .unwrap();
        // Whole-struct comparison: sd, cols, serde, skew, privileges, stats parameters, times.
        assert_eq!(after, changed, "\nbefore: {before:#?}\nafter: {after:#?}");
        let mut expected_before = after.clone();
        expected_before
            .parameters
            .as_mut()
            .unwrap()
            .remove("hive-orc-compactor.test");
        assert_eq!(expected_before, before);
        // The other partitions are untouched.
        let other = ms
            .get_partition_by_name(&fx.db, &fx.table, "dt=2024-01-01/h=0")
            .await
            .unwrap();
        assert!(!other
            .parameters
            .unwrap()
            .contains_key("hive-orc-compactor.test"));
    })
    .await;
}

#[tokio::test]
async fn fails_over_from_a_refusing_uri_to_the_real_one() {
    let real = hms_uri();
    let cfg = config(&format!(
        "thrift://127.0.0.1:{},{real}",
        common::free_port()
    ));
    let ms = Metastore::connect(cfg).await.unwrap();
    assert_eq!(
        ms.uri(),
        real.parse::<hive_orc_compactor::metastore::MetastoreUri>()
            .unwrap()
            .to_string()
    );
    assert!(ms.databases().await.unwrap().contains(&"default".into()));
}

#[tokio::test]
async fn nothing_listening_is_unreachable_and_names_the_uris() {
    let port = common::free_port();
    let e = Metastore::connect(config(&format!("thrift://127.0.0.1:{port}")))
        .await
        .err()
        .expect("nothing listens there");
    assert!(matches!(e, MetastoreError::Unreachable { .. }), "{e}");
    let msg = e.to_string();
    assert!(msg.contains(&format!("thrift://127.0.0.1:{port}")), "{msg}");
    assert!(msg.contains("hive.metastore.uris"), "{msg}");
}

/// Accepts connections and never answers: a hung metastore.
fn silent_listener() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for s in listener.incoming().flatten() {
            held.push(s);
        }
    });
    port
}

#[tokio::test]
async fn a_metastore_that_never_answers_times_out() {
    let port = silent_listener();
    let mut cfg = config(&format!("thrift://127.0.0.1:{port}"));
    cfg.io_timeout = Duration::from_millis(800);
    let started = Instant::now();
    let e = Metastore::connect(cfg).await.err().expect("never answers");
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    assert!(matches!(e, MetastoreError::Unreachable { .. }), "{e}");
    assert!(e.to_string().contains("did not answer within"), "{e}");

    // ...and failover passes over it to the real one.
    let mut cfg = config(&format!("thrift://127.0.0.1:{port},{}", hms_uri()));
    cfg.io_timeout = Duration::from_millis(800);
    let ms = Metastore::connect(cfg).await.unwrap();
    assert!(!ms.uri().contains(&port.to_string()));
}

/// Forwards to the real metastore until frozen; then swallows what the client sends, so the
/// server never sees the call and the client waits.
fn freezable_proxy(upstream: &str) -> (u16, Arc<AtomicBool>) {
    let upstream = upstream.trim_start_matches("thrift://").to_owned();
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let frozen = Arc::new(AtomicBool::new(false));
    let f = frozen.clone();
    std::thread::spawn(move || {
        for client in listener.incoming().flatten() {
            let server = TcpStream::connect(&upstream).unwrap();
            let (mut c_in, mut s_out) = (client.try_clone().unwrap(), server.try_clone().unwrap());
            let (mut s_in, mut c_out) = (server, client);
            let f = f.clone();
            std::thread::spawn(move || {
                let mut buf = [0u8; 65536];
                while let Ok(n) = c_in.read(&mut buf) {
                    if n == 0 {
                        break;
                    }
                    if !f.load(Ordering::SeqCst) && s_out.write_all(&buf[..n]).is_err() {
                        break;
                    }
                }
                let _ = s_out.shutdown(Shutdown::Both);
            });
            std::thread::spawn(move || {
                let _ = std::io::copy(&mut s_in, &mut c_out);
            });
        }
    });
    (port, frozen)
}

#[tokio::test]
async fn a_call_without_an_answer_times_out_and_says_whether_it_may_have_applied() {
    with_fixture(|fx| async move {
        let (port, frozen) = freezable_proxy(&hms_uri());
        let mut cfg = config(&format!("thrift://127.0.0.1:{port}"));
        cfg.io_timeout = Duration::from_millis(1000);
        cfg.retries = 0;
        // Two connections through the proxy: one for a read, one for a write.
        let reader = Metastore::connect(cfg.clone()).await.unwrap();
        let writer = Metastore::connect(cfg).await.unwrap();
        let part = reader
            .get_partition_by_name(&fx.db, &fx.table, "dt=2024-01-01/h=0")
            .await
            .unwrap();

        frozen.store(true, Ordering::SeqCst);
        let started = Instant::now();
        let (read, write) = tokio::join!(
            reader.get_table(&fx.db, &fx.table),
            // Writes are never resent, and their outcome is reported as unknown.
            writer.alter_partition(&fx.db, &fx.table, part, BTreeMap::new()),
        );
        assert!(started.elapsed() < Duration::from_secs(5));
        let e = read.unwrap_err();
        assert!(
            matches!(
                e,
                MetastoreError::Timeout {
                    outcome_unknown: false,
                    ..
                }
            ),
            "{e}"
        );
        let e = write.unwrap_err();
        assert!(
            matches!(
                e,
                MetastoreError::Timeout {
                    outcome_unknown: true,
                    ..
                }
            ),
            "{e}"
        );
        eprintln!("timeout: {e}");
    })
    .await;
}

#[tokio::test]
async fn a_broken_connection_is_replaced_and_reads_retried() {
    with_fixture(|fx| async move {
        let (port, frozen) = freezable_proxy(&hms_uri());
        let mut cfg = config(&format!("thrift://127.0.0.1:{port}"));
        cfg.io_timeout = Duration::from_millis(1000);
        cfg.retries = 2;
        cfg.retry_backoff = Duration::from_millis(50);
        let ms = Metastore::connect(cfg).await.unwrap();
        ms.get_table(&fx.db, &fx.table).await.unwrap();
        // The first attempt hangs; unfreeze while it waits, so the retry's new connection
        // works.
        frozen.store(true, Ordering::SeqCst);
        let unfreeze = {
            let frozen = frozen.clone();
            tokio::spawn(async move {
                tokio::time::sleep(Duration::from_millis(300)).await;
                frozen.store(false, Ordering::SeqCst);
            })
        };
        let t = ms.get_table(&fx.db, &fx.table).await.unwrap();
        unfreeze.await.unwrap();
        assert_eq!(t.table_name.as_deref(), Some(fx.table.as_str()));
    })
    .await;
}

#[tokio::test]
async fn a_transport_mismatch_is_reported_as_such() {
    let mut cfg = config(&hms_uri());
    cfg.transport = Transport::Framed;
    cfg.io_timeout = Duration::from_secs(5);
    let e = Metastore::connect(cfg)
        .await
        .err()
        .expect("server is buffered");
    assert!(matches!(e, MetastoreError::Unreachable { .. }), "{e}");
    assert!(e.to_string().contains("transport"), "{e}");
}

#[tokio::test]
async fn locks_work_or_fail_as_the_server_configuration_says() {
    with_fixture(|fx| async move {
        let ms = &fx.ms;
        let request = LockRequest {
            component: vec![LockComponent {
                type_: LockType::EXCLUSIVE,
                level: LockLevel::PARTITION,
                dbname: fx.db.clone(),
                tablename: Some(fx.table.clone()),
                partitionname: Some("dt=2024-01-01/h=0".into()),
                operation_type: None,
                is_transactional: Some(false),
                is_dynamic_partition_write: None,
            }],
            txnid: None,
            user: "hive-orc-compactor-test".into(),
            hostname: "localhost".into(),
            agent_info: Some("hive-orc-compactor-test".into()),
            zero_wait_read_enabled: None,
            exclusive_c_t_a_s: None,
            lockless_reads_enabled: None,
        };
        match ms.lock(request).await {
            Ok(resp) => {
                eprintln!("lock: {resp:?}");
                assert_eq!(resp.state, LockState::ACQUIRED);
                let checked = ms.check_lock(resp.lockid).await.unwrap();
                assert_eq!(checked.state, LockState::ACQUIRED);
                ms.heartbeat(resp.lockid).await.unwrap();
                ms.unlock(resp.lockid).await.unwrap();
                let e = ms.check_lock(resp.lockid).await.unwrap_err();
                assert!(matches!(e, MetastoreError::NotFound { .. }), "{e}");
            }
            // No transaction manager configured: the documented "no lock support" answer.
            Err(e @ MetastoreError::Internal { .. }) => eprintln!("lock unsupported: {e}"),
            Err(e) => panic!("{e}"),
        }
    })
    .await;
}
