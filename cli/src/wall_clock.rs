//! The only wall clock. Everything inside a run reads simulated time (`tokio::time` inside the
//! hosts, `sim.elapsed()` in the step loop); this clock measures what runs outside a run: a
//! command's progress and benchmarks, and the real processes `acp-chaos probe` and
//! `acp-chaos agent` drive, whose timers are real. `clippy.toml` bans `Instant::now` and
//! `SystemTime::now` everywhere else.

use std::time::Instant;

/// Now, on the machine's monotonic clock. Never call it inside a simulated run: a history must
/// not depend on the machine.
#[allow(clippy::disallowed_methods, clippy::disallowed_types)]
pub fn now() -> Instant {
    Instant::now()
}

/// 64 bits of the operating system's randomness, for what picks where to look before any run
/// starts (`acp-chaos sweep --base random`, which prints the value so the sweep can be run
/// again). Never inside a run: a run's randomness comes from its seed.
#[allow(clippy::disallowed_methods)]
pub fn entropy() -> u64 {
    rand::random()
}
