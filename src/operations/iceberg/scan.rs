//! Listing a table's files and reading every ORC footer: what `check` counts, what `migrate`
//! describes to Iceberg, and what blocks either.

use anyhow::{anyhow, bail, Context};
use futures::StreamExt;
use serde::Serialize;
use tokio_util::sync::CancellationToken;

use super::source::Source;
use crate::eligibility::{self, Refusal, Rule};
use crate::hdfs::{Hdfs, Location};
use crate::iceberg::hive_type::HiveType;
use crate::iceberg::partition::{self, HIVE_DEFAULT_PARTITION};
use crate::iceberg::schema;
use crate::orc::{read_tail, OrcTail};

/// What a scan counts as small, and the size compaction would aim for (the files it would
/// remove first).
#[derive(Debug, Clone)]
pub struct CheckOptions {
    pub small_file_size: u64,
    pub target_size: u64,
}

/// Footers read at once: enough to hide the NameNode and DataNode round trips, few enough that
/// the tails in flight stay small (a tail is usually a few KB, at most a few MB).
const FOOTERS_IN_FLIGHT: usize = 16;
/// Examples kept per kind of problem; the counts cover all of them.
const EXAMPLES: usize = 5;

/// What a table holds, as Iceberg will see it.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Costs {
    pub partitions: usize,
    pub files: u64,
    pub bytes: u64,
    pub rows: u64,
    /// Files below the small-file size, and the files compaction would remove first.
    pub small_files: u64,
    pub excess_files: u64,
    /// Partitions with a `__HIVE_DEFAULT_PARTITION__` value: they become null partitions.
    pub null_partitions: usize,
    /// Zero-length files hold no rows; they are left out of the Iceberg table.
    pub empty_files: u64,
    /// Files written with Hive's positional column names (`_col0`, ...), read through the
    /// name mapping's aliases.
    pub positional_name_files: u64,
    /// Partitions outside the table directory or in a directory not named `k=v/...`: Iceberg
    /// lists their files by path and does not mind, but tools that assume the layout do.
    pub non_canonical_partitions: Vec<String>,
}

/// One data file as a migration sees it.
pub(super) struct FileFacts {
    pub(super) partition: Option<usize>,
    pub(super) location: Location,
    pub(super) length: u64,
    pub(super) tail: Result<Option<OrcTail>, String>,
}

/// Collects problems of one kind: a count and the first few examples.
#[derive(Default)]
struct Problems {
    count: u64,
    examples: Vec<String>,
}

impl Problems {
    fn add(&mut self, what: String) {
        self.count += 1;
        if self.examples.len() < EXAMPLES {
            self.examples.push(what);
        }
    }

    fn block(&self, rule: Rule, what: &str) -> Option<Refusal> {
        (self.count > 0).then(|| {
            Refusal::new(
                rule,
                format!("{} {what}, e.g. {}", self.count, self.examples.join("; ")),
            )
        })
    }
}

/// Takes each readable data file of a scan, in order.
pub(super) trait FileSink {
    async fn take(&mut self, file: FileFacts) -> anyhow::Result<()>;
}

/// A scan that only counts (`check`, the recount before a commit).
pub(super) struct Count;

impl FileSink for Count {
    async fn take(&mut self, _: FileFacts) -> anyhow::Result<()> {
        Ok(())
    }
}

/// Everything learnt by listing and reading every footer.
pub(super) struct Scan {
    pub(super) costs: Costs,
    pub(super) blocks: Vec<Refusal>,
    /// Every data file listed, with its length: what a commit checks is still there.
    pub(super) files: Fingerprint,
}

/// Which files a listing found, in order, with their lengths: what a commit compares with a
/// listing taken under the lock. A hash rather than the paths, so a table of a million files
/// is not held twice more (as scanned, and as listed again) while the lock is taken.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Fingerprint {
    files: usize,
    hash: u128,
}

