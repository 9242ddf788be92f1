//! Defaults for flags from a TOML file (`--config FILE` or `$HOC_CONFIG`). A value is taken from
//! the flag, else its environment variable (clap reads both), else this file, else the built-in
//! default; so one file can hold a site's settings and cron lines stay short. The same file
//! carries a `compact --on-yarn` run's resolved settings to its tasks (`on_yarn.rs` writes it),
//! so every key here reaches them.
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
//! budget = "2h"                                             # compact --budget
//! suspend_after = 3                                         # compact --suspend-after
//! yarn_dir = "hdfs:///user/etl/.hive-orc-compactor/yarn"   # compact --on-yarn and cleanup
//! binaries_older_than = "30d"                               # cleanup
//!
//! # A table's layout: every run rewrites its partitions so (see `compact --sort-by`)
//! [table."sales.events"]
//! sort_by = ["customer_id", "event_ts DESC"]   # or zorder = ["customer_id", "event_ts"]
//! codec = "zstd"
//! codec_level = 9
//! weight = 2                                   # its share of the budgets (default 1)
//! ```
//!
//! Every other flag of `compact` a run's tasks need has its key too, named as the flag:
//! `metastore_timeout`, `metastore_framed`, `metastore_sasl`, `metastore_principal`,
//! `metastore_rate`, `metastore_page_size`,
//! `hadoop_user`, `principal`, `keytab`, `lock_timeout`, `no_lock`, `require_lock`,
//! `yarn_token_margin`, and `sort_by`, `zorder`, `codec`, `codec_level` at the top level (the
//! layout of every table, as the flags give it).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{anyhow, Context};
use hive_orc_compactor::operations::compact::{Stripes, VerifyLevel};
use serde::{Deserialize, Serialize};

use super::parse::{check_rate, parse_bytes, parse_duration, parse_stripe_size, parse_target_size};

/// The file's keys; unknown keys are an error, so a typo does not silently do nothing. Sizes and
/// durations are kept as written and parsed by the flags' own parsers when asked for.
#[derive(Debug, Default, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Settings {
    pub metastore: Option<String>,
    /// `--metastore-timeout`.
    pub metastore_timeout: Option<String>,
    /// `--metastore-framed`.
    pub metastore_framed: Option<bool>,
    /// `--metastore-sasl`.
    pub metastore_sasl: Option<bool>,
    /// `--metastore-principal`.
    pub metastore_principal: Option<String>,
    /// `--metastore-rate`, calls a second.
    pub metastore_rate: Option<f64>,
    /// `--metastore-page-size`.
    pub metastore_page_size: Option<usize>,
    /// `--hadoop-user`.
    pub hadoop_user: Option<String>,
    /// `--principal` and `--keytab`: the Kerberos login.
    pub principal: Option<String>,
    pub keytab: Option<PathBuf>,
    pub target_size: Option<String>,
    pub small_file_size: Option<String>,
    pub min_files: Option<usize>,
    pub max_avg_size: Option<String>,
    pub min_age: Option<String>,
    pub parallel: Option<usize>,
    /// `--threads`.
    pub threads: Option<usize>,
    /// `--batch-size`.
    pub batch_size: Option<usize>,
    pub verify: Option<String>,
    pub stripes: Option<String>,
    pub min_stripe_size: Option<String>,
    pub stripe_size: Option<String>,
    /// `--lock-timeout`, `--no-lock` and `--require-lock` of `compact`.
    pub lock_timeout: Option<String>,
    pub no_lock: Option<bool>,
    pub require_lock: Option<bool>,
    /// The layout of every table (`--sort-by`, `--zorder`, `--codec`, `--codec-level`): it
    /// wins over the `[table...]` sections, as the flags do. (Not a flattened
    /// [`LayoutSettings`]: serde cannot flatten into a struct that denies unknown keys.)
    pub sort_by: Option<Vec<String>>,
    pub zorder: Option<Vec<String>>,
    pub codec: Option<String>,
    pub codec_level: Option<i32>,
    pub sort_memory: Option<String>,
    pub spill_dir: Option<PathBuf>,
    /// `--yarn-dir` of `compact --on-yarn` and `cleanup`.
    pub yarn_dir: Option<String>,
    /// `--yarn-token-margin` of `compact --on-yarn`.
    pub yarn_token_margin: Option<String>,
    /// `cleanup --binaries-older-than`.
    pub binaries_older_than: Option<String>,
    /// `compact --budget` and `--suspend-after`.
    pub budget: Option<String>,
    pub suspend_after: Option<usize>,
    /// Per table (`db.table`): the layout its partitions are rewritten in, and its weight.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub table: BTreeMap<String, TableSettings>,
}

