//! The stripe-level merge: which files may share an output ([`key`]), which files go into
//! which output and where each stripe lands ([`plan`]), and the writer that copies the stripes
//! byte for byte and writes a new tail after them ([`writer`]).
//!
//! May use `statistics/`, `tail/`, `encoding/` and `io/`.

pub(super) mod key;
pub(super) mod plan;
pub(super) mod writer;
