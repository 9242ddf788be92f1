//! The synchronous core: one connection at a time, failover across URIs, retries of
//! idempotent reads, and the request-style/legacy method fallback.

use std::collections::BTreeSet;
use std::error::Error as StdError;
use std::io::{self, Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::sync::{Arc, Mutex};

use thrift::protocol::{TBinaryInputProtocol, TBinaryOutputProtocol};
use thrift::transport::{
    TBufferedReadTransport, TBufferedWriteTransport, TFramedReadTransport, TFramedWriteTransport,
};
use thrift::{ApplicationErrorKind, TransportErrorKind};

use super::config::{MetastoreConfig, MetastoreUri, Transport};
use super::error::{one_line, MetastoreError};
use super::gen::{self, TThriftHiveMetastoreSyncClient};
use super::meter::Metered;
use super::security::digest_md5::DigestMd5;
use super::security::gssapi;
use super::security::sasl::{self, Failure as SaslFailure, Mechanism as _};
use super::security::token::TokenLogin;

pub(crate) type Client = gen::ThriftHiveMetastoreSyncClient<
    TBinaryInputProtocol<Box<dyn Read + Send>>,
    Metered<TBinaryOutputProtocol<Box<dyn Write + Send>>>,
>;

/// Whether a call may be sent again after the connection broke mid-call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Call {
    /// Reads (and heartbeats): repeating them changes nothing.
    Idempotent,
    /// Writes: the server may have applied the first attempt, so never resend automatically.
    Once,
}

/// Remembers, per connection, which request-style methods the server lacks, so that an older
/// metastore costs one failed round trip per method rather than one per call.
#[derive(Debug, Default)]
pub(crate) struct Fallbacks {
    missing: BTreeSet<&'static str>,
}

impl Fallbacks {
    /// Calls `preferred` unless this server already said it lacks it; on UNKNOWN_METHOD
    /// remembers that and calls `legacy` instead.
    pub(crate) fn call<C, T>(
        &mut self,
        ctx: &mut C,
        preferred: &'static str,
        request: impl FnOnce(&mut C) -> thrift::Result<T>,
        legacy: impl FnOnce(&mut C) -> thrift::Result<T>,
    ) -> thrift::Result<T> {
        if !self.missing.contains(preferred) {
            match request(ctx) {
                Err(e) if is_unknown_method(&e) => {
                    tracing::debug!(
                        method = preferred,
                        "metastore lacks it; using the legacy call"
                    );
                    self.missing.insert(preferred);
                }
                other => return other,
            }
        }
        legacy(ctx)
    }

    pub(crate) fn missing(&self) -> Vec<&'static str> {
        self.missing.iter().copied().collect()
    }
}

fn is_unknown_method(e: &thrift::Error) -> bool {
    matches!(e, thrift::Error::Application(a) if a.kind == ApplicationErrorKind::UnknownMethod)
}

/// A socket whose timeouts surface as `TimedOut`: on Unix an expired read timeout is reported
/// as `WouldBlock`, which the thrift crate would file as an unknown transport error.
struct Socket(TcpStream);

fn timed_out(e: io::Error) -> io::Error {
    if e.kind() == io::ErrorKind::WouldBlock {
        io::Error::new(io::ErrorKind::TimedOut, "timed out")
    } else {
        e
    }
}

impl Read for Socket {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.0.read(buf).map_err(timed_out)
    }
}

impl Write for Socket {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.write(buf).map_err(timed_out)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.0.flush().map_err(timed_out)
    }
}

struct Connection {
    client: Client,
    fallbacks: Fallbacks,
    uri: usize,
    /// The connection's socket, to see whether the server closed it while it was idle.
    probe: TcpStream,
}

impl Connection {
    /// Whether the server has closed the connection (or reset it) since its last answer, as it
    /// does when it restarts or drops idle clients. A request sent on such a connection fails,
    /// and for a write the client could not tell whether it was applied; caught here it never
    /// left, and a new connection serves it. Between calls nothing is due from the server, so
    /// anything readable means the connection is gone (end of stream, a reset, or bytes out of
    /// turn).
    fn closed_by_server(&self) -> bool {
        if self.probe.set_nonblocking(true).is_err() {
            return false;
        }
        let readable = self.probe.peek(&mut [0u8; 1]);
        // The socket is shared with the transport's halves, which need it blocking.
        let restored = self.probe.set_nonblocking(false).is_ok();
        match readable {
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => !restored,
            _ => true,
        }
    }
}

