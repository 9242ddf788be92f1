//! How a run tells its progress, for the CLI's progress bar; the engine does not know how it
//! is shown.

/// Progress events: the bytes a run is to write, then each part written.
pub trait Progress: Send + Sync {
    fn planned(&self, _bytes_to_write: u64) {}
    fn written(&self, _bytes: u64) {}
}

/// No progress display.
pub struct Quiet;
impl Progress for Quiet {}
