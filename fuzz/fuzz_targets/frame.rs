//! The tile stream's framing and frames, as the daemon reads a program's stream and a program
//! reads a daemon's answers: the input is cut into pieces at the positions its first bytes
//! choose, fed to a [`FrameSplitter`], and every frame it yields is decoded both ways.
//! A frame that decodes must encode to the same bytes.
#![no_main]

use bytes::Bytes;
use libfuzzer_sys::fuzz_target;
use xcd_wire::{FrameSplitter, ResultFrame, TileFrame};

/// The daemon's frame limit in these runs: small, so the over-limit path is reached often.
const LIMIT: u64 = 1 << 16;

fuzz_target!(|data: &[u8]| {
    let (cuts, stream) = data.split_at(data.len().min(4));
    let mut splitter = FrameSplitter::new(LIMIT);
    let mut rest = stream;
    let mut pieces = cuts.iter().map(|&c| usize::from(c) + 1).cycle();
    while !rest.is_empty() {
        let take = pieces.next().unwrap_or(rest.len()).min(rest.len());
        let (piece, after) = rest.split_at(take);
        splitter.push(piece);
        rest = after;
        loop {
            match splitter.next_frame() {
                Ok(Some(body)) => check(&body),
                Ok(None) => break,
                Err(_) => return,
            }
        }
    }
});

fn check(body: &Bytes) {
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
