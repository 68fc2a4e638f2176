//! [proptest](https://docs.rs/proptest) strategies over run plans: fault schedules,
//! workloads, raw probes and whole [`Plan`]s, for testing your own Agent (see
//! [`crate::world::run_with`]) or the model ones.
//!
//! A [`Plan`] is one run: every setting, the fault schedule (`plan.faults`, the nemesis's
//! [`FaultSpec`]s), the user's workload (`plan.workload`, one [`Submission`] per input) and raw
//! key-validation probes (`plan.raw`). Take a base plan ([`base`], or [`Plan::derive`] of a
//! scenario), say what may be drawn in a [`Space`] ([`Space::of`] gives every fault kind the
//! base's topology allows), and [`plan`] draws the schedule, the workload and the probes into
//! copies of the base:
//!
//! ```no_run
//! use acp_chaos::checkers::{self, Status};
//! use acp_chaos::models::Design;
//! use acp_chaos::explore::strategy;
//! use acp_chaos::world;
//! use proptest::test_runner::{Config, RngSeed, TestRunner};
//!
//! let base = strategy::base(Design::Stored);
//! let space = strategy::Space::of(&base);
//! let mut runner = TestRunner::new(Config {
//!     cases: 32,
//!     rng_seed: RngSeed::Fixed(7),
//!     failure_persistence: None,
//!     ..Config::default()
//! });
//! runner
//!     .run(&strategy::plan(&base, &space), |plan| {
//!         let history = world::run(&plan); // or world::run_with(&plan, your factory)
//!         for v in checkers::check_all(&history) {
//!             proptest::prop_assert!(v.status != Status::Invalid, "{}: {}", v.property, v.message);
//!         }
//!         Ok(())
//!     })
//!     .unwrap();
//! ```
//!
//! **Validity.** Every drawn fault passes [`FaultSpec::check`] and every drawn plan passes
//! [`Plan::check`]: a kind the topology cannot have (`crash-proxy` without a proxy, the
//! cluster's store faults on a single Agent) is left out by [`Space::of`], and each kind gets
//! only the fields it takes (`silent` for `lose-frame`, `stall_ms` for stalls and reorders,
//! `heal_after_ms` for partitions and holds, `restart_after_ms` for crashes, `direction` for
//! one-way partitions).
//!
//! **Shrinking.** Faults, submissions and probes are drawn with proptest's collection
//! strategies, so a failing plan first loses whole faults, submissions and probes, then each
//! remaining one is simplified: toward earlier fault kinds of [`Space::kinds`], earlier
//! trigger forms (in order: a time, a protocol point, a frame), smaller times, counts and
//! delays, earlier methods of [`Space::methods`], requests before responses. Submissions are
//! numbered 1, 2, ... in time order after every step, so a shrunk workload reads like a
//! scenario's.
//!
//! **Units.** Every time and delay is in simulated milliseconds from the start of the run.
//! Ranges are inclusive.

use std::ops::RangeInclusive;

use proptest::prelude::*;
use proptest::sample::select;
use proptest::strategy::{BoxedStrategy, Union};

use crate::models::{ClientKind, Design, KeyScheme, Point};
use crate::nemesis::kinds::{Knob, SpacedOn};
use crate::nemesis::{Direction, FaultKind, FaultSpec, Setting, Side, Trigger};
use crate::plan::{Plan, Submission};
use crate::scenario::{RawProbe, Scenario};

