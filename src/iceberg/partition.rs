//! Hive partition values (text in the metastore) as Iceberg identity-partition values.

use iceberg::spec::Literal;

use super::hive_type::HiveType;

/// What Hive writes for a null partition value (`hive.exec.default.partition.name`).
pub const HIVE_DEFAULT_PARTITION: &str = "__HIVE_DEFAULT_PARTITION__";

/// The Iceberg value of one Hive partition value of type `t`; `Ok(None)` is null. An error
/// says why the text is not a value of the type (Hive does not check values it is given).
pub fn value(t: &HiveType, text: &str) -> Result<Option<Literal>, String> {
    if text == HIVE_DEFAULT_PARTITION {
        return Ok(None);
    }
    let bad = |e: &dyn std::fmt::Display| format!("{text:?} is not a {t}: {e}");
    let int = |lo: i64, hi: i64| -> Result<i64, String> {
        let v: i64 = text.parse().map_err(|e| bad(&e))?;
        if v < lo || v > hi {
            return Err(bad(&"out of range"));
        }
        // Hive accepts `007` but reads it as 7, and would list it as a different partition
        // from `7`: only the canonical spelling maps one to one.
        if v.to_string() != text {
            return Err(bad(&"not in canonical form"));
        }
        Ok(v)
    };
    Ok(Some(match t {
        HiveType::String | HiveType::Varchar(_) => Literal::string(text),
        HiveType::TinyInt => Literal::int(int(i8::MIN.into(), i8::MAX.into())? as i32),
        HiveType::SmallInt => Literal::int(int(i16::MIN.into(), i16::MAX.into())? as i32),
        HiveType::Int => Literal::int(int(i32::MIN.into(), i32::MAX.into())? as i32),
        HiveType::BigInt => Literal::long(int(i64::MIN, i64::MAX)?),
        HiveType::Boolean => match text {
            "true" => Literal::bool(true),
            "false" => Literal::bool(false),
            _ => return Err(bad(&"expected true or false")),
        },
        HiveType::Date => {
            let d = chrono::NaiveDate::parse_from_str(text, "%Y-%m-%d").map_err(|e| bad(&e))?;
            if d.format("%Y-%m-%d").to_string() != text {
                return Err(bad(&"not in canonical form"));
            }
            let epoch = chrono::NaiveDate::from_ymd_opt(1970, 1, 1).expect("valid date");
            Literal::date((d - epoch).num_days() as i32)
        }
        HiveType::Decimal { scale, .. } => {
            Literal::decimal(decimal_unscaled(text, *scale).ok_or_else(|| bad(&"not exact"))?)
        }
        other => return Err(format!("partition keys of type {other} are not supported")),
    }))
}

/// `text` as an unscaled value at `scale`, when that is exact.
pub(crate) fn decimal_unscaled(text: &str, scale: u32) -> Option<i128> {
    let (negative, digits) = match text.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, text),
    };
    let (int, frac) = digits.split_once('.').unwrap_or((digits, ""));
    let frac = frac.trim_end_matches('0');
    let all_digits = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
    if int.is_empty() || !all_digits(int) || !all_digits(frac) || frac.len() > scale as usize {
        return None;
    }
    let mut v: i128 = 0;
    for b in int.bytes().chain(frac.bytes()) {
        v = v.checked_mul(10)?.checked_add(i128::from(b - b'0'))?;
    }
    v = v.checked_mul(10i128.checked_pow(scale - frac.len() as u32)?)?;
    Some(if negative { -v } else { v })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_by_type() {
        assert_eq!(value(&HiveType::String, HIVE_DEFAULT_PARTITION), Ok(None));
        assert_eq!(
            value(&HiveType::String, "a b").unwrap(),
            Some(Literal::string("a b"))
        );
        assert_eq!(value(&HiveType::Int, "-7").unwrap(), Some(Literal::int(-7)));
        assert!(value(&HiveType::Int, "007").is_err());
        assert!(value(&HiveType::TinyInt, "300").is_err());
        assert_eq!(
            value(&HiveType::Date, "1970-01-02").unwrap(),
            Some(Literal::date(1))
        );
        assert!(value(&HiveType::Date, "2026-1-2").is_err());
        let dec = HiveType::Decimal {
            precision: 5,
            scale: 2,
        };
        assert_eq!(value(&dec, "1.5").unwrap(), Some(Literal::decimal(150)));
        assert!(value(&dec, "1.555").is_err());
        assert_eq!(decimal_unscaled("-12.5", 2), Some(-1250));
        assert_eq!(decimal_unscaled("1.230", 2), Some(123));
        assert_eq!(decimal_unscaled("1e5", 2), None);
    }
}
