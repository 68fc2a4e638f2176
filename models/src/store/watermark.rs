//! The synced watermark kept beside a log (`sessions.synced` beside `sessions.log`): how many
//! bytes of the log the last sync covered, and the highest boot number ever started.

use super::{encode, record_at, Framing};

/// One slot: a framed record of three u64 LE (`seq`, `synced`, `boot`).
const SLOT: usize = 8 + 24;

/// Length of a watermark file once both slots are written.
pub const WATERMARK_FILE_LEN: usize = 2 * SLOT;

/// What the writer of a log knew was on the disk at its last sync. Written in one of two
/// fixed slots, alternating (`seq` even: slot 0, odd: slot 1), each a framed record
/// ([`super::encode`]): a write torn by a crash damages only the slot being written, and the
/// reader takes the other, an older and so smaller synced length (never a claim the log
/// cannot back). Write it and sync it after each synced write of the log, never before.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Watermark {
    /// How many times a watermark was written (picks the slot; the newer valid slot wins).
    pub seq: u64,
    /// Length in bytes of the log's synced prefix: damage below it loses acknowledged records.
    pub synced: u64,
    /// The highest boot number ever started on this store (ids of a boot never repeat, even
    /// when the log lost its records).
    pub boot: u64,
}

impl Watermark {
    /// The watermark to write next: `synced` bytes of the log are synced, `boot` has started
    /// (the boot kept is the highest seen).
    pub fn next(&self, synced: u64, boot: u64) -> Watermark {
        Watermark {
            seq: self.seq + 1,
            synced,
            boot: self.boot.max(boot),
        }
    }

    /// Where in the file this watermark goes and its bytes.
    pub fn slot(&self) -> (u64, Vec<u8>) {
        let mut payload = Vec::with_capacity(24);
        for v in [self.seq, self.synced, self.boot] {
            payload.extend_from_slice(&v.to_le_bytes());
        }
        ((self.seq % 2) * SLOT as u64, encode(&payload))
    }

    /// Read a watermark file: `Ok(None)` when it is empty (never written), the newest valid
    /// slot, or `Err(offset)` when no slot holds a valid watermark (the file is damaged).
    pub fn read(bytes: &[u8]) -> Result<Option<Watermark>, usize> {
        if bytes.is_empty() {
            return Ok(None);
        }
        let slot = |i: usize| -> Option<Watermark> {
            let (p, _) = record_at(bytes, i * SLOT, Framing::Current)?;
            let word =
                |k: usize| u64::from_le_bytes(p[k * 8..k * 8 + 8].try_into().expect("8 bytes"));
            let w = (p.len() == 24).then(|| Watermark {
                seq: word(0),
                synced: word(1),
                boot: word(2),
            })?;
            // A valid record in the other slot's place is not this slot's.
            (w.seq % 2 == i as u64).then_some(w)
        };
        match (slot(0), slot(1)) {
            (Some(a), Some(b)) => Ok(Some(if a.seq > b.seq { a } else { b })),
            (Some(w), None) | (None, Some(w)) => Ok(Some(w)),
            (None, None) => Err(0),
        }
    }

    /// The offset of a slot that was written and does not hold a valid watermark while the
    /// other one does (what [`Watermark::read`] passes over: a write torn by a crash, or
    /// damage), for a reader to say it used the older slot. `None` when both are valid, only
    /// the first was ever written, or neither is valid (`read` refuses that).
    pub fn damaged_slot(bytes: &[u8]) -> Option<usize> {
        if bytes.len() <= SLOT {
            return None;
        }
        let valid = |i: usize| {
            record_at(bytes, i * SLOT, Framing::Current)
                .is_some_and(|(p, _)| p.len() == 24 && p[0] as usize % 2 == i)
        };
        match (valid(0), valid(1)) {
            (true, false) => Some(SLOT),
            (false, true) => {
                // The first watermark (seq 1) goes to slot 1: zeros in slot 0 were never written.
                let first = Watermark::read(bytes)
                    .ok()
                    .flatten()
                    .is_some_and(|w| w.seq == 1);
                (!(first && bytes[..SLOT].iter().all(|b| *b == 0))).then_some(0)
            }
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(file: &mut Vec<u8>, w: Watermark) {
        let (at, bytes) = w.slot();
        let at = at as usize;
        if file.len() < at + bytes.len() {
            file.resize(at + bytes.len(), 0);
        }
        file[at..at + bytes.len()].copy_from_slice(&bytes);
    }

    #[test]
    fn the_newest_whole_slot_wins_and_a_torn_one_falls_back() {
        let mut file = Vec::new();
        assert_eq!(Watermark::read(&file), Ok(None));
        let a = Watermark::default().next(100, 1);
        write(&mut file, a);
        assert_eq!(Watermark::read(&file), Ok(Some(a)));
        let b = a.next(250, 1);
        write(&mut file, b);
        assert_eq!(file.len(), WATERMARK_FILE_LEN);
        assert_eq!(Watermark::read(&file), Ok(Some(b)));
        // Every byte of the newest slot damaged in turn: the older one is read.
        let (at, _) = b.slot();
        for i in 0..SLOT {
            let mut bad = file.clone();
            bad[at as usize + i] ^= 0x40;
            assert_eq!(Watermark::read(&bad), Ok(Some(a)), "byte {i}");
            assert_eq!(Watermark::damaged_slot(&bad), Some(at as usize), "byte {i}");
        }
        assert_eq!(Watermark::damaged_slot(&file), None);
        assert_eq!(
            Watermark::damaged_slot(&file[..SLOT]),
            None,
            "one slot written"
        );
        assert_eq!(Watermark::read(&[0; WATERMARK_FILE_LEN]), Err(0));
        assert_eq!(Watermark::read(&[0; 3]), Err(0));
        // The boot only grows.
        assert_eq!(b.next(300, 0).boot, 1);
    }
}
