//! How bytes come in and go out: random-access reads of one file ([`storage::RangeRead`]),
//! a sequential sink ([`storage::Sink`]), and the one copy loop that moves byte ranges of many
//! files to a sink with bounded read-ahead, checking each chunk on the way ([`copy`]).
//!
//! Knows nothing of ORC: it uses only `orc/error.rs`, and every room above may use it.

pub(super) mod copy;
pub(super) mod storage;
