//! Listing a table's files and reading every ORC footer: what `check` counts, what `migrate`
//! describes to Iceberg, and what blocks either.
//!
//! Memory stays flat in the size of the table: partitions are read from the metastore a page
//! at a time, directories are listed a window of files at a time, the window's footers are read
//! and handed on, and only counts, a few examples and two running hashes outlive the window.

use std::sync::Arc;

use anyhow::{anyhow, bail, Context};
use futures::StreamExt;
use serde::Serialize;
use thrift::protocol::{TBinaryOutputProtocol, TSerializable};
use tokio_util::sync::CancellationToken;

use super::source::Source;
use crate::eligibility::{self, Refusal, Rule};
use crate::hdfs::{Hdfs, Location};
use crate::iceberg::hive_type::HiveType;
use crate::iceberg::partition::{self, HIVE_DEFAULT_PARTITION};
use crate::iceberg::schema;
use crate::metastore::{Metastore, Partition};
use crate::orc::{read_tail_with_statistics, OrcTail, TailStatistics};

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
/// Files listed ahead of their footers: whole directories are listed until a window holds this
/// many, so tiny partitions still keep [`FOOTERS_IN_FLIGHT`] reads busy while a window's paths
/// stay a few hundred KB.
const FILES_PER_WINDOW: usize = 1024;
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

/// A partition's values as the metastore holds them (`None` for an unpartitioned table),
/// shared by the files listed in it.
pub(super) type Values = Option<Arc<[String]>>;

/// One data file as a migration sees it.
pub(super) struct FileFacts {
    pub(super) partition: Values,
    pub(super) location: Location,
    pub(super) length: u64,
    pub(super) tail: Result<Option<(OrcTail, TailStatistics)>, String>,
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

/// Takes each readable data file of a scan, in order, while nothing blocks the move.
pub(super) trait FileSink {
    /// Called while the window's other footer reads are in flight, unpolled: no I/O here.
    fn take(&mut self, file: FileFacts) -> anyhow::Result<()>;
    /// Called between windows, when no footer read is in flight: the place for writes.
    async fn settle(&mut self) -> anyhow::Result<()>;
}

/// A scan that only counts (`check`, a dry run).
pub(super) struct Count;

impl FileSink for Count {
    fn take(&mut self, _: FileFacts) -> anyhow::Result<()> {
        Ok(())
    }

    async fn settle(&mut self) -> anyhow::Result<()> {
        Ok(())
    }
}

/// Everything learnt by listing and reading every footer.
pub(super) struct Scan {
    pub(super) costs: Costs,
    pub(super) blocks: Vec<Refusal>,
    /// What a commit checks is still there.
    pub(super) listing: Listing,
}

/// What a walk over the table saw: the partitions as the metastore described them, and the
/// data files with their lengths, each in order. Hashes rather than copies, so a table of a
/// million files is not held again while the commit's lock is taken.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Listing {
    pub(super) partitions: Fingerprint,
    pub(super) files: Fingerprint,
}

/// How many items were hashed, and their 128-bit hash.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Fingerprint {
    items: u64,
    hash: u128,
}

/// Folds items into a [`Fingerprint`] as they are seen.
#[derive(Default, Clone)]
pub(super) struct Hasher {
    items: u64,
    state: xxhash_rust::xxh3::Xxh3,
}

impl Hasher {
    /// The file `name` in `dir`, from the location's parts, so no path is built to hash it.
    pub(super) fn file(&mut self, dir: &Location, name: &str, length: u64) {
        self.items += 1;
        for part in [&dir.fs, &dir.path, name] {
            // Lengths delimit the parts: no two listings hash alike by shifting bytes.
            self.state.update(&(part.len() as u64).to_le_bytes());
            self.state.update(part.as_bytes());
        }
        self.state.update(&length.to_le_bytes());
    }

    /// Everything the metastore says of a partition, as its Thrift encoding (self-delimiting).
    pub(super) fn partition(&mut self, p: &Partition) -> anyhow::Result<()> {
        self.items += 1;
        p.write_to_out_protocol(&mut TBinaryOutputProtocol::new(&mut *self, true))?;
        Ok(())
    }

    pub(super) fn finish(&self) -> Fingerprint {
        Fingerprint {
            items: self.items,
            hash: self.state.digest128(),
        }
    }
}

