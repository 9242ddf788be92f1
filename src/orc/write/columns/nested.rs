//! struct, list, map and union columns. Children hold values only for the rows where the
//! parent has one, so a parent hands its children the slices behind its non-null rows.

use std::ops::Range;

use arrow::array::{Array, ArrayRef, AsArray, UInt32Array};
use arrow::datatypes::DataType;
use orc_rust::proto::{self, column_encoding::Kind as Encoding, stream::Kind};

use super::super::super::error::OrcError;
use super::super::byte_rle::ByteRle;
use super::super::rle_v2::IntRleV2;
use super::super::statistics::Kind as StatsKind;
use super::super::Settings;
use super::{mismatch, ColumnWriter, Common, StripeParts};

/// Maximal runs of consecutive valid rows.
fn valid_runs(array: &dyn Array) -> Vec<Range<usize>> {
    let mut runs = Vec::new();
    let mut start = None;
    for i in 0..array.len() {
        match (array.is_valid(i), start) {
            (true, None) => start = Some(i),
            (false, Some(s)) => {
                runs.push(s..i);
                start = None;
            }
            _ => {}
        }
    }
    if let Some(s) = start {
        runs.push(s..array.len());
    }
    runs
}

fn start_children(children: &mut [Box<dyn ColumnWriter>]) {
    children.iter_mut().for_each(|c| c.start_group());
}

fn end_children(children: &mut [Box<dyn ColumnWriter>]) -> Result<(), OrcError> {
    children.iter_mut().try_for_each(|c| c.end_group())
}

fn children_size(children: &[Box<dyn ColumnWriter>]) -> usize {
    children.iter().map(|c| c.estimated_size()).sum()
}

fn flush_children(
    children: &mut [Box<dyn ColumnWriter>],
    parts: &mut StripeParts,
) -> Result<(), OrcError> {
    children.iter_mut().try_for_each(|c| c.flush(parts))
}

fn children_stats(children: &[Box<dyn ColumnWriter>], out: &mut Vec<proto::ColumnStatistics>) {
    children.iter().for_each(|c| c.file_stats(out));
}

pub(crate) struct StructWriter {
    common: Common,
    children: Vec<Box<dyn ColumnWriter>>,
}

impl StructWriter {
    pub(crate) fn new(id: u32, settings: &Settings, children: Vec<Box<dyn ColumnWriter>>) -> Self {
        Self {
            common: Common::new(id, settings, StatsKind::Plain),
            children,
        }
    }
}

impl ColumnWriter for StructWriter {
    fn write(&mut self, array: &dyn Array) -> Result<(), OrcError> {
        let array = array
            .as_struct_opt()
            .filter(|s| s.num_columns() == self.children.len())
            .ok_or_else(|| {
                mismatch(
                    self.common.id,
                    &format!("Struct of {} fields", self.children.len()),
                    array.data_type(),
                )
            })?;
        for i in 0..array.len() {
            if self.common.row(array.is_valid(i))? {
                self.common.group.plain();
            }
        }
        for run in valid_runs(array) {
            for (child, column) in self.children.iter_mut().zip(array.columns()) {
                child.write(&column.slice(run.start, run.len()))?;
            }
        }
        Ok(())
    }

    fn start_group(&mut self) {
        self.common.start_group(Vec::new());
        start_children(&mut self.children);
    }

    fn end_group(&mut self) -> Result<(), OrcError> {
        self.common.end_group();
        end_children(&mut self.children)
    }

    fn estimated_size(&self) -> usize {
        self.common.estimated_size() + children_size(&self.children)
    }

    fn flush(&mut self, parts: &mut StripeParts) -> Result<(), OrcError> {
        self.common.flush(parts, Encoding::Direct, None)?;
        flush_children(&mut self.children, parts)
    }

    fn file_stats(&self, out: &mut Vec<proto::ColumnStatistics>) {
        out.push(self.common.file_stats());
        children_stats(&self.children, out);
    }
}

/// Lists and maps: a LENGTH stream of element counts, then the elements as child columns
/// (one for a list, key and value for a map).
struct Repeated {
    common: Common,
    lengths: IntRleV2,
    children: Vec<Box<dyn ColumnWriter>>,
}

