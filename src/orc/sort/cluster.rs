//! The clustering re-encode: a merge group's rows decoded, put in one order across all of its
//! outputs ([`RowOrder`]), and written as consecutive outputs, so neither the outputs nor their
//! row groups overlap on the key and readers skip by min/max.
//!
//! [`cluster`] decodes every input once (for a z-order, the key columns once more before, to
//! sample their values, `--threads` inputs at once) into the external [`Sorter`], each row's
//! sort key made in its input's decoding task; [`Clustered::write_output`] then writes
//! the next output of as many rows as asked from the sorted rows; [`Clustered::finish`] checks
//! what was written against what was read.
//!
//! What proves it, with no order of the inputs to compare against:
//! - the rows decoded and the rows handed to the writers have the same count and the same
//!   order-insensitive [`RowsDigest`];
//! - the keys handed to the writers only ever increase (each key ends with the row's place in
//!   the inputs, so no two are equal): the promised order;
//! - each output's order-sensitive [`Digests`] of the rows handed to it are returned, so the
//!   caller's read-back of the file from HDFS proves the file holds those rows in that order;
//!   with the two checks above, the files hold the inputs' rows, each once, in key order;
//! - the values written do not contradict the statistics the inputs' writers recorded.
//!
//! Rows of several writer time zones (see decode's module docs) cannot share an output stripe,
//! so a group whose inputs were written in different zones is not clustered
//! ([`OrcError::Unsupported`]).
//!
//! [`Digests`]: crate::orc::verify::value_hash::Digests

use std::future::Future;
use std::path::PathBuf;
use std::sync::Arc;

use arrow::array::{AsArray, RecordBatch};
use arrow::datatypes::{Schema, SchemaRef};
use arrow::row::OwnedRow;
use futures::StreamExt;
use orc_rust::proto::ColumnStatistics;
use tokio::sync::mpsc;

use crate::orc::encoding::timestamp::{is_utc, Zone};
use crate::orc::error::OrcError;
use crate::orc::io::copy::{ReadAhead, Task};
use crate::orc::io::storage::{RangeRead, Sink};
use crate::orc::reencode::decode::Decoder;
use crate::orc::reencode::inputs::{as_written, decode_ahead, next_decoding, Keys};
use crate::orc::reencode::output::ReencodedOutput;
use crate::orc::reencode::write::{OrcWriter, WriterOptions};
use crate::orc::sort::external::{compress_spills, Feed, Sorter};
use crate::orc::sort::order::{sampled_rows, KeyMaker, RangeMeter, RowOrder, Sampler};
use crate::orc::statistics::check::contradictions;
use crate::orc::statistics::fold::StatisticsFold;
use crate::orc::tail::orc_tail::OrcTail;
use crate::orc::verify::value_hash::{Digester, RowsDigest};

/// How a clustering re-encode runs.
#[derive(Clone, Debug)]
pub struct ClusterOptions {
    pub order: RowOrder,
    /// Decoded bytes the sort holds; more rows spill to `spill_dir`.
    pub sort_memory: u64,
    pub spill_dir: PathBuf,
    /// Inputs decoded at once beyond the one being sorted (see `decode_ahead`); from 2, runs
    /// also spill beside the gathering (see `Sorter`) and the merge of the runs goes ahead of
    /// the encoders (see `Feed`).
    pub threads: usize,
}

/// The sorted rows of a group, written out an output at a time.
pub struct Clustered {
    order: RowOrder,
    sorted: Feed,
    /// The batch cut at the end of the last output: the next output starts with it.
    pending: Option<RecordBatch>,
    schema: SchemaRef,
    zone: Option<Zone>,
    bloom_filter_columns: Vec<u32>,
    decoded: (u64, u128),
    handed: RowsDigest,
    last_key: Option<Vec<u8>>,
    recorded: Vec<ColumnStatistics>,
    written: StatisticsFold,
    top_level: Vec<usize>,
    before: Vec<(String, f64)>,
    after: Option<RangeMeter>,
}

