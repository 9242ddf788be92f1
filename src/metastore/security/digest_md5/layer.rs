//! The DIGEST-MD5 security layer (RFC 2831 2.3, 2.4): the frames of "auth-int" and
//! "auth-conf" once the challenge-response has agreed on keys, with the cipher, key and IV
//! derivation of Java's `DigestMD5Base`.

use cbc::cipher::{BlockModeDecrypt, BlockModeEncrypt, KeyInit, KeyIvInit, StreamCipher};
use hmac::{Hmac, Mac};
use md5::{Digest as _, Md5};

/// The ciphers of "auth-conf", in Java's order of preference (strongest first, and at equal
/// strength the order of its DigestMD5Base).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Cipher {
    TripleDes,
    Rc4,
    Des,
    Rc4_56,
    Rc4_40,
}

impl Cipher {
    const PREFERENCE: [Cipher; 5] = [
        Cipher::TripleDes,
        Cipher::Rc4,
        Cipher::Des,
        Cipher::Rc4_56,
        Cipher::Rc4_40,
    ];

    pub(super) fn token(self) -> &'static str {
        match self {
            Cipher::TripleDes => "3des",
            Cipher::Rc4 => "rc4",
            Cipher::Des => "des",
            Cipher::Rc4_56 => "rc4-56",
            Cipher::Rc4_40 => "rc4-40",
        }
    }

    /// The first of ours that a challenge's `cipher` list names.
    pub(super) fn choose(offered: &str) -> Option<Cipher> {
        let offered: Vec<&str> = offered.split(',').map(str::trim).collect();
        Cipher::PREFERENCE
            .into_iter()
            .find(|c| offered.iter().any(|o| o.eq_ignore_ascii_case(c.token())))
    }

    /// How much of H(A1) the confidentiality keys are derived from (RFC 2831 2.4).
    fn ha1_prefix(self) -> usize {
        match self {
            Cipher::Rc4_40 => 5,
            Cipher::Rc4_56 => 7,
            _ => 16,
        }
    }
}

const KIC_MAGIC: &[u8] = b"Digest session key to client-to-server signing key magic constant";
const KIS_MAGIC: &[u8] = b"Digest session key to server-to-client signing key magic constant";
const KCC_MAGIC: &[u8] = b"Digest H(A1) to client-to-server sealing key magic constant";
const KCS_MAGIC: &[u8] = b"Digest H(A1) to server-to-client sealing key magic constant";
/// The client's keys: Kic to sign and Kis to check, Kcc to encrypt and Kcs to decrypt.
pub(super) const CLIENT_MAGIC: [&[u8]; 4] = [KIC_MAGIC, KIS_MAGIC, KCC_MAGIC, KCS_MAGIC];
/// The message type every DIGEST-MD5 frame carries (RFC 2831 2.3).
const MESSAGE_TYPE: [u8; 2] = [0, 1];
/// Bytes of the HMAC-MD5 a frame carries.
const MAC_LEN: usize = 10;
/// Message type and sequence number, after the MAC or the ciphertext.
const TRAILER_LEN: usize = 6;

pub(super) fn md5_of(parts: &[&[u8]]) -> [u8; 16] {
    let mut h = Md5::new();
    for p in parts {
        h.update(p);
    }
    h.finalize().into()
}

/// The state of an integrity or privacy layer: one direction each way.
pub(super) struct Layer {
    /// Kic: MACs of what we send.
    send_key: [u8; 16],
    /// Kis: MACs of what the server sends.
    receive_key: [u8; 16],
    send_seq: u32,
    receive_seq: u32,
    /// Privacy's ciphers; `None` for integrity.
    seal: Option<Seal>,
}

struct Seal {
    cipher: Cipher,
    encrypt: Encryptor,
    decrypt: Decryptor,
}

/// One direction's cipher, with its state (RC4's keystream and the CBC chain run on from
/// frame to frame).
enum Sealer<D, T> {
    /// Boxed: RC4's state is 258 bytes, the DES ciphers' a fraction of it.
    Rc4(Box<rc4::Rc4>),
    Des(D),
    TripleDes(T),
}

type Encryptor = Sealer<cbc::Encryptor<des::Des>, cbc::Encryptor<des::TdesEde2>>;
type Decryptor = Sealer<cbc::Decryptor<des::Des>, cbc::Decryptor<des::TdesEde2>>;

