//! Rows decoded with orc-rust's stream reader, over [`RangeRead`]: the reading half of a
//! re-encode, and of its verification.
//!
//! orc-rust asks for one stream at a time; on HDFS each ask would be a round trip (an 11-column
//! stripe has about 30 streams). So [`Chunks`] fetches the whole stripe an ask falls in and
//! serves the stripe's other streams from it: memory holds one stripe of one file, never the
//! file. A file no larger than the tail orc-rust reads first (16 KiB) is fetched in one read.
//! A decoder of one column ([`Decoder::open_column`]) fetches only what orc-rust asks for, the
//! streams of that column: reading a large stripe back column by column holds one column of
//! it, not the stripe.
//!
//! # Timestamps as stored
//!
//! ORC stores a plain `timestamp` as seconds from 2015-01-01 00:00:00 in the stripe's writer
//! time zone, plus nanoseconds; a reader turns them into a wall clock with its own time zone
//! database. orc-rust does that with chrono-tz, which disagrees with ORC Java's database before
//! 1900 (local mean time) and after 2037 (Java extends daylight saving time forever), and a
//! conversion there and back is not exact across DST gaps anyway. So [`Chunks`] serves orc-rust
//! every stripe footer without its writer time zone: orc-rust then hands over the stored
//! seconds and nanoseconds unconverted, counted from 2015-01-01 UTC, and [`Decoder::zone`] says
//! which zone they were stored in. Writing the same numbers back under the same zone (the
//! writer's `set_zone`) makes every reader, whatever its database, read the output as it read
//! the input. Timestamps come as [`TIMESTAMP_NANOS`] decimals, over every year ORC holds.
//!
//! # Null union rows
//!
//! An arrow union has no null bitmap, and orc-rust hands over a null union row as variant 0
//! holding a null: a row that is not null but holds a null variant-0 value reads the same.
//! ORC tells them apart (the union's own PRESENT stream), and so do Hive and both ORC readers.
//! So [`Chunks`] reads the PRESENT stream of every union column beside orc-rust, and the
//! [`Decoder`] hands each union over with one more variant, marked [`NULL_UNION_ROW`], that
//! the null rows take; the writer writes those rows back as null union rows.

use std::io;
use std::ops::Range;
use std::sync::{Arc, Mutex};

use std::collections::{BTreeMap, BTreeSet, HashMap};

use arrow::array::{
    new_null_array, Array, ArrayRef, AsArray, ListArray, MapArray, StructArray, UnionArray,
};
use arrow::buffer::BooleanBuffer;
use arrow::datatypes::{DataType, Field, Fields, Schema, SchemaRef, UnionFields};
use arrow::record_batch::RecordBatch;
use bytes::Bytes;
use futures::future::BoxFuture;
use futures::{FutureExt, StreamExt};
use orc_rust::projection::ProjectionMask;
use orc_rust::proto;
use orc_rust::reader::AsyncChunkReader;
use orc_rust::{ArrowReaderBuilder, ArrowStreamReader};
use prost::Message;

use crate::orc::encoding::byte_rle::decode_booleans;
use crate::orc::encoding::compress::{compress, decompress, Compression};
use crate::orc::encoding::int_rle::{all_unsigned, decode_signed, decode_unsigned};
use crate::orc::encoding::rle_v2::encode as rle_v2_encode;
use crate::orc::encoding::timestamp::{self, is_utc, Zone};
use crate::orc::error::OrcError;
use crate::orc::io::storage::{read_checked, RangeRead};
use crate::orc::marks::{NULL_UNION_ROW, TIMESTAMP_NANOS};
use crate::orc::tail::orc_tail::OrcTail;

/// What orc-rust reads of a file's end before it knows the tail's size.
const FIRST_TAIL_READ: u64 = 16 * 1024;

/// One file's byte ranges as orc-rust asks for them, served from at most one stripe and one
/// other range (the tail) held in memory.
struct Chunks<R> {
    reader: R,
    len: u64,
    /// Every stripe's bytes, in file order; empty when each ask is fetched as it is.
    stripes: Vec<Range<u64>>,
    stripe: Option<(u64, Bytes)>,
    other: Option<(u64, Bytes)>,
    /// The error behind the last failed read: orc-rust turns it into a message, and the
    /// [`Decoder`] needs to tell an I/O failure (or a changed file) from undecodable values.
    failure: Arc<Mutex<Option<OrcError>>>,
    /// Set when the file holds timestamps or the columns decoded hold unions: every stripe
    /// footer's range, served without its writer time zone (see the module docs), and what
    /// is read beside orc-rust as each footer is served.
    footers: Option<Footers>,
    /// Streams served in place of the file's bytes, by their offset: healed timestamp
    /// nanoseconds (see [`Chunks::read_beside`]), each as long as the stream it replaces.
    patches: Vec<(u64, Bytes)>,
    /// The columns whose nanoseconds were healed in any stripe so far.
    healed: Arc<Mutex<BTreeSet<u32>>>,
}

