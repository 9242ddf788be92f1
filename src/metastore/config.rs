use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use super::error::MetastoreError;
use super::meter::Meter;
use super::security::token::TokenLogin;

/// HMS's own default port, used when a URI names none (as Hive's client does).
const DEFAULT_PORT: u16 = 9083;

/// One metastore endpoint, from a `thrift://host:port` URI.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MetastoreUri {
    pub host: String,
    pub port: u16,
}

impl fmt::Display for MetastoreUri {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.host.contains(':') {
            write!(f, "thrift://[{}]:{}", self.host, self.port)
        } else {
            write!(f, "thrift://{}:{}", self.host, self.port)
        }
    }
}

impl FromStr for MetastoreUri {
    type Err = MetastoreError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let s = s.trim();
        let invalid = |reason: &str| MetastoreError::InvalidUri {
            uri: s.to_owned(),
            reason: reason.to_owned(),
        };
        let url = url::Url::parse(s).map_err(|e| invalid(&e.to_string()))?;
        if !url.scheme().eq_ignore_ascii_case("thrift") {
            return Err(invalid("the scheme must be thrift://"));
        }
        if !matches!(url.path(), "" | "/") || url.query().is_some() || url.fragment().is_some() {
            return Err(invalid("a metastore URI has no path or query"));
        }
        if !url.username().is_empty() || url.password().is_some() {
            return Err(invalid("credentials do not belong in a metastore URI"));
        }
        let host = match url.host() {
            Some(url::Host::Ipv6(ip)) => ip.to_string(),
            Some(host) => host.to_string(),
            None => return Err(invalid("no host")),
        };
        if host.is_empty() {
            return Err(invalid("no host"));
        }
        Ok(MetastoreUri {
            host,
            port: url.port().unwrap_or(DEFAULT_PORT),
        })
    }
}

/// Parses a `hive.metastore.uris`-style list: `thrift://a:9083,thrift://b:9083`. Several URIs
/// mean failover, tried in the order given.
pub fn parse_uris(list: &str) -> Result<Vec<MetastoreUri>, MetastoreError> {
    if list.trim().is_empty() {
        return Err(MetastoreError::InvalidUri {
            uri: list.to_owned(),
            reason: "no metastore URI given".to_owned(),
        });
    }
    list.split(',').map(str::parse).collect()
}

/// How Thrift messages are framed on the socket; must match the server's
/// `hive.metastore.thrift.framed.transport.enabled`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Transport {
    #[default]
    Buffered,
    Framed,
}

impl FromStr for Transport {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.to_ascii_lowercase().as_str() {
            "buffered" => Ok(Transport::Buffered),
            "framed" => Ok(Transport::Framed),
            other => Err(format!(
                "unknown metastore transport {other:?}: use buffered or framed"
            )),
        }
    }
}

impl fmt::Display for Transport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Transport::Buffered => "buffered",
            Transport::Framed => "framed",
        })
    }
}

#[derive(Clone, Debug)]
pub struct MetastoreConfig {
    /// Tried in order; the first that answers is used until it fails.
    pub uris: Vec<MetastoreUri>,
    pub transport: Transport,
    pub connect_timeout: Duration,
    /// Bounds every read and write on the socket, so one stuck call cannot hang a run.
    pub io_timeout: Duration,
    /// Extra attempts for idempotent reads after a broken connection (not for writes).
    pub retries: u32,
    /// First pause between attempts; doubled each time, capped at 8x.
    pub retry_backoff: Duration,
    /// SASL/GSSAPI (Kerberos) with this server principal (`hive/_HOST@REALM`: `_HOST` becomes
    /// each URI's host), as `hive.metastore.sasl.enabled`; replaces the buffered/framed
    /// transport. The client's credential is [`crate::kerberos::login`].
    pub sasl_principal: Option<String>,
    /// The SASL protections this client accepts, in its order of preference
    /// (`hadoop.rpc.protection`: authentication, integrity, privacy); `None`: the strongest the
    /// metastore offers.
    pub sasl_protection: Option<String>,
    /// Log in with this metastore delegation token (SASL DIGEST-MD5) instead of Kerberos, as a
    /// YARN task without a ticket does; used only with `sasl_principal` set (a SASL metastore).
    /// [`super::security::token::from_environment`] finds it where YARN puts it.
    pub delegation_token: Option<TokenLogin>,
    /// `hive.metastore.token.signature`: the service of the metastore token to pick from a
    /// credentials file (empty by default, as in Hive).
    pub token_signature: String,
    /// Counts (and, with `--metastore-rate`, paces) the calls of every connection made from
    /// this configuration or its clones.
    pub meter: Meter,
    /// Partitions asked for per call when a run reads many (`--metastore-page-size`).
    pub page_size: usize,
}

