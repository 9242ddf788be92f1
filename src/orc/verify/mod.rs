//! Proving an output holds its inputs: a stripe-copied output checked against its plan from
//! bytes read back ([`stripes`]), and the order-sensitive hashes of every decoded value that
//! prove a re-encoded one ([`value_hash`]; its types are the "digests" of `--json` and the
//! journal, not the metastore's DIGEST-MD5 login).
//!
//! May use `merge/` (the plan and what the merge wrote), `tail/`, `encoding/` and `io/`.

pub(super) mod stripes;
pub(super) mod value_hash;
