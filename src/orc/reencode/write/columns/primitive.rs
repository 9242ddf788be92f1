//! Columns of single values: boolean, tinyint, smallint/int/bigint, date, float/double,
//! decimal and both timestamp kinds.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use arrow::array::{Array, ArrowPrimitiveType, AsArray};
use arrow::datatypes::{
    DataType, Date32Type, Decimal128Type, Float32Type, Float64Type, Int16Type, Int32Type,
    Int64Type, Int8Type, TimeUnit, TimestampMicrosecondType, TimestampMillisecondType,
    TimestampNanosecondType, TimestampSecondType,
};
use orc_rust::proto::{column_encoding::Kind as Encoding, r#type::Kind as TypeKind};

use super::super::settings::Settings;
use super::super::statistics::Kind as StatsKind;
use super::{mismatch, Common, Leaf, StripeParts, Values};
use crate::orc::encoding::byte_rle::{BoolRle, ByteRle};
use crate::orc::encoding::out_stream::OutStream;
use crate::orc::encoding::rle_v2::{write_varint, IntRleV2};
use crate::orc::encoding::timestamp::{encode_nanos, ORC_EPOCH};
use crate::orc::error::OrcError;

/// Calls `f` with each non-null value of a primitive array, writing PRESENT as it goes.
fn each<T: ArrowPrimitiveType>(
    common: &mut Common,
    array: &dyn Array,
    expected: &str,
    mut f: impl FnMut(&mut Common, T::Native) -> Result<(), OrcError>,
) -> Result<(), OrcError> {
    let values = array
        .as_primitive_opt::<T>()
        .ok_or_else(|| mismatch(common.id, expected, array.data_type()))?;
    for i in 0..values.len() {
        if common.row(values.is_valid(i))? {
            f(common, values.value(i))?;
        }
    }
    Ok(())
}

fn integer_stats() -> StatsKind {
    StatsKind::Integer {
        range: None,
        sum: Some(0),
    }
}

/// A boolean column: bits over byte RLE.
pub(crate) struct Booleans(BoolRle);

impl Booleans {
    pub(crate) fn column(id: u32, settings: &Settings) -> Leaf<Self> {
        let common = Common::new(id, settings, StatsKind::Boolean { trues: 0 });
        let data = BoolRle::new(common.stream());
        Leaf::new(common, Self(data))
    }
}

impl Values for Booleans {
    fn write(&mut self, common: &mut Common, array: &dyn Array) -> Result<(), OrcError> {
        let values = array
            .as_boolean_opt()
            .ok_or_else(|| mismatch(common.id, "Boolean", array.data_type()))?;
        for i in 0..values.len() {
            if common.row(values.is_valid(i))? {
                let v = values.value(i);
                common.group.boolean(v);
                self.0.write(v)?;
            }
        }
        Ok(())
    }

    streams!(Encoding::Direct; Data => 0);
}

/// A tinyint column: byte RLE.
pub(crate) struct Bytes(ByteRle);

impl Bytes {
    pub(crate) fn column(id: u32, settings: &Settings) -> Leaf<Self> {
        let common = Common::new(id, settings, integer_stats());
        let data = ByteRle::new(common.stream());
        Leaf::new(common, Self(data))
    }
}

impl Values for Bytes {
    fn write(&mut self, common: &mut Common, array: &dyn Array) -> Result<(), OrcError> {
        each::<Int8Type>(common, array, "Int8", |c, v| {
            c.group.integer(i64::from(v));
            if let Some(b) = c.bloom() {
                b.add_long(i64::from(v));
            }
            self.0.write(v as u8)
        })
    }

    streams!(Encoding::Direct; Data => 0);
}

/// smallint, int, bigint and date: one signed RLEv2 DATA stream (a date is days since 1970).
pub(crate) struct Integers {
    data: IntRleV2,
    kind: TypeKind,
}

impl Integers {
    pub(crate) fn column(id: u32, settings: &Settings, kind: TypeKind) -> Leaf<Self> {
        let stats = if kind == TypeKind::Date {
            StatsKind::Date { range: None }
        } else {
            integer_stats()
        };
        let common = Common::new(id, settings, stats);
        let data = IntRleV2::new(common.stream(), true);
        Leaf::new(common, Self { data, kind })
    }
}

fn integer(common: &mut Common, data: &mut IntRleV2, v: i64) -> Result<(), OrcError> {
    common.group.integer(v);
    if let Some(b) = common.bloom() {
        b.add_long(v);
    }
    data.write(v)
}

impl Values for Integers {
    fn write(&mut self, common: &mut Common, array: &dyn Array) -> Result<(), OrcError> {
        let data = &mut self.data;
        match self.kind {
            TypeKind::Short => each::<Int16Type>(common, array, "Int16", |c, v| {
                integer(c, data, i64::from(v))
            }),
            TypeKind::Int => each::<Int32Type>(common, array, "Int32", |c, v| {
                integer(c, data, i64::from(v))
            }),
            TypeKind::Date => each::<Date32Type>(common, array, "Date32", |c, v| {
                c.group.date(v);
                if let Some(b) = c.bloom() {
                    b.add_long(i64::from(v));
                }
                data.write(i64::from(v))
            }),
            _ => each::<Int64Type>(common, array, "Int64", |c, v| integer(c, data, v)),
        }
    }

    streams!(Encoding::DirectV2; Data => data);
}

/// float and double: IEEE 754 little-endian, no encoding.
pub(crate) struct Floats {
    data: OutStream,
    kind: TypeKind,
}

impl Floats {
    pub(crate) fn column(id: u32, settings: &Settings, kind: TypeKind) -> Leaf<Self> {
        let common = Common::new(
            id,
            settings,
            StatsKind::Double {
                range: None,
                sum: 0.0,
                nan: false,
            },
        );
        let data = common.stream();
        Leaf::new(common, Self { data, kind })
    }
}

fn double(common: &mut Common, v: f64) {
    common.group.double(v);
    if let Some(b) = common.bloom() {
        b.add_double(v);
    }
}

impl Values for Floats {
    fn write(&mut self, common: &mut Common, array: &dyn Array) -> Result<(), OrcError> {
        let data = &mut self.data;
        if self.kind == TypeKind::Float {
            each::<Float32Type>(common, array, "Float32", |c, v| {
                double(c, f64::from(v));
                data.write(&v.to_le_bytes())
            })
        } else {
            each::<Float64Type>(common, array, "Float64", |c, v| {
                double(c, v);
                data.write(&v.to_le_bytes())
            })
        }
    }

    streams!(Encoding::Direct; Data => data);
}

/// decimal(p,s), 64- and 128-bit alike in ORC v1: the unscaled value as a zigzag base-128
/// varint in DATA, the scale in a signed RLEv2 SECONDARY stream.
pub(crate) struct Decimals {
    data: OutStream,
    scales: IntRleV2,
    scale: u32,
}

impl Decimals {
    pub(crate) fn column(id: u32, settings: &Settings, scale: u32) -> Leaf<Self> {
        let common = Common::new(
            id,
            settings,
            StatsKind::Decimal {
                range: None,
                sum: Some(0),
                scale,
            },
        );
        let data = common.stream();
        let scales = IntRleV2::new(common.stream(), true);
        Leaf::new(
            common,
            Self {
                data,
                scales,
                scale,
            },
        )
    }
}

impl Values for Decimals {
    fn write(&mut self, common: &mut Common, array: &dyn Array) -> Result<(), OrcError> {
        match array.data_type() {
            DataType::Decimal128(_, s) if i64::from(*s) == i64::from(self.scale) => {}
            other => {
                return Err(mismatch(
                    common.id,
                    "Decimal128 of the column's scale",
                    other,
                ))
            }
        }
        let (data, scales, scale) = (&mut self.data, &mut self.scales, self.scale);
        let mut bytes = Vec::with_capacity(19);
        each::<Decimal128Type>(common, array, "Decimal128", |c, v| {
            c.group.decimal(v);
            bytes.clear();
            let zigzag = ((v << 1) ^ (v >> 127)) as u128;
            write_varint_u128(zigzag, &mut bytes);
            data.write(&bytes)?;
            scales.write(i64::from(scale))
        })
    }

    streams!(Encoding::DirectV2; Data => data, Secondary => scales);
}

fn write_varint_u128(mut v: u128, out: &mut Vec<u8>) {
    if let Ok(small) = u64::try_from(v) {
        return write_varint(small, out);
    }
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// timestamp and timestamp with local time zone: seconds from the ORC epoch in DATA (signed),
/// nanoseconds with their trailing zeros folded into the low three bits in SECONDARY.
pub(crate) struct Timestamps {
    seconds: IntRleV2,
    nanos: IntRleV2,
    /// For a plain timestamp, whether the stripe's zone makes the stored seconds the wall
    /// clock (`Settings::wall_clock_known`); `None` for `timestamp with local time zone`,
    /// always stored in UTC.
    wall_clock_known: Option<Arc<AtomicBool>>,
}

impl Timestamps {
    /// A `timestamp` column when `plain`, else a `timestamp with local time zone` one.
    pub(crate) fn column(id: u32, settings: &Settings, plain: bool) -> Leaf<Self> {
        let range = None;
        let common = Common::new(
            id,
            settings,
            StatsKind::Timestamp {
                range,
                bounded: true,
            },
        );
        let seconds = IntRleV2::new(common.stream(), true);
        let nanos = IntRleV2::new(common.stream(), false);
        let wall_clock_known = plain.then(|| Arc::clone(&settings.wall_clock_known));
        Leaf::new(
            common,
            Self {
                seconds,
                nanos,
                wall_clock_known,
            },
        )
    }

    fn bounded(&self) -> bool {
        self.wall_clock_known
            .as_ref()
            .is_none_or(|known| known.load(Ordering::Relaxed))
    }

    /// Writes every value of a timestamp array of unit `T` (`per_second` units a second).
    fn write_unit<T: ArrowPrimitiveType<Native = i64>>(
        &mut self,
        common: &mut Common,
        array: &dyn Array,
        per_second: i64,
    ) -> Result<(), OrcError> {
        let bounded = self.bounded();
        let (seconds, nanos) = (&mut self.seconds, &mut self.nanos);
        each::<T>(common, array, "Timestamp", |c, v| {
            let second = v.div_euclid(per_second);
            let nano = v.rem_euclid(per_second) * (1_000_000_000 / per_second);
            timestamp(c, seconds, nanos, second, nano, bounded)
        })
    }
}

fn unrepresentable(id: u32, seconds: i64, nanos: i64) -> OrcError {
    OrcError::Unsupported(format!(
        "column {id}: timestamp {seconds}.{nanos:09} s from 1970 cannot be stored in ORC"
    ))
}

fn timestamp(
    common: &mut Common,
    seconds_stream: &mut IntRleV2,
    nanos_stream: &mut IntRleV2,
    seconds: i64,
    nanos: i64,
    bounded: bool,
) -> Result<(), OrcError> {
    let millis = seconds
        .checked_mul(1000)
        .ok_or_else(|| unrepresentable(common.id, seconds, nanos))?
        + nanos / 1_000_000;
    if bounded {
        common.group.timestamp(millis, (nanos % 1_000_000) as i32);
    } else {
        common.group.timestamp_unbounded();
    }
    // Readers take a negative second with a fraction of at least a millisecond to be stored
    // truncated toward zero (the reference writers' layout, see ORC-763), so the second just
    // before 1970 cannot carry such a fraction: refused rather than misread.
    let stored = if seconds < 0 && nanos > 999_999 {
        if seconds == -1 {
            return Err(unrepresentable(common.id, seconds, nanos));
        }
        seconds + 1
    } else {
        seconds
    };
    let stored = stored
        .checked_sub(ORC_EPOCH)
        .ok_or_else(|| unrepresentable(common.id, seconds, nanos))?;
    seconds_stream.write(stored)?;
    nanos_stream.write(encode_nanos(nanos))
}

impl Values for Timestamps {
    fn write(&mut self, common: &mut Common, array: &dyn Array) -> Result<(), OrcError> {
        match array.data_type() {
            DataType::Timestamp(TimeUnit::Second, _) => {
                self.write_unit::<TimestampSecondType>(common, array, 1)
            }
            DataType::Timestamp(TimeUnit::Millisecond, _) => {
                self.write_unit::<TimestampMillisecondType>(common, array, 1_000)
            }
            DataType::Timestamp(TimeUnit::Microsecond, _) => {
                self.write_unit::<TimestampMicrosecondType>(common, array, 1_000_000)
            }
            DataType::Timestamp(TimeUnit::Nanosecond, _) => {
                self.write_unit::<TimestampNanosecondType>(common, array, 1_000_000_000)
            }
            // How the decoder hands over timestamps (marks::TIMESTAMP_NANOS): nanoseconds
            // since 1970 as a decimal, over every year ORC can hold.
            DataType::Decimal128(38, 9) => {
                let bounded = self.bounded();
                let (seconds, nanos) = (&mut self.seconds, &mut self.nanos);
                each::<Decimal128Type>(common, array, "Timestamp", |c, v| {
                    let nano = v.rem_euclid(1_000_000_000) as i64;
                    let second = i64::try_from(v.div_euclid(1_000_000_000))
                        .map_err(|_| unrepresentable(c.id, i64::MAX, nano))?;
                    timestamp(c, seconds, nanos, second, nano, bounded)
                })
            }
            other => Err(mismatch(common.id, "Timestamp", other)),
        }
    }

    streams!(Encoding::DirectV2; Data => seconds, Secondary => nanos);
}
