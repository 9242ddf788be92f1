//! Metastore delegation tokens, for processes without a Kerberos ticket (YARN tasks).
//!
//! A client with a Kerberos login asks the metastore for a token ([`Metastore::delegation_token`]);
//! the token travels to the tasks in a Hadoop credentials file (what
//! `mapreduce.job.credentials.binary` names, and what YARN hands a container as
//! `HADOOP_TOKEN_FILE_LOCATION`), and a task logs in with it over SASL DIGEST-MD5
//! ([`from_environment`] and [`MetastoreConfig::delegation_token`]), as Hive's own tasks do.
//!
//! Formats, all Hadoop's (read in Hadoop's `Token`, `Credentials` and `WritableUtils`):
//! - a token is its Writable form: identifier and password (each a vint length and the bytes),
//!   then kind and service (each a `Text`: a vint length and UTF-8);
//! - its string form (`Token.encodeToUrlString`, what `get_delegation_token` returns) is that
//!   Writable in URL-safe base64 without padding;
//! - a credentials file is `HDTS`, a version byte, then either (0) the Writable form: a vint
//!   count of (alias `Text`, token) pairs and a vint count of (alias, vint length, bytes) secrets,
//!   or (1) a length-delimited protobuf `CredentialsProto`. Hadoop 3.3 and 3.4 write version 0
//!   by default (`writeTokenStorageFile`) and read both; 3.0 to 3.2 wrote version 1. We read
//!   both and write version 0, which every Hadoop 2 and 3 reads.
//!
//! [`Metastore::delegation_token`]: crate::metastore::Metastore::delegation_token
//! [`MetastoreConfig::delegation_token`]: crate::metastore::MetastoreConfig::delegation_token

use std::fmt;
use std::path::{Path, PathBuf};

use base64::Engine as _;

/// The kind Hive's metastore gives its tokens (`DelegationTokenIdentifier.HIVE_DELEGATION_KIND`).
pub const HIVE_DELEGATION_KIND: &str = "HIVE_DELEGATION_TOKEN";

/// The alias we file a metastore token under when its service is empty. Hive's own
/// `SecurityUtils.setTokenStr` adds the token with `UGI.addToken`, whose alias is the token's
/// service, i.e. `hive.metastore.token.signature` (empty by default); an empty alias would
/// collide with any other service-less token in the file. Readers (Hive's
/// `DelegationTokenSelector`, and [`Credentials::metastore_token`]) select by kind and service
/// and never look at the alias.
pub const DEFAULT_ALIAS: &str = "hive.metastore.delegation.token";

/// The environment variable YARN sets in every container: the path of the job's credentials.
pub const TOKEN_FILE_ENV: &str = "HADOOP_TOKEN_FILE_LOCATION";

const MAGIC: &[u8; 4] = b"HDTS";
const VERSION_WRITABLE: u8 = 0;
const VERSION_PROTOBUF: u8 = 1;

/// What went wrong with a token or a credentials file.
#[derive(Debug, thiserror::Error)]
pub enum TokenError {
    #[error("not a Hadoop delegation token string ({0}); pass the string the metastore's get_delegation_token returned")]
    BadString(String),

    #[error(
        "cannot read credentials file {path}: {message}; check {TOKEN_FILE_ENV} or the path given"
    )]
    Read { path: PathBuf, message: String },

    #[error("credentials file {path} is not a readable Hadoop credentials file ({reason}); write it again or point {TOKEN_FILE_ENV} at the job's token file")]
    Corrupt { path: PathBuf, reason: String },

    #[error("cannot write credentials file {path}: {message}; check that its directory exists and is writable")]
    Write { path: PathBuf, message: String },
}

/// A Hadoop delegation token (`org.apache.hadoop.security.token.Token`).
#[derive(Clone, PartialEq, Eq)]
pub struct DelegationToken {
    pub identifier: Vec<u8>,
    pub password: Vec<u8>,
    pub kind: String,
    pub service: String,
}

