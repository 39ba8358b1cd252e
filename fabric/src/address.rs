//! The exported form of an endpoint address, for bootstrap exchange.
//!
//! Layout (little-endian), 32 bytes of header then the provider's raw name:
//!
//! | offset | size | field |
//! |---|---|---|
//! | 0 | 4 | magic `SFAD` |
//! | 4 | 2 | version (2) |
//! | 6 | 2 | length of the raw name |
//! | 8 | 4 | libfabric address format of the name |
//! | 12 | 4 | FNV-1a (low 32 bits) of the provider name |
//! | 16 | 4 | pid of the owning process |
//! | 20 | 4 | generation of the owning process (its incarnation: 0 on first start, one more at each restart in place) |
//! | 24 | 8 | host identity ([`steadfast_os::host_identity`]) |
//! | 32 | n | raw provider name (`fi_getname`) |
//!
//! Decoding checks every field against the local endpoint before any byte reaches
//! libfabric, so malformed input is an error, never undefined behaviour. Version 1 (the
//! same layout with bytes 20..24 reserved) is refused: a peer that does not say which
//! incarnation it is cannot be fenced (see `docs/restart.md`).

use crate::error::{Error, Result};
use steadfast_os::fnv1a64;

const MAGIC: [u8; 4] = *b"SFAD";
const VERSION: u16 = 2;
const HEADER_LEN: usize = 32;
/// Longest raw name accepted (sockaddr_in6 is 28 bytes, shm names are short strings).
const MAX_NAME_LEN: usize = 1024;

/// An endpoint address with the facts a peer needs: provider, format, owning process.
///
/// ```
/// use steadfast_fabric::PeerAddress;
///
/// let address = PeerAddress {
///     addr_format: 1,
///     provider_hash: 7,
///     pid: std::process::id(),
///     host: steadfast_os::host_identity(),
///     generation: 0,
///     raw: vec![1, 2, 3, 4],
/// };
/// // What the bootstrap carries between processes.
/// let bytes = address.to_bytes();
/// assert_eq!(PeerAddress::from_bytes(&bytes)?, address);
/// assert!(PeerAddress::from_bytes(&bytes[..10]).is_err(), "short input is an error");
/// # Ok::<(), steadfast_fabric::Error>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PeerAddress {
    /// libfabric address format (`FI_SOCKADDR_IN`, `FI_ADDR_STR`, ...).
    pub addr_format: u32,
    /// Hash of the provider name, so that addresses of different providers don't mix.
    pub provider_hash: u32,
    /// Pid of the process that owns the endpoint.
    pub pid: u32,
    /// Host identity of that process.
    pub host: u64,
    /// The owning process's incarnation of its rank (0 on first start, one more at
    /// each restart in place): a survivor admits an address only for a newer one.
    pub generation: u32,
    /// The provider's raw address.
    pub raw: Vec<u8>,
}

/// The 32-bit provider hash used in addresses.
pub(crate) fn provider_hash(provider: &str) -> u32 {
    fnv1a64(provider.as_bytes()) as u32
}

impl PeerAddress {
    /// Encodes to bytes.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(HEADER_LEN + self.raw.len());
        out.extend_from_slice(&MAGIC);
        out.extend_from_slice(&VERSION.to_le_bytes());
        out.extend_from_slice(&(self.raw.len() as u16).to_le_bytes());
        out.extend_from_slice(&self.addr_format.to_le_bytes());
        out.extend_from_slice(&self.provider_hash.to_le_bytes());
        out.extend_from_slice(&self.pid.to_le_bytes());
        out.extend_from_slice(&self.generation.to_le_bytes());
        out.extend_from_slice(&self.host.to_le_bytes());
        out.extend_from_slice(&self.raw);
        out
    }

    /// Decodes bytes, checking only their own consistency.
    ///
    /// # Errors
    /// [`Error::MalformedAddress`] for a short buffer, a wrong magic or version, or a
    /// length that does not match.
    pub fn from_bytes(bytes: &[u8]) -> Result<Self> {
        let bad = |why: String| Err(Error::MalformedAddress(why));
        if bytes.len() < HEADER_LEN {
            return bad(format!(
                "{} bytes, shorter than the {HEADER_LEN}-byte header",
                bytes.len()
            ));
        }
        if bytes[0..4] != MAGIC {
            return bad("not a steadfast address (bad magic)".into());
        }
        let u16_at = |o: usize| u16::from_le_bytes([bytes[o], bytes[o + 1]]);
        let u32_at = |o: usize| u32::from_le_bytes(bytes[o..o + 4].try_into().expect("4 bytes"));
        let version = u16_at(4);
        if version != VERSION {
            return bad(format!("address version {version}, expected {VERSION}"));
        }
        let name_len = usize::from(u16_at(6));
        if name_len == 0 || name_len > MAX_NAME_LEN || bytes.len() != HEADER_LEN + name_len {
            return bad(format!(
                "name length {name_len} does not match {} bytes",
                bytes.len()
            ));
        }
        Ok(PeerAddress {
            addr_format: u32_at(8),
            provider_hash: u32_at(12),
            pid: u32_at(16),
            generation: u32_at(20),
            host: u64::from_le_bytes(bytes[24..32].try_into().expect("8 bytes")),
            raw: bytes[HEADER_LEN..].to_vec(),
        })
    }

    /// Checks that this address can be given to a local endpoint of `provider` whose
    /// own address is `local`.
    ///
    /// # Errors
    /// [`Error::MalformedAddress`] naming the mismatch.
    pub fn check_compatible(&self, local: &PeerAddress, provider: &str) -> Result<()> {
        if self.provider_hash != local.provider_hash {
            return Err(Error::MalformedAddress(format!(
                "address is not of provider {provider:?}"
            )));
        }
        if self.addr_format != local.addr_format {
            return Err(Error::MalformedAddress(format!(
                "address format {} differs from the local endpoint's {}",
                self.addr_format, local.addr_format
            )));
        }
        if self.addr_format == STRING_FORMAT {
            // String addresses (shm's name embeds the peer's pid) differ in length from
            // process to process. The provider reads them up to a NUL: there must be
            // exactly one, at the end, so that it never reads past the bytes we hold.
            let nul = self.raw.iter().position(|&b| b == 0);
            if self.raw.is_empty()
                || self.raw.len() > MAX_STRING_ADDRESS
                || nul != Some(self.raw.len() - 1)
            {
                return Err(Error::MalformedAddress(format!(
                    "string address of {} bytes is not one NUL-terminated string of at most {MAX_STRING_ADDRESS} bytes",
                    self.raw.len()
                )));
            }
            return Ok(());
        }
        if self.raw.len() != local.raw.len() {
            return Err(Error::MalformedAddress(format!(
                "raw address of {} bytes, the provider's are {} bytes",
                self.raw.len(),
                local.raw.len()
            )));
        }
        Ok(())
    }
}

