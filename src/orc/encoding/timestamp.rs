//! How ORC stores a timestamp, in one place for the decoder and the writer: seconds from
//! 2015-01-01 00:00:00 in the DATA stream and nanoseconds in the SECONDARY stream, their
//! trailing decimal zeros folded into the low three bits.
//!
//! Every Apache reader since ORC-763 takes a negative second with a fraction of at least a
//! millisecond to be stored truncated toward zero (one second more than the floor), and the
//! reference writers store it so. pyarrow's writer (ORC C++ through arrow's adapter) stores a
//! time before 1970 with a fraction of a second as the second truncated toward zero and
//! *negative* nanoseconds instead. ORC C++ reads that back as written; ORC Java refuses the
//! file ("nanos > 999999999 or < 0"), so Hive and Spark cannot read it at all. [`heal_nanos`]
//! turns such a value into the standard layout, which ORC C++ reads as the same time and ORC
//! Java can read.

/// The writer time zone a stripe footer names; `None` when it names none (readers then take
/// their own).
pub type Zone = Option<String>;

/// Whether `zone` is UTC by another name (the ids Java and the tz database give it), where
/// the stored seconds of a plain timestamp are its wall clock for every reader. No zone is not
/// UTC: readers then take their own.
pub fn is_utc(zone: &Zone) -> bool {
    const UTC: [&str; 16] = [
        "UTC",
        "Etc/UTC",
        "GMT",
        "Etc/GMT",
        "UCT",
        "Etc/UCT",
        "Universal",
        "Etc/Universal",
        "Zulu",
        "Etc/Zulu",
        "GMT0",
        "Etc/GMT0",
        "Etc/GMT+0",
        "Etc/GMT-0",
        "Greenwich",
        "Etc/Greenwich",
    ];
    zone.as_deref().is_some_and(|z| UTC.contains(&z))
}

/// 2015-01-01 00:00:00 UTC in seconds since 1970: what the stored seconds count from.
pub(crate) const ORC_EPOCH: i64 = 1_420_070_400;

const NANOS_PER_SECOND: i64 = 1_000_000_000;

/// Nanoseconds with trailing decimal zeros removed: the low three bits hold how many zeros
/// beyond the first two were dropped (1 means two zeros, 7 means eight).
pub(crate) fn encode_nanos(nanos: i64) -> i64 {
    if nanos == 0 || nanos % 100 != 0 {
        return nanos << 3;
    }
    let mut n = nanos / 100;
    let mut zeros = 1;
    while n % 10 == 0 && zeros < 7 {
        n /= 10;
        zeros += 1;
    }
    (n << 3) | zeros
}

/// The nanoseconds a stored SECONDARY value stands for, as ORC C++ reads it (the value taken
/// as signed, the zeros restored), when that is within one second either way.
fn signed_nanos(stored: u64) -> Option<i64> {
    let stored = stored as i64;
    let zeros = (stored & 7) as u32;
    // An arithmetic shift, as ORC C++'s reader does on its int64.
    let digits = stored >> 3;
    let nanos = match zeros {
        0 => digits,
        z => digits.checked_mul(10i64.pow(z + 1))?,
    };
    (nanos.abs() < NANOS_PER_SECOND).then_some(nanos)
}

/// The nanoseconds a stored SECONDARY value stands for, when it is within a second as the
/// format wants.
pub(crate) fn stored_nanos(stored: u64) -> Option<u64> {
    signed_nanos(stored).filter(|n| *n >= 0).map(|n| n as u64)
}

/// Why a stored timestamp cannot be healed: the message names the stored numbers.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Unhealable(pub String);