/// The stripe footers of a file with timestamps or unions, their writer time zones and the
/// unions' PRESENT streams.
struct Footers {
    ranges: Vec<Range<u64>>,
    /// Where each stripe starts: its streams follow one another from there.
    starts: Vec<u64>,
    compression: Compression,
    block_size: u64,
    /// The timestamp columns (of either kind), whose stored nanoseconds are checked.
    timestamps: Vec<u32>,
    zones: Arc<Mutex<Vec<Option<Zone>>>>,
    /// The union columns decoded, whose PRESENT streams are read.
    unions: Vec<u32>,
    /// Each stripe's, once its footer is served; taken by the [`Decoder`] as it marks rows.
    presents: Arc<Mutex<Vec<Option<Presence>>>>,
}

/// Per union column of a stripe, its PRESENT stream's bits; `None` when it has none (no row
/// is null).
type Presence = BTreeMap<u32, Option<Vec<bool>>>;

impl<R: RangeRead + Send> Chunks<R> {
    /// Serves the file `tail` was read from, when the columns `roots` (and what they hold) are
    /// decoded.
    fn new(reader: R, tail: &OrcTail, stripes: Vec<Range<u64>>, roots: &[u32]) -> Self {
        let timestamps: Vec<u32> = (0..tail.footer.types.len() as u32)
            .filter(|&c| is_timestamp(tail, c).is_some())
            .collect();
        let tree = Tree(&tail.footer.types);
        let mut unions = Vec::new();
        for &root in roots {
            tree.unions(root, &mut unions);
        }
        let footers = (!timestamps.is_empty() || !unions.is_empty()).then(|| Footers {
            ranges: tail
                .stripes
                .iter()
                .map(|s| s.offset + s.index_length + s.data_length..s.end())
                .collect(),
            compression: tail.compression,
            starts: tail.stripes.iter().map(|s| s.offset).collect(),
            block_size: tail.compression_block_size,
            timestamps,
            zones: Arc::new(Mutex::new(vec![None; tail.stripes.len()])),
            unions,
            presents: Arc::new(Mutex::new(vec![None; tail.stripes.len()])),
        });
        Chunks {
            reader,
            len: tail.file_length,
            stripes,
            stripe: None,
            other: None,
            failure: Arc::new(Mutex::new(None)),
            footers,
            patches: Vec::new(),
            healed: Arc::default(),
        }
    }

    /// The bytes at `range` as orc-rust gets them. A stripe footer of a file with timestamps
    /// comes without its writer time zone, which is kept aside (see the module docs), once
    /// what orc-rust cannot be trusted with is read (see [`Chunks::read_beside`]).
    async fn served(&mut self, range: Range<u64>) -> Result<Bytes, OrcError> {
        let bytes = self.bytes(range.clone()).await?;
        let Some(footers) = &self.footers else {
            return Ok(bytes);
        };
        let Some(stripe) = footers.ranges.iter().position(|r| *r == range) else {
            return Ok(patched(bytes, range.start, &self.patches));
        };
        let (compression, block_size) = (footers.compression, footers.block_size);
        let zones = Arc::clone(&footers.zones);
        let presents = Arc::clone(&footers.presents);
        let rewritten = !footers.timestamps.is_empty();
        let what = "a stripe footer";
        let plain = decompress(compression, block_size, &bytes, what)?;
        let mut footer = proto::StripeFooter::decode(plain.as_slice())
            .map_err(|e| OrcError::Corrupt(format!("{what}: {e}")))?;
        let presence = self.read_beside(stripe, &footer).await?;
        if let Ok(mut presents) = presents.lock() {
            presents[stripe] = Some(presence);
        }
        if !rewritten {
            return Ok(bytes);
        }
        let zone = footer.writer_timezone.take();
        if let Ok(mut zones) = zones.lock() {
            zones[stripe] = Some(zone);
        }
        // orc-rust decompresses what it is given, whatever the length it asked for.
        let plain = footer.encode_to_vec();
        Ok(Bytes::from(compress(compression, block_size, &plain)?))
    }

