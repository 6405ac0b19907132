//! Tile and result frames: the binary format of the tile stream.
//!
//! All integers are little-endian. A stream is a sequence of frames, each prefixed by its
//! length, so a reader needs no other framing and a frame is never larger than the limit its
//! reader sets ([`FrameSplitter`]).
//!
//! A **tile frame** (program → daemon):
//!
//! | bytes | field |
//! |---|---|
//! | 4 | `length`: bytes after this field |
//! | 1 | `kind`: 1 (tile) |
//! | 3 | reserved, 0 |
//! | 4 | `tag`: the program's id for the tile, echoed in its result |
//! | 4 | `start` |
//! | 4 | `count` |
//! | 2 | `params`: number of parameter words |
//! | 2 | `wholes`: number of whole arrays |
//! | 4 × params | the parameter words |
//! | 32 × wholes | the SHA-256 of each whole array, in binding order |
//! | rest | the tile's slice of each per-item array the kernel reads, in binding order |
//!
//! A **result frame** (daemon → program): `length` (4), `kind` (1: 1 = result, 2 = error),
//! reserved (3), `tag` (4), then for a result the tile's slice of each per-item array the kernel
//! writes, in binding order, and for an error a JSON problem `{"code", "detail"}`. An error
//! frame tagged [`STREAM_TAG`] ends the stream (a broken framing, an idle stream, a draining
//! daemon); one tagged [`UNKNOWN_TAG`] answers a frame whose tag cannot be answered (too short to
//! carry one, or one of these two). Programs number their tiles below both.
//!
//! Frames hold their payloads as [`Bytes`]: a frame split out of a stream, its inputs and its
//! outputs are views of the bytes as they were read, never copies ([`FrameSplitter`] copies each
//! byte once, out of the transport's chunks), and a result is sent as [`result_pieces`] without
//! copying its outputs. A program reads results with [`crate::RopeSplitter`] instead, which
//! copies nothing until the outputs go into place.

use bytes::{Buf, Bytes, BytesMut};
use serde::{Deserialize, Serialize};

use crate::{ArrayHash, Tile};

/// Frame kind of a tile.
pub const KIND_TILE: u8 = 1;
/// Frame kind of a result.
pub const KIND_RESULT: u8 = 1;
/// Frame kind of an error for one tile.
pub const KIND_ERROR: u8 = 2;
/// The tag of an error frame that ends a stream rather than answering one tile.
pub const STREAM_TAG: u32 = u32::MAX;
/// The tag of an error frame answering a frame too short to carry its own tag.
pub const UNKNOWN_TAG: u32 = u32::MAX - 1;
/// Bytes of a tile frame before its parameters (length field included).
pub const TILE_HEADER_BYTES: usize = 24;
/// Bytes of a result frame before its payload (length field included).
pub const RESULT_HEADER_BYTES: usize = 12;

/// One tile as it travels to a daemon.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TileFrame {
    /// The program's id for this tile.
    pub tag: u32,
    /// Which items.
    pub tile: Tile,
    /// Parameter words.
    pub params: Vec<u32>,
    /// SHA-256 of each whole array.
    pub wholes: Vec<ArrayHash>,
    /// The per-item input arrays, concatenated in binding order.
    pub inputs: Bytes,
}

/// A tile's outcome as it travels back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ResultFrame {
    /// The tile ran: its per-item output arrays, concatenated in binding order.
    Done {
        /// The tile's tag.
        tag: u32,
        /// The tile's results, back to back in binding order.
        outputs: Bytes,
    },
    /// The tile did not run.
    Failed {
        /// The tile's tag.
        tag: u32,
        /// Why, as a problem.
        problem: TileProblem,
    },
}

/// Why one tile failed: a stable code and a sentence that says what to do.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TileProblem {
    /// Stable error code, e.g. `bad_frame` ([`crate::ProblemCode`]).
    pub code: String,
    /// What happened and what to do.
    pub detail: String,
}

impl TileProblem {
    /// The code, if this build knows it.
    pub fn problem_code(&self) -> Option<crate::ProblemCode> {
        crate::ProblemCode::parse(&self.code)
    }
}

