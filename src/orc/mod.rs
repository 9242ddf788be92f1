//! ORC tails and the stripe-level merge, as a pure engine.
//!
//! This module knows nothing about HDFS or the metastore: it reads bytes through [`RangeRead`]
//! and writes them through [`Sink`], so the same code runs against HDFS in production and
//! against local files in tests. The rules it follows are in docs/design/orc-merge.md; in short, stripes
//! are copied byte for byte and only the file tail (Metadata, Footer, PostScript) is rebuilt.
//!
//! The flow for one partition: [`read_tail`] every file, [`group_tails`] by [`MergeKey`],
//! [`plan_group`] each group into [`OutputPlan`]s, [`write_merged`] each plan, re-read the
//! output's tail and [`verify_output`] it (or only [`verify_tail`]). Every byte copy, and the
//! re-read of verification, goes through [`copy_pieces`]: bounded chunks, reads and opens
//! running a few ahead of the sink, each chunk checked at the sink against its hash on read.
//!
//! The other way to make an output, for tiny stripes: [`reencode`] decodes the inputs' rows
//! (orc-rust) and writes them with [`OrcWriter`], digesting every column ([`Digester`]) on the
//! way; [`digest_file`] decodes the output again, and the [`Digests`] must be equal.

mod cluster;
mod copy;
mod decode;
mod digest;
mod encoding;
mod error;
mod io;
mod key;
mod marks;
mod merge;
mod order;
mod plan;
mod ranges;
mod reencode;
mod shape;
mod sort;
mod stats;
mod tail;
mod verify;
mod write;

#[cfg(test)]
mod testutil;

pub use cluster::{cluster, ClusterOptions, ClusterSummary, Clustered};
pub(crate) use copy::Task;
pub use copy::{copy_pieces, Discard, Piece, ReadAhead};
pub use decode::check_stored;
pub use digest::{ColumnDigest, Digester, Digests, RowsDigest};
pub use encoding::compress::Compression;
pub use error::{OrcError, VerifyFailure};
pub(crate) use io::{read_checked, SPECULATIVE_TAIL};
pub use io::{RangeRead, Sink};
pub use key::{
    calendar_free, group_tails, is_layout_item, layout_item, layout_of, merge_key, schema_groups,
    Grouping, MergeGroup, MergeKey, Unmergeable,
};
pub use merge::{write_merged, MergedOutput, StripeChecksum};
pub use order::{RowOrder, SortColumn};
pub use plan::{
    plan_group, GroupPlan, LeftAlone, OutputPlan, PlanOptions, PlannedStripe, DEFAULT_TARGET_SIZE,
};
pub use ranges::stripe_lookup_fraction;
pub use reencode::{digest_file, reencode, ReencodedOutput};
pub use shape::OutputShape;
pub use sort::remove_stale_spills;
pub use stats::{merge_column_statistics, StatisticsFold};
pub use tail::{
    read_statistics_again, read_tail, read_tail_with_statistics, OrcTail, SharedFooters,
    StripeInfo, TailStatistics,
};
pub use verify::{verify_output, verify_tail};
pub use write::{OrcWriter, WriterOptions, WrittenFile};

/// The ORC protobuf messages (PostScript, Footer, Metadata, statistics), re-exported so callers
/// can inspect an [`OrcTail`] without depending on `orc-rust` themselves.
pub use orc_rust::proto;

/// Every ORC file starts with these bytes, and a current PostScript ends with them too.
pub const ORC_MAGIC: &[u8; 3] = b"ORC";