    /// Reads what orc-rust cannot be trusted with of a stripe: the PRESENT streams of the
    /// unions decoded (see the module docs), and the stored nanoseconds of its timestamp
    /// columns. pyarrow stores a pre-1970 time with a fraction of a second with negative
    /// nanoseconds (see `timestamp`), which orc-rust would misread: such a stream is healed
    /// into the standard layout, which reads as the same time in ORC C++ and can be read by
    /// ORC Java, and served to orc-rust in its place ([`Chunks::patches`]). A value that cannot
    /// be healed stops the decoder, and the group is copied. The stripe's bytes are fetched
    /// already (one stripe at a time) or are the streams orc-rust asks for next.
    async fn read_beside(
        &mut self,
        stripe: usize,
        footer: &proto::StripeFooter,
    ) -> Result<Presence, OrcError> {
        use proto::stream::Kind;
        let Some(footers) = &self.footers else {
            return Ok(Presence::new());
        };
        let (compression, block_size) = (footers.compression, footers.block_size);
        let timestamps = footers.timestamps.clone();
        let mut presence: Presence = footers.unions.iter().map(|&u| (u, None)).collect();
        // Each timestamp column's seconds and nanoseconds.
        let mut stored: BTreeMap<u32, [Option<Range<u64>>; 2]> = BTreeMap::new();
        let mut at = footers.starts[stripe];
        for stream in &footer.streams {
            let range = at..at + stream.length();
            at = range.end;
            let column = stream.column();
            match stream.kind() {
                Kind::Present if presence.contains_key(&column) => {
                    let bytes = self.bytes(range).await?;
                    let what = "a union's PRESENT stream";
                    let plain = decompress(compression, block_size, &bytes, what)?;
                    presence.insert(column, Some(decode_booleans(&plain)?));
                }
                Kind::Data if timestamps.contains(&column) => {
                    stored.entry(column).or_default()[0] = Some(range);
                }
                Kind::Secondary if timestamps.contains(&column) => {
                    stored.entry(column).or_default()[1] = Some(range);
                }
                _ => {}
            }
        }
        for (column, [seconds, nanos]) in stored {
            let (Some(seconds), Some(nanos)) = (seconds, nanos) else {
                continue;
            };
            let v2 = footer
                .columns
                .get(column as usize)
                .is_none_or(|e| e.kind() != proto::column_encoding::Kind::Direct);
            let bytes = self.bytes(nanos.clone()).await?;
            let what = "a timestamp's nanoseconds";
            let plain = decompress(compression, block_size, &bytes, what)?;
            if all_unsigned(&plain, v2, |n| timestamp::stored_nanos(n).is_some())? {
                continue;
            }
            let stored_nanos = decode_unsigned(&plain, v2)?;
            let refuse = |why: &str| {
                OrcError::Decode(format!(
                    "column {column}, a timestamp, stores nanoseconds out of range in stripe \
                     {stripe} ({why}): ORC Java cannot read such a value and ORC C++ reads it \
                     as stored"
                ))
            };
            if !v2 {
                return Err(refuse(
                    "in run-length encoding version 1, which is not healed",
                ));
            }
            let bytes = self.bytes(seconds).await?;
            let what = "a timestamp's seconds";
            let plain = decompress(compression, block_size, &bytes, what)?;
            let stored_seconds = decode_signed(&plain, v2)?;
            if stored_seconds.len() != stored_nanos.len() {
                return Err(OrcError::Corrupt(format!(
                    "column {column}, a timestamp, stores {} seconds and {} nanoseconds in \
                     stripe {stripe}",
                    stored_seconds.len(),
                    stored_nanos.len()
                )));
            }
            let utc = is_utc(&footer.writer_timezone);
            let mut healed = Vec::with_capacity(stored_nanos.len());
            for (&s, &n) in stored_seconds.iter().zip(&stored_nanos) {
                healed.push(match timestamp::stored_nanos(n) {
                    Some(_) => n as i64,
                    None => timestamp::heal_nanos(s, n, utc).map_err(|e| refuse(&e.0))? as i64,
                });
            }
            let mut plain = Vec::new();
            // The encoder takes at most 512 values at a time, as the writer buffers them.
            for values in healed.chunks(512) {
                rle_v2_encode(values, false, &mut plain);
            }
            let length = (nanos.end - nanos.start) as usize;
            let served = same_length(compression, block_size, &plain, length)
                .ok_or_else(|| refuse("healed, they do not fit in the stream's bytes"))?;
            tracing::debug!(column, stripe, "healed negative timestamp nanoseconds");
            self.patches.push((nanos.start, Bytes::from(served)));
            if let Ok(mut healed) = self.healed.lock() {
                healed.insert(column);
            }
        }
        Ok(presence)
    }

    async fn bytes(&mut self, range: Range<u64>) -> Result<Bytes, OrcError> {
        if range.is_empty() && range.end <= self.len {
            return Ok(Bytes::new());
        }
        for (start, bytes) in self.stripe.iter().chain(&self.other) {
            if range.start >= *start && range.end <= start + bytes.len() as u64 {
                return Ok(
                    bytes.slice((range.start - start) as usize..(range.end - start) as usize)
                );
            }
        }
        let i = self.stripes.partition_point(|s| s.end <= range.start);
        let in_stripe = self
            .stripes
            .get(i)
            .filter(|s| s.start <= range.start && range.end <= s.end)
            .cloned();
        let fetch = in_stripe.clone().unwrap_or_else(|| range.clone());
        let bytes = read_checked(&self.reader, fetch.clone(), self.len, "decoding").await?;
        let wanted =
            bytes.slice((range.start - fetch.start) as usize..(range.end - fetch.start) as usize);
        let slot = if in_stripe.is_some() {
            &mut self.stripe
        } else {
            &mut self.other
        };
        *slot = Some((fetch.start, bytes));
        Ok(wanted)
    }
}

