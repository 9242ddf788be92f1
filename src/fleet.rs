//! Fleet mode's engine: which tables and partitions a run looks at (a table or a database's
//! tables, every partition or a metastore filter, one shard of them), and what one listing of
//! each partition directory says about it. `analyze` reports these surveys; `compact` over a
//! selection uses them to skip, order and budget partitions before it reads any ORC file.

use std::sync::Arc;

use futures::StreamExt;
use xxhash_rust::xxh3::xxh3_64;

use crate::census::{namenode_objects, SizeHistogram};
use crate::eligibility::{self, Refusal, Rule};
use crate::hdfs::{Hdfs, Location};
use crate::metastore::Metastore;
use crate::partition_spec::PartitionSpec;
use crate::resolve::{self, ResolveError, TableName};
use crate::snapshot::{check_listing, FileSizes};
use crate::table::{PartitionInfo, TableInfo};

/// Partition directories listed at once: hides NameNode latency without flooding it.
pub const LISTINGS_IN_FLIGHT: usize = 16;

/// Which tables a run covers.
#[derive(Debug, Clone)]
pub enum Tables {
    One(TableName),
    /// Tables named one by one, in this order (a work list's).
    Named(Vec<TableName>),
    /// A database's tables, optionally only those whose name matches a glob (`events_*`).
    Database {
        db: String,
        glob: Option<globset::GlobMatcher>,
    },
}

impl Tables {
    /// `glob` uses shell syntax (`*`, `?`, `[abc]`, `{a,b}`), matched against the bare table
    /// name, case-insensitively as Hive stores names lower-cased.
    pub fn database(db: &str, glob: Option<&str>) -> Result<Self, globset::Error> {
        let glob = glob
            .map(|g| {
                globset::GlobBuilder::new(g)
                    .case_insensitive(true)
                    .literal_separator(true)
                    .build()
                    .map(|g| g.compile_matcher())
            })
            .transpose()?;
        Ok(Tables::Database {
            db: db.to_ascii_lowercase(),
            glob,
        })
    }
}

/// Which partitions of each table.
#[derive(Debug, Clone)]
pub enum Partitions {
    All,
    /// A metastore filter (`dt < '2026-11-01'`), evaluated by the server.
    Where(String),
    /// Specs as the user typed them; resolved (and refused when wrong) one by one.
    Specs(Vec<String>),
    /// Partitions of several tables, each named by its table: a work list made by an earlier
    /// selection (`compact --partitions-from`), resolved one by one like typed specs.
    Listed(Vec<(TableName, String)>),
}

impl Partitions {
    /// Each partition was named, not selected: reported on its own (refusals included), in the
    /// order given, and left to `compact` whatever the thresholds say.
    pub fn named_one_by_one(&self) -> bool {
        matches!(self, Partitions::Specs(_) | Partitions::Listed(_))
    }

    /// A work list's lines, `db.table/partition-name` (what [`Candidate::key`] gives), into
    /// partitions and the tables they name in first-seen order. Blank lines are ignored.
    pub fn from_keys<'a>(
        lines: impl IntoIterator<Item = &'a str>,
    ) -> Result<(Vec<TableName>, Partitions), String> {
        let mut tables: Vec<TableName> = Vec::new();
        let mut listed = Vec::new();
        for (n, line) in lines.into_iter().enumerate() {
            let line = line.trim_end_matches(['\r', '\n']);
            if line.trim().is_empty() {
                continue;
            }
            let bad = |why: &str| format!("line {}: '{line}' {why}", n + 1);
            let (table, spec) = line
                .split_once('/')
                .ok_or_else(|| bad("is not db.table/partition-name"))?;
            let table: TableName = table.parse().map_err(|e: String| bad(&e))?;
            if spec.is_empty() {
                return Err(bad("names no partition"));
            }
            if !tables.contains(&table) {
                tables.push(table.clone());
            }
            listed.push((table, spec.to_string()));
        }
        Ok((tables, Partitions::Listed(listed)))
    }
}

/// `K/N`: this host takes the candidates whose stable hash falls in bucket K of N. Every host
/// computes the same split from the names alone, so N hosts given 1/N..N/N share a database
/// without overlap or gaps, whatever order the metastore lists things in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shard {
    pub index: u64,
    pub count: u64,
}

