//! The history's op names: the `f` of every op, one constant each, with what its `value`
//! holds. The models emit the effects ([`crate::Action::Effect`]); the drivers log the rest
//! (frames, connections, faults, phases). The checkers read the history by these names.
//!
//! **The effect contract.** An Agent plugged into the simulator (`AgentModel`) is judged by
//! the effects it emits. The table in [`crate::AgentModel`]'s docs (and `docs/effects.md`)
//! lists each effect the checkers read, its fields, when to emit it, the properties and rules
//! that read it, and which properties are reported "not checked" (unknown) when the wire shows
//! the Agent owed it and it never emitted it; [`crate::ClientModel`]'s docs list the Client's.

// --- the Agent's effects ---------------------------------------------------------------------

/// A user message was inserted: `{session, messageId, key, conn, id, mode, live_only}`
/// (`mode`: `direct` or `held`; `live_only`: a locally handled command, A11).
pub const INSERT: &str = "insert";
/// An insertion became durable (synced to the disk or the cluster store):
/// `{session, messageId}`.
pub const DURABLE: &str = "durable";
/// An insertion became visible (echoed, answered, or work started on it):
/// `{session, messageId}`.
pub const VISIBLE: &str = "visible";
/// A retry was answered from the key's record, inserting nothing:
/// `{session, key, messageId, conn, id}`.
pub const DEDUP_HIT: &str = "dedup-hit";
/// A prompt was rejected without insertion: `{conn, id, code, transient, in_progress}`.
pub const REJECT: &str = "reject";
/// A round of work began for a message: `{session, messageId, ms, tool}`.
pub const TURN_START: &str = "turn-start";
/// A round of work ended: `{session, messageId, stopReason}`.
pub const TURN_END: &str = "turn-end";
/// The work of a turn failed (it must end `stopReason: "error"`, A3): `{session, messageId}`.
pub const WORK_FAILED: &str = "work-failed";
/// A tool call's side effect happened: `{session, messageId, toolCallId}`.
pub const TOOL_EFFECT: &str = "tool-effect";
/// A permission request was decided: `{session, messageId, approved, reason}`.
pub const PERMISSION: &str = "permission";
/// A prompt was held behind a running turn (O4 hold): `{session, conn, id}`.
pub const HOLD: &str = "hold";
/// A held prompt was released to run: `{session, conn, id}`.
pub const RELEASE: &str = "release";
/// A retry waits for the held attempt of its key (A7): `{session, key, conn, id}`.
pub const WAIT_HELD: &str = "wait-held";
/// A held prompt was withdrawn by a cancel (A5, A6): `{session, key, conn, id, by}`.
pub const WITHDRAW: &str = "withdraw";
/// Cluster store: a `session/cancel` read by a node was recorded for the session, so prompts
/// held on any node before it are never inserted (A6): `{session, stops, stop}` (`stops`:
/// the session's count of recorded stops; `stop`: the stop's id, `<node>b<boot>.<n>`).
pub const STOP_RECORDED: &str = "stop-recorded";
/// A held prompt was dropped when its connection ended (O1 `drop`): `{session, conn, id}`.
pub const DROP_HELD: &str = "drop-held";
/// A session became active on a connection: `{session, conn}`.
pub const ACTIVATE: &str = "activate";
/// A session stopped being active on a connection: `{session, conn}`.
pub const DEACTIVATE: &str = "deactivate";
/// A retained message was discarded at the end of the Agent's retention window, with its key
/// record: it is no longer kept or replayed, and a retry of its key may be inserted again
/// (A16): `{session, messageId}`.
pub const DISCARD: &str = "discard";
/// A session was deleted: `{session}`.
pub const SESSION_DELETE: &str = "session-delete";
/// A session's metadata changed (`session/set_title`, `session/archive`, `session/unarchive`):
/// `{session, title}` or `{session, archived}`.
pub const SESSION_META: &str = "session-meta";
/// The adapter began filling its id set from the runtime's history: `{session}`.
pub const HISTORY_READ_START: &str = "history-read-start";
/// The adapter's history fill ended: `{session, messages}`.
pub const HISTORY_READ: &str = "history-read";
/// A cluster node sent a store write again after no answer: `{op | record, session,
/// messageId}`.
pub const STORE_RETRY: &str = "store-retry";
/// A cluster node's store write timed out: `{session, conn, id, answer}`.
pub const STORE_TIMEOUT: &str = "store-timeout";

// --- the Client's effects --------------------------------------------------------------------

/// The Client sent an attempt of a submission (Jepsen invoke): `{submission, conn, id, key}`.
pub const ATTEMPT: &str = "attempt";
/// The Client holds the submission's `messageId` (Jepsen ok): `{submission, messageId}`.
pub const ACK: &str = "ack";
/// The user was shown the submission as failed (Jepsen fail): `{submission, error}`.
pub const SURFACE: &str = "surface";
/// The submission was withdrawn by its own user's cancel (Jepsen fail): `{submission,
/// local}`.
pub const WITHDRAWN: &str = "withdrawn";
/// The Client did not resend a request, by its class: `{method, class, submission?, why?}`.
pub const NOT_RESENT: &str = "not-resent";
/// An SDK client resent a request by itself: `{method, class}`.
pub const SDK_RESEND: &str = "sdk-resend";
/// The application created a session again after a lost `session/new`: `{slot}`.
pub const APP_NEW_SESSION: &str = "app-new-session";
/// The Client gave up a connection that never finished its set-up: `{conn}`.
pub const GIVE_UP_CONNECTION: &str = "give-up-connection";
/// A request the remote transport did not accept was sent again: `{conn, id}`.
pub const RESEND_NOT_ACCEPTED: &str = "resend-not-accepted";
/// A raw `session/prompt` probe was sent: `{n, conn, id, line}`.
pub const RAW_SENT: &str = "raw-sent";
/// The Client learned a session id: `{slot, session}`.
pub const SESSION_KNOWN: &str = "session-known";
/// `session/list` answered: `{sessions}`.
pub const LISTED: &str = "listed";
/// Mutant `resume-only`: a sent input assumed to be in the replay: `{submission}`.
pub const ASSUMED_IN_REPLAY: &str = "assumed-in-replay";
/// The Client's submissions still pending when the run ended: `{submissions}`.
pub const PENDING_AT_END: &str = "pending-at-end";