impl<R: RangeRead + Send + 'static> AsyncChunkReader for Chunks<R> {
    fn len(&mut self) -> BoxFuture<'_, io::Result<u64>> {
        let len = self.len;
        async move { Ok(len) }.boxed()
    }

    fn get_bytes(&mut self, offset: u64, length: u64) -> BoxFuture<'_, io::Result<Bytes>> {
        async move {
            let end = offset
                .checked_add(length)
                .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "a range past 2^64"))?;
            self.served(offset..end).await.map_err(|e| {
                let message = e.to_string();
                if let Ok(mut slot) = self.failure.lock() {
                    *slot = Some(e);
                }
                io::Error::other(message)
            })
        }
        .boxed()
    }
}

/// Whether the file's type tree has a plain timestamp (not `timestamp with local time zone`,
/// which is stored in UTC whatever the writer's zone).
fn holds_wall_clock(tail: &OrcTail) -> bool {
    (0..tail.footer.types.len() as u32).any(|c| is_timestamp(tail, c) == Some(true))
}

/// For a timestamp column, whether it is a plain one; `None` for any other column.
fn is_timestamp(tail: &OrcTail, column: u32) -> Option<bool> {
    use proto::r#type::Kind;
    match tail.footer.types.get(column as usize)?.kind() {
        Kind::Timestamp => Some(true),
        Kind::TimestampInstant => Some(false),
        _ => None,
    }
}

/// `bytes`, read from `start`, with the parts that `patches` replace replaced.
fn patched(bytes: Bytes, start: u64, patches: &[(u64, Bytes)]) -> Bytes {
    let end = start + bytes.len() as u64;
    let mut overlapping = patches
        .iter()
        .filter(|(at, p)| *at < end && start < at + p.len() as u64)
        .peekable();
    if overlapping.peek().is_none() {
        return bytes;
    }
    let mut out = bytes.to_vec();
    for (at, patch) in overlapping {
        let from = at.max(&start) - start;
        let to = (at + patch.len() as u64).min(end) - start;
        let skip = (start.max(*at) - at) as usize;
        out[from as usize..to as usize].copy_from_slice(&patch[skip..skip + (to - from) as usize]);
    }
    Bytes::from(out)
}

/// `plain`, a stream's decompressed bytes, compressed as the file's streams are into exactly
/// `length` bytes, when it fits: what follows the values is never read, so the rest is
/// padding (zeros, or uncompressed chunks of zeros). Chunks of smaller blocks are tried when
/// the padding would be one or two bytes, too few for a chunk's header.
fn same_length(
    compression: Compression,
    block_size: u64,
    plain: &[u8],
    length: usize,
) -> Option<Vec<u8>> {
    const HEADER: usize = 3;
    if compression == Compression::None {
        if plain.len() > length {
            return None;
        }
        let mut out = plain.to_vec();
        out.resize(length, 0);
        return Some(out);
    }
    let mut block = block_size;
    while block >= 64 {
        let mut out = compress(compression, block, plain).ok()?;
        let pad = length.checked_sub(out.len())?;
        if pad == 0 || pad >= HEADER {
            let mut left = pad;
            while left > 0 {
                // Each padding chunk at most a block; never leave one or two bytes.
                let mut body = (left - HEADER).min(block_size as usize);
                let rest = left - HEADER - body;
                if rest > 0 && rest < HEADER {
                    body -= HEADER - rest;
                }
                let header = ((body as u32) << 1) | 1;
                out.extend_from_slice(&header.to_le_bytes()[..HEADER]);
                out.resize(out.len() + body, 0);
                left -= HEADER + body;
            }
            return Some(out);
        }
        block /= 2;
    }
    None
}

/// Reads, stripe by stripe, what a re-encode of `tail`'s file reads beside orc-rust (see
/// [`Chunks::read_beside`]) without decoding a value: its stripe footers and the stored
/// nanoseconds of its timestamp columns. The file is opened (`open`) only when it holds
/// timestamps. An error says, as the decoder would, why the file cannot be re-encoded exactly.
pub async fn check_stored<R, F>(open: F, tail: &OrcTail) -> Result<(), OrcError>
where
    R: RangeRead + Send,
    F: std::future::Future<Output = Result<R, OrcError>>,
{
    if !(0..tail.footer.types.len() as u32).any(|c| is_timestamp(tail, c).is_some()) {
        return Ok(());
    }
    let mut chunks = Chunks::new(open.await?, tail, Vec::new(), &[]);
    for s in &tail.stripes {
        let footer = s.offset + s.index_length + s.data_length..s.end();
        chunks.served(footer).await?;
    }
    Ok(())
}

