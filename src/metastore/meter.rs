//! What a run costs the metastore: every Thrift call counted by method as it goes on the wire,
//! and paced to `--metastore-rate` calls a second before it leaves.
//!
//! The count is taken where a call's message starts ([`Metered`]), not where the tool asks for
//! a call, because one request can be several calls: a request-style method the server lacks
//! is followed by its legacy name, a read retried after a broken connection is sent again, and
//! each new connection's probe (`get_config_value`) is a call of its own. Those are what the
//! metastore serves and times (its `api_<method>` metrics), so they are what is counted. SASL
//! handshakes are not Thrift calls and are not counted or paced.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde::de::{Deserialize, Deserializer};
use serde::ser::{Serialize, SerializeMap, Serializer};
use thrift::protocol::{
    TFieldIdentifier, TListIdentifier, TMapIdentifier, TMessageIdentifier, TOutputProtocol,
    TSetIdentifier, TStructIdentifier,
};

/// Shared by every connection made from one [`super::MetastoreConfig`] (clones share it), so
/// a run's `--parallel` connections draw on one rate and add up to one count.
#[derive(Clone, Default)]
pub struct Meter(Arc<Inner>);

#[derive(Default)]
struct Inner {
    calls: Mutex<BTreeMap<String, u64>>,
    pace: Option<Pace>,
}

impl fmt::Debug for Meter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Meter")
            .field("rate", &self.rate())
            .field("calls", &self.calls().total())
            .finish()
    }
}

/// The slowest pace: one call every 1,000 seconds. Slower would be a stalled run.
pub const MIN_RATE: f64 = 0.001;

impl Meter {
    /// Counts calls, and lets at most `per_second` of them leave each second (with a burst of
    /// one). A rate under [`MIN_RATE`] (or not a number) paces at [`MIN_RATE`].
    pub fn limited(per_second: f64) -> Self {
        Meter(Arc::new(Inner {
            calls: Mutex::default(),
            pace: Some(Pace::new(per_second)),
        }))
    }

    /// The calls a second this meter lets through, if it paces them.
    pub fn rate(&self) -> Option<f64> {
        self.0.pace.as_ref().map(|p| p.per_second)
    }

    /// The calls sent so far.
    pub fn calls(&self) -> Calls {
        Calls(
            self.0
                .calls
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .clone(),
        )
    }

    /// Waits for the call's turn, then counts it: the call leaves right after.
    fn sending(&self, method: &str) {
        if let Some(pace) = &self.0.pace {
            pace.wait();
        }
        let mut calls = self.0.calls.lock().unwrap_or_else(|p| p.into_inner());
        match calls.get_mut(method) {
            Some(n) => *n += 1,
            None => {
                calls.insert(method.to_owned(), 1);
            }
        }
    }
}

/// Calls by Thrift method. As JSON: `{"get_table_req": 1, ..., "total": 7}`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Calls(BTreeMap<String, u64>);

impl Calls {
    pub fn total(&self) -> u64 {
        self.0.values().sum()
    }

    pub fn by_method(&self) -> &BTreeMap<String, u64> {
        &self.0
    }

    /// These calls and `other`'s, as one count (another process's, e.g. a YARN task's).
    pub fn plus(&self, other: &Calls) -> Calls {
        let mut sum = self.0.clone();
        for (method, n) in &other.0 {
            *sum.entry(method.clone()).or_default() += n;
        }
        Calls(sum)
    }

    /// One line for people: `12 (get_table_req 1, lock 2, ...)`.
    pub fn line(&self) -> String {
        if self.0.is_empty() {
            return "0".into();
        }
        let each: Vec<String> = self.0.iter().map(|(m, n)| format!("{m} {n}")).collect();
        format!("{} ({})", self.total(), each.join(", "))
    }
}

/// Reads back what [`Serialize`] wrote (the total is recomputed, not kept).
impl<'de> Deserialize<'de> for Calls {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let mut by_method = BTreeMap::<String, u64>::deserialize(d)?;
        by_method.remove("total");
        Ok(Calls(by_method))
    }
}

impl From<BTreeMap<String, u64>> for Calls {
    fn from(by_method: BTreeMap<String, u64>) -> Self {
        Calls(by_method)
    }
}

impl Serialize for Calls {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(Some(self.0.len() + 1))?;
        for (method, n) in &self.0 {
            map.serialize_entry(method, n)?;
        }
        map.serialize_entry("total", &self.total())?;
        map.end()
    }
}

/// Client-side pacing: each call takes the next free slot of a schedule spaced `1 / rate`
/// apart (a token bucket of depth one), and sleeps until it. The slot is taken under the lock
/// and the sleep happens outside it, so callers are served in order without holding each
/// other up. It sleeps the calling thread, which is right here: every call runs on tokio's
/// blocking pool (the thrift client is synchronous), never on a runtime worker. A crate such as
/// `governor` waits asynchronously or by polling; this schedule is all the pacing needs.
struct Pace {
    per_second: f64,
    interval: Duration,
    next: Mutex<Option<Instant>>,
}

impl Pace {
    fn new(per_second: f64) -> Self {
        let per_second = per_second.max(MIN_RATE);
        Pace {
            per_second,
            interval: Duration::from_secs_f64(1.0 / per_second),
            next: Mutex::new(None),
        }
    }

