//! The history: one JSON Lines file per run (Jepsen-style ops).
//!
//! Line 1 is the header `{"format": 1, "scenario", "seed", "mutant", "plan": {...}}`; every
//! further line is an [`Op`]:
//! `{"index", "time_ms", "process", "type": "invoke"|"ok"|"fail"|"info", "f", "value"}`.
//!
//! Processes: `user` (submissions), `client` (attempts, acks, surfaced errors), `agent`
//! (insertions and when they became durable and visible, dedup hits, turns, recovery), `net`
//! (every frame sent and received, connections opened and ended) and `nemesis` (faults,
//! restarts, heal). The hash covers the ops only, never machine-dependent settings.

use std::io::{BufRead, Write};
use std::path::Path;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};

pub use acp_chaos_models::op;

/// The process names of a history (every op's `process`): the hosts of the world, plus `user`
/// (the workload), `net` (frames and connections), `nemesis` (faults) and `world` (phases).
pub mod process {
    /// The user's submissions and cancels.
    pub const USER: &str = "user";
    /// The user's Client.
    pub const CLIENT: &str = "client";
    /// The single-process Agent (a cluster's nodes are `node1`.., its store `store`; the
    /// checkers see them all as `agent`).
    pub const AGENT: &str = "agent";
    /// Every frame sent and read, every connection opened.
    pub const NET: &str = "net";
    /// Every fault, crash, restart, partition and heal.
    pub const NEMESIS: &str = "nemesis";
    /// The run's phases and end.
    pub const WORLD: &str = "world";
    /// The id-rewriting proxy.
    pub const PROXY: &str = "proxy";
    /// A second Client watching the session.
    pub const WATCHER: &str = "watcher";
    /// The cluster's store host.
    pub const STORE: &str = "store";
}

/// Cluster node host names (a scenario's `topology.nodes` takes the first N).
pub const NODES: [&str; 5] = ["node1", "node2", "node3", "node4", "node5"];

/// Whether a process is part of the Agent: the `agent` host, a cluster node or the cluster's
/// store.
pub fn is_agent_host(process: &str) -> bool {
    process == "agent" || process == "store" || process.starts_with("node")
}

/// History format version (line 1).
pub const FORMAT: u32 = 1;

/// Jepsen op type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum OpType {
    /// An operation started.
    Invoke,
    /// It completed successfully.
    Ok,
    /// It failed (definitely did not happen, or was shown to the user as failed).
    Fail,
    /// Anything else: effects, frames, faults.
    Info,
}

/// One history entry.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Op {
    /// Position in the history, from 0.
    pub index: usize,
    /// Simulated time in ms.
    pub time_ms: u64,
    /// `user`, `client`, `agent`, `net`, `nemesis` or `world`.
    pub process: String,
    /// Op type.
    #[serde(rename = "type")]
    pub kind: OpType,
    /// Function name, e.g. `submit`, `attempt`, `insert`, `send`, `crash`.
    pub f: String,
    /// Payload.
    pub value: Value,
}

/// A whole run's history.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct History {
    /// Header (line 1): scenario, seed, mutant and every derived setting.
    pub header: Value,
    /// The ops in order.
    pub ops: Vec<Op>,
}

impl History {
    /// SHA-256 (hex, first 16 chars) over the ops; equal hashes mean equal runs.
    pub fn hash(&self) -> String {
        let mut h = Sha256::new();
        // One buffer for every line: the bytes hashed are the lines `write_jsonl` writes.
        let mut line = Vec::with_capacity(512);
        for op in &self.ops {
            line.clear();
            serde_json::to_writer(&mut line, op).expect("ops serialize");
            line.push(b'\n');
            h.update(&line);
        }
        h.finalize()
            .iter()
            .take(8)
            .map(|b| format!("{b:02x}"))
            .collect()
    }

    /// Write as JSON Lines.
    pub fn write_jsonl(&self, w: &mut impl Write) -> std::io::Result<()> {
        serde_json::to_writer(&mut *w, &self.header)?;
        w.write_all(b"\n")?;
        for op in &self.ops {
            serde_json::to_writer(&mut *w, op)?;
            w.write_all(b"\n")?;
        }
        Ok(())
    }

    /// Read a `history.jsonl` back (for `acp-chaos check`).
    pub fn read_jsonl(path: &Path) -> anyhow::Result<History> {
        let f =
            std::fs::File::open(path).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
        // A line that cannot be read (not UTF-8) is named by its number too.
        let at =
            |n: usize, e: &dyn std::fmt::Display| anyhow::anyhow!("{}:{n}: {e}", path.display());
        let mut lines = std::io::BufReader::new(f).lines();
        let header: Value = match lines.next() {
            Some(l) => serde_json::from_str(&l.map_err(|e| at(1, &e))?).map_err(|e| at(1, &e))?,
            None => anyhow::bail!("{}: empty history", path.display()),
        };
        if header["format"] != FORMAT {
            anyhow::bail!("{}:1: field `format`: expected {FORMAT}", path.display());
        }
        let mut ops = Vec::new();
        for (i, l) in lines.enumerate() {
            let op: Op =
                serde_json::from_str(&l.map_err(|e| at(i + 2, &e))?).map_err(|e| at(i + 2, &e))?;
            ops.push(op);
        }
        Ok(History { header, ops })
    }

    /// Ops of one process with one function name.
    pub fn ops<'a>(&'a self, process: &'a str, f: &'a str) -> impl Iterator<Item = &'a Op> + 'a {
        self.ops
            .iter()
            .filter(move |o| o.process == process && o.f == f)
    }
}

/// One op as a short human line (`replay` prints these).
pub fn describe(op: &Op) -> String {
    let t = match op.kind {
        OpType::Invoke => "invoke",
        OpType::Ok => "ok",
        OpType::Fail => "fail",
        OpType::Info => "info",
    };
    let v = if op.process == process::NET && (op.f == op::SEND || op.f == op::RECV) {
        let fr = &op.value["frame"];
        let what = if let Some(m) = fr["method"].as_str() {
            format!(
                "{m}{}",
                fr.get("id").map(|i| format!(" #{i}")).unwrap_or_default()
            )
        } else if fr.get("error").is_some() {
            format!("#{} error {}", fr["id"], fr["error"]["code"])
        } else {
            format!("#{} result {}", fr["id"], fr["result"])
        };
        format!(
            "conn={} {} {}",
            op.value["conn"],
            op.value["from"].as_str().unwrap_or("?"),
            what
        )
    } else {
        op.value.to_string()
    };
    format!(
        "{:>5} {:>6}ms {:<8} {:<6} {:<14} {}",
        op.index, op.time_ms, op.process, t, op.f, v
    )
}
