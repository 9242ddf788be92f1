//! Batches into row groups, row groups into stripes, stripes into a file.
//!
//! # Writer id and version
//!
//! The footer says the file was written by ORC Java (writer id 0) at writer version ORC_14
//! (9), the newest version the reference writers record. Readers decide per (writer, version)
//! which known bugs of that writer to work around: every such workaround targets versions
//! before a fix (bad string statistics before HIVE-8732, timestamp statistics before ORC-135,
//! bloom filters before ORC-101, ...), so a current Java claim makes none of them apply, and
//! what we write follows the specification exactly the way the current Java writer does. The
//! alternatives are worse: an id of our own is unknown to Java readers, which then treat the
//! file as written by a FUTURE version (`OrcFile.mergeFiles` and Hive's CONCATENATE refuse
//! such files), and another registered id (C++, Presto, Trino, ...) would invite workarounds
//! meant for that writer. The software version names this tool, so a human can still tell.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use arrow::array::{Array, StructArray};
use arrow::record_batch::RecordBatch;
use bytes::Bytes;
use orc_rust::proto;
use prost::Message;

use super::columns::{build, ColumnWriter, StripeParts};
use super::settings::Settings;
use crate::orc::encoding::compress::Compression;
use crate::orc::encoding::timestamp::{is_utc, Zone};
use crate::orc::error::OrcError;
use crate::orc::io::storage::Sink;
use crate::orc::tail::orc_tail::OrcTail;
use crate::orc::tail::orc_tail::ORC_MAGIC;

/// ORC Java's writer id, and the newest writer version (ORC_14); see the module docs.
const WRITER_ID: u32 = 0;
const WRITER_VERSION: u32 = 9;
/// ORC file format 0.12, the version every current reader and writer uses.
const FILE_VERSION: [u32; 2] = [0, 12];

/// How to write one file. Built from an input file's tail so the output keeps its shape.
#[derive(Clone, Debug)]
pub struct WriterOptions {
    /// The file's type tree, column 0 (a struct) first, exactly as in an input Footer.
    pub types: Vec<proto::Type>,
    pub compression: Compression,
    /// The codec's level (see `compress_at`); `None`: the reference writers' default.
    pub compression_level: Option<i32>,
    pub compression_block_size: u64,
    /// Rows per row group; 0 writes no row index (as the input said).
    pub row_index_stride: u32,
    /// A stripe is closed once its encoded size reaches this many bytes.
    pub stripe_size: u64,
    /// Columns given BLOOM_FILTER_UTF8 streams (the ones that had them in the inputs).
    pub bloom_filter_columns: Vec<u32>,
    /// False positive rate the filters are sized for (0.01 is Java ORC's default).
    pub bloom_filter_fpp: f64,
    /// Strings stay dictionary-encoded while distinct / non-null values <= this, checked on
    /// each stripe's first row group (0.8 is the reference writers' default).
    pub dictionary_key_threshold: f64,
    pub user_metadata: Vec<proto::UserMetadataItem>,
    /// The Footer's calendar, copied from the inputs (dates are written as the day numbers
    /// they were decoded as, so the calendar they are counted in must not change).
    pub calendar: Option<i32>,
}

impl WriterOptions {
    /// Options with the reference writers' defaults for everything a tail does not say.
    pub fn new(
        types: Vec<proto::Type>,
        compression: Compression,
        compression_block_size: u64,
    ) -> Self {
        Self {
            types,
            compression,
            compression_level: None,
            compression_block_size,
            row_index_stride: 10_000,
            stripe_size: 64 << 20,
            bloom_filter_columns: Vec::new(),
            bloom_filter_fpp: 0.01,
            dictionary_key_threshold: 0.8,
            user_metadata: Vec::new(),
            calendar: None,
        }
    }

    /// Options giving an output the shape of the file `tail` belongs to: its type tree, codec,
    /// compression block size, row index stride, user metadata and calendar. Which columns had
    /// bloom filters is in the stripes, not the tail: the caller sets `bloom_filter_columns`.
    pub fn from_tail(tail: &OrcTail) -> Self {
        let mut options = Self::new(
            tail.footer.types.clone(),
            tail.compression,
            tail.compression_block_size,
        );
        options.row_index_stride = tail.footer.row_index_stride();
        options.user_metadata = tail.footer.metadata.clone();
        options.calendar = tail.footer.calendar;
        options
    }
}

