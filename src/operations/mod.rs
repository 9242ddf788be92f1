//! One module per user-facing operation. Each states what it does and what it promises, does
//! its I/O through the engine's `metastore` and `hdfs` modules, and returns a report struct that
//! the CLI prints as text or `--json`.

pub mod analyze;
pub mod autopilot;
pub mod batch;
pub mod cleanup;
pub mod compact;
pub mod file_copy;
pub mod history;
pub mod iceberg;
pub mod inspect;
pub mod on_yarn;
pub mod outcome;
pub mod rollback;
pub mod token_lifetime;
pub mod verify;
