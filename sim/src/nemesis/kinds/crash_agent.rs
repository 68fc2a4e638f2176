//! `crash-agent`: crash the Agent (unsynced writes lost), restart it after `restart_after_ms`.

use super::{
    AtPipe, ByDefault, DiskDamage, Drawn, DrawnOn, Effect, Explored, Fires, Knob, Placed, Reach,
    Row, Setting, Spaced, SpacedOn, Takes,
};

/// `crash-agent`'s row.
pub(super) const ROW: Row = Row {
    name: "crash-agent",
    summary: "crash the Agent (unsynced writes lost), at a time, frame or protocol point",
    reach: Reach::Everywhere,
    effect: Effect::CRASH_AGENT,
    settings: &[Takes::RESTART_AGENT],
    fires: Fires::AtEvent,
    points: super::AGENT_POINTS,
    at_pipe: Some(AtPipe::CrashAgent),
    swarm: Drawn {
        on: DrawnOn::TimeOrPoint,
        settings: &[Setting::RestartAfterMs],
    },
    space: Spaced {
        rank: Some(1),
        on: SpacedOn::TimeOrAgentPointOrFrame,
        settings: &[Knob::Restart],
    },
    explore: Explored {
        by_default: ByDefault::Rank(2),
        placed: Placed {
            submissions: true,
            points: super::AGENT_POINTS,
            ..Placed::NOWHERE
        },
    },
};

/// The row of a disk kind: it crashes the Agent as `crash-agent` does and does `damage` to its
/// stored log while it is down, then restarts it. Opt-in (a scenario's `[swarm] faults` lists
/// it), without effect on a cluster (its nodes keep no log), never placed by exploration.
pub(super) const fn damaging(name: &'static str, summary: &'static str, damage: DiskDamage) -> Row {
    Row {
        name,
        summary,
        reach: Reach::Log,
        effect: Effect::Crash {
            host: "agent",
            damage: Some(damage),
        },
        at_pipe: None,
        space: Spaced {
            rank: None,
            ..ROW.space
        },
        explore: Explored {
            by_default: ByDefault::Never(
                "exploration places no disk damage: the disk-0N scenarios run it",
            ),
            placed: Placed::NOWHERE,
        },
        ..ROW
    }
}
