//! How the decoder marks, in the arrow batches it hands the writer and the digests, what arrow
//! alone cannot say: field metadata keys, the contract between `decode`, `write` and `digest`.

/// Field metadata that marks the variant the decoder adds to a union (of type `Null`): the
/// rows of that variant are null union rows (see `decode`'s module docs).
pub(crate) const NULL_UNION_ROW: &str = "hive-orc-compactor.null-union-row";

/// Field metadata that marks a column of ORC timestamps decoded as `Decimal128(38, 9)`: the
/// nanoseconds since 1970-01-01 00:00:00 (of the wall clock for a plain timestamp, in UTC for
/// `timestamp with local time zone`). Arrow's `Timestamp(ns)` holds only the years 1677 to 2262;
/// ORC holds 0001 to 9999 and beyond (Hive's SCD2 tables end rows at 9999-12-31).
pub(crate) const TIMESTAMP_NANOS: &str = "hive-orc-compactor.timestamp-nanos";

/// The user metadata item in which a re-encoded output records the layout it was asked for
/// (rows in an order, a codec; see `operations::compact::Layout::marker`). It is ours: never
/// merged into another output's metadata, nor a reason to keep files apart.
pub(crate) const LAYOUT: &str = "hive-orc-compactor.layout";
