//! What a compaction run is told: sizes, verification level, lock, cancellation, and how its
//! outputs' stripes are made.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use tokio_util::sync::CancellationToken;

use crate::lock::LockOptions;
use crate::orc::{Compression, PlanOptions, ReadAhead, RowOrder};

#[derive(Debug, Clone)]
pub struct CompactOptions {
    pub target_size: u64,
    /// Files at least this fraction of the target are left as they are.
    pub large_file_fraction: f64,
    pub dry_run: bool,
    /// Chunk size and read-ahead of every copy and re-read: bounds memory per output.
    pub read_ahead: ReadAhead,
    /// How much of each new file step 5 reads back from HDFS.
    pub verify: VerifyLevel,
    /// Cancelled on SIGINT/SIGTERM: a run checks it between the steps before the swap and
    /// stops there, cleaning up as after any failure; past the swap it finishes.
    pub cancel: CancellationToken,
    /// The metastore lock held from the snapshot to the journal (not taken by a dry run).
    pub lock: LockOptions,
    /// Held from the final re-check through the swap, so a batch swaps one partition at a time:
    /// concurrent `alter_partition` calls on one table deadlock in the metastore's database
    /// (seen on Derby: minutes of internal retries), and a swap is quick anyway.
    pub swap_gate: Arc<tokio::sync::Mutex<()>>,
    /// Whether outputs copy their inputs' stripes or re-encode the rows (see [`Stripes`]).
    pub stripes: Stripes,
    /// With [`Stripes::Auto`], a merge group whose mean input stripe is smaller than this is
    /// re-encoded.
    pub min_stripe_size: u64,
    /// Re-encoded outputs close a stripe once it is this large (encoded).
    pub stripe_size: u64,
    /// A zero-length data file modified more recently than this is taken for a file being
    /// written, and the partition is busy: `--min-age` where it applies, else
    /// [`WRITE_IN_PROGRESS_AGE`].
    pub write_in_progress_age: Duration,
    /// The layout every output is rewritten in (`--sort-by`/`--zorder`, `--codec`), for every
    /// table; else the table's own from the config file ([`CompactOptions::layout_for`]).
    pub layout: Option<Layout>,
    /// Layouts from the config file, by `db.table`.
    pub table_layouts: Arc<BTreeMap<String, Layout>>,
    /// How much of a partition's work runs at once: outputs written and read back, inputs
    /// decoded ahead, columns read back. The run's threads shared among the partitions staged
    /// at once; the runtime's threads bound the CPU whatever this says, so more only holds
    /// more in memory. Outputs are the same bytes whatever it is.
    pub threads: usize,
}

/// A layout the outputs are asked to have beyond being few: rows in an order and a codec.
/// With one, every merge group of a partition is re-encoded, large files included, unless
/// its files already have this layout (the outputs record it in their user metadata), so
/// every cron run keeps the table's layout and a second run finds nothing to do.
#[derive(Debug, Clone, PartialEq)]
pub struct Layout {
    pub order: Option<RowOrder>,
    pub codec: Option<Compression>,
    /// The codec's level (zlib 0-9, zstd 1-22); `None`: the reference writers' default.
    pub codec_level: Option<i32>,
    /// Decoded bytes sorted in memory at once; more spill to `spill_dir`.
    pub sort_memory: u64,
    pub spill_dir: PathBuf,
}

/// `--sort-memory`'s default.
pub const DEFAULT_SORT_MEMORY: u64 = 256 << 20;

impl Layout {
    /// What the outputs record, and a later run compares: `sort(a ASC NULLS FIRST); codec=ZSTD:9`.
    pub fn marker(&self) -> String {
        let mut parts = Vec::new();
        if let Some(order) = &self.order {
            parts.push(order.to_string());
        }
        if let Some(codec) = self.codec {
            let name = format!("{codec:?}").to_ascii_uppercase();
            parts.push(match self.codec_level {
                Some(level) => format!("codec={name}:{level}"),
                None => format!("codec={name}"),
            });
        }
        parts.join("; ")
    }
}

impl CompactOptions {
    /// The layout asked for `table` (`db.table`): the command line's, else the config file's.
    pub fn layout_for(&self, table: &str) -> Option<&Layout> {
        self.layout
            .as_ref()
            .or_else(|| self.table_layouts.get(table))
    }

