//! The version and data layout that a program and a daemon must share.
//!
//! Arrays cross the wire as raw bytes, so both sides must agree on byte order; pointer width is
//! part of the layout because a program's notion of an item count and of array sizes follows it.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// The workspace version: a daemon, a program and xcmon refuse each other on any difference.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// Byte order of a machine's scalars.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ByteOrder {
    /// Least significant byte first (x86-64, aarch64 as usually run).
    Little,
    /// Most significant byte first (s390x, some PowerPC).
    Big,
}

/// A machine's data layout, written `little-64` on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Layout {
    /// Byte order of scalars in arrays.
    pub byte_order: ByteOrder,
    /// Width of a pointer in bits (32 or 64).
    pub pointer_bits: u8,
}

impl Layout {
    /// The layout of the machine this code was compiled for.
    pub const fn native() -> Self {
        Layout {
            byte_order: if cfg!(target_endian = "big") { ByteOrder::Big } else { ByteOrder::Little },
            pointer_bits: (usize::BITS) as u8,
        }
    }
}

impl fmt::Display for Layout {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let order = match self.byte_order {
            ByteOrder::Little => "little",
            ByteOrder::Big => "big",
        };
        write!(f, "{order}-{}", self.pointer_bits)
    }
}

/// Why a layout string could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("data layout {0:?} is not of the form little-64, big-64, little-32 or big-32")]
pub struct LayoutParseError(pub String);

impl FromStr for Layout {
    type Err = LayoutParseError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let bad = || LayoutParseError(s.to_owned());
        let (order, bits) = s.split_once('-').ok_or_else(bad)?;
        let byte_order = match order {
            "little" => ByteOrder::Little,
            "big" => ByteOrder::Big,
            _ => return Err(bad()),
        };
        let pointer_bits = match bits {
            "32" => 32,
            "64" => 64,
            _ => return Err(bad()),
        };
        Ok(Layout { byte_order, pointer_bits })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layout_round_trips_through_its_text() {
        for text in ["little-64", "big-64", "little-32", "big-32"] {
            let layout: Layout = text.parse().expect("valid layout");
            assert_eq!(layout.to_string(), text);
        }
    }

    #[test]
    fn bad_layouts_are_refused() {
        for text in ["", "little", "middle-64", "little-16", "little-64-x"] {
            assert!(text.parse::<Layout>().is_err(), "{text} was accepted");
        }
    }

    #[test]
    fn native_layout_matches_this_machine() {
        let native = Layout::native();
        assert_eq!(native.pointer_bits as u32, usize::BITS);
        assert_eq!(native.byte_order == ByteOrder::Little, cfg!(target_endian = "little"));
    }
}