impl Repeated {
    fn new(
        id: u32,
        settings: &Settings,
        children: Vec<Box<dyn ColumnWriter>>,
        want: usize,
    ) -> Result<Self, OrcError> {
        if children.len() != want {
            return Err(OrcError::Unsupported(format!(
                "column {id}: a list or map type needs {want} subtypes, the type tree has {}",
                children.len()
            )));
        }
        let common = Common::new(
            id,
            settings,
            StatsKind::Collection {
                children: None,
                total: 0,
            },
        );
        let lengths = IntRleV2::new(common.stream(), false);
        Ok(Self {
            common,
            lengths,
            children,
        })
    }

    /// `offsets` has one more entry than `validity` has rows; `elements` are the arrays the
    /// offsets index (the list's values, or the map's keys and values).
    fn write(
        &mut self,
        validity: &dyn Array,
        offsets: &[usize],
        elements: &[&ArrayRef],
    ) -> Result<(), OrcError> {
        for i in 0..validity.len() {
            if self.common.row(validity.is_valid(i))? {
                let n = offsets[i + 1] - offsets[i];
                self.common.group.collection(n as u64);
                self.lengths.write(n as i64)?;
            }
        }
        for run in valid_runs(validity) {
            let (from, to) = (offsets[run.start], offsets[run.end]);
            for (child, values) in self.children.iter_mut().zip(elements) {
                child.write(&values.slice(from, to - from))?;
            }
        }
        Ok(())
    }

    fn start_group(&mut self) {
        let mut positions = Vec::new();
        self.lengths.position(&mut positions);
        self.common.start_group(positions);
        start_children(&mut self.children);
    }

    fn end_group(&mut self) -> Result<(), OrcError> {
        self.common.end_group();
        end_children(&mut self.children)
    }

    fn estimated_size(&self) -> usize {
        self.common.estimated_size() + self.lengths.estimated_size() + children_size(&self.children)
    }

    fn flush(&mut self, parts: &mut StripeParts) -> Result<(), OrcError> {
        self.common.flush(parts, Encoding::DirectV2, None)?;
        parts.data_stream(Kind::Length, self.common.id, self.lengths.finish()?);
        flush_children(&mut self.children, parts)
    }

    fn file_stats(&self, out: &mut Vec<proto::ColumnStatistics>) {
        out.push(self.common.file_stats());
        children_stats(&self.children, out);
    }
}

pub(crate) struct ListWriter(Repeated);

impl ListWriter {
    pub(crate) fn new(
        id: u32,
        settings: &Settings,
        children: Vec<Box<dyn ColumnWriter>>,
    ) -> Result<Self, OrcError> {
        Repeated::new(id, settings, children, 1).map(Self)
    }
}

impl ColumnWriter for ListWriter {
    fn write(&mut self, array: &dyn Array) -> Result<(), OrcError> {
        if let Some(list) = array.as_list_opt::<i32>() {
            let offsets: Vec<usize> = list.offsets().iter().map(|o| *o as usize).collect();
            return self.0.write(list, &offsets, &[list.values()]);
        }
        if let Some(list) = array.as_list_opt::<i64>() {
            let offsets: Vec<usize> = list.offsets().iter().map(|o| *o as usize).collect();
            return self.0.write(list, &offsets, &[list.values()]);
        }
        Err(mismatch(self.0.common.id, "List", array.data_type()))
    }

    fn start_group(&mut self) {
        self.0.start_group();
    }

    fn end_group(&mut self) -> Result<(), OrcError> {
        self.0.end_group()
    }

    fn estimated_size(&self) -> usize {
        self.0.estimated_size()
    }

    fn flush(&mut self, parts: &mut StripeParts) -> Result<(), OrcError> {
        self.0.flush(parts)
    }

    fn file_stats(&self, out: &mut Vec<proto::ColumnStatistics>) {
        self.0.file_stats(out);
    }
}

pub(crate) struct MapWriter(Repeated);

impl MapWriter {
    pub(crate) fn new(
        id: u32,
        settings: &Settings,
        children: Vec<Box<dyn ColumnWriter>>,
    ) -> Result<Self, OrcError> {
        Repeated::new(id, settings, children, 2).map(Self)
    }
}