// The password is a secret: debug output shows everything else.
impl fmt::Debug for DelegationToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DelegationToken")
            .field("kind", &self.kind)
            .field("service", &self.service)
            .field("identifier", &self.identifier())
            .field("password", &"<redacted>")
            .finish()
    }
}

/// The fields of a Hadoop `AbstractDelegationTokenIdentifier` (the metastore's and HDFS's).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TokenIdentifier {
    pub owner: String,
    pub renewer: String,
    pub real_user: String,
    /// Milliseconds since the epoch.
    pub issue_date: i64,
    /// After this (milliseconds since the epoch) the token cannot be renewed any more.
    pub max_date: i64,
    pub sequence_number: i32,
    pub master_key_id: i32,
}

impl DelegationToken {
    /// Decodes `Token.encodeToUrlString` output. Like Hadoop's decoder (commons-codec), it takes
    /// the standard alphabet too, with or without padding.
    pub fn decode(s: &str) -> Result<Self, TokenError> {
        let normal: String = s
            .trim()
            .trim_end_matches('=')
            .chars()
            .map(|c| match c {
                '+' => '-',
                '/' => '_',
                c => c,
            })
            .collect();
        let raw = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(normal.as_bytes())
            .map_err(|e| TokenError::BadString(format!("base64: {e}")))?;
        let mut r = Reader::new(&raw);
        let token = read_token(&mut r).map_err(TokenError::BadString)?;
        if !r.is_empty() {
            return Err(TokenError::BadString(format!(
                "{} bytes after the token",
                r.remaining()
            )));
        }
        Ok(token)
    }

    /// The string form `cancel_delegation_token` takes and Hive stores.
    pub fn encode(&self) -> String {
        let mut raw = Vec::new();
        write_token(&mut raw, self);
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(raw)
    }

    /// Owner, renewer and dates, when the identifier is Hadoop's usual one; `None` for a kind
    /// whose identifier is laid out otherwise.
    pub fn identifier(&self) -> Option<TokenIdentifier> {
        let mut r = Reader::new(&self.identifier);
        let parsed = (|| {
            if r.u8()? != 0 {
                return Err("identifier version is not 0".to_owned());
            }
            Ok(TokenIdentifier {
                owner: r.text()?,
                renewer: r.text()?,
                real_user: r.text()?,
                issue_date: r.vlong()?,
                max_date: r.vlong()?,
                sequence_number: r.vint()?,
                master_key_id: r.vint()?,
            })
        })();
        parsed.ok()
    }

    /// What a message may say about this token: kind, owner and sequence number, no secret.
    pub fn describe(&self) -> String {
        match self.identifier() {
            Some(id) => format!(
                "{} of {} (sequence number {})",
                self.kind, id.owner, id.sequence_number
            ),
            None => self.kind.clone(),
        }
    }

    /// SASL DIGEST-MD5 user name, as Hadoop's `SaslRpcServer.encodeIdentifier`: standard
    /// base64 with padding.
    pub(crate) fn sasl_username(&self) -> String {
        base64::engine::general_purpose::STANDARD.encode(&self.identifier)
    }

    /// SASL DIGEST-MD5 password, as Hadoop's `SaslRpcServer.encodePassword`.
    pub(crate) fn sasl_password(&self) -> String {
        base64::engine::general_purpose::STANDARD.encode(&self.password)
    }
}

/// The tokens and secrets of a Hadoop credentials file, in file order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Credentials {
    pub tokens: Vec<(String, DelegationToken)>,
    pub secrets: Vec<(String, Vec<u8>)>,
}

impl Credentials {
    /// The metastore token as Hive's `DelegationTokenSelector` picks it: kind
    /// `HIVE_DELEGATION_TOKEN` and service equal to `signature`
    /// (`hive.metastore.token.signature`, empty by default).
    pub fn metastore_token(&self, signature: &str) -> Option<&DelegationToken> {
        self.tokens
            .iter()
            .map(|(_, t)| t)
            .find(|t| t.kind == HIVE_DELEGATION_KIND && t.service == signature)
    }

