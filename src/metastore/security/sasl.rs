//! Thrift's SASL transport, client side, with the GSSAPI (Kerberos) mechanism: what a metastore
//! with `hive.metastore.sasl.enabled=true` speaks.
//!
//! Negotiation messages are a status byte (START 1, OK 2, BAD 3, ERROR 4, COMPLETE 5), a 4-byte
//! big-endian length and the payload. The client sends START with the mechanism's name, then
//! its initial response; both sides exchange OK messages until each is complete. Afterwards
//! every Thrift message travels in a frame: a 4-byte big-endian length and the bytes, wrapped
//! by the security context when the negotiated protection (QOP) is integrity or privacy.
//!
//! GSSAPI over SASL (RFC 4752): the Kerberos context is established first; the server then
//! sends, wrapped, the protections it offers (a bit mask: 1 none, 2 integrity, 4 privacy) and
//! its maximum buffer size; the client answers, wrapped, with its choice and buffer size.

use std::io::{self, Read, Write};
use std::sync::{Arc, Mutex};

use super::gssapi::{Context, GssError};

/// Negotiation status bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Status {
    Start = 1,
    Ok = 2,
    Bad = 3,
    Error = 4,
    Complete = 5,
}

impl Status {
    fn from_byte(b: u8) -> Option<Self> {
        Some(match b {
            1 => Status::Start,
            2 => Status::Ok,
            3 => Status::Bad,
            4 => Status::Error,
            5 => Status::Complete,
            _ => return None,
        })
    }
}

/// Negotiation messages bigger than this are not SASL (a stray server, garbage).
const MAX_NEGOTIATION: usize = 1 << 20;
/// Frames bigger than this are refused rather than allocated.
const MAX_FRAME: usize = 256 << 20;

pub(crate) fn write_message(w: &mut impl Write, status: Status, payload: &[u8]) -> io::Result<()> {
    let mut msg = Vec::with_capacity(5 + payload.len());
    msg.push(status as u8);
    msg.extend_from_slice(&(payload.len() as u32).to_be_bytes());
    msg.extend_from_slice(payload);
    w.write_all(&msg)?;
    w.flush()
}

pub(crate) fn read_message(r: &mut impl Read) -> io::Result<(Status, Vec<u8>)> {
    let mut head = [0u8; 5];
    r.read_exact(&mut head)?;
    let status = Status::from_byte(head[0]).ok_or_else(|| {
        invalid(format!(
            "not a SASL negotiation message (status byte {:#04x})",
            head[0]
        ))
    })?;
    let len = u32::from_be_bytes([head[1], head[2], head[3], head[4]]) as usize;
    if len > MAX_NEGOTIATION {
        return Err(invalid(format!("SASL negotiation message of {len} bytes")));
    }
    let mut payload = vec![0; len];
    r.read_exact(&mut payload)?;
    Ok((status, payload))
}

fn invalid(msg: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, msg)
}

/// The security layer after negotiation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Qop {
    Auth,
    Integrity,
    Privacy,
}

impl Qop {
    /// Its bit in a GSSAPI offer (and in the mask [`choose_qop`] takes).
    pub(crate) fn bit(self) -> u8 {
        match self {
            Qop::Auth => 1,
            Qop::Integrity => 2,
            Qop::Privacy => 4,
        }
    }

    /// Hadoop's name for it, as in `hadoop.rpc.protection`.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Qop::Auth => "authentication",
            Qop::Integrity => "integrity",
            Qop::Privacy => "privacy",
        }
    }

    /// A `hadoop.rpc.protection` value: names separated by commas, in the client's order of
    /// preference (Hadoop's SaslPropertiesResolver keeps that order).
    pub(crate) fn parse_list(value: &str) -> Result<Vec<Qop>, String> {
        value
            .split(',')
            .map(str::trim)
            .filter(|v| !v.is_empty())
            .map(|v| {
                [Qop::Auth, Qop::Integrity, Qop::Privacy]
                    .into_iter()
                    .find(|q| q.name().eq_ignore_ascii_case(v))
                    .ok_or_else(|| {
                        format!(
                            "hadoop.rpc.protection: '{v}' is none of authentication, \
                             integrity, privacy"
                        )
                    })
            })
            .collect()
    }

    /// The names of the layers in a GSSAPI offer's bit mask.
    fn names_in(mask: u8) -> String {
        let names: Vec<_> = [Qop::Privacy, Qop::Integrity, Qop::Auth]
            .into_iter()
            .filter(|q| mask & q.bit() != 0)
            .map(Qop::name)
            .collect();
        if names.is_empty() {
            "none".into()
        } else {
            names.join(",")
        }
    }
}

