//! Block descriptions: what a par block's kernel reads, writes and is parameterised by.
//!
//! A block applies one kernel to items `0..n`. Its arrays are bound in the order given here
//! (binding 1, 2, …; binding 0 is the tile header and parameters). A per-item array holds one
//! element per item and is sliced per tile, so a kernel indexes it tile-locally; a whole array is
//! read-only, sent once per run and cached by content hash.

use std::fmt;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::forms::Forms;
use crate::tile::TILE_HEADER_WORDS;

/// Most scalar parameters a block may take (the header and these fit one 256-byte uniform slot).
pub const MAX_PARAMS: usize = 48;
/// Most arrays a block may bind (within every backend's per-stage storage-buffer limit).
pub const MAX_ARRAYS: usize = 8;
/// Largest element size, in bytes, of an array.
pub const MAX_ELEM_SIZE: u32 = 64;

/// How a kernel uses a per-item array.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Access {
    /// Read only: sent to the device with each tile.
    In,
    /// Written only: read back from the device after each tile.
    Out,
    /// Read and written: sent with each tile and read back after it.
    InOut,
}

/// Whether an array is sliced per tile or shared whole by every tile.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ArrayRole {
    /// One element per item, sliced per tile, indexed tile-locally.
    PerItem(Access),
    /// Read-only, any length, the same for every tile of a run.
    Whole,
}

/// One array a block binds.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ArraySpec {
    /// Name, for messages and reports.
    pub name: String,
    /// Bytes per element: a multiple of 4, at most [`MAX_ELEM_SIZE`].
    pub elem_size: u32,
    /// Per-item (with its access) or whole.
    pub role: ArrayRole,
}

/// The type a 32-bit scalar parameter word holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ParamKind {
    /// Unsigned 32-bit integer.
    U32,
    /// Signed 32-bit integer.
    I32,
    /// IEEE binary32 float.
    F32,
}

/// One scalar parameter a block takes.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ParamSpec {
    /// Name, for messages.
    pub name: String,
    /// What the word holds.
    pub kind: ParamKind,
}

/// A par block: one kernel, its bindings and parameters, in every form it was built with.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct BlockDesc {
    /// Name for reports, e.g. `escape`.
    pub name: String,
    /// Entry point of the kernel in every form.
    pub entry: String,
    /// Arrays in binding order (binding 1 onwards).
    pub arrays: Vec<ArraySpec>,
    /// Scalar parameters in the order they follow the tile header.
    pub params: Vec<ParamSpec>,
    /// The kernel in each form it was built with.
    pub forms: Forms,
}

/// The longest entry point name a block may have, in bytes.
pub const MAX_ENTRY_BYTES: usize = 255;

/// Whether `entry` is an ASCII identifier that every form can name its kernel after (each text
/// form by the one rule of `xcd_forms::entry_symbol`): `[A-Za-z_][A-Za-z0-9_]*`, not `_` alone.
pub fn is_entry_name(entry: &str) -> bool {
    let mut chars = entry.chars();
    entry.len() <= MAX_ENTRY_BYTES
        && entry != "_"
        && chars.next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// A block's content address: the SHA-256 of its canonical description.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct BlockId(#[serde(with = "hex_bytes")] pub [u8; 32]);

/// Why a block description is not usable.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DescError {
    /// The block has no name or entry point.
    #[error("block {0:?} needs a name and an entry point")]
    Unnamed(String),
    /// Too many arrays.
    #[error("block {name} binds {count} arrays; at most {MAX_ARRAYS} are allowed")]
    TooManyArrays {
        /// The block, by the name its description gives.
        name: String,
        /// Arrays given.
        count: usize,
    },
    /// Too many parameters.
    #[error("block {name} takes {count} parameters; at most {MAX_PARAMS} are allowed")]
    TooManyParams {
        /// The block, by the name its description gives.
        name: String,
        /// Parameters given.
        count: usize,
    },
    /// An element size the ABI does not allow.
    #[error("array {array} of block {name} has elements of {size} bytes; use a multiple of 4 up to {MAX_ELEM_SIZE}")]
    ElemSize {
        /// The block, by the name its description gives.
        name: String,
        /// Array name.
        array: String,
        /// Element size given.
        size: u32,
    },
    /// A block that writes nothing.
    #[error("block {0} writes no per-item array, so it has no result")]
    NoOutput(String),
    /// A block with no form at all.
    #[error("block {0} carries no kernel form")]
    NoForms(String),
    /// An entry point name that is not an ASCII identifier: PTX and drivers take no other.
    #[error(
        "block {name}: its entry point {entry:?} is not an ASCII identifier (letters, digits and _, not starting with a digit, at most {MAX_ENTRY_BYTES} bytes): rename the kernel's function"
    )]
    EntryName {
        /// The block, by the name its description gives.
        name: String,
        /// The entry point given (shortened when long).
        entry: String,
    },
    /// A NUL byte in the entry point's name or a text form (a driver takes them as C strings).
    #[error("block {name}: its {what} holds a NUL byte; names and kernel text are NUL-free UTF-8")]
    NulByte {
        /// The block, by the name its description gives.
        name: String,
        /// Where: "entry point" or "<form> form".
        what: &'static str,
    },
}