    /// The delegation token whose maximum date comes first, and that date (milliseconds since
    /// the epoch): nothing renews any of them past it, so a job holding these tokens cannot work
    /// beyond it. Only kinds whose identifier is Hadoop's `AbstractDelegationTokenIdentifier`
    /// (HDFS's, the metastore's, YARN's, KMS's) count; a YARN container's file also holds the
    /// job's own token and others laid out otherwise, which carry no such date.
    pub fn first_to_end(&self) -> Option<(&DelegationToken, i64)> {
        self.tokens
            .iter()
            .map(|(_, t)| t)
            .filter(|t| {
                t.kind.ends_with("DELEGATION_TOKEN")
                    || t.kind.ends_with(" delegation")
                    || t.kind == "kms-dt"
            })
            .filter_map(|t| {
                let id = t.identifier()?;
                // A layout we misread would give nonsense dates: better no limit than a wrong one.
                (id.issue_date > 0 && id.max_date > id.issue_date).then_some((t, id.max_date))
            })
            .min_by_key(|(_, end)| *end)
    }

    /// Adds `token` under `alias`, replacing a token of the same alias (as Hadoop's map does).
    pub fn add_token(&mut self, alias: &str, token: DelegationToken) {
        match self.tokens.iter_mut().find(|(a, _)| a == alias) {
            Some(slot) => slot.1 = token,
            None => self.tokens.push((alias.to_owned(), token)),
        }
    }

    /// Parses a credentials file's bytes (either version).
    pub fn parse(bytes: &[u8]) -> Result<Self, String> {
        let mut r = Reader::new(bytes);
        if r.take(4).ok() != Some(MAGIC.as_slice()) {
            return Err("it does not start with HDTS".into());
        }
        let creds = match r.u8()? {
            VERSION_WRITABLE => {
                let mut c = Credentials::default();
                for _ in 0..r.count()? {
                    let alias = r.text()?;
                    c.tokens.push((alias, read_token(&mut r)?));
                }
                for _ in 0..r.count()? {
                    let alias = r.text()?;
                    let n = r.count()?;
                    c.secrets.push((alias, r.take(n)?.to_vec()));
                }
                c
            }
            VERSION_PROTOBUF => parse_protobuf(r.rest())?,
            v => return Err(format!("unknown format version {v}")),
        };
        Ok(creds)
    }

    /// The file's bytes, in format version 0 (Writable).
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = MAGIC.to_vec();
        out.push(VERSION_WRITABLE);
        write_vlong(&mut out, self.tokens.len() as i64);
        for (alias, token) in &self.tokens {
            write_text(&mut out, alias);
            write_token(&mut out, token);
        }
        write_vlong(&mut out, self.secrets.len() as i64);
        for (alias, secret) in &self.secrets {
            write_text(&mut out, alias);
            write_bytes(&mut out, secret);
        }
        out
    }
}

/// Reads a credentials file.
pub fn read_credentials(path: &Path) -> Result<Credentials, TokenError> {
    let bytes = std::fs::read(path).map_err(|e| TokenError::Read {
        path: path.to_owned(),
        message: e.to_string(),
    })?;
    Credentials::parse(&bytes).map_err(|reason| TokenError::Corrupt {
        path: path.to_owned(),
        reason,
    })
}

/// Writes a credentials file holding `tokens` (metastore tokens under their service, or
/// [`DEFAULT_ALIAS`] when it is empty; others under their service), readable by Hadoop as
/// `mapreduce.job.credentials.binary`. Written whole or not at all (a temporary file renamed
/// over), private to the user: it holds secrets.
pub fn write_credentials(path: &Path, tokens: &[DelegationToken]) -> Result<(), TokenError> {
    let mut creds = Credentials::default();
    for t in tokens {
        let alias = if t.service.is_empty() && t.kind == HIVE_DELEGATION_KIND {
            DEFAULT_ALIAS
        } else {
            &t.service
        };
        creds.add_token(alias, t.clone());
    }
    write_credentials_file(path, &creds)
}