/// What the strategies may draw. Start from [`Space::of`] and change fields.
#[derive(Debug, Clone)]
pub struct Space {
    /// Fault kinds to draw, simplest first: shrinking moves a fault toward earlier kinds.
    pub kinds: Vec<FaultKind>,
    /// Faults per schedule.
    pub faults: RangeInclusive<usize>,
    /// Protocol points a crash may be triggered at (`crash-agent`, `crash-proxy`: the Agent
    /// passes the point for the `nth` time). A user Agent passes only the points it emits as
    /// [`crate::models::Action::Point`]: list those. Empty: crashes come at a time or a frame.
    pub points: Vec<Point>,
    /// JSON-RPC methods a frame trigger may name (the `nth` request of that method, or the
    /// response to it). List one several times to draw it more often. Must not be empty when
    /// [`Space::kinds`] has a frame fault.
    pub methods: Vec<String>,
    /// When a time-triggered fault fires (`on.at_ms`), ms.
    pub fault_ms: RangeInclusive<u64>,
    /// How long after a crash the process starts again (`restart_after_ms`), ms.
    pub restart_ms: RangeInclusive<u64>,
    /// How long a partition or hold lasts (`heal_after_ms`), ms.
    pub heal_ms: RangeInclusive<u64>,
    /// How long a `stall-frame` holds its connection (`stall_ms`), ms.
    pub stall_ms: RangeInclusive<u64>,
    /// Longest wait of a `reorder-frame` for another connection's frame (`stall_ms`), ms.
    pub reorder_ms: RangeInclusive<u64>,
    /// Chance that a `lose-frame` is silent (nobody sees the close; heartbeats notice).
    pub silent: f64,
    /// Submissions per workload.
    pub submissions: RangeInclusive<usize>,
    /// When the user submits each input (`at_ms`), ms. Must end before the base plan's
    /// `safety_ms`.
    pub submit_ms: RangeInclusive<u64>,
    /// Session slots the inputs go to (`0..sessions`); the Client opens that many sessions.
    pub sessions: usize,
    /// Chance that the user sends the previous input's text again on purpose (a new
    /// submission with the same text, C2).
    pub repeat: f64,
    /// Chance that the user cancels an input (`$/cancel_request`), `cancel_after_ms` later.
    pub cancel: f64,
    /// Delay from an input to its cancel, ms.
    pub cancel_after_ms: RangeInclusive<u64>,
    /// Chance that the user presses stop on an input's session (`session/cancel`, A6),
    /// [`Space::cancel_after_ms`] after it.
    pub stop: f64,
    /// Chance that the user closes an input's session (`session/close`, A15) after it.
    pub close: f64,
    /// Chance that the user forks an input's session (`session/fork`, A9) after it; the next
    /// input goes to the fork. At most [`FORKS_MAX`] forks per workload.
    pub fork: f64,
    /// The models' settings to draw per plan; `None`: the base plan's.
    pub settings: Option<Settings>,
    /// Raw `session/prompt` probes per plan, each with a malformed key (`""`, 256 characters,
    /// a number, `true`, `{}`, `[]`), a boundary one (255 characters), `null`, or no key. The
    /// Agent must answer `-32602` to a malformed key without inserting (K3) and accept the
    /// others (K2; P5 checks both).
    pub raw: RangeInclusive<usize>,
    /// The run seed (the Client's keys, turmoil's scheduler and latencies, a model Agent's
    /// turns come from it).
    pub seeds: RangeInclusive<u64>,
}

/// Most forks a drawn workload makes (each adds a session slot), as in a scenario's.
pub const FORKS_MAX: usize = 8;

/// The models' settings a plan may draw (what the swarm draws per seed). Each is drawn as
/// "the base plan's value" or a value from its range, and shrinks toward the base's.
#[derive(Debug, Clone)]
pub struct Settings {
    /// The Client's key schemes (`session-counter` puts the same key strings in every
    /// session, A9).
    pub keys: Vec<KeyScheme>,
    /// The Client kinds (`sdk-auto-retry`: an SDK that resends under the hood, C9).
    pub kinds: Vec<ClientKind>,
    /// The upper bound of the network's latency, ms.
    pub latency_ms_max: RangeInclusive<u64>,
    /// The upper bound of a model Agent's turn, ms.
    pub turn_ms_max: RangeInclusive<u64>,
    /// A model Agent's chance that work fails (`stopReason: error`, A3), in tenths.
    pub fail_tenths: RangeInclusive<u32>,
    /// The user's time to answer a `session/request_permission`, ms.
    pub permission_ms: RangeInclusive<u64>,
    /// An `sdk-auto-retry` Client's share of unkeyed inputs, in tenths.
    pub unkeyed_tenths: RangeInclusive<u32>,
}