impl ColumnWriter for MapWriter {
    fn write(&mut self, array: &dyn Array) -> Result<(), OrcError> {
        let map = array
            .as_map_opt()
            .ok_or_else(|| mismatch(self.0.common.id, "Map", array.data_type()))?;
        let offsets: Vec<usize> = map.offsets().iter().map(|o| *o as usize).collect();
        self.0.write(map, &offsets, &[map.keys(), map.values()])
    }

    fn start_group(&mut self) {
        self.0.start_group();
    }

    fn end_group(&mut self) -> Result<(), OrcError> {
        self.0.end_group()
    }

    fn estimated_size(&self) -> usize {
        self.0.estimated_size()
    }

    fn flush(&mut self, parts: &mut StripeParts) -> Result<(), OrcError> {
        self.0.flush(parts)
    }

    fn file_stats(&self, out: &mut Vec<proto::ColumnStatistics>) {
        self.0.file_stats(out);
    }
}

/// A union: its tags (the variant of each non-null row) in a byte-RLE DATA stream, and each
/// variant a child column holding the values of its rows.
///
/// Arrow unions have no null bitmap. orc-rust reads a null union row as variant 0 with a null
/// value, so that is what is written back as a null row (an ORC file can also hold a non-null
/// union row whose variant-0 value is null; decoded through arrow the two cannot be told
/// apart, and both read back as null).
pub(crate) struct UnionWriter {
    common: Common,
    tags: ByteRle,
    children: Vec<Box<dyn ColumnWriter>>,
}

impl UnionWriter {
    pub(crate) fn new(id: u32, settings: &Settings, children: Vec<Box<dyn ColumnWriter>>) -> Self {
        let common = Common::new(id, settings, StatsKind::Plain);
        let tags = ByteRle::new(common.stream());
        Self {
            common,
            tags,
            children,
        }
    }
}

impl ColumnWriter for UnionWriter {
    fn write(&mut self, array: &dyn Array) -> Result<(), OrcError> {
        let id = self.common.id;
        let union = array
            .as_union_opt()
            .ok_or_else(|| mismatch(id, "Union", array.data_type()))?;
        let DataType::Union(fields, _) = union.data_type() else {
            return Err(mismatch(id, "Union", array.data_type()));
        };
        let type_ids: Vec<i8> = fields.iter().map(|(t, _)| t).collect();
        if type_ids.len() != self.children.len() {
            return Err(mismatch(
                id,
                &format!("Union of {} variants", self.children.len()),
                array.data_type(),
            ));
        }
        let mut picks: Vec<Vec<u32>> = vec![Vec::new(); type_ids.len()];
        for i in 0..union.len() {
            let type_id = union.type_id(i);
            let tag = type_ids.iter().position(|t| *t == type_id).ok_or_else(|| {
                OrcError::Unsupported(format!("column {id}: unknown union type id {type_id}"))
            })?;
            let offset = union.value_offset(i);
            let valid = !(tag == 0 && union.child(type_id).is_null(offset));
            if self.common.row(valid)? {
                self.common.group.plain();
                self.tags.write(tag as u8)?;
                picks[tag].push(offset as u32);
            }
        }
        for ((child, type_id), rows) in self.children.iter_mut().zip(&type_ids).zip(picks) {
            let values =
                arrow::compute::take(union.child(*type_id), &UInt32Array::from(rows), None)
                    .map_err(|e| OrcError::Unsupported(format!("column {id}: {e}")))?;
            child.write(&values)?;
        }
        Ok(())
    }

    fn start_group(&mut self) {
        let mut positions = Vec::new();
        self.tags.position(&mut positions);
        self.common.start_group(positions);
        start_children(&mut self.children);
    }

    fn end_group(&mut self) -> Result<(), OrcError> {
        self.common.end_group();
        end_children(&mut self.children)
    }

    fn estimated_size(&self) -> usize {
        self.common.estimated_size() + self.tags.estimated_size() + children_size(&self.children)
    }

    fn flush(&mut self, parts: &mut StripeParts) -> Result<(), OrcError> {
        self.common.flush(parts, Encoding::Direct, None)?;
        parts.data_stream(Kind::Data, self.common.id, self.tags.finish()?);
        flush_children(&mut self.children, parts)
    }

    fn file_stats(&self, out: &mut Vec<proto::ColumnStatistics>) {
        out.push(self.common.file_stats());
        children_stats(&self.children, out);
    }
}
