//! Defaults for flags from a TOML file (`--config FILE` or `$HOC_CONFIG`). A value is taken from
//! the flag, else its environment variable (clap reads both), else this file, else the built-in
//! default; so one file can hold a site's settings and cron lines stay short.
//!
//! ```toml
//! metastore = "thrift://hms1:9083,thrift://hms2:9083"
//! target_size = "256MiB"
//! small_file_size = "64MiB"
//! min_files = 2
//! max_avg_size = "128MiB"
//! min_age = "1h"
//! parallel = 4
//! verify = "full"
//! stripes = "auto"
//! min_stripe_size = "8MiB"
//! stripe_size = "64MiB"
//! yarn_dir = "hdfs:///user/etl/.hive-orc-compactor/yarn"   # compact --on-yarn and cleanup
//! binaries_older_than = "30d"                               # cleanup
//!
//! # A table's layout: every run rewrites its partitions so (see `compact --sort-by`)
//! [table."sales.events"]
//! sort_by = ["customer_id", "event_ts DESC"]   # or zorder = ["customer_id", "event_ts"]
//! codec = "zstd"
//! codec_level = 9
//! ```

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use anyhow::{anyhow, Context};
use hive_orc_compactor::operations::compact::{Stripes, VerifyLevel};
use serde::Deserialize;

/// The file's keys; unknown keys are an error, so a typo does not silently do nothing.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Settings {
    pub metastore: Option<String>,
    target_size: Option<String>,
    small_file_size: Option<String>,
    pub min_files: Option<usize>,
    max_avg_size: Option<String>,
    min_age: Option<String>,
    pub parallel: Option<usize>,
    verify: Option<String>,
    stripes: Option<String>,
    min_stripe_size: Option<String>,
    stripe_size: Option<String>,
    sort_memory: Option<String>,
    spill_dir: Option<std::path::PathBuf>,
    /// `--yarn-dir` of `compact --on-yarn` and `cleanup`.
    pub yarn_dir: Option<String>,
    /// `cleanup --binaries-older-than`.
    binaries_older_than: Option<String>,
    /// Per table (`db.table`): the layout its partitions are rewritten in.
    #[serde(default)]
    pub table: BTreeMap<String, TableSettings>,
}

/// One table's `[table."db.t"]` section.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TableSettings {
    pub sort_by: Option<Vec<String>>,
    pub zorder: Option<Vec<String>>,
    pub codec: Option<String>,
    pub codec_level: Option<i32>,
}

impl Settings {
    pub fn load(path: Option<&Path>) -> anyhow::Result<Settings> {
        let Some(path) = path else {
            return Ok(Settings::default());
        };
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read the config file {}", path.display()))?;
        toml::from_str(&text).with_context(|| format!("config file {}", path.display()))
    }

    pub fn target_size(&self) -> anyhow::Result<Option<u64>> {
        size("target_size", &self.target_size, crate::parse_target_size)
    }

    pub fn small_file_size(&self) -> anyhow::Result<Option<u64>> {
        size("small_file_size", &self.small_file_size, crate::parse_bytes)
    }

    pub fn max_avg_size(&self) -> anyhow::Result<Option<u64>> {
        size("max_avg_size", &self.max_avg_size, crate::parse_bytes)
    }

    pub fn verify(&self) -> anyhow::Result<Option<VerifyLevel>> {
        parsed("verify", &self.verify)
    }

    pub fn stripes(&self) -> anyhow::Result<Option<Stripes>> {
        parsed("stripes", &self.stripes)
    }

    pub fn min_stripe_size(&self) -> anyhow::Result<Option<u64>> {
        size("min_stripe_size", &self.min_stripe_size, crate::parse_bytes)
    }

    pub fn stripe_size(&self) -> anyhow::Result<Option<u64>> {
        size("stripe_size", &self.stripe_size, crate::parse_stripe_size)
    }

    pub fn sort_memory(&self) -> anyhow::Result<Option<u64>> {
        size("sort_memory", &self.sort_memory, crate::parse_bytes)
    }

    pub fn spill_dir(&self) -> Option<&Path> {
        self.spill_dir.as_deref()
    }

    pub fn min_age(&self) -> anyhow::Result<Option<Duration>> {
        duration("min_age", &self.min_age)
    }

