//! The `f` of the `nemesis` op each fault kind logs when it fires: its kind's name
//! ([`FaultKind::as_str`]), as constants a checker's `match` over ops can name, so no reader
//! of a history writes a kind's name by hand.

use super::kinds::FaultKind;

/// `lose-frame` fired.
pub const LOSE_FRAME: &str = FaultKind::LoseFrame.as_str();
/// `lose-exchange` fired.
pub const LOSE_EXCHANGE: &str = FaultKind::LoseExchange.as_str();
/// `drop-updates` fired.
pub const DROP_UPDATES: &str = FaultKind::DropUpdates.as_str();
/// `stall-frame` fired.
pub const STALL_FRAME: &str = FaultKind::StallFrame.as_str();
/// `crash-agent` fired.
pub const CRASH_AGENT: &str = FaultKind::CrashAgent.as_str();
