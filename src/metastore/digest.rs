//! SASL DIGEST-MD5 (RFC 2831), client side, as a metastore task logs in with a delegation
//! token: user name and password are the token's identifier and password in base64 (Hadoop's
//! convention), the realm is the one the server's challenge names (Hadoop's "default").
//!
//! Written here because no maintained Rust crate offers the client: rsasl has no DIGEST-MD5
//! (RFC 6331 moved it to historic), and hdfs-native's own implementation is private to it. Only
//! the "auth" protection (authentication, no security layer) is supported: a metastore that
//! insists on integrity or privacy for tokens (`hadoop.rpc.protection` without
//! `authentication`) is refused with a message saying so.

use md5::{Digest as _, Md5};

use super::sasl::{Failure, Mechanism, Qop};
use super::token::DelegationToken;

/// What Hive's Java client and server both name the service: `protocol + "/" + serverName`
/// with a null protocol and Hadoop's default realm as server name (HadoopThriftAuthBridge), so
/// the server expects exactly this digest-uri.
pub(crate) const HIVE_DIGEST_URI: &str = "null/default";

#[derive(Debug, PartialEq, Eq)]
enum State {
    /// Waiting for the server's challenge.
    Challenge,
    /// Answered; waiting for the server's `rspauth`.
    Verify {
        rspauth: String,
    },
    Done,
}

pub(crate) struct DigestMd5 {
    username: String,
    password: String,
    digest_uri: String,
    /// The client's `hadoop.rpc.protection`; `None`: whatever the server offers.
    wanted: Option<Vec<Qop>>,
    cnonce: String,
    state: State,
}

impl DigestMd5 {
    pub(crate) fn new(token: &DelegationToken, wanted: Option<Vec<Qop>>) -> Self {
        DigestMd5 {
            username: token.sasl_username(),
            password: token.sasl_password(),
            digest_uri: HIVE_DIGEST_URI.to_owned(),
            wanted,
            cnonce: new_cnonce(),
            state: State::Challenge,
        }
    }

    fn answer(&mut self, challenge: &[u8]) -> Result<Vec<u8>, Failure> {
        let text = std::str::from_utf8(challenge)
            .map_err(|_| Failure::Protocol("DIGEST-MD5 challenge is not UTF-8".into()))?;
        let directives = parse_directives(text).map_err(Failure::Protocol)?;
        let get = |k: &str| {
            directives
                .iter()
                .find(|(n, _)| n.eq_ignore_ascii_case(k))
                .map(|(_, v)| v.as_str())
        };
        let nonce = get("nonce")
            .ok_or_else(|| Failure::Protocol("DIGEST-MD5 challenge without a nonce".into()))?
            .to_owned();
        if !get("algorithm").is_some_and(|a| a.eq_ignore_ascii_case("md5-sess")) {
            return Err(Failure::Protocol(
                "DIGEST-MD5 challenge without algorithm=md5-sess".into(),
            ));
        }
        // RFC 2831: no qop directive means "auth" only.
        let offered: Vec<String> = get("qop")
            .unwrap_or("auth")
            .split(',')
            .map(|q| q.trim().to_ascii_lowercase())
            .collect();
        let auth_offered = offered.iter().any(|q| q == "auth");
        let auth_wanted = self.wanted.as_ref().is_none_or(|w| w.contains(&Qop::Auth));
        if !auth_offered || !auth_wanted {
            return Err(Failure::NoCommonQop {
                offered: offered
                    .iter()
                    .map(|q| match q.as_str() {
                        "auth" => "authentication",
                        "auth-int" => "integrity",
                        "auth-conf" => "privacy",
                        other => other,
                    })
                    .collect::<Vec<_>>()
                    .join(","),
                wanted: "authentication (the only one this client's DIGEST-MD5 supports)".into(),
            });
        }
        // The first realm the server names; none means the empty realm.
        let realm = get("realm").unwrap_or("").to_owned();
        let utf8 = get("charset").is_some_and(|c| c.eq_ignore_ascii_case("utf-8"));
        let nc = "00000001";
        let inputs = Inputs {
            username: &self.username,
            realm: &realm,
            password: &self.password,
            nonce: &nonce,
            cnonce: &self.cnonce,
            nc,
            qop: "auth",
            digest_uri: &self.digest_uri,
            client: true,
        };
        let response = response_value(&inputs);
        // What the server must prove back: the same inputs, its side of A2.
        let rspauth = response_value(&Inputs {
            client: false,
            ..inputs
        });
        let mut out = String::new();
        if utf8 {
            out.push_str("charset=utf-8,");
        }
        out.push_str(&format!(
            "username={},realm={},nonce={},nc={nc},cnonce={},digest-uri={},response={response},qop=auth",
            quote(&self.username),
            quote(&realm),
            quote(&nonce),
            quote(&self.cnonce),
            quote(&self.digest_uri),
        ));
        self.state = State::Verify { rspauth };
        Ok(out.into_bytes())
    }
}