// --- the proxy's and the watcher's effects ---------------------------------------------------

/// The proxy forwarded a request under a rewritten id: `{method, up_conn, up_id,
/// up_request_id, down_conn, down_id, down_request_id, mapped}`.
pub const FORWARD: &str = "forward";
/// The watcher started watching a session: `{conn}`.
pub const WATCH: &str = "watch";

// --- the user (the workload) -----------------------------------------------------------------

/// The user submitted an input (Jepsen invoke): `{submission, slot, text}`.
pub const SUBMIT: &str = "submit";
/// The user cancelled a submission: `{submission}`.
pub const CANCEL: &str = "cancel";
/// The user pressed stop on a session: `{slot}`.
pub const STOP: &str = "stop";
/// The user closed a session: `{slot}`.
pub const CLOSE: &str = "close";
/// The user forked a session: `{slot, into}`.
pub const FORK: &str = "fork";
/// A raw probe is due: `{n, line}`.
pub const RAW: &str = "raw";

// --- processes and connections (logged by the drivers) ---------------------------------------

/// A process started: `{boot, pending?}`.
pub const BOOT: &str = "boot";
/// An Agent process (or the cluster store) started and recovered: `{boot, retained}`
/// (`retained`: session → messageIds it still holds; `null` when it does not say).
pub const RECOVER: &str = "recover";
/// A torn tail was cut from a stored log on recovery: `{from, to}`.
pub const TRUNCATE_TORN_TAIL: &str = "truncate-torn-tail";
/// A process found its stored log damaged below its synced watermark on recovery (the first
/// record not whole at byte `at`, before the synced length `synced` of a file `len` bytes
/// long: a bad record, or the file cut short) and refused to start: `{file, at, synced,
/// len}`; `{file, at, why}` when the watermark file itself is damaged.
pub const STORE_CORRUPT: &str = "store-corrupt";
/// The `flip-bit` fault flipped one bit of a stored record while its process was down:
/// `{file, record, of, offset}` (`{file, of}` when fewer than 2 records: nothing flipped).
pub const FLIPPED: &str = "flipped";
/// The `zero-sector` fault zeroed a sector of a stored log inside its synced part while its
/// process was down: `{file, synced, from, to}` (`{file, synced}`: nothing synced, nothing
/// zeroed).
pub const ZEROED_SECTOR: &str = "zeroed-sector";
/// The `lose-synced-record` fault cut a stored log before its last synced record while its
/// process was down: `{file, record, of, from, to}` (`{file, of}`: no synced record, nothing
/// cut).
pub const LOST_SYNCED_RECORD: &str = "lost-synced-record";
/// A connection was opened: `{conn, client_addr, seen_by}`.
pub const CONN_OPEN: &str = "conn-open";
/// A connection ended at this end: `{conn, reason}`.
pub const CONN_END: &str = "conn-end";
/// A `connect` failed.
pub const CONNECT_FAILED: &str = "connect-failed";
/// A frame was written: `{conn, from, frame}`.
pub const SEND: &str = "send";
/// A frame was read: `{conn, from, frame}`.
pub const RECV: &str = "recv";
/// A frame was dropped unseen (a dead update stream): `{conn, from, method, why}`.
pub const DROPPED: &str = "dropped";
/// A stalled frame flows again: `{conn, from}`.
pub const STALL_END: &str = "stall-end";
/// A reordered frame was written: `{conn, from, waited_ms, overtaken_by}`.
pub const REORDER_END: &str = "reorder-end";
/// A cluster connection was routed to a node: `{from, to}`.
pub const ROUTE: &str = "route";
/// A cluster connection named its logical connection: `{conn, logical}`.
pub const LOGICAL: &str = "logical";
/// The remote transport did not accept a request (X5): `{conn, id}`.
pub const NOT_ACCEPTED: &str = "not-accepted";
/// A stdio Agent's pipe ended, so its process exits: `{conn}`.
pub const STDIO_EXIT: &str = "stdio-exit";
/// The Client starts a new stdio Agent process: `{after_ms}`.
pub const RESPAWN_AGENT: &str = "respawn-agent";

// --- the nemesis and the run -----------------------------------------------------------------
// A fault that fires is logged under its kind's name (`lose-frame`, `crash-agent`, ...):
// `{fault, spec, detail}`.

/// A host crashed: `{host}`.
pub const CRASH: &str = "crash";
/// A host restarted: `{host}`.
pub const RESTART: &str = "restart";
/// A partition began: `{between | oneway, hops}`.
pub const PARTITION: &str = "partition";
/// A partition healed: `{between | oneway}`.
pub const HEAL_PARTITION: &str = "heal-partition";
/// The nemesis stopped (end of the safety phase): `{planned, applied, not_applied}`.
pub const HEAL: &str = "heal";
/// A phase began: `{phase}`.
pub const PHASE: &str = "phase";
/// The run ended: `{outcome, undelivered}`.
pub const END: &str = "end";
/// The simulation failed: `{error}`.
pub const ERROR: &str = "error";