/// Picks the security layer from the server's offer (a bit mask): the first of `wanted` (the
/// client's `hadoop.rpc.protection`, in its order) that the server offers, as Java's GSSAPI
/// and DIGEST-MD5 clients do; without a wish, the strongest offered. The one rule of both
/// mechanisms.
pub(crate) fn choose_qop(offer: u8, wanted: Option<&[Qop]>) -> Result<Qop, Failure> {
    let strongest_first = [Qop::Privacy, Qop::Integrity, Qop::Auth];
    let candidates = wanted.unwrap_or(&strongest_first);
    candidates
        .iter()
        .copied()
        .find(|q| offer & q.bit() != 0)
        .ok_or_else(|| Failure::NoCommonQop {
            offered: Qop::names_in(offer),
            wanted: candidates
                .iter()
                .map(|q| q.name())
                .collect::<Vec<_>>()
                .join(","),
        })
}

/// What a client mechanism does; GSSAPI in production, a script in the tests.
pub(crate) trait Mechanism: Send {
    fn name(&self) -> &'static str;
    /// The initial response (sent right after START).
    fn initial(&mut self) -> Result<Vec<u8>, Failure>;
    /// The response to a server challenge.
    fn step(&mut self, challenge: &[u8]) -> Result<Vec<u8>, Failure>;
    fn is_complete(&self) -> bool;
    fn qop(&self) -> Qop;
    fn wrap(&mut self, data: &[u8]) -> Result<Vec<u8>, Failure>;
    fn unwrap(&mut self, data: &[u8]) -> Result<Vec<u8>, Failure>;
}

/// Why a SASL connection could not be opened.
#[derive(Debug)]
pub(crate) enum Failure {
    /// The Kerberos side failed (no ticket, unknown principal, KDC unreachable, ...).
    Gss(GssError),
    /// The server refused (BAD or ERROR) with its message.
    Refused(String),
    /// The peer does not speak SASL as expected.
    Protocol(String),
    /// The server offers none of the protections (QOP) the client accepts.
    NoCommonQop {
        offered: String,
        wanted: String,
    },
    Io(io::Error),
}

impl From<GssError> for Failure {
    fn from(e: GssError) -> Self {
        Failure::Gss(e)
    }
}

impl From<io::Error> for Failure {
    fn from(e: io::Error) -> Self {
        Failure::Io(e)
    }
}

/// Runs the negotiation on `stream` (the client's side of TSaslTransport.open).
pub(crate) fn negotiate<S: Read + Write, M: Mechanism>(
    stream: &mut S,
    mech: &mut M,
) -> Result<(), Failure> {
    let initial = mech.initial()?;
    write_message(stream, Status::Start, mech.name().as_bytes())?;
    let status = if mech.is_complete() {
        Status::Complete
    } else {
        Status::Ok
    };
    write_message(stream, status, &initial)?;
    let mut last = None;
    while !mech.is_complete() {
        let (status, payload) = receive(stream)?;
        let response = mech.step(&payload)?;
        last = Some(status);
        if status == Status::Complete {
            // The server is done; nothing more is sent.
            continue;
        }
        let status = if mech.is_complete() {
            Status::Complete
        } else {
            Status::Ok
        };
        write_message(stream, status, &response)?;
    }
    // Complete here, but the server may not be yet: it says so with COMPLETE.
    if last != Some(Status::Complete) {
        let (status, _) = receive(stream)?;
        if status != Status::Complete {
            return Err(Failure::Protocol(format!(
                "expected COMPLETE from the server, got {status:?}"
            )));
        }
    }
    Ok(())
}

fn receive(stream: &mut impl Read) -> Result<(Status, Vec<u8>), Failure> {
    let (status, payload) = read_message(stream).map_err(|e| match e.kind() {
        io::ErrorKind::InvalidData => Failure::Protocol(e.to_string()),
        _ => Failure::Io(e),
    })?;
    match status {
        Status::Ok | Status::Complete => Ok((status, payload)),
        Status::Bad | Status::Error => Err(Failure::Refused(
            String::from_utf8_lossy(&payload).into_owned(),
        )),
        Status::Start => Err(Failure::Protocol("the server sent START".into())),
    }
}

