//! Frame-level faults: what a connection's writer does with one frame, decided per frame by
//! the world's ledger from the armed faults.

/// What a frame-layer writer does with one frame.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum FrameDecision {
    /// Write it.
    Deliver,
    /// Break the connection here: this frame and everything after it are lost.
    Lose {
        /// Neither end sees a close; only heartbeats notice.
        silent: bool,
    },
    /// Wait this long, then write it (and everything behind it).
    Stall(u64),
    /// Wait until a frame on another connection has been written after this one was (at
    /// most `bound_ms`), then write it: frames on different connections swap.
    Reorder {
        /// Longest wait, ms.
        bound_ms: u64,
        /// The send sequence number of this frame.
        after: u64,
    },
    /// Remote transport: drop this frame only; the connection goes on. With `not_accepted`
    /// the sender learns the request was not accepted (X5).
    Drop {
        /// Tell the sender.
        not_accepted: bool,
    },
}
