//! What the models persist, and how it survives a crash.
//!
//! - Record framing for stored sessions and client stores: `[len: u32 LE][crc32: u32 LE]
//!   [payload]` ([`encode`], [`recover`]). The first bad record (short header, short payload
//!   or checksum mismatch) ends the records read; if no valid record follows it, it is a torn
//!   tail (a write a crash cut short: truncate the file to the valid prefix, so a correct
//!   model survives torn writes, turmoil `block_size`), else the middle of the log is damaged
//!   ([`Damage::Corrupt`]) and a correct reader refuses to go on rather than cut acknowledged
//!   records.
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

/// What [`recover`] found after the last whole record, if anything.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Damage {
    /// An incomplete or bad last record at byte offset `at` with no valid record after it (a
    /// write a crash cut short): cut the file to `at`.
    TornTail {
        /// Byte offset of the first bad record (the length of the valid prefix).
        at: usize,
    },
    /// A bad record at byte offset `at` followed by a valid record at `resumes`: the middle
    /// of the log is damaged (a flipped bit, a bad sector). Cutting at `at` would drop the
    /// records after it, acknowledged ones among them, so recovery must refuse instead.
    Corrupt {
        /// Byte offset of the first bad record.
        at: usize,
        /// Byte offset of the next record whose checksum holds.
        resumes: usize,
    },
}

/// The records of a log up to its first bad record, and what follows them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Recovered {
    /// Payloads of the whole records before the first bad one, in order.
    pub records: Vec<Vec<u8>>,
    /// Length in bytes of the valid prefix (where a torn tail is cut).
    pub valid: usize,
    /// `None`: the log ends right after its last whole record.
    pub damage: Option<Damage>,
}

/// The record at byte offset `at`, if one whole record with a matching checksum starts there:
/// its payload and the offset after it.
fn record_at(bytes: &[u8], at: usize) -> Option<(&[u8], usize)> {
    let header = bytes.get(at..at.checked_add(8)?)?;
    let len = u32::from_le_bytes([header[0], header[1], header[2], header[3]]) as usize;
    let crc = u32::from_le_bytes([header[4], header[5], header[6], header[7]]);
    let end = (at + 8).checked_add(len).filter(|e| *e <= bytes.len())?;
    let payload = &bytes[at + 8..end];
    (crc32fast::hash(payload) == crc).then_some((payload, end))
}

/// Read a log: every whole record up to the first bad one, and whether what follows is a torn
/// tail or damage in the middle ([`Damage`]). After a bad record every later byte offset is
/// tried as the start of a record; one with a non-empty payload and a matching checksum, not
/// preceded by a zero byte, means the log goes on past the damage: [`Damage::Corrupt`].
/// Empty records are skipped (8 zero bytes, in a zero-filled block, frame one), and so is a
/// record right after zeros: a hole a crash left where an unsynced write never landed while a
/// later unsynced one did. Offsets whose length field runs past the end are skipped without a
/// checksum, so the scan stays about linear on text payloads.
pub fn recover(bytes: &[u8]) -> Recovered {
    let mut records = Vec::new();
    let mut at = 0usize;
    while at < bytes.len() {
        let Some((payload, end)) = record_at(bytes, at) else {
            break;
        };
        records.push(payload.to_vec());
        at = end;
    }
    let damage = (at < bytes.len()).then(|| {
        let next =
            (at + 1..bytes.len()).find(|p| record_at(bytes, *p).is_some_and(|r| !r.0.is_empty()));
        match next {
            // A hole of zeros before it: that record reached the disk before an earlier
            // write did, so no sync covered either of them (a sync covers every earlier
            // write): a torn tail too (turmoil tears each pending write on its own).
            Some(resumes) if bytes[resumes - 1] != 0 => Damage::Corrupt { at, resumes },
            _ => Damage::TornTail { at },
        }
    });
    Recovered {
        records,
        valid: at,
        damage,
    }
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
        let r = recover(&b);
        assert_eq!(r.records, vec![b"one".to_vec(), b"two".to_vec()]);
        assert_eq!(r.valid, whole);
        assert_eq!(r.damage, Some(Damage::TornTail { at: whole }));
        let mut c = encode(b"x");
        c[8] ^= 1;
        let r = recover(&c);
        assert_eq!(
            (r.records.len(), r.damage),
            (0, Some(Damage::TornTail { at: 0 }))
        );
        assert_eq!(recover(&encode(b"x")).damage, None);
    }

    #[test]
    fn a_flipped_bit_in_the_middle_is_corruption_not_a_tail() {
        let recs: [&[u8]; 3] = [
            b"{\"t\":\"session\"}",
            b"{\"t\":\"msg\"}",
            b"{\"t\":\"end\"}",
        ];
        let log: Vec<u8> = recs.iter().flat_map(|r| encode(r)).collect();
        let second = encode(recs[0]).len();
        let third = second + encode(recs[1]).len();
        // Every bit of the second record: its length, its checksum and its payload.
        for bit in 0..(third - second) * 8 {
            let mut bad = log.clone();
            bad[second + bit / 8] ^= 1 << (bit % 8);
            let r = recover(&bad);
            assert_eq!(r.records, vec![recs[0].to_vec()], "bit {bit}");
            assert!(
                matches!(r.damage, Some(Damage::Corrupt { at, resumes }) if at == second && resumes <= third),
                "bit {bit}: {:?}",
                r.damage
            );
        }
        // The same flip in the last record has nothing valid after it: a torn tail.
        let mut bad = log.clone();
        bad[third + 9] ^= 1;
        assert_eq!(recover(&bad).damage, Some(Damage::TornTail { at: third }));
    }

    #[test]
    fn zero_padding_after_a_torn_record_is_still_a_tail() {
        let mut b = encode(b"one");
        let whole = b.len();
        b.extend(&encode(b"two")[..6]);
        b.extend([0u8; 64]);
        assert_eq!(recover(&b).damage, Some(Damage::TornTail { at: whole }));
    }

    #[test]
    fn a_later_write_past_a_hole_is_a_torn_tail() {
        // Two unsynced writes, the first torn to 16 bytes and zero-filled, the second whole
        // (turmoil tears each pending write on its own).
        let mut b = encode(b"one");
        let whole = b.len();
        let mut two = encode(b"two, a longer record");
        two[16..].fill(0);
        b.extend(two);
        b.extend(encode(b"three"));
        let r = recover(&b);
        assert_eq!(
            (r.valid, r.damage),
            (whole, Some(Damage::TornTail { at: whole }))
        );
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
            let r = recover(&log[..cut]);
            let (got, valid) = (r.records, r.valid);
            prop_assert!(valid <= cut);
            // A cut log is never taken for damage in the middle.
            let corrupt = matches!(r.damage, Some(Damage::Corrupt { .. }));
            prop_assert!(!corrupt, "{:?}", r.damage);
            prop_assert_eq!(&got[..], &recs[..got.len()]);
            if cut == log.len() { prop_assert_eq!(got.len(), recs.len()); }
        }
    }
}