    /// The options of one of `partitions` staged at once by a run of `threads` threads: each
    /// gets its share of the threads (a lone partition all of them) and of every layout's
    /// `sort_memory`, the budget of the whole run.
    pub fn shared_by(&self, partitions: usize, threads: usize) -> CompactOptions {
        let partitions = partitions.max(1);
        let share = |layout: &Layout| Layout {
            sort_memory: (layout.sort_memory / partitions as u64).max(1),
            ..layout.clone()
        };
        CompactOptions {
            threads: threads.div_ceil(partitions).max(1),
            layout: self.layout.as_ref().map(share),
            table_layouts: Arc::new(
                self.table_layouts
                    .iter()
                    .map(|(table, layout)| (table.clone(), share(layout)))
                    .collect(),
            ),
            ..self.clone()
        }
    }
}

/// `--min-stripe-size`'s default: stripes this small are read stripe by stripe by Hive, Spark
/// and Impala (a footer read and stream reads each); only Trino coalesces stripes under 8 MB.
pub const DEFAULT_MIN_STRIPE_SIZE: u64 = 8 << 20;
/// `--stripe-size`'s default, the reference writers' own (`orc.stripe.size`).
pub const DEFAULT_STRIPE_SIZE: u64 = 64 << 20;

/// How young a zero-length file must be to count as a write in progress when no `--min-age`
/// applies (typed specs). Writers (Hive, Spark, MapReduce tasks) create their files empty and
/// HDFS lists a file under construction as empty, with its creation time, until a block is
/// complete; ten minutes outlasts the write of one small file, the kind compaction is for.
pub const WRITE_IN_PROGRESS_AGE: Duration = Duration::from_secs(600);

impl Default for CompactOptions {
    fn default() -> Self {
        let plan = PlanOptions::default();
        CompactOptions {
            target_size: plan.target_size,
            large_file_fraction: plan.large_file_fraction,
            dry_run: false,
            read_ahead: ReadAhead::default(),
            verify: VerifyLevel::default(),
            cancel: CancellationToken::new(),
            lock: LockOptions::default(),
            swap_gate: Arc::default(),
            stripes: Stripes::default(),
            min_stripe_size: DEFAULT_MIN_STRIPE_SIZE,
            stripe_size: DEFAULT_STRIPE_SIZE,
            write_in_progress_age: WRITE_IN_PROGRESS_AGE,
            layout: None,
            table_layouts: Arc::default(),
            threads: 1,
        }
    }
}

/// How step 5 (verify) proves the new files before the swap. Both levels re-read every output's
/// tail from HDFS and check rows per output and per stripe, stripe count, offsets and lengths as
/// planned, that stripes and tail cover the file exactly, and the file length; both check the
/// total rows against the snapshot; and every copy checks in process, chunk by chunk, that the
/// bytes handed to the HDFS writer are the bytes read from the input.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum VerifyLevel {
    /// The full bar: every stripe (every carried file) is re-read from HDFS and its XXH3
    /// compared with the input's. Reads the partition's bytes a second time.
    #[default]
    Full,
    /// Only tails are re-read; the stripe bytes rest on the in-process check and on HDFS's
    /// end-to-end CRC32C of the write pipeline (computed by the client, verified by the
    /// DataNode). Carried files: length from a status call, plus the in-process check.
    Tail,
}

impl VerifyLevel {
    pub fn as_str(self) -> &'static str {
        match self {
            VerifyLevel::Full => "full",
            VerifyLevel::Tail => "tail",
        }
    }
}

impl std::str::FromStr for VerifyLevel {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "full" => Ok(VerifyLevel::Full),
            "tail" => Ok(VerifyLevel::Tail),
            _ => Err(format!("'{s}' is not a verification level (full or tail)")),
        }
    }
}

/// How merged outputs get their stripes (`--stripes`). The choice is made per merge group when
/// planning and carried by the plan; every other step of the protocol is the same either way.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Stripes {
    /// Re-encode a group whose mean input stripe is under `min_stripe_size`, copy the others;
    /// a group whose values cannot be re-encoded exactly is copied, with the reason.
    #[default]
    Auto,
    /// Copy every group's stripes byte for byte.
    Copy,
    /// Re-encode every group; values that cannot be re-encoded exactly fail the partition.
    Rewrite,
}

impl Stripes {
    pub fn as_str(self) -> &'static str {
        match self {
            Stripes::Auto => "auto",
            Stripes::Copy => "copy",
            Stripes::Rewrite => "rewrite",
        }
    }
}

impl std::str::FromStr for Stripes {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "auto" => Ok(Stripes::Auto),
            "copy" => Ok(Stripes::Copy),
            "rewrite" => Ok(Stripes::Rewrite),
            _ => Err(format!(
                "'{s}' is not a stripe mode (auto, copy or rewrite)"
            )),
        }
    }
}
