//! Reading an ORC file's tail: PostScript, Footer and Metadata.

use std::collections::HashMap;
use std::sync::Arc;

use bytes::{Bytes, BytesMut};
use orc_rust::proto;
use prost::Message;

use super::encoding::compress::{decompress, Compression};
use super::error::{corrupt, OrcError};
use super::io::{read_checked, RangeRead, SPECULATIVE_TAIL};
use super::ORC_MAGIC;

/// The block size readers assume when a PostScript does not say (Java ORC's default).
const DEFAULT_BLOCK_SIZE: u64 = 256 * 1024;

/// One stripe as the Footer describes it: the unit the merge copies byte for byte.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StripeInfo {
    pub offset: u64,
    pub index_length: u64,
    pub data_length: u64,
    pub footer_length: u64,
    pub rows: u64,
}

impl StripeInfo {
    /// Bytes on disk: index streams, data streams and stripe footer, back to back.
    pub fn length(&self) -> u64 {
        self.index_length + self.data_length + self.footer_length
    }

    pub fn end(&self) -> u64 {
        self.offset + self.length()
    }
}

/// What planning keeps of one file's tail, validated against the file length: everything
/// but its statistics.
///
/// A partition's tails are held from planning until their outputs are written; with 100,000
/// small files the statistics were most of that memory (about 0.5 KiB per file at 15
/// columns), and only the writing of an output needs them. So they are read again, from the
/// bytes the copy or the decoder reads anyway ([`read_statistics_again`]), and folded into the
/// output as it is written: what is held per input no longer grows with the column count.
#[derive(Clone, Debug)]
pub struct OrcTail {
    /// The Footer without what is the file's own: its stripes, column statistics and row count
    /// (kept as `stripes` and `rows`, or dropped) and its header and content lengths. What
    /// remains (types, user metadata, writer) is usually the same for every file of a
    /// partition, so a snapshot shares one copy among them ([`SharedFooters`]).
    pub footer: Arc<proto::Footer>,
    pub file_length: u64,
    /// Bytes of Metadata + Footer + PostScript + the final length byte.
    pub tail_length: u64,
    pub rows: u64,
    pub stripes: Vec<StripeInfo>,
    pub compression: Compression,
    pub compression_block_size: u64,
    /// The Footer's writer id (0 = ORC Java, 1 = ORC C++, ...); absent means Java.
    pub writer: u32,
    /// The PostScript's writer version; absent means the original writer.
    pub writer_version: u32,
    /// The PostScript's file version: `[0, 11]` or `[0, 12]`, the only ones read.
    pub file_version: [u32; 2],
    /// True when the Metadata holds exactly one entry per stripe, so the output's Metadata can
    /// be the inputs' entries concatenated.
    pub stripe_statistics: bool,
    /// Why the file statistics cannot be merged, when they cannot ([`statistics_gap`]).
    pub statistics_gap: Option<Box<str>>,
}

impl OrcTail {
    /// Where the stripes end and the tail begins.
    pub fn content_end(&self) -> u64 {
        self.file_length - self.tail_length
    }
}

/// The statistics of one file's tail: read with it where they are used (an output being
/// written from the file, Iceberg metrics, tests), never held for a partition's files.
#[derive(Clone, Debug, Default)]
pub struct TailStatistics {
    /// The file-level column statistics, as the Footer holds them.
    pub file: Vec<proto::ColumnStatistics>,
    /// Each stripe's statistics as the Metadata section stores them, encoded (each checked to
    /// parse when read); empty when the file has none.
    stripes: Vec<Bytes>,
}

impl TailStatistics {
    /// The stored encoding of each stripe's statistics, in stripe order: what a merged
    /// output's Metadata section repeats, byte for byte.
    pub fn stripe_entries(&self) -> &[Bytes] {
        &self.stripes
    }

    /// Each stripe's statistics, decoded.
    pub fn stripe_statistics(&self) -> Result<Vec<proto::StripeStatistics>, OrcError> {
        self.stripes.iter().map(decode_entry).collect()
    }
}

