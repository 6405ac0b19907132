//! Passes over a SPIR-V module's words that naga's writer has no option for.
//!
//! [`no_contraction`] adds `OpDecorate %r NoContraction` for the result of every float
//! arithmetic instruction, in the annotation section where the SPIR-V logical layout requires
//! decorations. [`float_controls`] declares the entry point `SignedZeroInfNanPreserve` and
//! `DenormPreserve` for 32-bit floats (SPV_KHR_float_controls): without the first a Vulkan
//! compiler may fold `x * 0.0` to `0.0` or `x + 0.0` to `x`, which changes signed zeros, NaNs
//! and infinities (Mesa's NIR does, by its own rules); without the second it may flush
//! subnormals. It reads and writes words only; it knows nothing of naga or of devices.

const OP_DECORATE: u32 = 71;
const DECORATION_NO_CONTRACTION: u32 = 42;

/// Opcodes whose result is float arithmetic that a compiler could contract or reassociate:
/// OpFNegate, OpFAdd, OpFSub, OpFMul, OpFDiv, OpFRem, OpFMod, OpVectorTimesScalar,
/// OpMatrixTimesScalar, OpVectorTimesMatrix, OpMatrixTimesVector, OpMatrixTimesMatrix,
/// OpOuterProduct, OpDot.
pub const FLOAT_ARITHMETIC_OPCODES: [u32; 14] = [127, 129, 131, 133, 136, 140, 141, 142, 143, 144, 145, 146, 147, 148];

/// Opcodes allowed before the end of the annotation section (capabilities, extensions, imports,
/// memory model, entry points, execution modes, debug and annotation instructions).
const PREAMBLE_OPCODES: [u32; 23] = [
    17, 10, 11, 14, 15, 16, 331, // capability … execution mode id
    2, 3, 4, 5, 6, 7, 330, // source continued, source, source extension, name, member name, string, processed
    71, 72, 73, 74, 75, 332, 5632, 5633, // decorations
    0,    // OpNop
];

const HEADER_WORDS: usize = 5;
const OP_CAPABILITY: u32 = 17;
const OP_EXTENSION: u32 = 10;
const OP_ENTRY_POINT: u32 = 15;
const OP_EXECUTION_MODE: u32 = 16;
const CAPABILITY_DENORM_PRESERVE: u32 = 4464;
const CAPABILITY_SIGNED_ZERO_INF_NAN_PRESERVE: u32 = 4466;
const MODE_DENORM_PRESERVE: u32 = 4459;
const MODE_SIGNED_ZERO_INF_NAN_PRESERVE: u32 = 4461;

/// A SPIR-V literal string: UTF-8, NUL-terminated, padded to whole words.
fn string_words(text: &str) -> Vec<u32> {
    let mut bytes = text.as_bytes().to_vec();
    bytes.push(0);
    while !bytes.len().is_multiple_of(4) {
        bytes.push(0);
    }
    bytes.chunks_exact(4).map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect()
}

/// Declares every entry point `SignedZeroInfNanPreserve` and/or `DenormPreserve` for 32-bit
/// floats, with the capabilities and the extension those modes need. Only for devices that
/// report `shaderSignedZeroInfNanPreserveFloat32` / `shaderDenormPreserveFloat32`.
pub fn float_controls(words: &mut Vec<u32>, signed_zero_inf_nan: bool, denorms: bool) {
    let mut wanted = Vec::new();
    if signed_zero_inf_nan {
        wanted.push((CAPABILITY_SIGNED_ZERO_INF_NAN_PRESERVE, MODE_SIGNED_ZERO_INF_NAN_PRESERVE));
    }
    if denorms {
        wanted.push((CAPABILITY_DENORM_PRESERVE, MODE_DENORM_PRESERVE));
    }
    if wanted.is_empty() {
        return;
    }
    let mut last_capability = None;
    let mut entries = Vec::new();
    for (at, opcode, count) in instructions(words) {
        match opcode {
            OP_CAPABILITY => last_capability = Some(at + count),
            OP_ENTRY_POINT if count >= 3 => entries.push((at + count, words[at + 2])),
            _ => {}
        }
    }
    let Some(capabilities_end) = last_capability else { return };
    // Later insertions first, so earlier offsets stay right.
    for &(after, entry) in entries.iter().rev() {
        let modes = wanted.iter().flat_map(|&(_, mode)| [(4 << 16) | OP_EXECUTION_MODE, entry, mode, 32]);
        words.splice(after..after, modes.collect::<Vec<_>>());
    }
    let name = string_words("SPV_KHR_float_controls");
    let mut head: Vec<u32> =
        wanted.iter().flat_map(|&(capability, _)| [(2 << 16) | OP_CAPABILITY, capability]).collect();
    head.push(((1 + name.len() as u32) << 16) | OP_EXTENSION);
    head.extend(name);
    words.splice(capabilities_end..capabilities_end, head);
}

/// Walks the instructions after the header: yields (offset, opcode, word count).
fn instructions(words: &[u32]) -> impl Iterator<Item = (usize, u32, usize)> + '_ {
    let mut at = HEADER_WORDS;
    std::iter::from_fn(move || {
        let word = *words.get(at)?;
        let count = (word >> 16) as usize;
        if count == 0 || at + count > words.len() {
            return None;
        }
        let item = (at, word & 0xffff, count);
        at += count;
        Some(item)
    })
}

/// Decorates the result of every float arithmetic instruction `NoContraction`.
///
/// Instructions already decorated are decorated again, which SPIR-V allows; a truncated or
/// malformed module is left as it is past the point where it stops making sense.
pub fn no_contraction(words: &mut Vec<u32>) {
    if words.len() <= HEADER_WORDS {
        return;
    }
    let mut insert_at = HEADER_WORDS;
    let mut in_preamble = true;
    let mut results = Vec::new();
    for (at, opcode, count) in instructions(words) {
        if in_preamble && PREAMBLE_OPCODES.contains(&opcode) {
            insert_at = at + count;
        } else {
            in_preamble = false;
        }
        // Result type is operand 1, result id operand 2.
        if FLOAT_ARITHMETIC_OPCODES.contains(&opcode) && count >= 3 {
            results.push(words[at + 2]);
        }
    }
    let decorations = results.iter().flat_map(|&id| [(3 << 16) | OP_DECORATE, id, DECORATION_NO_CONTRACTION]);
    words.splice(insert_at..insert_at, decorations);
}

/// Counts float arithmetic instructions and the distinct results decorated `NoContraction`.
#[cfg(test)]
pub(crate) fn count_float_ops_and_decorations(words: &[u32]) -> (usize, usize) {
    let mut ops = 0;
    let mut decorated = std::collections::BTreeSet::new();
    for (at, opcode, count) in instructions(words) {
        if FLOAT_ARITHMETIC_OPCODES.contains(&opcode) && count >= 3 {
            ops += 1;
        }
        if opcode == OP_DECORATE && count == 3 && words[at + 2] == DECORATION_NO_CONTRACTION {
            decorated.insert(words[at + 1]);
        }
    }
    (ops, decorated.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn truncated_modules_are_left_alone() {
        let mut words = vec![0x0723_0203, 0x0001_0000, 0, 10, 0, (5 << 16) | 129, 1];
        let before = words.clone();
        no_contraction(&mut words);
        assert_eq!(words, before);
    }
}