fn tcp_connect(cfg: &MetastoreConfig, uri: &MetastoreUri) -> Result<TcpStream, String> {
    let addrs = (uri.host.as_str(), uri.port)
        .to_socket_addrs()
        .map_err(|e| format!("{uri}: cannot resolve {}: {e}", uri.host))?;
    let mut last = format!("{uri}: {} resolves to no address", uri.host);
    for addr in addrs {
        match TcpStream::connect_timeout(&addr, cfg.connect_timeout) {
            Ok(stream) => return Ok(stream),
            Err(e) => last = format!("{uri}: {}", timed_out(e)),
        }
    }
    Err(last)
}

/// Why a connection could not be opened.
enum OpenError {
    /// Not reachable, or not answering as a metastore.
    Network(String),
    /// Kerberos (SASL/GSSAPI) failed: the message names the fix.
    Auth(String),
    /// The metastore refused the delegation token (SASL DIGEST-MD5).
    TokenRejected(String),
}

impl From<String> for OpenError {
    fn from(s: String) -> Self {
        OpenError::Network(s)
    }
}

type Halves = (Box<dyn Read + Send>, Box<dyn Write + Send>);

/// The metastore and this client share no SASL protection (GSSAPI and DIGEST-MD5 alike).
fn no_common_qop(uri: &MetastoreUri, offered: &str, wanted: &str) -> String {
    format!(
        "{uri} offers SASL protection {offered}, this client accepts only {wanted}: set \
         hadoop.rpc.protection (hive-site.xml or core-site.xml) to one the metastore offers"
    )
}

/// Authenticates with SASL/GSSAPI on `stream` and returns its framed halves.
fn sasl_open(
    stream: &TcpStream,
    uri: &MetastoreUri,
    pattern: &str,
    protection: Option<&str>,
) -> Result<Halves, OpenError> {
    let server = crate::kerberos::server_principal(pattern, &uri.host);
    let login = crate::kerberos::login();
    let setup = |e: io::Error| OpenError::Network(format!("{uri}: {e}"));
    let ctx = gssapi::Context::new(&server, login.principal.as_deref(), login.keytab.as_deref())
        .map_err(|e| OpenError::Auth(e.explain(&server)))?;
    let wanted = protection
        .map(sasl::Qop::parse_list)
        .transpose()
        .map_err(OpenError::Auth)?;
    let mut mech = sasl::Gssapi::new(ctx, wanted);
    let mut handshake = Socket(stream.try_clone().map_err(setup)?);
    sasl::negotiate(&mut handshake, &mut mech).map_err(|f| match f {
        SaslFailure::Gss(e) => OpenError::Auth(e.explain(&server)),
        SaslFailure::Refused(msg) => OpenError::Auth(format!(
            "{uri} refused the Kerberos login ({}); check that its principal is {server} \
             (hive.metastore.kerberos.principal / --metastore-principal) and that it trusts \
             this realm",
            one_line(&msg)
        )),
        SaslFailure::NoCommonQop { offered, wanted } => {
            OpenError::Auth(no_common_qop(uri, &offered, &wanted))
        }
        SaslFailure::Protocol(msg) => OpenError::Network(format!(
            "{uri} does not speak SASL ({msg}); is hive.metastore.sasl.enabled true on the \
             server? Without Kerberos, drop --metastore-sasl / hive.metastore.sasl.enabled"
        )),
        SaslFailure::Io(e) if e.kind() == io::ErrorKind::UnexpectedEof => {
            OpenError::Network(format!(
                "{uri} closed the connection during the SASL handshake; is \
                 hive.metastore.sasl.enabled true on the server?"
            ))
        }
        SaslFailure::Io(e) => OpenError::Network(format!("{uri}: {}", timed_out(e))),
    })?;
    tracing::debug!(
        %uri,
        server = %server,
        qop = mech.qop().name(),
        "metastore SASL/GSSAPI authenticated"
    );
    let reader = Socket(stream.try_clone().map_err(setup)?);
    let writer = Socket(stream.try_clone().map_err(setup)?);
    let (r, w) = sasl::split(reader, writer, mech);
    Ok((Box::new(r), Box::new(w)))
}

