//! The nemesis: the fault vocabulary and what each fault does.
//!
//! - [`kinds`]: [`FaultKind`], one file per kind holding its row ([`kinds::Row`]): its name,
//!   where it acts ([`Reach`], [`Topology`]), what it does ([`Effect`]), the [`Setting`]s it
//!   takes, what [`Fires`] it and at which points, and how the swarm, a proptest space and
//!   exploration draw or place it; every per-kind answer reads the row;
//! - [`spec`]: [`FaultSpec`] (one `[[fault]]` entry, scripted or drawn by the swarm), checked
//!   against its kind's answers, [`Direction`], and a fault as one line ([`fault_line`]);
//! - [`logged`]: the op name each kind logs when it fires, for readers of a history;
//! - [`trigger`]: [`Trigger`], when a fault fires (a frame, a protocol point, a submission,
//!   a time), and [`Side`];
//! - [`action`]: [`NemesisAction`], the process-level faults the step loop carries out between
//!   steps (crash, restart, partition, hold);
//! - [`frame`]: [`FrameDecision`], what a connection's writer does with one frame;
//! - [`count`]: [`ExchangeCount`], which exchange a frame is part of and its number: the one
//!   count frame triggers are matched against, by the world and by exploration;
//! - [`decide`]: [`Nemesis`], the nemesis of one run: what fired, and the fate of each frame
//!   written, submission accepted, protocol point passed and instant reached. The world holds
//!   one and carries out what it decides;
//! - [`in_force`]: [`InForce`], what the nemesis has in force between steps (hosts down,
//!   partitions, holds, the store cut) and when each ends: the step loop asks it whether a
//!   process-level fault starts and carries out the answer.
//!
//! The schedule is part of the [`crate::plan::Plan`]; the world arms it
//! ([`crate::world`]) and logs every fault that fires as a `nemesis` op.

pub mod action;
pub mod count;
pub mod decide;
pub mod frame;
pub mod in_force;
pub mod kinds;
pub mod logged;
pub mod spec;
pub mod trigger;

pub use action::NemesisAction;
pub use count::{AttemptOf, Exchange, ExchangeCount};
pub use decide::{FrameFate, Nemesis, PointsAndTimes, Swallowed};
pub use frame::FrameDecision;
pub use in_force::InForce;
pub use kinds::FaultKind;
pub use kinds::{
    AtPipe, DiskDamage, Durations, Effect, Fires, Given, Level, Reach, Setting, Takes, Topology,
};

/// Where [`FaultKind`] was until stop 58 (`acp_chaos::nemesis::fault::FaultKind`); the path
/// still works.
pub mod fault {
    pub use super::kinds::FaultKind;
}
pub use spec::{fault_line, Direction, FaultSpec};
pub use trigger::{FrameTrigger, Sender, Side, Trigger, TriggerFields};