impl Fingerprint {
    pub(super) fn of(files: &[Listed]) -> Self {
        let mut h = xxhash_rust::xxh3::Xxh3::new();
        for (_, location, length) in files {
            let path = location.to_string();
            // Lengths delimit the paths: no two listings hash alike by shifting bytes.
            h.update(&(path.len() as u64).to_le_bytes());
            h.update(path.as_bytes());
            h.update(&length.to_le_bytes());
        }
        Fingerprint {
            files: files.len(),
            hash: h.digest128(),
        }
    }
}

/// A data file to describe: the partition it belongs to (index into the source's
/// partitions; `None` for an unpartitioned table), its path and length.
pub(super) type Listed = (Option<usize>, Location, u64);

/// Lists every partition's directory (or the table directory), checking partition values and
/// directories on the way; fills the listing part of `costs` and pushes blocks.
pub(super) async fn list_files(
    hdfs: &Hdfs,
    source: &Source,
    options: &CheckOptions,
    costs: &mut Costs,
    blocks: &mut Vec<Refusal>,
) -> anyhow::Result<Vec<Listed>> {
    let mut values = Problems::default();
    let mut subdirs = Problems::default();
    let table_location = source.location()?;
    let keys = source.partition_keys();
    let key_types: Vec<&HiveType> = source.columns[source.data_columns..]
        .iter()
        .map(|(_, t)| t)
        .collect();
    // (partition index, directory) of every directory to list.
    let mut dirs: Vec<(Option<usize>, Location)> = vec![];
    if keys.is_empty() {
        dirs.push((None, table_location.clone()));
    } else {
        costs.partitions = source.partitions.len();
        for (i, p) in source.partitions.iter().enumerate() {
            let name = source.partition_name(p);
            let vals = p.values.clone().unwrap_or_default();
            if vals.iter().any(|v| v == HIVE_DEFAULT_PARTITION) {
                costs.null_partitions += 1;
            }
            for (t, v) in key_types.iter().zip(&vals) {
                if let Err(e) = partition::value(t, v) {
                    values.add(format!("{name}: {e}"));
                }
            }
            let info = crate::table::PartitionInfo::from(p);
            if let Err(r) = eligibility::check_partition(&info.storage) {
                blocks.push(Refusal::new(
                    r.rule,
                    format!("partition {name}: {}", r.reason),
                ));
                continue;
            }
            let Some(loc) = info.storage.location.as_deref() else {
                blocks.push(Refusal::new(
                    Rule::NotHdfs,
                    format!("partition {name} has no location"),
                ));
                continue;
            };
            let loc = Location::parse(loc).map_err(|e| anyhow!("partition {name}: {e}"))?;
            if loc != table_location.child(&name) {
                costs
                    .non_canonical_partitions
                    .push(format!("{name} at {loc}"));
            }
            dirs.push((Some(i), loc));
        }
    }
    let mut files: Vec<Listed> = vec![];
    for (partition, dir) in &dirs {
        let listing = hdfs
            .list(dir)
            .await
            .with_context(|| format!("listing {dir}"))?
            .ok_or_else(|| {
                anyhow!("{dir} does not exist; run MSCK REPAIR or drop the partition")
            })?;
        if !listing.subdirs.is_empty() {
            subdirs.add(format!("{dir}: {}", listing.subdirs.join(", ")));
        }
        let sizes: Vec<u64> = listing.files.iter().map(|f| f.length).collect();
        let bytes: u64 = sizes.iter().sum();
        costs.small_files += sizes
            .iter()
            .filter(|&&s| s < options.small_file_size)
            .count() as u64;
        let needed = bytes.div_ceil(options.target_size.max(1));
        costs.excess_files += (sizes.len() as u64).saturating_sub(needed);
        for f in listing.files {
            files.push((*partition, dir.child(&f.name), f.length));
        }
    }
    blocks.extend(values.block(
        Rule::PartitionValue,
        "partition values Iceberg cannot express",
    ));
    blocks.extend(subdirs.block(
        Rule::Subdirectories,
        "directories hold subdirectories Hive does not read and Iceberg would not list",
    ));
    Ok(files)
}

