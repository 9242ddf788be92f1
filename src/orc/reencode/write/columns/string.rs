//! string, char(n), varchar(n) (dictionary or direct) and binary (direct).
//!
//! Strings follow the reference writers' rule: each stripe starts buffering a dictionary, and
//! at the end of its first row group the column stays dictionary-encoded (DICTIONARY_V2) when
//! distinct values / non-null values <= the key threshold (0.8 by default), or switches to
//! DIRECT_V2 for the rest of the stripe. Char and varchar values arrive already padded or cut
//! by the original writer and are written as they are.

use std::collections::HashMap;

use arrow::array::{Array, AsArray};
use orc_rust::proto::{self, column_encoding::Kind as Encoding, stream::Kind};

use super::super::settings::Settings;
use super::super::statistics::Kind as StatsKind;
use super::{mismatch, ColumnWriter, Common, Leaf, StripeParts, Values};
use crate::orc::encoding::out_stream::OutStream;
use crate::orc::encoding::rle_v2::IntRleV2;
use crate::orc::error::OrcError;

/// Calls `f` with the bytes of each non-null value of a Utf8/LargeUtf8 (or, for binary,
/// Binary/LargeBinary) array, writing PRESENT as it goes.
fn each_bytes(
    common: &mut Common,
    array: &dyn Array,
    utf8: bool,
    mut f: impl FnMut(&mut Common, &[u8]) -> Result<(), OrcError>,
) -> Result<(), OrcError> {
    macro_rules! run {
        ($values:expr) => {{
            let values = $values;
            for i in 0..values.len() {
                if common.row(values.is_valid(i))? {
                    f(common, values.value(i).as_ref())?;
                }
            }
            Ok(())
        }};
    }
    if utf8 {
        if let Some(v) = array.as_string_opt::<i32>() {
            return run!(v);
        }
        if let Some(v) = array.as_string_opt::<i64>() {
            return run!(v);
        }
        Err(mismatch(common.id, "Utf8", array.data_type()))
    } else {
        if let Some(v) = array.as_binary_opt::<i32>() {
            return run!(v);
        }
        if let Some(v) = array.as_binary_opt::<i64>() {
            return run!(v);
        }
        Err(mismatch(common.id, "Binary", array.data_type()))
    }
}

/// The bytes of each value in DATA, their lengths in LENGTH.
struct Direct {
    data: OutStream,
    lengths: IntRleV2,
}

impl Direct {
    fn new(common: &Common) -> Self {
        Self {
            data: common.stream(),
            lengths: IntRleV2::new(common.stream(), false),
        }
    }

    fn write(&mut self, v: &[u8]) -> Result<(), OrcError> {
        self.data.write(v)?;
        self.lengths.write(v.len() as i64)
    }

    fn position(&self) -> Vec<u64> {
        let mut positions = Vec::new();
        self.data.position(&mut positions);
        self.lengths.position(&mut positions);
        positions
    }

    fn estimated_size(&self) -> usize {
        self.data.estimated_size() + self.lengths.estimated_size()
    }

    fn flush(&mut self, id: u32, parts: &mut StripeParts) -> Result<(), OrcError> {
        parts.data_stream(Kind::Data, id, self.data.finish()?);
        parts.data_stream(Kind::Length, id, self.lengths.finish()?);
        Ok(())
    }
}

/// Row ids in pieces of a fixed size: a stripe's ids (4 bytes per row, tens of MiB in a large
/// stripe) grow without the slack of one doubling `Vec`, which could hold twice as much.
#[derive(Default)]
struct RowIds {
    pieces: Vec<Vec<u32>>,
    len: usize,
}

/// Memory a dictionary key takes besides its bytes: its hash table slot (a boxed slice and an
/// id, at most 7/8 full) and its allocation's header.
const KEY_OVERHEAD: usize = 48;

/// Ids per piece of [`RowIds`] (256 KiB).
const IDS_PER_PIECE: usize = 64 * 1024;

impl RowIds {
    fn push(&mut self, id: u32) {
        match self.pieces.last_mut() {
            Some(piece) if piece.len() < IDS_PER_PIECE => piece.push(id),
            _ => {
                let mut piece = Vec::with_capacity(IDS_PER_PIECE);
                piece.push(id);
                self.pieces.push(piece);
            }
        }
        self.len += 1;
    }