/// DES block size: the padding unit of the DES ciphers.
const DES_BLOCK: usize = 8;

impl Layer {
    /// The layer from H(A1) (the session key both sides derived), for the end whose magic
    /// constants `magic` names: [`CLIENT_MAGIC`] for ours.
    pub(super) fn new(ha1: &[u8; 16], cipher: Option<Cipher>, magic: [&[u8]; 4]) -> Self {
        let [send, receive, seal, unseal] = magic;
        let seal = cipher.map(|cipher| {
            let ha1 = &ha1[..cipher.ha1_prefix()];
            Seal {
                cipher,
                encrypt: Encryptor::new(cipher, &md5_of(&[ha1, seal])),
                decrypt: Decryptor::new(cipher, &md5_of(&[ha1, unseal])),
            }
        });
        Layer {
            send_key: md5_of(&[ha1, send]),
            receive_key: md5_of(&[ha1, receive]),
            send_seq: 0,
            receive_seq: 0,
            seal,
        }
    }

    /// The cipher of privacy; `None` for integrity.
    pub(super) fn cipher(&self) -> Option<Cipher> {
        self.seal.as_ref().map(|s| s.cipher)
    }

    fn mac(key: &[u8; 16], seq: u32, data: &[u8]) -> Hmac<Md5> {
        let mut mac =
            <Hmac<Md5> as KeyInit>::new_from_slice(key).expect("HMAC takes keys of any length");
        mac.update(&seq.to_be_bytes());
        mac.update(data);
        mac
    }

    /// Integrity: `data, MAC, type, seq`; privacy: `CIPHER(data, padding, MAC), type, seq`.
    pub(super) fn wrap(&mut self, data: &[u8]) -> Vec<u8> {
        let seq = self.send_seq;
        self.send_seq = self.send_seq.wrapping_add(1);
        let mac = Self::mac(&self.send_key, seq, data).finalize().into_bytes();
        let mut out = Vec::with_capacity(data.len() + DES_BLOCK + MAC_LEN + TRAILER_LEN);
        out.extend_from_slice(data);
        match &mut self.seal {
            None => out.extend_from_slice(&mac[..MAC_LEN]),
            Some(seal) => {
                if seal.encrypt.is_block() {
                    // 1 to 8 bytes, each the count, so the sealed part is whole blocks.
                    let pad = DES_BLOCK - (data.len() + MAC_LEN) % DES_BLOCK;
                    out.resize(out.len() + pad, pad as u8);
                }
                out.extend_from_slice(&mac[..MAC_LEN]);
                seal.encrypt.apply(&mut out);
            }
        }
        out.extend_from_slice(&MESSAGE_TYPE);
        out.extend_from_slice(&seq.to_be_bytes());
        out
    }

    /// The message of a frame from the server, once its MAC, type and sequence number check.
    pub(super) fn unwrap(&mut self, frame: &[u8]) -> Result<Vec<u8>, String> {
        let bad = |what: &str| {
            format!(
                "a DIGEST-MD5 frame from the metastore ({} bytes) {what}; the connection is \
                 corrupt or tampered with",
                frame.len()
            )
        };
        let Some(body_len) = frame.len().checked_sub(TRAILER_LEN) else {
            return Err(bad("is too short"));
        };
        let (body, trailer) = frame.split_at(body_len);
        let (message, mac) = match &mut self.seal {
            None => {
                let Some(len) = body.len().checked_sub(MAC_LEN) else {
                    return Err(bad("is too short"));
                };
                let (message, mac) = body.split_at(len);
                (message.to_vec(), mac.to_vec())
            }
            Some(seal) => {
                let block = seal.decrypt.is_block();
                let least = if block { 2 * DES_BLOCK } else { MAC_LEN };
                if body.len() < least || (block && !body.len().is_multiple_of(DES_BLOCK)) {
                    return Err(bad("is not whole cipher blocks"));
                }
                let mut plain = body.to_vec();
                seal.decrypt.apply(&mut plain);
                let mac = plain.split_off(plain.len() - MAC_LEN);
                if block {
                    let pad = usize::from(*plain.last().expect("at least one block left"));
                    if !(1..=DES_BLOCK).contains(&pad)
                        || !plain[plain.len() - pad..]
                            .iter()
                            .all(|&b| usize::from(b) == pad)
                    {
                        return Err(bad("has invalid padding (wrong key or cipher)"));
                    }
                    plain.truncate(plain.len() - pad);
                }
                (plain, mac)
            }
        };
        let seq = u32::from_be_bytes(trailer[2..6].try_into().expect("4 bytes"));
        Self::mac(&self.receive_key, seq, &message)
            .verify_truncated_left(&mac)
            .map_err(|_| bad("fails its integrity check (HMAC-MD5)"))?;
        if trailer[..2] != MESSAGE_TYPE {
            return Err(bad(&format!(
                "has message type {}, not 1",
                u16::from_be_bytes([trailer[0], trailer[1]])
            )));
        }
        if seq != self.receive_seq {
            return Err(bad(&format!(
                "has sequence number {seq} where {} was due (replayed, lost or reordered)",
                self.receive_seq
            )));
        }
        self.receive_seq = self.receive_seq.wrapping_add(1);
        Ok(message)
    }
}

