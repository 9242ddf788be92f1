//! Where the metastore is and how to talk to it, found the way Hadoop admins expect: a flag
//! first, then `$HIVE_CONF_DIR/hive-site.xml`, then the `HMS_URI` environment variable.
//!
//! HDFS settings are not read here: hdfs-native reads `core-site.xml` and `hdfs-site.xml` from
//! `HADOOP_CONF_DIR` itself, exactly as the Hadoop tools do.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{bail, Context, Result};

use crate::metastore::{MetastoreConfig, Transport};

/// Reads a Hadoop-style `*-site.xml` (`<configuration><property><name/><value/>...`).
/// Like hdfs-native, no `${var}` substitution: a value that uses it is kept as written.
pub fn read_site_xml(path: &Path) -> Result<BTreeMap<String, String>> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    let doc = roxmltree::Document::parse(&text)
        .with_context(|| format!("{} is not valid XML", path.display()))?;
    let mut out = BTreeMap::new();
    for prop in doc.descendants().filter(|n| n.has_tag_name("property")) {
        let child = |tag: &str| {
            prop.children()
                .find(|c| c.has_tag_name(tag))
                .and_then(|c| c.text())
                .map(|t| t.trim().to_string())
        };
        if let (Some(name), Some(value)) = (child("name"), child("value")) {
            out.insert(name, value);
        }
    }
    Ok(out)
}

/// Parses Hadoop duration values: `600`, `600s`, `10m`, `5000ms`, `1h`. A bare number is in
/// `default_unit`, as `Configuration.getTimeDuration` does.
pub fn parse_duration(value: &str, default_unit: Duration) -> Option<Duration> {
    let v = value.trim().to_ascii_lowercase();
    let split = v.find(|c: char| !c.is_ascii_digit()).unwrap_or(v.len());
    let (num, unit) = v.split_at(split);
    let n: u64 = num.parse().ok()?;
    let unit = match unit.trim() {
        "" => default_unit,
        "ms" => Duration::from_millis(1),
        "s" | "sec" => Duration::from_secs(1),
        "m" | "min" => Duration::from_secs(60),
        "h" => Duration::from_secs(3600),
        "d" => Duration::from_secs(86400),
        _ => return None,
    };
    unit.checked_mul(u32::try_from(n).ok()?)
}

/// Where the metastore settings came from, for error messages ("from --metastore", ...).
pub struct Resolved {
    pub config: MetastoreConfig,
    pub source: String,
}

/// Reads `$HIVE_CONF_DIR/hive-site.xml` if there is one.
fn hive_site() -> Result<Option<(PathBuf, BTreeMap<String, String>)>> {
    let Some(dir) = std::env::var_os("HIVE_CONF_DIR") else {
        return Ok(None);
    };
    let path = PathBuf::from(dir).join("hive-site.xml");
    if !path.exists() {
        return Ok(None);
    }
    let conf = read_site_xml(&path)?;
    Ok(Some((path, conf)))
}

/// `hadoop.rpc.protection` of `$HADOOP_CONF_DIR/core-site.xml`, when set there.
fn core_site_protection() -> Result<Option<String>> {
    let Some(dir) = std::env::var_os("HADOOP_CONF_DIR") else {
        return Ok(None);
    };
    let path = PathBuf::from(dir).join("core-site.xml");
    if !path.exists() {
        return Ok(None);
    }
    Ok(read_site_xml(&path)?
        .remove("hadoop.rpc.protection")
        .filter(|v| !v.trim().is_empty()))
}