/// Authenticates with SASL DIGEST-MD5 and a delegation token, as a Hive task does.
fn digest_open(
    stream: &TcpStream,
    uri: &MetastoreUri,
    login: &TokenLogin,
    protection: Option<&str>,
) -> Result<Halves, OpenError> {
    let setup = |e: io::Error| OpenError::Network(format!("{uri}: {e}"));
    let wanted = protection
        .map(sasl::Qop::parse_list)
        .transpose()
        .map_err(OpenError::Auth)?;
    let mut mech = DigestMd5::new(&login.token, wanted);
    let mut handshake = Socket(stream.try_clone().map_err(setup)?);
    sasl::negotiate(&mut handshake, &mut mech).map_err(|f| match f {
        // DIGEST-MD5 fails on the server when the token is unknown to its store (cancelled,
        // expired and removed) or its password does not match.
        SaslFailure::Refused(msg) => OpenError::TokenRejected(one_line(&msg)),
        SaslFailure::NoCommonQop { offered, wanted } => {
            OpenError::Auth(no_common_qop(uri, &offered, &wanted))
        }
        SaslFailure::Gss(e) => OpenError::Auth(format!("{e:?}")),
        SaslFailure::Protocol(msg) => OpenError::Network(format!(
            "{uri} does not complete SASL DIGEST-MD5 ({msg}); is hive.metastore.sasl.enabled \
             true on the server?"
        )),
        SaslFailure::Io(e) if e.kind() == io::ErrorKind::UnexpectedEof => {
            OpenError::Network(format!(
                "{uri} closed the connection during the SASL handshake; is \
                 hive.metastore.sasl.enabled true on the server?"
            ))
        }
        SaslFailure::Io(e) => OpenError::Network(format!("{uri}: {}", timed_out(e))),
    })?;
    tracing::debug!(%uri, token = %login.token.describe(), from = %login.source,
        qop = mech.qop().name(), cipher = mech.cipher().unwrap_or("none"),
        "metastore SASL/DIGEST-MD5 authenticated with a delegation token");
    let reader = Socket(stream.try_clone().map_err(setup)?);
    let writer = Socket(stream.try_clone().map_err(setup)?);
    let (r, w) = sasl::split(reader, writer, mech);
    Ok((Box::new(r), Box::new(w)))
}

fn open(cfg: &MetastoreConfig, uri: &MetastoreUri) -> Result<(Client, TcpStream), OpenError> {
    let stream = tcp_connect(cfg, uri)?;
    let setup = |e: io::Error| format!("{uri}: {e}");
    let probe = stream.try_clone().map_err(setup)?;
    stream.set_nodelay(true).map_err(setup)?;
    stream
        .set_read_timeout(Some(cfg.io_timeout))
        .map_err(setup)?;
    stream
        .set_write_timeout(Some(cfg.io_timeout))
        .map_err(setup)?;
    // A token wins over Kerberos, as in Hive's client: a task has a token and no ticket.
    let sasl_halves = match (&cfg.sasl_principal, &cfg.delegation_token) {
        (Some(_), Some(login)) => Some(digest_open(
            &stream,
            uri,
            login,
            cfg.sasl_protection.as_deref(),
        )?),
        (Some(pattern), None) => Some(sasl_open(
            &stream,
            uri,
            pattern,
            cfg.sasl_protection.as_deref(),
        )?),
        (None, _) => None,
    };
    let reader = Socket(stream.try_clone().map_err(setup)?);
    let writer = Socket(stream);
    let (input, output): Halves = match cfg.transport {
        _ if sasl_halves.is_some() => sasl_halves.expect("checked"),
        Transport::Buffered => (
            Box::new(TBufferedReadTransport::new(reader)),
            Box::new(TBufferedWriteTransport::new(writer)),
        ),
        Transport::Framed => (
            Box::new(TFramedReadTransport::new(reader)),
            Box::new(TFramedWriteTransport::new(writer)),
        ),
    };
    // Java servers write strict binary messages; reading leniently costs nothing.
    let mut client = Client::new(
        TBinaryInputProtocol::new(input, false),
        Metered::new(TBinaryOutputProtocol::new(output, true), cfg.meter.clone()),
    );

    // A TCP accept proves little (a wrong transport, SASL, or a hung server all accept), so
    // make one cheap call that touches no metastore database.
    match client.get_config_value("hive.metastore.warehouse.dir".to_owned(), String::new()) {
        Ok(_) | Err(thrift::Error::User(_)) | Err(thrift::Error::Application(_)) => {
            Ok((client, probe))
        }
        Err(thrift::Error::Transport(e)) if e.kind == TransportErrorKind::TimedOut => Err(format!(
            "{uri} accepted the connection but did not answer within {:?}",
            cfg.io_timeout
        )
        .into()),
        Err(thrift::Error::Transport(e))
            if matches!(
                e.kind,
                TransportErrorKind::EndOfFile | TransportErrorKind::NotOpen
            ) =>
        {
            Err(format!(
                "{uri} closed the connection at the first call ({}); if the metastore is up, \
                 check that the {} transport matches it (framed or not, SASL/Kerberos)",
                one_line(&e.message),
                cfg.transport
            )
            .into())
        }
        Err(e) => Err(format!("{uri}: {}", one_line(&e.to_string())).into()),
    }
}

