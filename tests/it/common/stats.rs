//! ORC statistics as Java prints them, compared: a merged file's min/max must be its inputs'
//! extremes, and rows compare as an order-independent digest.

use serde_json::Value;

/// min/max out of a plain-`meta` statistics line, for a column of JSON type `kind`.
fn text_stat(kind: &str, text: &str, key: &str) -> Option<Value> {
    let min_at = text.find(" min: ")?;
    let max_at = text.find(" max: ")?;
    let raw = if key == "min" {
        &text[min_at + 6..max_at]
    } else {
        let rest = &text[max_at + 6..];
        rest.find(" sum: ").map_or(rest, |i| &rest[..i])
    };
    Some(match kind {
        "LONG" => serde_json::json!(raw.parse::<i64>().ok()?),
        "DOUBLE" => serde_json::json!(raw.parse::<f64>().ok()?),
        _ => Value::String(raw.to_string()),
    })
}

/// An order-independent digest of a multiset of lines: count, sum and xor of a 64-bit hash.
#[derive(Debug, Default, PartialEq, Eq, Clone, Copy)]
pub struct Digest {
    pub rows: u64,
    sum: u64,
    xor: u64,
}

impl Digest {
    pub fn add(&mut self, line: &str) {
        let h = xxhash_rust::xxh3::xxh3_64(line.as_bytes());
        self.rows += 1;
        self.sum = self.sum.wrapping_add(h);
        self.xor ^= h;
    }
}

/// Compares two statistic values of one ORC column kind: the order Java widens min/max by.
pub fn cmp_stat(kind: &str, a: &Value, b: &Value) -> std::cmp::Ordering {
    use std::cmp::Ordering;
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => match (x.as_i64(), y.as_i64()) {
            (Some(x), Some(y)) => x.cmp(&y),
            // serde_json (without its float_roundtrip feature) may parse a double one ulp
            // off: values that close are the same value printed by Java.
            _ => {
                let (x, y) = (x.as_f64().unwrap(), y.as_f64().unwrap());
                if (x - y).abs() <= 4.0 * f64::EPSILON * x.abs().max(y.abs()) {
                    Ordering::Equal
                } else {
                    x.total_cmp(&y)
                }
            }
        },
        (Value::String(x), Value::String(y)) if kind == "DECIMAL" => cmp_decimal(x, y),
        (Value::String(x), Value::String(y)) => x.as_bytes().cmp(y.as_bytes()),
        _ => {
            assert_eq!(a, b, "incomparable statistics");
            Ordering::Equal
        }
    }
}

/// Exact comparison of decimal strings such as `-123.45`.
fn cmp_decimal(a: &str, b: &str) -> std::cmp::Ordering {
    fn parts(s: &str) -> (bool, String, String) {
        let (neg, s) = match s.strip_prefix('-') {
            Some(r) => (true, r),
            None => (false, s),
        };
        let (i, f) = s.split_once('.').unwrap_or((s, ""));
        let i = i.trim_start_matches('0').to_string();
        let f = f.trim_end_matches('0').to_string();
        let zero = i.is_empty() && f.is_empty();
        (neg && !zero, i, f)
    }
    let (na, ia, fa) = parts(a);
    let (nb, ib, fb) = parts(b);
    let magnitude = ia
        .len()
        .cmp(&ib.len())
        .then_with(|| ia.cmp(&ib))
        .then_with(|| fa.cmp(&fb));
    match (na, nb) {
        (false, true) => std::cmp::Ordering::Greater,
        (true, false) => std::cmp::Ordering::Less,
        (false, false) => magnitude,
        (true, true) => magnitude.reverse(),
    }
}

