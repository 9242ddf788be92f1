//! How the metastore client proves who it is and protects what it sends: SASL's framing and
//! security layer (`sasl`), its two mechanisms, Kerberos through the system's GSSAPI library
//! (`gssapi`) and a delegation token through DIGEST-MD5 (`digest_md5`), and the tokens
//! themselves with the Hadoop credentials files that carry them (`token`).

pub(super) mod digest_md5;
pub(super) mod gssapi;
pub(super) mod sasl;
pub mod token;