    pub fn binaries_older_than(&self) -> anyhow::Result<Option<Duration>> {
        duration("binaries_older_than", &self.binaries_older_than)
    }
}

fn parsed<T: std::str::FromStr<Err = String>>(
    key: &str,
    value: &Option<String>,
) -> anyhow::Result<Option<T>> {
    value
        .as_deref()
        .map(|v| {
            v.parse()
                .map_err(|e| anyhow!("{key} in the config file: {e}"))
        })
        .transpose()
}

fn duration(key: &str, value: &Option<String>) -> anyhow::Result<Option<Duration>> {
    value
        .as_deref()
        .map(|v| crate::parse_duration(v).map_err(|e| anyhow!("{key} in the config file: {e}")))
        .transpose()
}

fn size(
    key: &str,
    value: &Option<String>,
    parse: fn(&str) -> Result<u64, String>,
) -> anyhow::Result<Option<u64>> {
    value
        .as_deref()
        .map(|v| parse(v).map_err(|e| anyhow!("{key} in the config file: {e}")))
        .transpose()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_table_layouts() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("hoc.toml");
        std::fs::write(
            &p,
            "sort_memory = \"64MiB\"\n[table.\"sales.events\"]\nsort_by = [\"a\", \"b DESC\"]\ncodec = \"zstd\"\n",
        )
        .unwrap();
        let s = Settings::load(Some(&p)).unwrap();
        assert_eq!(s.sort_memory().unwrap(), Some(64 << 20));
        let t = &s.table["sales.events"];
        assert_eq!(
            t.sort_by.as_deref(),
            Some(&["a".to_string(), "b DESC".into()][..])
        );
        assert_eq!(t.codec.as_deref(), Some("zstd"));
        std::fs::write(&p, "[table.\"a.b\"]\nsortby = [\"a\"]\n").unwrap();
        assert!(
            Settings::load(Some(&p)).is_err(),
            "a typo in a table section"
        );
    }

    #[test]
    fn reads_settings_and_refuses_typos() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("hoc.toml");
        std::fs::write(
            &p,
            "target_size = \"128MiB\"\nmin_age = \"2h\"\nparallel = 3\nverify = \"tail\"\n",
        )
        .unwrap();
        let s = Settings::load(Some(&p)).unwrap();
        assert_eq!(s.target_size().unwrap(), Some(128 * 1024 * 1024));
        assert_eq!(s.min_age().unwrap(), Some(Duration::from_secs(7200)));
        assert_eq!((s.parallel, s.min_files), (Some(3), None));
        assert_eq!(s.verify().unwrap(), Some(VerifyLevel::Tail));
        std::fs::write(
            &p,
            "stripes = \"rewrite\"\nmin_stripe_size = \"4MiB\"\nstripe_size = \"32MiB\"\n",
        )
        .unwrap();
        let s = Settings::load(Some(&p)).unwrap();
        assert_eq!(s.stripes().unwrap(), Some(Stripes::Rewrite));
        assert_eq!(s.min_stripe_size().unwrap(), Some(4 << 20));
        assert_eq!(s.stripe_size().unwrap(), Some(32 << 20));
        std::fs::write(
            &p,
            "yarn_dir = \"hdfs://nn/y\"\nbinaries_older_than = \"7d\"\n",
        )
        .unwrap();
        let s = Settings::load(Some(&p)).unwrap();
        assert_eq!(s.yarn_dir.as_deref(), Some("hdfs://nn/y"));
        assert_eq!(
            s.binaries_older_than().unwrap(),
            Some(Duration::from_secs(7 * 86400))
        );
        std::fs::write(&p, "binaries_older_than = \"a month\"\n").unwrap();
        assert!(Settings::load(Some(&p))
            .unwrap()
            .binaries_older_than()
            .is_err());
        std::fs::write(&p, "stripes = \"some\"\n").unwrap();
        assert!(Settings::load(Some(&p)).unwrap().stripes().is_err());
        std::fs::write(&p, "verify = \"some\"\n").unwrap();
        assert!(Settings::load(Some(&p)).unwrap().verify().is_err());
        std::fs::write(&p, "target-size = \"1GiB\"\n").unwrap();
        assert!(Settings::load(Some(&p)).is_err());
    }
}
