//! The inputs of a re-encode: opened a few ahead of the decoding, each with its decoder and
//! the statistics its writer recorded, and their batches as handed on (where test builds can
//! misread or reorder them, for the verification to catch).

use std::future::Future;

use arrow::record_batch::RecordBatch;
use orc_rust::proto::ColumnStatistics;

use crate::orc::error::OrcError;
use crate::orc::io::copy::{open_ahead, Opens, ReadAhead};
use crate::orc::io::storage::{Prefetched, RangeRead};
use crate::orc::reencode::decode::Decoder;
use crate::orc::tail::orc_tail::OrcTail;
use crate::orc::tail::read::read_statistics_again;

/// One input as the re-encode takes it: its decoder, and the file statistics its writer
/// recorded.
pub(crate) struct Input<R: RangeRead + Send + 'static> {
    pub decoder: Decoder<Prefetched<R>>,
    pub recorded: Vec<ColumnStatistics>,
}

/// Opens the inputs `tails` a few ahead of the decoding (see [`ReadAhead`]), each with its
/// decoder and recorded statistics; the future drives the opening and must be polled beside
/// the queue's reader.
pub(crate) fn open_inputs<'a, R, O, F>(
    tails: &'a [&'a OrcTail],
    open: O,
    read_ahead: &ReadAhead,
) -> (impl Future<Output = ()> + 'a, Opens<usize, Input<R>>)
where
    R: RangeRead + Send + 'static,
    O: Fn(usize) -> F + 'a,
    F: Future<Output = Result<R, OrcError>> + Send + 'static,
{
    let ahead = read_ahead.opens_in_flight.max(1);
    let prefetch = read_ahead.bytes_in_flight / ahead as u64;
    // A decoder taken out of the queue no longer counts: `ahead` are opened beside it.
    open_ahead(0..tails.len(), ahead, move |&i| {
        let file = open(i);
        let tail = tails[i].clone();
        // The first input's first stripe is always read: its footer names the bloom filter
        // columns.
        let prefetch = if i == 0 { u64::MAX } else { prefetch };
        async move {
            // The file's end is read once, for its recorded statistics and for the decoder's
            // own tail read.
            let file = Prefetched::open(file.await?).await?;
            let recorded = read_statistics_again(&file, &tail, false).await?;
            let decoder = Decoder::open(file, &tail, prefetch).await?;
            Ok(Input {
                decoder,
                recorded: recorded.file,
            })
        }
    })
}

/// The next input, out of the open-ahead queue.
pub(crate) async fn next_input<R: RangeRead + Send + 'static>(
    opens: &mut Opens<usize, Input<R>>,
) -> Result<Input<R>, OrcError> {
    let next = opens.next().await;
    let (_, opened) = next.ok_or_else(|| OrcError::Plan("an output without inputs".into()))??;
    Ok(opened.into_inner())
}

/// A decoded input batch; with the `compact::rewrite-misread` failpoint, every row read as the
/// batch's first: a decoder bug that reads the inputs wrong the same way on every read, which
/// the digests cannot see and only the inputs' recorded statistics can.
pub(crate) fn as_decoded(batch: RecordBatch) -> Result<RecordBatch, OrcError> {
    #[cfg(feature = "failpoints")]
    fail::fail_point!("compact::rewrite-misread", |_| {
        let first = arrow::array::UInt32Array::from(vec![0; batch.num_rows()]);
        take_rows(&batch, &first)
    });
    Ok(batch)
}

/// The batch as the writer gets it. Test builds can have its rows reversed
/// (`FAILPOINTS=compact::rewrite-reorder=return`): the same values in another order, which
/// only the order-sensitive digests catch.
pub(crate) fn as_written(batch: RecordBatch) -> Result<RecordBatch, OrcError> {
    #[cfg(feature = "failpoints")]
    fail::fail_point!("compact::rewrite-reorder", |_| reversed(&batch));
    Ok(batch)
}

#[cfg(feature = "failpoints")]
fn reversed(batch: &RecordBatch) -> Result<RecordBatch, OrcError> {
    let n = batch.num_rows() as u32;
    take_rows(
        batch,
        &arrow::array::UInt32Array::from_iter_values((0..n).rev()),
    )
}

#[cfg(feature = "failpoints")]
fn take_rows(
    batch: &RecordBatch,
    indices: &arrow::array::UInt32Array,
) -> Result<RecordBatch, OrcError> {
    let columns = batch
        .columns()
        .iter()
        .map(|c| arrow::compute::take(c.as_ref(), indices, None))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| OrcError::Decode(e.to_string()))?;
    RecordBatch::try_new(batch.schema(), columns).map_err(|e| OrcError::Decode(e.to_string()))
}
