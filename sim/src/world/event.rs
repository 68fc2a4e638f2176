//! [`Ev`]: what a host's event loop reacts to, the one message the frame layer
//! (`io.rs`) and the ledger (a `half-open` break tells a connection's connecting end) send
//! to a host.

use acp_chaos_models::ConnId;
use serde_json::Value;
use turmoil::net::TcpStream;

/// What a host's event loop reacts to.
pub(crate) enum Ev {
    /// The listener accepted a connection.
    Accepted(TcpStream),
    /// A connection this host opened (its tag) is up.
    Connected(TcpStream, u64),
    /// A connection this host opened (its tag) could not be made.
    ConnectFailed(u64),
    /// A line read on a connection.
    Frame(ConnId, String),
    /// A connection ended, and why (`eof`, `reset`, `heartbeat timeout`, `half-open`, ...).
    Closed(ConnId, &'static str),
    /// A timer the host armed fired.
    Timer(u64),
    /// Remote transport: a request written on this connection was not accepted (X5).
    NotAccepted(ConnId, Value),
}