/// Why a file's statistics cannot be merged with another's, when they cannot: a file without
/// one entry per column, or with a column lacking its value count. Without a value count a
/// merged count would be a guess, and Java reads a missing one as "no values", which lets it
/// skip the data: such files are left as they are.
pub fn statistics_gap(columns: usize, statistics: &[proto::ColumnStatistics]) -> Option<Box<str>> {
    if statistics.len() != columns {
        return Some(
            format!(
                "has file statistics for {} of {columns} columns",
                statistics.len()
            )
            .into(),
        );
    }
    let c = statistics
        .iter()
        .position(|s| s.number_of_values.is_none())?;
    Some(format!("file statistics of column {c} have no value count").into())
}

/// The footers of many tails, each distinct one held once: a partition's tails, held from
/// planning to the write, then cost their own parts only (stripes, statistics, lengths).
#[derive(Default)]
pub struct SharedFooters {
    /// Each distinct footer by its encoding.
    seen: HashMap<Vec<u8>, Arc<proto::Footer>>,
}

impl SharedFooters {
    /// Points `tail` at the footer already seen that equals its own, else remembers its own.
    pub fn share(&mut self, tail: &mut OrcTail) {
        let encoded = tail.footer.encode_to_vec();
        match self.seen.get(&encoded) {
            Some(footer) => tail.footer = Arc::clone(footer),
            None => {
                self.seen.insert(encoded, Arc::clone(&tail.footer));
            }
        }
    }
}

/// Reads and validates the tail of one file, and keeps what planning needs of it.
///
/// Returns `Ok(None)` for a zero-length file: it holds zero rows and has no tail, and what to do
/// with it is the caller's decision. A file that is not ORC, is cut short, or whose tail does
/// not add up is a typed error naming what is wrong; no offset from the file is trusted before
/// it is checked against `reader.len()`.
pub async fn read_tail<R: RangeRead>(reader: &R) -> Result<Option<OrcTail>, OrcError> {
    Ok(read_tail_with_statistics(reader)
        .await?
        .map(|(tail, _)| tail))
}

/// Reads the tail of the file `planned` was read from, again, for its statistics (the stripe
/// statistics too when `stripes`): when an output is written from the file, from the bytes its
/// stripes or its decoder come from. A file whose tail is no longer the planned one changed
/// since it was planned ([`OrcError::Changed`]).
///
/// Leaner than [`read_tail`], as it runs once more per input on the way to the output: it reads
/// the planned tail's bytes, decodes of the Footer only the stripes, row count and statistics
/// (prost skips the type tree and user metadata unread) and checks those against the plan, and
/// does not decode each stripe's statistics: a stripe copy repeats their stored bytes, and its
/// output's tail, re-read and parsed whole before the swap, proves them.
pub async fn read_statistics_again<R: RangeRead>(
    reader: &R,
    planned: &OrcTail,
    stripes: bool,
) -> Result<TailStatistics, OrcError> {
    let length = reader.len().await?;
    if length != planned.file_length {
        return Err(OrcError::Changed(format!(
            "it is {length} bytes long now, {} when planned",
            planned.file_length
        )));
    }
    let bytes = read_checked(reader, planned.content_end()..length, length, "tail").await?;
    // The planned tail parsed then: failing now, the file is not the one planned.
    statistics_of(&bytes, planned, stripes)
        .map_err(|e| OrcError::Changed(format!("its tail is not the planned one: {e}")))
}

/// What [`read_statistics_again`] decodes of a Footer.
#[derive(Clone, PartialEq, prost::Message)]
struct FooterStatistics {
    #[prost(message, repeated, tag = "3")]
    stripes: Vec<proto::StripeInformation>,
    #[prost(uint64, optional, tag = "6")]
    number_of_rows: Option<u64>,
    #[prost(message, repeated, tag = "7")]
    statistics: Vec<proto::ColumnStatistics>,
}

