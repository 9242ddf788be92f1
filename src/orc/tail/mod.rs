//! An ORC file's tail (PostScript, Footer, Metadata) read from its end with bounded reads and
//! checked before anything in it is trusted ([`read`]), and what the engine holds of it: the
//! stripes, the Footer shared among files and the statistics read beside them ([`orc_tail`]).
//!
//! May use `encoding/` (the codec framing) and `io/`; every room above uses it.

pub(super) mod orc_tail;
pub(super) mod read;