/// Partitions per call by default: large tables have tens of thousands, and one answer holding
/// them all can exceed the server's or the client's message limits (a partition with its
/// storage descriptor and parameters is a few KiB), while 500 keep the calls few.
pub const DEFAULT_PAGE_SIZE: usize = 500;

impl MetastoreConfig {
    /// A configuration with defaults for everything but the URIs.
    pub fn new(uris: &str) -> Result<Self, MetastoreError> {
        Ok(MetastoreConfig {
            uris: parse_uris(uris)?,
            transport: Transport::default(),
            connect_timeout: Duration::from_secs(10),
            io_timeout: Duration::from_secs(120),
            retries: 2,
            retry_backoff: Duration::from_millis(250),
            sasl_principal: None,
            sasl_protection: None,
            delegation_token: None,
            token_signature: String::new(),
            meter: Meter::default(),
            page_size: DEFAULT_PAGE_SIZE,
        })
    }

    pub(crate) fn backoff(&self, attempt: u32) -> Duration {
        self.retry_backoff * 2u32.pow(attempt.saturating_sub(1).min(3))
    }

    pub(crate) fn uri_list(&self) -> String {
        self.uris
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join(",")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn uri(host: &str, port: u16) -> MetastoreUri {
        MetastoreUri {
            host: host.to_owned(),
            port,
        }
    }

    #[test]
    fn parses_a_failover_list() {
        let uris = parse_uris("thrift://a:9083, thrift://b.example.com:19083").unwrap();
        assert_eq!(uris, vec![uri("a", 9083), uri("b.example.com", 19083)]);
    }

    #[test]
    fn port_defaults_to_9083_and_scheme_is_case_insensitive() {
        assert_eq!(parse_uris("THRIFT://hms").unwrap(), vec![uri("hms", 9083)]);
        assert_eq!(parse_uris("thrift://hms:1/").unwrap(), vec![uri("hms", 1)]);
    }

    #[test]
    fn ipv6_round_trips() {
        let u: MetastoreUri = "thrift://[::1]:9083".parse().unwrap();
        assert_eq!(u, uri("::1", 9083));
        assert_eq!(u.to_string(), "thrift://[::1]:9083");
    }

    #[test]
    fn rejects_what_is_not_a_metastore_uri() {
        for bad in [
            "",
            " , ",
            "thrift://a:9083,",
            "http://a:9083",
            "a:9083",
            "thrift://a:9083/db",
            "thrift://a:99999",
            "thrift://user@a:9083",
        ] {
            let err = parse_uris(bad).expect_err(bad);
            assert!(
                matches!(err, MetastoreError::InvalidUri { .. }),
                "{bad}: {err}"
            );
        }
    }

    #[test]
    fn transport_names() {
        assert_eq!("framed".parse::<Transport>().unwrap(), Transport::Framed);
        assert_eq!(
            "Buffered".parse::<Transport>().unwrap(),
            Transport::Buffered
        );
        assert!("sasl".parse::<Transport>().is_err());
    }

    #[test]
    fn backoff_doubles_and_caps() {
        let cfg = MetastoreConfig::new("thrift://a").unwrap();
        let ms: Vec<u128> = (1..=6).map(|a| cfg.backoff(a).as_millis()).collect();
        assert_eq!(ms, vec![250, 500, 1000, 2000, 2000, 2000]);
    }
}