/// The statistics in `tail`, a file's tail bytes, checked to be those of `planned`.
fn statistics_of(tail: &Bytes, planned: &OrcTail, stripes: bool) -> Result<TailStatistics, String> {
    let ps_len = usize::from(*tail.last().ok_or("no bytes")?);
    let ps_start = tail
        .len()
        .checked_sub(1 + ps_len)
        .ok_or("a PostScript past the tail")?;
    let postscript = proto::PostScript::decode(&tail[ps_start..tail.len() - 1])
        .map_err(|e| format!("the PostScript does not parse: {e}"))?;
    let footer_len = postscript.footer_length.unwrap_or(0) as usize;
    let metadata_len = postscript.metadata_length.unwrap_or(0) as usize;
    if metadata_len.checked_add(footer_len) != Some(ps_start) {
        return Err("other Footer and Metadata lengths".into());
    }
    let (kind, block) = (planned.compression, planned.compression_block_size);
    let footer = decompress(kind, block, &tail.slice(metadata_len..ps_start), "Footer")
        .map_err(|e| e.to_string())?;
    let footer = FooterStatistics::decode(footer.as_slice())
        .map_err(|e| format!("the Footer does not parse: {e}"))?;
    let same_stripes = footer.stripes.len() == planned.stripes.len()
        && footer.stripes.iter().zip(&planned.stripes).all(|(s, p)| {
            (s.offset, s.index_length.unwrap_or(0), s.data_length)
                == (Some(p.offset), p.index_length, Some(p.data_length))
                && (s.footer_length, s.number_of_rows) == (Some(p.footer_length), Some(p.rows))
        });
    if !same_stripes || footer.number_of_rows != Some(planned.rows) {
        return Err("other stripes".into());
    }
    if statistics_gap(planned.footer.types.len(), &footer.statistics) != planned.statistics_gap {
        return Err("other file statistics".into());
    }
    let stripes = if stripes {
        let plain = decompress(kind, block, &tail.slice(..metadata_len), "Metadata")
            .map_err(|e| e.to_string())?;
        let entries = MetadataEntries::decode(Bytes::from(plain))
            .map_err(|e| format!("the Metadata does not parse: {e}"))?;
        if entries.stripe_stats.len() != planned.stripes.len() {
            return Err("other stripe statistics".into());
        }
        entries.stripe_stats
    } else {
        Vec::new()
    };
    Ok(TailStatistics {
        file: footer.statistics,
        stripes,
    })
}