/// Why bytes are not a valid frame.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FrameError {
    /// The frame ends before its fields do.
    #[error("frame is truncated: {0}")]
    Truncated(&'static str),
    /// The length prefix is over the reader's limit.
    #[error("frame of {length} bytes is over the limit of {limit} bytes: send smaller tiles")]
    TooLarge {
        /// Declared length.
        length: u64,
        /// The limit.
        limit: u64,
    },
    /// A kind this reader does not know.
    #[error("frame kind {0} is unknown")]
    Kind(u8),
    /// Reserved bytes are not zero.
    #[error("frame's reserved bytes must be zero")]
    Reserved,
    /// A tile frame tagged with a tag the daemon's error frames keep for themselves.
    #[error(
        "tag {0:#010x} is reserved for the daemon's answers about the stream itself: number tiles below {UNKNOWN_TAG:#010x}"
    )]
    ReservedTag(u32),
    /// An error frame whose problem is not JSON.
    #[error("error frame's problem is not JSON: {0}")]
    Problem(String),
}

fn u32_at(bytes: &[u8], at: usize, what: &'static str) -> Result<u32, FrameError> {
    bytes.get(at..at + 4).map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]])).ok_or(FrameError::Truncated(what))
}

fn u16_at(bytes: &[u8], at: usize, what: &'static str) -> Result<u16, FrameError> {
    bytes.get(at..at + 2).map(|b| u16::from_le_bytes([b[0], b[1]])).ok_or(FrameError::Truncated(what))
}

impl TileFrame {
    /// The frame's bytes, length prefix included.
    pub fn encode(&self) -> Vec<u8> {
        encode_tile(self.tag, self.tile, &self.params, &self.wholes, &[&self.inputs])
    }

    /// Reads a tile frame from its body (the bytes after the length prefix); its inputs are a
    /// view of `body`, not a copy.
    pub fn decode(body: &Bytes) -> Result<TileFrame, FrameError> {
        let kind = *body.first().ok_or(FrameError::Truncated("kind"))?;
        if kind != KIND_TILE {
            return Err(FrameError::Kind(kind));
        }
        if body.get(1..4).ok_or(FrameError::Truncated("reserved"))? != [0, 0, 0] {
            return Err(FrameError::Reserved);
        }
        let tag = u32_at(body, 4, "tag")?;
        if tag >= UNKNOWN_TAG {
            return Err(FrameError::ReservedTag(tag));
        }
        let start = u32_at(body, 8, "start")?;
        let count = u32_at(body, 12, "count")?;
        let params = usize::from(u16_at(body, 16, "params")?);
        let wholes = usize::from(u16_at(body, 18, "wholes")?);
        let mut at = 20;
        let mut words = Vec::with_capacity(params);
        for _ in 0..params {
            words.push(u32_at(body, at, "parameters")?);
            at += 4;
        }
        let mut hashes = Vec::with_capacity(wholes);
        for _ in 0..wholes {
            let hash = body.get(at..at + 32).ok_or(FrameError::Truncated("whole array hashes"))?;
            let mut h = [0u8; 32];
            h.copy_from_slice(hash);
            hashes.push(ArrayHash(h));
            at += 32;
        }
        let inputs = body.slice(at.min(body.len())..);
        Ok(TileFrame { tag, tile: Tile { start, count }, params: words, wholes: hashes, inputs })
    }
}

/// A tile frame's bytes from its parts, the per-item inputs given as the slices they already are,
/// so a sender copies each input once, into the frame.
pub fn encode_tile(tag: u32, tile: Tile, params: &[u32], wholes: &[ArrayHash], inputs: &[&[u8]]) -> Vec<u8> {
    let input_bytes: usize = inputs.iter().map(|i| i.len()).sum();
    let body = TILE_HEADER_BYTES - 4 + 4 * params.len() + 32 * wholes.len() + input_bytes;
    let mut out = Vec::with_capacity(4 + body);
    out.extend_from_slice(&(body as u32).to_le_bytes());
    out.extend_from_slice(&[KIND_TILE, 0, 0, 0]);
    out.extend_from_slice(&tag.to_le_bytes());
    out.extend_from_slice(&tile.start.to_le_bytes());
    out.extend_from_slice(&tile.count.to_le_bytes());
    out.extend_from_slice(&(params.len() as u16).to_le_bytes());
    out.extend_from_slice(&(wholes.len() as u16).to_le_bytes());
    for word in params {
        out.extend_from_slice(&word.to_le_bytes());
    }
    for hash in wholes {
        out.extend_from_slice(&hash.0);
    }
    for input in inputs {
        out.extend_from_slice(input);
    }
    crate::copies::count(input_bytes);
    out
}