/// The standard SECONDARY value for a stored pair (`seconds` from [`ORC_EPOCH`] as the
/// stream holds them, `stored` nanoseconds out of range) that pyarrow wrote with negative
/// nanoseconds (see the module docs), leaving the seconds as they are: the time
/// `seconds + nanos` is stored with the nanoseconds one second up, which every reader of the
/// standard layout takes one second down again.
///
/// That holds only where every reader borrows: the second, counted from 1970, is negative
/// (in the writer time zone, which moves the count by at most 14 hours: unless the zone is
/// `utc`, a second within a day of 1970 is not healed), and the fraction left is at least a
/// millisecond. Anything else (a time within the second before 1970, which the standard
/// layout cannot hold, a fraction under a millisecond, nanoseconds of a second or more) is not
/// healed.
pub(crate) fn heal_nanos(seconds: i64, stored: u64, utc: bool) -> Result<u64, Unhealable> {
    const DAY: i64 = 86_400;
    let why = |what: &str| {
        Unhealable(format!(
            "stored seconds {seconds}, nanoseconds encoded {}: {what}",
            stored as i64
        ))
    };
    let nanos = signed_nanos(stored).ok_or_else(|| why("a second or more"))?;
    if nanos >= 0 {
        return Err(why("not negative"));
    }
    let since_1970 = seconds
        .checked_add(ORC_EPOCH)
        .ok_or_else(|| why("past the years ORC holds"))?;
    if since_1970 >= 0 {
        return Err(why("within the second before 1970, which ORC cannot store"));
    }
    if !utc && since_1970 >= -DAY {
        return Err(why(
            "within a day of 1970 in a writer time zone other than UTC, where readers' zones \
             decide the second",
        ));
    }
    let healed = NANOS_PER_SECOND + nanos;
    if healed <= 999_999 {
        return Err(why(
            "a fraction under a millisecond, which needs another stored second",
        ));
    }
    Ok(encode_nanos(healed) as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nanos_fold_trailing_zeros() {
        assert_eq!(encode_nanos(0), 0);
        assert_eq!(encode_nanos(123), 123 << 3);
        assert_eq!(encode_nanos(500_000_000), (5 << 3) | 7);
        assert_eq!(encode_nanos(1_000), (1 << 3) | 2);
        assert_eq!(encode_nanos(123_456_000), (123_456 << 3) | 2);
        for n in [0, 1, 999_999_999, 100, 120_000_000] {
            assert_eq!(stored_nanos(encode_nanos(n) as u64), Some(n as u64));
        }
    }

    /// pyarrow's -0.5 s, as its C++ writer folds it: (-5 << 3) | 7.
    #[test]
    fn negative_nanoseconds_read_as_orc_cpp_reads_them_and_heal() {
        let stored = encode_nanos(-500_000_000) as u64;
        assert_eq!(stored as i64, (-5 << 3) | 7);
        assert_eq!(stored_nanos(stored), None);
        assert_eq!(signed_nanos(stored), Some(-500_000_000));
        // 1900-01-01 00:00:00.5 as pyarrow stores it: second -2208988799 (truncated toward
        // zero) and -0.5 s.
        let seconds = -2_208_988_799 - ORC_EPOCH;
        let healed = heal_nanos(seconds, stored, false).unwrap();
        assert_eq!(stored_nanos(healed), Some(500_000_000));
        // -123 ns, folded without zeros.
        let odd = encode_nanos(-123_456_789) as u64;
        assert_eq!(
            stored_nanos(heal_nanos(seconds, odd, false).unwrap()),
            Some(876_543_211)
        );
    }

    #[test]
    fn what_cannot_be_healed_says_why() {
        let half = encode_nanos(-500_000_000) as u64;
        // 1969-12-31 23:00:00.5: healed where the zone is UTC only.
        let hour = -ORC_EPOCH - 3_599;
        assert!(heal_nanos(hour, half, true).is_ok());
        let e = heal_nanos(hour, half, false).unwrap_err();
        assert!(e.0.contains("within a day of 1970"), "{e:?}");
        // 1969-12-31 23:59:59.5 is second 0 with -0.5 s.
        let e = heal_nanos(-ORC_EPOCH, half, true).unwrap_err();
        assert!(e.0.contains("the second before 1970"), "{e:?}");
        let tiny = encode_nanos(-999_500_000) as u64;
        let e = heal_nanos(-ORC_EPOCH - 10 * 86_400, tiny, true).unwrap_err();
        assert!(e.0.contains("under a millisecond"), "{e:?}");
        assert!(heal_nanos(0, encode_nanos(5) as u64, true).is_err());
        assert!(heal_nanos(0, u64::MAX >> 1, true).is_err());
        assert!(heal_nanos(i64::MAX, half, true).is_err());
    }
}