pub(crate) struct Session {
    cfg: MetastoreConfig,
    conn: Option<Connection>,
    /// The URI to try first on the next connect.
    next: usize,
    answered: Arc<Mutex<Option<MetastoreUri>>>,
}

enum Failure {
    /// The connection is unusable (I/O error, EOF, timeout); the call may be resent.
    Broken { timed_out: bool, message: String },
    /// The byte stream is out of step; drop the connection, but do not resend.
    Desync(String),
    /// The server answered: the connection is fine and the error is final.
    Answered(MetastoreError),
    /// The server answered that it could not read the call (HMS 3.1 given a lock type it does
    /// not know): the error is final, and the rest of the call may be left unread, so the
    /// connection must go before another call is sent on it. Dropped here, under the session's
    /// lock: a caller reconnecting after the error would let a call of another task (the
    /// connection is shared) go out on the stream out of step, and break.
    Unread(MetastoreError),
}

impl Session {
    pub(crate) fn new(cfg: MetastoreConfig, answered: Arc<Mutex<Option<MetastoreUri>>>) -> Self {
        Session {
            cfg,
            conn: None,
            next: 0,
            answered,
        }
    }

    /// Connects to the first URI that answers, starting from `next` and going round once.
    pub(crate) fn connect(&mut self) -> Result<(), MetastoreError> {
        self.drop_connection();
        let n = self.cfg.uris.len();
        let mut last_error = String::from("no URI configured");
        let mut auth_error = None;
        let mut token_error = None;
        for k in 0..n {
            let i = (self.next + k) % n;
            let uri = &self.cfg.uris[i];
            match open(&self.cfg, uri) {
                Ok((client, probe)) => {
                    tracing::info!(%uri, "connected to metastore");
                    self.next = i;
                    *self.answered.lock().unwrap_or_else(|p| p.into_inner()) = Some(uri.clone());
                    self.conn = Some(Connection {
                        client,
                        fallbacks: Fallbacks::default(),
                        uri: i,
                        probe,
                    });
                    return Ok(());
                }
                Err(OpenError::Network(e)) => {
                    tracing::warn!(%uri, error = %e, "metastore did not answer");
                    last_error = e;
                }
                Err(OpenError::Auth(e)) => {
                    tracing::warn!(%uri, error = %e, "SASL authentication failed");
                    auth_error = Some(e);
                }
                Err(OpenError::TokenRejected(e)) => {
                    tracing::warn!(%uri, error = %e, "delegation token refused");
                    token_error = Some(e);
                }
            }
        }
        if let (Some(message), Some(login)) = (token_error, &self.cfg.delegation_token) {
            return Err(MetastoreError::TokenRejected {
                uris: self.cfg.uri_list(),
                token: login.token.describe(),
                origin: login.source.clone(),
                message,
            });
        }
        // An authentication failure says more than another URI's silence.
        if let Some(message) = auth_error {
            return Err(MetastoreError::Authentication {
                login: if self.cfg.delegation_token.is_some() {
                    "delegation token"
                } else {
                    "Kerberos"
                },
                uris: self.cfg.uri_list(),
                message,
            });
        }
        // Each error names its URI; with one URI the message names it already.
        let uris = self.cfg.uri_list();
        let last_error = match last_error.strip_prefix(&format!("{uris}: ")) {
            Some(rest) if n == 1 => rest.to_owned(),
            _ => last_error,
        };
        Err(MetastoreError::Unreachable { uris, last_error })
    }

    pub(crate) fn drop_connection(&mut self) {
        self.conn = None;
        *self.answered.lock().unwrap_or_else(|p| p.into_inner()) = None;
    }