/// libfabric's `FI_ADDR_STR`: a NUL-terminated string address. (bindgen types the
/// enum's constants by platform: the cast is a no-op here, not everywhere.)
#[allow(clippy::unnecessary_cast)]
const STRING_FORMAT: u32 = steadfast_fabric_sys::FI_ADDR_STR as u32;
/// Longest string address accepted.
const MAX_STRING_ADDRESS: usize = 256;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn string_addresses_may_differ_in_length_but_must_end_in_their_only_nul() {
        let local = PeerAddress {
            addr_format: STRING_FORMAT,
            provider_hash: provider_hash("shm"),
            pid: 1,
            host: 7,
            generation: 0,
            raw: b"fi_shm://999\0".to_vec(),
        };
        let mut peer = local.clone();
        peer.raw = b"fi_shm://1003\0".to_vec();
        peer.check_compatible(&local, "shm").unwrap();
        for bad in [&b"fi_shm://1003"[..], b"fi\0shm\0", b""] {
            peer.raw = bad.to_vec();
            assert!(peer.check_compatible(&local, "shm").is_err(), "{bad:?}");
        }
    }

    fn sample() -> PeerAddress {
        PeerAddress {
            addr_format: 2,
            provider_hash: provider_hash("net"),
            pid: 42,
            host: 7,
            generation: 3,
            raw: vec![1, 2, 3, 4],
        }
    }

    #[test]
    fn round_trip() {
        let a = sample();
        assert_eq!(PeerAddress::from_bytes(&a.to_bytes()).unwrap(), a);
    }

    #[test]
    fn every_truncation_and_bit_flip_in_the_header_is_caught_or_harmless() {
        let bytes = sample().to_bytes();
        for len in 0..bytes.len() {
            assert!(
                PeerAddress::from_bytes(&bytes[..len]).is_err(),
                "prefix {len} accepted"
            );
        }
        for i in 0..8 {
            let mut b = bytes.clone();
            b[i] ^= 0x40;
            assert!(PeerAddress::from_bytes(&b).is_err(), "flip at {i} accepted");
        }
        let mut long = bytes.clone();
        long.push(0);
        assert!(PeerAddress::from_bytes(&long).is_err());
    }

    #[test]
    fn the_generation_travels_and_version_1_is_refused() {
        let bytes = sample().to_bytes();
        assert_eq!(bytes[20..24], 3u32.to_le_bytes());
        let mut v1 = bytes.clone();
        v1[4..6].copy_from_slice(&1u16.to_le_bytes());
        let err = PeerAddress::from_bytes(&v1).unwrap_err().to_string();
        assert!(err.contains("address version 1, expected 2"), "{err}");
    }

    #[test]
    fn compatibility_checks_provider_format_and_length() {
        let local = sample();
        let mut other = sample();
        other.provider_hash = provider_hash("shm");
        assert!(other.check_compatible(&local, "net").is_err());
        let mut other = sample();
        other.addr_format = 3;
        assert!(other.check_compatible(&local, "net").is_err());
        let mut other = sample();
        other.raw.push(9);
        assert!(other.check_compatible(&local, "net").is_err());
        assert!(sample().check_compatible(&local, "net").is_ok());
    }
}