/// What a clustering re-encode did, beyond its outputs.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ClusterSummary {
    pub rows: u64,
    /// Sorted runs spilled to disk (0: the group was sorted in memory), and their bytes.
    pub spilled_runs: usize,
    pub spilled_bytes: u64,
    /// How clustered the rows were and are on each key column (see [`RangeMeter`]).
    pub before: Vec<(String, f64)>,
    pub after: Vec<(String, f64)>,
}

/// Decodes the files of `tails` and sorts their rows by `options.order`; `open(i)` opens input
/// `i` (a few ahead, see [`ReadAhead`]). Values that cannot be ordered or decoded are
/// [`OrcError::Unsupported`] or [`OrcError::Decode`].
pub async fn cluster<R, O, F>(
    tails: &[&OrcTail],
    open: O,
    options: &ClusterOptions,
    read_ahead: &ReadAhead,
) -> Result<Clustered, OrcError>
where
    R: RangeRead + Send + 'static,
    O: Fn(usize) -> F,
    F: Future<Output = Result<R, OrcError>> + Send + 'static,
{
    let first_tail = tails
        .first()
        .ok_or_else(|| OrcError::Plan("an output without inputs".into()))?;
    let schema = Decoder::open(open(0).await?, first_tail, 0).await?.schema();
    let samples = match &options.order {
        RowOrder::Sort(_) => Vec::new(),
        RowOrder::ZOrder(columns) => {
            sample(tails, &schema, &open, columns, options.threads).await?
        }
    };
    let keys = KeyMaker::new(&options.order, &schema, samples)?;
    let keys: Keys = Arc::new(move |batch: &RecordBatch, first: u64| keys.keys(batch, first));

    let orc_bytes = tails.iter().map(|t| t.file_length).sum();
    let compress = compress_spills(&options.spill_dir, orc_bytes);
    if compress {
        tracing::info!(
            spill_dir = %options.spill_dir.display(),
            orc_bytes,
            "sorted runs spill LZ4-compressed: the spill directory may not hold them decoded"
        );
    }
    let (driver, mut decodings) =
        decode_ahead(tails, &open, read_ahead, options.threads, Some(keys));
    let rows: Vec<u64> = tails.iter().map(|t| t.rows).collect();
    let decode = async move {
        let first = next_decoding(&mut decodings).await?;
        let schema = Arc::clone(&first.schema);
        let bloom_filter_columns = first.bloom_columns.clone().unwrap_or_default();
        let mut sorter = Sorter::new(
            Arc::clone(&schema),
            options.sort_memory,
            &options.spill_dir,
            compress,
            options.threads,
        );
        let mut digest = RowsDigest::new(&schema);
        let stride = first_tail.footer.row_index_stride.unwrap_or(10_000);
        let mut before = RangeMeter::new(&options.order, &schema, stride)?;
        let mut recorded = StatisticsFold::default();
        let mut zone: Option<Option<Zone>> = None;
        let mut first = Some(first);
        for (i, expected) in rows.into_iter().enumerate() {
            let mut input = match first.take() {
                Some(first) => first,
                None => next_decoding(&mut decodings).await?,
            };
            while let Some((batch, batch_zone, batch_keys)) = input.next().await {
                same_zone(&mut zone, batch_zone)?;
                digest.update(&batch)?;
                before.add(&batch)?;
                let batch_keys = batch_keys
                    .ok_or_else(|| OrcError::Decode("a batch decoded without its keys".into()))?;
                sorter.push(batch, batch_keys)?;
            }
            before.end_file();
            recorded.add(&input.finish(i, expected).await?);
        }
        // Off the runtime: a big partition's runs merged into fewer take minutes, and with one
        // thread the runtime is this thread, whose lock heartbeats must go on meanwhile.
        let sorted = tokio::task::spawn_blocking(move || sorter.finish())
            .await
            .map_err(|e| OrcError::Decode(format!("the sort's last runs stopped: {e}")))??;
        Ok::<_, OrcError>((
            schema,
            bloom_filter_columns,
            sorted,
            digest.finish(),
            recorded.finish(),
            zone.flatten(),
            before.fractions(),
        ))
    };
    let driver = async {
        driver.await;
        Ok::<_, OrcError>(())
    };
    let ((), (schema, bloom_filter_columns, sorted, decoded, recorded, zone, before)) =
        tokio::try_join!(driver, decode)?;
    let sorted = sorted.feed(options.threads);
    let types = &first_tail.footer.types;
    let roots = types.first().map_or(&[][..], |root| &root.subtypes[..]);
    Ok(Clustered {
        order: options.order.clone(),
        sorted,
        pending: None,
        handed: RowsDigest::new(&schema),
        schema,
        zone,
        bloom_filter_columns,
        decoded,
        last_key: None,
        recorded,
        written: StatisticsFold::default(),
        top_level: std::iter::once(0)
            .chain(roots.iter().map(|&t| t as usize))
            .collect(),
        before,
        after: None,
    })
}