impl Settings {
    /// The swarm's ranges (`src/plan/swarm.rs`).
    pub fn swarm() -> Settings {
        Settings {
            keys: vec![KeyScheme::Uuid, KeyScheme::SessionCounter],
            kinds: vec![ClientKind::Spec, ClientKind::SdkAutoRetry],
            latency_ms_max: 1..=6,
            turn_ms_max: 20..=80,
            fail_tenths: 1..=3,
            permission_ms: 50..=300,
            unkeyed_tenths: 3..=3,
        }
    }
}

impl Space {
    /// Everything the swarm draws, for `base`'s topology: [`Space::of`] with two sessions,
    /// cancels, stops, closes and forks, and the models' [`Settings::swarm`]. For the project's
    /// model Agents (or an Agent that speaks every method the model Client sends); a user
    /// Agent that does not answer `session/close` or `session/fork` starts from
    /// [`Space::of`].
    pub fn swarm(base: &Plan) -> Space {
        Space {
            sessions: base.client.sessions.max(2),
            cancel: 0.15,
            stop: 0.15,
            close: 0.1,
            fork: 0.1,
            settings: Some(Settings::swarm()),
            ..Space::of(base)
        }
    }

    /// Every fault kind `base`'s topology allows (the proxy's and the cluster's only with a
    /// proxy or cluster nodes), 0 to 4 faults, crashes at any Agent protocol point, frame
    /// triggers on `session/prompt` (3 in 6), `session/resume`, `initialize` and `session/new`,
    /// 1 to 4 submissions in the 300 ms after the base's first one (or 20 ms), faults until
    /// 100 ms after the last submission may come, 0 to 2 raw probes, the base's seed; delays
    /// as the swarm draws them.
    pub fn of(base: &Plan) -> Space {
        // Every kind a space draws, in rank order, where the plan has the part it acts on (as
        // the swarm).
        let topology = base.topology();
        let kinds: Vec<FaultKind> = FaultKind::spaced()
            .into_iter()
            .filter(|k| topology.has(k.reach()))
            .collect();
        let start = base.workload.first().map_or(20, |s| s.at_ms);
        let last = (start + 300).min(base.safety_ms * 4 / 5).max(start);
        let prompt = "session/prompt".to_string();
        Space {
            kinds,
            faults: 0..=4,
            points: Point::AGENT.to_vec(),
            methods: vec![
                prompt.clone(),
                prompt.clone(),
                prompt,
                "session/resume".into(),
                "initialize".into(),
                "session/new".into(),
            ],
            fault_ms: start
                ..=(last + 100)
                    .min(base.safety_ms.saturating_sub(1))
                    .max(start),
            // The swarm's ranges (`FaultKind::swarm_ms`); one restart range for every crash:
            // the Agent's, the widest.
            restart_ms: swarm_ms(FaultKind::CrashAgent, Setting::RestartAfterMs),
            heal_ms: swarm_ms(FaultKind::Partition, Setting::HealAfterMs),
            stall_ms: swarm_ms(FaultKind::StallFrame, Setting::StallMs),
            reorder_ms: swarm_ms(FaultKind::ReorderFrame, Setting::StallMs),
            silent: 0.4,
            submissions: 1..=4,
            submit_ms: start..=last,
            sessions: base.client.sessions.max(1),
            repeat: 0.2,
            cancel: 0.0,
            cancel_after_ms: 10..=400,
            stop: 0.0,
            close: 0.0,
            fork: 0.0,
            settings: None,
            raw: 0..=2,
            seeds: base.seed..=base.seed,
        }
    }

    /// Most submissions, at least 1 (bounds `nth` of prompt and point triggers).
    fn n_max(&self) -> u32 {
        (*self.submissions.end()).max(1) as u32
    }
}

/// The base scenario of [`base`]: one Client, one session, short phases.
pub const BASE: &str = r#"
summary = "acp-chaos::strategy base: one Client, one Agent, one session; the strategies draw the faults, the workload and the probes"

[workload]
submissions = 1

[timing]
safety_ms = 1000
liveness_ms = 3000
"#;

