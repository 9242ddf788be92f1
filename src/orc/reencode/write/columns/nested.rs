//! struct, list, map and union columns. Children hold values only for the rows where the
//! parent has one, so a parent hands its children the slices behind its non-null rows.

use std::ops::Range;

use arrow::array::{Array, ArrayRef, AsArray, UInt32Array};
use arrow::datatypes::DataType;
use orc_rust::proto::{self, column_encoding::Kind as Encoding};
use rayon::prelude::*;

use super::super::settings::Settings;
use super::super::statistics::Kind as StatsKind;
use super::{mismatch, ColumnWriter, Common, StripeParts};
use crate::orc::encoding::byte_rle::ByteRle;
use crate::orc::encoding::rle_v2::IntRleV2;
use crate::orc::encoding::PARALLEL_FROM_ROWS;
use crate::orc::error::OrcError;
use crate::orc::marks::NULL_UNION_ROW;

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

/// The part of a column with children that differs by type: its own streams and how it hands
/// rows to its children.
pub(crate) trait Shape: Send {
    fn write(
        &mut self,
        common: &mut Common,
        children: &mut [Box<dyn ColumnWriter>],
        array: &dyn Array,
    ) -> Result<(), OrcError>;
    fn position(&self, out: &mut Vec<u64>);
    fn estimated_size(&self) -> usize;
    fn encoding(&self) -> Encoding;
    fn flush(&mut self, id: u32, parts: &mut StripeParts) -> Result<(), OrcError>;
}

/// A struct, list, map or union column: the common part, its shape and its children.
pub(crate) struct Parent<S> {
    common: Common,
    shape: S,
    children: Vec<Box<dyn ColumnWriter>>,
}

impl<S: Shape> ColumnWriter for Parent<S> {
    fn write(&mut self, array: &dyn Array) -> Result<(), OrcError> {
        self.shape
            .write(&mut self.common, &mut self.children, array)
    }

    fn start_group(&mut self) {
        let mut positions = Vec::new();
        self.shape.position(&mut positions);
        self.common.start_group(positions);
        self.children.iter_mut().for_each(|c| c.start_group());
    }

    fn end_group(&mut self) -> Result<(), OrcError> {
        self.common.end_group();
        self.children.iter_mut().try_for_each(|c| c.end_group())
    }

    fn estimated_size(&self) -> usize {
        let children: usize = self.children.iter().map(|c| c.estimated_size()).sum();
        self.common.estimated_size() + self.shape.estimated_size() + children
    }

    fn flush(&mut self, parts: &mut StripeParts) -> Result<(), OrcError> {
        self.common.flush(parts, self.shape.encoding(), None)?;
        self.shape.flush(self.common.id, parts)?;
        // The children finish their streams (a dictionary's choice, the last compression) on
        // the encoders' threads at once, each into parts of its own taken in column order: the
        // same parts as one after the other, where the stripe's end was one thread's work.
        let children = self
            .children
            .par_iter_mut()
            .map(|c| {
                let mut own = StripeParts::default();
                c.flush(&mut own).map(|()| own)
            })
            .collect::<Result<Vec<_>, OrcError>>()?;
        children.into_iter().for_each(|child| parts.append(child));
        Ok(())
    }

    fn file_stats(&self, out: &mut Vec<proto::ColumnStatistics>) {
        out.push(self.common.file_stats());
        self.children.iter().for_each(|c| c.file_stats(out));
    }
}

/// A struct: PRESENT only; each field a child.
pub(crate) struct Struct;

impl Struct {
    pub(crate) fn column(
        id: u32,
        settings: &Settings,
        children: Vec<Box<dyn ColumnWriter>>,
    ) -> Parent<Self> {
        Parent {
            common: Common::new(id, settings, StatsKind::Plain),
            shape: Self,
            children,
        }
    }
}

impl Shape for Struct {
    fn write(
        &mut self,
        common: &mut Common,
        children: &mut [Box<dyn ColumnWriter>],
        array: &dyn Array,
    ) -> Result<(), OrcError> {
        let array = array
            .as_struct_opt()
            .filter(|s| s.num_columns() == children.len())
            .ok_or_else(|| {
                mismatch(
                    common.id,
                    &format!("Struct of {} fields", children.len()),
                    array.data_type(),
                )
            })?;
        for i in 0..array.len() {
            if common.row(array.is_valid(i))? {
                common.group.plain();
            }
        }
        for run in valid_runs(array) {
            let write = |(child, column): (&mut Box<dyn ColumnWriter>, &ArrayRef)| {
                child.write(&column.slice(run.start, run.len()))
            };
            // The fields encode (and compress) on the encoders' threads at once: each writes
            // only its own streams, so the bytes are the same as one after the other.
            if run.len() >= PARALLEL_FROM_ROWS && children.len() > 1 {
                children
                    .par_iter_mut()
                    .zip(array.columns())
                    .try_for_each(write)?;
            } else {
                children
                    .iter_mut()
                    .zip(array.columns())
                    .try_for_each(write)?;
            }
        }
        Ok(())
    }

    streams!(Encoding::Direct; );
}

/// Lists and maps: a LENGTH stream of element counts, then the elements as child columns
/// (one for a list, key and value for a map).
pub(crate) struct Repeated {
    lengths: IntRleV2,
    map: bool,
}