/// One file's rows, batch by batch, in file order.
pub(crate) struct Decoder<R: RangeRead + Send + 'static> {
    stream: ArrowStreamReader<Chunks<R>>,
    failure: Arc<Mutex<Option<OrcError>>>,
    /// The columns whose stored nanoseconds were healed (see [`Chunks::read_beside`]).
    healed: Arc<Mutex<BTreeSet<u32>>>,
    /// Each stripe's writer time zone as served (see [`Chunks::served`]), when the file holds
    /// plain timestamps.
    zones: Option<Arc<Mutex<Vec<Option<Zone>>>>>,
    /// Each stripe's rows, and how many rows were handed out: batches never span stripes, so
    /// the two tell which stripe a batch came from.
    stripe_rows: Vec<u64>,
    rows_out: u64,
    zone: Option<Zone>,
    /// The batches' schema: orc-rust's, with every union's [`NULL_UNION_ROW`] variant.
    schema: SchemaRef,
    /// Set when the columns decoded hold unions.
    unions: Option<Unions>,
    /// The columns whose first stripe has bloom filter streams, when that stripe's footer was
    /// read (see [`Decoder::open`]).
    pub bloom_columns: Option<Vec<u32>>,
}

impl<R: RangeRead + Send + 'static> Decoder<R> {
    /// Opens `reader`, the file `tail` was read from. Its first stripe is fetched now (and its
    /// footer read for [`Decoder::bloom_columns`]) when it is at most `prefetch` bytes, so
    /// that decoders opened ahead have their first bytes ready.
    pub async fn open(reader: R, tail: &OrcTail, prefetch: u64) -> Result<Self, OrcError> {
        let stripes = tail.stripes.iter().map(|s| s.offset..s.end()).collect();
        let roots = Tree(&tail.footer.types).children(0).to_vec();
        let mut chunks = Chunks::new(reader, tail, stripes, &roots);
        let mut bloom_columns = None;
        if tail.file_length <= FIRST_TAIL_READ {
            chunks.bytes(0..tail.file_length).await?;
        }
        if let Some(first) = tail.stripes.first().filter(|s| s.length() <= prefetch) {
            let footer_at = first.offset + first.index_length + first.data_length;
            let footer = chunks.bytes(footer_at..first.end()).await?;
            let footer = decompress(
                tail.compression,
                tail.compression_block_size,
                &footer,
                "a stripe footer",
            )?;
            let footer = proto::StripeFooter::decode(footer.as_slice())
                .map_err(|e| OrcError::Corrupt(format!("a stripe footer: {e}")))?;
            bloom_columns = Some(bloom_filter_columns(&footer));
        }
        let mut decoder = Self::build(chunks, tail, roots, |b| b).await?;
        decoder.bloom_columns = bloom_columns;
        Ok(decoder)
    }

    /// Opens `reader`, the file `tail` was read from, for the values of one top-level column,
    /// the `column`th (from 0) of the table: only that column's streams are read, each as
    /// orc-rust asks for it.
    pub async fn open_column(reader: R, tail: &OrcTail, column: usize) -> Result<Self, OrcError> {
        let roots: Vec<u32> = Tree(&tail.footer.types)
            .children(0)
            .get(column)
            .copied()
            .into_iter()
            .collect();
        let chunks = Chunks::new(reader, tail, Vec::new(), &roots);
        Self::build(chunks, tail, roots, |builder| {
            let root = builder.file_metadata().root_data_type();
            let id = root
                .children()
                .get(column)
                .map(|c| c.data_type().column_index());
            let mask = ProjectionMask::roots(root, id);
            builder.with_projection(mask)
        })
        .await
    }

    /// A decoder of the columns `roots` through `chunks`, the orc-rust reader as `configure`d.
    async fn build(
        chunks: Chunks<R>,
        tail: &OrcTail,
        roots: Vec<u32>,
        configure: impl FnOnce(ArrowReaderBuilder<Chunks<R>>) -> ArrowReaderBuilder<Chunks<R>>,
    ) -> Result<Self, OrcError> {
        let failure = Arc::clone(&chunks.failure);
        let healed = Arc::clone(&chunks.healed);
        let zones = chunks
            .footers
            .as_ref()
            .filter(|_| holds_wall_clock(tail))
            .map(|f| Arc::clone(&f.zones));
        let presents = chunks
            .footers
            .as_ref()
            .filter(|f| !f.unions.is_empty())
            .map(|f| Arc::clone(&f.presents));
        let builder = match ArrowReaderBuilder::try_new_async(chunks).await {
            Ok(builder) => configure(builder),
            Err(e) => return Err(take(&failure).unwrap_or(OrcError::Decode(e.to_string()))),
        };
        let schema = Arc::new(wide_timestamps(&builder.schema()));
        let builder = builder.with_schema(Arc::clone(&schema));
        let mut unions = presents.map(|presents| Unions {
            types: tail.footer.types.clone(),
            roots,
            presents,
            stripe: None,
        });
        let schema = match &mut unions {
            // The schema of a batch of no rows marked (see Unions::mark).
            Some(unions) => unions
                .mark_columns(&RecordBatch::new_empty(schema))?
                .schema(),
            None => schema,
        };
        Ok(Decoder {
            stream: builder.build_async(),
            failure,
            healed,
            zones,
            stripe_rows: tail.stripes.iter().map(|s| s.rows).collect(),
            rows_out: 0,
            zone: None,
            schema,
            unions,
            bloom_columns: None,
        })
    }

    /// The arrow schema of the batches.
    pub fn schema(&self) -> SchemaRef {
        Arc::clone(&self.schema)
    }

    /// The next batch; `None` after the last.
    pub async fn next(&mut self) -> Result<Option<RecordBatch>, OrcError> {
        match self.stream.next().await {
            None => {
                if let Some(unions) = &mut self.unions {
                    unions.end_stripe()?;
                }
                Ok(None)
            }
            Some(Ok(batch)) => {
                let stripe = self.stripe_of(self.rows_out)?;
                self.zone = self.zone_at(stripe)?;
                self.rows_out += batch.num_rows() as u64;
                match &mut self.unions {
                    Some(unions) => Ok(Some(unions.mark(stripe, &batch, &self.schema)?)),
                    None => Ok(Some(batch)),
                }
            }
            Some(Err(e)) => Err(take(&self.failure).unwrap_or(OrcError::Decode(e.to_string()))),
        }
    }

    /// The stripe holding `row`: batches never span stripes, so the stripes' row counts tell.
    fn stripe_of(&self, row: u64) -> Result<usize, OrcError> {
        let mut first = 0;
        for (stripe, rows) in self.stripe_rows.iter().enumerate() {
            if row < first + rows {
                return Ok(stripe);
            }
            first += rows;
        }
        Err(OrcError::Decode(format!(
            "row {row} is past the stripes' {first} rows"
        )))
    }
}

