//! What the models persist, and how it survives a crash.
//!
//! - Record framing for stored sessions and client stores: `[len: u32 LE][check: u32 LE]
//!   [payload]` ([`encode`]), where `check` is the CRC-32 of the four length bytes and the
//!   payload, xored with a nonzero seed: a flipped bit anywhere in a record (its length
//!   included) fails it, and so do zeros (8 zero bytes are not an empty record, as they were
//!   when the checksum covered the payload alone).
//! - Recovery against a synced watermark ([`recover_synced`], [`Watermark`], kept beside the
//!   log in its own file): the log alone cannot tell a torn tail of unsynced writes from a
//!   synced record a bad disk damaged or cut, so the writer records how many bytes of the log
//!   a sync covered. Damage at or after that length is a torn tail (cut it); damage before it,
//!   or a file shorter than it, loses acknowledged records, so a correct reader refuses
//!   ([`Damaged`]).
//! - [`Disk`]: the records on a simulated disk for drivers without turmoil's file system (the
//!   retry-class matrix): what a crash keeps is the synced prefix, as on turmoil's disk.

mod watermark;

#[cfg(test)]
mod sweep;

pub use watermark::{Watermark, WATERMARK_FILE_LEN};

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

/// Xored into every record's CRC: the CRC-32 of four zero bytes is `0x2144DF1C`, never this,
/// so a zero-filled header (length 0, check 0) never verifies.
const SEED: u32 = 0x5EED_AC9C;

/// The check of a record: CRC-32 over its length field and its payload, xored with [`SEED`].
fn check(len: u32, payload: &[u8]) -> u32 {
    let mut h = crc32fast::Hasher::new();
    h.update(&len.to_le_bytes());
    h.update(payload);
    h.finalize() ^ SEED
}

/// Frame one payload: `[len u32 LE][check u32 LE][payload]` (see the module docs).
pub fn encode(payload: &[u8]) -> Vec<u8> {
    let len = payload.len() as u32;
    let mut out = Vec::with_capacity(payload.len() + 8);
    out.extend_from_slice(&len.to_le_bytes());
    out.extend_from_slice(&check(len, payload).to_le_bytes());
    out.extend_from_slice(payload);
    out
}

/// How a log's records are framed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Framing {
    /// [`encode`]'s: the check covers the length and the payload, seeded.
    Current,
    /// A store from before the watermark: the CRC-32 of the payload alone. Read only to
    /// migrate such a store (an empty payload never counts: the old writers never wrote one,
    /// and 8 zero bytes frame one).
    Legacy,
}

/// The whole records at the start of a log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Recovered {
    /// Payloads of the whole records before the first bad one, in order.
    pub records: Vec<Vec<u8>>,
    /// Length in bytes of that valid prefix (where a torn tail is cut).
    pub valid: usize,
    /// The framing the records were read with; [`Framing::Legacy`] means the caller should
    /// rewrite the log in the current framing before it appends.
    pub framing: Framing,
}

/// The record at byte offset `at`, if one whole record with a matching check starts there:
/// its payload and the offset after it.
fn record_at(bytes: &[u8], at: usize, framing: Framing) -> Option<(&[u8], usize)> {
    let header = bytes.get(at..at.checked_add(8)?)?;
    let len = u32::from_le_bytes([header[0], header[1], header[2], header[3]]);
    let crc = u32::from_le_bytes([header[4], header[5], header[6], header[7]]);
    let end = (at + 8)
        .checked_add(len as usize)
        .filter(|e| *e <= bytes.len())?;
    let payload = &bytes[at + 8..end];
    let ok = match framing {
        Framing::Current => check(len, payload) == crc,
        Framing::Legacy => !payload.is_empty() && crc32fast::hash(payload) == crc,
    };
    ok.then_some((payload, end))
}

/// Every whole record of a log in the current framing up to the first bad one (a short
/// header, a short payload, a failed check): what the log alone says. Whether the bytes
/// after them may be cut is for [`recover_synced`] to decide.
pub fn recover(bytes: &[u8]) -> Recovered {
    recover_framed(bytes, Framing::Current)
}

fn recover_framed(bytes: &[u8], framing: Framing) -> Recovered {
    let mut records = Vec::new();
    let mut at = 0usize;
    while let Some((payload, end)) = record_at(bytes, at, framing) {
        records.push(payload.to_vec());
        at = end;
    }
    Recovered {
        records,
        valid: at,
        framing,
    }
}