/// One table's `[table."db.t"]` section: a layout's keys (written out again, not a flattened
/// [`LayoutSettings`], which serde cannot do in a struct that denies unknown keys) and its
/// weight.
#[derive(Debug, Default, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct TableSettings {
    pub sort_by: Option<Vec<String>>,
    pub zorder: Option<Vec<String>>,
    pub codec: Option<String>,
    pub codec_level: Option<i32>,
    /// The table's weight when budgets are shared among tables (default 1): a table of
    /// weight 2 gets twice the share of one of weight 1.
    pub weight: Option<f64>,
}

impl TableSettings {
    pub fn layout(&self) -> LayoutSettings {
        LayoutSettings {
            sort_by: self.sort_by.clone(),
            zorder: self.zorder.clone(),
            codec: self.codec.clone(),
            codec_level: self.codec_level,
        }
    }
}

/// A layout's keys: one table's `[table."db.t"]` section, or the top level's for every table.
#[derive(Debug, Default, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct LayoutSettings {
    pub sort_by: Option<Vec<String>>,
    pub zorder: Option<Vec<String>>,
    pub codec: Option<String>,
    pub codec_level: Option<i32>,
}

impl LayoutSettings {
    pub fn is_empty(&self) -> bool {
        self.sort_by.is_none()
            && self.zorder.is_none()
            && self.codec.is_none()
            && self.codec_level.is_none()
    }
}

impl Settings {
    /// The top level's layout, for every table.
    pub fn layout(&self) -> LayoutSettings {
        LayoutSettings {
            sort_by: self.sort_by.clone(),
            zorder: self.zorder.clone(),
            codec: self.codec.clone(),
            codec_level: self.codec_level,
        }
    }

    /// Sets the top level's layout.
    pub fn set_layout(&mut self, layout: LayoutSettings) {
        self.sort_by = layout.sort_by;
        self.zorder = layout.zorder;
        self.codec = layout.codec;
        self.codec_level = layout.codec_level;
    }

    pub fn load(path: Option<&Path>) -> anyhow::Result<Settings> {
        let Some(path) = path else {
            return Ok(Settings::default());
        };
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read the config file {}", path.display()))?;
        toml::from_str(&text).with_context(|| format!("config file {}", path.display()))
    }

    /// The file's text, as [`Settings::load`] reads it back.
    pub fn to_toml(&self) -> anyhow::Result<String> {
        toml::to_string(self).context("writing the settings as TOML")
    }

    /// The tables' weights, by lower-cased `db.table`.
    pub fn weights(&self) -> BTreeMap<String, f64> {
        self.table
            .iter()
            .filter_map(|(name, t)| Some((name.to_ascii_lowercase(), t.weight?)))
            .collect()
    }

    pub fn budget(&self) -> anyhow::Result<Option<Duration>> {
        duration("budget", &self.budget)
    }

    pub fn metastore_rate(&self) -> anyhow::Result<Option<f64>> {
        self.metastore_rate
            .map(|r| check_rate(r).map_err(|e| anyhow!("metastore_rate in the config file: {e}")))
            .transpose()
    }

    pub fn metastore_timeout(&self) -> anyhow::Result<Option<Duration>> {
        duration("metastore_timeout", &self.metastore_timeout)
    }

    pub fn target_size(&self) -> anyhow::Result<Option<u64>> {
        size("target_size", &self.target_size, parse_target_size)
    }

    pub fn small_file_size(&self) -> anyhow::Result<Option<u64>> {
        size("small_file_size", &self.small_file_size, parse_bytes)
    }

    pub fn max_avg_size(&self) -> anyhow::Result<Option<u64>> {
        size("max_avg_size", &self.max_avg_size, parse_bytes)
    }

    pub fn verify(&self) -> anyhow::Result<Option<VerifyLevel>> {
        parsed("verify", &self.verify)
    }