/// A small base plan for `design`: one Client, one session, the Agent directly reachable
/// (no proxy, no watcher, socket transport, atomic disk writes), 1 ms latency, a safety phase
/// of 1000 ms and a liveness bound of 3000 ms, seed 0, no faults, one submission at 20 ms.
/// Scenario name `strategy`. For a cluster design, 3 nodes.
pub fn base(design: Design) -> Plan {
    let s = Scenario::parse(std::path::Path::new("strategy.toml"), BASE)
        .expect("the built-in base scenario parses");
    Plan::derive(&s, 0, None, design)
}

fn spec(kind: FaultKind, on: Trigger) -> FaultSpec {
    FaultSpec::new(kind, on)
}

/// At a simulated time.
fn at(space: &Space) -> BoxedStrategy<Trigger> {
    space
        .fault_ms
        .clone()
        .prop_map(|at_ms| Trigger::At { at_ms, nth: 1 })
        .boxed()
}

/// The nth time the Agent passes one of `points`.
fn point(points: Vec<Point>, n_max: u32) -> BoxedStrategy<Trigger> {
    (select(points), 1..=n_max)
        .prop_map(|(p, nth)| Trigger::at_point(p, nth))
        .boxed()
}

/// The nth request of a method, or the response to it: `session/prompt` up to one more than
/// the submissions, other methods the first or second.
fn frame(space: &Space) -> BoxedStrategy<Trigger> {
    assert!(
        !space.methods.is_empty(),
        "strategy::Space::methods is empty but a frame-triggered fault kind is listed"
    );
    (
        select(space.methods.clone()),
        prop_oneof![Just(Side::Request), Just(Side::Response)],
        1..=space.n_max() + 1,
    )
        .prop_map(|(method, side, n)| {
            let nth = if method == "session/prompt" {
                n
            } else {
                (n - 1) % 2 + 1
            };
            Trigger::at_frame(side, &method, nth)
        })
        .boxed()
}

/// Right after the user's nth submission is accepted by the Client.
fn submission(n_max: u32) -> BoxedStrategy<Trigger> {
    (1..=n_max)
        .prop_map(|submission| Trigger::Submission { submission, nth: 1 })
        .boxed()
}

/// A crash's trigger: a time, one of `points`, or a frame.
fn crash_on(space: &Space, points: &[Point], frames: bool) -> BoxedStrategy<Trigger> {
    let mut options = vec![at(space)];
    if !points.is_empty() {
        options.push(point(points.to_vec(), space.n_max()));
    }
    if frames {
        options.push(frame(space));
    }
    Union::new(options).boxed()
}

/// One fault of `kind`, with the fields that kind takes: its trigger and settings as its row
/// says ([`crate::nemesis::kinds::Spaced`]).
pub fn fault_of(kind: FaultKind, space: &Space) -> BoxedStrategy<FaultSpec> {
    let spaced = kind.row().space;
    let on = trigger_of(kind, spaced.on, space);
    let knobs: Vec<BoxedStrategy<Knobbed>> =
        spaced.settings.iter().map(|k| knob(*k, space)).collect();
    let spec = move |on| spec(kind, on);
    // A tuple per arity, so a kind draws (and shrinks) its trigger then each setting in turn.
    if knobs.len() > 2 {
        return (on, knobs)
            .prop_map(move |(on, v)| v.into_iter().fold(spec(on), |f, k| k.set(f)))
            .boxed();
    }
    let mut knobs = knobs.into_iter();
    match (knobs.next(), knobs.next()) {
        (None, _) => on.prop_map(spec).boxed(),
        (Some(a), None) => (on, a).prop_map(move |(on, a)| a.set(spec(on))).boxed(),
        (Some(a), Some(b)) => (on, a, b)
            .prop_map(move |(on, a, b)| b.set(a.set(spec(on))))
            .boxed(),
    }
}