impl ResultFrame {
    /// The tag of the tile this answers.
    pub fn tag(&self) -> u32 {
        match self {
            ResultFrame::Done { tag, .. } | ResultFrame::Failed { tag, .. } => *tag,
        }
    }

    /// The frame's bytes, length prefix included.
    pub fn encode(&self) -> Vec<u8> {
        match self {
            ResultFrame::Done { tag, outputs } => {
                let mut out = result_header(KIND_RESULT, *tag, outputs.len());
                out.reserve_exact(outputs.len());
                out.extend_from_slice(outputs);
                out
            }
            ResultFrame::Failed { tag, problem } => {
                let payload = serde_json::to_vec(problem).unwrap_or_default();
                let mut out = result_header(KIND_ERROR, *tag, payload.len());
                out.reserve_exact(payload.len());
                out.extend_from_slice(&payload);
                out
            }
        }
    }

    /// Reads a result frame from its body (the bytes after the length prefix); a result's
    /// outputs are a view of `body`, not a copy.
    pub fn decode(body: &Bytes) -> Result<ResultFrame, FrameError> {
        let kind = *body.first().ok_or(FrameError::Truncated("kind"))?;
        if body.get(1..4).ok_or(FrameError::Truncated("reserved"))? != [0, 0, 0] {
            return Err(FrameError::Reserved);
        }
        let tag = u32_at(body, 4, "tag")?;
        let payload = body.slice(8..);
        match kind {
            KIND_RESULT => Ok(ResultFrame::Done { tag, outputs: payload }),
            KIND_ERROR => {
                let problem = serde_json::from_slice(&payload).map_err(|e| FrameError::Problem(e.to_string()))?;
                Ok(ResultFrame::Failed { tag, problem })
            }
            other => Err(FrameError::Kind(other)),
        }
    }
}

/// The result frame of a tile that ran, as pieces to send in order: the header, then each
/// output as the vector it already is (a large result is never copied into a frame); a small
/// result comes as one piece, since a piece costs more than copying a few bytes.
pub fn result_pieces(tag: u32, outputs: Vec<Vec<u8>>) -> Vec<Bytes> {
    let total: usize = outputs.iter().map(Vec::len).sum();
    let mut header = result_header(KIND_RESULT, tag, total);
    if total <= SMALL_RESULT_BYTES {
        header.reserve_exact(total);
        for output in &outputs {
            header.extend_from_slice(output);
        }
        crate::copies::count(total);
        return vec![Bytes::from(header)];
    }
    let mut pieces = Vec::with_capacity(1 + outputs.len());
    pieces.push(Bytes::from(header));
    pieces.extend(outputs.into_iter().filter(|o| !o.is_empty()).map(Bytes::from));
    pieces
}

/// Results up to this size are copied into one piece with their header.
const SMALL_RESULT_BYTES: usize = 16 * 1024;

/// A result frame's first bytes, declaring a payload of `payload` bytes (room for the header
/// only: a caller that copies the payload in reserves it).
fn result_header(kind: u8, tag: u32, payload: usize) -> Vec<u8> {
    let body = RESULT_HEADER_BYTES - 4 + payload;
    let mut out = Vec::with_capacity(RESULT_HEADER_BYTES);
    out.extend_from_slice(&(body as u32).to_le_bytes());
    out.extend_from_slice(&[kind, 0, 0, 0]);
    out.extend_from_slice(&tag.to_le_bytes());
    out
}

/// The most a splitter sets aside for the rest of a frame before its bytes arrive.
const RESERVE_AHEAD: usize = 16 << 20;

/// What [`FrameSplitter::front`] knows of the frame at the front.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Front {
    /// The length its prefix declares (the bytes after the prefix).
    pub length: u64,
    /// A tile frame's item count, once its header has arrived.
    pub count: Option<u32>,
    /// How many of its bytes (after the prefix) have arrived, at most `length`.
    pub arrived: u64,
}

/// Splits a byte stream into frame bodies, refusing any frame over `limit` bytes.
#[derive(Debug)]
pub struct FrameSplitter {
    buffer: BytesMut,
    limit: u64,
}

