//! Hive column types as the metastore spells them (`array<struct<a:int,b:string>>`), parsed so
//! they can be turned into Iceberg types and compared with the types inside ORC files.
//!
//! Written by hand: the metastore gives types as text, and no crate parses Hive's type grammar.

use std::fmt;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HiveType {
    Boolean,
    TinyInt,
    SmallInt,
    Int,
    BigInt,
    Float,
    Double,
    String,
    Char(u32),
    Varchar(u32),
    Binary,
    Date,
    Timestamp,
    Decimal {
        precision: u32,
        scale: u32,
    },
    Array(Box<HiveType>),
    Map(Box<HiveType>, Box<HiveType>),
    Struct(Vec<(String, HiveType)>),
    Union(Vec<HiveType>),
    /// A type Iceberg has no counterpart for (`interval_*`, `void`, `timestamp with local time
    /// zone`, ...): named as written.
    Other(String),
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("cannot parse the Hive type {text:?}: {reason}")]
pub struct ParseError {
    pub text: String,
    pub reason: String,
}

impl HiveType {
    pub fn parse(text: &str) -> Result<HiveType, ParseError> {
        let mut p = Parser {
            s: text.as_bytes(),
            i: 0,
        };
        let fail = |reason: String| ParseError {
            text: text.to_owned(),
            reason,
        };
        let t = p.ty().map_err(fail)?;
        p.ws();
        if p.i != p.s.len() {
            return Err(fail(format!("unexpected text at {}", p.i)));
        }
        Ok(t)
    }
}

struct Parser<'a> {
    s: &'a [u8],
    i: usize,
}

impl Parser<'_> {
    fn ws(&mut self) {
        while self.i < self.s.len() && self.s[self.i].is_ascii_whitespace() {
            self.i += 1;
        }
    }

    fn eat(&mut self, c: u8) -> bool {
        self.ws();
        if self.s.get(self.i) == Some(&c) {
            self.i += 1;
            true
        } else {
            false
        }
    }

    fn expect(&mut self, c: u8) -> Result<(), String> {
        if self.eat(c) {
            Ok(())
        } else {
            Err(format!("expected '{}' at {}", c as char, self.i))
        }
    }

    /// A word: letters, digits, `_`, and spaces inside multi-word names are handled by the
    /// caller. Backquoted names keep what is inside the quotes.
    fn word(&mut self) -> Result<String, String> {
        self.ws();
        if self.eat(b'`') {
            let start = self.i;
            while self.i < self.s.len() && self.s[self.i] != b'`' {
                self.i += 1;
            }
            let w = String::from_utf8_lossy(&self.s[start..self.i]).into_owned();
            self.expect(b'`')?;
            return Ok(w);
        }
        let start = self.i;
        while self.i < self.s.len()
            && !matches!(self.s[self.i], b'<' | b'>' | b',' | b':' | b'(' | b')')
        {
            self.i += 1;
        }
        let w = String::from_utf8_lossy(&self.s[start..self.i])
            .trim()
            .to_owned();
        if w.is_empty() {
            return Err(format!("expected a name at {start}"));
        }
        Ok(w)
    }

    fn number(&mut self) -> Result<u32, String> {
        self.word()?
            .parse()
            .map_err(|e| format!("bad number at {}: {e}", self.i))
    }

    fn ty(&mut self) -> Result<HiveType, String> {
        let name = self.word()?.to_ascii_lowercase();
        Ok(match name.as_str() {
            "boolean" => HiveType::Boolean,
            "tinyint" => HiveType::TinyInt,
            "smallint" => HiveType::SmallInt,
            "int" | "integer" => HiveType::Int,
            "bigint" => HiveType::BigInt,
            "float" => HiveType::Float,
            "double" | "double precision" => HiveType::Double,
            "string" => HiveType::String,
            "binary" => HiveType::Binary,
            "date" => HiveType::Date,
            "timestamp" => HiveType::Timestamp,
            "char" | "varchar" => {
                self.expect(b'(')?;
                let n = self.number()?;
                self.expect(b')')?;
                if name == "char" {
                    HiveType::Char(n)
                } else {
                    HiveType::Varchar(n)
                }
            }
            "decimal" | "numeric" => {
                // Hive's defaults: decimal = decimal(10,0), decimal(p) = decimal(p,0).
                let (mut precision, mut scale) = (10, 0);
                if self.eat(b'(') {
                    precision = self.number()?;
                    if self.eat(b',') {
                        scale = self.number()?;
                    }
                    self.expect(b')')?;
                }
                HiveType::Decimal { precision, scale }
            }
            "array" => {
                self.expect(b'<')?;
                let e = self.ty()?;
                self.expect(b'>')?;
                HiveType::Array(Box::new(e))
            }
            "map" => {
                self.expect(b'<')?;
                let k = self.ty()?;
                self.expect(b',')?;
                let v = self.ty()?;
                self.expect(b'>')?;
                HiveType::Map(Box::new(k), Box::new(v))
            }
            "struct" => {
                self.expect(b'<')?;
                let mut fields = vec![];
                if !self.eat(b'>') {
                    loop {
                        let n = self.word()?;
                        self.expect(b':')?;
                        fields.push((n, self.ty()?));
                        if self.eat(b'>') {
                            break;
                        }
                        self.expect(b',')?;
                    }
                }
                HiveType::Struct(fields)
            }
            "uniontype" => {
                self.expect(b'<')?;
                let mut arms = vec![self.ty()?];
                while self.eat(b',') {
                    arms.push(self.ty()?);
                }
                self.expect(b'>')?;
                HiveType::Union(arms)
            }
            _ => HiveType::Other(name),
        })
    }
}