impl std::io::Write for Hasher {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.state.update(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// A data file to describe: its partition's values, its path and length.
pub(super) type Listed = (Values, Location, u64);

/// Walks a table's directories in order of partition names: a page of partitions from the
/// metastore at a time, checking partition values and directories on the way, listing
/// directories a window of files at a time.
struct Walk<'a> {
    hdfs: &'a Hdfs,
    metastore: &'a Metastore,
    source: &'a Source,
    options: &'a CheckOptions,
    table_location: Location,
    key_types: Vec<&'a HiveType>,
    pages: std::slice::Chunks<'a, String>,
    page: std::vec::IntoIter<Partition>,
    /// The table directory of an unpartitioned table, until it is listed.
    unpartitioned: Option<Location>,
    values: Problems,
    subdirs: Problems,
    partitions: Hasher,
    files: Hasher,
    costs: Costs,
    blocks: Vec<Refusal>,
}

impl<'a> Walk<'a> {
    fn new(
        hdfs: &'a Hdfs,
        metastore: &'a Metastore,
        source: &'a Source,
        options: &'a CheckOptions,
    ) -> anyhow::Result<Self> {
        let table_location = source.location()?;
        let unpartitioned = source
            .partition_keys()
            .is_empty()
            .then(|| table_location.clone());
        Ok(Walk {
            hdfs,
            metastore,
            source,
            options,
            table_location,
            key_types: source.columns[source.data_columns..]
                .iter()
                .map(|(_, t)| t)
                .collect(),
            pages: source.partition_pages(metastore.page_size()),
            page: Vec::new().into_iter(),
            unpartitioned,
            values: Problems::default(),
            subdirs: Problems::default(),
            partitions: Hasher::default(),
            files: Hasher::default(),
            costs: Costs::default(),
            blocks: vec![],
        })
    }

    /// Whether anything found so far blocks the move.
    fn blocked(&self) -> bool {
        !self.blocks.is_empty() || self.values.count > 0 || self.subdirs.count > 0
    }

    /// The next directory to list, with its partition's values; partitions that cannot move
    /// are counted as blocks and skipped.
    async fn next_dir(&mut self) -> anyhow::Result<Option<(Values, Location)>> {
        if let Some(dir) = self.unpartitioned.take() {
            return Ok(Some((None, dir)));
        }
        loop {
            let Some(p) = self.page.next() else {
                let Some(names) = self.pages.next() else {
                    return Ok(None);
                };
                let page = self.source.partition_page(self.metastore, names).await?;
                self.page = page.into_iter();
                continue;
            };
            self.partitions.partition(&p)?;
            self.costs.partitions += 1;
            let name = self.source.partition_name(&p);
            let vals = p.values.clone().unwrap_or_default();
            if vals.iter().any(|v| v == HIVE_DEFAULT_PARTITION) {
                self.costs.null_partitions += 1;
            }
            for (t, v) in self.key_types.iter().zip(&vals) {
                if let Err(e) = partition::value(t, v) {
                    self.values.add(format!("{name}: {e}"));
                }
            }
            let info = crate::table::PartitionInfo::from(&p);
            if let Err(r) = eligibility::check_partition(&info.storage) {
                self.blocks.push(Refusal::new(
                    r.rule,
                    format!("partition {name}: {}", r.reason),
                ));
                continue;
            }
            let Some(loc) = info.storage.location.as_deref() else {
                self.blocks.push(Refusal::new(
                    Rule::NotHdfs,
                    format!("partition {name} has no location"),
                ));
                continue;
            };
            let loc = Location::parse(loc).map_err(|e| anyhow!("partition {name}: {e}"))?;
            if loc != self.table_location.child(&name) {
                self.costs
                    .non_canonical_partitions
                    .push(format!("{name} at {loc}"));
            }
            return Ok(Some((Some(vals.into()), loc)));
        }
    }

    /// The next files in order: whole directories, until at least [`FILES_PER_WINDOW`] or the
    /// end of the table (then none). Fills the listing part of the costs and the fingerprints.
    async fn next_window(&mut self) -> anyhow::Result<Vec<Listed>> {
        let mut window = vec![];
        while window.len() < FILES_PER_WINDOW {
            let Some((partition, dir)) = self.next_dir().await? else {
                break;
            };
            let listing = self
                .hdfs
                .list(&dir)
                .await
                .with_context(|| format!("listing {dir}"))?
                .ok_or_else(|| {
                    anyhow!("{dir} does not exist; run MSCK REPAIR or drop the partition")
                })?;
            if !listing.subdirs.is_empty() {
                self.subdirs
                    .add(format!("{dir}: {}", listing.subdirs.join(", ")));
            }
            let bytes: u64 = listing.files.iter().map(|f| f.length).sum();
            self.costs.small_files += listing
                .files
                .iter()
                .filter(|f| f.length < self.options.small_file_size)
                .count() as u64;
            let needed = bytes.div_ceil(self.options.target_size.max(1));
            self.costs.excess_files += (listing.files.len() as u64).saturating_sub(needed);
            for f in listing.files {
                self.files.file(&dir, &f.name, f.length);
                window.push((partition.clone(), dir.child(&f.name), f.length));
            }
        }
        Ok(window)
    }

