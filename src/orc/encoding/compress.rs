//! ORC's chunked compression, for the Footer and Metadata sections.
//!
//! A compressed section is a run of chunks, each behind a 3-byte little-endian header whose
//! lowest bit says "stored as original" and whose other 23 bits give the chunk's length on
//! disk. Each chunk decompresses to at most the file's compression block size, which is what
//! bounds our memory on hostile input. With codec NONE the section is raw bytes, no headers.

use std::io::{Read, Write};

use orc_rust::proto::CompressionKind;

use crate::orc::error::{corrupt, OrcError};

/// The largest chunk the 23-bit length field can describe.
const MAX_CHUNK: u64 = (1 << 23) - 1;

/// A whole Footer or Metadata section larger than this is treated as corrupt: real ones are a
/// few MB at most, and the cap keeps a crafted file from making us allocate without limit.
const MAX_SECTION: usize = 512 << 20;

/// The codecs ORC defines. LZO is recognised (to name it in errors) but never decoded.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Compression {
    None,
    Zlib,
    Snappy,
    Lzo,
    Lz4,
    Zstd,
}

impl Compression {
    pub(crate) fn from_proto(value: Option<i32>) -> Result<Self, OrcError> {
        let kind = value.unwrap_or(CompressionKind::None as i32);
        match CompressionKind::try_from(kind) {
            Ok(CompressionKind::None) => Ok(Self::None),
            Ok(CompressionKind::Zlib) => Ok(Self::Zlib),
            Ok(CompressionKind::Snappy) => Ok(Self::Snappy),
            Ok(CompressionKind::Lzo) => Ok(Self::Lzo),
            Ok(CompressionKind::Lz4) => Ok(Self::Lz4),
            Ok(CompressionKind::Zstd) => Ok(Self::Zstd),
            Err(_) => Err(OrcError::UnsupportedCodec(format!(
                "unknown compression kind {kind}"
            ))),
        }
    }

    pub(crate) fn to_proto(self) -> i32 {
        let kind = match self {
            Self::None => CompressionKind::None,
            Self::Zlib => CompressionKind::Zlib,
            Self::Snappy => CompressionKind::Snappy,
            Self::Lzo => CompressionKind::Lzo,
            Self::Lz4 => CompressionKind::Lz4,
            Self::Zstd => CompressionKind::Zstd,
        };
        kind as i32
    }

    /// Fails for codecs we cannot both read and write, so a file using one is refused up front
    /// rather than half-merged.
    pub(crate) fn ensure_supported(self) -> Result<(), OrcError> {
        match self {
            Self::Lzo => Err(OrcError::UnsupportedCodec(
                "LZO (no maintained Rust implementation; such files are left alone)".into(),
            )),
            _ => Ok(()),
        }
    }

    /// Checks a block size before it is used to size buffers: a compressed chunk must fit the
    /// 23-bit header and a zero size would make no progress.
    pub(crate) fn check_block_size(self, block_size: u64) -> Result<(), OrcError> {
        if self != Self::None && (block_size == 0 || block_size > MAX_CHUNK) {
            return Err(corrupt(format!(
                "compression block size {block_size} is outside 1..={MAX_CHUNK}"
            )));
        }
        Ok(())
    }
}

/// Decodes one Footer or Metadata section. `what` names the section in errors.
pub(crate) fn decompress(
    kind: Compression,
    block_size: u64,
    data: &[u8],
    what: &str,
) -> Result<Vec<u8>, OrcError> {
    kind.ensure_supported()?;
    if kind == Compression::None {
        return Ok(data.to_vec());
    }
    kind.check_block_size(block_size)?;
    let limit = block_size as usize;
    let mut out = Vec::new();
    let mut pos = 0usize;
    while pos < data.len() {
        let header = data
            .get(pos..pos + 3)
            .ok_or_else(|| corrupt(format!("{what}: chunk header cut short at byte {pos}")))?;
        let raw = u32::from(header[0]) | u32::from(header[1]) << 8 | u32::from(header[2]) << 16;
        let original = raw & 1 == 1;
        let len = (raw >> 1) as usize;
        pos += 3;
        let chunk = data.get(pos..pos + len).ok_or_else(|| {
            corrupt(format!(
                "{what}: chunk of {len} bytes at byte {pos} runs past the section"
            ))
        })?;
        pos += len;
        if original {
            if len > limit {
                return Err(corrupt(format!(
                    "{what}: stored chunk of {len} bytes exceeds block size {block_size}"
                )));
            }
            out.extend_from_slice(chunk);
        } else {
            decompress_chunk(kind, chunk, limit, &mut out)
                .map_err(|e| corrupt(format!("{what}: {e}")))?;
        }
        if out.len() > MAX_SECTION {
            return Err(corrupt(format!(
                "{what}: decompresses to more than {MAX_SECTION} bytes"
            )));
        }
    }
    Ok(out)
}