impl Mechanism for DigestMd5 {
    fn name(&self) -> &'static str {
        "DIGEST-MD5"
    }

    /// DIGEST-MD5 has no initial response: the server speaks first.
    fn initial(&mut self) -> Result<Vec<u8>, Failure> {
        Ok(Vec::new())
    }

    fn step(&mut self, challenge: &[u8]) -> Result<Vec<u8>, Failure> {
        match &self.state {
            State::Challenge => self.answer(challenge),
            State::Verify { rspauth } => {
                // The server proves it knows the password too (mutual authentication).
                let text = String::from_utf8_lossy(challenge);
                let got = parse_directives(&text)
                    .map_err(Failure::Protocol)?
                    .into_iter()
                    .find(|(k, _)| k.eq_ignore_ascii_case("rspauth"))
                    .map(|(_, v)| v);
                if got.as_deref() != Some(rspauth.as_str()) {
                    return Err(Failure::Protocol(
                        "the metastore's DIGEST-MD5 rspauth does not match the token".into(),
                    ));
                }
                self.state = State::Done;
                Ok(Vec::new())
            }
            State::Done => Err(Failure::Protocol(
                "DIGEST-MD5 challenge after authentication completed".into(),
            )),
        }
    }

    fn is_complete(&self) -> bool {
        self.state == State::Done
    }

    fn qop(&self) -> Qop {
        Qop::Auth
    }

    // Never called with "auth": the transport frames bytes as they are.
    fn wrap(&mut self, _: &[u8]) -> Result<Vec<u8>, Failure> {
        Err(Failure::Protocol(
            "DIGEST-MD5 security layers are not supported".into(),
        ))
    }

    fn unwrap(&mut self, _: &[u8]) -> Result<Vec<u8>, Failure> {
        Err(Failure::Protocol(
            "DIGEST-MD5 security layers are not supported".into(),
        ))
    }
}

/// 16 random bytes in hex: the client nonce must not be guessable (RFC 2831 2.1.2).
fn new_cnonce() -> String {
    let mut b = [0u8; 16];
    // The OS random source does not fail on Linux once booted; if it ever did, a time-based
    // nonce still keeps each exchange distinct (the password's secrecy does not rest on it).
    if getrandom::fill(&mut b).is_err() {
        let t = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default()
            .as_nanos();
        b.copy_from_slice(&t.to_le_bytes());
    }
    hex(&b)
}

#[derive(Clone, Copy)]
struct Inputs<'a> {
    username: &'a str,
    realm: &'a str,
    password: &'a str,
    nonce: &'a str,
    cnonce: &'a str,
    nc: &'a str,
    qop: &'a str,
    digest_uri: &'a str,
    /// `true`: the client's `response`; `false`: the server's `rspauth` (A2 without
    /// "AUTHENTICATE").
    client: bool,
}