impl fmt::Display for HiveType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HiveType::Boolean => f.write_str("boolean"),
            HiveType::TinyInt => f.write_str("tinyint"),
            HiveType::SmallInt => f.write_str("smallint"),
            HiveType::Int => f.write_str("int"),
            HiveType::BigInt => f.write_str("bigint"),
            HiveType::Float => f.write_str("float"),
            HiveType::Double => f.write_str("double"),
            HiveType::String => f.write_str("string"),
            HiveType::Char(n) => write!(f, "char({n})"),
            HiveType::Varchar(n) => write!(f, "varchar({n})"),
            HiveType::Binary => f.write_str("binary"),
            HiveType::Date => f.write_str("date"),
            HiveType::Timestamp => f.write_str("timestamp"),
            HiveType::Decimal { precision, scale } => write!(f, "decimal({precision},{scale})"),
            HiveType::Array(e) => write!(f, "array<{e}>"),
            HiveType::Map(k, v) => write!(f, "map<{k},{v}>"),
            HiveType::Struct(fields) => {
                f.write_str("struct<")?;
                for (i, (n, t)) in fields.iter().enumerate() {
                    if i > 0 {
                        f.write_str(",")?;
                    }
                    write!(f, "{n}:{t}")?;
                }
                f.write_str(">")
            }
            HiveType::Union(arms) => {
                f.write_str("uniontype<")?;
                for (i, t) in arms.iter().enumerate() {
                    if i > 0 {
                        f.write_str(",")?;
                    }
                    write!(f, "{t}")?;
                }
                f.write_str(">")
            }
            HiveType::Other(name) => f.write_str(name),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_nested_types_and_round_trips() {
        for text in [
            "int",
            "decimal(38,18)",
            "varchar(10)",
            "array<struct<a:int,b:map<string,array<double>>>>",
            "uniontype<int,string>",
        ] {
            assert_eq!(HiveType::parse(text).unwrap().to_string(), text);
        }
        assert_eq!(
            HiveType::parse("decimal").unwrap(),
            HiveType::Decimal {
                precision: 10,
                scale: 0
            }
        );
        assert_eq!(
            HiveType::parse("STRUCT< `a b` : INT >").unwrap(),
            HiveType::Struct(vec![("a b".into(), HiveType::Int)])
        );
        assert_eq!(
            HiveType::parse("interval_day_time").unwrap(),
            HiveType::Other("interval_day_time".into())
        );
    }

    #[test]
    fn bad_types_are_errors() {
        for text in [
            "array<int",
            "map<int>",
            "decimal(x)",
            "struct<a>",
            "int extra>",
        ] {
            assert!(HiveType::parse(text).is_err(), "{text}");
        }
    }
}
