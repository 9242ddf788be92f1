//! A fault-injecting TCP proxy for the metastore's Thrift port, written for these tests (no
//! crate injects faults at the level of one Thrift reply): it relays bytes both ways and, in
//! [`Fault::CutAfterReply`], drops every connection right after forwarding the N-th reply to a
//! named method, then closes every new connection at once for a while — what a metastore
//! failover or a network cut right after a committed change looks like to the client. In
//! [`Fault::SwallowReply`] it withholds the N-th reply to a named method and keeps that
//! connection open: a call the metastore carried out but whose answer never comes (a
//! metastore or database so slow that the client gives up first). In [`Fault::CutAtRequest`] it
//! never forwards the N-th call of a named method and cuts every connection instead: a call lost
//! on its way, which the metastore never carried out.
//!
//! Loopback only, bounded: it listens on 127.0.0.1, refuses a non-loopback upstream, and stops
//! by itself when dropped or after [`MAX_LIFETIME`], whichever comes first.

use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream, ToSocketAddrs};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// No test needs a proxy longer than this; a leaked one goes away on its own.
pub const MAX_LIFETIME: Duration = Duration::from_secs(600);

/// Bytes of one reply held for parsing at most (the bytes themselves are relayed at once).
const MAX_PENDING: usize = 64 << 20;

#[derive(Debug, Clone)]
pub enum Fault {
    /// Relay everything.
    PassThrough,
    /// After forwarding the `nth` (1-based) reply to `method` (a REPLY or EXCEPTION message,
    /// counted over all connections), close every connection and close new ones on accept
    /// for `refuse_for`; then relay again.
    CutAfterReply {
        method: String,
        nth: usize,
        refuse_for: Duration,
    },
    /// Withhold the `nth` (1-based) reply to `method` and everything after it on that
    /// connection; other connections relay as usual.
    SwallowReply { method: String, nth: usize },
    /// Drop the `nth` (1-based) call of `method` (counted over all connections) unforwarded,
    /// close every connection and close new ones on accept for `refuse_for`; then relay again.
    CutAtRequest {
        method: String,
        nth: usize,
        refuse_for: Duration,
    },
}

pub struct Proxy {
    addr: SocketAddr,
    shared: Arc<Shared>,
    acceptor: Option<JoinHandle<()>>,
}

struct Shared {
    upstream: SocketAddr,
    fault: Fault,
    stop: AtomicBool,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    /// Replies to (or, for [`Fault::CutAtRequest`], calls of) the fault's method seen so far.
    replies: usize,
    /// When the cut happened, if it did.
    cut_at: Option<Instant>,
    /// Both ends of every live relay, to close them all at once.
    streams: Vec<TcpStream>,
    /// Connections closed on accept while refusing.
    refused: usize,
}

impl Proxy {
    /// Starts a proxy in front of `upstream` (`host:port` or `thrift://host:port`).
    pub fn start(upstream: &str, fault: Fault) -> Proxy {
        let hostport = upstream.trim_start_matches("thrift://");
        let hostport = hostport.split(',').next().unwrap_or(hostport);
        let upstream = hostport
            .to_socket_addrs()
            .unwrap_or_else(|e| panic!("proxy upstream {hostport}: {e}"))
            .find(|a| a.ip().is_loopback())
            .unwrap_or_else(|| panic!("proxy upstream {hostport} is not a loopback address"));
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
        listener
            .set_nonblocking(true)
            .expect("non-blocking listener");
        let addr = listener.local_addr().expect("local address");
        let shared = Arc::new(Shared {
            upstream,
            fault,
            stop: AtomicBool::new(false),
            state: Mutex::new(State::default()),
        });
        let acceptor = {
            let shared = shared.clone();
            std::thread::spawn(move || accept_loop(listener, shared))
        };
        Proxy {
            addr,
            shared,
            acceptor: Some(acceptor),
        }
    }

    /// The URI clients use instead of the metastore's.
    pub fn uri(&self) -> String {
        format!("thrift://{}", self.addr)
    }

