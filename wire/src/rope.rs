//! Frames split out of a stream without copying them: a frame's body as the transport's own
//! chunks ([`Rope`]), so that a reader copies each payload byte once, straight to where it
//! belongs ([`Rope::copy_to`]).
//!
//! This is how the program side reads a daemon's results: the bytes go from the chunks HTTP/2
//! hands over into the program's output arrays, with no frame buffer between. The daemon reads
//! tile frames with [`crate::FrameSplitter`] instead, which gathers each frame into one buffer
//! (the engine wants its inputs contiguous). Nothing here knows about tiles beyond the frame
//! header.

use std::collections::VecDeque;

use bytes::{Buf, Bytes};

use crate::frame::{FrameError, KIND_ERROR, KIND_RESULT, ResultFrame, TileProblem};

/// Bytes held as the pieces they arrived in, in order; cloning or slicing one copies nothing.
/// Two ropes are equal when their bytes are, however they are cut.
#[derive(Debug, Clone, Default)]
pub struct Rope {
    pieces: Vec<Bytes>,
    len: usize,
}

impl PartialEq for Rope {
    fn eq(&self, other: &Rope) -> bool {
        self.len == other.len
            && self.pieces.iter().flat_map(|p| p.iter()).eq(other.pieces.iter().flat_map(|p| p.iter()))
    }
}

impl Eq for Rope {}

impl Rope {
    /// The bytes of one piece.
    pub fn one(bytes: Bytes) -> Rope {
        let len = bytes.len();
        Rope { pieces: if len == 0 { Vec::new() } else { vec![bytes] }, len }
    }

    /// How many bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True when it holds no bytes.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// How many pieces the bytes are in.
    pub fn pieces(&self) -> usize {
        self.pieces.len()
    }

    /// Copies the bytes, in order, into `out`, which must be exactly as long.
    ///
    /// # Errors
    /// The two lengths, when they differ; nothing is written then.
    pub fn copy_to(&self, out: &mut [u8]) -> Result<(), (usize, usize)> {
        if out.len() != self.len {
            return Err((self.len, out.len()));
        }
        let mut at = 0;
        for piece in &self.pieces {
            out[at..at + piece.len()].copy_from_slice(piece);
            at += piece.len();
        }
        crate::copies::count(self.len);
        Ok(())
    }

    /// Splits off the first `at` bytes (all of them when there are fewer), in time linear in
    /// the pieces taken.
    pub fn split_to(&mut self, at: usize) -> Rope {
        let at = at.min(self.len);
        // The whole pieces that go, and the bytes of the one cut in two.
        let (mut whole, mut taken) = (0, 0);
        while whole < self.pieces.len() && taken + self.pieces[whole].len() <= at {
            taken += self.pieces[whole].len();
            whole += 1;
        }
        let mut head = Rope { pieces: self.pieces.drain(..whole).collect(), len: taken };
        if taken < at
            && let Some(piece) = self.pieces.first_mut()
        {
            head.pieces.push(piece.split_to(at - taken));
            head.len = at;
        }
        self.len -= head.len;
        head
    }

    /// The bytes in one piece: a view when they are in one already, else a copy.
    pub fn to_bytes(&self) -> Bytes {
        match self.pieces.as_slice() {
            [] => Bytes::new(),
            [one] => one.clone(),
            many => many.concat().into(),
        }
    }
}

/// A result frame read from a [`Rope`]: a result's outputs are views of the frame's pieces.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ResultRope {
    /// The tile ran: its per-item output arrays, back to back in binding order.
    Done {
        /// The tile's tag.
        tag: u32,
        /// The tile's results, back to back in binding order.
        outputs: Rope,
    },
    /// The tile did not run.
    Failed {
        /// The tile's tag.
        tag: u32,
        /// Why, as a problem.
        problem: TileProblem,
    },
}

