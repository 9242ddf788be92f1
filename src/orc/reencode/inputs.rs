//! The inputs of a re-encode: opened a few ahead of the decoding, each with its decoder and
//! the statistics its writer recorded, then decoded a few at once, each in a task of its own
//! ([`decode_ahead`]; with the rows' sort keys when clustering), and their batches as handed
//! on (where test builds can misread or reorder them, for the verification to catch).

use std::future::Future;
use std::sync::Arc;

use arrow::array::BinaryArray;
use arrow::datatypes::SchemaRef;
use arrow::record_batch::RecordBatch;
use orc_rust::proto::ColumnStatistics;
use tokio::sync::mpsc;

use crate::orc::encoding::timestamp::Zone;
use crate::orc::error::OrcError;
use crate::orc::io::copy::{open_ahead, Opens, ReadAhead, Task};
use crate::orc::io::storage::{Prefetched, RangeRead};
use crate::orc::reencode::decode::Decoder;
use crate::orc::statistics::check::without_timestamp_bounds;
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
fn open_inputs<'a, R, O, F>(
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
async fn next_input<R: RangeRead + Send + 'static>(
    opens: &mut Opens<usize, Input<R>>,
) -> Result<Input<R>, OrcError> {
    let next = opens.next().await;
    let (_, opened) = next.ok_or_else(|| OrcError::Plan("an output without inputs".into()))??;
    Ok(opened.into_inner())
}

/// Decoded batches queued per input between its decoding task and the reader: enough that
/// neither waits on the other's every batch, few enough that memory holds only a handful.
const DECODED_AHEAD: usize = 4;

/// The sort keys of a batch whose first row is at the given place in the inputs, made in the
/// batch's decoding task, so that keys are made on as many threads as inputs are decoded.
pub(crate) type Keys =
    Arc<dyn Fn(&RecordBatch, u64) -> Result<BinaryArray, OrcError> + Send + Sync>;

/// A decoded batch, the writer time zone of its stripe, and its sort keys (with [`Keys`]).
pub(crate) type Batch = (RecordBatch, Option<Zone>, Option<BinaryArray>);

/// Every input of `tails` opened (as [`open_inputs`]) and decoded, `ahead` inputs beyond the
/// one being read at once, each in a task of its own: on a multi-threaded runtime they take a
/// thread each, while the reader takes them in order, so the rows come in input order
/// whatever `ahead` is. The future drives the opening and must be polled beside the queue.
pub(crate) fn decode_ahead<'a, R, O, F>(
    tails: &'a [&'a OrcTail],
    open: O,
    read_ahead: &ReadAhead,
    ahead: usize,
    keys: Option<Keys>,
) -> (
    impl Future<Output = ()> + 'a,
    mpsc::Receiver<Result<Decoding, OrcError>>,
)
where
    R: RangeRead + Send + 'static,
    O: Fn(usize) -> F + 'a,
    F: Future<Output = Result<R, OrcError>> + Send + 'static,
{
    let (opener, mut opens) = open_inputs(tails, open, read_ahead);
    let (started, decodings) = mpsc::channel(ahead.max(1));
    let driver = async move {
        let start = async move {
            let mut first = 0;
            for tail in tails {
                let decoding = next_input(&mut opens)
                    .await
                    .map(|input| Decoding::start(input, keys.clone(), first));
                first += tail.rows;
                let failed = decoding.is_err();
                if started.send(decoding).await.is_err() || failed {
                    break;
                }
            }
        };
        tokio::join!(opener, start);
    };
    (driver, decodings)
}

/// One input being decoded in a task of its own, its batches queued for the reader.
pub(crate) struct Decoding {
    pub schema: SchemaRef,
    /// The columns with bloom filters in the input's first stripe, when it was read.
    pub bloom_columns: Option<Vec<u32>>,
    batches: mpsc::Receiver<Batch>,
    task: Task<Result<Decoded, OrcError>>,
}

/// What an input's decoding found once it ended.
struct Decoded {
    rows: u64,
    /// The file statistics its writer recorded, less the timestamp bounds of columns the
    /// decoder healed (which the file's values no longer meet).
    recorded: Vec<ColumnStatistics>,
}

impl Decoding {
    /// Starts decoding `input`, whose first row is at `first` in the inputs.
    fn start<R: RangeRead + Send + 'static>(
        mut input: Input<R>,
        keys: Option<Keys>,
        first: u64,
    ) -> Self {
        let (queue, batches) = mpsc::channel(DECODED_AHEAD);
        let schema = input.decoder.schema();
        let bloom_columns = input.decoder.bloom_columns.clone();
        let task = Task::spawn(async move {
            let mut rows = 0;
            while let Some(batch) = input.decoder.next().await? {
                let batch = as_decoded(batch)?;
                let batch_keys = keys.as_ref().map(|k| k(&batch, first + rows)).transpose()?;
                rows += batch.num_rows() as u64;
                let zone = input.decoder.zone().cloned();
                // A reader that stopped listening has failed or been dropped: stop decoding.
                if queue.send((batch, zone, batch_keys)).await.is_err() {
                    break;
                }
            }
            // Which columns were healed is known only once every row is decoded.
            let recorded = without_timestamp_bounds(&input.recorded, &input.decoder.healed());
            Ok(Decoded { rows, recorded })
        });
        Decoding {
            schema,
            bloom_columns,
            batches,
            task,
        }
    }

    /// The next batch (see [`Batch`]); `None` once the input is decoded or its decoding failed
    /// (see [`Decoding::finish`]).
    pub async fn next(&mut self) -> Option<Batch> {
        self.batches.recv().await
    }

    /// The end of input `i`'s decoding: the statistics its writer recorded (see [`Decoded`]),
    /// once its rows are the `expected` of its footer. Batches not taken are dropped, so a
    /// decoding still under way stops rather than waits for a reader.
    pub async fn finish(self, i: usize, expected: u64) -> Result<Vec<ColumnStatistics>, OrcError> {
        let Decoding { batches, task, .. } = self;
        drop(batches);
        let decoded = task.join().await?;
        if decoded.rows != expected {
            return Err(OrcError::Decode(format!(
                "input {i}: {} rows decoded, its footer says {expected}",
                decoded.rows
            )));
        }
        Ok(decoded.recorded)
    }
}

/// The next input's decoding, out of [`decode_ahead`]'s queue.
pub(crate) async fn next_decoding(
    decodings: &mut mpsc::Receiver<Result<Decoding, OrcError>>,
) -> Result<Decoding, OrcError> {
    decodings
        .recv()
        .await
        .ok_or_else(|| OrcError::Plan("an output without inputs".into()))?
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