    fn len(&self) -> usize {
        self.len
    }

    fn iter(&self) -> impl Iterator<Item = u32> + '_ {
        self.pieces.iter().flatten().copied()
    }

    fn clear(&mut self) {
        self.pieces.clear();
        self.len = 0;
    }
}

/// The stripe's distinct values and, per row, the id of its value (ids in first-seen order
/// until the stripe is flushed, when the dictionary is sorted).
#[derive(Default)]
struct Dictionary {
    /// aHash, not the standard SipHash: hashing the keys was 2% of a re-encode's CPU, and
    /// the keys are table data, not input an attacker times.
    ids: HashMap<Box<[u8]>, u32, ahash::RandomState>,
    rows: RowIds,
    bytes: usize,
    /// `rows.len()` at the start of each row group of the stripe.
    group_starts: Vec<usize>,
}

impl Dictionary {
    fn add(&mut self, v: &[u8]) {
        let next = self.ids.len() as u32;
        let id = match self.ids.get(v) {
            Some(id) => *id,
            None => {
                self.bytes += v.len();
                self.ids.insert(v.into(), next);
                next
            }
        };
        self.rows.push(id);
    }

    fn pays(&self, threshold: f64) -> bool {
        self.rows.len() == 0 || self.ids.len() as f64 / self.rows.len() as f64 <= threshold
    }

    /// Keys in first-seen order.
    fn keys_by_id(&self) -> Vec<&[u8]> {
        let mut keys = vec![&[][..]; self.ids.len()];
        for (key, id) in &self.ids {
            keys[*id as usize] = key;
        }
        keys
    }

    fn clear(&mut self) {
        self.ids.clear();
        self.rows.clear();
        self.bytes = 0;
        self.group_starts.clear();
    }
}

pub(crate) struct StringWriter {
    common: Common,
    threshold: f64,
    /// Some while the stripe is dictionary-encoded (or not yet decided).
    dictionary: Option<Dictionary>,
    decided: bool,
    direct: Direct,
}

impl StringWriter {
    pub(crate) fn new(id: u32, settings: &Settings) -> Self {
        let common = Common::new(
            id,
            settings,
            StatsKind::String {
                range: None,
                total: Some(0),
            },
        );
        let direct = Direct::new(&common);
        Self {
            common,
            threshold: settings.dictionary_key_threshold,
            dictionary: Some(Dictionary::default()),
            decided: false,
            direct,
        }
    }

    /// The stripe's dictionary check, made once: keep the dictionary or write what it holds
    /// directly and go on directly. Called when the stripe's first row group ends, before the
    /// next one starts.
    fn decide(&mut self) -> Result<(), OrcError> {
        self.decided = true;
        let Some(dictionary) = &self.dictionary else {
            return Ok(());
        };
        if dictionary.pays(self.threshold) {
            return Ok(());
        }
        let dictionary = self.dictionary.take().expect("checked above");
        // Only the first group exists so far: its positions are the streams' starts.
        for entry in &mut self.common.entries {
            entry.data = self.direct.position();
        }
        let keys = dictionary.keys_by_id();
        for id in dictionary.rows.iter() {
            self.direct.write(keys[id as usize])?;
        }
        Ok(())
    }

    fn flush_dictionary(
        &mut self,
        dictionary: &Dictionary,
        parts: &mut StripeParts,
    ) -> Result<(), OrcError> {
        let mut keys: Vec<(&[u8], u32)> = dictionary.ids.iter().map(|(k, v)| (&**k, *v)).collect();
        keys.sort_unstable();
        let mut new_id = vec![0u32; keys.len()];
        for (sorted, (_, old)) in keys.iter().enumerate() {
            new_id[*old as usize] = sorted as u32;
        }
        let mut rows = IntRleV2::new(self.common.stream(), false);
        let mut groups = dictionary
            .group_starts
            .iter()
            .zip(&mut self.common.entries)
            .peekable();
        for (i, id) in dictionary.rows.iter().enumerate() {
            while let Some((_, entry)) = groups.next_if(|(start, _)| **start == i) {
                entry.data.clear();
                rows.position(&mut entry.data);
            }
            rows.write(i64::from(new_id[id as usize]))?;
        }
        for (_, entry) in groups {
            entry.data.clear();
            rows.position(&mut entry.data);
        }
        let mut data = self.common.stream();
        let mut lengths = IntRleV2::new(self.common.stream(), false);
        for (key, _) in &keys {
            data.write(key)?;
            lengths.write(key.len() as i64)?;
        }
        let id = self.common.id;
        self.common
            .flush(parts, Encoding::DictionaryV2, Some(keys.len() as u32))?;
        parts.data_stream(Kind::Data, id, rows.finish()?);
        parts.data_stream(Kind::Length, id, lengths.finish()?);
        parts.data_stream(Kind::DictionaryData, id, data.finish()?);
        Ok(())
    }
}

