//! Reports as people and scripts read them: aligned text, or one JSON object per report. One
//! module per command; each renderer writes to any `io::Write` and is tested for both shapes.

mod analyze;
mod census_page;
mod cleanup;
mod compact;
mod format;
mod history;
mod iceberg;
mod inspect;
pub mod metrics_file;
mod rollback;
#[cfg(test)]
pub(crate) mod testing;
mod verify;

pub use analyze::{analyze, file_ratio_gate, Surveying};
pub use census_page::census_page;
pub use cleanup::cleanup;
pub use compact::{batch_summary, yarn_plan, Batch};
pub use format::{metastore_calls, Format};
pub use history::history;
pub use iceberg::{iceberg_check, iceberg_migrate, iceberg_revert};
pub use inspect::inspect;
pub use rollback::rollback;
pub use verify::verify;