/// [`read_tail`], and the statistics beside what planning keeps.
pub async fn read_tail_with_statistics<R: RangeRead>(
    reader: &R,
) -> Result<Option<(OrcTail, TailStatistics)>, OrcError> {
    let file_length = reader.len().await?;
    if file_length == 0 {
        return Ok(None);
    }
    let spec_len = file_length.min(SPECULATIVE_TAIL);
    let mut buf = read_checked(
        reader,
        file_length - spec_len..file_length,
        file_length,
        "tail",
    )
    .await?;

    // Check the header first: for a file of another format the magic is the useful message,
    // not whatever its last bytes fail to parse as.
    let header = if file_length <= spec_len {
        buf.slice(..file_length.min(3) as usize)
    } else {
        read_checked(reader, 0..3, file_length, "header").await?
    };
    if header.as_ref() != ORC_MAGIC.as_slice() {
        if file_length < 3 && ORC_MAGIC.starts_with(&header) {
            return Err(OrcError::Truncated(format!("only {file_length} bytes")));
        }
        return Err(OrcError::NotOrc(
            "the file does not start with \"ORC\"".into(),
        ));
    }
    // Header, PostScript length byte, and a PostScript of at least one byte.
    if file_length < 5 {
        return Err(OrcError::Truncated(format!(
            "only {file_length} bytes, no room for a tail"
        )));
    }

    let ps_len = u64::from(buf[buf.len() - 1]);
    if ps_len == 0 {
        return Err(corrupt("PostScript length is 0"));
    }
    if ps_len + 1 > file_length - 3 {
        return Err(OrcError::Truncated(format!(
            "PostScript of {ps_len} bytes does not fit in a file of {file_length} bytes"
        )));
    }
    // spec_len >= 5 here and ps_len + 1 <= spec_len - 3 is implied when the whole file was
    // read; otherwise spec_len is 16 KiB, far above the 256 a PostScript can claim.
    let ps_bytes = buf.slice(buf.len() - 1 - ps_len as usize..buf.len() - 1);
    let postscript = proto::PostScript::decode(ps_bytes)
        .map_err(|e| corrupt(format!("PostScript does not parse: {e}")))?;
    match postscript.magic.as_deref() {
        Some("ORC") => {}
        // Files from ORC 0.11 writers have no magic in the PostScript; the header was checked.
        None => {}
        Some(other) => {
            return Err(OrcError::NotOrc(format!(
                "PostScript magic is {other:?}, not \"ORC\""
            )))
        }
    }
    let file_version = match postscript.version[..] {
        [0, minor @ (11 | 12)] => [0, minor],
        ref other => {
            return Err(OrcError::Unsupported(format!("file version {other:?}")));
        }
    };
    let compression = Compression::from_proto(postscript.compression)?;
    compression.ensure_supported()?;
    let compression_block_size = postscript
        .compression_block_size
        .unwrap_or(DEFAULT_BLOCK_SIZE);
    compression.check_block_size(compression_block_size)?;

    let footer_len = postscript
        .footer_length
        .ok_or_else(|| corrupt("PostScript has no footer length"))?;
    let metadata_len = postscript.metadata_length.unwrap_or(0);
    if postscript.stripe_statistics_length.unwrap_or(0) != 0 {
        return Err(OrcError::Unsupported(
            "encrypted stripe statistics (column encryption)".into(),
        ));
    }
    let tail_length = 1u64
        .checked_add(ps_len)
        .and_then(|n| n.checked_add(footer_len))
        .and_then(|n| n.checked_add(metadata_len))
        .filter(|&n| n <= file_length - 3)
        .ok_or_else(|| {
            OrcError::Truncated(format!(
                "Footer ({footer_len} bytes) and Metadata ({metadata_len} bytes) claim more than \
                 the file's {file_length} bytes"
            ))
        })?;

    if tail_length > buf.len() as u64 {
        let start = file_length - tail_length;
        let missing = read_checked(
            reader,
            start..file_length - buf.len() as u64,
            file_length,
            "tail",
        )
        .await?;
        let mut joined = BytesMut::with_capacity(tail_length as usize);
        joined.extend_from_slice(&missing);
        joined.extend_from_slice(&buf);
        buf = joined.freeze();
    }
    let tail = buf.slice(buf.len() - tail_length as usize..);
    let metadata_bytes = tail.slice(..metadata_len as usize);
    let footer_bytes = tail.slice(metadata_len as usize..(metadata_len + footer_len) as usize);

    let mut footer = decode_section::<proto::Footer>(
        compression,
        compression_block_size,
        &footer_bytes,
        "Footer",
    )?;
    let stripe_statistics = metadata_entries(compression, compression_block_size, &metadata_bytes)?;

    let content_end = file_length - tail_length;
    let stripes = validate_stripes(&footer, content_end)?;
    validate_types(&footer.types)?;
    let rows = footer
        .number_of_rows
        .ok_or_else(|| corrupt("Footer has no row count"))?;
    let stripe_rows = stripes
        .iter()
        .try_fold(0u64, |acc, s| acc.checked_add(s.rows))
        .ok_or_else(|| corrupt("stripe row counts overflow"))?;
    if stripe_rows != rows {
        return Err(corrupt(format!(
            "Footer claims {rows} rows, its stripes hold {stripe_rows}"
        )));
    }

    footer.stripes = Vec::new();
    footer.number_of_rows = None;
    footer.header_length = None;
    footer.content_length = None;
    let statistics = TailStatistics {
        file: std::mem::take(&mut footer.statistics),
        stripes: stripe_statistics,
    };
    let tail = OrcTail {
        writer: footer.writer.unwrap_or(0),
        writer_version: postscript.writer_version.unwrap_or(0),
        stripe_statistics: statistics.stripes.len() == stripes.len(),
        statistics_gap: statistics_gap(footer.types.len(), &statistics.file),
        footer: Arc::new(footer),
        file_length,
        tail_length,
        rows,
        stripes,
        compression,
        compression_block_size,
        file_version,
    };
    Ok(Some((tail, statistics)))
}