/// The GSSAPI mechanism (RFC 4752) over a Kerberos [`Context`].
pub(crate) struct Gssapi {
    ctx: Context,
    /// The client's `hadoop.rpc.protection`, in its order; `None`: the strongest offered.
    wanted: Option<Vec<Qop>>,
    qop: Option<Qop>,
}

impl Gssapi {
    pub(crate) fn new(ctx: Context, wanted: Option<Vec<Qop>>) -> Self {
        Gssapi {
            ctx,
            wanted,
            qop: None,
        }
    }
}

impl Mechanism for Gssapi {
    fn name(&self) -> &'static str {
        "GSSAPI"
    }

    fn initial(&mut self) -> Result<Vec<u8>, Failure> {
        Ok(self.ctx.step(None)?)
    }

    fn step(&mut self, challenge: &[u8]) -> Result<Vec<u8>, Failure> {
        if !self.ctx.is_established() {
            return Ok(self.ctx.step(Some(challenge))?);
        }
        // The security layer offer: [layers, max buffer (3 bytes)], wrapped.
        let offer = self.ctx.unwrap(challenge)?;
        if offer.len() != 4 {
            return Err(Failure::Protocol(format!(
                "GSSAPI security layer offer of {} bytes (expected 4)",
                offer.len()
            )));
        }
        let qop = choose_qop(offer[0], self.wanted.as_deref())?;
        // With a layer, as large a buffer as the server accepts; none without one.
        let max = if qop == Qop::Auth {
            [0, 0, 0]
        } else {
            [offer[1], offer[2], offer[3]]
        };
        let answer = [qop.bit(), max[0], max[1], max[2]];
        let wrapped = self.ctx.wrap(false, &answer)?;
        self.qop = Some(qop);
        Ok(wrapped)
    }

    fn is_complete(&self) -> bool {
        self.qop.is_some()
    }

    fn qop(&self) -> Qop {
        self.qop.unwrap_or(Qop::Auth)
    }

    fn wrap(&mut self, data: &[u8]) -> Result<Vec<u8>, Failure> {
        Ok(self.ctx.wrap(self.qop() == Qop::Privacy, data)?)
    }

    fn unwrap(&mut self, data: &[u8]) -> Result<Vec<u8>, Failure> {
        Ok(self.ctx.unwrap(data)?)
    }
}

/// A security layer failing on a frame: the connection is of no further use.
fn failure_to_io(f: Failure) -> io::Error {
    match f {
        Failure::Io(e) => e,
        Failure::Gss(e) => invalid(e.to_string()),
        Failure::Protocol(msg) | Failure::Refused(msg) => invalid(msg),
        Failure::NoCommonQop { offered, wanted } => invalid(format!(
            "SASL protection: offered {offered}, wanted {wanted}"
        )),
    }
}

/// The read half after negotiation: frames in, Thrift bytes out.
pub(crate) struct SaslReader<R, M> {
    inner: R,
    mech: Arc<Mutex<M>>,
    frame: Vec<u8>,
    pos: usize,
}

/// The write half: Thrift bytes in, one frame out per flush.
pub(crate) struct SaslWriter<W, M> {
    inner: W,
    mech: Arc<Mutex<M>>,
    buf: Vec<u8>,
}

/// Splits a negotiated connection into its framed halves.
pub(crate) fn split<R: Read, W: Write, M: Mechanism>(
    reader: R,
    writer: W,
    mech: M,
) -> (SaslReader<R, M>, SaslWriter<W, M>) {
    let mech = Arc::new(Mutex::new(mech));
    (
        SaslReader {
            inner: reader,
            mech: mech.clone(),
            frame: Vec::new(),
            pos: 0,
        },
        SaslWriter {
            inner: writer,
            mech,
            buf: Vec::new(),
        },
    )
}

impl<R: Read, M: Mechanism> Read for SaslReader<R, M> {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        if self.pos == self.frame.len() {
            let mut len = [0u8; 4];
            self.inner.read_exact(&mut len)?;
            let len = u32::from_be_bytes(len) as usize;
            if len > MAX_FRAME {
                return Err(invalid(format!("SASL frame of {len} bytes")));
            }
            let mut frame = vec![0; len];
            self.inner.read_exact(&mut frame)?;
            let mut mech = self.mech.lock().unwrap_or_else(|p| p.into_inner());
            self.frame = if mech.qop() == Qop::Auth {
                frame
            } else {
                mech.unwrap(&frame).map_err(failure_to_io)?
            };
            self.pos = 0;
        }
        let n = out.len().min(self.frame.len() - self.pos);
        out[..n].copy_from_slice(&self.frame[self.pos..self.pos + n]);
        self.pos += n;
        Ok(n)
    }
}