/// Lists every partition (or the table directory), then reads every footer,
/// [`FOOTERS_IN_FLIGHT`] at a time, handing each readable file to `sink` in order while no
/// block is found.
pub(super) async fn scan(
    hdfs: &Hdfs,
    source: &Source,
    options: &CheckOptions,
    cancel: &CancellationToken,
    sink: &mut impl FileSink,
) -> anyhow::Result<Scan> {
    let mut costs = Costs::default();
    let mut blocks = vec![];
    let mut unreadable = Problems::default();
    let mut mismatched = Problems::default();
    let files = list_files(hdfs, source, options, &mut costs, &mut blocks).await?;
    let listed = Fingerprint::of(&files);
    let facts = futures::stream::iter(files)
        .map(|(partition, location, length)| async move {
            let tail = match hdfs.open(&location).await {
                Ok(reader) => read_tail(&reader).await.map_err(|e| e.to_string()),
                Err(e) => Err(e.to_string()),
            };
            FileFacts {
                partition,
                location,
                length,
                tail,
            }
        })
        .buffered(FOOTERS_IN_FLIGHT);
    futures::pin_mut!(facts);
    let data_columns: Vec<String> = source.columns[..source.data_columns]
        .iter()
        .map(|(n, _)| n.clone())
        .collect();
    while let Some(f) = facts.next().await {
        if cancel.is_cancelled() {
            bail!("interrupted");
        }
        costs.files += 1;
        costs.bytes += f.length;
        match &f.tail {
            Err(e) => {
                unreadable.add(format!("{}: {e}", f.location));
                continue;
            }
            Ok(None) => {
                costs.empty_files += 1;
                continue;
            }
            Ok(Some(tail)) => {
                costs.rows += tail.rows;
                if schema::has_positional_names(&tail.footer.types) {
                    costs.positional_name_files += 1;
                }
                if let Some(m) = schema::unreadable_by_iceberg(&tail.footer.types) {
                    mismatched.add(format!("{}: {m}", f.location));
                    continue;
                }
                let at = schema::file_columns(&tail.footer.types, &data_columns);
                let mismatch = at.iter().zip(&source.columns).find_map(|(id, (name, t))| {
                    let m = schema::file_type_mismatch(&tail.footer.types, (*id)?, t)?;
                    Some(format!("{}: column {name}: {m}", f.location))
                });
                if let Some(m) = mismatch {
                    mismatched.add(m);
                    continue;
                }
            }
        }
        if blocks.is_empty() && unreadable.count == 0 && mismatched.count == 0 {
            sink.take(f).await?;
        }
    }
    blocks.extend(unreadable.block(Rule::UnreadableFile, "files are not readable ORC"));
    blocks.extend(mismatched.block(
        Rule::FileSchema,
        "files hold types the table's schema cannot read through a name mapping",
    ));
    Ok(Scan {
        costs,
        blocks,
        files: listed,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn listed(files: &[(&str, u64)]) -> Vec<Listed> {
        files
            .iter()
            .map(|(p, n)| (None, Location::parse(p).unwrap(), *n))
            .collect()
    }

    #[test]
    fn a_fingerprint_changes_with_any_path_length_or_order() {
        let a = listed(&[("hdfs://nn/t/p=1/a", 10), ("hdfs://nn/t/p=1/b", 20)]);
        assert_eq!(Fingerprint::of(&a), Fingerprint::of(&a.clone()));
        for other in [
            listed(&[("hdfs://nn/t/p=1/a", 10), ("hdfs://nn/t/p=1/b", 21)]),
            listed(&[("hdfs://nn/t/p=1/a", 10), ("hdfs://nn/t/p=1/c", 20)]),
            listed(&[("hdfs://nn/t/p=1/b", 20), ("hdfs://nn/t/p=1/a", 10)]),
            listed(&[("hdfs://nn/t/p=1/a", 10)]),
            listed(&[("hdfs://nn/t/p=1/ab", 10), ("hdfs://nn/t/p=1/", 20)]),
        ] {
            assert_ne!(Fingerprint::of(&a), Fingerprint::of(&other), "{other:?}");
        }
    }
}