/// A DES key from 7 bytes: each 7 bits in the high bits of a byte, the low bit odd parity
/// (DES ignores it; set as Java sets it).
fn des_key(seven: &[u8]) -> [u8; 8] {
    let mut wide = [0u8; 8];
    wide[1..].copy_from_slice(&seven[..7]);
    let bits = u64::from_be_bytes(wide);
    std::array::from_fn(|i| {
        let b = ((bits >> (49 - 7 * i)) as u8) << 1;
        b | u8::from(b.count_ones().is_multiple_of(2))
    })
}

impl<D: KeyIvInit, T: KeyIvInit> Sealer<D, T> {
    /// From Kc (Kcc to send, Kcs to receive).
    fn new(cipher: Cipher, kc: &[u8; 16]) -> Self {
        let iv = &kc[8..];
        match cipher {
            Cipher::Rc4 | Cipher::Rc4_56 | Cipher::Rc4_40 => Sealer::Rc4(Box::new(
                rc4::Rc4::new_from_slice(kc).expect("RC4 takes 16-byte keys"),
            )),
            Cipher::Des => {
                Sealer::Des(D::new_from_slices(&des_key(&kc[..7]), iv).expect("DES key and IV"))
            }
            Cipher::TripleDes => {
                let key = [des_key(&kc[..7]), des_key(&kc[7..14])].concat();
                Sealer::TripleDes(T::new_from_slices(&key, iv).expect("3DES key and IV"))
            }
        }
    }

    /// A block cipher (padded to whole blocks), not RC4.
    fn is_block(&self) -> bool {
        !matches!(self, Sealer::Rc4(_))
    }
}

impl Encryptor {
    /// Encrypts in place; `data` is whole blocks for the block ciphers.
    fn apply(&mut self, data: &mut [u8]) {
        match self {
            Sealer::Rc4(c) => c.apply_keystream(data),
            Sealer::Des(c) => c.encrypt_blocks(blocks(data)),
            Sealer::TripleDes(c) => c.encrypt_blocks(blocks(data)),
        }
    }
}

impl Decryptor {
    fn apply(&mut self, data: &mut [u8]) {
        match self {
            Sealer::Rc4(c) => c.apply_keystream(data),
            Sealer::Des(c) => c.decrypt_blocks(blocks(data)),
            Sealer::TripleDes(c) => c.decrypt_blocks(blocks(data)),
        }
    }
}