impl FrameSplitter {
    /// A splitter that refuses frames longer than `limit` bytes.
    pub fn new(limit: u64) -> Self {
        FrameSplitter { buffer: BytesMut::new(), limit }
    }

    /// Adds bytes read from the stream.
    pub fn push(&mut self, bytes: &[u8]) {
        // Once a frame's length is known, make room for it at once (up to `RESERVE_AHEAD`), so
        // a large frame is copied once rather than again each time the buffer grows; a sender
        // that declares a frame and sends little of it holds at most that much.
        if let Some(length) = self.declared().filter(|&l| l <= self.limit) {
            let want = (4 + length as usize).saturating_sub(self.buffer.len()).min(RESERVE_AHEAD);
            self.buffer.reserve(want.max(bytes.len()));
        }
        self.buffer.extend_from_slice(bytes);
        crate::copies::count(bytes.len());
    }

    /// The length prefix of the frame at the front, once its four bytes are here.
    fn declared(&self) -> Option<u64> {
        let prefix = self.buffer.get(..4)?;
        Some(u64::from(u32::from_le_bytes([prefix[0], prefix[1], prefix[2], prefix[3]])))
    }

    /// The next complete frame body, if one is buffered; a view of the buffered bytes, not a
    /// copy. A frame over the limit is an error as soon as its length prefix arrives, before its
    /// bytes are buffered.
    pub fn next_frame(&mut self) -> Result<Option<Bytes>, FrameError> {
        let Some(length) = self.declared() else { return Ok(None) };
        if length > self.limit {
            return Err(FrameError::TooLarge { length, limit: self.limit });
        }
        let end = 4 + length as usize;
        if self.buffer.len() < end {
            return Ok(None);
        }
        let mut frame = self.buffer.split_to(end);
        frame.advance(4);
        Ok(Some(frame.freeze()))
    }

    /// The frame at the front as far as it has arrived: its declared length and, for a tile
    /// frame whose header is here, its item count (what its results will weigh). None while the
    /// length prefix is still arriving.
    pub fn front(&self) -> Option<Front> {
        let length = self.declared()?;
        let count = match self.buffer.get(4..20) {
            Some(header) if header[0] == KIND_TILE => {
                Some(u32::from_le_bytes([header[12], header[13], header[14], header[15]]))
            }
            _ => None,
        };
        Some(Front { length, count, arrived: (self.buffer.len() as u64 - 4).min(length) })
    }

    /// True when no partial frame is buffered.
    pub fn is_empty(&self) -> bool {
        self.buffer.is_empty()
    }