/// RFC 2831 2.1.2.1, qop "auth", no authzid:
/// `HEX(H(HEX(H(A1)):nonce:nc:cnonce:qop:HEX(H(A2))))`, with
/// `A1 = H(user:realm:password):nonce:cnonce` (the inner hash raw, not hex) and
/// `A2 = "AUTHENTICATE:" digest-uri` (without "AUTHENTICATE" for `rspauth`).
fn response_value(i: &Inputs<'_>) -> String {
    let secret = Md5::digest(format!("{}:{}:{}", i.username, i.realm, i.password));
    let mut a1 = secret.to_vec();
    a1.extend_from_slice(format!(":{}:{}", i.nonce, i.cnonce).as_bytes());
    let a2 = if i.client {
        format!("AUTHENTICATE:{}", i.digest_uri)
    } else {
        format!(":{}", i.digest_uri)
    };
    let kd = format!(
        "{}:{}:{}:{}:{}:{}",
        hex(&Md5::digest(&a1)),
        i.nonce,
        i.nc,
        i.cnonce,
        i.qop,
        hex(&Md5::digest(a2.as_bytes()))
    );
    hex(&Md5::digest(kd.as_bytes()))
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn quote(s: &str) -> String {
    let mut q = String::with_capacity(s.len() + 2);
    q.push('"');
    for c in s.chars() {
        if c == '"' || c == '\\' {
            q.push('\\');
        }
        q.push(c);
    }
    q.push('"');
    q
}

/// `name=value` pairs separated by commas (RFC 2831 7.1: values are tokens or quoted strings
/// with backslash escapes; empty elements and white space around them are allowed).
fn parse_directives(s: &str) -> Result<Vec<(String, String)>, String> {
    let mut out = Vec::new();
    let mut chars = s.chars().peekable();
    loop {
        while chars.peek().is_some_and(|c| c.is_whitespace() || *c == ',') {
            chars.next();
        }
        if chars.peek().is_none() {
            return Ok(out);
        }
        let mut name = String::new();
        while let Some(&c) = chars.peek() {
            if c == '=' || c == ',' || c.is_whitespace() {
                break;
            }
            name.push(c);
            chars.next();
        }
        while chars.peek().is_some_and(|c| c.is_whitespace()) {
            chars.next();
        }
        if chars.next() != Some('=') {
            return Err(format!("DIGEST-MD5 directive {name:?} has no value"));
        }
        while chars.peek().is_some_and(|c| c.is_whitespace()) {
            chars.next();
        }
        let mut value = String::new();
        if chars.peek() == Some(&'"') {
            chars.next();
            loop {
                match chars.next() {
                    Some('"') => break,
                    Some('\\') => match chars.next() {
                        Some(c) => value.push(c),
                        None => return Err("DIGEST-MD5 challenge ends inside a quote".into()),
                    },
                    Some(c) => value.push(c),
                    None => return Err("DIGEST-MD5 challenge ends inside a quote".into()),
                }
            }
        } else {
            while let Some(&c) = chars.peek() {
                if c == ',' {
                    break;
                }
                value.push(c);
                chars.next();
            }
            value = value.trim_end().to_owned();
        }
        out.push((name, value));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// RFC 2831 section 4, example 1 (IMAP).
    fn rfc_imap(client: bool) -> String {
        response_value(&Inputs {
            username: "chris",
            realm: "elwood.innosoft.com",
            password: "secret",
            nonce: "OA6MG9tEQGm2hh",
            cnonce: "OA6MHXh6VqTrRk",
            nc: "00000001",
            qop: "auth",
            digest_uri: "imap/elwood.innosoft.com",
            client,
        })
    }

    #[test]
    fn rfc_2831_imap_example() {
        assert_eq!(rfc_imap(true), "d388dad90d4bbd760a152321f2143af7");
        assert_eq!(rfc_imap(false), "ea40f60335c427b5527b84dbabcdfffd");
    }

    #[test]
    fn rfc_2831_acap_example() {
        let i = |client| Inputs {
            username: "chris",
            realm: "elwood.innosoft.com",
            password: "secret",
            nonce: "OA9BSXrbuRhWay",
            cnonce: "OA9BSuZWMSpW8m",
            nc: "00000001",
            qop: "auth",
            digest_uri: "acap/elwood.innosoft.com",
            client,
        };
        assert_eq!(response_value(&i(true)), "6084c6db3fede7352c551284490fd0fc");
        assert_eq!(
            response_value(&i(false)),
            "2f0b3d7c3c2e486600ef710726aa2eae"
        );
    }

    #[test]
    fn directives_parse_quotes_escapes_and_tokens() {
        let d = parse_directives(
            r#"realm="elwood.innosoft.com",nonce="OA6MG9tEQGm2hh",qop="auth",algorithm=md5-sess ,charset=utf-8, x="a\"b\\c",,"#,
        )
        .unwrap();
        assert_eq!(d[0], ("realm".into(), "elwood.innosoft.com".into()));
        assert_eq!(d[3], ("algorithm".into(), "md5-sess".into()));
        assert_eq!(d[4], ("charset".into(), "utf-8".into()));
        assert_eq!(d[5], ("x".into(), "a\"b\\c".into()));
        assert!(parse_directives("nonce").is_err());
        assert!(parse_directives("nonce=\"abc").is_err());
        assert_eq!(quote("a\"b\\"), r#""a\"b\\""#);
    }

    fn mech(cnonce: &str, wanted: Option<Vec<Qop>>) -> DigestMd5 {
        DigestMd5 {
            username: "chris".into(),
            password: "secret".into(),
            digest_uri: "imap/elwood.innosoft.com".into(),
            wanted,
            cnonce: cnonce.into(),
            state: State::Challenge,
        }
    }

    #[test]
    fn the_exchange_answers_the_rfc_challenge_and_checks_rspauth() {
        let mut m = mech("OA6MHXh6VqTrRk", None);
        assert!(m.initial().unwrap().is_empty());
        let challenge = br#"realm="elwood.innosoft.com",nonce="OA6MG9tEQGm2hh",qop="auth-conf,auth-int,auth",algorithm=md5-sess,charset=utf-8"#;
        let answer = String::from_utf8(m.step(challenge).unwrap()).unwrap();
        let d = parse_directives(&answer).unwrap();
        let get = |k: &str| d.iter().find(|(n, _)| n == k).unwrap().1.clone();
        assert_eq!(get("response"), "d388dad90d4bbd760a152321f2143af7");
        assert_eq!(get("qop"), "auth");
        assert_eq!(get("charset"), "utf-8");
        assert_eq!(get("digest-uri"), "imap/elwood.innosoft.com");
        assert!(!m.is_complete());
        // A wrong rspauth means the server does not know the password.
        let mut wrong = mech("OA6MHXh6VqTrRk", None);
        wrong.step(challenge).unwrap();
        assert!(matches!(
            wrong.step(b"rspauth=00000000000000000000000000000000"),
            Err(Failure::Protocol(_))
        ));
        m.step(b"rspauth=ea40f60335c427b5527b84dbabcdfffd").unwrap();
        assert!(m.is_complete());
        assert_eq!(m.qop(), Qop::Auth);
    }

    #[test]
    fn only_auth_is_supported_and_that_is_said() {
        let challenge = br#"realm="r",nonce="n",qop="auth-conf,auth-int",algorithm=md5-sess"#;
        match mech("c", None).step(challenge) {
            Err(Failure::NoCommonQop { offered, .. }) => assert_eq!(offered, "privacy,integrity"),
            other => panic!("{:?}", other.map(|_| ())),
        }
        let all = br#"realm="r",nonce="n",qop="auth,auth-int",algorithm=md5-sess"#;
        assert!(matches!(
            mech("c", Some(vec![Qop::Privacy])).step(all),
            Err(Failure::NoCommonQop { .. })
        ));
        // Without algorithm=md5-sess or a nonce it is not DIGEST-MD5.
        assert!(matches!(
            mech("c", None).step(br#"nonce="n""#),
            Err(Failure::Protocol(_))
        ));
        assert!(matches!(
            mech("c", None).step(b"algorithm=md5-sess"),
            Err(Failure::Protocol(_))
        ));
    }

    #[test]
    fn cnonces_differ() {
        assert_ne!(new_cnonce(), new_cnonce());
        assert_eq!(new_cnonce().len(), 32);
    }
}
