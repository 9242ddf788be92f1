//! Partition specs as admins write them: the way `SHOW PARTITIONS` prints them
//! (`dt=2026-11-01/country=a%2Fb`), with Hive's path escaping.
//!
//! Hive turns a partition's values into a directory name with its own escaping (not URL
//! encoding): a fixed set of ASCII characters becomes `%XX` (upper-case hex), everything else,
//! including spaces and non-ASCII text, is kept as it is. `SHOW PARTITIONS` prints those escaped
//! names, and the metastore's `get_partition_by_name` unescapes them the same way. We implement
//! the rule here because no crate carries Hive's exact character set.

use std::fmt;

/// The value Hive stores for a NULL or empty partition value.
pub const HIVE_DEFAULT_PARTITION: &str = "__HIVE_DEFAULT_PARTITION__";

/// Whether Hive escapes this character in a path component. Hive escapes ASCII control
/// characters and `"#%'*/:=?\{[]^` plus DEL; nothing outside ASCII (on non-Windows hosts).
fn needs_escaping(c: char) -> bool {
    matches!(c, '\u{0}'..='\u{1F}' | '\u{7F}')
        || matches!(
            c,
            '"' | '#' | '%' | '\'' | '*' | '/' | ':' | '=' | '?' | '\\' | '{' | '[' | ']' | '^'
        )
}

/// Escapes one key or value the way Hive names partition directories.
pub fn escape(s: &str) -> String {
    if s.is_empty() {
        return HIVE_DEFAULT_PARTITION.to_string();
    }
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if needs_escaping(c) {
            out.push_str(&format!("%{:02X}", c as u32));
        } else {
            out.push(c);
        }
    }
    out
}

/// Reverses [`escape`]. Like Hive, a `%` not followed by two hex digits is kept literally, so an
/// unescaped name that happens to contain `%` still round-trips.
pub fn unescape(s: &str) -> String {
    let chars: Vec<char> = s.chars().collect();
    let mut out = String::with_capacity(s.len());
    let mut i = 0;
    while i < chars.len() {
        if chars[i] == '%'
            && i + 2 < chars.len()
            && chars[i + 1].is_ascii_hexdigit()
            && chars[i + 2].is_ascii_hexdigit()
        {
            let code = chars[i + 1].to_digit(16).unwrap_or(0) * 16
                + chars[i + 2].to_digit(16).unwrap_or(0);
            out.push(char::from(code as u8));
            i += 3;
            continue;
        }
        out.push(chars[i]);
        i += 1;
    }
    out
}

/// A partition spec resolved against a table's partition keys: one value per key, in the
/// table's key order, unescaped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartitionSpec {
    pub keys: Vec<String>,
    pub values: Vec<String>,
}

impl PartitionSpec {
    /// Parses `k1=v1/k2=v2` (escaped, as `SHOW PARTITIONS` prints it) and checks it names every
    /// key of `table_keys` exactly once. Keys compare case-insensitively because Hive lower-cases
    /// column names; the order may differ from the table's.
    pub fn parse(spec: &str, table_keys: &[String]) -> Result<Self, SpecError> {
        if table_keys.is_empty() {
            return Err(SpecError::NotPartitioned);
        }
        let mut values: Vec<Option<String>> = vec![None; table_keys.len()];
        for part in spec.split('/').filter(|p| !p.is_empty()) {
            let (key, value) = part
                .split_once('=')
                .ok_or_else(|| SpecError::Malformed(part.to_string()))?;
            let key = unescape(key);
            let pos = table_keys
                .iter()
                .position(|k| k.eq_ignore_ascii_case(&key))
                .ok_or_else(|| SpecError::UnknownKey {
                    key: key.clone(),
                    keys: table_keys.to_vec(),
                })?;
            if values[pos].is_some() {
                return Err(SpecError::RepeatedKey(key));
            }
            values[pos] = Some(unescape(value));
        }
        let missing: Vec<String> = table_keys
            .iter()
            .zip(&values)
            .filter(|(_, v)| v.is_none())
            .map(|(k, _)| k.clone())
            .collect();
        if !missing.is_empty() {
            return Err(SpecError::MissingKeys {
                missing,
                keys: table_keys.to_vec(),
            });
        }
        Ok(PartitionSpec {
            keys: table_keys.to_vec(),
            values: values.into_iter().flatten().collect(),
        })
    }