    /// The costs, every block found while listing, and what was listed.
    fn finish(mut self) -> (Costs, Vec<Refusal>, Listing) {
        self.blocks.extend(self.values.block(
            Rule::PartitionValue,
            "partition values Iceberg cannot express",
        ));
        self.blocks.extend(self.subdirs.block(
            Rule::Subdirectories,
            "directories hold subdirectories Hive does not read and Iceberg would not list",
        ));
        let listing = Listing {
            partitions: self.partitions.finish(),
            files: self.files.finish(),
        };
        (self.costs, self.blocks, listing)
    }
}

/// Lists the table again without reading a footer: what a commit compares with its scan's
/// [`Listing`] while its lock keeps Hive's queries waiting.
pub(super) async fn relist(
    hdfs: &Hdfs,
    metastore: &Metastore,
    source: &Source,
    options: &CheckOptions,
) -> anyhow::Result<Listing> {
    let mut walk = Walk::new(hdfs, metastore, source, options)?;
    while !walk.next_window().await?.is_empty() {}
    Ok(walk.finish().2)
}

/// Lists every partition (or the table directory) a window at a time and reads the window's
/// footers, [`FOOTERS_IN_FLIGHT`] at a time, handing each readable file to `sink` in order
/// while no block is found.
pub(super) async fn scan(
    hdfs: &Hdfs,
    metastore: &Metastore,
    source: &Source,
    options: &CheckOptions,
    cancel: &CancellationToken,
    sink: &mut impl FileSink,
) -> anyhow::Result<Scan> {
    let mut walk = Walk::new(hdfs, metastore, source, options)?;
    let mut unreadable = Problems::default();
    let mut mismatched = Problems::default();
    let data_columns: Vec<String> = source.columns[..source.data_columns]
        .iter()
        .map(|(n, _)| n.clone())
        .collect();
    loop {
        let window = walk.next_window().await?;
        if window.is_empty() {
            break;
        }
        let facts = futures::stream::iter(window)
            .map(|(partition, location, length)| async move {
                let tail = match hdfs.open(&location).await {
                    Ok(reader) => read_tail_with_statistics(&reader)
                        .await
                        .map_err(|e| e.to_string()),
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
        while let Some(f) = facts.next().await {
            if cancel.is_cancelled() {
                bail!("interrupted");
            }
            let costs = &mut walk.costs;
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
                Ok(Some((tail, _))) => {
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
            if !walk.blocked() && unreadable.count == 0 && mismatched.count == 0 {
                sink.take(f)?;
            }
        }
        sink.settle().await?;
    }
    let (costs, mut blocks, listing) = walk.finish();
    blocks.extend(unreadable.block(Rule::UnreadableFile, "files are not readable ORC"));
    blocks.extend(mismatched.block(
        Rule::FileSchema,
        "files hold types the table's schema cannot read through a name mapping",
    ));
    Ok(Scan {
        costs,
        blocks,
        listing,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fingerprint(files: &[(&str, &str, u64)]) -> Fingerprint {
        let mut h = Hasher::default();
        for (dir, name, length) in files {
            h.file(&Location::parse(dir).unwrap(), name, *length);
        }
        h.finish()
    }

    #[test]
    fn a_fingerprint_changes_with_any_path_length_or_order() {
        let a = [("hdfs://nn/t/p=1", "a", 10), ("hdfs://nn/t/p=1", "b", 20)];
        assert_eq!(fingerprint(&a), fingerprint(&a));
        for other in [
            vec![("hdfs://nn/t/p=1", "a", 10), ("hdfs://nn/t/p=1", "b", 21)],
            vec![("hdfs://nn/t/p=1", "a", 10), ("hdfs://nn/t/p=1", "c", 20)],
            vec![("hdfs://nn/t/p=1", "b", 20), ("hdfs://nn/t/p=1", "a", 10)],
            vec![("hdfs://nn/t/p=1", "a", 10)],
            vec![("hdfs://nn/t/p=1", "ab", 10), ("hdfs://nn/t/p=1", "", 20)],
            vec![("hdfs://nn/t/p=2", "a", 10), ("hdfs://nn/t/p=1", "b", 20)],
            vec![
                ("hdfs://other/t/p=1", "a", 10),
                ("hdfs://nn/t/p=1", "b", 20),
            ],
        ] {
            assert_ne!(fingerprint(&a), fingerprint(&other), "{other:?}");
        }
    }

    #[test]
    fn a_partition_fingerprint_changes_with_anything_the_metastore_says() {
        let p = Partition::new(
            vec!["2024-01-01".to_string()],
            None,
            None,
            None,
            None,
            None,
            None,
            None,
            None,
            None,
            None,
            None,
            None,
        );
        let of = |ps: &[&Partition]| {
            let mut h = Hasher::default();
            for p in ps {
                h.partition(p).unwrap();
            }
            h.finish()
        };
        assert_eq!(of(&[&p]), of(&[&p.clone()]));
        let mut changed = p.clone();
        changed.parameters = Some([("k".to_string(), "v".to_string())].into());
        assert_ne!(of(&[&p]), of(&[&changed]));
        assert_ne!(of(&[&p]), of(&[&p, &p]));
    }
}
