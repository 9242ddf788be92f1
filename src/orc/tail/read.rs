//! Reading an ORC file's tail: PostScript, Footer and Metadata, each checked before it is
//! trusted, and its statistics read again when an output is written from the file.

use std::sync::Arc;

use bytes::{Bytes, BytesMut};
use orc_rust::proto;
use prost::Message;

use super::orc_tail::{
    decode_entry, statistics_gap, OrcTail, StripeInfo, TailStatistics, ORC_MAGIC,
};
use crate::orc::encoding::compress::{decompress, Compression};
use crate::orc::error::{corrupt, OrcError};
use crate::orc::io::storage::{read_checked, RangeRead, SPECULATIVE_TAIL};

/// The block size readers assume when a PostScript does not say (Java ORC's default).
const DEFAULT_BLOCK_SIZE: u64 = 256 * 1024;

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
    let end = read_checked(
        reader,
        file_length - spec_len..file_length,
        file_length,
        "tail",
    )
    .await?;
    check_header(reader, &end, file_length).await?;
    let postscript = PostScript::parse(&end, file_length)?;
    let tail = whole_tail(reader, end, postscript.tail_length, file_length).await?;
    let (tail, statistics) = sections(&postscript, &tail, file_length)?;
    Ok(Some((tail, statistics)))
}

/// Checks the header first: for a file of another format the magic is the useful message,
/// not whatever its last bytes fail to parse as. `end` is the file's end as read, the whole
/// file when it is short.
async fn check_header<R: RangeRead>(
    reader: &R,
    end: &Bytes,
    file_length: u64,
) -> Result<(), OrcError> {
    let header = if file_length <= end.len() as u64 {
        end.slice(..file_length.min(3) as usize)
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
    Ok(())
}

/// What the PostScript says, checked: the file version, the codec and where the sections lie.
struct PostScript {
    writer_version: u32,
    file_version: [u32; 2],
    compression: Compression,
    compression_block_size: u64,
    footer_len: u64,
    metadata_len: u64,
    /// Bytes of Metadata + Footer + PostScript + the final length byte.
    tail_length: u64,
}

impl PostScript {
    /// The PostScript at the end of `end`, the last bytes of a file of `file_length` bytes
    /// (at least 5, with a checked header).
    fn parse(end: &Bytes, file_length: u64) -> Result<Self, OrcError> {
        let ps_len = u64::from(end[end.len() - 1]);
        if ps_len == 0 {
            return Err(corrupt("PostScript length is 0"));
        }
        if ps_len + 1 > file_length - 3 {
            return Err(OrcError::Truncated(format!(
                "PostScript of {ps_len} bytes does not fit in a file of {file_length} bytes"
            )));
        }
        // end holds at least 5 bytes and ps_len + 1 <= its length - 3 is implied when the
        // whole file was read; otherwise it holds 16 KiB, far above the 256 a PostScript can
        // claim.
        let ps_bytes = end.slice(end.len() - 1 - ps_len as usize..end.len() - 1);
        let postscript = proto::PostScript::decode(ps_bytes)
            .map_err(|e| corrupt(format!("PostScript does not parse: {e}")))?;
        match postscript.magic.as_deref() {
            Some("ORC") => {}
            // Files from ORC 0.11 writers have no magic in the PostScript; the header was
            // checked.
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
                    "Footer ({footer_len} bytes) and Metadata ({metadata_len} bytes) claim more \
                     than the file's {file_length} bytes"
                ))
            })?;
        Ok(Self {
            writer_version: postscript.writer_version.unwrap_or(0),
            file_version,
            compression,
            compression_block_size,
            footer_len,
            metadata_len,
            tail_length,
        })
    }
}

/// The last `tail_length` bytes of the file: `end`, with what the first read did not reach
/// read in front of it.
async fn whole_tail<R: RangeRead>(
    reader: &R,
    end: Bytes,
    tail_length: u64,
    file_length: u64,
) -> Result<Bytes, OrcError> {
    let mut end = end;
    if tail_length > end.len() as u64 {
        let start = file_length - tail_length;
        let missing = read_checked(
            reader,
            start..file_length - end.len() as u64,
            file_length,
            "tail",
        )
        .await?;
        let mut joined = BytesMut::with_capacity(tail_length as usize);
        joined.extend_from_slice(&missing);
        joined.extend_from_slice(&end);
        end = joined.freeze();
    }
    Ok(end.slice(end.len() - tail_length as usize..))
}

/// The Footer and Metadata of `tail` (the file's last `postscript.tail_length` bytes), checked
/// against each other and the file length, as what planning keeps and the statistics.
fn sections(
    postscript: &PostScript,
    tail: &Bytes,
    file_length: u64,
) -> Result<(OrcTail, TailStatistics), OrcError> {
    let (compression, block_size) = (postscript.compression, postscript.compression_block_size);
    let metadata_len = postscript.metadata_len;
    let metadata_bytes = tail.slice(..metadata_len as usize);
    let footer_bytes =
        tail.slice(metadata_len as usize..(metadata_len + postscript.footer_len) as usize);

    let mut footer =
        decode_section::<proto::Footer>(compression, block_size, &footer_bytes, "Footer")?;
    let stripe_statistics = metadata_entries(compression, block_size, &metadata_bytes)?;

    let content_end = file_length - postscript.tail_length;
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
        writer_version: postscript.writer_version,
        stripe_statistics: statistics.stripes.len() == stripes.len(),
        statistics_gap: statistics_gap(footer.types.len(), &statistics.file),
        footer: Arc::new(footer),
        file_length,
        tail_length: postscript.tail_length,
        rows,
        stripes,
        compression,
        compression_block_size: block_size,
        file_version: postscript.file_version,
    };
    Ok((tail, statistics))
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
    use super::super::orc_tail::SharedFooters;
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