impl Repeated {
    pub(crate) fn column(
        id: u32,
        settings: &Settings,
        children: Vec<Box<dyn ColumnWriter>>,
        map: bool,
    ) -> Result<Parent<Self>, OrcError> {
        let want = if map { 2 } else { 1 };
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
        Ok(Parent {
            common,
            shape: Self { lengths, map },
            children,
        })
    }

    /// `offsets` has one more entry than `validity` has rows; `elements` are the arrays the
    /// offsets index (the list's values, or the map's keys and values).
    fn write_rows(
        &mut self,
        common: &mut Common,
        children: &mut [Box<dyn ColumnWriter>],
        validity: &dyn Array,
        offsets: &[usize],
        elements: &[&ArrayRef],
    ) -> Result<(), OrcError> {
        for i in 0..validity.len() {
            if common.row(validity.is_valid(i))? {
                let n = offsets[i + 1] - offsets[i];
                common.group.collection(n as u64);
                self.lengths.write(n as i64)?;
            }
        }
        for run in valid_runs(validity) {
            let (from, to) = (offsets[run.start], offsets[run.end]);
            for (child, values) in children.iter_mut().zip(elements) {
                child.write(&values.slice(from, to - from))?;
            }
        }
        Ok(())
    }
}

/// Arrow offsets (never negative in a valid array) as indexes.
fn usize_offsets<O: Copy + Into<i64>>(offsets: &[O]) -> Vec<usize> {
    offsets.iter().map(|o| (*o).into() as usize).collect()
}

impl Shape for Repeated {
    fn write(
        &mut self,
        common: &mut Common,
        children: &mut [Box<dyn ColumnWriter>],
        array: &dyn Array,
    ) -> Result<(), OrcError> {
        if self.map {
            let map = array
                .as_map_opt()
                .ok_or_else(|| mismatch(common.id, "Map", array.data_type()))?;
            let offsets = usize_offsets(map.offsets());
            return self.write_rows(common, children, map, &offsets, &[map.keys(), map.values()]);
        }
        if let Some(list) = array.as_list_opt::<i32>() {
            let offsets = usize_offsets(list.offsets());
            return self.write_rows(common, children, list, &offsets, &[list.values()]);
        }
        if let Some(list) = array.as_list_opt::<i64>() {
            let offsets = usize_offsets(list.offsets());
            return self.write_rows(common, children, list, &offsets, &[list.values()]);
        }
        Err(mismatch(common.id, "List", array.data_type()))
    }

    streams!(Encoding::DirectV2; Length => lengths);
}

/// A union: its tags (the variant of each non-null row) in a byte-RLE DATA stream, and each
/// variant a child column holding the values of its rows.
///
/// Arrow unions have no null bitmap: the null rows are those of the variant marked
/// [`NULL_UNION_ROW`], as the decoder hands them over. A row of another variant is not null,
/// whether its value is or not.
pub(crate) struct Union {
    tags: ByteRle,
}

impl Union {
    pub(crate) fn column(
        id: u32,
        settings: &Settings,
        children: Vec<Box<dyn ColumnWriter>>,
    ) -> Parent<Self> {
        let common = Common::new(id, settings, StatsKind::Plain);
        let tags = ByteRle::new(common.stream());
        Parent {
            common,
            shape: Self { tags },
            children,
        }
    }
}

impl Shape for Union {
    fn write(
        &mut self,
        common: &mut Common,
        children: &mut [Box<dyn ColumnWriter>],
        array: &dyn Array,
    ) -> Result<(), OrcError> {
        let id = common.id;
        let union = array
            .as_union_opt()
            .ok_or_else(|| mismatch(id, "Union", array.data_type()))?;
        let DataType::Union(fields, _) = union.data_type() else {
            return Err(mismatch(id, "Union", array.data_type()));
        };
        let null_id = fields
            .iter()
            .find(|(_, f)| f.metadata().contains_key(NULL_UNION_ROW))
            .map(|(t, _)| t);
        let type_ids: Vec<i8> = fields
            .iter()
            .map(|(t, _)| t)
            .filter(|t| Some(*t) != null_id)
            .collect();
        if type_ids.len() != children.len() {
            return Err(mismatch(
                id,
                &format!("Union of {} variants", children.len()),
                array.data_type(),
            ));
        }
        let mut picks: Vec<Vec<u32>> = vec![Vec::new(); type_ids.len()];
        for i in 0..union.len() {
            let type_id = union.type_id(i);
            let valid = Some(type_id) != null_id;
            if common.row(valid)? {
                let tag = type_ids.iter().position(|t| *t == type_id).ok_or_else(|| {
                    OrcError::Unsupported(format!("column {id}: unknown union type id {type_id}"))
                })?;
                common.group.plain();
                self.tags.write(tag as u8)?;
                picks[tag].push(union.value_offset(i) as u32);
            }
        }
        for ((child, type_id), rows) in children.iter_mut().zip(&type_ids).zip(picks) {
            let values =
                arrow::compute::take(union.child(*type_id), &UInt32Array::from(rows), None)
                    .map_err(|e| OrcError::Unsupported(format!("column {id}: {e}")))?;
            child.write(&values)?;
        }
        Ok(())
    }

    streams!(Encoding::Direct; Data => tags);
}
