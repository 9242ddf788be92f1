//! ORC tails, the stripe-level merge and the re-encode, as a pure engine.
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
//! The other way to make an output, for tiny stripes: [`reencode()`] decodes the inputs' rows
//! (orc-rust) and writes them with [`OrcWriter`], digesting every column ([`Digester`]) on the
//! way; [`digest_file`] decodes the output again, and the [`Digests`] must be equal.
//!
//! Rooms, each using only those below it (its `mod.rs` says which):
//! - `sort/`: the clustering re-encode (orders, sort keys, the external sort);
//! - `reencode/`: decoding, the ORC writer, re-encoded outputs and their read-back;
//! - `verify/`: stripe-copied outputs against their plans, value hashes of decoded rows;
//! - `merge/`: the merge key, planning and the stripe-copying writer;
//! - `statistics/`: column statistics merged, checked and read as ranges;
//! - `tail/`: reading and checking a file's tail, and what is held of it;
//! - `io/`: reads, sinks and the bounded copy loop; `encoding/`: each stream encoding;
//! - at the ground, `error.rs` and `marks.rs` (the field metadata keys decode, write and the
//!   value hashes share), which every room may use.
//!
//! This file only declares the rooms and hands on the names the rest of the crate uses.

mod encoding;
mod error;
mod io;
mod marks;
mod merge;
mod reencode;
mod sort;
mod statistics;
mod tail;
mod verify;

#[cfg(test)]
mod testutil;

pub use encoding::compress::Compression;
pub use error::{OrcError, VerifyFailure};
pub(crate) use io::copy::Task;
pub use io::copy::{copy_pieces, Discard, Piece, ReadAhead};
pub(crate) use io::storage::{read_checked, SPECULATIVE_TAIL};
pub use io::storage::{RangeRead, Sink};
pub use merge::key::{
    calendar_free, group_tails, is_layout_item, layout_item, layout_of, merge_key, schema_groups,
    Grouping, MergeGroup, MergeKey, Unmergeable,
};
pub use merge::plan::{
    plan_group, GroupPlan, LeftAlone, OutputPlan, PlanOptions, PlannedStripe, DEFAULT_TARGET_SIZE,
};
pub use merge::writer::{write_merged, MergedOutput, StripeChecksum};
pub use reencode::decode::check_stored;
pub use reencode::output::{reencode, ReencodedOutput};
pub use reencode::read_back::digest_file;
pub use reencode::shape::OutputShape;
pub use reencode::write::{OrcWriter, WriterOptions, WrittenFile};
pub use sort::cluster::{cluster, ClusterOptions, ClusterSummary, Clustered};
pub use sort::external::remove_stale_spills;
pub use sort::order::{RowOrder, SortColumn};
pub use statistics::fold::{merge_column_statistics, StatisticsFold};
pub use statistics::ranges::{column_id, stripe_lookup_fraction};
pub use tail::orc_tail::{OrcTail, SharedFooters, StripeInfo, TailStatistics, ORC_MAGIC};
pub use tail::read::{read_statistics_again, read_tail, read_tail_with_statistics};
pub use verify::stripes::{verify_output, verify_tail};
pub use verify::value_hash::{ColumnDigest, Digester, Digests, RowsDigest};

/// The ORC protobuf messages (PostScript, Footer, Metadata, statistics), re-exported so callers
/// can inspect an [`OrcTail`] without depending on `orc-rust` themselves.
pub use orc_rust::proto;