impl BlockDesc {
    /// Checks the description against the ABI's limits.
    pub fn validate(&self) -> Result<(), DescError> {
        let name = || self.name.clone();
        if self.name.is_empty() || self.entry.is_empty() {
            return Err(DescError::Unnamed(name()));
        }
        if self.arrays.len() > MAX_ARRAYS {
            return Err(DescError::TooManyArrays { name: name(), count: self.arrays.len() });
        }
        if self.params.len() > MAX_PARAMS {
            return Err(DescError::TooManyParams { name: name(), count: self.params.len() });
        }
        for array in &self.arrays {
            if array.elem_size == 0 || array.elem_size % 4 != 0 || array.elem_size > MAX_ELEM_SIZE {
                return Err(DescError::ElemSize { name: name(), array: array.name.clone(), size: array.elem_size });
            }
        }
        if !self.arrays.iter().any(|a| a.role.writes()) {
            return Err(DescError::NoOutput(name()));
        }
        if self.forms.kinds().is_empty() {
            return Err(DescError::NoForms(name()));
        }
        let texts = [
            ("entry point", Some(&self.entry)),
            ("WGSL form", self.forms.wgsl.as_ref()),
            ("MSL form", self.forms.msl.as_ref()),
            ("PTX form", self.forms.ptx.as_ref()),
        ];
        if let Some((what, _)) = texts.iter().find(|(_, text)| text.is_some_and(|t| t.contains('\0'))) {
            return Err(DescError::NulByte { name: name(), what });
        }
        if !is_entry_name(&self.entry) {
            let entry = self.entry.chars().take(64).collect();
            return Err(DescError::EntryName { name: name(), entry });
        }
        Ok(())
    }

    /// The block's content address.
    pub fn id(&self) -> BlockId {
        // serde_json writes struct fields in declaration order, so this text is canonical.
        let canonical = serde_json::to_vec(self).unwrap_or_default();
        BlockId(Sha256::digest(&canonical).into())
    }

    /// Words in the uniform a kernel sees: the tile header and the parameters.
    pub fn uniform_words(&self) -> usize {
        TILE_HEADER_WORDS + self.params.len()
    }

    /// Indices of the per-item arrays whose contents go to the device with each tile.
    pub fn tile_inputs(&self) -> impl Iterator<Item = usize> + '_ {
        self.arrays.iter().enumerate().filter(|(_, a)| a.role.reads_per_item()).map(|(i, _)| i)
    }

    /// Indices of the per-item arrays read back after each tile.
    pub fn tile_outputs(&self) -> impl Iterator<Item = usize> + '_ {
        self.arrays.iter().enumerate().filter(|(_, a)| a.role.writes()).map(|(i, _)| i)
    }

    /// Indices of the whole arrays.
    pub fn whole_arrays(&self) -> impl Iterator<Item = usize> + '_ {
        self.arrays.iter().enumerate().filter(|(_, a)| a.role == ArrayRole::Whole).map(|(i, _)| i)
    }
}

impl ArrayRole {
    /// True for per-item arrays that the device reads (in, inout).
    pub fn reads_per_item(&self) -> bool {
        matches!(self, ArrayRole::PerItem(Access::In | Access::InOut))
    }

    /// True for per-item arrays that the device writes (out, inout).
    pub fn writes(&self) -> bool {
        matches!(self, ArrayRole::PerItem(Access::Out | Access::InOut))
    }

    /// True for arrays a kernel may only read.
    pub fn read_only(&self) -> bool {
        !self.writes()
    }
}

impl fmt::Display for BlockId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&hex::encode(self.0))
    }
}

/// Text that is not a block id.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("not a block id (64 hex digits)")]
pub struct BlockIdError;