/// What a finished file holds.
#[derive(Clone, Debug)]
pub struct WrittenFile {
    pub rows: u64,
    pub length: u64,
    pub stripes: usize,
    /// File-level statistics, one per column.
    pub statistics: Vec<proto::ColumnStatistics>,
}

/// Streams record batches into one ORC file. Memory is bounded by one stripe: each stripe is
/// written to the sink as soon as it is full.
pub struct OrcWriter<S: Sink> {
    sink: S,
    options: WriterOptions,
    settings: Settings,
    root: Box<dyn ColumnWriter>,
    /// Bytes written so far (the "ORC" header included).
    offset: u64,
    rows: u64,
    rows_in_stripe: u64,
    rows_in_group: u64,
    stripes: Vec<proto::StripeInformation>,
    stripe_stats: Vec<proto::StripeStatistics>,
    /// The writer time zone of the stripe being written; see [`OrcWriter::set_zone`].
    zone: Zone,
    /// Whether the type tree has a plain timestamp, whose stored values depend on the zone.
    wall_clock: bool,
}

impl<S: Sink> OrcWriter<S> {
    pub async fn new(mut sink: S, options: WriterOptions) -> Result<Self, OrcError> {
        options.compression.ensure_supported()?;
        options
            .compression
            .check_block_size(options.compression_block_size)?;
        let root_kind = options.types.first().and_then(|t| t.kind);
        if root_kind != Some(proto::r#type::Kind::Struct as i32) {
            return Err(OrcError::Unsupported(
                "the type tree must start with a struct column".into(),
            ));
        }
        let settings = Settings {
            compression: options.compression,
            compression_level: options.compression_level,
            block_size: options.compression_block_size,
            row_index_stride: options.row_index_stride,
            bloom_columns: options.bloom_filter_columns.clone(),
            bloom_fpp: options.bloom_filter_fpp,
            dictionary_key_threshold: options.dictionary_key_threshold,
            wall_clock_known: Arc::new(AtomicBool::new(true)),
        };
        let wall_clock = options
            .types
            .iter()
            .any(|t| t.kind() == proto::r#type::Kind::Timestamp);
        let mut root = build(&options.types, 0, &settings)?;
        root.start_group();
        sink.write(Bytes::from_static(ORC_MAGIC)).await?;
        Ok(Self {
            sink,
            options,
            settings,
            root,
            offset: ORC_MAGIC.len() as u64,
            rows: 0,
            rows_in_stripe: 0,
            rows_in_group: 0,
            stripes: Vec::new(),
            stripe_stats: Vec::new(),
            zone: Some("UTC".into()),
            wall_clock,
        })
    }

    /// The writer time zone of the rows written next, as their input stripe named it: plain
    /// timestamps come as the seconds stored in that zone (see decode's module docs), and are
    /// stored back under it, so a change of zone starts a new stripe. Their bounds are written
    /// only in a UTC zone, where the stored seconds are the wall clock; elsewhere the wall
    /// clock depends on the reader's time zone database, and unknown bounds are better than
    /// wrong ones. Without plain timestamps the zone changes nothing and is ignored.
    pub async fn set_zone(&mut self, zone: Zone) -> Result<(), OrcError> {
        if !self.wall_clock || zone == self.zone {
            return Ok(());
        }
        self.flush_stripe().await?;
        self.settings
            .wall_clock_known
            .store(is_utc(&zone), Ordering::Relaxed);
        self.zone = zone;
        Ok(())
    }

    /// Appends the batch's rows; its columns must be the arrow types orc-rust decodes the
    /// file's type tree to.
    pub async fn write_batch(&mut self, batch: &RecordBatch) -> Result<(), OrcError> {
        let rows = StructArray::from(batch.clone());
        let stride = u64::from(self.options.row_index_stride);
        let mut done = 0;
        while done < rows.len() {
            let left = (rows.len() - done) as u64;
            let take = if stride == 0 {
                left
            } else {
                left.min(stride - self.rows_in_group)
            } as usize;
            self.root.write(&rows.slice(done, take))?;
            done += take;
            self.rows_in_group += take as u64;
            self.rows_in_stripe += take as u64;
            self.rows += take as u64;
            if stride > 0 && self.rows_in_group == stride {
                self.root.end_group()?;
                self.root.start_group();
                self.rows_in_group = 0;
            }
            if self.root.estimated_size() as u64 >= self.options.stripe_size {
                self.flush_stripe().await?;
            }
        }
        Ok(())
    }

    async fn flush_stripe(&mut self) -> Result<(), OrcError> {
        if self.rows_in_stripe == 0 {
            return Ok(());
        }
        if self.rows_in_group > 0 || self.options.row_index_stride == 0 {
            self.root.end_group()?;
        }
        let mut parts = StripeParts::default();
        self.root.flush(&mut parts)?;
        let footer = proto::StripeFooter {
            streams: parts
                .index
                .iter()
                .chain(&parts.data)
                .map(|(s, _)| s.clone())
                .collect(),
            columns: parts.encodings,
            writer_timezone: self.zone.clone(),
            encryption: Vec::new(),
        };
        let footer = self.settings.compress_message(&footer)?;
        let index_length: u64 = parts.index.iter().map(|(_, b)| b.len() as u64).sum();
        let data_length: u64 = parts.data.iter().map(|(_, b)| b.len() as u64).sum();
        self.stripes.push(proto::StripeInformation {
            offset: Some(self.offset),
            index_length: Some(index_length),
            data_length: Some(data_length),
            footer_length: Some(footer.len() as u64),
            number_of_rows: Some(self.rows_in_stripe),
            ..Default::default()
        });
        self.stripe_stats.push(proto::StripeStatistics {
            col_stats: parts.stats,
        });
        for (_, bytes) in parts.index.into_iter().chain(parts.data) {
            for chunk in bytes.into_chunks().filter(|c| !c.is_empty()) {
                self.sink.write(Bytes::from(chunk)).await?;
            }
        }
        self.sink.write(Bytes::from(footer)).await?;
        // Test builds pause here (`compact::writing-output`) once the first stripe of a
        // re-encoded output is handed to the writer, before the rest and the tail.
        #[cfg(feature = "failpoints")]
        if self.stripes.len() == 1 {
            fail::fail_point!("compact::writing-output");
        }
        self.offset +=
            index_length + data_length + self.stripes.last().map_or(0, |s| s.footer_length());
        self.rows_in_stripe = 0;
        self.rows_in_group = 0;
        self.root.start_group();
        Ok(())
    }

    /// Flushes the last stripe and writes the tail: Metadata, Footer, PostScript. Hands the
    /// sink back, for sinks that must be closed (hdfs-native's FileWriter needs `close()`).
    pub async fn finish(mut self) -> Result<(WrittenFile, S), OrcError> {
        self.flush_stripe().await?;
        let mut statistics = Vec::new();
        self.root.file_stats(&mut statistics);
        let o = &self.options;
        let metadata = proto::Metadata {
            stripe_stats: std::mem::take(&mut self.stripe_stats),
        };
        let metadata = self.settings.compress_message(&metadata)?;
        let footer = proto::Footer {
            header_length: Some(ORC_MAGIC.len() as u64),
            content_length: Some(self.offset - ORC_MAGIC.len() as u64),
            stripes: std::mem::take(&mut self.stripes),
            types: o.types.clone(),
            metadata: o.user_metadata.clone(),
            number_of_rows: Some(self.rows),
            statistics: statistics.clone(),
            row_index_stride: Some(o.row_index_stride),
            writer: Some(WRITER_ID),
            encryption: None,
            calendar: o.calendar,
            software_version: Some(
                concat!("hive-orc-compactor ", env!("CARGO_PKG_VERSION")).into(),
            ),
        };
        let stripes = footer.stripes.len();
        let footer = self.settings.compress_message(&footer)?;
        let postscript = proto::PostScript {
            footer_length: Some(footer.len() as u64),
            compression: Some(o.compression.to_proto()),
            compression_block_size: Some(o.compression_block_size),
            version: FILE_VERSION.to_vec(),
            metadata_length: Some(metadata.len() as u64),
            writer_version: Some(WRITER_VERSION),
            stripe_statistics_length: None,
            magic: Some(String::from_utf8_lossy(ORC_MAGIC).into_owned()),
        }
        .encode_to_vec();
        let ps_len = u8::try_from(postscript.len())
            .map_err(|_| OrcError::Unsupported("PostScript longer than 255 bytes".into()))?;
        let length =
            self.offset + metadata.len() as u64 + footer.len() as u64 + postscript.len() as u64 + 1;
        let mut tail = metadata;
        tail.extend_from_slice(&footer);
        tail.extend_from_slice(&postscript);
        tail.push(ps_len);
        self.sink.write(Bytes::from(tail)).await?;
        let written = WrittenFile {
            rows: self.rows,
            length,
            stripes,
            statistics,
        };
        Ok((written, self.sink))
    }
}
