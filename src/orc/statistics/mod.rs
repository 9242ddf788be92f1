//! Column statistics as the engine reasons about them: merged over files so they only widen
//! or disappear ([`fold`], with exact decimals in [`decimal`]), held against what decoded
//! values give ([`check`]), and read as ranges to measure how clustered rows are ([`ranges`]).
//!
//! May use `tail/` (a file's type tree and stripe statistics), `encoding/` and `io/`; never a
//! room that writes.

pub(super) mod check;
mod decimal;
pub(super) mod fold;
pub(super) mod ranges;