impl ResultRope {
    /// Reads a result frame from its body (the bytes after the length prefix), as
    /// [`ResultFrame::decode`] does, without copying a result's outputs.
    pub fn decode(mut body: Rope) -> Result<ResultRope, FrameError> {
        let head = body.split_to(8).to_bytes();
        if head.len() < 8 {
            // Too short: the contiguous reader says which field is missing.
            return Err(ResultFrame::decode(&head).err().unwrap_or(FrameError::Truncated("tag")));
        }
        if head[1..4] != [0, 0, 0] {
            return Err(FrameError::Reserved);
        }
        let tag = u32::from_le_bytes([head[4], head[5], head[6], head[7]]);
        match head[0] {
            KIND_RESULT => Ok(ResultRope::Done { tag, outputs: body }),
            KIND_ERROR => {
                let problem =
                    serde_json::from_slice(&body.to_bytes()).map_err(|e| FrameError::Problem(e.to_string()))?;
                Ok(ResultRope::Failed { tag, problem })
            }
            other => Err(FrameError::Kind(other)),
        }
    }
}

/// Splits a stream of chunks into frame bodies without copying them, refusing any frame over
/// `limit` bytes as soon as its length prefix arrives.
#[derive(Debug)]
pub struct RopeSplitter {
    chunks: VecDeque<Bytes>,
    buffered: usize,
    limit: u64,
}

impl RopeSplitter {
    /// A splitter that refuses frames longer than `limit` bytes.
    pub fn new(limit: u64) -> Self {
        RopeSplitter { chunks: VecDeque::new(), buffered: 0, limit }
    }

    /// Adds a chunk read from the stream; it is kept, not copied.
    pub fn push(&mut self, chunk: Bytes) {
        if !chunk.is_empty() {
            self.buffered += chunk.len();
            self.chunks.push_back(chunk);
        }
    }

    /// The length prefix of the frame at the front, once its four bytes are here.
    fn declared(&self) -> Option<u64> {
        if self.buffered < 4 {
            return None;
        }
        let mut prefix = [0u8; 4];
        let mut at = 0;
        for chunk in &self.chunks {
            let take = chunk.len().min(4 - at);
            prefix[at..at + take].copy_from_slice(&chunk[..take]);
            at += take;
            if at == 4 {
                break;
            }
        }
        Some(u64::from(u32::from_le_bytes(prefix)))
    }

    /// Takes `n` buffered bytes off the front as a rope.
    fn take(&mut self, n: usize) -> Rope {
        let mut rope = Rope::default();
        while rope.len < n {
            let Some(chunk) = self.chunks.front_mut() else { break };
            let want = n - rope.len;
            let piece = if chunk.len() <= want {
                self.chunks.pop_front().unwrap_or_default()
            } else {
                let piece = chunk.slice(..want);
                chunk.advance(want);
                piece
            };
            rope.len += piece.len();
            rope.pieces.push(piece);
        }
        self.buffered -= rope.len;
        rope
    }

    /// The next complete frame body, if one is buffered, as views of the chunks it arrived in.
    pub fn next_frame(&mut self) -> Result<Option<Rope>, FrameError> {
        let Some(length) = self.declared() else { return Ok(None) };
        if length > self.limit {
            return Err(FrameError::TooLarge { length, limit: self.limit });
        }
        let length = length as usize;
        if self.buffered < 4 + length {
            return Ok(None);
        }
        self.take(4);
        Ok(Some(self.take(length)))
    }