impl std::str::FromStr for Shard {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let bad = || format!("'{s}' is not a shard: write K/N with 1 <= K <= N, e.g. 2/3");
        let (k, n) = s.split_once('/').ok_or_else(bad)?;
        let (index, count): (u64, u64) = (
            k.trim().parse().map_err(|_| bad())?,
            n.trim().parse().map_err(|_| bad())?,
        );
        if index == 0 || index > count {
            return Err(bad());
        }
        Ok(Shard { index, count })
    }
}

impl Shard {
    /// Whether `key` (`db.table/partition-name`) belongs to this shard. XXH3 is fixed by its
    /// specification, so the split does not change with the build or the platform.
    pub fn contains(&self, key: &str) -> bool {
        xxh3_64(key.as_bytes()) % self.count == self.index - 1
    }
}

/// What a run selects: tables, partitions of each, and optionally one shard of them.
#[derive(Debug, Clone)]
pub struct Selection {
    pub tables: Tables,
    pub partitions: Partitions,
    pub shard: Option<Shard>,
}

/// One partition (or an unpartitioned table's directory) a run considers.
#[derive(Debug, Clone)]
pub struct Candidate {
    pub table: Arc<TableInfo>,
    /// The escaped name `SHOW PARTITIONS` prints; a spec as typed for [`Partitions::Specs`];
    /// empty for an unpartitioned table's directory.
    pub name: String,
    /// As the metastore returned it; `None` for a typed spec not resolved yet, and for a listed
    /// name until its page is fetched ([`fetched`]).
    pub partition: Option<PartitionInfo>,
    /// `name` is the metastore's own, from listing the table's partition names: it is fetched
    /// with its page, not resolved one by one as a typed spec is.
    pub listed: bool,
}

impl Candidate {
    /// `db.table/partition-name`: what shards hash and reports name.
    pub fn key(&self) -> String {
        format!("{}/{}", self.table.qualified_name(), self.name)
    }
}

/// A table the selection matched, with the candidates it holds, or why it has none.
#[derive(Debug)]
pub struct TableSelection {
    pub table: Arc<TableInfo>,
    /// The table-level refusal: its partitions are not listed at all.
    pub refusal: Option<Refusal>,
    pub candidates: Vec<Candidate>,
    /// Listing the table's partitions failed (e.g. a filter on a column that is not a
    /// partition key); the other tables go on.
    pub error: Option<String>,
}

/// Reads the tables the selection names, in name order. A named table that does not exist is an
/// error; tables of a database that vanish while it is read are left out.
pub async fn tables(metastore: &Metastore, tables: &Tables) -> anyhow::Result<Vec<TableInfo>> {
    match tables {
        Tables::One(name) => Ok(vec![resolve::table(metastore, name).await?]),
        Tables::Named(names) => {
            let mut out = Vec::with_capacity(names.len());
            for name in names {
                out.push(resolve::table(metastore, name).await?);
            }
            Ok(out)
        }
        Tables::Database { db, glob } => {
            let mut names = metastore
                .tables(db, None)
                .await
                .map_err(|e| anyhow::anyhow!("listing the tables of database {db}: {e}"))?;
            names.retain(|n| glob.as_ref().is_none_or(|g| g.is_match(n)));
            names.sort();
            let mut out = Vec::with_capacity(names.len());
            for name in names {
                let name = TableName {
                    db: db.clone(),
                    table: name,
                };
                match metastore.get_table(&name.db, &name.table).await {
                    Ok(t) => out.push(TableInfo::from(&t)),
                    Err(crate::metastore::MetastoreError::NotFound { .. }) => {}
                    Err(e) => anyhow::bail!("reading table {name} from the metastore: {e}"),
                }
            }
            Ok(out)
        }
    }
}