/// Appends one decompressed chunk to `out`, refusing to produce more than `limit` bytes.
fn decompress_chunk(
    kind: Compression,
    chunk: &[u8],
    limit: usize,
    out: &mut Vec<u8>,
) -> Result<(), String> {
    let start = out.len();
    match kind {
        Compression::Zlib => inflate(chunk, limit, out)?,
        Compression::Snappy => {
            let len = snap::raw::decompress_len(chunk).map_err(|e| format!("snappy: {e}"))?;
            if len > limit {
                return Err(format!(
                    "snappy chunk claims {len} bytes, block size is {limit}"
                ));
            }
            out.resize(start + len, 0);
            let n = snap::raw::Decoder::new()
                .decompress(chunk, &mut out[start..])
                .map_err(|e| format!("snappy: {e}"))?;
            out.truncate(start + n);
        }
        Compression::Lz4 => {
            // ORC's LZ4 is a bare LZ4 block: no frame, no size prefix.
            out.resize(start + limit, 0);
            let n = lz4_flex::block::decompress_into(chunk, &mut out[start..])
                .map_err(|e| format!("lz4: {e}"))?;
            out.truncate(start + n);
        }
        Compression::Zstd => {
            let mut decoder = zstd::stream::read::Decoder::with_buffer(chunk)
                .map_err(|e| format!("zstd: {e}"))?
                .take(limit as u64 + 1);
            decoder.read_to_end(out).map_err(|e| format!("zstd: {e}"))?;
        }
        Compression::None | Compression::Lzo => {
            return Err(format!("{kind:?} has no chunk decoder"));
        }
    }
    if out.len() - start > limit {
        return Err(format!(
            "a chunk decompresses to more than the block size {limit}"
        ));
    }
    Ok(())
}

thread_local! {
    /// One inflate state per thread, reset for each chunk. Planning decodes two small sections
    /// of every input's tail and staging does it again: set up afresh each time (with flate2's
    /// 32 KiB read buffer), the state cost more than inflating those few hundred bytes.
    static INFLATE: std::cell::RefCell<flate2::Decompress> =
        std::cell::RefCell::new(flate2::Decompress::new(false));
}

/// Inflates one chunk (ORC's ZLIB is raw deflate, without the zlib header) onto `out`, at most
/// `limit` bytes of it: producing one byte more is how an over-long chunk is detected without
/// inflating all of it. A stream that stops before its last block is an error too.
fn inflate(chunk: &[u8], limit: usize, out: &mut Vec<u8>) -> Result<(), String> {
    INFLATE.with_borrow_mut(|z| {
        z.reset(false);
        let start = out.len();
        let mut input = chunk;
        loop {
            let produced = out.len() - start;
            if produced > limit {
                return Ok(());
            }
            // Room for what is left of the chunk's limit (and the byte past it), grown as it
            // fills: most sections are far smaller than their block size.
            let room = (limit + 1 - produced).min((input.len() * 4).max(4096));
            out.reserve(room);
            let (read, wrote) = (z.total_in(), z.total_out());
            let status = z
                .decompress_vec(input, out, flate2::FlushDecompress::None)
                .map_err(|e| format!("zlib: {e}"))?;
            input = &input[(z.total_in() - read) as usize..];
            match status {
                flate2::Status::StreamEnd => return Ok(()),
                _ if z.total_in() == read && z.total_out() == wrote => {
                    return Err("zlib: the deflate stream ends before its last block".into())
                }
                _ => {}
            }
        }
    })
}

/// Encodes a section the way an ORC writer would: chunks of at most one block, each stored as
/// original when compressing it does not make it smaller (as Java ORC does), so readers with a
/// block-sized buffer can always decode it.
pub(crate) fn compress(
    kind: Compression,
    block_size: u64,
    data: &[u8],
) -> Result<Vec<u8>, OrcError> {
    compress_at(kind, None, block_size, data)
}

/// [`compress`] at a compression `level` of the codec's own scale (zlib 0-9, zstd 1-22;
/// ignored by codecs without levels); `None` is our default for the codec.
pub(crate) fn compress_at(
    kind: Compression,
    level: Option<i32>,
    block_size: u64,
    data: &[u8],
) -> Result<Vec<u8>, OrcError> {
    kind.ensure_supported()?;
    if kind == Compression::None {
        return Ok(data.to_vec());
    }
    kind.check_block_size(block_size)?;
    let mut out = Vec::with_capacity(data.len() / 2 + 16);
    for chunk in data.chunks(block_size as usize) {
        let compressed = compress_chunk(kind, level, chunk)?;
        let (body, original) = if compressed.len() < chunk.len() {
            (compressed.as_slice(), false)
        } else {
            (chunk, true)
        };
        // body.len() <= block_size <= MAX_CHUNK, checked above, so the shift cannot overflow
        // 24 bits.
        let header = ((body.len() as u32) << 1) | u32::from(original);
        out.extend_from_slice(&header.to_le_bytes()[..3]);
        out.extend_from_slice(body);
    }
    Ok(out)
}

/// The deflate level of the reference writers' default (`orc.compression.strategy=SPEED`):
/// ORC C++ compresses every stream at 2, ORC Java its data and dictionary streams at 2 and the
/// small ones (lengths, PRESENT, row index) at 1. zlib's default of 6 took a tenth of our CPU
/// time when re-encoding, for files 0.4% smaller (2026-12-02, R).
const ZLIB_LEVEL: flate2::Compression = flate2::Compression::new(2);