/// Whole records that can still be read after byte `at` of a damaged log: the next offset
/// where a record's check holds, and the records that follow it there. For a salvage's
/// account of what it drops; recovery never keeps them (nothing says which of them are whole
/// writes rather than chance).
pub fn records_after(bytes: &[u8], at: usize) -> usize {
    let Some(start) =
        (at + 1..bytes.len()).find(|p| record_at(bytes, *p, Framing::Current).is_some())
    else {
        return 0;
    };
    recover_framed(&bytes[start..], Framing::Current)
        .records
        .len()
}

/// A log damaged below its synced length: recovering it would lose acknowledged records.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Damaged {
    /// Byte offset of the first record that is not whole (the end of the valid prefix).
    pub at: usize,
    /// The synced length of the log: the watermark's, or the file's own length when it has
    /// no watermark.
    pub synced: usize,
    /// The file's length.
    pub len: usize,
    /// Whether the synced length came from a watermark (`false`: a store without one, where
    /// every byte counts as synced).
    pub watermark: bool,
    /// The whole records before the damage (what `--salvage` keeps).
    pub kept: Recovered,
}

impl Damaged {
    /// Why recovery refuses, in one sentence without the file's name (the caller names it).
    pub fn reason(&self) -> String {
        let synced = if self.watermark {
            format!("its synced length {} (the watermark)", self.synced)
        } else {
            "its end (a store without a watermark: every byte counts as synced)".to_string()
        };
        if self.at < self.len {
            format!(
                "damaged at byte {}: the record there fails its check, before {synced}",
                self.at
            )
        } else {
            format!(
                "damaged at byte {}: the file ends there, {} bytes short of {synced}",
                self.at,
                self.synced - self.len
            )
        }
    }
}