impl ColumnWriter for StringWriter {
    fn write(&mut self, array: &dyn Array) -> Result<(), OrcError> {
        let (dictionary, direct) = (&mut self.dictionary, &mut self.direct);
        each_bytes(&mut self.common, array, true, |c, v| {
            c.group.string(v);
            if let Some(b) = c.bloom() {
                b.add_bytes(v);
            }
            match dictionary {
                Some(d) => {
                    d.add(v);
                    Ok(())
                }
                None => direct.write(v),
            }
        })
    }

    fn start_group(&mut self) {
        let positions = match &mut self.dictionary {
            Some(d) => {
                d.group_starts.push(d.rows.len());
                Vec::new()
            }
            None => self.direct.position(),
        };
        self.common.start_group(positions);
    }

    fn end_group(&mut self) -> Result<(), OrcError> {
        self.common.end_group();
        if !self.decided {
            self.decide()?;
        }
        Ok(())
    }

    /// With a dictionary, what it holds in memory: its keys (with their hash table entry and
    /// allocation) and 4 bytes of id per row. The reference writer counts its dictionary the
    /// same way, so a stripe cut at `--stripe-size` holds about that much memory, however much
    /// smaller its encoded ids will be.
    fn estimated_size(&self) -> usize {
        let dictionary = self.dictionary.as_ref().map_or(0, |d| {
            d.bytes + d.ids.len() * KEY_OVERHEAD + d.rows.len() * size_of::<u32>()
        });
        self.common.estimated_size() + self.direct.estimated_size() + dictionary
    }

    fn flush(&mut self, parts: &mut StripeParts) -> Result<(), OrcError> {
        if !self.decided {
            self.decide()?;
        }
        match self.dictionary.take() {
            Some(mut dictionary) => {
                self.flush_dictionary(&dictionary, parts)?;
                dictionary.clear();
                self.dictionary = Some(dictionary);
            }
            None => {
                self.common.flush(parts, Encoding::DirectV2, None)?;
                self.direct.flush(self.common.id, parts)?;
                self.dictionary = Some(Dictionary::default());
            }
        }
        self.decided = false;
        Ok(())
    }

    fn file_stats(&self, out: &mut Vec<proto::ColumnStatistics>) {
        out.push(self.common.file_stats());
    }
}

/// A binary column: always direct.
pub(crate) struct Binaries(Direct);

impl Binaries {
    pub(crate) fn column(id: u32, settings: &Settings) -> Leaf<Self> {
        let common = Common::new(id, settings, StatsKind::Binary { total: Some(0) });
        let direct = Direct::new(&common);
        Leaf::new(common, Self(direct))
    }
}

impl Values for Binaries {
    fn write(&mut self, common: &mut Common, array: &dyn Array) -> Result<(), OrcError> {
        let direct = &mut self.0;
        each_bytes(common, array, false, |c, v| {
            c.group.binary(v);
            if let Some(b) = c.bloom() {
                b.add_bytes(v);
            }
            direct.write(v)
        })
    }

    fn position(&self, out: &mut Vec<u64>) {
        out.extend(self.0.position());
    }

    fn estimated_size(&self) -> usize {
        self.0.estimated_size()
    }

    fn encoding(&self) -> Encoding {
        Encoding::DirectV2
    }

    fn flush(&mut self, id: u32, parts: &mut StripeParts) -> Result<(), OrcError> {
        self.0.flush(id, parts)
    }
}
