//! The settings a `[[fault]]` entry may give besides its kind and trigger ([`Setting`]), and how
//! a kind takes one ([`Takes`]): required or optional, and for a duration its default (what
//! exploration places) and the swarm's range. A kind's row lists its [`Takes`];
//! `FaultSpec::check` validates an entry from them alone.

/// A setting a `[[fault]]` entry may give besides its kind and trigger.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Setting {
    /// `silent`: the break is silent (only heartbeats notice it).
    Silent,
    /// `reroute`: the Client's next connection goes to another cluster node.
    Reroute,
    /// `stall_ms`: how long a frame waits, ms.
    StallMs,
    /// `direction`: which way a one-way partition cuts.
    Direction,
    /// `restart_after_ms`: when a crashed process starts again, ms.
    RestartAfterMs,
    /// `heal_after_ms`: when a partition heals or a hold releases, ms.
    HealAfterMs,
}

impl Setting {
    /// Every setting, in the order a `[[fault]]` entry's settings are checked.
    pub const ALL: [Setting; 6] = [
        Setting::Silent,
        Setting::Reroute,
        Setting::StallMs,
        Setting::Direction,
        Setting::RestartAfterMs,
        Setting::HealAfterMs,
    ];

    /// Its field in a `[[fault]]` entry.
    pub fn field(self) -> &'static str {
        match self {
            Setting::Silent => "silent",
            Setting::Reroute => "reroute",
            Setting::StallMs => "stall_ms",
            Setting::Direction => "direction",
            Setting::RestartAfterMs => "restart_after_ms",
            Setting::HealAfterMs => "heal_after_ms",
        }
    }
}

/// Whether a kind must be given a setting it takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Given {
    /// A `[[fault]]` entry without it is refused.
    Required,
    /// Without it the kind uses its default ([`super::FaultKind::default_ms`]) or `false`.
    Optional,
}

/// One setting a kind takes ([`super::FaultKind::settings`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Takes {
    /// The setting.
    pub setting: Setting,
    /// Whether an entry must give it.
    pub given: Given,
    /// For a duration: its default and the swarm's range.
    pub ms: Option<Durations>,
}

/// A duration setting's values, ms.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Durations {
    /// What an entry without it gets, and what exploration places.
    pub default: u64,
    /// What the swarm draws from.
    pub swarm: std::ops::RangeInclusive<u64>,
}

impl Takes {
    /// An optional flag (`silent`, `reroute`).
    pub const fn flag(setting: Setting) -> Takes {
        Takes {
            setting,
            given: Given::Optional,
            ms: None,
        }
    }

    /// A duration: whether an entry must give it, its default (what exploration places) and
    /// the swarm's range `(low, high)`, ms, both ends drawn.
    pub const fn ms(setting: Setting, given: Given, default: u64, swarm: (u64, u64)) -> Takes {
        Takes {
            setting,
            given,
            ms: Some(Durations {
                default,
                swarm: swarm.0..=swarm.1,
            }),
        }
    }

    /// `silent`, optional.
    pub const SILENT: Takes = Takes::flag(Setting::Silent);
    /// `reroute`, optional.
    pub const REROUTE: Takes = Takes::flag(Setting::Reroute);
    /// `direction`, required.
    pub const DIRECTION: Takes = Takes {
        setting: Setting::Direction,
        given: Given::Required,
        ms: None,
    };
    /// A stall's `stall_ms`: required; 100 ms placed, 50 to 400 drawn.
    pub const STALL: Takes = Takes::ms(Setting::StallMs, Given::Required, 100, (50, 400));
    /// A reorder's bound (`stall_ms`): optional; 40 ms by default, 10 to 60 drawn.
    pub const REORDER_BOUND: Takes = Takes::ms(Setting::StallMs, Given::Optional, 40, (10, 60));
    /// `heal_after_ms`: required; 100 ms placed, 30 to 400 drawn.
    pub const HEAL: Takes = Takes::ms(Setting::HealAfterMs, Given::Required, 100, (30, 400));
    /// An Agent's `restart_after_ms` (the disk's kinds too): required; 50 ms placed, 10 to
    /// 300 drawn.
    pub const RESTART_AGENT: Takes =
        Takes::ms(Setting::RestartAfterMs, Given::Required, 50, (10, 300));
    /// The Client's, the proxy's or the store's `restart_after_ms`: required; 50 ms placed,
    /// 10 to 200 drawn.
    pub const RESTART: Takes = Takes::ms(Setting::RestartAfterMs, Given::Required, 50, (10, 200));
}