impl<W: Write, M: Mechanism> Write for SaslWriter<W, M> {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        self.buf.extend_from_slice(data);
        Ok(data.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        if self.buf.is_empty() {
            return self.inner.flush();
        }
        let payload = {
            let mut mech = self.mech.lock().unwrap_or_else(|p| p.into_inner());
            if mech.qop() == Qop::Auth {
                std::mem::take(&mut self.buf)
            } else {
                let wrapped = mech.wrap(&self.buf).map_err(failure_to_io)?;
                self.buf.clear();
                wrapped
            }
        };
        let mut frame = Vec::with_capacity(4 + payload.len());
        frame.extend_from_slice(&(payload.len() as u32).to_be_bytes());
        frame.extend_from_slice(&payload);
        self.inner.write_all(&frame)?;
        self.inner.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Cursor;

    /// A stream with a scripted server side: reads come from `input`, writes go to `output`.
    struct Script {
        input: Cursor<Vec<u8>>,
        output: Vec<u8>,
    }

    impl Read for Script {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            self.input.read(buf)
        }
    }
    impl Write for Script {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            self.output.extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    fn server(messages: &[(Status, &[u8])]) -> Script {
        let mut input = Vec::new();
        for (s, p) in messages {
            write_message(&mut input, *s, p).unwrap();
        }
        Script {
            input: Cursor::new(input),
            output: Vec::new(),
        }
    }

    /// Two steps, then complete; "wraps" by xor-ing with 0x55 when a layer was chosen.
    struct Fake {
        steps: usize,
        qop: Qop,
    }

    impl Mechanism for Fake {
        fn name(&self) -> &'static str {
            "FAKE"
        }
        fn initial(&mut self) -> Result<Vec<u8>, Failure> {
            Ok(b"hello".to_vec())
        }
        fn step(&mut self, challenge: &[u8]) -> Result<Vec<u8>, Failure> {
            self.steps += 1;
            Ok([b"re:".as_slice(), challenge].concat())
        }
        fn is_complete(&self) -> bool {
            self.steps >= 2
        }
        fn qop(&self) -> Qop {
            self.qop
        }
        fn wrap(&mut self, d: &[u8]) -> Result<Vec<u8>, Failure> {
            Ok(d.iter().map(|b| b ^ 0x55).collect())
        }
        fn unwrap(&mut self, d: &[u8]) -> Result<Vec<u8>, Failure> {
            self.wrap(d)
        }
    }

    fn messages(bytes: &[u8]) -> Vec<(Status, Vec<u8>)> {
        let mut c = Cursor::new(bytes.to_vec());
        let mut out = Vec::new();
        while (c.position() as usize) < bytes.len() {
            out.push(read_message(&mut c).unwrap());
        }
        out
    }

    #[test]
    fn message_layout_is_status_length_payload() {
        let mut out = Vec::new();
        write_message(&mut out, Status::Start, b"GSSAPI").unwrap();
        assert_eq!(out, b"\x01\x00\x00\x00\x06GSSAPI");
        let (s, p) = read_message(&mut Cursor::new(out)).unwrap();
        assert_eq!((s, p.as_slice()), (Status::Start, b"GSSAPI".as_slice()));
    }

    #[test]
    fn negotiation_sends_start_initial_and_responses_until_complete() {
        let mut s = server(&[
            (Status::Ok, b"c1"),
            (Status::Ok, b"c2"),
            (Status::Complete, b""),
        ]);
        let mut m = Fake {
            steps: 0,
            qop: Qop::Auth,
        };
        negotiate(&mut s, &mut m).unwrap();
        let sent = messages(&s.output);
        assert_eq!(
            sent,
            vec![
                (Status::Start, b"FAKE".to_vec()),
                (Status::Ok, b"hello".to_vec()),
                (Status::Ok, b"re:c1".to_vec()),
                (Status::Complete, b"re:c2".to_vec()),
            ]
        );
    }

