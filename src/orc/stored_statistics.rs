//! A file's column statistics (the Footer's `statistics`) kept encoded.
//!
//! Every input's tail is held from planning until its output is written, and only the merge of
//! an output's file statistics needs them. Decoded, one column's statistics are a protobuf
//! struct of about half a kilobyte plus its strings, so a partition's inputs held that way cost
//! about 0.5 KiB per column and file (10,000 files of 16 columns: ~90 MiB; 200 columns: ~100 KiB
//! a file); encoded they are the few dozen bytes each that the file stores. The merge decodes
//! one column of every input at a time ([`crate::orc::merge_file_statistics`]).

use orc_rust::proto::ColumnStatistics;
use prost::Message;

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StoredStatistics {
    /// Every column's statistics, protobuf-encoded back to back.
    bytes: Box<[u8]>,
    /// Where each column's encoding ends in `bytes`: 4 bytes a column, not 8, since a
    /// partition holds one of these per input (a Footer's statistics are far below 4 GiB).
    ends: Box<[u32]>,
}

impl StoredStatistics {
    pub fn new(columns: &[ColumnStatistics]) -> Self {
        let mut bytes = Vec::with_capacity(columns.iter().map(Message::encoded_len).sum());
        let mut ends = Vec::with_capacity(columns.len());
        for c in columns {
            c.encode_raw(&mut bytes);
            ends.push(u32::try_from(bytes.len()).unwrap_or(u32::MAX));
        }
        StoredStatistics {
            bytes: bytes.into_boxed_slice(),
            ends: ends.into_boxed_slice(),
        }
    }

    /// How many columns have statistics.
    pub fn len(&self) -> usize {
        self.ends.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    /// Column `c`'s statistics, decoded.
    pub fn column(&self, c: usize) -> Option<ColumnStatistics> {
        let end = *self.ends.get(c)? as usize;
        let start = if c == 0 { 0 } else { self.ends[c - 1] as usize };
        // Encoded by `new` from a decoded message: it decodes.
        Some(
            ColumnStatistics::decode(&self.bytes[start..end])
                .expect("statistics encoded by StoredStatistics::new decode"),
        )
    }

    /// Every column's statistics, decoded one at a time.
    pub fn iter(&self) -> impl Iterator<Item = ColumnStatistics> + '_ {
        (0..self.len()).filter_map(|c| self.column(c))
    }

    /// Every column's statistics, decoded.
    pub fn decode_all(&self) -> Vec<ColumnStatistics> {
        self.iter().collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use orc_rust::proto::{IntegerStatistics, StringStatistics};

    #[test]
    fn columns_decode_to_what_was_stored() {
        let columns = vec![
            ColumnStatistics {
                number_of_values: Some(3),
                has_null: Some(false),
                ..Default::default()
            },
            // An all-default message encodes to no bytes at all: it still counts as a column.
            ColumnStatistics::default(),
            ColumnStatistics {
                number_of_values: Some(2),
                int_statistics: Some(IntegerStatistics {
                    minimum: Some(-5),
                    maximum: Some(7),
                    sum: None,
                }),
                string_statistics: Some(StringStatistics {
                    minimum: Some("a".into()),
                    upper_bound: Some("zz".into()),
                    ..Default::default()
                }),
                ..Default::default()
            },
        ];
        let stored = StoredStatistics::new(&columns);
        assert_eq!(stored.len(), 3);
        assert_eq!(stored.decode_all(), columns);
        assert_eq!(stored.column(1), Some(ColumnStatistics::default()));
        assert_eq!(stored.column(3), None);
        assert!(StoredStatistics::new(&[]).is_empty());
    }
}