/// The trigger options of a kind's row ([`SpacedOn`]).
fn trigger_of(kind: FaultKind, on: SpacedOn, space: &Space) -> BoxedStrategy<Trigger> {
    match on {
        SpacedOn::Frame => frame(space),
        SpacedOn::PromptRequest => (1..=space.n_max() + 1)
            .prop_map(|nth| Trigger::at_frame(Side::Request, "session/prompt", nth))
            .boxed(),
        SpacedOn::Time => at(space),
        SpacedOn::TimeOrSubmission => Union::new([at(space), submission(space.n_max())]).boxed(),
        SpacedOn::TimeOrAgentPointOrFrame => {
            let points: Vec<Point> = space
                .points
                .iter()
                .copied()
                .filter(|p| *p != Point::AfterStoreWrite)
                .collect();
            crash_on(space, &points, true)
        }
        // Right after a store write, before its reply: the node cannot know.
        SpacedOn::TimeOrOwnPoint => crash_on(space, kind.points(), false),
    }
}

/// One setting's drawn value ([`Knob`]).
#[derive(Debug, Clone, Copy)]
enum Knobbed {
    Silent(bool),
    Ms(Setting, u64),
    Direction(Direction),
}

impl Knobbed {
    /// `f` with this setting.
    fn set(self, mut f: FaultSpec) -> FaultSpec {
        match self {
            Knobbed::Silent(silent) => f.silent = silent,
            Knobbed::Direction(d) => f.direction = Some(d),
            Knobbed::Ms(s, ms) => {
                if let Some(given) = f.ms_mut(s) {
                    *given = Some(ms);
                }
            }
        }
        f
    }
}

/// The space's knob `k` as a strategy.
fn knob(k: Knob, space: &Space) -> BoxedStrategy<Knobbed> {
    let ms = |s: Setting, range: &RangeInclusive<u64>| {
        range.clone().prop_map(move |ms| Knobbed::Ms(s, ms)).boxed()
    };
    match k {
        Knob::Silent => prop::bool::weighted(space.silent.clamp(0.0, 1.0))
            .prop_map(Knobbed::Silent)
            .boxed(),
        Knob::Stall => ms(Setting::StallMs, &space.stall_ms),
        Knob::ReorderBound => ms(Setting::StallMs, &space.reorder_ms),
        Knob::Heal => ms(Setting::HealAfterMs, &space.heal_ms),
        Knob::Restart => ms(Setting::RestartAfterMs, &space.restart_ms),
        Knob::Direction => prop_oneof![
            Just(Direction::ClientToAgent),
            Just(Direction::AgentToClient)
        ]
        .prop_map(Knobbed::Direction)
        .boxed(),
    }
}

/// One fault of any kind in [`Space::kinds`] (shrinks toward the earlier kinds).
pub fn fault(space: &Space) -> BoxedStrategy<FaultSpec> {
    assert!(
        !space.kinds.is_empty(),
        "strategy::fault: Space::kinds is empty"
    );
    Union::new(space.kinds.iter().map(|k| fault_of(*k, space))).boxed()
}

/// A fault schedule: [`Space::faults`] faults (none when [`Space::kinds`] is empty), in the
/// order the nemesis numbers them. Shrinks by removing faults, then simplifying each.
pub fn schedule(space: &Space) -> BoxedStrategy<Vec<FaultSpec>> {
    if space.kinds.is_empty() {
        return Just(Vec::new()).boxed();
    }
    prop::collection::vec(fault(space), space.faults.clone()).boxed()
}