/// A file's type tree, by column id (the root is 0; a column's children follow it).
struct Tree<'a>(&'a [proto::Type]);

impl Tree<'_> {
    fn children(&self, column: u32) -> &[u32] {
        self.0.get(column as usize).map_or(&[], |t| &t.subtypes)
    }

    fn kind(&self, column: u32) -> Option<proto::r#type::Kind> {
        self.0.get(column as usize).map(|t| t.kind())
    }

    /// Adds the unions of the tree under `column`, itself included, to `out`.
    fn unions(&self, column: u32, out: &mut Vec<u32>) {
        if self.kind(column) == Some(proto::r#type::Kind::Union) {
            out.push(column);
        }
        for &child in self.children(column) {
            self.unions(child, out);
        }
    }
}

/// The null union rows of the columns decoded, stripe by stripe.
struct Unions {
    types: Vec<proto::Type>,
    /// The column of each of a batch's columns.
    roots: Vec<u32>,
    presents: Arc<Mutex<Vec<Option<Presence>>>>,
    /// The stripe whose rows are being handed out, and how far into each union's PRESENT bits.
    stripe: Option<(usize, HashMap<u32, Bits>)>,
}

/// One union's PRESENT bits in a stripe, and how many were read.
struct Bits {
    bits: Option<Vec<bool>>,
    read: usize,
}

impl Unions {
    /// `batch`, of `stripe`, with each union's null rows in its [`NULL_UNION_ROW`] variant.
    fn mark(
        &mut self,
        stripe: usize,
        batch: &RecordBatch,
        schema: &SchemaRef,
    ) -> Result<RecordBatch, OrcError> {
        if self.stripe.as_ref().map(|(s, _)| *s) != Some(stripe) {
            self.end_stripe()?;
            let presence = self
                .presents
                .lock()
                .map_err(|_| OrcError::Decode("a decoder panicked".into()))?
                .get_mut(stripe)
                .and_then(Option::take)
                .ok_or_else(|| {
                    OrcError::Decode(format!(
                        "the rows of stripe {stripe} came before its footer was read"
                    ))
                })?;
            let bits = presence
                .into_iter()
                .map(|(column, bits)| (column, Bits { bits, read: 0 }))
                .collect();
            self.stripe = Some((stripe, bits));
        }
        let marked = self.mark_columns(batch)?;
        RecordBatch::try_new(Arc::clone(schema), marked.columns().to_vec())
            .map_err(|e| OrcError::Decode(format!("marking null union rows: {e}")))
    }

    /// `batch`'s columns marked, in a batch of the schema they make.
    fn mark_columns(&mut self, batch: &RecordBatch) -> Result<RecordBatch, OrcError> {
        let tree = Tree(&self.types);
        let mut empty = HashMap::new();
        let bits = self.stripe.as_mut().map_or(&mut empty, |(_, b)| b);
        let mut fields = Vec::new();
        let mut columns = Vec::new();
        for ((field, array), &column) in batch
            .schema()
            .fields()
            .iter()
            .zip(batch.columns())
            .zip(&self.roots)
        {
            let array = mark(&tree, column, array, None, bits)?;
            fields.push(
                field
                    .as_ref()
                    .clone()
                    .with_data_type(array.data_type().clone()),
            );
            columns.push(array);
        }
        let schema = Schema::new_with_metadata(fields, batch.schema().metadata().clone());
        RecordBatch::try_new_with_options(
            Arc::new(schema),
            columns,
            &arrow::record_batch::RecordBatchOptions::new().with_row_count(Some(batch.num_rows())),
        )
        .map_err(|e| OrcError::Decode(format!("marking null union rows: {e}")))
    }

