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

/// `--fail-above`: a multiple of a partition's ideal file count, as `3x` or `2.5`; below 1
/// every partition with data would fail, so it is refused as a likely typo.
pub fn parse_file_ratio(s: &str) -> Result<f64, String> {
    let number = s.trim().trim_end_matches(['x', 'X']);
    match number.parse::<f64>() {
        Ok(r) if r.is_finite() && r >= 1.0 => Ok(r),
        Ok(_) => Err(format!(
            "'{s}' is below 1x: every partition with data would fail; use 1x or more (e.g. 3x)"
        )),
        Err(_) => Err(format!("'{s}' is not a ratio (examples: 3x, 2.5)")),
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_ratios_read_with_or_without_x_and_at_least_one() {
        assert_eq!(parse_file_ratio("3x"), Ok(3.0));
        assert_eq!(parse_file_ratio("2.5"), Ok(2.5));
        assert_eq!(parse_file_ratio("1X"), Ok(1.0));
        assert!(parse_file_ratio("0.5x").unwrap_err().contains("below 1x"));
        assert!(parse_file_ratio("three")
            .unwrap_err()
            .contains("not a ratio"));
        assert!(parse_file_ratio("inf").is_err());
    }
}