/// Writes `creds` to `path` (format version 0), as [`write_credentials`].
pub fn write_credentials_file(path: &Path, creds: &Credentials) -> Result<(), TokenError> {
    let failed = |e: std::io::Error| TokenError::Write {
        path: path.to_owned(),
        message: e.to_string(),
    };
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let mut tmp = tempfile::NamedTempFile::new_in(dir).map_err(failed)?;
    {
        use std::io::Write as _;
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt as _;
            tmp.as_file()
                .set_permissions(std::fs::Permissions::from_mode(0o600))
                .map_err(failed)?;
        }
        tmp.write_all(&creds.to_bytes()).map_err(failed)?;
        tmp.as_file().sync_all().map_err(failed)?;
    }
    tmp.persist(path).map_err(|e| failed(e.error))?;
    Ok(())
}

/// A token to log in with, and where it came from (for messages).
#[derive(Clone, Debug)]
pub struct TokenLogin {
    pub token: DelegationToken,
    /// E.g. "credentials file /x/container_tokens (HADOOP_TOKEN_FILE_LOCATION)".
    pub source: String,
}

/// What a task does: when `HADOOP_TOKEN_FILE_LOCATION` is set, the metastore token in that file
/// whose service is `signature` (`hive.metastore.token.signature`). `None` when the variable is
/// unset or the file holds no such token (e.g. only HDFS tokens): the caller then uses Kerberos,
/// as Hive's client does. A file that is named but unreadable is an error.
pub fn from_environment(signature: &str) -> Result<Option<TokenLogin>, TokenError> {
    let Some(path) = environment_file() else {
        return Ok(None);
    };
    let creds = read_credentials(&path)?;
    Ok(creds.metastore_token(signature).map(|t| TokenLogin {
        token: t.clone(),
        source: format!("credentials file {} ({TOKEN_FILE_ENV})", path.display()),
    }))
}

/// The credentials file `HADOOP_TOKEN_FILE_LOCATION` names, read; `None` when it is unset.
pub fn credentials_from_environment() -> Result<Option<Credentials>, TokenError> {
    environment_file()
        .map(|path| read_credentials(&path))
        .transpose()
}

fn environment_file() -> Option<PathBuf> {
    std::env::var_os(TOKEN_FILE_ENV)
        .filter(|p| !p.is_empty())
        .map(PathBuf::from)
}

// ---------------------------------------------------------------------------------------------
// Hadoop's Writable encodings.

fn read_token(r: &mut Reader<'_>) -> Result<DelegationToken, String> {
    let n = r.count()?;
    let identifier = r.take(n)?.to_vec();
    let n = r.count()?;
    let password = r.take(n)?.to_vec();
    Ok(DelegationToken {
        identifier,
        password,
        kind: r.text()?,
        service: r.text()?,
    })
}

fn write_token(out: &mut Vec<u8>, t: &DelegationToken) {
    write_bytes(out, &t.identifier);
    write_bytes(out, &t.password);
    write_text(out, &t.kind);
    write_text(out, &t.service);
}

fn write_bytes(out: &mut Vec<u8>, b: &[u8]) {
    write_vlong(out, b.len() as i64);
    out.extend_from_slice(b);
}

fn write_text(out: &mut Vec<u8>, s: &str) {
    write_bytes(out, s.as_bytes());
}

/// `WritableUtils.writeVLong`: -112..=127 in one byte; otherwise a first byte saying the sign
/// and how many big-endian bytes follow (-113..=-120 positive, -121..=-128 negative, whose
/// one's complement is stored).
pub(crate) fn write_vlong(out: &mut Vec<u8>, v: i64) {
    if (-112..=127).contains(&v) {
        out.push(v as u8);
        return;
    }
    let (magnitude, base) = if v < 0 { (!v, -120i64) } else { (v, -112i64) };
    let n = 8 - (magnitude.leading_zeros() as i64) / 8;
    out.push((base - n) as u8);
    for i in (0..n).rev() {
        out.push((magnitude >> (i * 8)) as u8);
    }
}