    /// Checks that the stripe's rows read every union's PRESENT bits (but the padding of the
    /// last byte).
    fn end_stripe(&mut self) -> Result<(), OrcError> {
        let Some((stripe, bits)) = self.stripe.take() else {
            return Ok(());
        };
        for (column, b) in bits {
            let left = b.bits.map_or(0, |bits| bits.len() - b.read);
            if left >= 8 {
                return Err(OrcError::Corrupt(format!(
                    "stripe {stripe}: the PRESENT stream of union column {column} holds {left} \
                     bits more than the stripe's values"
                )));
            }
        }
        Ok(())
    }
}

/// `array`, the values of `column` (those of its parent's rows that are present where `live`
/// says), with the null rows of the unions it holds marked.
fn mark(
    tree: &Tree,
    column: u32,
    array: &ArrayRef,
    live: Option<&BooleanBuffer>,
    bits: &mut HashMap<u32, Bits>,
) -> Result<ArrayRef, OrcError> {
    use proto::r#type::Kind;
    let mut unions = Vec::new();
    tree.unions(column, &mut unions);
    if unions.is_empty() {
        return Ok(Arc::clone(array));
    }
    let children = tree.children(column);
    let failed = |e: arrow::error::ArrowError| {
        OrcError::Decode(format!("column {column}: marking null union rows: {e}"))
    };
    let wrong = || OrcError::Decode(format!("column {column}: decoded as another type"));
    let child = |i: usize| children.get(i).copied().ok_or_else(wrong);
    let marked: ArrayRef = match tree.kind(column) {
        Some(Kind::Struct) => {
            let s = array.as_struct_opt().ok_or_else(wrong)?;
            // orc-rust's struct nulls are its parent's too: its children's values are read
            // where the struct is present.
            let live = s.nulls().map(|n| n.inner().clone());
            let mut columns = Vec::new();
            for (i, c) in s.columns().iter().enumerate() {
                columns.push(mark(tree, child(i)?, c, live.as_ref(), bits)?);
            }
            let fields = retyped(s.fields(), &columns);
            Arc::new(StructArray::try_new(fields, columns, s.nulls().cloned()).map_err(failed)?)
        }
        Some(Kind::List) => {
            let l = array.as_list_opt::<i32>().ok_or_else(wrong)?;
            let DataType::List(item) = l.data_type() else {
                return Err(wrong());
            };
            let values = mark(tree, child(0)?, l.values(), None, bits)?;
            let item = Arc::new(
                item.as_ref()
                    .clone()
                    .with_data_type(values.data_type().clone()),
            );
            let list = ListArray::try_new(item, l.offsets().clone(), values, l.nulls().cloned());
            Arc::new(list.map_err(failed)?)
        }
        Some(Kind::Map) => {
            let m = array.as_map_opt().ok_or_else(wrong)?;
            let DataType::Map(entries_field, ordered) = m.data_type() else {
                return Err(wrong());
            };
            let entries = m.entries();
            let mut columns = Vec::new();
            for (i, c) in entries.columns().iter().enumerate() {
                columns.push(mark(tree, child(i)?, c, None, bits)?);
            }
            let fields = retyped(entries.fields(), &columns);
            let entries = StructArray::try_new(fields.clone(), columns, None).map_err(failed)?;
            let entries_field = Arc::new(
                entries_field
                    .as_ref()
                    .clone()
                    .with_data_type(DataType::Struct(fields)),
            );
            let map = MapArray::try_new(
                entries_field,
                m.offsets().clone(),
                entries,
                m.nulls().cloned(),
                *ordered,
            );
            Arc::new(map.map_err(failed)?)
        }
        Some(Kind::Union) => {
            let u = array.as_union_opt().ok_or_else(wrong)?;
            let DataType::Union(variants, _) = u.data_type() else {
                return Err(wrong());
            };
            // orc-rust numbers the variants 0, 1, ...: the next id is free.
            let null_id = i8::try_from(variants.len()).map_err(|_| wrong())?;
            let mut ids = Vec::with_capacity(u.len());
            for i in 0..u.len() {
                let present = live.is_none_or(|l| l.value(i)) && next_bit(bits, column)?;
                ids.push(if present { u.type_id(i) } else { null_id });
            }
            let mut ids_out = Vec::new();
            let mut fields = Vec::new();
            let mut columns = Vec::new();
            for (i, (id, field)) in variants.iter().enumerate() {
                let live = BooleanBuffer::from_iter(ids.iter().map(|&t| t == id));
                let values = mark(tree, child(i)?, u.child(id), Some(&live), bits)?;
                ids_out.push(id);
                fields.push(
                    field
                        .as_ref()
                        .clone()
                        .with_data_type(values.data_type().clone()),
                );
                columns.push(values);
            }
            ids_out.push(null_id);
            let metadata = HashMap::from([(NULL_UNION_ROW.to_string(), String::new())]);
            fields.push(Field::new("null", DataType::Null, true).with_metadata(metadata));
            columns.push(new_null_array(&DataType::Null, u.len()));
            let fields = UnionFields::try_new(ids_out, fields).map_err(failed)?;
            let union = UnionArray::try_new(fields, ids.into(), None, columns);
            Arc::new(union.map_err(failed)?)
        }
        _ => return Err(wrong()),
    };
    Ok(marked)
}