    /// Replies to the fault's method forwarded so far.
    pub fn replies(&self) -> usize {
        self.shared.state().replies
    }

    /// Whether the cut has happened.
    pub fn cut(&self) -> bool {
        self.shared.state().cut_at.is_some()
    }

    /// Connections closed on accept while refusing.
    pub fn refused(&self) -> usize {
        self.shared.state().refused
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::SeqCst);
        self.shared.close_all();
        if let Some(a) = self.acceptor.take() {
            let _ = a.join();
        }
    }
}

impl Shared {
    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn close_all(&self) {
        for s in self.state().streams.drain(..) {
            let _ = s.shutdown(Shutdown::Both);
        }
    }

    fn refusing(&self) -> bool {
        match (&self.fault, self.state().cut_at) {
            (
                Fault::CutAfterReply { refuse_for, .. } | Fault::CutAtRequest { refuse_for, .. },
                Some(at),
            ) => at.elapsed() < *refuse_for,
            _ => false,
        }
    }

    fn swallowing(&self) -> bool {
        matches!(self.fault, Fault::SwallowReply { .. })
    }

    /// Whether the fault watches the calls going up rather than the replies coming down.
    fn at_request(&self) -> bool {
        matches!(self.fault, Fault::CutAtRequest { .. })
    }

    /// Counts a message of type `kind` to `method` that the fault watches (a reply, or a call
    /// for [`Fault::CutAtRequest`]); true when it is the one the fault strikes at.
    fn seen(&self, method: &str, kind: u8) -> bool {
        let (m, nth) = match &self.fault {
            Fault::CutAfterReply { method, nth, .. } | Fault::SwallowReply { method, nth } => {
                (method, nth)
            }
            Fault::CutAtRequest { method, nth, .. } => (method, nth),
            Fault::PassThrough => return false,
        };
        // 1: CALL; 2: REPLY, 3: EXCEPTION.
        let watched = if self.at_request() {
            kind == 1
        } else {
            kind == 2 || kind == 3
        };
        if !watched || m != method {
            return false;
        }
        let mut state = self.state();
        state.replies += 1;
        if state.replies == *nth {
            state.cut_at = Some(Instant::now());
            return true;
        }
        false
    }
}

fn accept_loop(listener: TcpListener, shared: Arc<Shared>) {
    let started = Instant::now();
    while !shared.stop.load(Ordering::SeqCst) && started.elapsed() < MAX_LIFETIME {
        let client = match listener.accept() {
            Ok((s, _)) => s,
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                std::thread::sleep(Duration::from_millis(20));
                continue;
            }
            Err(_) => continue,
        };
        if shared.refusing() {
            shared.state().refused += 1;
            let _ = client.shutdown(Shutdown::Both);
            continue;
        }
        let _ = client.set_nonblocking(false);
        let Ok(server) = TcpStream::connect_timeout(&shared.upstream, Duration::from_secs(5))
        else {
            let _ = client.shutdown(Shutdown::Both);
            continue;
        };
        relay(client, server, &shared);
    }
    shared.close_all();
}

fn relay(client: TcpStream, server: TcpStream, shared: &Arc<Shared>) {
    let (Ok(c2), Ok(s2)) = (client.try_clone(), server.try_clone()) else {
        return;
    };
    {
        let mut state = shared.state();
        for s in [&client, &server] {
            if let Ok(s) = s.try_clone() {
                state.streams.push(s);
            }
        }
    }
    // Calls are parsed on the way up when the fault strikes at one, replies on the way down
    // otherwise.
    let (up, down) = if shared.at_request() {
        (Some(shared.clone()), None)
    } else {
        (None, Some(shared.clone()))
    };
    std::thread::spawn(move || copy(client, server, up));
    std::thread::spawn(move || copy(s2, c2, down));
}