/// A bounds-checked cursor: bad input is an error, never a panic.
struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    fn new(buf: &'a [u8]) -> Self {
        Reader { buf, pos: 0 }
    }

    fn remaining(&self) -> usize {
        self.buf.len() - self.pos
    }

    fn is_empty(&self) -> bool {
        self.remaining() == 0
    }

    fn rest(&mut self) -> &'a [u8] {
        let rest = &self.buf[self.pos..];
        self.pos = self.buf.len();
        rest
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8], String> {
        if n > self.remaining() {
            return Err(format!(
                "{n} bytes announced at offset {}, {} left",
                self.pos,
                self.remaining()
            ));
        }
        let s = &self.buf[self.pos..self.pos + n];
        self.pos += n;
        Ok(s)
    }

    fn u8(&mut self) -> Result<u8, String> {
        Ok(self.take(1)?[0])
    }

    /// `WritableUtils.readVLong`.
    fn vlong(&mut self) -> Result<i64, String> {
        let first = self.u8()? as i8 as i64;
        if first >= -112 {
            return Ok(first);
        }
        let (negative, n) = if first < -120 {
            (true, -120 - first)
        } else {
            (false, -112 - first)
        };
        let mut v: i64 = 0;
        for &b in self.take(n as usize)? {
            v = (v << 8) | i64::from(b);
        }
        Ok(if negative { !v } else { v })
    }

    fn vint(&mut self) -> Result<i32, String> {
        let v = self.vlong()?;
        i32::try_from(v).map_err(|_| format!("{v} does not fit an int"))
    }

    /// A length or count: a vint that must be 0 or more and no more than the bytes left (every
    /// element takes at least one byte), so a corrupt count cannot make us allocate.
    fn count(&mut self) -> Result<usize, String> {
        let at = self.pos;
        let v = self.vint()?;
        usize::try_from(v)
            .ok()
            .filter(|n| *n <= self.remaining())
            .ok_or_else(|| format!("bad length {v} at offset {at}"))
    }

    /// A Hadoop `Text`: a vint length and UTF-8.
    fn text(&mut self) -> Result<String, String> {
        let n = self.count()?;
        let at = self.pos;
        String::from_utf8(self.take(n)?.to_vec())
            .map_err(|_| format!("text at offset {at} is not UTF-8"))
    }
}

// ---------------------------------------------------------------------------------------------
// Format version 1: Hadoop's Security.proto messages, the fields a credentials file uses.

#[derive(Clone, PartialEq, prost::Message)]
struct TokenProto {
    #[prost(bytes = "vec", required, tag = "1")]
    identifier: Vec<u8>,
    #[prost(bytes = "vec", required, tag = "2")]
    password: Vec<u8>,
    #[prost(string, required, tag = "3")]
    kind: String,
    #[prost(string, required, tag = "4")]
    service: String,
}

#[derive(Clone, PartialEq, prost::Message)]
struct CredentialsKvProto {
    #[prost(string, required, tag = "1")]
    alias: String,
    #[prost(message, optional, tag = "2")]
    token: Option<TokenProto>,
    #[prost(bytes = "vec", optional, tag = "3")]
    secret: Option<Vec<u8>>,
}

#[derive(Clone, PartialEq, prost::Message)]
struct CredentialsProto {
    #[prost(message, repeated, tag = "1")]
    tokens: Vec<CredentialsKvProto>,
    #[prost(message, repeated, tag = "2")]
    secrets: Vec<CredentialsKvProto>,
}

