//! The clustering re-encode: the orders rows can be put in and each row's key under one
//! ([`order`]), an external sort of decoded rows by those keys in bounded memory
//! ([`external`]), and the run that decodes a merge group, sorts it and writes it as
//! consecutive outputs ([`cluster`]).
//!
//! The top room: may use `reencode/`, `verify/`, `statistics/`, `tail/`, `encoding/` and `io/`.

pub(super) mod cluster;
pub(super) mod external;
pub(super) mod order;
