//! Value parsers of flags and config keys: sizes, durations, codecs and the rest, each with
//! the one error message a user sees, whether the value came from a flag, an environment
//! variable or the config file.

use std::time::Duration;

use hive_orc_compactor::config;
use hive_orc_compactor::metastore::meter::MIN_RATE;
use hive_orc_compactor::operations::compact::{Stripes, VerifyLevel};
use hive_orc_compactor::orc::{Compression, RowOrder};

pub fn parse_sort_by(s: &str) -> Result<RowOrder, String> {
    RowOrder::parse_sort(s)
}

pub fn parse_zorder(s: &str) -> Result<RowOrder, String> {
    RowOrder::parse_zorder(s)
}

/// A codec as `--codec` and the config file name it.
pub fn codec_name(codec: Compression) -> String {
    format!("{codec:?}").to_ascii_lowercase()
}

pub fn parse_codec(s: &str) -> Result<Compression, String> {
    match s.to_ascii_lowercase().as_str() {
        "zstd" => Ok(Compression::Zstd),
        "zlib" => Ok(Compression::Zlib),
        "snappy" => Ok(Compression::Snappy),
        "lz4" => Ok(Compression::Lz4),
        "none" => Ok(Compression::None),
        _ => Err(format!(
            "'{s}' is not a codec we write (zstd, zlib, snappy, lz4 or none)"
        )),
    }
}

pub fn parse_bytes(s: &str) -> Result<u64, String> {
    let size: bytesize::ByteSize = s
        .parse()
        .map_err(|e| format!("'{s}' is not a size (examples: 128MiB, 1GiB): {e}"))?;
    Ok(size.as_u64())
}

pub fn parse_target_size(s: &str) -> Result<u64, String> {
    let size = parse_bytes(s)?;
    if size < 1024 * 1024 {
        return Err(format!("'{s}' is too small a target: use at least 1MiB"));
    }
    Ok(size)
}

pub fn parse_verify(s: &str) -> Result<VerifyLevel, String> {
    s.parse()
}

pub fn parse_stripes(s: &str) -> Result<Stripes, String> {
    s.parse()
}

pub fn parse_stripe_size(s: &str) -> Result<u64, String> {
    let size = parse_bytes(s)?;
    if size < 64 * 1024 {
        return Err(format!("'{s}' is too small a stripe: use at least 64KiB"));
    }
    Ok(size)
}

/// `--metastore-rate`: calls a second, positive (fractions allowed: 0.5 is one call every 2 s).
pub fn parse_rate(s: &str) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(rate) => check_rate(rate),
        Err(_) => Err(not_a_rate(s)),
    }
}

/// A rate the meter can pace to: finite, and at least one call every 1,000 seconds.
pub fn check_rate(rate: f64) -> Result<f64, String> {
    if rate.is_finite() && rate >= MIN_RATE {
        Ok(rate)
    } else {
        Err(not_a_rate(&rate.to_string()))
    }
}

fn not_a_rate(given: &str) -> String {
    format!(
        "'{given}' is not a rate: give the metastore calls a second, a positive number such as \
         50 or 0.5 (at least {MIN_RATE})"
    )
}

pub fn parse_duration(s: &str) -> Result<Duration, String> {
    config::parse_duration(s, Duration::from_secs(1))
        .ok_or_else(|| format!("'{s}' is not a duration (examples: 30s, 10m, 1h)"))
}