/// Resolves the metastore client settings. `flag_uris`, `flag_framed` and `flag_timeout` win
/// when given; then `hive-site.xml`; then `HMS_URI`.
pub fn metastore(
    flag_uris: Option<&str>,
    flag_framed: bool,
    flag_timeout: Option<Duration>,
) -> Result<Resolved> {
    let site = hive_site()?;
    // Hive 3+ standalone metastores name keys `metastore.*`; clients still use `hive.*`.
    let lookup = |keys: &[&str]| {
        site.as_ref()
            .and_then(|(_, conf)| keys.iter().find_map(|k| conf.get(*k).cloned()))
            .filter(|v| !v.trim().is_empty())
    };
    let (uris, source) = if let Some(u) = flag_uris {
        (u.to_string(), "--metastore".to_string())
    } else if let Some(u) = lookup(&["hive.metastore.uris", "metastore.thrift.uris"]) {
        let path = site.as_ref().map(|(p, _)| p.display().to_string());
        (
            u,
            format!("hive.metastore.uris in {}", path.unwrap_or_default()),
        )
    } else if let Some(u) = std::env::var("HMS_URI")
        .ok()
        .filter(|v| !v.trim().is_empty())
    {
        (u, "HMS_URI".to_string())
    } else {
        bail!(
            "no metastore given: pass --metastore thrift://host:9083, set HIVE_CONF_DIR to a \
             directory with a hive-site.xml that sets hive.metastore.uris, or set HMS_URI"
        );
    };
    let mut config = MetastoreConfig::new(&uris).with_context(|| format!("from {source}"))?;
    let framed = flag_framed
        || lookup(&[
            "hive.metastore.thrift.framed.transport.enabled",
            "metastore.thrift.framed.transport.enabled",
        ])
        .is_some_and(|v| v.eq_ignore_ascii_case("true"));
    if framed {
        config.transport = Transport::Framed;
    }
    // Kerberos: SASL/GSSAPI to the principal named here (empty when unset: the caller must
    // then have one from the command line, or refuses).
    let sasl = lookup(&["hive.metastore.sasl.enabled", "metastore.sasl.enabled"])
        .is_some_and(|v| v.eq_ignore_ascii_case("true"));
    if sasl {
        config.sasl_principal = Some(
            lookup(&[
                "hive.metastore.kerberos.principal",
                "metastore.kerberos.principal",
            ])
            .unwrap_or_default(),
        );
    }
    // Which metastore token a task picks from its credentials file (Hive's selector).
    if let Some(sig) = lookup(&[
        "hive.metastore.token.signature",
        "metastore.token.signature",
    ]) {
        config.token_signature = sig;
    }
    // As a Hive client finds it: hive-site.xml, else core-site.xml of HADOOP_CONF_DIR.
    config.sasl_protection = match lookup(&["hadoop.rpc.protection"]) {
        Some(v) => Some(v),
        None => core_site_protection()?,
    };
    let timeout = flag_timeout.or_else(|| {
        lookup(&[
            "hive.metastore.client.socket.timeout",
            "metastore.client.socket.timeout",
        ])
        .and_then(|v| parse_duration(&v, Duration::from_secs(1)))
    });
    if let Some(t) = timeout {
        config.io_timeout = t;
        config.connect_timeout = config.connect_timeout.min(t);
    }
    Ok(Resolved { config, source })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_site_xml() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("hive-site.xml");
        std::fs::write(
            &p,
            r#"<?xml version="1.0"?>
<configuration>
  <property><name>hive.metastore.uris</name><value> thrift://a:9083,thrift://b:9083 </value></property>
  <property><name>empty</name><value></value></property>
  <property><description>no name</description><value>x</value></property>
</configuration>"#,
        )
        .unwrap();
        let conf = read_site_xml(&p).unwrap();
        assert_eq!(
            conf.get("hive.metastore.uris").unwrap(),
            "thrift://a:9083,thrift://b:9083"
        );
        assert!(!conf.contains_key("empty"));
        assert_eq!(conf.len(), 1);
    }

    #[test]
    fn durations_like_hadoop() {
        let s = Duration::from_secs(1);
        assert_eq!(parse_duration("600", s), Some(Duration::from_secs(600)));
        assert_eq!(parse_duration("600s", s), Some(Duration::from_secs(600)));
        assert_eq!(
            parse_duration("5000ms", s),
            Some(Duration::from_millis(5000))
        );
        assert_eq!(parse_duration("10m", s), Some(Duration::from_secs(600)));
        assert_eq!(parse_duration("1h", s), Some(Duration::from_secs(3600)));
        assert_eq!(parse_duration("soon", s), None);
        assert_eq!(parse_duration("", s), None);
    }
}