/// Read a log against its synced length (`synced`: the [`Watermark`]'s, `None` when the store
/// has none). Damage at or after the synced length is a torn tail of unsynced writes (crashes
/// tear pending writes, and leave holes of zeros where an earlier one never landed while a
/// later one did): the result's `valid` is where to cut it. Damage before it, or a file
/// shorter than it, is [`Damaged`]: a synced record was lost, and a correct reader refuses.
///
/// Without a watermark nothing tells a tail from a synced record, so every byte counts as
/// synced (any damage refuses; `--salvage` is the way on), and a log in the old framing
/// ([`Framing::Legacy`], a store from before the watermark) is read in it.
pub fn recover_synced(bytes: &[u8], synced: Option<u64>) -> Result<Recovered, Damaged> {
    let framing = if synced.is_none()
        && record_at(bytes, 0, Framing::Current).is_none()
        && record_at(bytes, 0, Framing::Legacy).is_some()
    {
        Framing::Legacy
    } else {
        Framing::Current
    };
    let found = recover_framed(bytes, framing);
    let limit = synced.map_or(bytes.len(), |s| usize::try_from(s).unwrap_or(usize::MAX));
    if found.valid < limit {
        return Err(Damaged {
            at: found.valid,
            synced: limit,
            len: bytes.len(),
            watermark: synced.is_some(),
            kept: found,
        });
    }
    Ok(found)
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

    /// Three records, all synced: the log and the offsets where each record starts.
    fn three() -> (Vec<u8>, [usize; 3]) {
        let recs: [&[u8]; 3] = [
            b"{\"t\":\"session\"}",
            b"{\"t\":\"msg\",\"id\":\"m1.0\"}",
            b"{\"t\":\"end\"}",
        ];
        let log: Vec<u8> = recs.iter().flat_map(|r| encode(r)).collect();
        let second = encode(recs[0]).len();
        let third = second + encode(recs[1]).len();
        (log, [0, second, third])
    }

    #[test]
    fn zeros_never_verify() {
        for n in 0..80 {
            let r = recover(&vec![0; n]);
            assert_eq!((r.records.len(), r.valid), (0, 0), "{n} zeros");
        }
    }

    #[test]
    fn a_torn_tail_after_the_watermark_is_cut() {
        let (mut b, _) = three();
        let whole = b.len();
        b.extend(&encode(b"four")[..5]);
        let r = recover_synced(&b, Some(whole as u64)).expect("a tail");
        assert_eq!((r.records.len(), r.valid), (3, whole));
        // Whole records past the watermark (written, not yet synced) are kept.
        let r = recover_synced(&b, Some(10)).expect("a tail");
        assert_eq!(r.valid, whole);
        assert_eq!(
            recover_synced(&b[..whole], Some(whole as u64)).map(|r| r.valid),
            Ok(whole)
        );
    }

    /// The user's first report: a zeroed record whose length is a multiple of 8 read as empty
    /// records (payload-only CRC: crc32("") = 0) and was dropped without a word.
    #[test]
    fn a_zeroed_middle_record_is_refused_not_read_as_empty_records() {
        let rec = b"{\"t\":\"msg\",\"id\":\"m1.0\",\"k\":\"kk\"}";
        assert_eq!((rec.len() + 8) % 8, 0, "a record of a multiple of 8 bytes");
        let mut log = encode(b"{\"t\":\"session\"}");
        let at = log.len();
        log.extend(encode(rec));
        log.extend(encode(b"{\"t\":\"end\"}"));
        let end = at + rec.len() + 8;
        log[at..end].fill(0);
        let synced = log.len() as u64;
        let d = recover_synced(&log, Some(synced)).expect_err("refused");
        assert_eq!((d.at, d.kept.records.len()), (at, 1));
        assert!(d.reason().contains(&format!("byte {at}")), "{}", d.reason());
        // And with no watermark at all (every byte counts as synced).
        assert_eq!(recover_synced(&log, None).map_err(|d| d.at), Err(at));
    }

    /// The second report: a bit flipped in the last record, synced and acknowledged, was cut
    /// as a torn tail.
    #[test]
    fn a_flipped_bit_anywhere_below_the_watermark_is_refused() {
        let (log, starts) = three();
        let synced = Some(log.len() as u64);
        for bit in 0..log.len() * 8 {
            let mut bad = log.clone();
            bad[bit / 8] ^= 1 << (bit % 8);
            let d = recover_synced(&bad, synced).expect_err(&format!("bit {bit}"));
            let start = *starts.iter().rev().find(|s| **s <= bit / 8).unwrap();
            assert_eq!(d.at, start, "bit {bit}");
        }
    }

    /// The third report: a log cut before its last synced record read as a shorter, valid log.
    #[test]
    fn a_log_shorter_than_its_watermark_is_refused() {
        let (log, starts) = three();
        let d = recover_synced(&log[..starts[2]], Some(log.len() as u64)).expect_err("cut");
        assert_eq!((d.at, d.len), (starts[2], starts[2]));
        assert!(d.reason().contains("short of"), "{}", d.reason());
    }

    #[test]
    fn a_store_in_the_old_framing_is_read_in_it() {
        let old = |p: &[u8]| {
            let mut out = (p.len() as u32).to_le_bytes().to_vec();
            out.extend(crc32fast::hash(p).to_le_bytes());
            out.extend(p);
            out
        };
        let log: Vec<u8> = [&b"one"[..], b"two"].iter().flat_map(|p| old(p)).collect();
        let r = recover_synced(&log, None).expect("whole");
        assert_eq!((r.records.len(), r.framing), (2, Framing::Legacy));
        // With a torn tail: without a watermark it is refused, not cut.
        let mut torn = log.clone();
        torn.extend(&old(b"three")[..6]);
        assert_eq!(
            recover_synced(&torn, None).map_err(|d| d.at),
            Err(log.len())
        );
        // Old zeros are no records either.
        let mut zeros = old(b"one");
        zeros.extend([0; 16]);
        assert_eq!(recover_synced(&zeros, None).map_err(|d| d.at), Err(11));
    }

    #[test]
    fn salvage_counts_what_it_drops() {
        let (mut log, starts) = three();
        log[starts[1] + 9] ^= 1;
        assert_eq!(records_after(&log, starts[1]), 1);
        assert_eq!(records_after(&log, starts[2]), 0);
    }
}

#[cfg(test)]
mod props {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Any cut of a log at or after its synced length (a crash mid-write, a torn tail)
        /// decodes to a prefix of its records holding every synced one; a cut before it is
        /// refused.
        #[test]
        fn a_cut_keeps_every_synced_record_or_is_refused(recs in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..40), 0..8), synced_n in 0usize..8, cut in 0usize..400) {
            let mut log = Vec::new();
            let mut ends = vec![0];
            for r in &recs { log.extend(encode(r)); ends.push(log.len()); }
            let synced = ends[synced_n.min(recs.len())];
            let cut = cut.min(log.len());
            match recover_synced(&log[..cut], Some(synced as u64)) {
                Ok(r) => {
                    prop_assert!(cut >= synced);
                    prop_assert!(r.valid <= cut);
                    prop_assert_eq!(&r.records[..], &recs[..r.records.len()]);
                    prop_assert!(r.valid >= synced);
                    if cut == log.len() { prop_assert_eq!(r.records.len(), recs.len()); }
                }
                Err(d) => {
                    prop_assert!(cut < synced);
                    prop_assert!(d.at <= cut);
                }
            }
        }
    }
}
