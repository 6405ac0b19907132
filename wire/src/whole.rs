//! Whole arrays: the read-only arrays every tile of a run sees whole, addressed by the SHA-256
//! of their bytes ([`ArrayHash`]), so that a daemon or a device holds each once and reuses it
//! for every tile and every run that sends the same bytes. Both sides name them this way: the
//! program when it sends one, the daemon and each device when it keeps one.

use std::fmt;
use std::sync::Arc;

/// The SHA-256 of a whole array's bytes: its name on the wire (64 hex digits in a URL, 32 bytes
/// in a tile frame).
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct ArrayHash(pub [u8; 32]);

impl ArrayHash {
    /// The hash of `bytes`.
    pub fn of(bytes: &[u8]) -> ArrayHash {
        ArrayHash(crate::content_hash(bytes))
    }
}

impl fmt::Display for ArrayHash {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&hex::encode(self.0))
    }
}

impl fmt::Debug for ArrayHash {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ArrayHash({self})")
    }
}

/// Text that is not an array's hash.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("not a SHA-256 in hex (64 characters)")]
pub struct ArrayHashError;

/// A hash from the 64 hex digits [`ArrayHash`]'s `Display` writes.
impl std::str::FromStr for ArrayHash {
    type Err = ArrayHashError;

    fn from_str(text: &str) -> Result<ArrayHash, ArrayHashError> {
        crate::hex32(text).map(ArrayHash).ok_or(ArrayHashError)
    }
}

/// A whole array: its bytes and their hash.
#[derive(Debug, Clone)]
pub struct WholeArray {
    /// SHA-256 of `data`.
    pub hash: ArrayHash,
    /// The array's bytes.
    pub data: Arc<[u8]>,
}

impl WholeArray {
    /// Wraps bytes, computing their hash.
    pub fn new(data: Arc<[u8]>) -> Self {
        WholeArray { hash: ArrayHash::of(&data), data }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hash_reads_back_what_it_writes() {
        let hash = ArrayHash::of(b"abc");
        assert_eq!(hash.to_string(), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
        assert_eq!(hash.to_string().parse::<ArrayHash>(), Ok(hash));
        assert_eq!("zz".parse::<ArrayHash>(), Err(ArrayHashError));
        assert_eq!(WholeArray::new(Arc::from(&b"abc"[..])).hash, hash);
    }
}