/// zstd's own default level, which ORC Java and C++ use too.
const ZSTD_LEVEL: i32 = 3;

fn compress_chunk(
    kind: Compression,
    level: Option<i32>,
    chunk: &[u8],
) -> Result<Vec<u8>, OrcError> {
    let encoded = match kind {
        Compression::Zlib => {
            let level = level.map_or(ZLIB_LEVEL, |l| {
                flate2::Compression::new(l.clamp(0, 9) as u32)
            });
            let mut encoder = flate2::write::DeflateEncoder::new(Vec::new(), level);
            encoder.write_all(chunk)?;
            encoder.finish()?
        }
        Compression::Snappy => snap::raw::Encoder::new()
            .compress_vec(chunk)
            .map_err(|e| OrcError::Io(std::io::Error::other(format!("snappy: {e}"))))?,
        Compression::Lz4 => lz4_flex::block::compress(chunk),
        Compression::Zstd => zstd::bulk::compress(chunk, level.unwrap_or(ZSTD_LEVEL))?,
        Compression::None | Compression::Lzo => {
            return Err(OrcError::UnsupportedCodec(format!(
                "cannot compress with {kind:?}"
            )))
        }
    };
    Ok(encoded)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Vec<u8> {
        // Compressible and long enough to need several 1 KiB chunks.
        (0..10_000u32)
            .flat_map(|i| (i % 97).to_le_bytes())
            .collect()
    }

    #[test]
    fn every_supported_codec_round_trips_across_chunks() {
        let data = sample();
        for kind in [
            Compression::None,
            Compression::Zlib,
            Compression::Snappy,
            Compression::Lz4,
            Compression::Zstd,
        ] {
            let packed = compress(kind, 1024, &data).unwrap();
            assert_eq!(
                decompress(kind, 1024, &packed, "t").unwrap(),
                data,
                "{kind:?}"
            );
        }
    }

    #[test]
    fn incompressible_chunks_are_stored_as_original() {
        let data: Vec<u8> = (0..200u32)
            .map(|i| (i.wrapping_mul(2654435761) >> 13) as u8)
            .collect();
        let packed = compress(Compression::Zstd, 4096, &data).unwrap();
        assert_eq!(packed[0] & 1, 1, "original bit");
        assert_eq!(&packed[3..], &data[..]);
        assert_eq!(
            decompress(Compression::Zstd, 4096, &packed, "t").unwrap(),
            data
        );
    }

    #[test]
    fn empty_section_is_empty() {
        assert!(compress(Compression::Zlib, 1024, &[]).unwrap().is_empty());
        assert!(decompress(Compression::Zlib, 1024, &[], "t")
            .unwrap()
            .is_empty());
    }

    #[test]
    fn lzo_is_a_typed_refusal() {
        assert!(matches!(
            decompress(Compression::Lzo, 1024, &[1, 2, 3], "t"),
            Err(OrcError::UnsupportedCodec(_))
        ));
    }

    #[test]
    fn bad_chunks_are_errors_not_panics() {
        let data = sample();
        let packed = compress(Compression::Snappy, 1024, &data).unwrap();
        // Cut in the middle of a chunk, and in the middle of a header.
        for cut in [packed.len() - 5, 1, 2] {
            assert!(decompress(Compression::Snappy, 1024, &packed[..cut], "t").is_err());
        }
        // Garbage bodies for each codec.
        let garbage = [
            0x10u8, 0x00, 0x00, 0xff, 0xfe, 0xfd, 0xfc, 0xfb, 0xfa, 0xf9, 0xf8,
        ];
        for kind in [
            Compression::Zlib,
            Compression::Snappy,
            Compression::Lz4,
            Compression::Zstd,
        ] {
            assert!(decompress(kind, 1024, &garbage, "t").is_err(), "{kind:?}");
        }
        // A deflate stream cut before its last block, behind a header that says so.
        let whole = compress(Compression::Zlib, 8192, &data[..8192]).unwrap();
        let body = &whole[3..whole.len() - 4];
        let mut cut = ((body.len() as u32) << 1).to_le_bytes()[..3].to_vec();
        cut.extend_from_slice(body);
        assert!(decompress(Compression::Zlib, 8192, &cut, "t").is_err());
        // A chunk that inflates past the block size.
        let big = compress(Compression::Zlib, 8192, &vec![0u8; 8192]).unwrap();
        assert!(decompress(Compression::Zlib, 1024, &big, "t").is_err());
        // Stored chunk larger than the block size.
        let mut stored = vec![0u8; 3];
        stored[0] = ((2000u32 << 1) | 1) as u8;
        stored[1] = (((2000u32 << 1) | 1) >> 8) as u8;
        stored.extend(vec![7u8; 2000]);
        assert!(decompress(Compression::Zlib, 1024, &stored, "t").is_err());
        assert!(decompress(Compression::Zlib, 0, &stored, "t").is_err());
    }
}