/// A block id from the 64 hex digits [`BlockId`]'s `Display` writes.
impl std::str::FromStr for BlockId {
    type Err = BlockIdError;

    fn from_str(text: &str) -> Result<BlockId, BlockIdError> {
        crate::hex32(text).map(BlockId).ok_or(BlockIdError)
    }
}

mod hex_bytes {
    use serde::{Deserialize, Deserializer, Serializer, de::Error};

    pub(super) fn serialize<S: Serializer>(bytes: &[u8; 32], s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&hex::encode(bytes))
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<[u8; 32], D::Error> {
        let text = String::deserialize(d)?;
        let mut out = [0u8; 32];
        hex::decode_to_slice(&text, &mut out).map_err(D::Error::custom)?;
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_block_id_reads_back_what_it_writes() {
        let id = BlockId([0xa5; 32]);
        assert_eq!(id.to_string().parse::<BlockId>(), Ok(id));
        for bad in ["", "a5", &"g".repeat(64), &"a5".repeat(33)] {
            assert_eq!(bad.parse::<BlockId>(), Err(BlockIdError), "{bad:?}");
        }
    }

    fn desc() -> BlockDesc {
        BlockDesc {
            name: "copy".into(),
            entry: "main".into(),
            arrays: vec![
                ArraySpec { name: "src".into(), elem_size: 4, role: ArrayRole::PerItem(Access::In) },
                ArraySpec { name: "dst".into(), elem_size: 4, role: ArrayRole::PerItem(Access::Out) },
            ],
            params: vec![],
            forms: Forms { wgsl: Some("// k".into()), ..Forms::default() },
        }
    }

    #[test]
    fn id_is_stable_and_follows_content() {
        let a = desc();
        assert_eq!(a.id(), desc().id());
        let mut b = desc();
        b.forms.wgsl = Some("// other".into());
        assert_ne!(a.id(), b.id());
        let text = serde_json::to_string(&a.id()).expect("id serialises");
        let back: BlockId = serde_json::from_str(&text).expect("id parses");
        assert_eq!(back, a.id());
    }

    #[test]
    fn nul_bytes_in_names_and_text_forms_are_refused() {
        let mut d = desc();
        d.entry = "ma\0in".into();
        assert_eq!(d.validate(), Err(DescError::NulByte { name: "copy".into(), what: "entry point" }));
        let mut d = desc();
        d.forms.ptx = Some(".version 6.0\0".into());
        let e = d.validate().expect_err("a NUL in the PTX");
        assert_eq!(
            e.to_string(),
            "block copy: its PTX form holds a NUL byte; names and kernel text are NUL-free UTF-8"
        );
    }

    #[test]
    fn entry_points_are_ascii_identifiers() {
        for good in ["main", "flip", "_step", "blur2", "a__b", "WARP_SZ", "trap"] {
            let mut d = desc();
            d.entry = good.into();
            assert_eq!(d.validate(), Ok(()), "{good}");
        }
        for bad in ["résumé", "2pass", "_", "a-b", "a b", "k()", &"k".repeat(MAX_ENTRY_BYTES + 1)] {
            let mut d = desc();
            d.entry = bad.into();
            let e = d.validate().expect_err(bad);
            assert!(e.to_string().contains("is not an ASCII identifier"), "{e}");
        }
    }

    #[test]
    fn validation_names_what_is_wrong() {
        assert_eq!(desc().validate(), Ok(()));
        let mut odd = desc();
        odd.arrays[0].elem_size = 3;
        assert!(odd.validate().expect_err("refused").to_string().contains("multiple of 4"));
        let mut no_out = desc();
        no_out.arrays.pop();
        assert!(matches!(no_out.validate(), Err(DescError::NoOutput(_))));
        let mut no_forms = desc();
        no_forms.forms = Forms::default();
        assert!(matches!(no_forms.validate(), Err(DescError::NoForms(_))));
    }

    #[test]
    fn inputs_and_outputs_follow_access() {
        let mut d = desc();
        d.arrays.push(ArraySpec { name: "acc".into(), elem_size: 8, role: ArrayRole::PerItem(Access::InOut) });
        d.arrays.push(ArraySpec { name: "coef".into(), elem_size: 4, role: ArrayRole::Whole });
        assert_eq!(d.tile_inputs().collect::<Vec<_>>(), vec![0, 2]);
        assert_eq!(d.tile_outputs().collect::<Vec<_>>(), vec![1, 2]);
        assert_eq!(d.whole_arrays().collect::<Vec<_>>(), vec![3]);
    }
}