/// Every column's min/max (and minChildren/maxChildren) in `output`'s file statistics is the
/// extreme over the `inputs`' file statistics, or absent because some input lacks it.
///
/// A `reencoded` output's child counts are not compared with the inputs': our writer counts
/// each list's and map's children, and ORC Java does not always (the 60,000-row files of
/// `big_stripes`, whose lists hold 0-3 values, record a minimum of 1024; tests/rewrite.rs
/// leaves child counts out of its comparison with a Java rewrite for the same reason).
pub fn check_min_max(what: &str, inputs: &[&Value], output: &Value, reencoded: bool) {
    let cols = |m: &Value| -> Vec<Value> {
        m["fileStatistics"]
            .as_array()
            .unwrap_or_else(|| panic!("{what}: no fileStatistics in {m}"))
            .clone()
    };
    let out = cols(output);
    let ins: Vec<Vec<Value>> = inputs.iter().map(|m| cols(m)).collect();
    assert_eq!(out.len(), ins[0].len(), "{what}: columns");
    for (c, o) in out.iter().enumerate() {
        if let Some(text) = o["text"].as_str() {
            // Only plain `meta` could print this output: compare min/max of the column
            // kinds whose text form is unambiguous.
            let kind = ins[0][c]["type"].as_str().unwrap_or("");
            if !["LONG", "DOUBLE", "DECIMAL", "DATE", "TIMESTAMP"].contains(&kind) {
                continue;
            }
            for (key, want) in [
                ("min", std::cmp::Ordering::Less),
                ("max", std::cmp::Ordering::Greater),
            ] {
                let extreme = ins.iter().filter_map(|f| f[c].get(key)).reduce(|a, b| {
                    if cmp_stat(kind, b, a) == want {
                        b
                    } else {
                        a
                    }
                });
                let found = text_stat(kind, text, key);
                if let (Some(found), Some(extreme)) = (&found, extreme) {
                    let extreme = match (kind, extreme) {
                        // Plain meta prints doubles in Java's Double.toString form.
                        ("DOUBLE", Value::Number(n)) => serde_json::json!(n.as_f64().unwrap()),
                        _ => extreme.clone(),
                    };
                    assert!(
                        cmp_stat(kind, found, &extreme) == std::cmp::Ordering::Equal,
                        "{what}: column {c} ({kind}) {key} is {found}, the inputs' is {extreme}"
                    );
                } else {
                    assert!(
                        found.is_none() || extreme.is_some(),
                        "{what}: column {c} {key} {found:?} but no input has one"
                    );
                }
            }
            continue;
        }
        // An output without a column's bounds has no type for it either: the inputs say.
        let kind = o["type"]
            .as_str()
            .or(ins[0][c]["type"].as_str())
            .unwrap_or("");
        for (key, want) in [
            ("min", std::cmp::Ordering::Less),
            ("max", std::cmp::Ordering::Greater),
            ("minChildren", std::cmp::Ordering::Less),
            ("maxChildren", std::cmp::Ordering::Greater),
        ] {
            if reencoded && key.ends_with("Children") {
                continue;
            }
            let values: Vec<Option<&Value>> = ins.iter().map(|f| f[c].get(key)).collect();
            let present: Vec<&Value> = values.iter().flatten().copied().collect();
            // Files without a value in the column carry no min/max: count=0 inputs do not
            // constrain the merged statistic.
            let all_have = ins
                .iter()
                .all(|f| f[c].get(key).is_some() || f[c]["count"].as_u64() == Some(0));
            let extreme =
                present
                    .iter()
                    .copied()
                    .reduce(|a, b| if cmp_stat(kind, b, a) == want { b } else { a });
            match (o.get(key), extreme) {
                (Some(found), Some(extreme)) => assert!(
                    cmp_stat(kind, found, extreme) == std::cmp::Ordering::Equal,
                    "{what}: column {c} ({kind}) {key} is {found}, the inputs' is {extreme}"
                ),
                (Some(found), None) => {
                    panic!("{what}: column {c} {key} is {found} but no input has one")
                }
                // A re-encode leaves a plain timestamp's bounds out outside UTC zones.
                (None, Some(extreme)) => assert!(
                    !all_have || (reencoded && kind == "TIMESTAMP"),
                    "{what}: column {c} ({kind}) {key} dropped although every input has one \
                     (extreme {extreme})"
                ),
                (None, None) => {}
            }
        }
    }
}
