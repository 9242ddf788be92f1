//! Whole files copied and re-read byte for byte, for every operation that carries files over
//! unchanged (`compact`'s carried files, `cleanup --rehome`): the same read-ahead and
//! in-process check as the stripe copy, and one reading of what a failed copy means.

use std::sync::Arc;

use anyhow::anyhow;

use crate::hdfs::{Hdfs, Location};
use crate::operations::outcome::Stop;
use crate::orc::{self, copy_pieces, Discard, OrcError, Piece, ReadAhead};
use crate::snapshot::DataFile;

/// Copies a file byte for byte, with the same read-ahead and in-process check as the stripe
/// copy, returning the XXH3 of the bytes handed to the writer.
pub(crate) async fn copy_file(
    hdfs: &Hdfs,
    source: &DataFile,
    target: &Location,
    permission: u16,
    read_ahead: &ReadAhead,
) -> Result<u64, Stop> {
    let mut writer = hdfs.create(target, permission).await?;
    let hash = whole_file(
        |_| source.open(hdfs),
        source.length,
        &mut writer,
        read_ahead,
    )
    .await
    .map_err(|e| copy_stop(&format!("copying {} to {target}", source.location()), e))?;
    close(writer, target).await?;
    Ok(hash)
}

/// Length and XXH3 of a file as HDFS returns it now (`expected` is the length it should have).
pub(crate) async fn hash_file(
    hdfs: &Hdfs,
    file: &Location,
    expected: u64,
    read_ahead: &ReadAhead,
) -> Result<(u64, u64), Stop> {
    let reader = Arc::new(hdfs.open(file).await?);
    let len = reader.file_length() as u64;
    if len != expected {
        // Not worth reading: the caller reports the mismatch.
        return Ok((len, 0));
    }
    let hash = whole_file(
        |_| std::future::ready(Ok(Arc::clone(&reader))),
        len,
        &mut Discard,
        read_ahead,
    )
    .await
    .map_err(|e| copy_stop(&format!("re-reading {file}"), e))?;
    Ok((len, hash))
}

/// Reads all `length` bytes of one file, opened by `open`, into `sink` through
/// [`copy_pieces`]; returns their XXH3.
async fn whole_file<R, O, F, S>(
    open: O,
    length: u64,
    sink: &mut S,
    read_ahead: &ReadAhead,
) -> Result<u64, OrcError>
where
    R: orc::RangeRead + Send + 'static,
    O: Fn(usize) -> F,
    F: std::future::Future<Output = Result<R, OrcError>> + Send + 'static,
    S: orc::Sink,
{
    let piece = Piece {
        source: 0,
        range: 0..length,
    };
    let sums = copy_pieces(&[piece], &[length], open, sink, read_ahead).await?;
    Ok(sums[0])
}

/// Closes a new file: only then has HDFS acknowledged all of it.
pub(crate) async fn close(mut writer: crate::hdfs::Writer, target: &Location) -> Result<(), Stop> {
    // Test builds fail here (`compact::closing-output`) as a close HDFS refused would: the file
    // is left under construction, its writer dropped.
    fail::fail_point!("compact::closing-output", |_| Err(Stop::Failed(anyhow!(
        "closing {target}: injected failure at compact::closing-output"
    ))));
    writer
        .close()
        .await
        .map_err(|e| Stop::Failed(anyhow!("closing {target}: {e}")))
}

/// Why a copy or a re-read stopped: a file that changed under the run means a writer is active
/// (busy); bytes that changed between reader and writer fail verification; anything else fails.
pub(crate) fn copy_stop(what: &str, e: OrcError) -> Stop {
    match e {
        OrcError::Changed(_) => Stop::Busy(format!("{what}: {e}; a writer is active, retry later")),
        OrcError::Verify(_) => Stop::Verification(format!("{what}: {e}")),
        other => Stop::Failed(anyhow!("{what}: {other}")),
    }
}