/// The Metadata section's entries, each as its encoded bytes.
#[derive(Clone, PartialEq, prost::Message)]
struct MetadataEntries {
    #[prost(bytes = "bytes", repeated, tag = "1")]
    stripe_stats: Vec<Bytes>,
}

/// The Metadata section's stripe statistics, each as its stored bytes and checked to parse.
fn metadata_entries(
    compression: Compression,
    block_size: u64,
    bytes: &Bytes,
) -> Result<Vec<Bytes>, OrcError> {
    let plain = Bytes::from(decompress(compression, block_size, bytes, "Metadata")?);
    let entries = MetadataEntries::decode(plain)
        .map_err(|e| corrupt(format!("Metadata does not parse: {e}")))?;
    for entry in &entries.stripe_stats {
        decode_entry(entry)?;
    }
    Ok(entries.stripe_stats)
}

fn decode_entry(entry: &Bytes) -> Result<proto::StripeStatistics, OrcError> {
    proto::StripeStatistics::decode(entry.as_ref())
        .map_err(|e| corrupt(format!("Metadata does not parse: {e}")))
}

fn decode_section<M: Message + Default>(
    compression: Compression,
    block_size: u64,
    bytes: &Bytes,
    what: &str,
) -> Result<M, OrcError> {
    let plain = decompress(compression, block_size, bytes, what)?;
    M::decode(plain.as_slice()).map_err(|e| corrupt(format!("{what} does not parse: {e}")))
}

/// Stripes must lie after the header, in order, without overlap, and end before the tail:
/// these offsets are later used for reads that must stay inside the file.
fn validate_stripes(footer: &proto::Footer, content_end: u64) -> Result<Vec<StripeInfo>, OrcError> {
    let mut out = Vec::with_capacity(footer.stripes.len());
    let mut prev_end = ORC_MAGIC.len() as u64;
    for (i, s) in footer.stripes.iter().enumerate() {
        let field = |v: Option<u64>, name: &str| {
            v.ok_or_else(|| corrupt(format!("stripe {i} has no {name}")))
        };
        let info = StripeInfo {
            offset: field(s.offset, "offset")?,
            index_length: s.index_length.unwrap_or(0),
            data_length: field(s.data_length, "data length")?,
            footer_length: field(s.footer_length, "footer length")?,
            rows: field(s.number_of_rows, "row count")?,
        };
        let end = info
            .offset
            .checked_add(info.index_length)
            .and_then(|n| n.checked_add(info.data_length))
            .and_then(|n| n.checked_add(info.footer_length))
            .ok_or_else(|| corrupt(format!("stripe {i} lengths overflow")))?;
        if info.offset < prev_end {
            return Err(corrupt(format!(
                "stripe {i} starts at {} before the previous one ends at {prev_end}",
                info.offset
            )));
        }
        if end > content_end {
            return Err(OrcError::Truncated(format!(
                "stripe {i} ends at {end}, past the start of the tail at {content_end}"
            )));
        }
        if info.footer_length == 0 {
            return Err(corrupt(format!("stripe {i} has an empty stripe footer")));
        }
        if s.encrypt_stripe_id.is_some() || !s.encrypted_local_keys.is_empty() {
            return Err(OrcError::Unsupported(format!("stripe {i} is encrypted")));
        }
        prev_end = end;
        out.push(info);
    }
    Ok(out)
}

