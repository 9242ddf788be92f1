//! Decimals as ORC statistics spell them (`-123.4500`), compared and added exactly, without
//! floating point: what merging decimal statistics needs.

use std::cmp::Ordering;

/// An exact decimal as ORC statistics spell it (`-123.4500`): enough to compare and add
/// without floating point. Values beyond 38 digits, which no ORC decimal holds, are refused so
/// the statistic is dropped rather than approximated.
#[derive(Clone, Debug)]
pub(super) struct Decimal {
    unscaled: i128,
    scale: u32,
    pub(super) text: String,
}

impl Decimal {
    const MAX_DIGITS: u32 = 38;

    pub(super) fn zero() -> Self {
        Self {
            unscaled: 0,
            scale: 0,
            text: "0".into(),
        }
    }

    pub(super) fn parse(text: &str) -> Option<Self> {
        let (negative, body) = match text.as_bytes().first()? {
            b'-' => (true, &text[1..]),
            b'+' => (false, &text[1..]),
            _ => (false, text),
        };
        let (int_part, frac_part) = body.split_once('.').unwrap_or((body, ""));
        if int_part.is_empty() && frac_part.is_empty() {
            return None;
        }
        let digits = int_part.bytes().chain(frac_part.bytes());
        let mut unscaled: i128 = 0;
        let mut significant = 0u32;
        for d in digits {
            if !d.is_ascii_digit() {
                return None;
            }
            if unscaled != 0 || d != b'0' {
                significant += 1;
            }
            unscaled = unscaled
                .checked_mul(10)?
                .checked_add(i128::from(d - b'0'))?;
        }
        if significant > Self::MAX_DIGITS {
            return None;
        }
        let scale = u32::try_from(frac_part.len()).ok()?;
        let unscaled = if negative { -unscaled } else { unscaled };
        Some(Self {
            unscaled,
            scale,
            text: text.to_owned(),
        })
    }

    /// Both values at the larger scale; `None` when that does not fit.
    fn aligned(&self, other: &Self) -> Option<(i128, i128, u32)> {
        let scale = self.scale.max(other.scale);
        let up = |d: &Self| d.unscaled.checked_mul(10i128.checked_pow(scale - d.scale)?);
        Some((up(self)?, up(other)?, scale))
    }

    /// Exact numeric order without aligning scales (which could overflow): sign first, then
    /// the magnitude's integer digits by length and value, then its fractional digits.
    pub(super) fn cmp_value(a: &Self, b: &Self) -> Ordering {
        let sign = |d: &Self| d.unscaled.signum();
        sign(a).cmp(&sign(b)).then_with(|| {
            let magnitude = a.magnitude_parts().cmp(&b.magnitude_parts());
            if sign(a) < 0 {
                magnitude.reverse()
            } else {
                magnitude
            }
        })
    }

    /// (integer digits without leading zeros, fraction digits without trailing zeros), ordered
    /// so that tuple comparison is numeric comparison of the magnitudes.
    fn magnitude_parts(&self) -> (usize, String, String) {
        let digits = self.unscaled.unsigned_abs().to_string();
        let scale = self.scale as usize;
        let (int_part, frac_part) = if digits.len() > scale {
            let (i, f) = digits.split_at(digits.len() - scale);
            (i.to_owned(), f.to_owned())
        } else {
            (
                String::new(),
                format!("{}{}", "0".repeat(scale - digits.len()), digits),
            )
        };
        let int_part = int_part.trim_start_matches('0').to_owned();
        let frac_part = frac_part.trim_end_matches('0').to_owned();
        (int_part.len(), int_part, frac_part)
    }

    pub(super) fn checked_add(&self, other: &Self) -> Option<Self> {
        let (x, y, scale) = self.aligned(other)?;
        let unscaled = x.checked_add(y)?;
        let mut out = Self {
            unscaled,
            scale,
            text: String::new(),
        };
        if out.digits() > Self::MAX_DIGITS {
            return None;
        }
        out.text = out.to_text();
        Some(out)
    }

    fn digits(&self) -> u32 {
        let mut n = self.unscaled.unsigned_abs();
        let mut digits = 1;
        while n >= 10 {
            n /= 10;
            digits += 1;
        }
        digits
    }

    /// Plain notation with trailing fractional zeros removed, as HiveDecimal prints.
    pub(super) fn to_text(&self) -> String {
        let magnitude = self.unscaled.unsigned_abs().to_string();
        let scale = self.scale as usize;
        let padded = if magnitude.len() <= scale {
            format!("{}{}", "0".repeat(scale + 1 - magnitude.len()), magnitude)
        } else {
            magnitude
        };
        let (int_part, frac_part) = padded.split_at(padded.len() - scale);
        let frac_part = frac_part.trim_end_matches('0');
        let sign = if self.unscaled < 0 { "-" } else { "" };
        if frac_part.is_empty() {
            format!("{sign}{int_part}")
        } else {
            format!("{sign}{int_part}.{frac_part}")
        }
    }
}