    #[test]
    fn server_complete_ends_negotiation_without_an_answer() {
        let mut s = server(&[(Status::Ok, b"c1"), (Status::Complete, b"c2")]);
        let mut m = Fake {
            steps: 0,
            qop: Qop::Auth,
        };
        negotiate(&mut s, &mut m).unwrap();
        assert_eq!(messages(&s.output).len(), 3);
    }

    #[test]
    fn bad_and_error_carry_the_server_message() {
        for status in [Status::Bad, Status::Error] {
            let mut s = server(&[(status, b"GSS initiate failed")]);
            let mut m = Fake {
                steps: 0,
                qop: Qop::Auth,
            };
            match negotiate(&mut s, &mut m) {
                Err(Failure::Refused(msg)) => assert_eq!(msg, "GSS initiate failed"),
                other => panic!("{other:?}"),
            }
        }
    }

    #[test]
    fn a_non_sasl_answer_is_a_protocol_error() {
        // A plain Thrift server answering garbage: first byte 0x80 is no status.
        let mut s = Script {
            input: Cursor::new(b"\x80\x01\x00\x03\x00\x00\x00\x00\x00".to_vec()),
            output: Vec::new(),
        };
        let mut m = Fake {
            steps: 0,
            qop: Qop::Auth,
        };
        assert!(matches!(
            negotiate(&mut s, &mut m),
            Err(Failure::Protocol(_))
        ));
        // And a server that hangs up is an I/O error (end of file).
        let mut s = server(&[]);
        assert!(matches!(negotiate(&mut s, &mut m), Err(Failure::Io(_))));
    }

    #[test]
    fn frames_after_negotiation_with_and_without_a_layer() {
        for qop in [Qop::Auth, Qop::Integrity, Qop::Privacy] {
            let mech = Fake { steps: 2, qop };
            let (_, mut w) = split(Cursor::new(Vec::new()), Vec::new(), mech);
            w.write_all(b"abc").unwrap();
            w.write_all(b"de").unwrap();
            w.flush().unwrap();
            w.flush().unwrap(); // nothing buffered: no empty frame
            let wire = w.inner.clone();
            assert_eq!(&wire[..4], &[0, 0, 0, 5]);
            if qop == Qop::Auth {
                assert_eq!(&wire[4..], b"abcde");
            } else {
                assert_ne!(&wire[4..], b"abcde");
            }
            // Read back two frames through the reader.
            let mut twice = wire.clone();
            twice.extend_from_slice(&wire);
            let (mut r, _) = split(Cursor::new(twice), Vec::new(), Fake { steps: 2, qop });
            let mut got = Vec::new();
            r.read_to_end(&mut got).unwrap_err(); // EOF inside the third frame header
            let mut r2 = split(
                Cursor::new(wire.clone()),
                Vec::new(),
                Fake { steps: 2, qop },
            )
            .0;
            let mut buf = [0u8; 5];
            r2.read_exact(&mut buf).unwrap();
            assert_eq!(&buf, b"abcde");
        }
    }

    #[test]
    fn the_client_takes_its_first_wish_the_server_offers() {
        let all = 1 | 2 | 4;
        assert_eq!(choose_qop(all, None).unwrap(), Qop::Privacy);
        assert_eq!(choose_qop(1 | 2, None).unwrap(), Qop::Integrity);
        let wish = Qop::parse_list(" Integrity , privacy").unwrap();
        assert_eq!(wish, vec![Qop::Integrity, Qop::Privacy]);
        assert_eq!(choose_qop(all, Some(&wish)).unwrap(), Qop::Integrity);
        assert_eq!(choose_qop(1 | 4, Some(&wish)).unwrap(), Qop::Privacy);
        match choose_qop(1, Some(&wish)) {
            Err(Failure::NoCommonQop { offered, wanted }) => {
                assert_eq!(
                    (offered.as_str(), wanted.as_str()),
                    ("authentication", "integrity,privacy")
                );
            }
            other => panic!("{other:?}"),
        }
        assert!(Qop::parse_list("auth-conf").is_err());
    }

    #[test]
    fn oversized_frames_are_refused() {
        let mut r = split(
            Cursor::new(vec![0xff, 0xff, 0xff, 0xff]),
            Vec::new(),
            Fake {
                steps: 2,
                qop: Qop::Auth,
            },
        )
        .0;
        let mut b = [0u8; 1];
        assert_eq!(
            r.read(&mut b).unwrap_err().kind(),
            io::ErrorKind::InvalidData
        );
    }
}