impl Clustered {
    /// Writes the next `rows` sorted rows to `sink` as one ORC file shaped by `options` (its
    /// bloom filter columns are those of the first input's first stripe). The caller closes the
    /// sink (also after an error).
    pub async fn write_output<S: Sink>(
        &mut self,
        sink: &mut S,
        rows: u64,
        mut options: WriterOptions,
    ) -> Result<ReencodedOutput, OrcError> {
        options.bloom_filter_columns = self.bloom_filter_columns.clone();
        if self.after.is_none() {
            self.after = Some(RangeMeter::new(
                &self.order,
                &self.schema,
                options.row_index_stride,
            )?);
        }
        let mut writer = OrcWriter::new(sink, options).await?;
        if let Some(zone) = &self.zone {
            writer.set_zone(zone.clone()).await?;
        }
        // What the rows are measured by runs in a task of its own, beside the encoding.
        let (to_measure, mut measuring) = mpsc::channel::<RecordBatch>(2);
        let mut digester = Digester::new(&self.schema);
        let (mut handed, mut after) = (std::mem::take(&mut self.handed), self.after.take());
        let zone = self.zone.clone();
        let measured = Task::spawn(async move {
            while let Some(batch) = measuring.recv().await {
                digester.update(&batch, zone.as_ref())?;
                handed.update(&batch)?;
                if let Some(after) = &mut after {
                    after.add(&batch)?;
                }
            }
            Ok::<_, OrcError>((digester, handed, after))
        });
        let mut left = rows;
        while left > 0 {
            let keyed = match self.pending.take() {
                Some(b) => b,
                None => self.sorted.next_batch().await.transpose()?.ok_or_else(|| {
                    OrcError::Decode(format!("the sorted rows ran out {left} rows early"))
                })?,
            };
            let keyed = if keyed.num_rows() as u64 > left {
                let cut = left as usize;
                self.pending = Some(keyed.slice(cut, keyed.num_rows() - cut));
                keyed.slice(0, cut)
            } else {
                keyed
            };
            self.check_order(&keyed)?;
            let batch = keyed.project(&(0..self.schema.fields().len()).collect::<Vec<_>>())?;
            let batch = RecordBatch::try_new(Arc::clone(&self.schema), batch.columns().to_vec())?;
            left -= batch.num_rows() as u64;
            if to_measure.send(batch.clone()).await.is_err() {
                // Only a failed measure closes its queue: its error is the one returned.
                drop(to_measure);
                measured.join().await?;
                return Err(OrcError::Decode(
                    "the digest of the rows ended early".into(),
                ));
            }
            writer.write_batch(&as_written(batch)?).await?;
        }
        drop(to_measure);
        let (digester, handed, after) = measured.join().await?;
        (self.handed, self.after) = (handed, after);
        let (written, _) = writer.finish().await?;
        if let Some(after) = &mut self.after {
            after.end_file();
        }
        self.written.add(&written.statistics);
        let digests = digester.finish();
        if written.rows != digests.rows {
            return Err(OrcError::Decode(format!(
                "{} rows written, {} handed to the writer",
                written.rows, digests.rows
            )));
        }
        Ok(ReencodedOutput {
            length: written.length,
            stripes: written.stripes,
            digests,
        })
    }

