//! How HDFS stores a directory's new files: replicated or erasure coded, learnt from the space a
//! probe file consumes.

use bytes::Bytes;
use serde::Serialize;

use super::client::{Hdfs, LOG_TARGET};
use super::error::FsError;
use super::location::Location;

/// How HDFS stores a file's bytes, as far as a client of hdfs-native 0.14 can tell: the crate
/// exposes no erasure coding policy (its `FileStatus` drops `ecPolicy`, and it has no
/// `getErasureCodingPolicy`), but a file's length, replication and the space it consumes
/// (`getContentSummary`) give it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Redundancy {
    /// `replication` copies of every block.
    Replicated,
    /// Erasure coded with `parity` parity units (for a file shorter than one cell, every parity
    /// unit holds as many bytes as the data).
    Striped { parity: u64 },
}

/// The redundancy of a file of `length` bytes (no longer than the smallest EC cell, 64 KiB, and
/// not empty) that consumes `consumed` bytes and reports `replication`. `None` when the numbers
/// fit neither.
pub fn redundancy_of(length: u64, replication: u64, consumed: u64) -> Option<Redundancy> {
    if length == 0 {
        return None;
    }
    if consumed == length * replication {
        return Some(Redundancy::Replicated);
    }
    // HDFS erasure coding policies have at most a few parity units (RS-10-4 has the most of the
    // built-in ones); anything far beyond is another story (such as a last block still counted
    // at its preferred size), not a redundancy.
    let extra = consumed.checked_sub(length)?;
    let parity = extra / length;
    (extra > 0 && extra % length == 0 && parity <= 32).then_some(Redundancy::Striped { parity })
}

impl Hdfs {
    /// The redundancy new files get in `dir`, learnt by writing a hidden probe of a few bytes there
    /// and asking how much space it consumes; the probe is removed.
    pub async fn new_file_redundancy(&self, dir: &Location) -> Result<Option<Redundancy>, FsError> {
        const PROBE: &[u8] = b"hive-orc-compactor erasure coding probe";
        let probe = dir.child(&format!(
            ".hive-orc-compactor-layout-{}",
            uuid::Uuid::new_v4().simple()
        ));
        let written = async {
            let mut writer = self.create(&probe, 0o600).await?;
            writer
                .write_bytes(Bytes::from_static(PROBE))
                .await
                .map_err(Self::io("writing", &probe))?;
            writer.close().await.map_err(Self::io("closing", &probe))?;
            let client = self.client(&probe)?;
            let status = client
                .get_file_info(&probe.path)
                .await
                .map_err(Self::io("reading the status of", &probe))?;
            let summary = client
                .get_content_summary(&probe.path)
                .await
                .map_err(Self::io("reading the content summary of", &probe))?;
            Ok::<_, FsError>((status, summary))
        }
        .await;
        let removed = self.delete(&probe, false).await;
        let (status, summary) = written?;
        removed?;
        tracing::debug!(
            target: LOG_TARGET, %dir,
            length = status.length,
            replication = ?status.replication,
            consumed = summary.space_consumed,
            "layout probe"
        );
        Ok(redundancy_of(
            status.length as u64,
            u64::from(status.replication.unwrap_or(0)),
            summary.space_consumed,
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redundancy_from_space_consumed() {
        // Replicated three times; once.
        assert_eq!(redundancy_of(40, 3, 120), Some(Redundancy::Replicated));
        assert_eq!(redundancy_of(40, 1, 40), Some(Redundancy::Replicated));
        // RS-6-3, RS-3-2, RS-10-4 and XOR-2-1 (striped files report replication 1).
        assert_eq!(
            redundancy_of(40, 1, 160),
            Some(Redundancy::Striped { parity: 3 })
        );
        assert_eq!(
            redundancy_of(40, 1, 120),
            Some(Redundancy::Striped { parity: 2 })
        );
        assert_eq!(
            redundancy_of(40, 1, 200),
            Some(Redundancy::Striped { parity: 4 })
        );
        assert_eq!(
            redundancy_of(40, 1, 80),
            Some(Redundancy::Striped { parity: 1 })
        );
        // Numbers that fit nothing.
        assert_eq!(redundancy_of(40, 1, 30), None);
        assert_eq!(redundancy_of(40, 1, 90), None);
        assert_eq!(redundancy_of(0, 1, 0), None);
        assert_eq!(
            redundancy_of(1, 1, 128 << 20),
            None,
            "a block counted at its preferred size"
        );
    }
}
