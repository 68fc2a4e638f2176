//! The verdicts a black-box probe adds to the checkers, judged from what a real process wrote
//! and nothing it says of itself:
//!
//! - [`agent`]: a real Agent's probe history (the frames, the Client's acks, the kill, the
//!   mock model's marker oracle), each verdict folded into the column of the property it
//!   belongs to (`acp-chaos probe`);
//! - [`client_wire`]: a real Client's trial, from the wire log of the model Agent it talked
//!   to and its exit status, one function per rule (`acp-chaos probe --client`).
//!
//! A rule a run gave nothing to judge is `unknown` with a message that begins with
//! [`VACUOUS`], never `valid`.

pub mod agent;
pub mod client_wire;

/// How a vacuous verdict's message begins (the reports count and mark these).
pub const VACUOUS: &str = "vacuous: ";
