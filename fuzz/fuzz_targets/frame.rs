//! The tile stream's framing and frames, as the daemon reads a program's stream and a program
//! reads a daemon's answers: the input is cut into pieces at the positions its first bytes
//! choose, fed to a [`FrameSplitter`] (the daemon's) and a [`RopeSplitter`] (the program's),
//! which must yield the same frames and the same errors, and every frame is decoded both ways,
//! the program's result reader agreeing with the contiguous one. A frame that decodes must
//! encode to the same bytes.
#![no_main]

use bytes::Bytes;
use libfuzzer_sys::fuzz_target;
use xcd_wire::{FrameSplitter, ResultFrame, ResultRope, Rope, RopeSplitter, TileFrame};

/// The daemon's frame limit in these runs: small, so the over-limit path is reached often.
const LIMIT: u64 = 1 << 16;

fuzz_target!(|data: &[u8]| {
    let (cuts, stream) = data.split_at(data.len().min(4));
    let mut splitter = FrameSplitter::new(LIMIT);
    let mut ropes = RopeSplitter::new(LIMIT);
    let mut rest = stream;
    let mut pieces = cuts.iter().map(|&c| usize::from(c) + 1).cycle();
    while !rest.is_empty() {
        let take = pieces.next().unwrap_or(rest.len()).min(rest.len());
        let (piece, after) = rest.split_at(take);
        splitter.push(piece);
        ropes.push(Bytes::copy_from_slice(piece));
        rest = after;
        loop {
            let rope = ropes.next_frame();
            match splitter.next_frame() {
                Ok(Some(body)) => {
                    let rope = rope.expect("the rope splitter reads what the other does").expect("a frame too");
                    assert_eq!(rope.to_bytes(), body, "both splitters yield the same frame");
                    check(&body, rope);
                }
                Ok(None) => {
                    assert_eq!(rope, Ok(None), "both splitters wait for more");
                    break;
                }
                Err(e) => {
                    assert_eq!(rope, Err(e), "both splitters refuse alike");
                    return;
                }
            }
        }
    }
});

fn check(body: &Bytes, rope: Rope) {
    match (ResultFrame::decode(body), ResultRope::decode(rope)) {
        (Ok(ResultFrame::Done { tag, outputs }), Ok(ResultRope::Done { tag: t, outputs: o })) => {
            assert_eq!((tag, outputs), (t, o.to_bytes()), "a result reads the same from pieces");
            let mut placed = vec![0; o.len()];
            assert_eq!(o.copy_to(&mut placed), Ok(()));
            assert_eq!(placed, o.to_bytes(), "a result copied into place is the result");
        }
        (Ok(ResultFrame::Failed { tag, problem }), Ok(ResultRope::Failed { tag: t, problem: p })) => {
            assert_eq!((tag, problem), (t, p), "a problem reads the same from pieces");
        }
        (Err(e), Err(f)) => assert_eq!(e, f, "a bad result is refused alike from pieces"),
        (a, b) => panic!("the result readers disagree: {a:?} against {b:?}"),
    }
    if let Ok(tile) = TileFrame::decode(body) {
        assert_eq!(&tile.encode()[4..], &body[..], "a tile frame re-encodes to its own bytes");
    }
    if let Ok(result) = ResultFrame::decode(body) {
        let again = Bytes::from(result.encode());
        // A problem's JSON is written afresh, so only a done frame's bytes are compared whole.
        if let ResultFrame::Done { tag, outputs } = &result {
            assert_eq!(&again[4..], &body[..], "a result frame re-encodes to its own bytes");
            let pieces = xcd_wire::result_pieces(*tag, vec![outputs.to_vec()]).concat();
            assert_eq!(pieces, again, "a result sent in pieces is the same frame");
        }
        assert_eq!(ResultFrame::decode(&again.slice(4..)).as_ref(), Ok(&result), "a result frame reads back");
    }
}
