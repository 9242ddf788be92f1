//! The re-encode, the other way to make an output: the inputs opened ahead ([`inputs`]), their
//! rows decoded ([`decode`]) and written anew by the ORC writer ([`write`]) with an
//! order-sensitive hash of every column taken on the way ([`output`]) and again from the output
//! read back ([`read_back`]), in one codec and block size chosen for inputs that differ
//! ([`shape`]).
//!
//! May use `verify/` (the value hashes), `statistics/`, `tail/`, `encoding/` and `io/`.

pub(super) mod decode;
pub(super) mod inputs;
pub(super) mod output;
pub(super) mod read_back;
pub(super) mod shape;
pub(super) mod write;
