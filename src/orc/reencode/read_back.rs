//! The read-back of a re-encoded output: the file decoded again and every column's values
//! hashed, which must equal what its inputs gave on the way in.

use std::sync::Arc;

use futures::StreamExt;

use crate::orc::error::OrcError;
use crate::orc::io::copy::Task;
use crate::orc::io::storage::RangeRead;
use crate::orc::reencode::decode::Decoder;
use crate::orc::tail::orc_tail::OrcTail;
use crate::orc::verify::value_hash::{Digester, Digests};

/// Decodes the file `tail` belongs to and returns its rows and column digests.
///
/// A file whose stripes are all at most [`ONE_PASS_UP_TO`] bytes is decoded in one pass, a
/// stripe fetched at a time. A larger stripe (a re-encoded output's are tens of MiB) is read
/// back one top-level column at a time, a pass per column holding that column of a stripe,
/// `threads` passes at once, each in a task of its own: the column's bytes are read once
/// either way, the tail and stripe footers once per column.
pub async fn digest_file<R>(reader: R, tail: &OrcTail, threads: usize) -> Result<Digests, OrcError>
where
    R: RangeRead + Send + 'static,
{
    digest_in_passes(reader, tail, ONE_PASS_UP_TO, threads).await
}

/// Stripes up to this size are read back whole, all columns in one pass.
const ONE_PASS_UP_TO: u64 = 8 << 20;

async fn digest_in_passes<R>(
    reader: R,
    tail: &OrcTail,
    one_pass_up_to: u64,
    threads: usize,
) -> Result<Digests, OrcError>
where
    R: RangeRead + Send + 'static,
{
    let largest = tail.stripes.iter().map(|s| s.length()).max().unwrap_or(0);
    let columns = tail
        .footer
        .types
        .first()
        .map_or(0, |root| root.subtypes.len());
    if largest <= one_pass_up_to || columns < 2 {
        return digest(Decoder::open(reader, tail, 0).await?).await;
    }
    let reader = Arc::new(reader);
    let tail = Arc::new(tail.clone());
    // In column order whatever finishes first: the digests are listed as the columns are.
    let mut passes = futures::stream::iter(0..columns)
        .map(|column| {
            let (reader, tail) = (Arc::clone(&reader), Arc::clone(&tail));
            Task::spawn(
                async move { digest(Decoder::open_column(reader, &tail, column).await?).await },
            )
            .join()
        })
        .buffered(threads.max(1));
    let mut all = Digests::default();
    let mut column = 0;
    while let Some(found) = passes.next().await {
        let found = found?;
        if column > 0 && found.rows != all.rows {
            return Err(OrcError::Decode(format!(
                "column {column} reads back as {} rows, the first column as {}",
                found.rows, all.rows
            )));
        }
        all.rows = found.rows;
        all.columns.extend(found.columns);
        // Every pass reads every stripe footer: the zones are the same in each.
        all.zones = found.zones;
        column += 1;
    }
    Ok(all)
}

async fn digest<R: RangeRead + Send + 'static>(
    mut decoder: Decoder<R>,
) -> Result<Digests, OrcError> {
    let mut digester = Digester::new(&decoder.schema());
    while let Some(batch) = decoder.next().await? {
        digester.update(&batch, decoder.zone())?;
    }
    Ok(digester.finish())
}

#[cfg(test)]
mod tests {
    use arrow::record_batch::RecordBatch;

    use super::*;
    use crate::orc::reencode::write::{OrcWriter, WriterOptions};
    use crate::orc::tail::read::read_tail;
    use crate::orc::testutil::{block_on, MemFile, VecSink, ALL_TYPES_LZ4, MULTI_STRIPE_ZSTD};

    fn tail(bytes: &'static [u8]) -> OrcTail {
        block_on(read_tail(&MemFile::new(bytes))).unwrap().unwrap()
    }

    /// A reader that remembers the largest read it served of the file's stripes (the bytes
    /// before `.2`, the content's end).
    struct Largest(MemFile, Arc<std::sync::atomic::AtomicU64>, u64);

    impl RangeRead for Largest {
        async fn len(&self) -> std::io::Result<u64> {
            self.0.len().await
        }

        async fn read(&self, range: std::ops::Range<u64>) -> std::io::Result<bytes::Bytes> {
            if range.end <= self.2 {
                let n = range.end - range.start;
                self.1.fetch_max(n, std::sync::atomic::Ordering::Relaxed);
            }
            self.0.read(range).await
        }
    }

    /// A file of several stripes of ~64 KiB, `struct<a:bigint,s:string>` of varied values,
    /// written by our writer: larger than orc-rust's first tail read, so its stripes are
    /// fetched as the decoder asks for them.
    fn stripes_of_64k() -> Vec<u8> {
        use arrow::array::{Int64Array, StringArray};
        let t = tail(MULTI_STRIPE_ZSTD);
        let schema = block_on(Decoder::open(MemFile::new(MULTI_STRIPE_ZSTD), &t, 0))
            .unwrap()
            .schema();
        let mut options = WriterOptions::from_tail(&t);
        options.stripe_size = 64 << 10;
        let mut sink = VecSink::default();
        block_on(async {
            let mut writer = OrcWriter::new(&mut sink, options).await.unwrap();
            let mut x: u64 = 1;
            for _ in 0..10 {
                let a: Int64Array = (0..10_000)
                    .map(|_| {
                        x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
                        Some((x >> 1) as i64)
                    })
                    .collect();
                let s: StringArray = a.iter().map(|v| v.map(|v| format!("{v:x}"))).collect();
                let batch =
                    RecordBatch::try_new(schema.clone(), vec![Arc::new(a), Arc::new(s)]).unwrap();
                writer.write_batch(&batch).await.unwrap();
            }
            writer.finish().await.unwrap();
        });
        sink.data
    }

    /// Read back a column at a time, a file gives the digests of one pass (every type), and
    /// no read of its stripes is as large as a stripe.
    #[test]
    fn column_by_column_digests_equal_one_pass() {
        let t = tail(ALL_TYPES_LZ4);
        let whole = block_on(digest_file(MemFile::new(ALL_TYPES_LZ4), &t, 2)).unwrap();
        assert!(whole.columns.len() > 1);
        let by_column = block_on(digest_in_passes(MemFile::new(ALL_TYPES_LZ4), &t, 0, 2)).unwrap();
        assert_eq!(by_column, whole);

        let file = bytes::Bytes::from(stripes_of_64k());
        let t = block_on(read_tail(&MemFile::new(file.clone())))
            .unwrap()
            .unwrap();
        assert!(t.stripes.len() > 3, "{} stripes", t.stripes.len());
        let whole = block_on(digest_file(MemFile::new(file.clone()), &t, 2)).unwrap();
        let largest = Arc::new(std::sync::atomic::AtomicU64::new(0));
        let reader = Largest(MemFile::new(file), Arc::clone(&largest), t.content_end());
        let by_column = block_on(digest_in_passes(reader, &t, 0, 2)).unwrap();
        assert_eq!(by_column, whole);
        assert_eq!(whole.rows, 100_000);
        let stripe = t.stripes.iter().map(|s| s.length()).min().unwrap();
        let read = largest.load(std::sync::atomic::Ordering::Relaxed);
        assert!(read > 0, "the stripes were read");
        assert!(
            read < stripe,
            "read {read} bytes at once, the smallest stripe is {stripe}"
        );
    }
}