    /// Every key of `keyed` (its last column) above the one before.
    fn check_order(&mut self, keyed: &RecordBatch) -> Result<(), OrcError> {
        let keys = keyed.columns()[keyed.num_columns() - 1].as_binary::<i32>();
        // Each key against the one before it: the batch's first against the last batch's.
        let mut last = self.last_key.as_deref();
        for key in keys.iter().flatten() {
            if last.is_some_and(|last| last >= key) {
                return Err(OrcError::Decode(
                    "the sorted rows came out of order: a sort bug; nothing was published".into(),
                ));
            }
            last = Some(key);
        }
        self.last_key = last.map(<[u8]>::to_vec);
        Ok(())
    }

    /// Checks that every sorted row was written, and that the rows written are the rows decoded
    /// and agree with the inputs' recorded statistics.
    pub async fn finish(mut self) -> Result<ClusterSummary, OrcError> {
        let left = self.pending.take().map_or(0, |b| b.num_rows())
            + match self.sorted.next_batch().await.transpose()? {
                Some(b) => b.num_rows(),
                None => 0,
            };
        if left > 0 {
            return Err(OrcError::Decode(format!(
                "sorted rows were left over after the last output ({left} or more)"
            )));
        }
        let handed = self.handed.finish();
        if handed != self.decoded {
            return Err(OrcError::Decode(format!(
                "the rows written ({} rows, digest {:032x}) are not the rows decoded ({} rows, \
                 digest {:032x})",
                handed.0, handed.1, self.decoded.0, self.decoded.1
            )));
        }
        let wrong = contradictions(&self.recorded, &self.written.finish(), &self.top_level);
        if !wrong.is_empty() {
            return Err(OrcError::Decode(format!(
                "the decoded values contradict the inputs' recorded statistics: {}",
                wrong.join("; ")
            )));
        }
        let (spilled_runs, spilled_bytes) = self.sorted.spilled().await?;
        Ok(ClusterSummary {
            rows: handed.0,
            spilled_runs,
            spilled_bytes,
            before: self.before,
            after: self.after.map(RangeMeter::fractions).unwrap_or_default(),
        })
    }
}