    /// The length its front frame declares, when that frame has begun to arrive but is not
    /// whole yet (0 while its length prefix is still arriving).
    pub fn arriving(&self) -> Option<u64> {
        if self.buffer.is_empty() {
            return None;
        }
        match self.declared() {
            None => Some(0),
            Some(length) => (self.buffer.len() < 4 + length as usize).then_some(length),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tile() -> TileFrame {
        TileFrame {
            tag: 7,
            tile: Tile { start: 100, count: 3 },
            params: vec![1, 2],
            wholes: vec![ArrayHash([9; 32])],
            inputs: Bytes::from_static(&[1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]),
        }
    }

    #[test]
    fn frames_round_trip_through_a_splitter_in_pieces() {
        let results = [
            ResultFrame::Done { tag: 7, outputs: Bytes::from(vec![4; 12]) },
            ResultFrame::Failed { tag: 8, problem: TileProblem { code: "bad_frame".into(), detail: "x".into() } },
        ];
        let mut stream = tile().encode();
        for r in &results {
            stream.extend(r.encode());
        }
        let mut splitter = FrameSplitter::new(1 << 20);
        let mut bodies = Vec::new();
        for byte in stream.chunks(5) {
            splitter.push(byte);
            while let Some(body) = splitter.next_frame().expect("valid frames") {
                bodies.push(body);
            }
        }
        assert!(splitter.is_empty());
        assert_eq!(TileFrame::decode(&bodies[0]), Ok(tile()));
        assert_eq!(ResultFrame::decode(&bodies[1]).as_ref(), Ok(&results[0]));
        assert_eq!(ResultFrame::decode(&bodies[2]).as_ref(), Ok(&results[1]));
    }

    #[test]
    fn absurd_lengths_are_refused_before_buffering() {
        let mut splitter = FrameSplitter::new(1000);
        splitter.push(&u32::MAX.to_le_bytes());
        assert!(matches!(splitter.next_frame(), Err(FrameError::TooLarge { .. })));
    }

    #[test]
    fn truncated_and_odd_frames_say_what_is_wrong() {
        let body = Bytes::from(tile().encode()).slice(4..);
        for cut in [0, 1, 5, 10, 17, 19, 23, 27, 40] {
            let e = TileFrame::decode(&body.slice(..cut)).expect_err("truncated");
            assert!(matches!(e, FrameError::Truncated(_)), "cut {cut}: {e}");
        }
        let mut wrong_kind = body.to_vec();
        wrong_kind[0] = 9;
        assert_eq!(TileFrame::decode(&wrong_kind.into()), Err(FrameError::Kind(9)));
        let mut reserved = body.to_vec();
        reserved[2] = 1;
        assert_eq!(TileFrame::decode(&reserved.into()), Err(FrameError::Reserved));
        for tag in [UNKNOWN_TAG, STREAM_TAG] {
            let body = Bytes::from(TileFrame { tag, ..tile() }.encode()).slice(4..);
            assert_eq!(TileFrame::decode(&body), Err(FrameError::ReservedTag(tag)), "tag {tag:#x}");
        }
        let body = Bytes::from(TileFrame { tag: UNKNOWN_TAG - 1, ..tile() }.encode()).slice(4..);
        assert!(TileFrame::decode(&body).is_ok(), "the highest tag a program may use");
    }

    #[test]
    fn result_pieces_read_back_as_the_frame_they_make() {
        for outputs in [vec![vec![1u8; 8], vec![2; 4]], vec![vec![3u8; 40_000], vec![], vec![4; 5]], vec![]] {
            let joined: Vec<u8> = outputs.concat();
            let stream: Vec<u8> = result_pieces(9, outputs).concat();
            assert_eq!(stream, ResultFrame::Done { tag: 9, outputs: joined.into() }.encode());
        }
    }

    #[test]
    fn a_large_frame_is_split_out_whole_from_small_pieces() {
        let frame = TileFrame { inputs: vec![5; 300_000].into(), ..tile() }.encode();
        let mut splitter = FrameSplitter::new(1 << 20);
        let mut got = Vec::new();
        for piece in frame.chunks(16_384).chain([&frame[..7]]) {
            splitter.push(piece);
            while let Some(body) = splitter.next_frame().expect("valid frames") {
                got.push(TileFrame::decode(&body).expect("a tile frame"));
            }
        }
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].inputs.len(), 300_000);
        assert!(!splitter.is_empty(), "the start of the next frame is kept");
        assert_eq!(splitter.arriving(), Some(frame.len() as u64 - 4), "and said to be arriving");
        let mut splitter = FrameSplitter::new(1 << 20);
        assert_eq!(splitter.arriving(), None);
        splitter.push(&frame[..2]);
        assert_eq!(splitter.arriving(), Some(0), "its length still arriving");
        splitter.push(&frame[2..]);
        assert_eq!(splitter.arriving(), None, "whole");
    }
    #[test]
    fn the_front_frame_says_its_length_and_count_as_they_arrive() {
        let frame = TileFrame { tile: Tile { start: 3, count: 777 }, inputs: vec![1; 100].into(), ..tile() }.encode();
        let length = frame.len() as u64 - 4;
        let mut splitter = FrameSplitter::new(1 << 20);
        assert_eq!(splitter.front(), None);
        splitter.push(&frame[..3]);
        assert_eq!(splitter.front(), None, "the prefix still arriving");
        splitter.push(&frame[3..19]);
        assert_eq!(splitter.front(), Some(Front { length, count: None, arrived: 15 }), "the count not yet here");
        splitter.push(&frame[19..40]);
        assert_eq!(splitter.front(), Some(Front { length, count: Some(777), arrived: 36 }));
        splitter.push(&frame[40..]);
        assert_eq!(splitter.front(), Some(Front { length, count: Some(777), arrived: length }));
        let mut other = FrameSplitter::new(1 << 20);
        let problem = TileProblem { code: "busy".into(), detail: "a detail long enough".into() };
        other.push(&ResultFrame::Failed { tag: 1, problem }.encode());
        assert_eq!(other.front().and_then(|f| f.count), None, "not a tile frame (kind 2)");
    }
}