/// Copies `from` to `to` until either end closes; with `watch`, parses the Thrift messages
/// passing and strikes at the one the fault names: cuts every connection after it (or, for a
/// call, instead of it), or (when swallowing, which forwards whole messages only) holds it back.
fn copy(mut from: TcpStream, mut to: TcpStream, watch: Option<Arc<Shared>>) {
    let mut buf = [0u8; 64 * 1024];
    let mut pending: Vec<u8> = vec![];
    // Whole messages only: a reply held back, or a call that must not reach the metastore.
    let swallowing = watch
        .as_ref()
        .is_some_and(|s| s.swallowing() || s.at_request());
    let mut swallowed = false;
    loop {
        let n = match from.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        if !swallowing && to.write_all(&buf[..n]).is_err() {
            break;
        }
        let Some(shared) = &watch else { continue };
        if swallowed {
            continue;
        }
        pending.extend_from_slice(&buf[..n]);
        if pending.len() > MAX_PENDING && !swallowing {
            // Not a stream this parser understands: relay it without watching.
            pending.clear();
        }
        while let Some((len, name, kind)) = message(&pending) {
            let whole: Vec<u8> = pending.drain(..len).collect();
            let strikes = shared.seen(&name, kind);
            if strikes && shared.at_request() {
                shared.close_all();
                return;
            }
            if swallowing {
                if strikes {
                    swallowed = true;
                    break;
                }
                if to.write_all(&whole).is_err() {
                    return;
                }
            } else if strikes {
                let _ = to.flush();
                shared.close_all();
                return;
            }
        }
    }
    let _ = to.shutdown(Shutdown::Both);
    let _ = from.shutdown(Shutdown::Both);
}

/// The first whole Thrift binary-protocol message in `buf` (strict header, buffered or framed
/// transport): its length in bytes, method name and message type; `None` until it is whole.
pub fn message(buf: &[u8]) -> Option<(usize, String, u8)> {
    if buf.len() < 4 {
        return None;
    }
    if buf[0] == 0x80 {
        let mut r = Reader { buf, pos: 0 };
        let (name, kind) = r.header()?;
        r.skip(12)?;
        return Some((r.pos, name, kind));
    }
    // Framed: a 4-byte length, then one message.
    let frame = u32::from_be_bytes(buf[..4].try_into().ok()?) as usize;
    let body = buf.get(4..4 + frame)?;
    let (name, kind) = Reader { buf: body, pos: 0 }.header()?;
    Some((4 + frame, name, kind))
}

struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl Reader<'_> {
    fn take(&mut self, n: usize) -> Option<&[u8]> {
        let s = self.buf.get(self.pos..self.pos.checked_add(n)?)?;
        self.pos += n;
        Some(s)
    }

    fn i32(&mut self) -> Option<i32> {
        Some(i32::from_be_bytes(self.take(4)?.try_into().ok()?))
    }

    fn header(&mut self) -> Option<(String, u8)> {
        let version = self.i32()? as u32;
        if version & 0xffff_0000 != 0x8001_0000 {
            return None;
        }
        let len = usize::try_from(self.i32()?).ok()?;
        let name = String::from_utf8_lossy(self.take(len)?).into_owned();
        self.i32()?; // sequence id
        Some((name, (version & 0xff) as u8))
    }

    /// Skips one value of Thrift type `ty`.
    fn skip(&mut self, ty: u8) -> Option<()> {
        match ty {
            2 | 3 => self.take(1).map(drop),
            4 | 10 => self.take(8).map(drop),
            6 => self.take(2).map(drop),
            8 => self.take(4).map(drop),
            16 => self.take(16).map(drop),
            11 => {
                let len = usize::try_from(self.i32()?).ok()?;
                self.take(len).map(drop)
            }
            12 => loop {
                let field = self.take(1)?[0];
                if field == 0 {
                    return Some(());
                }
                self.take(2)?;
                self.skip(field)?;
            },
            13 => {
                let kv = self.take(2)?.to_vec();
                let n = self.i32()?;
                for _ in 0..n {
                    self.skip(kv[0])?;
                    self.skip(kv[1])?;
                }
                Some(())
            }
            14 | 15 => {
                let elem = self.take(1)?[0];
                let n = self.i32()?;
                for _ in 0..n {
                    self.skip(elem)?;
                }
                Some(())
            }
            // An unknown type: the stream is not what we parse; never match.
            _ => None,
        }
    }
}
