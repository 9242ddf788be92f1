//! What an ORC file's tail says, as the engine holds it: the stripes, the Footer shared among
//! files, and the statistics read beside them.

use std::collections::HashMap;
use std::sync::Arc;

use bytes::Bytes;
use orc_rust::proto;
use prost::Message;

use crate::orc::encoding::compress::Compression;
use crate::orc::error::{corrupt, OrcError};

/// Every ORC file starts with these bytes, and a current PostScript ends with them too.
pub const ORC_MAGIC: &[u8; 3] = b"ORC";

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
/// bytes the copy or the decoder reads anyway (`read::read_statistics_again`), and folded into the
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
    pub(super) stripes: Vec<Bytes>,
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

/// One stripe's statistics from its stored bytes in the Metadata section.
pub(super) fn decode_entry(entry: &Bytes) -> Result<proto::StripeStatistics, OrcError> {
    proto::StripeStatistics::decode(entry.as_ref())
        .map_err(|e| corrupt(format!("Metadata does not parse: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
