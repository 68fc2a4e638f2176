//! Where a fault kind has something to act on ([`Reach`]) and what a run has ([`Topology`]):
//! one answer read by the swarm's draw, exploration's default kinds and placement, scenario
//! validation, schedule-file checks, the certificate's "not placed" reasons and the world's
//! remote transport.

/// What a fault kind acts on, and so which topologies it needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reach {
    /// The Client, the Agent and the frames between them: every topology.
    Everywhere,
    /// The proxy process between the Client and the Agent (`topology.proxy`).
    Proxy,
    /// The cluster's store host (the cluster design).
    Store,
    /// The cluster's remote transport. Behind a proxy the Client's leg is a stream: the fault is
    /// accepted and drawn there (the swarm has always drawn it on every cluster seed) but does
    /// nothing when it fires, so exploration places it only where it acts
    /// ([`Topology::acts`]).
    Remote,
    /// One Agent process's stored log: every design but the cluster (its nodes keep no log).
    /// The in-memory and adapter designs keep none either; there the fault is only the crash
    /// it begins with.
    Log,
    /// A connection whose two ends close apart: every transport but `stdio` (a pipe's close
    /// always reaches the Agent, which exits with it).
    Socket,
}

/// The parts a run has that a fault could act on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Topology {
    /// A proxy sits between the Client and the Agent.
    pub proxy: bool,
    /// The Agent is a cluster of nodes with a store host.
    pub cluster: bool,
    /// The Client reaches the Agent over its stdio pipe (`transport = "stdio"`).
    pub stdio: bool,
}

impl Topology {
    /// True when the part a fault of reach `r` acts on exists here: the swarm draws such a
    /// fault, and a scripted one is accepted ([`super::FaultKind::refused_in`]).
    pub fn has(self, r: Reach) -> bool {
        match r {
            Reach::Everywhere => true,
            Reach::Proxy => self.proxy,
            Reach::Store | Reach::Remote => self.cluster,
            Reach::Log => !self.cluster,
            Reach::Socket => !self.stdio,
        }
    }

    /// True when a fault of reach `r` changes something when it fires here: what exploration
    /// places, and where the world carries out a remote-transport fault.
    pub fn acts(self, r: Reach) -> bool {
        match r {
            Reach::Remote => self.cluster && !self.proxy,
            r => self.has(r),
        }
    }
}

impl Reach {
    /// What a topology needs for this reach, ending a sentence that starts with the kind's
    /// name ("crash-proxy needs a proxy"); `None` for [`Reach::Everywhere`].
    pub fn needs(self) -> Option<&'static str> {
        match self {
            Reach::Everywhere => None,
            Reach::Proxy => Some("needs a proxy"),
            Reach::Store => Some("needs the cluster design (its store host)"),
            Reach::Remote => Some("needs the cluster design (its remote transport)"),
            Reach::Log => Some("needs a single-process design (the cluster's nodes keep no log)"),
            Reach::Socket => {
                Some("needs the socket transport (a stdio pipe's close always reaches the Agent)")
            }
        }
    }

    /// Why a trace without this reach has no place for the kind, for the certificate's "not
    /// placed" list; `None` for [`Reach::Everywhere`].
    pub fn missing(self) -> Option<&'static str> {
        match self {
            Reach::Everywhere => None,
            Reach::Proxy => Some("the trace has no proxy"),
            Reach::Store => Some("the trace is not a cluster"),
            Reach::Remote => Some("the trace has no remote transport"),
            Reach::Log => Some("the trace's cluster nodes keep no log"),
            Reach::Socket => Some("the trace's Agent is on a stdio pipe"),
        }
    }
}
