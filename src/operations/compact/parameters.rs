//! The partition parameters a swap writes: basic statistics made true, and the run recorded.

use std::collections::BTreeMap;

use crate::run_dirs::{PARAM_PREVIOUS_LOCATION, PARAM_RUN_ID};

/// Basic statistics this swap makes true; the rest of the parameters are kept as they were,
/// except numbers we can no longer vouch for, which are dropped.
pub(super) fn new_parameters(
    before: &BTreeMap<String, String>,
    old_location: &str,
    files: usize,
    bytes: u64,
    rows: u64,
    coded: Option<bool>,
    run_id: &str,
) -> BTreeMap<String, String> {
    let mut p = before.clone();
    let old_files = before.get("numFiles").cloned();
    // A wrong row count means the other row statistics described other rows too.
    if before.get("numRows") != Some(&rows.to_string()) {
        p.remove("rawDataSize");
        p.remove("COLUMN_STATS_ACCURATE");
    }
    p.insert("numFiles".into(), files.to_string());
    p.insert("totalSize".into(), bytes.to_string());
    p.insert("numRows".into(), rows.to_string());
    // Erasure coding follows the directory. When the run learnt it (`coded`), every new file
    // is coded or none is; otherwise new files are coded exactly when the old ones were all
    // coded or none was, and anything else we cannot tell, so drop it.
    let known = before.contains_key("numFilesErasureCoded");
    match (
        coded,
        before.get("numFilesErasureCoded").map(String::as_str),
    ) {
        (Some(true), _) => {
            p.insert("numFilesErasureCoded".into(), files.to_string());
        }
        (Some(false), _) if known => {
            p.insert("numFilesErasureCoded".into(), "0".into());
        }
        (Some(false), _) | (None, Some("0") | None) => {}
        (None, Some(n)) if Some(n) == old_files.as_deref() => {
            p.insert("numFilesErasureCoded".into(), files.to_string());
        }
        (None, Some(_)) => {
            p.remove("numFilesErasureCoded");
        }
    }
    p.insert(PARAM_PREVIOUS_LOCATION.into(), old_location.to_string());
    p.insert(PARAM_RUN_ID.into(), run_id.to_string());
    p
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(kv: &[(&str, &str)]) -> BTreeMap<String, String> {
        kv.iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn parameters_after_swap() {
        let before = params(&[
            ("numFiles", "300"),
            ("totalSize", "1836751"),
            ("numRows", "104850"),
            ("rawDataSize", "25604602"),
            ("numFilesErasureCoded", "0"),
            ("COLUMN_STATS_ACCURATE", "{\"BASIC_STATS\":\"true\"}"),
            ("transient_lastDdlTime", "1717171717"),
        ]);
        let after = new_parameters(
            &before,
            "hdfs://nn/t/dt=1",
            2,
            1_700_000,
            104850,
            None,
            "r1",
        );
        assert_eq!(after["numFiles"], "2");
        assert_eq!(after["totalSize"], "1700000");
        assert_eq!(after["numRows"], "104850");
        assert_eq!(after["rawDataSize"], "25604602", "same rows, same raw size");
        assert_eq!(after["numFilesErasureCoded"], "0");
        assert_eq!(after[PARAM_PREVIOUS_LOCATION], "hdfs://nn/t/dt=1");
        assert_eq!(after[PARAM_RUN_ID], "r1");
        assert_eq!(
            after["COLUMN_STATS_ACCURATE"],
            before["COLUMN_STATS_ACCURATE"]
        );
    }

    #[test]
    fn a_wrong_row_count_takes_every_row_statistic_with_it() {
        let before = params(&[
            ("numRows", "104857"),
            ("rawDataSize", "25604602"),
            ("COLUMN_STATS_ACCURATE", "{\"BASIC_STATS\":\"true\"}"),
        ]);
        let after = new_parameters(&before, "x", 2, 1, 104850, None, "r");
        assert_eq!(after["numRows"], "104850");
        assert!(!after.contains_key("rawDataSize"));
        assert!(!after.contains_key("COLUMN_STATS_ACCURATE"));
        let unknown = new_parameters(&params(&[("rawDataSize", "9")]), "x", 2, 1, 5, None, "r");
        assert!(
            !unknown.contains_key("rawDataSize"),
            "no count to vouch for it"
        );
    }

    #[test]
    fn erasure_coded_counts_follow_or_drop() {
        let all = params(&[("numFiles", "10"), ("numFilesErasureCoded", "10")]);
        assert_eq!(
            new_parameters(&all, "x", 2, 1, 1, None, "r")["numFilesErasureCoded"],
            "2"
        );
        let some = params(&[("numFiles", "10"), ("numFilesErasureCoded", "3")]);
        assert!(
            !new_parameters(&some, "x", 2, 1, 1, None, "r").contains_key("numFilesErasureCoded")
        );
    }

    #[test]
    fn erasure_coded_counts_from_the_run_win() {
        let ec = |p: &BTreeMap<String, String>, coded| {
            new_parameters(p, "x", 2, 1, 1, Some(coded), "r")
                .get("numFilesErasureCoded")
                .cloned()
        };
        // Learnt coded: every new file counts, even where the metastore never counted.
        assert_eq!(
            ec(&params(&[("numFiles", "10")]), true).as_deref(),
            Some("2")
        );
        let some = params(&[("numFiles", "10"), ("numFilesErasureCoded", "3")]);
        assert_eq!(ec(&some, true).as_deref(), Some("2"));
        // Learnt replicated: zero where the metastore counts, nothing added where it does not.
        assert_eq!(ec(&some, false).as_deref(), Some("0"));
        assert_eq!(ec(&params(&[("numFiles", "10")]), false), None);
    }
}
