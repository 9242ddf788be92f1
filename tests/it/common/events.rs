//! The metastore's notification log as the tests read it: what a listener such as Impala's
//! catalog or Hive replication learns of the tool's swaps. `scripts/cluster` runs every
//! metastore with a notification listener (see its `select_hms`).

use std::io::Read;

use base64::Engine as _;
use hive_orc_compactor::metastore::{Metastore, NotificationEvent};
use serde_json::Value;

use super::rt;

/// Events asked for per call.
const PAGE: i32 = 1000;

/// The id of the newest event now: take it before the change whose events are wanted.
pub fn current_id(ms: &Metastore) -> i64 {
    rt().block_on(ms.current_notification_id())
        .unwrap_or_else(|e| panic!("get_current_notificationEventId: {e}"))
}

/// Every event after `after`, oldest first.
pub fn events_since(ms: &Metastore, after: i64) -> Vec<NotificationEvent> {
    let mut events = Vec::new();
    let mut last = after;
    loop {
        let page = rt()
            .block_on(ms.notifications_since(last, PAGE))
            .unwrap_or_else(|e| panic!("get_next_notification after {last}: {e}"));
        let Some(newest) = page.last() else {
            return events;
        };
        last = newest.event_id;
        events.extend(page);
    }
}

/// The partitions of `db.table` that events after `after` announce as altered, with the
/// location each event gives them, in the order of the log: a pair per partition of each
/// ALTER_PARTITION event (HMS 2.3, 3.1 and 4.0.1 fire one per partition, for
/// `alter_partition` and for each partition of a batched `alter_partitions`) and of each
/// ALTER_PARTITIONS event (Hive 4.1 and later: one per batch). Panics, naming the event, on one
/// it cannot read.
pub fn altered_partitions(
    ms: &Metastore,
    after: i64,
    db: &str,
    table: &str,
) -> Vec<(Vec<String>, String)> {
    let mut altered = Vec::new();
    for event in events_since(ms, after) {
        let ours = event
            .db_name
            .as_deref()
            .is_some_and(|d| d.eq_ignore_ascii_case(db))
            && event
                .table_name
                .as_deref()
                .is_some_and(|t| t.eq_ignore_ascii_case(table));
        if !ours {
            continue;
        }
        let what = format!(
            "event {} ({}) of {db}.{table}",
            event.event_id, event.event_type
        );
        let message = message(&event, &what);
        // Each partition is in the message as Thrift's JSON protocol writes a Partition.
        let partitions: Vec<&str> = match event.event_type.as_str() {
            "ALTER_PARTITION" => vec![message["partitionObjAfterJson"]
                .as_str()
                .unwrap_or_else(|| panic!("{what}: no partitionObjAfterJson in {message}"))],
            "ALTER_PARTITIONS" => message["partitionListJson"]
                .as_array()
                .and_then(|list| list.iter().map(Value::as_str).collect())
                .unwrap_or_else(|| panic!("{what}: no partitionListJson in {message}")),
            _ => continue,
        };
        for partition in partitions {
            altered.push(values_and_location(partition, &what));
        }
    }
    altered
}

/// An event's message as JSON: plain (Hive 3.1's default message factory, `json-0.2`) or
/// base64 of gzip'd JSON (Hive 4's default, `gzip(json-2.0)`).
fn message(event: &NotificationEvent, what: &str) -> Value {
    let format = event.message_format.as_deref().unwrap_or_default();
    let text = if format.starts_with("gzip") {
        let packed = base64::engine::general_purpose::STANDARD
            .decode(event.message.trim())
            .unwrap_or_else(|e| panic!("{what}: message ({format}) is not base64: {e}"));
        let mut text = String::new();
        flate2::read::GzDecoder::new(&packed[..])
            .read_to_string(&mut text)
            .unwrap_or_else(|e| panic!("{what}: message ({format}) is not gzip'd text: {e}"));
        text
    } else {
        event.message.clone()
    };
    serde_json::from_str(&text)
        .unwrap_or_else(|e| panic!("{what}: message ({format}) is not JSON: {e}: {text}"))
}

/// A partition's values (field 1) and its storage descriptor's (field 6) location (field 2),
/// from Thrift's JSON protocol: `{"1":{"lst":["str",N,v1,...]},...,"6":{"rec":{"2":{"str":L}}}}`.
fn values_and_location(partition: &str, what: &str) -> (Vec<String>, String) {
    let p: Value = serde_json::from_str(partition)
        .unwrap_or_else(|e| panic!("{what}: partition is not JSON: {e}: {partition}"));
    let values = p["1"]["lst"]
        .as_array()
        .and_then(|list| {
            list.iter()
                .skip(2)
                .map(|v| v.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_else(|| panic!("{what}: no partition values in {partition}"));
    let location = p["6"]["rec"]["2"]["str"]
        .as_str()
        .unwrap_or_else(|| panic!("{what}: no location in {partition}"))
        .to_owned();
    (values, location)
}