/// Version 1 is `CredentialsProto.writeDelimitedTo`: a varint length and the message.
fn parse_protobuf(bytes: &[u8]) -> Result<Credentials, String> {
    use prost::Message as _;
    let proto =
        CredentialsProto::decode_length_delimited(bytes).map_err(|e| format!("protobuf: {e}"))?;
    let mut c = Credentials::default();
    for kv in proto.tokens {
        if let Some(t) = kv.token {
            c.tokens.push((
                kv.alias,
                DelegationToken {
                    identifier: t.identifier,
                    password: t.password,
                    kind: t.kind,
                    service: t.service,
                },
            ));
        }
    }
    for kv in proto.secrets {
        c.secrets.push((kv.alias, kv.secret.unwrap_or_default()));
    }
    Ok(c)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn identifier(owner: &str, seq: i32) -> Vec<u8> {
        let mut id = vec![0];
        write_text(&mut id, owner);
        write_text(&mut id, "tester");
        write_text(&mut id, "");
        write_vlong(&mut id, 1_764_867_036_000);
        write_vlong(&mut id, 1_765_471_836_000);
        write_vlong(&mut id, seq as i64);
        write_vlong(&mut id, 1);
        id
    }

    #[test]
    fn the_first_delegation_token_to_end_bounds_the_job() {
        let ending = |kind: &str, max: i64| {
            let mut id = vec![0];
            write_text(&mut id, "tester");
            write_text(&mut id, "rm");
            write_text(&mut id, "");
            write_vlong(&mut id, 1_000);
            write_vlong(&mut id, max);
            write_vlong(&mut id, 1);
            write_vlong(&mut id, 1);
            DelegationToken {
                identifier: id,
                password: vec![1],
                kind: kind.into(),
                service: "s".into(),
            }
        };
        let job_token = DelegationToken {
            // The MapReduce job token's identifier is the job id as a Text, no dates.
            identifier: b"\x16job_1764867036000_0001".to_vec(),
            password: vec![1],
            kind: "mapreduce.job".into(),
            service: "job_1764867036000_0001".into(),
        };
        let mut creds = Credentials::default();
        creds.add_token("job", job_token);
        assert_eq!(creds.first_to_end(), None);
        creds.add_token("hdfs", ending("HDFS_DELEGATION_TOKEN", 9_000));
        creds.add_token("hive", ending(HIVE_DELEGATION_KIND, 5_000));
        // Dates a misread layout would give are no limit.
        creds.add_token("odd", ending("ODD_DELEGATION_TOKEN", 500));
        creds.add_token("other", ending("SOME_OTHER_KIND", 2_000));
        let (t, end) = creds.first_to_end().unwrap();
        assert_eq!((t.kind.as_str(), end), (HIVE_DELEGATION_KIND, 5_000));
    }

    fn token(kind: &str, service: &str) -> DelegationToken {
        DelegationToken {
            identifier: identifier("tester", 7),
            password: vec![0xde, 0xad, 0xbe, 0xef, 0x00, 0xff],
            kind: kind.into(),
            service: service.into(),
        }
    }

    #[test]
    fn vlongs_are_hadoops() {
        // Values and bytes from WritableUtils' definition.
        let cases: &[(i64, &[u8])] = &[
            (0, &[0x00]),
            (127, &[0x7f]),
            (-112, &[0x90]),
            (128, &[0x8f, 0x80]),
            (255, &[0x8f, 0xff]),
            (256, &[0x8e, 0x01, 0x00]),
            (-113, &[0x87, 0x70]),
            (-256, &[0x87, 0xff]),
            (-257, &[0x86, 0x01, 0x00]),
            (
                i64::MAX,
                &[0x88, 0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff],
            ),
            (
                i64::MIN,
                &[0x80, 0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff],
            ),
        ];
        for (v, bytes) in cases {
            let mut out = Vec::new();
            write_vlong(&mut out, *v);
            assert_eq!(out, *bytes, "{v}");
            assert_eq!(Reader::new(bytes).vlong().unwrap(), *v, "{v}");
        }
    }

    #[test]
    fn url_string_round_trips_and_takes_either_alphabet() {
        let t = token(HIVE_DELEGATION_KIND, "");
        let s = t.encode();
        assert!(!s.contains('=') && !s.contains('+') && !s.contains('/'));
        assert_eq!(DelegationToken::decode(&s).unwrap(), t);
        let mut raw = Vec::new();
        write_token(&mut raw, &t);
        let standard = base64::engine::general_purpose::STANDARD.encode(&raw);
        assert_eq!(DelegationToken::decode(&standard).unwrap(), t);
        let id = t.identifier().unwrap();
        assert_eq!((id.owner.as_str(), id.sequence_number), ("tester", 7));
        assert_eq!(id.max_date, 1_765_471_836_000);
        assert!(!format!("{t:?}").contains("222, 173"));
    }

    #[test]
    fn bad_strings_are_errors_not_panics() {
        for bad in ["", "!!!", "AAAA", "_w", &token("K", "s").encode()[..10]] {
            assert!(
                matches!(DelegationToken::decode(bad), Err(TokenError::BadString(_))),
                "{bad}"
            );
        }
    }

    #[test]
    fn credentials_round_trip_and_the_metastore_token_is_found_among_others() {
        let hdfs = token("HDFS_DELEGATION_TOKEN", "127.0.0.1:8020");
        let hive = token(HIVE_DELEGATION_KIND, "");
        let mut c = Credentials::default();
        c.add_token("127.0.0.1:8020", hdfs.clone());
        c.add_token(DEFAULT_ALIAS, hive.clone());
        c.secrets.push(("s".into(), vec![1, 2, 3]));
        let bytes = c.to_bytes();
        assert_eq!(&bytes[..5], b"HDTS\x00");
        let back = Credentials::parse(&bytes).unwrap();
        assert_eq!(back, c);
        assert_eq!(back.metastore_token(""), Some(&hive));
        assert_eq!(back.metastore_token("other"), None);
    }

    #[test]
    fn version_1_protobuf_files_are_read() {
        use prost::Message as _;
        let t = token(HIVE_DELEGATION_KIND, "sig");
        let proto = CredentialsProto {
            tokens: vec![CredentialsKvProto {
                alias: "sig".into(),
                token: Some(TokenProto {
                    identifier: t.identifier.clone(),
                    password: t.password.clone(),
                    kind: t.kind.clone(),
                    service: t.service.clone(),
                }),
                secret: None,
            }],
            secrets: vec![CredentialsKvProto {
                alias: "k".into(),
                token: None,
                secret: Some(vec![9]),
            }],
        };
        let mut bytes = b"HDTS\x01".to_vec();
        bytes.extend(proto.encode_length_delimited_to_vec());
        let c = Credentials::parse(&bytes).unwrap();
        assert_eq!(c.metastore_token("sig"), Some(&t));
        assert_eq!(c.secrets, vec![("k".to_owned(), vec![9])]);
    }

    #[test]
    fn corrupt_files_are_errors_naming_the_reason() {
        let good = {
            let mut c = Credentials::default();
            c.add_token("a", token(HIVE_DELEGATION_KIND, ""));
            c.to_bytes()
        };
        assert!(Credentials::parse(b"").is_err());
        assert!(Credentials::parse(b"HDTX\x00\x00\x00").is_err());
        assert!(Credentials::parse(b"HDTS\x07")
            .unwrap_err()
            .contains("version 7"));
        // Every truncation fails cleanly.
        for n in 5..good.len() {
            assert!(Credentials::parse(&good[..n]).is_err(), "{n}");
        }
        // A huge count is refused before anything is allocated.
        assert!(Credentials::parse(b"HDTS\x00\x8c\x7f\xff\xff\xff").is_err());
        assert!(Credentials::parse(b"HDTS\x01\x05garbage").is_err());
    }

    #[test]
    fn files_are_written_private_and_read_back() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("tokens");
        let t = token(HIVE_DELEGATION_KIND, "");
        write_credentials(&path, std::slice::from_ref(&t)).unwrap();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt as _;
            let mode = std::fs::metadata(&path).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
        }
        let c = read_credentials(&path).unwrap();
        assert_eq!(c.tokens, vec![(DEFAULT_ALIAS.to_owned(), t)]);
        std::fs::write(&path, b"HDTS\x00\x05").unwrap();
        let e = read_credentials(&path).unwrap_err().to_string();
        assert!(
            e.contains(&path.display().to_string()) && !e.contains('\n'),
            "{e}"
        );
    }
}