/// Whole DES blocks of `data` (a multiple of 8 bytes: the caller padded or checked it).
fn blocks(data: &mut [u8]) -> &mut [cbc::cipher::Block<des::Des>] {
    let (blocks, rest) = cbc::cipher::Block::<des::Des>::slice_as_chunks_mut(data);
    debug_assert!(rest.is_empty());
    blocks
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn des_keys_spread_seven_bytes_over_eight_with_odd_parity() {
        assert_eq!(des_key(&[0; 7]), [1; 8]);
        assert_eq!(des_key(&[0xff; 7]), [0xfe; 8]);
        // 0x80 0x00 ... : the first bit lands in the first byte's top bit.
        assert_eq!(
            des_key(&[0x80, 0, 0, 0, 0, 0, 0]),
            [0x80, 1, 1, 1, 1, 1, 1, 1]
        );
        // The last 7 bits land in the last byte, shifted over the parity bit.
        assert_eq!(
            des_key(&[0, 0, 0, 0, 0, 0, 0x7f]),
            [1, 1, 1, 1, 1, 1, 1, 0xfe]
        );
        for key in [
            des_key(b"\x12\x34\x56\x78\x9a\xbc\xde"),
            des_key(&[0x5a; 7]),
        ] {
            assert!(key.iter().all(|b| b.count_ones() % 2 == 1), "{key:02x?}");
        }
    }

    /// The layers of both ends: the server's has the same keys, the directions swapped.
    fn pair(cipher: Option<Cipher>) -> (Layer, Layer) {
        let ha1 = md5_of(&[b"a session key"]);
        let server_magic = [KIS_MAGIC, KIC_MAGIC, KCS_MAGIC, KCC_MAGIC];
        (
            Layer::new(&ha1, cipher, CLIENT_MAGIC),
            Layer::new(&ha1, cipher, server_magic),
        )
    }

    const LAYERS: [Option<Cipher>; 6] = [
        None,
        Some(Cipher::TripleDes),
        Some(Cipher::Rc4),
        Some(Cipher::Des),
        Some(Cipher::Rc4_56),
        Some(Cipher::Rc4_40),
    ];

    #[test]
    fn frames_round_trip_both_ways_frame_after_frame() {
        for cipher in LAYERS {
            let (mut client, mut server) = pair(cipher);
            for len in [1usize, 5, 6, 7, 8, 13, 14, 100, 65_536] {
                let msg: Vec<u8> = (0..len).map(|i| (i * 7 + len) as u8).collect();
                let frame = client.wrap(&msg);
                // Privacy: the message is not in the frame as it is.
                if cipher.is_some() && len >= 8 {
                    assert!(
                        !frame.windows(8).any(|w| w == &msg[..8]),
                        "{cipher:?} {len}"
                    );
                } else if cipher.is_none() {
                    assert_eq!(&frame[..len], msg, "integrity sends the message as it is");
                }
                assert_eq!(server.unwrap(&frame).unwrap(), msg, "{cipher:?} {len}");
                let back = server.wrap(&msg[..len / 2]);
                assert_eq!(
                    client.unwrap(&back).unwrap(),
                    &msg[..len / 2],
                    "{cipher:?} {len}"
                );
            }
        }
    }

    #[test]
    fn every_flipped_bit_and_every_short_frame_is_refused_in_one_line() {
        for cipher in LAYERS {
            let msg = b"get_table_req(db.events)";
            let frame = pair(cipher).1.wrap(msg);
            for bit in 0..frame.len() * 8 {
                let mut bad = frame.clone();
                bad[bit / 8] ^= 1 << (bit % 8);
                let err = pair(cipher).0.unwrap(&bad).unwrap_err();
                assert!(err.contains("DIGEST-MD5 frame"), "{err}");
                assert!(!err.contains('\n'), "{err}");
            }
            for len in 0..frame.len() {
                let garbage: Vec<u8> = (0..len).map(|i| i as u8).collect();
                assert!(pair(cipher).0.unwrap(&garbage).is_err(), "{cipher:?} {len}");
                assert!(
                    pair(cipher).0.unwrap(&frame[..len]).is_err(),
                    "{cipher:?} {len}"
                );
            }
            assert_eq!(pair(cipher).0.unwrap(&frame).unwrap(), msg);
        }
    }

    #[test]
    fn replayed_and_reordered_frames_are_refused() {
        for cipher in LAYERS {
            let (_, mut server) = pair(cipher);
            let first = server.wrap(b"first");
            let second = server.wrap(b"second");
            let (mut client, _) = pair(cipher);
            client.unwrap(&first).unwrap();
            // Replayed: integrity sees the old sequence number; a cipher's state has moved on.
            let err = client.unwrap(&first).unwrap_err();
            if cipher.is_none() {
                assert!(err.contains("sequence number 0 where 1 was due"), "{err}");
            }
            let (mut client, _) = pair(cipher);
            assert!(client.unwrap(&second).is_err(), "{cipher:?}");
        }
        // A frame of another message type, correctly signed.
        let (mut client, mut server) = pair(None);
        let mut frame = server.wrap(b"x");
        let n = frame.len();
        frame[n - 6..n - 4].copy_from_slice(&[0, 2]);
        assert!(client
            .unwrap(&frame)
            .unwrap_err()
            .contains("message type 2, not 1"));
    }
}