/// The candidates of every selected table, sharded. Table-level refusals and listing errors are
/// recorded per table, not raised: a fleet run reports them and goes on with the other tables.
pub async fn select(
    metastore: &Metastore,
    selection: &Selection,
) -> anyhow::Result<Vec<TableSelection>> {
    let mut out = Vec::new();
    for info in tables(metastore, &selection.tables).await? {
        let table = Arc::new(info);
        let mut found = TableSelection {
            table: table.clone(),
            refusal: eligibility::check_table(&table).err(),
            candidates: vec![],
            error: None,
        };
        // Typed specs are each reported on their own, refusal included, as `compact` does.
        if found.refusal.is_none() || selection.partitions.named_one_by_one() {
            match candidates(metastore, &table, &selection.partitions).await {
                Ok(mut c) => {
                    if let Some(shard) = &selection.shard {
                        c.retain(|c| shard.contains(&c.key()));
                    }
                    found.candidates = c;
                }
                Err(e) => found.error = Some(format!("{e:#}")),
            }
        }
        out.push(found);
    }
    Ok(out)
}

async fn candidates(
    metastore: &Metastore,
    table: &Arc<TableInfo>,
    partitions: &Partitions,
) -> anyhow::Result<Vec<Candidate>> {
    let candidate = |name: String, partition: Option<PartitionInfo>| Candidate {
        table: table.clone(),
        name,
        partition,
        listed: false,
    };
    let named = |p: &crate::metastore::Partition| {
        let info = PartitionInfo::from(p);
        candidate(name_of(table, &info), Some(info))
    };
    let what = table.qualified_name();
    match partitions {
        Partitions::Specs(specs) => {
            return Ok(specs.iter().map(|s| candidate(s.clone(), None)).collect())
        }
        Partitions::Listed(listed) => {
            return Ok(listed
                .iter()
                .filter(|(t, _)| t.db == table.db && t.table == table.name)
                .map(|(_, s)| candidate(s.clone(), None))
                .collect())
        }
        Partitions::All | Partitions::Where(_) => {}
    }
    if table.partition_keys.is_empty() {
        let dir = PartitionInfo {
            values: vec![],
            params: table.params.clone(),
            storage: table.storage.clone(),
        };
        return Ok(vec![candidate(String::new(), Some(dir))]);
    }
    let mut out: Vec<Candidate> = match partitions {
        Partitions::Where(filter) => metastore
            .partitions_by_filter(&table.db, &table.name, filter, None)
            .await
            .map_err(|e| anyhow::anyhow!("partitions of {what} where {filter}: {e}"))?
            .iter()
            .map(named)
            .collect(),
        // Names only: a table of 100,000 partitions is fetched a page at a time as it is
        // surveyed, so memory holds names, not every partition's storage and parameters.
        _ => metastore
            .partition_names(&table.db, &table.name)
            .await
            .map_err(|e| anyhow::anyhow!("listing the partitions of {what}: {e}"))?
            .into_iter()
            .map(|name| Candidate {
                listed: true,
                ..candidate(name, None)
            })
            .collect(),
    };
    out.sort_by(|a: &Candidate, b| a.name.cmp(&b.name));
    Ok(out)
}

fn name_of(table: &TableInfo, info: &PartitionInfo) -> String {
    PartitionSpec::from_values(&table.partition_keys, &info.values).name()
}

/// The candidates in their order, each listed one with its partition read from the metastore,
/// one call per [`Metastore::page_size`] names of a table. A page that cannot be read, or a name
/// it no longer holds, leaves the candidate unfetched: [`survey`] then resolves it on its own
/// and reports why it failed.
pub fn fetched(
    metastore: &Metastore,
    candidates: Vec<Candidate>,
) -> impl futures::Stream<Item = Candidate> + '_ {
    let mut pages = Vec::new();
    let mut rest = candidates.into_iter().peekable();
    while rest.peek().is_some() {
        pages.push(
            rest.by_ref()
                .take(metastore.page_size())
                .collect::<Vec<_>>(),
        );
    }
    futures::stream::iter(pages)
        .then(move |page| fetch_page(metastore, page))
        .flat_map(futures::stream::iter)
}

