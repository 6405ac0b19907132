//! The `NoContraction` pass over a SPIR-V module's words.
//!
//! Adds `OpDecorate %r NoContraction` for the result of every float arithmetic instruction, in
//! the annotation section where the SPIR-V logical layout requires decorations. It reads and
//! writes words only; it knows nothing of naga or of devices.

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