    /// Builds the spec of a partition the metastore returned (values already unescaped).
    pub fn from_values(keys: &[String], values: &[String]) -> Self {
        PartitionSpec {
            keys: keys.to_vec(),
            values: values.to_vec(),
        }
    }

    /// The partition's name as Hive prints it and names its directory: `k1=v1/k2=v2`, escaped.
    pub fn name(&self) -> String {
        self.keys
            .iter()
            .zip(&self.values)
            .map(|(k, v)| format!("{}={}", escape(k), escape(v)))
            .collect::<Vec<_>>()
            .join("/")
    }
}

impl fmt::Display for PartitionSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name())
    }
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum SpecError {
    #[error("the table is not partitioned, so it takes no partition spec")]
    NotPartitioned,
    #[error("'{0}' is not of the form key=value (write specs as SHOW PARTITIONS prints them)")]
    Malformed(String),
    #[error("unknown partition key '{key}' (the table's keys are {})", keys.join(", "))]
    UnknownKey { key: String, keys: Vec<String> },
    #[error("partition key '{0}' is given twice")]
    RepeatedKey(String),
    #[error("the spec must name every partition key; missing {} (the table's keys are {})", missing.join(", "), keys.join(", "))]
    MissingKeys {
        missing: Vec<String>,
        keys: Vec<String>,
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys(k: &[&str]) -> Vec<String> {
        k.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn escapes_like_hive() {
        assert_eq!(escape("2026-11-01"), "2026-11-01");
        assert_eq!(escape("a/b"), "a%2Fb");
        assert_eq!(escape("10:30"), "10%3A30");
        assert_eq!(escape("x=y"), "x%3Dy");
        assert_eq!(escape("50%"), "50%25");
        assert_eq!(escape("it's #1"), "it%27s %231");
        assert_eq!(escape("é 日本"), "é 日本");
        assert_eq!(escape("tab\there"), "tab%09here");
        assert_eq!(escape(""), HIVE_DEFAULT_PARTITION);
    }

    #[test]
    fn unescape_reverses_escape() {
        for s in [
            "a/b",
            "10:30",
            "x=y",
            "50%",
            "it's #1",
            "é 日本",
            "a{b}[c]^?*\"\\",
        ] {
            assert_eq!(unescape(&escape(s)), s, "{s}");
        }
    }

    #[test]
    fn unescape_keeps_stray_percent() {
        assert_eq!(unescape("100%"), "100%");
        assert_eq!(unescape("%zz"), "%zz");
        assert_eq!(unescape("%4"), "%4");
        assert_eq!(unescape("%41"), "A");
    }

    #[test]
    fn parses_full_spec_in_any_order() {
        let k = keys(&["dt", "country"]);
        let s = PartitionSpec::parse("country=a%2Fb/DT=2026-11-01", &k).unwrap();
        assert_eq!(s.values, vec!["2026-11-01", "a/b"]);
        assert_eq!(s.name(), "dt=2026-11-01/country=a%2Fb");
    }

    #[test]
    fn refuses_partial_unknown_and_repeated() {
        let k = keys(&["dt", "country"]);
        assert!(matches!(
            PartitionSpec::parse("dt=1", &k),
            Err(SpecError::MissingKeys { .. })
        ));
        assert!(matches!(
            PartitionSpec::parse("dt=1/cty=x", &k),
            Err(SpecError::UnknownKey { .. })
        ));
        assert_eq!(
            PartitionSpec::parse("dt=1/dt=2/country=x", &k),
            Err(SpecError::RepeatedKey("dt".into()))
        );
        assert!(matches!(
            PartitionSpec::parse("dt", &k),
            Err(SpecError::Malformed(_))
        ));
        assert_eq!(
            PartitionSpec::parse("dt=1", &[]),
            Err(SpecError::NotPartitioned)
        );
    }

    #[test]
    fn value_may_contain_equals_when_escaped_or_not() {
        let k = keys(&["k"]);
        assert_eq!(
            PartitionSpec::parse("k=a%3Db", &k).unwrap().values,
            vec!["a=b"]
        );
        assert_eq!(
            PartitionSpec::parse("k=a=b", &k).unwrap().values,
            vec!["a=b"]
        );
    }
}
