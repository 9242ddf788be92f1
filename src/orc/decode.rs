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

use std::io;
use std::ops::Range;
use std::sync::{Arc, Mutex};

use arrow::datatypes::SchemaRef;
use arrow::record_batch::RecordBatch;
use bytes::Bytes;
use futures::future::BoxFuture;
use futures::{FutureExt, StreamExt};
use orc_rust::projection::ProjectionMask;
use orc_rust::proto;
use orc_rust::reader::AsyncChunkReader;
use orc_rust::{ArrowReaderBuilder, ArrowStreamReader};
use prost::Message;

use super::compress::decompress;
use super::error::OrcError;
use super::io::{read_checked, RangeRead};
use super::tail::OrcTail;

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
}

impl<R: RangeRead + Send> Chunks<R> {
    fn new(reader: R, tail: &OrcTail, stripes: Vec<Range<u64>>) -> Self {
        Chunks {
            reader,
            len: tail.file_length,
            stripes,
            stripe: None,
            other: None,
            failure: Arc::new(Mutex::new(None)),
        }
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
            self.bytes(offset..end).await.map_err(|e| {
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

/// One file's rows, batch by batch, in file order.
pub(crate) struct Decoder<R: RangeRead + Send + 'static> {
    stream: ArrowStreamReader<Chunks<R>>,
    failure: Arc<Mutex<Option<OrcError>>>,
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
        let mut chunks = Chunks::new(reader, tail, stripes);
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
        let mut decoder = Self::build(chunks, |b| b).await?;
        decoder.bloom_columns = bloom_columns;
        Ok(decoder)
    }

    /// Opens `reader`, the file `tail` was read from, for the values of one top-level column,
    /// the `column`th (from 0) of the table: only that column's streams are read, each as
    /// orc-rust asks for it.
    pub async fn open_column(reader: R, tail: &OrcTail, column: usize) -> Result<Self, OrcError> {
        let chunks = Chunks::new(reader, tail, Vec::new());
        Self::build(chunks, |builder| {
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

    async fn build(
        chunks: Chunks<R>,
        configure: impl FnOnce(ArrowReaderBuilder<Chunks<R>>) -> ArrowReaderBuilder<Chunks<R>>,
    ) -> Result<Self, OrcError> {
        let failure = Arc::clone(&chunks.failure);
        let builder = match ArrowReaderBuilder::try_new_async(chunks).await {
            Ok(builder) => configure(builder),
            Err(e) => return Err(take(&failure).unwrap_or(OrcError::Decode(e.to_string()))),
        };
        Ok(Decoder {
            stream: builder.build_async(),
            failure,
            bloom_columns: None,
        })
    }

    /// The arrow schema of the batches.
    pub fn schema(&self) -> SchemaRef {
        self.stream.schema()
    }

    /// The next batch; `None` after the last.
    pub async fn next(&mut self) -> Result<Option<RecordBatch>, OrcError> {
        match self.stream.next().await {
            None => Ok(None),
            Some(Ok(batch)) => Ok(Some(batch)),
            Some(Err(e)) => Err(take(&self.failure).unwrap_or(OrcError::Decode(e.to_string()))),
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