/// A workload: [`Space::submissions`] inputs at times in [`Space::submit_ms`], each to a slot
/// below [`Space::sessions`], numbered 1, 2, ... in time order, with texts `input N` (or the
/// previous text again, [`Space::repeat`]) and maybe a cancel, stop, close or fork
/// ([`Space::cancel`], [`Space::stop`], [`Space::close`], [`Space::fork`]: each
/// [`Space::cancel_after_ms`] after the input; after a fork the next input goes to the new
/// slot). Shrinks by removing inputs, then moving them earlier, to slot 0, without repeats,
/// cancels, stops, closes or forks.
pub fn workload(space: &Space) -> BoxedStrategy<Vec<Submission>> {
    let coin = |p: f64| prop::bool::weighted(p.clamp(0.0, 1.0));
    let one = (
        space.submit_ms.clone(),
        0..space.sessions.max(1),
        coin(space.repeat),
        (coin(space.cancel), space.cancel_after_ms.clone()),
        (coin(space.stop), coin(space.close), coin(space.fork)),
    );
    let sessions = space.sessions.max(1);
    prop::collection::vec(one, space.submissions.clone())
        .prop_map(move |mut drawn| {
            drawn.sort_by_key(|d| d.0);
            let mut out: Vec<Submission> = Vec::with_capacity(drawn.len());
            let (mut forks, mut next_slot) = (0usize, None::<(u64, usize)>);
            for (i, (at_ms, slot, repeat, (cancel, after), (stop, close, fork))) in
                drawn.into_iter().enumerate()
            {
                let n = i as u64 + 1;
                let text = match out.last() {
                    Some(prev) if repeat => prev.text.clone(),
                    _ => format!("input {n}"),
                };
                // The input after a fork goes to the fork, if the fork was asked for first.
                let slot = match next_slot.take() {
                    Some((t, into)) if t < at_ms => into,
                    _ => slot,
                };
                let fork = (fork && forks < FORKS_MAX).then(|| {
                    forks += 1;
                    (at_ms + after, sessions + forks - 1)
                });
                next_slot = fork;
                out.push(Submission {
                    submission: n,
                    at_ms,
                    slot,
                    cancel_at_ms: cancel.then_some(at_ms + after),
                    stop_at_ms: stop.then_some(at_ms + after),
                    close_at_ms: close.then_some(at_ms + after),
                    fork,
                    text,
                });
            }
            out
        })
        .boxed()
}

/// The models' settings drawn from `s`, applied to a plan: each `None` keeps the base's.
#[derive(Debug, Clone)]
struct Drawn {
    keys: Option<KeyScheme>,
    kind: Option<ClientKind>,
    latency_ms_max: Option<u64>,
    turn_ms_max: Option<u64>,
    fail_rate: Option<f64>,
    permission_ms: Option<u64>,
    unkeyed_rate: Option<f64>,
}

/// "The base's value" (first, so shrinking goes there) or one drawn from `values`.
fn or_base<T: std::fmt::Debug + Clone + 'static>(
    values: BoxedStrategy<T>,
) -> BoxedStrategy<Option<T>> {
    prop_oneof![Just(None), values.prop_map(Some)].boxed()
}

fn settings(s: Option<&Settings>) -> BoxedStrategy<Option<Drawn>> {
    let Some(s) = s.cloned() else {
        return Just(None).boxed();
    };
    let tenths = |r: RangeInclusive<u32>| r.prop_map(|t| f64::from(t) / 10.0).boxed();
    (
        or_base(select(s.keys.clone()).boxed()),
        or_base(select(s.kinds.clone()).boxed()),
        or_base(s.latency_ms_max.clone().boxed()),
        or_base(s.turn_ms_max.clone().boxed()),
        or_base(tenths(s.fail_tenths.clone())),
        or_base(s.permission_ms.clone().boxed()),
        or_base(tenths(s.unkeyed_tenths.clone())),
    )
        .prop_map(
            |(keys, kind, latency_ms_max, turn_ms_max, fail_rate, permission_ms, unkeyed_rate)| {
                Some(Drawn {
                    keys,
                    kind,
                    latency_ms_max,
                    turn_ms_max,
                    fail_rate,
                    permission_ms,
                    unkeyed_rate,
                })
            },
        )
        .boxed()
}