/// A type tree whose children point backwards or out of range would make any walk of it loop
/// or panic; ORC writers always number children after their parent.
fn validate_types(types: &[proto::Type]) -> Result<(), OrcError> {
    if types.is_empty() {
        return Err(corrupt("Footer has no types"));
    }
    for (i, t) in types.iter().enumerate() {
        for &child in &t.subtypes {
            let child = child as usize;
            if child <= i || child >= types.len() {
                return Err(corrupt(format!("type {i} has an invalid child {child}")));
            }
        }
        if proto::r#type::Kind::try_from(t.kind.unwrap_or(-1)).is_err() {
            return Err(corrupt(format!(
                "type {i} has an unknown kind {:?}",
                t.kind
            )));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::orc::testutil::{block_on, MemFile, ALL_TYPES_LZ4, MULTI_STRIPE_ZSTD};

    fn read(bytes: Vec<u8>) -> Result<Option<OrcTail>, OrcError> {
        block_on(read_tail(&MemFile::new(bytes)))
    }

    #[test]
    fn stripe_statistics_are_counted_and_each_checked_to_parse() {
        let count = |bytes: Vec<u8>| {
            let bytes = Bytes::from(bytes);
            metadata_entries(Compression::None, DEFAULT_BLOCK_SIZE, &bytes).map(|m| m.len())
        };
        let two = proto::Metadata {
            stripe_stats: vec![proto::StripeStatistics::default(); 2],
        };
        assert_eq!(count(two.encode_to_vec()).unwrap(), 2);
        assert_eq!(count(vec![]).unwrap(), 0);
        // One entry whose first field claims 5 bytes and has 1.
        assert!(count(vec![0x0a, 0x03, 0x0a, 0x05, 0x01]).is_err());
    }

    #[test]
    fn a_statistics_gap_names_what_is_missing() {
        let counted = proto::ColumnStatistics {
            number_of_values: Some(3),
            ..Default::default()
        };
        assert_eq!(statistics_gap(2, &[counted.clone(), counted.clone()]), None);
        let short = statistics_gap(2, std::slice::from_ref(&counted)).unwrap();
        assert!(short.contains("1 of 2 columns"), "{short}");
        let uncounted = statistics_gap(2, &[counted, proto::ColumnStatistics::default()]);
        assert!(uncounted.unwrap().contains("column 1 have no value count"));
    }

    #[test]
    fn statistics_read_again_must_come_from_the_planned_file() {
        let planned = read(MULTI_STRIPE_ZSTD.to_vec()).unwrap().unwrap();
        let again = |file: &[u8], planned: &OrcTail, stripes: bool| {
            block_on(read_statistics_again(
                &MemFile::new(file.to_vec()),
                planned,
                stripes,
            ))
        };
        let (_, whole) = block_on(read_tail_with_statistics(&MemFile::new(
            MULTI_STRIPE_ZSTD.to_vec(),
        )))
        .unwrap()
        .unwrap();
        let read = again(MULTI_STRIPE_ZSTD, &planned, true).unwrap();
        assert_eq!(read.file, whole.file);
        assert_eq!(read.stripe_entries(), whole.stripe_entries());
        assert!(again(MULTI_STRIPE_ZSTD, &planned, false)
            .unwrap()
            .stripe_entries()
            .is_empty());
        let changed = |r: Result<TailStatistics, OrcError>| matches!(r, Err(OrcError::Changed(_)));
        assert!(changed(again(ALL_TYPES_LZ4, &planned, true)));
        assert!(changed(again(&[], &planned, true)));
        // The same length, another tail: every byte of it changed in turn.
        for at in planned.content_end() as usize..MULTI_STRIPE_ZSTD.len() {
            let mut other = MULTI_STRIPE_ZSTD.to_vec();
            other[at] ^= 0x55;
            let r = again(&other, &planned, true);
            assert!(
                r.is_ok() || changed(r),
                "byte {at}: an error other than a change"
            );
        }
        let mut fewer_rows = planned.clone();
        fewer_rows.rows -= 1;
        assert!(changed(again(MULTI_STRIPE_ZSTD, &fewer_rows, true)));
    }

    #[test]
    fn equal_footers_are_held_once() {
        let mut footers = SharedFooters::default();
        let mut a = read(MULTI_STRIPE_ZSTD.to_vec()).unwrap().unwrap();
        let mut b = read(MULTI_STRIPE_ZSTD.to_vec()).unwrap().unwrap();
        let mut other = read(ALL_TYPES_LZ4.to_vec()).unwrap().unwrap();
        assert!(!Arc::ptr_eq(&a.footer, &b.footer));
        for t in [&mut a, &mut b, &mut other] {
            footers.share(t);
        }
        assert!(Arc::ptr_eq(&a.footer, &b.footer));
        assert!(!Arc::ptr_eq(&a.footer, &other.footer));
        assert_ne!(a.footer, other.footer);
        // What differs between files is not in the shared footer.
        assert!(a.footer.stripes.is_empty() && a.footer.statistics.is_empty());
        assert_eq!(a.footer.number_of_rows, None);
    }

    #[test]
    fn reads_java_written_tails() {
        let tail = read(ALL_TYPES_LZ4.to_vec()).unwrap().unwrap();
        assert_eq!(tail.rows, 3);
        assert_eq!(tail.compression, Compression::Lz4);
        assert_eq!(tail.stripes.len(), 1);
        assert_eq!(tail.stripes[0].offset, 3);
        assert_eq!(tail.file_version, [0, 12]);
        assert_eq!(tail.writer, 0);
        assert_eq!(tail.footer.software_version.as_deref(), Some("1.9.5"));
        assert!(tail.stripe_statistics);
        assert_eq!(tail.statistics_gap, None);

        let tail = read(MULTI_STRIPE_ZSTD.to_vec()).unwrap().unwrap();
        assert_eq!(tail.compression, Compression::Zstd);
        assert!(tail.stripes.len() > 1);
        assert!(tail.stripe_statistics);
        assert_eq!(tail.stripes.iter().map(|s| s.rows).sum::<u64>(), tail.rows);
        assert_eq!(tail.content_end(), tail.stripes.last().unwrap().end());
    }

    #[test]
    fn zero_length_file_has_no_tail() {
        assert!(read(Vec::new()).unwrap().is_none());
    }

    #[test]
    fn other_formats_are_not_orc() {
        assert!(matches!(
            read(b"PAR1xxxxxxxxPAR1".to_vec()),
            Err(OrcError::NotOrc(_))
        ));
        assert!(matches!(read(b"x".to_vec()), Err(OrcError::NotOrc(_))));
        assert!(matches!(read(b"OR".to_vec()), Err(OrcError::Truncated(_))));
        assert!(matches!(read(b"ORC".to_vec()), Err(OrcError::Truncated(_))));
    }

    #[test]
    fn every_truncation_is_an_error_not_a_panic() {
        for file in [ALL_TYPES_LZ4, MULTI_STRIPE_ZSTD] {
            for cut in 1..file.len() {
                let result = read(file[..cut].to_vec());
                assert!(result.is_err(), "cut at {cut} parsed");
            }
        }
    }

    #[test]
    fn corrupt_bytes_are_errors_not_panics() {
        // Flip every byte of the tail in turn: each variant must parse or fail cleanly.
        let file = ALL_TYPES_LZ4;
        let tail_start = file.len() - 600.min(file.len() - 3);
        for i in tail_start..file.len() {
            for flip in [0x01u8, 0x80, 0xff] {
                let mut bad = file.to_vec();
                bad[i] ^= flip;
                let _ = read(bad);
            }
        }
        let mut bad = file.to_vec();
        let last = bad.len() - 1;
        bad[last] = 0;
        assert!(matches!(read(bad), Err(OrcError::Corrupt(_))));
    }
}