    pub(crate) fn unsupported_methods(&self) -> Vec<&'static str> {
        self.conn
            .as_ref()
            .map(|c| c.fallbacks.missing())
            .unwrap_or_default()
    }

    /// Runs `f` on a live connection, reconnecting (next URI first) when the connection
    /// broke, and resending only `Call::Idempotent` calls.
    pub(crate) fn call<T>(
        &mut self,
        method: &'static str,
        what: &str,
        kind: Call,
        mut f: impl FnMut(&mut Client, &mut Fallbacks) -> thrift::Result<T>,
    ) -> Result<T, MetastoreError> {
        let mut attempt = 0;
        loop {
            if self.conn.as_ref().is_some_and(Connection::closed_by_server) {
                tracing::info!(
                    method,
                    "the metastore closed the idle connection; reconnecting"
                );
                self.drop_connection();
            }
            if self.conn.is_none() {
                self.connect()?;
            }
            let conn = self.conn.as_mut().expect("connected above");
            let uri_index = conn.uri;
            let err = match f(&mut conn.client, &mut conn.fallbacks) {
                Ok(v) => return Ok(v),
                Err(e) => e,
            };
            let uri = self.cfg.uris[uri_index].to_string();
            match classify(err, &uri, method, what) {
                Failure::Answered(e) => return Err(e),
                Failure::Unread(e) => {
                    self.drop_connection();
                    return Err(e);
                }
                Failure::Desync(message) => {
                    self.drop_connection();
                    return Err(MetastoreError::Protocol {
                        uri,
                        method,
                        message,
                    });
                }
                Failure::Broken { timed_out, message } => {
                    // A server that broke the call is the least likely to serve the next one.
                    self.drop_connection();
                    self.next = (uri_index + 1) % self.cfg.uris.len();
                    if kind == Call::Idempotent && attempt < self.cfg.retries {
                        attempt += 1;
                        let pause = self.cfg.backoff(attempt);
                        tracing::warn!(%uri, method, error = %message, attempt, ?pause,
                            "metastore call failed; retrying");
                        std::thread::sleep(pause);
                        continue;
                    }
                    let outcome_unknown = kind == Call::Once;
                    return Err(if timed_out {
                        MetastoreError::Timeout {
                            uri,
                            method,
                            after: self.cfg.io_timeout,
                            outcome_unknown,
                        }
                    } else {
                        MetastoreError::ConnectionLost {
                            uri,
                            method,
                            message,
                            outcome_unknown,
                        }
                    });
                }
            }
        }
    }
}

fn classify(err: thrift::Error, uri: &str, method: &'static str, what: &str) -> Failure {
    match err {
        thrift::Error::Transport(e) => Failure::Broken {
            timed_out: e.kind == TransportErrorKind::TimedOut,
            message: one_line(&e.message),
        },
        thrift::Error::Protocol(e) => Failure::Desync(one_line(&e.message)),
        thrift::Error::Application(e) => match e.kind {
            ApplicationErrorKind::UnknownMethod => {
                Failure::Answered(MetastoreError::UnknownMethod {
                    uri: uri.to_owned(),
                    method,
                })
            }
            // Raised by our own client when a reply does not belong to the call.
            ApplicationErrorKind::BadSequenceId
            | ApplicationErrorKind::WrongMethodName
            | ApplicationErrorKind::InvalidMessageType => Failure::Desync(one_line(&e.message)),
            ApplicationErrorKind::ProtocolError => Failure::Unread(MetastoreError::Internal {
                uri: uri.to_owned(),
                method,
                message: one_line(&e.message),
            }),
            _ => Failure::Answered(MetastoreError::Internal {
                uri: uri.to_owned(),
                method,
                message: one_line(&e.message),
            }),
        },
        thrift::Error::User(e) => Failure::Answered(declared(&*e, uri, method, what)),
    }
}