impl Drawn {
    /// Set the drawn values in `p`, and name them in `p.drawn` as the swarm does.
    fn apply(&self, p: &mut Plan) {
        if let Some(k) = self.keys {
            p.client.keys = k;
            p.drawn.push(format!("keys={k:?}"));
        }
        if let Some(k) = self.kind {
            p.client.kind = k;
            p.drawn.push(format!("client={}", k.as_str()));
        }
        if let Some(v) = self.latency_ms_max {
            p.latency_ms_max = v.max(p.latency_ms_min);
            p.drawn.push(format!("latency_ms_max={}", p.latency_ms_max));
        }
        if let Some(v) = self.turn_ms_max {
            p.agent.turn_ms_max = v.max(p.agent.turn_ms_min);
            p.drawn.push(format!("turn_ms_max={}", p.agent.turn_ms_max));
        }
        if let Some(v) = self.fail_rate {
            p.agent.fail_rate = v;
            p.drawn.push(format!("fail_rate={v}"));
        }
        if let Some(v) = self.permission_ms {
            p.client.permission_ms = v;
            p.drawn.push(format!("permission_ms={v}"));
        }
        if let (Some(v), ClientKind::SdkAutoRetry) = (self.unkeyed_rate, p.client.kind) {
            p.client.unkeyed_rate = v;
            p.drawn.push(format!("unkeyed_rate={v}"));
        }
    }
}

/// What [`Space::raw`] probes carry: a key as JSON text (`None`: no key), or (`Err`) a whole
/// line that is not JSON (a lone surrogate escape, a truncated frame), answered `-32700`.
fn probe_keys() -> Vec<Result<Option<String>, String>> {
    let keys: Vec<Option<String>> = vec![
        Some("\"\"".into()),
        Some(format!("\"{}\"", "x".repeat(256))),
        Some("1".into()),
        Some("true".into()),
        Some("{}".into()),
        Some("[]".into()),
        Some(format!("\"{}\"", "x".repeat(255))),
        Some("null".into()),
        None,
    ];
    let mut all: Vec<Result<Option<String>, String>> = keys.into_iter().map(Ok).collect();
    all.push(Err(r#"{"jsonrpc":"2.0","id":$ID,"method":"session/prompt","params":{"sessionId":"$SESSION","prompt":[{"type":"text","text":"x"}],"idempotencyKey":"\ud800"}}"#.into()));
    all.push(Err(
        r#"{"jsonrpc":"2.0","id":$ID,"method":"session/pro"#.into()
    ));
    all
}

/// Raw `session/prompt` probes ([`Space::raw`]), each sent by the Client at a time in
/// [`Space::submit_ms`] on a ready connection, on slot 0's session.
pub fn raw_probes(space: &Space) -> BoxedStrategy<Vec<RawProbe>> {
    let one = (space.submit_ms.clone(), select(probe_keys()));
    prop::collection::vec(one, space.raw.clone())
        .prop_map(|drawn| {
            drawn
                .into_iter()
                .map(|(at_ms, probe)| RawProbe {
                    at_ms,
                    key_json: probe.clone().unwrap_or(None),
                    line: probe.err(),
                    note: "drawn by acp_chaos::explore::strategy".into(),
                })
                .collect()
        })
        .boxed()
}

/// Whole plans: `base` with its faults, workload and raw probes drawn from `space` (replacing
/// the base's), its seed from [`Space::seeds`], the Client opening [`Space::sessions`]
/// sessions, and the models' [`Space::settings`] if given. Every plan passes [`Plan::check`].
pub fn plan(base: &Plan, space: &Space) -> BoxedStrategy<Plan> {
    let base = base.clone();
    let sessions = space.sessions.max(1);
    (
        schedule(space),
        workload(space),
        raw_probes(space),
        space.seeds.clone(),
        settings(space.settings.as_ref()),
    )
        .prop_map(move |(faults, workload, raw, seed, drawn)| {
            let mut p = base.clone();
            p.faults = faults;
            p.workload = workload;
            p.raw = raw;
            p.seed = seed;
            p.swarm = false;
            p.drawn = Vec::new();
            // The Client opens a session per slot the workload may name.
            p.client.sessions = p.client.sessions.max(sessions);
            if let Some(d) = drawn {
                d.apply(&mut p);
            }
            p
        })
        .boxed()
}

/// The swarm's range for a duration setting of `kind` ([`FaultKind::swarm_ms`]).
fn swarm_ms(kind: FaultKind, s: Setting) -> std::ops::RangeInclusive<u64> {
    kind.swarm_ms(s).expect("the kind takes the setting")
}
