//! What the models persist, and how it survives a crash.
//!
//! - Record framing for stored sessions and client stores: `[len: u32 LE][crc32: u32 LE]
//!   [payload]` ([`encode`], [`decode`]). A torn tail (short header, short payload or checksum
//!   mismatch) ends recovery: everything before it is returned with the offset to truncate the
//!   file to, so a correct model survives torn writes (turmoil `block_size`).
//! - [`Disk`]: the records on a simulated disk for drivers without turmoil's file system (the
//!   retry-class matrix): what a crash keeps is the synced prefix, as on turmoil's disk.

use serde_json::Value;

/// Records written by one Agent process and its predecessors, on a simulated disk: an
/// unsynced write survives only until the next crash, unless a later synced write makes it
/// durable (writes reach the disk in order, so a sync covers every earlier write).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Disk {
    records: Vec<Value>,
    durable: usize,
}

impl Disk {
    /// Write one record ([`crate::Action::Persist`]); `sync` makes it and everything before it
    /// durable.
    pub fn write(&mut self, record: Value, sync: bool) {
        self.records.push(record);
        if sync {
            self.durable = self.records.len();
        }
    }

    /// The process crashed: writes not yet synced are lost.
    pub fn crash(&mut self) {
        self.records.truncate(self.durable);
    }

    /// Every record written and not lost, in write order (what a restarted model recovers
    /// from).
    pub fn records(&self) -> &[Value] {
        &self.records
    }
}

/// Frame one payload.
pub fn encode(payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(payload.len() + 8);
    out.extend_from_slice(&(payload.len() as u32).to_le_bytes());
    out.extend_from_slice(&crc32fast::hash(payload).to_le_bytes());
    out.extend_from_slice(payload);
    out
}

/// Decode every whole record; returns them and the length of the valid prefix.
pub fn decode(bytes: &[u8]) -> (Vec<Vec<u8>>, usize) {
    let mut out = Vec::new();
    let mut at = 0usize;
    while bytes.len() - at >= 8 {
        let len = u32::from_le_bytes(bytes[at..at + 4].try_into().expect("4 bytes")) as usize;
        let crc = u32::from_le_bytes(bytes[at + 4..at + 8].try_into().expect("4 bytes"));
        let Some(end) = (at + 8).checked_add(len).filter(|e| *e <= bytes.len()) else {
            break;
        };
        let payload = &bytes[at + 8..end];
        if crc32fast::hash(payload) != crc {
            break;
        }
        out.push(payload.to_vec());
        at = end;
    }
    (out, at)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_crash_keeps_the_synced_prefix() {
        let mut d = Disk::default();
        d.write(Value::from(1), false);
        d.write(Value::from(2), true);
        d.write(Value::from(3), false);
        d.crash();
        assert_eq!(d.records(), [Value::from(1), Value::from(2)]);
        d.write(Value::from(4), false);
        d.crash();
        assert_eq!(d.records().len(), 2);
    }

    #[test]
    fn torn_tail_is_cut() {
        let mut b = encode(b"one");
        b.extend(encode(b"two"));
        let whole = b.len();
        b.extend(&encode(b"three")[..5]);
        let (recs, valid) = decode(&b);
        assert_eq!(recs, vec![b"one".to_vec(), b"two".to_vec()]);
        assert_eq!(valid, whole);
        let mut c = encode(b"x");
        c[8] ^= 1;
        assert_eq!(decode(&c).0.len(), 0);
    }
}

#[cfg(test)]
mod props {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Any prefix of a log (a crash mid-write, a torn tail) decodes to a prefix of its records.
        #[test]
        fn any_prefix_decodes_to_a_prefix_of_records(recs in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..40), 0..8), cut in 0usize..400) {
            let mut log = Vec::new();
            for r in &recs { log.extend(encode(r)); }
            let cut = cut.min(log.len());
            let (got, valid) = decode(&log[..cut]);
            prop_assert!(valid <= cut);
            prop_assert_eq!(&got[..], &recs[..got.len()]);
            if cut == log.len() { prop_assert_eq!(got.len(), recs.len()); }
        }
    }
}