    pub fn stripes(&self) -> anyhow::Result<Option<Stripes>> {
        parsed("stripes", &self.stripes)
    }

    pub fn min_stripe_size(&self) -> anyhow::Result<Option<u64>> {
        size("min_stripe_size", &self.min_stripe_size, parse_bytes)
    }

    pub fn stripe_size(&self) -> anyhow::Result<Option<u64>> {
        size("stripe_size", &self.stripe_size, parse_stripe_size)
    }

    pub fn lock_timeout(&self) -> anyhow::Result<Option<Duration>> {
        duration("lock_timeout", &self.lock_timeout)
    }

    pub fn sort_memory(&self) -> anyhow::Result<Option<u64>> {
        size("sort_memory", &self.sort_memory, parse_bytes)
    }

    pub fn min_age(&self) -> anyhow::Result<Option<Duration>> {
        duration("min_age", &self.min_age)
    }

    pub fn yarn_token_margin(&self) -> anyhow::Result<Option<Duration>> {
        duration("yarn_token_margin", &self.yarn_token_margin)
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
        .map(|v| parse_duration(v).map_err(|e| anyhow!("{key} in the config file: {e}")))
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
        std::fs::write(&p, "[table.\"Sales.Events\"]\nweight = 3\n").unwrap();
        let s = Settings::load(Some(&p)).unwrap();
        assert_eq!(s.weights(), BTreeMap::from([("sales.events".into(), 3.0)]));
        std::fs::write(&p, "[table.\"a.b\"]\nsortby = [\"a\"]\n").unwrap();
        assert!(
            Settings::load(Some(&p)).is_err(),
            "a typo in a table section"
        );
    }

    #[test]
    fn written_settings_read_back_the_same() {
        let mut written = Settings {
            metastore: Some("thrift://a:9083,thrift://b:9083".into()),
            metastore_timeout: Some("30s".into()),
            metastore_principal: Some("hive/_HOST@R".into()),
            metastore_rate: Some(0.5),
            no_lock: Some(true),
            min_age: Some("0s".into()),
            parallel: Some(3),
            sort_memory: Some("1048576".into()),
            ..Settings::default()
        };
        written.set_layout(LayoutSettings {
            zorder: Some(vec!["a".into(), "b".into()]),
            codec: Some("zstd".into()),
            codec_level: Some(9),
            ..LayoutSettings::default()
        });
        written.table.insert(
            "sales.events".into(),
            TableSettings {
                sort_by: Some(vec!["a".into(), "b DESC NULLS LAST".into()]),
                weight: Some(2.0),
                ..TableSettings::default()
            },
        );
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("task.toml");
        std::fs::write(&p, written.to_toml().unwrap()).unwrap();
        let read = Settings::load(Some(&p)).unwrap();
        assert_eq!(format!("{read:?}"), format!("{written:?}"));
        assert!(Settings::default().to_toml().unwrap().is_empty());
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

    /// The packaged example (packaging/hive-orc-compactor.toml) promises every setting,
    /// commented out: uncommented, it must parse and name every key the file may hold.
    #[test]
    fn the_packaged_example_names_every_setting() {
        let example = include_str!("../../packaging/hive-orc-compactor.toml");
        let uncommented: String = example
            .lines()
            .filter_map(|l| l.strip_prefix('#'))
            .filter(|l| {
                l.starts_with('[') || l.split_once(" = ").is_some_and(|(k, _)| !k.contains(' '))
            })
            .map(|l| format!("{l}\n"))
            .collect();
        let read: Settings = toml::from_str(&uncommented).expect("the example parses");
        let written: toml::Table = toml::from_str(&read.to_toml().unwrap()).unwrap();
        // serde names the keys it expects when it meets an unknown one.
        let refusal = toml::from_str::<Settings>("not_a_key = 1")
            .unwrap_err()
            .to_string();
        let expected = refusal
            .split("expected one of")
            .nth(1)
            .expect("serde lists the keys");
        for key in expected.split(',').map(|k| k.trim().trim_matches('`')) {
            assert!(written.contains_key(key), "the example lacks {key}");
        }
        assert!(
            !read.table.is_empty(),
            "the example shows a [table] section"
        );
    }
}
