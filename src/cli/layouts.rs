//! The layouts `compact` rewrites partitions in, from the flags (`--sort-by`, `--zorder`,
//! `--codec`, `--codec-level`) and the config file (its top level, for every table, and its
//! `[table."db.t"]` sections), with how they sort (`--sort-memory`, `--spill-dir`).

use std::collections::BTreeMap;
use std::path::PathBuf;

use hive_orc_compactor::operations::compact::{Layout, DEFAULT_SORT_MEMORY};
use hive_orc_compactor::orc::{Compression, RowOrder};

use super::args::LayoutArgs;
use super::parse::{codec_name, parse_codec};
use super::settings::{LayoutSettings, Settings};

/// The layout for every table (the flags', else the config file's top level), and those of
/// the config file's `[table."db.t"]` sections.
pub fn layouts(
    args: &LayoutArgs,
    settings: &Settings,
) -> anyhow::Result<(Option<Layout>, BTreeMap<String, Layout>)> {
    let sorting = Sorting {
        sort_memory: match args.sort_memory {
            Some(m) => m,
            None => settings.sort_memory()?.unwrap_or(DEFAULT_SORT_MEMORY),
        },
        spill_dir: args
            .spill_dir
            .clone()
            .or_else(|| settings.spill_dir.clone())
            .unwrap_or_else(std::env::temp_dir),
    };
    let from_flags = match (args.sort_by.clone().or(args.zorder.clone()), args.codec) {
        (None, None) => None,
        (order, codec) => Some(sorting.layout(order, codec, args.codec_level)?),
    };
    let top = settings.layout();
    let for_every_table = match from_flags {
        Some(layout) => Some(layout),
        None if top.is_empty() => None,
        None => Some(sorting.of_keys("the config file's top level", &top)?),
    };
    let mut per_table = BTreeMap::new();
    for (name, keys) in &settings.table {
        let keys = keys.layout();
        if keys.is_empty() {
            continue;
        }
        let layout = sorting.of_keys(&format!("[table.\"{name}\"]"), &keys)?;
        per_table.insert(name.to_ascii_lowercase(), layout);
    }
    Ok((for_every_table, per_table))
}

/// How a layout sorts: in memory up to `sort_memory`, spilling the rest to `spill_dir`.
struct Sorting {
    sort_memory: u64,
    spill_dir: PathBuf,
}

impl Sorting {
    fn layout(
        &self,
        order: Option<RowOrder>,
        codec: Option<Compression>,
        level: Option<i32>,
    ) -> anyhow::Result<Layout> {
        if let (Some(level), Some(codec)) = (level, codec) {
            let range = match codec {
                Compression::Zstd => 1..=22,
                Compression::Zlib => 0..=9,
                other => anyhow::bail!(
                    "{} has no compression levels: drop the codec level",
                    codec_name(other)
                ),
            };
            anyhow::ensure!(
                range.contains(&level),
                "codec level {level} is out of range for {codec:?} ({}-{})",
                range.start(),
                range.end()
            );
        }
        Ok(Layout {
            order,
            codec,
            codec_level: level,
            sort_memory: self.sort_memory,
            spill_dir: self.spill_dir.clone(),
        })
    }

    /// A layout of the config file; `section` names where it is in error messages.
    fn of_keys(&self, section: &str, keys: &LayoutSettings) -> anyhow::Result<Layout> {
        let context = |what: &str| format!("{section} {what} in the config file");
        let order = match (&keys.sort_by, &keys.zorder) {
            (Some(_), Some(_)) => {
                anyhow::bail!("{}: give sort_by or zorder, not both", context(""))
            }
            (Some(columns), None) => Some(
                RowOrder::parse_sort(&columns.join(","))
                    .map_err(|e| anyhow::anyhow!("{}: {e}", context("sort_by")))?,
            ),
            (None, Some(columns)) => Some(
                RowOrder::parse_zorder(&columns.join(","))
                    .map_err(|e| anyhow::anyhow!("{}: {e}", context("zorder")))?,
            ),
            (None, None) => None,
        };
        let codec = keys
            .codec
            .as_deref()
            .map(parse_codec)
            .transpose()
            .map_err(|e| anyhow::anyhow!("{}: {e}", context("codec")))?;
        if order.is_none() && codec.is_none() {
            anyhow::bail!("{}: give sort_by, zorder or codec", context("the section"));
        }
        self.layout(order, codec, keys.codec_level)
            .map_err(|e| anyhow::anyhow!("{}: {e}", context("codec_level")))
    }
}
