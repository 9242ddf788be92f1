//! One writer per ORC column, built from the file's type tree. Each writes its PRESENT stream
//! and its own data streams, gathers statistics per row group, stripe and file, and records
//! the row index positions of every stream at the start of each row group.

/// The stream half of a `Values` or `Shape` impl: positions, size, encoding and flush of the
/// listed encoder fields, in the order the spec lists their positions.
macro_rules! streams {
    ($encoding:expr; $($kind:ident => $field:tt),*) => {
        fn position(&self, _out: &mut Vec<u64>) {
            $(self.$field.position(_out);)*
        }

        fn estimated_size(&self) -> usize {
            0 $(+ self.$field.estimated_size())*
        }

        fn encoding(&self) -> orc_rust::proto::column_encoding::Kind {
            $encoding
        }

        fn flush(&mut self, _id: u32, _parts: &mut StripeParts) -> Result<(), OrcError> {
            $(_parts.data_stream(orc_rust::proto::stream::Kind::$kind, _id, self.$field.finish()?);)*
            Ok(())
        }
    };
}

mod nested;
mod primitive;
mod string;

use arrow::array::Array;
use arrow::datatypes::DataType;
use orc_rust::proto::{self, column_encoding, r#type::Kind as TypeKind, stream::Kind};

use super::bloom::Bloom;
use super::settings::Settings;
use super::statistics::{Kind as StatsKind, Stats};
use crate::orc::encoding::byte_rle::BoolRle;
use crate::orc::encoding::out_stream::{Encoded, OutStream};
use crate::orc::error::OrcError;

/// The streams and footer entries one stripe collects from its columns, in column order.
#[derive(Default)]
pub(crate) struct StripeParts {
    pub(crate) index: Vec<(proto::Stream, Encoded)>,
    pub(crate) data: Vec<(proto::Stream, Encoded)>,
    pub(crate) encodings: Vec<proto::ColumnEncoding>,
    pub(crate) stats: Vec<proto::ColumnStatistics>,
}

impl StripeParts {
    fn stream(&mut self, kind: Kind, column: u32, bytes: Encoded, index: bool) {
        let stream = proto::Stream {
            kind: Some(kind as i32),
            column: Some(column),
            length: Some(bytes.len() as u64),
        };
        if index {
            self.index.push((stream, bytes));
        } else {
            self.data.push((stream, bytes));
        }
    }

    pub(crate) fn data_stream(&mut self, kind: Kind, column: u32, bytes: Encoded) {
        self.stream(kind, column, bytes, false);
    }

    /// Appends the parts of the columns after these.
    fn append(&mut self, after: StripeParts) {
        self.index.extend(after.index);
        self.data.extend(after.data);
        self.encodings.extend(after.encodings);
        self.stats.extend(after.stats);
    }
}

pub(crate) trait ColumnWriter: Send {
    /// Appends the rows of `array` (already sliced to the rows being written).
    fn write(&mut self, array: &dyn Array) -> Result<(), OrcError>;
    /// Opens a row group: records where each stream stands.
    fn start_group(&mut self);
    /// Closes the row group: its statistics and positions become an index entry.
    fn end_group(&mut self) -> Result<(), OrcError>;
    fn estimated_size(&self) -> usize;
    /// Hands this column's (and its children's) streams, encoding and stripe statistics over,
    /// and gets ready for the next stripe.
    fn flush(&mut self, parts: &mut StripeParts) -> Result<(), OrcError>;
    /// The file-level statistics of this column and its children, in column order.
    fn file_stats(&self, out: &mut Vec<proto::ColumnStatistics>);
}

/// The value streams of a column without children, behind the common part.
pub(crate) trait Values: Send {
    /// Writes PRESENT through `common` and the values of the non-null rows.
    fn write(&mut self, common: &mut Common, array: &dyn Array) -> Result<(), OrcError>;
    fn position(&self, out: &mut Vec<u64>);
    fn estimated_size(&self) -> usize;
    fn encoding(&self) -> column_encoding::Kind;
    fn flush(&mut self, id: u32, parts: &mut StripeParts) -> Result<(), OrcError>;
}

/// A column without children: the common part and its value streams.
pub(crate) struct Leaf<V> {
    common: Common,
    values: V,
}

impl<V: Values> Leaf<V> {
    fn new(common: Common, values: V) -> Self {
        Self { common, values }
    }
}

impl<V: Values> ColumnWriter for Leaf<V> {
    fn write(&mut self, array: &dyn Array) -> Result<(), OrcError> {
        self.values.write(&mut self.common, array)
    }

    fn start_group(&mut self) {
        let mut positions = Vec::new();
        self.values.position(&mut positions);
        self.common.start_group(positions);
    }

    fn end_group(&mut self) -> Result<(), OrcError> {
        self.common.end_group();
        Ok(())
    }

    fn estimated_size(&self) -> usize {
        self.common.estimated_size() + self.values.estimated_size()
    }

    fn flush(&mut self, parts: &mut StripeParts) -> Result<(), OrcError> {
        self.common.flush(parts, self.values.encoding(), None)?;
        self.values.flush(self.common.id, parts)
    }

    fn file_stats(&self, out: &mut Vec<proto::ColumnStatistics>) {
        out.push(self.common.file_stats());
    }
}

/// One row index entry while the stripe is being written.
pub(crate) struct Entry {
    present: Vec<u64>,
    pub(crate) data: Vec<u64>,
    stats: proto::ColumnStatistics,
}

/// What every column has: PRESENT, statistics, index entries and an optional bloom filter.
pub(crate) struct Common {
    pub(crate) id: u32,
    settings: Settings,
    present: BoolRle,
    nulls_in_stripe: bool,
    pub(crate) group: Stats,
    stripe: Stats,
    file: Stats,
    group_present: Vec<u64>,
    group_data: Vec<u64>,
    pub(crate) entries: Vec<Entry>,
    bloom: Option<(Bloom, Vec<proto::BloomFilter>)>,
}

impl Common {
    fn new(id: u32, settings: &Settings, stats: StatsKind) -> Self {
        // Bloom filters only where our hashing of the values is the one readers test with
        // (bytes and 64-bit integers, as checked against orc-rust's reader); for booleans,
        // decimals and timestamps the reference writers' value forms are not pinned down by
        // the spec, and a filter that disagrees with readers would make them skip matching
        // rows, so those columns get none (readers then simply do not prune by it).
        let hashable = matches!(
            stats,
            StatsKind::Integer { .. }
                | StatsKind::Date { .. }
                | StatsKind::Double { .. }
                | StatsKind::String { .. }
                | StatsKind::Binary { .. }
        );
        let stats = Stats::new(stats);
        let bloom = (hashable && settings.bloom_columns.contains(&id))
            .then(|| (settings.new_bloom(), Vec::new()));
        Self {
            id,
            settings: settings.clone(),
            present: BoolRle::new(settings.stream()),
            nulls_in_stripe: false,
            group: stats.empty_like(),
            stripe: stats.empty_like(),
            file: stats,
            group_present: Vec::new(),
            group_data: Vec::new(),
            entries: Vec::new(),
            bloom,
        }
    }

    pub(crate) fn stream(&self) -> OutStream {
        self.settings.stream()
    }

    /// Writes the PRESENT bit of one row; true when the row has a value.
    pub(crate) fn row(&mut self, valid: bool) -> Result<bool, OrcError> {
        self.present.write(valid)?;
        if !valid {
            self.nulls_in_stripe = true;
            self.group.null();
        }
        Ok(valid)
    }

    pub(crate) fn bloom(&mut self) -> Option<&mut Bloom> {
        self.bloom.as_mut().map(|b| &mut b.0)
    }

    pub(crate) fn start_group(&mut self, data: Vec<u64>) {
        self.group_present.clear();
        self.present.position(&mut self.group_present);
        self.group_data = data;
    }

    pub(crate) fn end_group(&mut self) {
        let fresh = self.group.empty_like();
        let group = std::mem::replace(&mut self.group, fresh);
        self.stripe.merge(&group);
        self.entries.push(Entry {
            present: std::mem::take(&mut self.group_present),
            data: std::mem::take(&mut self.group_data),
            stats: group.to_proto(),
        });
        if let Some((bloom, done)) = &mut self.bloom {
            let next = self.settings.new_bloom();
            done.push(std::mem::replace(bloom, next).to_proto());
        }
    }

    pub(crate) fn estimated_size(&self) -> usize {
        self.present.estimated_size()
    }

    /// Writes the index streams and PRESENT (dropped when the stripe had no nulls, with its
    /// positions), the encoding and statistics; the caller then adds its data streams.
    pub(crate) fn flush(
        &mut self,
        parts: &mut StripeParts,
        encoding: column_encoding::Kind,
        dictionary_size: Option<u32>,
    ) -> Result<(), OrcError> {
        let present = self.present.finish()?;
        let keep_present = self.nulls_in_stripe;
        if self.settings.row_index_stride > 0 {
            let index = proto::RowIndex {
                entry: self
                    .entries
                    .drain(..)
                    .map(|e| {
                        let mut positions = if keep_present { e.present } else { Vec::new() };
                        positions.extend(e.data);
                        proto::RowIndexEntry {
                            positions,
                            statistics: Some(e.stats),
                        }
                    })
                    .collect(),
            };
            let bytes = self.settings.compress_message(&index)?;
            parts.stream(Kind::RowIndex, self.id, bytes.into(), true);
            if let Some((_, done)) = &mut self.bloom {
                let index = proto::BloomFilterIndex {
                    bloom_filter: std::mem::take(done),
                };
                let bytes = self.settings.compress_message(&index)?;
                parts.stream(Kind::BloomFilterUtf8, self.id, bytes.into(), true);
            }
        }
        self.entries.clear();
        if let Some((_, done)) = &mut self.bloom {
            done.clear();
        }
        if keep_present {
            parts.data_stream(Kind::Present, self.id, present);
        }
        self.nulls_in_stripe = false;
        parts.encodings.push(proto::ColumnEncoding {
            kind: Some(encoding as i32),
            dictionary_size,
            bloom_encoding: self.bloom.as_ref().map(|_| 1),
        });
        parts.stats.push(self.stripe.to_proto());
        self.file.merge(&self.stripe);
        self.stripe = self.stripe.empty_like();
        Ok(())
    }

    pub(crate) fn file_stats(&self) -> proto::ColumnStatistics {
        self.file.to_proto()
    }
}

fn mismatch(id: u32, expected: &str, found: &DataType) -> OrcError {
    OrcError::Unsupported(format!(
        "column {id}: the ORC type needs arrow {expected}, the batch holds {found}"
    ))
}

/// Builds the writer of column `id` (and its subtree) from the file's type list.
pub(crate) fn build(
    types: &[proto::Type],
    id: u32,
    settings: &Settings,
) -> Result<Box<dyn ColumnWriter>, OrcError> {
    let ty = types
        .get(id as usize)
        .ok_or_else(|| OrcError::Unsupported(format!("type tree has no column {id}")))?;
    let kind = TypeKind::try_from(ty.kind.unwrap_or(-1))
        .map_err(|_| OrcError::Unsupported(format!("column {id}: unknown type kind")))?;
    let children = |settings: &Settings| -> Result<Vec<Box<dyn ColumnWriter>>, OrcError> {
        ty.subtypes
            .iter()
            .map(|child| build(types, *child, settings))
            .collect()
    };
    Ok(match kind {
        TypeKind::Boolean => Box::new(primitive::Booleans::column(id, settings)),
        TypeKind::Byte => Box::new(primitive::Bytes::column(id, settings)),
        TypeKind::Short | TypeKind::Int | TypeKind::Long | TypeKind::Date => {
            Box::new(primitive::Integers::column(id, settings, kind))
        }
        TypeKind::Float | TypeKind::Double => {
            Box::new(primitive::Floats::column(id, settings, kind))
        }
        TypeKind::String | TypeKind::Varchar | TypeKind::Char => {
            Box::new(string::StringWriter::new(id, settings))
        }
        TypeKind::Binary => Box::new(string::Binaries::column(id, settings)),
        TypeKind::Decimal => Box::new(primitive::Decimals::column(
            id,
            settings,
            ty.scale.unwrap_or(0),
        )),
        TypeKind::Timestamp => Box::new(primitive::Timestamps::column(id, settings, true)),
        TypeKind::TimestampInstant => Box::new(primitive::Timestamps::column(id, settings, false)),
        TypeKind::Struct => Box::new(nested::Struct::column(id, settings, children(settings)?)),
        TypeKind::List => Box::new(nested::Repeated::column(
            id,
            settings,
            children(settings)?,
            false,
        )?),
        TypeKind::Map => Box::new(nested::Repeated::column(
            id,
            settings,
            children(settings)?,
            true,
        )?),
        TypeKind::Union => Box::new(nested::Union::column(id, settings, children(settings)?)),
    })
}
