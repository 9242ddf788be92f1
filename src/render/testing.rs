//! What the renderers' tests share: capturing what was printed and checking JSON keys.

use std::io::Write;

/// What a renderer wrote to stdout and stderr.
pub(crate) fn printed(
    render: impl FnOnce(&mut dyn Write, &mut dyn Write) -> anyhow::Result<()>,
) -> (String, String) {
    let (mut out, mut err) = (Vec::new(), Vec::new());
    render(&mut out, &mut err).unwrap();
    (
        String::from_utf8(out).unwrap(),
        String::from_utf8(err).unwrap(),
    )
}

/// The keys every report's outcome flattens into its object.
pub(crate) const OUTCOME_KEYS: &[&str] =
    &["table", "partition", "status", "reason", "rule", "warnings"];

/// Fails naming the first of `keys` that `v` lacks.
pub(crate) fn assert_keys(v: &serde_json::Value, keys: &[&str]) {
    for key in keys {
        assert!(v.get(key).is_some(), "{key} missing from {v}");
    }
}

/// The one JSON object a renderer printed.
pub(crate) fn object(out: &str) -> serde_json::Value {
    assert_eq!(out.lines().count(), 1, "one object per line: {out}");
    serde_json::from_str(out).unwrap()
}

/// A run's metastore calls: 3 `get_table_req` and 2 `lock`.
pub(crate) fn calls() -> hive_orc_compactor::metastore::meter::Calls {
    [("get_table_req".to_string(), 3), ("lock".to_string(), 2)]
        .into_iter()
        .collect::<std::collections::BTreeMap<_, _>>()
        .into()
}