/// Maps an exception the IDL declares to the error callers branch on.
fn declared(
    e: &(dyn StdError + Send + Sync + 'static),
    uri: &str,
    method: &'static str,
    what: &str,
) -> MetastoreError {
    macro_rules! find {
        ($($ty:ident),*) => {
            $(if let Some(x) = e.downcast_ref::<gen::$ty>() {
                (stringify!($ty), one_line(x.message.as_deref().unwrap_or("")))
            } else)* {
                ("unknown exception", one_line(&e.to_string()))
            }
        };
    }
    let (exception, message) = find!(
        NoSuchObjectException,
        UnknownTableException,
        UnknownDBException,
        NoSuchLockException,
        NoSuchTxnException,
        AlreadyExistsException,
        MetaException,
        InvalidObjectException,
        InvalidOperationException,
        TxnAbortedException,
        TxnOpenException
    );
    let (uri, what) = (uri.to_owned(), what.to_owned());
    match exception {
        "NoSuchObjectException"
        | "UnknownTableException"
        | "UnknownDBException"
        | "NoSuchLockException"
        | "NoSuchTxnException" => MetastoreError::NotFound { what, uri, message },
        "AlreadyExistsException" => MetastoreError::AlreadyExists { what, uri, message },
        _ => MetastoreError::Server {
            uri,
            method,
            exception,
            message,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use thrift::ApplicationError;

    fn unknown_method() -> thrift::Error {
        thrift::Error::Application(ApplicationError::new(
            ApplicationErrorKind::UnknownMethod,
            "Invalid method name: 'x_req'",
        ))
    }

    #[test]
    fn request_style_answer_is_used_when_the_server_has_it() {
        let mut fb = Fallbacks::default();
        let mut log = Vec::new();
        let r = fb.call(
            &mut log,
            "x_req",
            |l: &mut Vec<&str>| {
                l.push("x_req");
                Ok(1)
            },
            |l| {
                l.push("x");
                Ok(2)
            },
        );
        assert_eq!(r.unwrap(), 1);
        assert_eq!(log, ["x_req"]);
        assert!(fb.missing().is_empty());
    }

    #[test]
    fn unknown_method_falls_back_once_and_is_remembered() {
        let mut fb = Fallbacks::default();
        let mut log = Vec::new();
        for _ in 0..3 {
            let r = fb.call(
                &mut log,
                "x_req",
                |l: &mut Vec<&str>| {
                    l.push("x_req");
                    Err(unknown_method())
                },
                |l| {
                    l.push("x");
                    Ok(2)
                },
            );
            assert_eq!(r.unwrap(), 2);
        }
        assert_eq!(log, ["x_req", "x", "x", "x"]);
        assert_eq!(fb.missing(), ["x_req"]);
    }

    #[test]
    fn other_errors_do_not_fall_back() {
        let mut fb = Fallbacks::default();
        let mut legacy_called = false;
        let r: thrift::Result<()> = fb.call(
            &mut legacy_called,
            "x_req",
            |_| {
                Err(thrift::Error::User(Box::new(gen::NoSuchObjectException {
                    message: Some("t not found".into()),
                })))
            },
            |called| {
                *called = true;
                Ok(())
            },
        );
        assert!(r.is_err());
        assert!(!legacy_called);
        assert!(fb.missing().is_empty());
    }

    #[test]
    fn declared_exceptions_map_to_what_callers_branch_on() {
        let nf = gen::NoSuchObjectException {
            message: Some("db.t\ntable not found".into()),
        };
        let e = declared(&nf, "thrift://h:1", "get_table_req", "table db.t");
        assert!(
            matches!(&e, MetastoreError::NotFound { what, message, .. }
                if what == "table db.t" && message == "db.t table not found"),
            "{e:?}"
        );
        let meta = gen::MetaException {
            message: Some("boom".into()),
        };
        let e = declared(&meta, "thrift://h:1", "get_table_req", "table db.t");
        assert!(matches!(
            e,
            MetastoreError::Server {
                exception: "MetaException",
                ..
            }
        ));
    }

    #[test]
    fn broken_and_desynced_connections_are_told_apart() {
        let io: thrift::Error = io::Error::new(io::ErrorKind::TimedOut, "read timed out").into();
        assert!(matches!(
            classify(io, "u", "m", "w"),
            Failure::Broken {
                timed_out: true,
                ..
            }
        ));
        let eof: thrift::Error = io::Error::new(io::ErrorKind::UnexpectedEof, "eof").into();
        assert!(matches!(
            classify(eof, "u", "m", "w"),
            Failure::Broken {
                timed_out: false,
                ..
            }
        ));
        let seq = thrift::Error::Application(ApplicationError::new(
            ApplicationErrorKind::BadSequenceId,
            "out of order",
        ));
        assert!(matches!(classify(seq, "u", "m", "w"), Failure::Desync(_)));
        let internal = thrift::Error::Application(ApplicationError::new(
            ApplicationErrorKind::InternalError,
            "Internal error processing lock",
        ));
        assert!(matches!(
            classify(internal, "u", "lock", "w"),
            Failure::Answered(MetastoreError::Internal { .. })
        ));
        // HMS 3.1 reading a lock type it does not know: answered, but the stream is left
        // mid-call.
        let unread = thrift::Error::Application(ApplicationError::new(
            ApplicationErrorKind::ProtocolError,
            "Required field 'type' is unset!",
        ));
        assert!(matches!(
            classify(unread, "u", "lock", "w"),
            Failure::Unread(MetastoreError::Internal { .. })
        ));
    }
}