/// The samples of a z-order's `columns`: the values of the rows [`sampled_rows`] names, each
/// input's key columns decoded in a task of its own, `threads` inputs at once.
async fn sample<R, O, F>(
    tails: &[&OrcTail],
    schema: &Schema,
    open: &O,
    columns: &[String],
    threads: usize,
) -> Result<Vec<Sampler>, OrcError>
where
    R: RangeRead + Send + 'static,
    O: Fn(usize) -> F,
    F: Future<Output = Result<R, OrcError>> + Send + 'static,
{
    let (samplers, tops): (Vec<Sampler>, Vec<usize>) = columns
        .iter()
        .map(|path| Sampler::new(schema, path))
        .collect::<Result<Vec<_>, _>>()?
        .into_iter()
        .unzip();
    let picked = sampled_rows(tails.iter().map(|t| t.rows).sum());
    let mut inputs = Vec::new();
    let mut first = 0;
    for (i, tail) in tails.iter().enumerate() {
        let (from, to) = (
            picked.partition_point(|&r| r < first),
            picked.partition_point(|&r| r < first + tail.rows),
        );
        let picks: Vec<u64> = picked[from..to].iter().map(|r| r - first).collect();
        first += tail.rows;
        if !picks.is_empty() {
            inputs.push((i, picks));
        }
    }
    let shared = Arc::new((samplers, tops));
    let mut found = futures::stream::iter(inputs)
        .map(|(i, picks)| {
            let readers: Vec<F> = shared.1.iter().map(|_| open(i)).collect();
            let (tail, shared) = ((*tails[i]).clone(), Arc::clone(&shared));
            Task::spawn(async move {
                let (samplers, tops) = &*shared;
                let mut values = Vec::new();
                for ((sampler, &top), reader) in samplers.iter().zip(tops).zip(readers) {
                    let decoder = Decoder::open_column(reader.await?, &tail, top).await?;
                    values.push(sampled_values(decoder, sampler, &picks, tail.rows).await?);
                }
                Ok::<_, OrcError>(values)
            })
            .output()
        })
        .buffered(threads.max(1));
    let mut kept: Vec<Vec<OwnedRow>> = vec![Vec::new(); columns.len()];
    while let Some(values) = found.next().await {
        let values = values.map_err(|e| OrcError::Decode(format!("sampling stopped: {e}")))??;
        for (kept, values) in kept.iter_mut().zip(values) {
            kept.extend(values);
        }
    }
    drop(found);
    let (mut samplers, _) = Arc::try_unwrap(shared)
        .map_err(|_| OrcError::Decode("a sampling task outlived the sampling".into()))?;
    for (sampler, values) in samplers.iter_mut().zip(kept) {
        sampler.keep(values);
    }
    Ok(samplers)
}

/// The values at `picks` (ascending row positions) of one input's column; the input must hold
/// the `rows` its footer says.
async fn sampled_values<R: RangeRead + Send + 'static>(
    mut decoder: Decoder<R>,
    sampler: &Sampler,
    picks: &[u64],
    rows: u64,
) -> Result<Vec<OwnedRow>, OrcError> {
    let (mut values, mut seen, mut next) = (Vec::with_capacity(picks.len()), 0u64, 0);
    while let Some(batch) = decoder.next().await? {
        let n = batch.num_rows() as u64;
        let here: Vec<u32> = picks[next..]
            .iter()
            .take_while(|&&p| p < seen + n)
            .map(|&p| (p - seen) as u32)
            .collect();
        next += here.len();
        if !here.is_empty() {
            values.extend(sampler.values(&batch, &here)?);
        }
        seen += n;
    }
    if seen != rows {
        return Err(OrcError::Decode(format!(
            "an input decoded to {seen} rows where its footer says {rows}"
        )));
    }
    Ok(values)
}

/// Checks that a batch decoded in `this_zone` may share stripes with those decoded before, in
/// `zone` (set by the first batch).
fn same_zone(zone: &mut Option<Option<Zone>>, this_zone: Option<Zone>) -> Result<(), OrcError> {
    match &*zone {
        None => *zone = Some(this_zone),
        // UTC by any name: the stored seconds are the wall clock alike.
        Some(Some(z)) if this_zone.as_ref().is_some_and(|t| is_utc(z) && is_utc(t)) => {}
        Some(z) if *z != this_zone => {
            return Err(OrcError::Unsupported(format!(
                "its inputs hold timestamps of writers in different time zones \
                 ({} and {}), whose rows cannot share a stripe, so cannot be sorted \
                 together",
                zone_name(z),
                zone_name(&this_zone)
            )));
        }
        Some(_) => {}
    }
    Ok(())
}

fn zone_name(zone: &Option<Zone>) -> &str {
    zone.as_ref().and_then(|z| z.as_deref()).unwrap_or("none")
}

impl From<arrow::error::ArrowError> for OrcError {
    fn from(e: arrow::error::ArrowError) -> Self {
        OrcError::Decode(format!("ordering rows: {e}"))
    }
}