    /// True when no partial frame is buffered.
    pub fn is_empty(&self) -> bool {
        self.buffered == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn results() -> Vec<ResultFrame> {
        vec![
            ResultFrame::Done { tag: 7, outputs: Bytes::from((0..=255u8).cycle().take(1000).collect::<Vec<u8>>()) },
            ResultFrame::Failed { tag: 8, problem: TileProblem { code: "bad_frame".into(), detail: "x".into() } },
            ResultFrame::Done { tag: 9, outputs: Bytes::new() },
        ]
    }

    #[test]
    fn results_read_from_chunks_of_any_size_as_from_one_buffer() {
        let frames = results();
        let stream: Vec<u8> = frames.iter().flat_map(ResultFrame::encode).collect();
        for size in [1, 3, 4, 5, 13, 999, 1012, 4096] {
            let mut splitter = RopeSplitter::new(1 << 20);
            let mut read = Vec::new();
            for chunk in stream.chunks(size) {
                splitter.push(Bytes::copy_from_slice(chunk));
                while let Some(body) = splitter.next_frame().expect("valid frames") {
                    read.push(ResultRope::decode(body).expect("a result frame"));
                }
            }
            assert!(splitter.is_empty(), "chunks of {size}");
            assert_eq!(read.len(), frames.len(), "chunks of {size}");
            for (rope, frame) in read.iter().zip(&frames) {
                match (rope, frame) {
                    (ResultRope::Done { tag, outputs }, ResultFrame::Done { tag: want, outputs: bytes }) => {
                        assert_eq!(tag, want);
                        let mut out = vec![0; outputs.len()];
                        outputs.copy_to(&mut out).expect("same length");
                        assert_eq!(out, bytes.to_vec(), "chunks of {size}");
                        assert!(outputs.pieces() <= bytes.len().div_ceil(size) + 1);
                    }
                    (ResultRope::Failed { tag, problem }, ResultFrame::Failed { tag: want, problem: p }) => {
                        assert_eq!((tag, problem), (want, p));
                    }
                    other => panic!("chunks of {size}: {other:?}"),
                }
            }
        }
    }

    #[test]
    fn a_large_result_in_one_chunk_is_a_view_of_it() {
        let frame = ResultFrame::Done { tag: 1, outputs: Bytes::from(vec![5u8; 1 << 16]) }.encode();
        let chunk = Bytes::from(frame);
        let mut splitter = RopeSplitter::new(1 << 20);
        splitter.push(chunk.clone());
        let body = splitter.next_frame().expect("valid").expect("whole");
        let ResultRope::Done { outputs, .. } = ResultRope::decode(body).expect("a result") else {
            panic!("not a result")
        };
        assert_eq!(outputs.pieces(), 1);
        assert_eq!(outputs.to_bytes().as_ptr(), chunk[12..].as_ptr(), "no copy");
    }

    #[test]
    fn splitting_a_rope_of_many_pieces_keeps_every_byte_in_order() {
        let bytes: Vec<u8> = (0..=255u8).cycle().take(10_000).collect();
        let mut rope = Rope::default();
        for chunk in bytes.chunks(7) {
            rope.len += chunk.len();
            rope.pieces.push(Bytes::copy_from_slice(chunk));
        }
        let mut out = Vec::new();
        for size in [0, 1, 6, 7, 8, 100, 3000, 10_000] {
            let head = rope.split_to(size);
            assert_eq!(head.len(), size.min(head.len() + rope.len()));
            out.extend_from_slice(&head.to_bytes());
        }
        assert!(rope.is_empty());
        assert_eq!(out, bytes);
    }

    #[test]
    fn bad_frames_are_refused() {
        let mut splitter = RopeSplitter::new(100);
        splitter.push(Bytes::from_static(&[200, 0, 0, 0]));
        assert_eq!(splitter.next_frame(), Err(FrameError::TooLarge { length: 200, limit: 100 }));
        assert_eq!(
            ResultRope::decode(Rope::one(Bytes::from_static(&[1, 1, 0, 0, 7, 0, 0, 0]))),
            Err(FrameError::Reserved)
        );
        assert_eq!(
            ResultRope::decode(Rope::one(Bytes::from_static(&[3, 0, 0, 0, 7, 0, 0, 0]))),
            Err(FrameError::Kind(3))
        );
        assert_eq!(
            ResultRope::decode(Rope::one(Bytes::from_static(&[1, 0, 0]))),
            Err(FrameError::Truncated("reserved"))
        );
        let mut rope = Rope::one(Bytes::from_static(&[1, 2, 3]));
        assert_eq!(rope.copy_to(&mut [0; 2]), Err((3, 2)));
        assert_eq!(rope.split_to(2).to_bytes(), Bytes::from_static(&[1, 2]));
        assert_eq!(rope.to_bytes(), Bytes::from_static(&[3]));
        assert_eq!(rope.split_to(5).len(), 1, "all there is");
        assert!(rope.is_empty() && rope.split_to(1).is_empty());
    }
}
