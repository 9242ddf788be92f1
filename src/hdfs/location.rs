//! Locations as the metastore stores them: a filesystem name and a path, kept as written.

use serde::Serialize;

use super::error::FsError;

/// A metastore location split into its filesystem (`hdfs://nn:8020`) and its path.
///
/// The path is kept exactly as written: Hive's partition directories contain literal `%XX`
/// sequences (its own escaping), spaces and non-ASCII characters, so URL parsing or
/// percent-decoding would name a different directory.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
pub struct Location {
    /// `scheme://authority`, or `scheme://` when the location relies on the default filesystem.
    pub fs: String,
    pub path: String,
}

impl Location {
    pub fn parse(location: &str) -> Result<Self, FsError> {
        let bad = || FsError::BadLocation(location.to_string());
        let (scheme, rest) = location.split_once("://").ok_or_else(bad)?;
        let scheme = scheme.to_ascii_lowercase();
        if scheme != "hdfs" && scheme != "viewfs" {
            return Err(bad());
        }
        let (authority, path) = match rest.find('/') {
            Some(i) => rest.split_at(i),
            None => (rest, "/"),
        };
        // Hadoop normalises repeated and trailing slashes; do the same so two spellings of a
        // directory compare equal.
        let mut norm = String::with_capacity(path.len());
        for part in path.split('/').filter(|p| !p.is_empty()) {
            norm.push('/');
            norm.push_str(part);
        }
        if norm.is_empty() {
            norm.push('/');
        }
        Ok(Location {
            fs: format!("{scheme}://{authority}"),
            path: norm,
        })
    }
}

impl Location {
    pub fn child(&self, name: &str) -> Location {
        let sep = if self.path.ends_with('/') { "" } else { "/" };
        Location {
            fs: self.fs.clone(),
            path: format!("{}{sep}{name}", self.path),
        }
    }

    /// Whether `self` is `other` or lies below it.
    pub fn is_within(&self, other: &Location) -> bool {
        self.fs == other.fs
            && (self.path == other.path
                || other.path == "/"
                || self.path.starts_with(&format!("{}/", other.path)))
    }
}

impl std::fmt::Display for Location {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}{}", self.fs, self.path)
    }
}

/// The directories above `target`, nearest first, `/` last.
pub(super) fn ancestors(target: &Location) -> Vec<Location> {
    let mut out = Vec::new();
    let mut path = target.path.as_str();
    while let Some((parent, _)) = path.rsplit_once('/') {
        let parent = if parent.is_empty() { "/" } else { parent };
        out.push(Location {
            fs: target.fs.clone(),
            path: parent.to_string(),
        });
        if parent == "/" {
            break;
        }
        path = parent;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ancestors_nearest_first() {
        let l = Location::parse("hdfs://nn/ez/t/k=1").unwrap();
        let got: Vec<String> = ancestors(&l).iter().map(|a| a.path.clone()).collect();
        assert_eq!(got, ["/ez/t", "/ez", "/"]);
    }

    #[test]
    fn parses_locations_without_decoding() {
        let l = Location::parse("hdfs://nn:8020/warehouse/t/k=a%2Fb/c=é x").unwrap();
        assert_eq!(l.fs, "hdfs://nn:8020");
        assert_eq!(l.path, "/warehouse/t/k=a%2Fb/c=é x");
        assert_eq!(l.to_string(), "hdfs://nn:8020/warehouse/t/k=a%2Fb/c=é x");
    }

    #[test]
    fn normalises_slashes_and_default_fs() {
        let l = Location::parse("HDFS:///a//b/").unwrap();
        assert_eq!((l.fs.as_str(), l.path.as_str()), ("hdfs://", "/a/b"));
        let l = Location::parse("viewfs://cluster").unwrap();
        assert_eq!((l.fs.as_str(), l.path.as_str()), ("viewfs://cluster", "/"));
    }

    #[test]
    fn refuses_other_filesystems() {
        for bad in ["s3a://b/t", "file:/tmp/t", "/warehouse/t", ""] {
            assert!(Location::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn within() {
        let t = Location::parse("hdfs://nn/w/t").unwrap();
        assert!(t.child("k=1").is_within(&t));
        assert!(t.is_within(&t));
        assert!(!Location::parse("hdfs://nn/w/t2").unwrap().is_within(&t));
        assert!(!Location::parse("hdfs://other/w/t/k=1")
            .unwrap()
            .is_within(&t));
    }
}
