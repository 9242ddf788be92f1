use thiserror::Error;

/// Everything that can go wrong reading, merging or verifying ORC files.
///
/// The variants separate "this file is not what we think" (the caller refuses or skips the file)
/// from I/O trouble (the caller may retry) and from verification failures (the caller must not
/// publish, and should alert a human).
#[derive(Debug, Error)]
pub enum OrcError {
    #[error("I/O error: {0}")]
    Io(#[from] std::io::Error),
    /// The file does not carry ORC's magic bytes: it is some other format.
    #[error("not an ORC file: {0}")]
    NotOrc(String),
    /// The file is shorter than its own tail says it is (an unfinished write, a cut copy).
    #[error("truncated ORC file: {0}")]
    Truncated(String),
    /// Lengths, offsets or protobuf messages in the tail do not make sense.
    #[error("corrupt ORC file: {0}")]
    Corrupt(String),
    /// A valid ORC file using something this engine deliberately does not handle.
    #[error("unsupported ORC file: {0}")]
    Unsupported(String),
    /// LZO has no maintained Rust implementation; rather than guess, such files are refused.
    #[error("unsupported compression codec: {0}")]
    UnsupportedCodec(String),
    /// The inputs handed to the merge writer cannot share one output.
    #[error("incompatible inputs: {0}")]
    Incompatible(String),
    /// The plan does not match the inputs' tails (a programming error or a changed file).
    #[error("invalid merge plan: {0}")]
    Plan(String),
    /// A file is not the one planned any more (another length): a writer changed it.
    #[error("changed during the run: {0}")]
    Changed(String),
    /// Values orc-rust cannot decode (or our writer cannot write back) exactly: the rows must
    /// not be re-encoded; a stripe copy keeps them as they are.
    #[error("cannot re-encode the rows: {0}")]
    Decode(String),
    #[error("verification failed: {0}")]
    Verify(#[from] VerifyFailure),
}

/// Why a written output does not match its plan. Any of these means the output must not be
/// published: the compaction protocol's "verification failed" exit.
#[derive(Debug, Error, PartialEq, Eq)]
pub enum VerifyFailure {
    #[error("output length is {found} bytes, expected {expected}")]
    Length { expected: u64, found: u64 },
    #[error("output holds {found} rows, expected {expected}")]
    Rows { expected: u64, found: u64 },
    #[error("output has {found} stripes, expected {expected}")]
    StripeCount { expected: usize, found: usize },
    #[error("stripe {stripe}: {what} is {found}, expected {expected}")]
    StripeLayout {
        stripe: usize,
        what: &'static str,
        expected: u64,
        found: u64,
    },
    #[error("stripes do not cover the file exactly: {0}")]
    Coverage(String),
    #[error(
        "stripe {stripe}: checksum {found:016x} of the bytes read back, expected {expected:016x}"
    )]
    Checksum {
        stripe: usize,
        expected: u64,
        found: u64,
    },
    #[error("checksum list does not match the plan: {0}")]
    Checksums(String),
    /// The bytes handed to the writer are not the bytes read (checked in process, chunk by
    /// chunk, while copying).
    #[error("bytes handed to the writer differ from the bytes read: {0}")]
    Handoff(String),
    /// A re-encoded output's values, read back, are not its inputs' values in their order.
    #[error(
        "column {column}: digest {found:016x} of the values read back, expected {expected:016x} \
         (the inputs' values in order)"
    )]
    Digest {
        column: String,
        expected: u64,
        found: u64,
    },
    /// A re-encoded output's timestamps, read back, are stored in other writer time zones than
    /// its inputs' were: the same numbers would read as other wall clocks.
    #[error("the rows' writer time zones read back as {found}, expected {expected}")]
    Zones { expected: String, found: String },
}

pub(crate) fn corrupt(msg: impl Into<String>) -> OrcError {
    OrcError::Corrupt(msg.into())
}