async fn fetch_page(metastore: &Metastore, mut page: Vec<Candidate>) -> Vec<Candidate> {
    // A batch's page may hold the names of several tables.
    let mut by_table: Vec<(Arc<TableInfo>, Vec<String>)> = Vec::new();
    for c in page.iter().filter(|c| c.listed && c.partition.is_none()) {
        match by_table.iter_mut().find(|(t, _)| Arc::ptr_eq(t, &c.table)) {
            Some((_, names)) => names.push(c.name.clone()),
            None => by_table.push((c.table.clone(), vec![c.name.clone()])),
        }
    }
    for (table, names) in by_table {
        let found = match metastore
            .partitions_by_names(&table.db, &table.name, &names)
            .await
        {
            Ok(found) => found,
            Err(e) => {
                tracing::warn!(
                    "reading {} partitions of {} at once: {e}; reading them one by one",
                    names.len(),
                    table.qualified_name()
                );
                continue;
            }
        };
        let mut infos: std::collections::HashMap<String, PartitionInfo> = found
            .iter()
            .map(|p| {
                let info = PartitionInfo::from(p);
                (name_of(&table, &info), info)
            })
            .collect();
        for c in page.iter_mut().filter(|c| Arc::ptr_eq(&c.table, &table)) {
            if c.partition.is_none() {
                c.partition = infos.remove(&c.name);
            }
        }
    }
    page
}

/// What one listing of a candidate's directory shows, and whether the tool may compact it.
#[derive(Debug, Clone)]
pub struct Survey {
    pub candidate: Candidate,
    pub location: Option<String>,
    pub sizes: FileSizes,
    /// The data files' sizes on a log scale.
    pub histogram: SizeHistogram,
    /// The data files' inodes and blocks.
    pub namenode_objects: u64,
    /// The largest block size among the data files: what merged outputs are estimated with.
    pub block_size: Option<u64>,
    /// Data files smaller than the `small_file_size` the survey was taken with.
    pub small_files: usize,
    /// Their bytes.
    pub small_bytes: u64,
    /// The newest data file's modification time (ms since the epoch): a recent one means a
    /// writer may still be adding files.
    pub newest_modification: Option<u64>,
    pub refusal: Option<Refusal>,
    /// The partition could not be judged (listing failed, directory gone): `compact` would fail.
    pub error: Option<String>,
}

impl Survey {
    pub fn eligible(&self) -> bool {
        self.refusal.is_none() && self.error.is_none()
    }

    /// Files the data would fill at `target_size` each: `ceil(bytes / target)`.
    pub fn files_needed(&self, target_size: u64) -> usize {
        self.sizes.bytes.div_ceil(target_size.max(1)) as usize
    }

    /// Files compaction could remove at best: files beyond those needed.
    pub fn excess_files(&self, target_size: u64) -> usize {
        self.sizes
            .count
            .saturating_sub(self.files_needed(target_size))
    }

    /// Bytes in healthy files: all of them when the partition holds no more files than its
    /// data needs, else those in files of at least the small-file size of the survey.
    pub fn healthy_bytes(&self, target_size: u64) -> u64 {
        match self.excess_files(target_size) {
            0 => self.sizes.bytes,
            _ => self.sizes.bytes - self.small_bytes,
        }
    }

    pub fn mean_size(&self) -> u64 {
        self.sizes
            .bytes
            .checked_div(self.sizes.count as u64)
            .unwrap_or(0)
    }
}

/// Surveys candidates, [`LISTINGS_IN_FLIGHT`] at a time, yielding them in the given order as
/// they are done, so a caller that keeps only a summary of each runs in memory bounded by the
/// names, not by the partitions.
pub fn surveys<'a>(
    metastore: &'a Metastore,
    hdfs: &'a Hdfs,
    candidates: Vec<Candidate>,
    small_file_size: u64,
) -> impl futures::Stream<Item = Survey> + 'a {
    fetched(metastore, candidates)
        .map(move |c| survey(metastore, hdfs, c, small_file_size))
        .buffered(LISTINGS_IN_FLIGHT)
}