    /// How long the caller must wait from `now` before its call may leave.
    fn reserve(&self, now: Instant) -> Duration {
        let mut next = self.next.lock().unwrap_or_else(|p| p.into_inner());
        // An idle spell earns no burst: the slot is never earlier than now.
        let slot = next.map_or(now, |n| n.max(now));
        *next = Some(slot + self.interval);
        slot - now
    }

    fn wait(&self) {
        let pause = self.reserve(Instant::now());
        if !pause.is_zero() {
            std::thread::sleep(pause);
        }
    }
}

/// An output protocol that reports each message it starts to a [`Meter`] before writing it.
pub(crate) struct Metered<P> {
    inner: P,
    meter: Meter,
}

impl<P> Metered<P> {
    pub(crate) fn new(inner: P, meter: Meter) -> Self {
        Metered { inner, meter }
    }
}

macro_rules! delegate {
    ($($name:ident($($arg:ident: $ty:ty),*);)*) => {
        $(fn $name(&mut self, $($arg: $ty),*) -> thrift::Result<()> {
            self.inner.$name($($arg),*)
        })*
    };
}

impl<P: TOutputProtocol> TOutputProtocol for Metered<P> {
    fn write_message_begin(&mut self, identifier: &TMessageIdentifier) -> thrift::Result<()> {
        self.meter.sending(&identifier.name);
        self.inner.write_message_begin(identifier)
    }

    delegate! {
        write_message_end();
        write_struct_begin(identifier: &TStructIdentifier);
        write_struct_end();
        write_field_begin(identifier: &TFieldIdentifier);
        write_field_end();
        write_field_stop();
        write_bool(b: bool);
        write_bytes(b: &[u8]);
        write_i8(i: i8);
        write_i16(i: i16);
        write_i32(i: i32);
        write_i64(i: i64);
        write_double(d: f64);
        write_string(s: &str);
        write_list_begin(identifier: &TListIdentifier);
        write_list_end();
        write_set_begin(identifier: &TSetIdentifier);
        write_set_end();
        write_map_begin(identifier: &TMapIdentifier);
        write_map_end();
        flush();
        write_byte(b: u8);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use thrift::protocol::{TBinaryOutputProtocol, TMessageType};

    fn send(out: &mut impl TOutputProtocol, method: &str) {
        out.write_message_begin(&TMessageIdentifier::new(method, TMessageType::Call, 1))
            .unwrap();
        out.write_struct_begin(&TStructIdentifier::new("args"))
            .unwrap();
        out.write_field_stop().unwrap();
        out.write_struct_end().unwrap();
        out.write_message_end().unwrap();
        out.flush().unwrap();
    }

    #[test]
    fn every_message_is_counted_by_method_across_connections() {
        let meter = Meter::default();
        let mut a = Metered::new(TBinaryOutputProtocol::new(Vec::new(), true), meter.clone());
        let mut b = Metered::new(TBinaryOutputProtocol::new(Vec::new(), true), meter.clone());
        send(&mut a, "get_table_req");
        send(&mut b, "get_table_req");
        send(&mut a, "lock");
        let calls = meter.calls();
        assert_eq!(calls.total(), 3);
        assert_eq!(calls.by_method()["get_table_req"], 2);
        assert_eq!(calls.line(), "3 (get_table_req 2, lock 1)");
        let json = serde_json::to_value(&calls).unwrap();
        assert_eq!(
            json,
            serde_json::json!({"get_table_req": 2, "lock": 1, "total": 3})
        );
        let read: Calls = serde_json::from_value(json).unwrap();
        assert_eq!(read, calls);
        assert_eq!(read.plus(&calls).line(), "6 (get_table_req 4, lock 2)");
    }

    #[test]
    fn the_metered_bytes_are_the_plain_ones() {
        let mut plain = TBinaryOutputProtocol::new(Vec::new(), true);
        let mut metered = Metered::new(
            TBinaryOutputProtocol::new(Vec::new(), true),
            Meter::default(),
        );
        send(&mut plain, "unlock");
        send(&mut metered, "unlock");
        assert_eq!(plain.transport, metered.inner.transport);
    }

    #[test]
    fn slots_are_spaced_by_the_rate_and_idle_time_earns_no_burst() {
        let pace = Pace::new(4.0);
        let t0 = Instant::now();
        let waits: Vec<Duration> = (0..4).map(|_| pace.reserve(t0)).collect();
        let ms = |d: Duration| d.as_millis();
        assert_eq!(
            waits.iter().map(|d| ms(*d)).collect::<Vec<_>>(),
            [0, 250, 500, 750]
        );
        // Long after the schedule ran out, the next call goes at once, and only one does.
        let later = t0 + Duration::from_secs(60);
        assert_eq!(pace.reserve(later), Duration::ZERO);
        assert_eq!(ms(pace.reserve(later)), 250);
    }

    #[test]
    fn an_unpaced_meter_has_no_rate_and_counts_nothing_yet() {
        let meter = Meter::default();
        assert_eq!(meter.rate(), None);
        assert_eq!(meter.calls().line(), "0");
        assert_eq!(Meter::limited(2.5).rate(), Some(2.5));
        assert_eq!(Meter::limited(1e-300).rate(), Some(MIN_RATE));
        assert_eq!(Meter::limited(f64::NAN).rate(), Some(MIN_RATE));
    }
}