/// `fields` with the types of `columns`, their marked values.
fn retyped(fields: &Fields, columns: &[ArrayRef]) -> Fields {
    fields
        .iter()
        .zip(columns)
        .map(|(f, c)| f.as_ref().clone().with_data_type(c.data_type().clone()))
        .collect()
}

/// Whether the next value of union `column` is present, by its PRESENT bits.
fn next_bit(bits: &mut HashMap<u32, Bits>, column: u32) -> Result<bool, OrcError> {
    let b = bits.get_mut(&column).ok_or_else(|| {
        OrcError::Decode(format!(
            "union column {column}: its PRESENT stream was not read"
        ))
    })?;
    let Some(all) = &b.bits else {
        return Ok(true);
    };
    let bit = all.get(b.read).copied().ok_or_else(|| {
        OrcError::Corrupt(format!(
            "the PRESENT stream of union column {column} ends before the stripe's values"
        ))
    })?;
    b.read += 1;
    Ok(bit)
}

/// `schema` with every timestamp, at any depth, as [`TIMESTAMP_NANOS`] decimals.
fn wide_timestamps(schema: &Schema) -> Schema {
    let fields: Vec<Field> = schema.fields().iter().map(|f| wide(f)).collect();
    Schema::new_with_metadata(fields, schema.metadata().clone())
}

fn wide(field: &Field) -> Field {
    let data_type = match field.data_type() {
        DataType::Timestamp(_, _) => {
            let mut metadata = field.metadata().clone();
            metadata.insert(TIMESTAMP_NANOS.into(), String::new());
            return Field::new(
                field.name(),
                DataType::Decimal128(38, 9),
                field.is_nullable(),
            )
            .with_metadata(metadata);
        }
        DataType::Struct(fields) => DataType::Struct(fields.iter().map(|f| wide(f)).collect()),
        DataType::List(item) => DataType::List(Arc::new(wide(item))),
        DataType::Map(entries, sorted) => DataType::Map(Arc::new(wide(entries)), *sorted),
        DataType::Union(variants, mode) => {
            let (ids, fields): (Vec<i8>, Vec<Field>) =
                variants.iter().map(|(id, f)| (id, wide(f))).unzip();
            // The ids are the decoder's own, unique: try_new cannot fail on them.
            match UnionFields::try_new(ids, fields) {
                Ok(variants) => DataType::Union(variants, *mode),
                Err(_) => return field.clone(),
            }
        }
        other => other.clone(),
    };
    field.clone().with_data_type(data_type)
}

impl<R: RangeRead + Send + 'static> Decoder<R> {
    /// The timestamp columns whose stored nanoseconds were healed in the stripes decoded so
    /// far: the statistics their writer recorded were taken of the unhealed values (ORC C++
    /// truncates such a time toward zero to the millisecond), so their bounds are not to be
    /// held against the decoded values.
    pub fn healed(&self) -> BTreeSet<u32> {
        self.healed.lock().map(|h| h.clone()).unwrap_or_default()
    }

    /// The writer time zone of the stripe the last batch came from, when the file holds plain
    /// timestamps; `None` when it holds none (the zone then changes nothing).
    pub fn zone(&self) -> Option<&Zone> {
        self.zone.as_ref()
    }

    /// The zone of `stripe`; an error when a file with plain timestamps hands out rows of a
    /// stripe whose footer was not served (the zone would be a guess).
    fn zone_at(&self, stripe: usize) -> Result<Option<Zone>, OrcError> {
        let Some(zones) = &self.zones else {
            return Ok(None);
        };
        let zones = zones
            .lock()
            .map_err(|_| OrcError::Decode("a decoder panicked".into()))?;
        match zones.get(stripe).cloned().flatten() {
            Some(zone) => Ok(Some(zone)),
            None => Err(OrcError::Decode(format!(
                "the rows of stripe {stripe} came before its footer was read"
            ))),
        }
    }
}

fn take(failure: &Mutex<Option<OrcError>>) -> Option<OrcError> {
    failure.lock().ok().and_then(|mut f| f.take())
}

/// The columns with BLOOM_FILTER or BLOOM_FILTER_UTF8 streams in a stripe footer.
fn bloom_filter_columns(footer: &proto::StripeFooter) -> Vec<u32> {
    use proto::stream::Kind;
    let mut columns: Vec<u32> = footer
        .streams
        .iter()
        .filter(|s| matches!(s.kind(), Kind::BloomFilter | Kind::BloomFilterUtf8))
        .filter_map(|s| s.column)
        .collect();
    columns.sort_unstable();
    columns.dedup();
    columns
}