/// One listing call for the candidate's directory (and, for a typed spec, one metastore read).
/// Applies the same partition rules `compact` does before it reads any file.
pub async fn survey(
    metastore: &Metastore,
    hdfs: &Hdfs,
    mut candidate: Candidate,
    small_file_size: u64,
) -> Survey {
    let mut s = Survey {
        candidate: candidate.clone(),
        location: None,
        sizes: FileSizes::of(&[]),
        histogram: SizeHistogram::default(),
        namenode_objects: 0,
        block_size: None,
        small_files: 0,
        small_bytes: 0,
        newest_modification: None,
        refusal: None,
        error: None,
    };
    if let Err(r) = eligibility::check_table(&candidate.table) {
        s.refusal = Some(r);
        return s;
    }
    let partition = match candidate.partition.take() {
        Some(p) => p,
        None => match resolve::partition(metastore, &candidate.table, &candidate.name).await {
            Ok((spec, p)) => {
                s.candidate.name = spec.name();
                s.candidate.partition = Some(p.clone());
                p
            }
            Err(ResolveError::Refused(r)) => {
                s.refusal = Some(r);
                return s;
            }
            Err(ResolveError::Other(e)) => {
                s.error = Some(format!("{e:#}"));
                return s;
            }
        },
    };
    s.location = partition.storage.location.clone();
    if let Err(r) = eligibility::check_partition(&partition.storage) {
        s.refusal = Some(r);
        return s;
    }
    let Some(location) = s.location.as_deref() else {
        s.refusal = Some(Refusal::new(Rule::NotHdfs, "it has no location"));
        return s;
    };
    let location = match Location::parse(location) {
        Ok(l) => l,
        Err(e) => {
            s.refusal = Some(Refusal::new(Rule::NotHdfs, e.to_string()));
            return s;
        }
    };
    let listing = match hdfs.list(&location).await {
        Ok(listing) => listing,
        Err(e) => {
            s.error = Some(e.to_string());
            return s;
        }
    };
    if let Some(listing) = &listing {
        let lengths: Vec<u64> = listing.files.iter().map(|f| f.length).collect();
        s.sizes = FileSizes::of(&lengths);
        s.histogram = SizeHistogram::of(lengths.iter().copied());
        s.namenode_objects = listing
            .files
            .iter()
            .map(|f| namenode_objects(f.length, f.block_size))
            .sum();
        s.block_size = listing.files.iter().filter_map(|f| f.block_size).max();
        let small = lengths.iter().filter(|&&l| l < small_file_size);
        s.small_files = small.clone().count();
        s.small_bytes = small.sum();
        s.newest_modification = listing.files.iter().map(|f| f.modification_time).max();
    }
    // The same rule, and the same refusal worded the same, as compact's snapshot.
    if let Err(e) = check_listing(&location, listing) {
        match e.refusal() {
            Some(r) => s.refusal = Some(r),
            None => s.error = Some(e.to_string()),
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn work_lists_name_partitions_of_several_tables() {
        let (tables, partitions) = Partitions::from_keys(
            "s.events/dt=2026-11-01\nS.Events/dt=2026-11-02/h=01\n\nother/n=1\n".lines(),
        )
        .unwrap();
        let names: Vec<String> = tables.iter().map(|t| t.to_string()).collect();
        assert_eq!(names, ["s.events", "default.other"]);
        let Partitions::Listed(listed) = partitions else {
            panic!("listed")
        };
        let specs: Vec<&str> = listed.iter().map(|(_, s)| s.as_str()).collect();
        assert_eq!(specs, ["dt=2026-11-01", "dt=2026-11-02/h=01", "n=1"]);
        for bad in ["s.events", "s.events/", "a.b.c/dt=1"] {
            let e = Partitions::from_keys([bad]).unwrap_err();
            assert!(e.starts_with("line 1: "), "{e}");
        }
    }

    #[test]
    fn shards_parse_and_partition_keys() {
        assert_eq!("2/3".parse::<Shard>(), Ok(Shard { index: 2, count: 3 }));
        for bad in ["0/3", "4/3", "3", "a/b", "1/0"] {
            assert!(bad.parse::<Shard>().is_err(), "{bad}");
        }
        let shards: Vec<Shard> = (1..=3).map(|k| format!("{k}/3").parse().unwrap()).collect();
        for i in 0..200 {
            let key = format!("db.t/dt=2026-01-{i}");
            let owners = shards.iter().filter(|s| s.contains(&key)).count();
            assert_eq!(owners, 1, "{key}");
        }
    }

    #[test]
    fn table_globs_match_bare_names() {
        let Tables::Database { glob: Some(g), .. } = Tables::database("DB", Some("ev*")).unwrap()
        else {
            panic!("a glob");
        };
        assert!(g.is_match("events") && g.is_match("EVENTS_2"));
        assert!(!g.is_match("old_events"));
    }
}
