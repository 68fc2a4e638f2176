//! The stdio Agent's store folder: `sessions.log`, framed records (`models::store`) that begin
//! each start with a boot record `{"t": "boot", "boot": N}` (the model skips it), and
//! `sessions.synced`, its watermark ([`store::Watermark`]: the log's synced length and the
//! highest boot started), written and synced after each synced write of the log.
//!
//! On start: damage at or after the watermark is a torn tail of unsynced writes (cut, with a
//! note); damage below it, a log shorter than it, or a damaged watermark stops the start with
//! exit 2 naming the file and the byte offset, unless `--salvage` keeps the whole records
//! before the damage and says what it dropped. A log in the old framing has no watermark (a
//! store from before it): every byte counts as synced, any damage stops the start, and it is
//! rewritten in the new framing (through `sessions.log.new`, renamed over it) before anything
//! is appended. A log in the new framing without its watermark, holding more than boot records,
//! stops the start too (a cut at a record boundary could not be seen).

use std::io::{Seek, Write};
use std::path::{Path, PathBuf};

use acp_chaos::models::store;

/// An open store folder.
pub(super) struct StoreDir {
    dir: PathBuf,
    log: Option<std::fs::File>,
    /// `--lose-unsynced`: records not synced yet, written at the next sync.
    pub(super) unsynced: Option<Vec<u8>>,
    /// Bytes of the log written to the file so far (what a sync covers).
    len: u64,
    /// The watermark last written.
    mark: store::Watermark,
    /// This start's boot number.
    boot: u64,
}

/// The record type that ends a log migrated from the old framing.
const MIGRATED: &str = "migrated";

/// How many records of a log in the current framing a watermark must have vouched for: those
/// after the last `migrated` record (the ones before it come from a store without a
/// watermark) that are not a start's boot record (the first start writes its boot record,
/// then the first watermark).
fn unvouched(records: &[Vec<u8>]) -> usize {
    let kind = |payload: &[u8]| {
        serde_json::from_slice::<serde_json::Value>(payload)
            .ok()
            .and_then(|r| r["t"].as_str().map(str::to_string))
    };
    let after = records
        .iter()
        .rposition(|r| kind(r).as_deref() == Some(MIGRATED))
        .map_or(0, |i| i + 1);
    records[after..]
        .iter()
        .filter(|r| kind(r).as_deref() != Some("boot"))
        .count()
}

/// The boot number a record shows was used: a boot record's, an arrival's `boot`, or the
/// boot in a session or message id the model handed out (`s<boot>.<n>`, `m<boot>.<n>`). 0
/// when none.
fn boot_of(r: &serde_json::Value) -> u64 {
    let from_id = |v: &serde_json::Value, letter: char| {
        v.as_str()
            .and_then(|s| s.strip_prefix(letter))
            .and_then(|s| s.split_once('.'))
            .and_then(|(b, _)| b.parse::<u64>().ok())
            .unwrap_or(0)
    };
    [
        r["boot"].as_u64().unwrap_or(0),
        from_id(&r["id"], 's'),
        from_id(&r["session"], 's'),
        from_id(&r["from"], 's'),
        from_id(&r["messageId"], 'm'),
    ]
    .into_iter()
    .max()
    .unwrap_or(0)
}

/// A file's bytes, empty when it does not exist.
fn read_or_empty(path: &Path) -> anyhow::Result<Vec<u8>> {
    match std::fs::read(path) {
        Ok(b) => Ok(b),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Vec::new()),
        Err(e) => anyhow::bail!("{}: {e}", path.display()),
    }
}

/// This start's boot number: one more than any boot the `records` show, the watermark
/// keeps, or the `boots` file of a store from before boot records counts.
fn next_boot(
    dir: &Path,
    path: &Path,
    records: &[serde_json::Value],
    mark: Option<store::Watermark>,
) -> anyhow::Result<u32> {
    // A store from before boot records counted its starts in `boots`, one line each.
    let legacy = std::fs::read_to_string(dir.join("boots"))
        .map(|s| s.lines().count() as u64)
        .unwrap_or(0);
    let last = records
        .iter()
        .map(boot_of)
        .max()
        .unwrap_or(0)
        .max(legacy)
        .max(mark.map_or(0, |m| m.boot));
    let Some(boot) = last.checked_add(1).and_then(|b| u32::try_from(b).ok()) else {
        anyhow::bail!("{}: boot counter at its limit ({last})", path.display());
    };
    Ok(boot)
}

impl StoreDir {
    fn log_path(&self) -> PathBuf {
        self.dir.join("sessions.log")
    }

    fn mark_path(&self) -> PathBuf {
        self.dir.join("sessions.synced")
    }

    /// Read the records against the watermark (see the module docs) and count this start:
    /// its boot number is one more than any boot the records show ([`boot_of`]), the
    /// watermark keeps, or the `boots` file of a store from before boot records counts, so a
    /// damaged, cut or deleted log never hands out an id again. `salvage`: damage below the
    /// watermark keeps the records before it instead of stopping the start.
    pub(super) fn open(
        dir: &Path,
        salvage: bool,
    ) -> anyhow::Result<(StoreDir, u32, Vec<serde_json::Value>)> {
        std::fs::create_dir_all(dir).map_err(|e| anyhow::anyhow!("{}: {e}", dir.display()))?;
        let mut disk = StoreDir {
            dir: dir.to_path_buf(),
            log: None,
            unsynced: None,
            len: 0,
            mark: store::Watermark::default(),
            boot: 0,
        };
        let path = disk.log_path();
        let named = |e: std::io::Error| anyhow::anyhow!("{}: {e}", path.display());
        let bytes = read_or_empty(&path)?;
        let mark = disk.read_mark(&bytes, salvage)?;
        let found = disk.recover(&bytes, mark, salvage)?;
        disk.check_vouched(&found, mark, salvage)?;
        disk.len = found.valid as u64;
        if found.framing == store::Framing::Legacy {
            disk.migrate(&found.records)?;
            eprintln!(
                "acp-chaos agent: {}: rewrote {} records from the framing before the watermark",
                path.display(),
                found.records.len()
            );
        } else if !bytes.is_empty() {
            // Whole records past the watermark (written, never synced) are kept: sync them
            // before the watermark says so.
            std::fs::File::open(&path)
                .and_then(|f| f.sync_all())
                .map_err(named)?;
        }
        let records: Vec<serde_json::Value> = found
            .records
            .iter()
            .filter_map(|r| serde_json::from_slice(r).ok())
            .collect();
        let boot = next_boot(dir, &path, &records, mark)?;
        disk.mark = mark.unwrap_or_default();
        disk.boot = u64::from(boot);
        disk.persist(&serde_json::json!({"t": "boot", "boot": boot}), true)?;
        Ok((disk, boot, records))
    }

    /// The watermark beside the log `bytes`: `None` when there is none, or (said on stderr)
    /// when it is damaged and the log holds nothing it vouched for or `salvage` reads past it.
    fn read_mark(&self, bytes: &[u8], salvage: bool) -> anyhow::Result<Option<store::Watermark>> {
        let (path, mark_path) = (self.log_path(), self.mark_path());
        let mark_bytes = read_or_empty(&mark_path)?;
        if let Some(at) = store::Watermark::damaged_slot(&mark_bytes) {
            // A crash tears the slot being written; damage looks the same. Either way the
            // other slot's synced length is older and smaller, never a claim the log cannot
            // back: say which was used.
            eprintln!(
                "acp-chaos agent: {}: the slot at byte {at} is damaged (a torn write or damage); using the other, older slot",
                mark_path.display()
            );
        }
        Ok(match store::Watermark::read(&mark_bytes) {
            Ok(m) => m,
            // The first watermark write torn by a crash: nothing it could vouch for was written
            // yet, so the log is read as if it had none (and refused by the check below if it
            // holds more).
            Err(_) if unvouched(&store::recover(bytes).records) == 0 => {
                eprintln!(
                    "acp-chaos agent: {}: no valid slot, and {} holds only what comes before the first watermark (a torn first write); reading it without one",
                    mark_path.display(),
                    path.display()
                );
                None
            }
            Err(at) if !salvage => anyhow::bail!(
                "{}: damaged at byte {at}: neither slot holds a valid watermark (the synced length of {}), so damage in the log could not be told from a torn tail; refusing to start (restore the file, or run with --salvage to read the log as if every byte were synced)",
                mark_path.display(),
                path.display()
            ),
            Err(at) => {
                eprintln!(
                    "acp-chaos agent: {}: --salvage: damaged at byte {at}, no valid watermark; reading {} as if every byte were synced",
                    mark_path.display(),
                    path.display()
                );
                None
            }
        })
    }

    /// The whole records of the log `bytes` under the watermark `mark`: a torn tail past it
    /// cut (with a note); damage below it refused, or under `salvage` cut with what it dropped
    /// said.
    fn recover(
        &self,
        bytes: &[u8],
        mark: Option<store::Watermark>,
        salvage: bool,
    ) -> anyhow::Result<store::Recovered> {
        let path = self.log_path();
        Ok(match store::recover_synced(bytes, mark.map(|m| m.synced)) {
            Ok(found) => {
                if found.valid < bytes.len() {
                    self.cut(found.valid)?;
                    eprintln!(
                        "acp-chaos agent: {}: cut a torn tail ({} bytes from byte {}, after the synced length {})",
                        path.display(),
                        bytes.len() - found.valid,
                        found.valid,
                        mark.map_or(0, |m| m.synced)
                    );
                }
                found
            }
            Err(d) if !salvage => anyhow::bail!(
                "{}: {}; refusing to start rather than lose acknowledged records (restore the file, or run with --salvage to keep the {} whole records before byte {})",
                path.display(),
                d.reason(),
                d.kept.records.len(),
                d.at
            ),
            Err(d) => {
                self.cut(d.at)?;
                let missing = if d.len < d.synced {
                    format!("; {} synced bytes were already missing", d.synced - d.len)
                } else {
                    String::new()
                };
                eprintln!(
                    "acp-chaos agent: {}: --salvage: {}: kept {} records (bytes 0..{}), dropped {} bytes from byte {} ({} whole records readable after the damage among them){missing}",
                    path.display(),
                    d.reason(),
                    d.kept.records.len(),
                    d.at,
                    d.len - d.at,
                    d.at,
                    store::records_after(bytes, d.at),
                );
                d.kept
            }
        })
    }

    /// A log in the current framing has had a watermark since its first start wrote its boot
    /// record (or, migrated from the old framing, since then): without one, a cut at a record
    /// boundary could not be seen, so the start stops (or, under `salvage`, says so).
    fn check_vouched(
        &self,
        found: &store::Recovered,
        mark: Option<store::Watermark>,
        salvage: bool,
    ) -> anyhow::Result<()> {
        let (path, mark_path) = (self.log_path(), self.mark_path());
        let unvouched = unvouched(&found.records);
        if mark.is_none() && found.framing == store::Framing::Current && unvouched > 0 {
            if !salvage {
                anyhow::bail!(
                    "{}: missing or empty beside {} ({unvouched} records written since a watermark was first written), so a cut of the log could not be seen; refusing to start (restore the file, or run with --salvage to read the log as if every byte were synced)",
                    mark_path.display(),
                    path.display()
                );
            }
            eprintln!(
                "acp-chaos agent: {}: --salvage: missing or empty; reading {} as if every byte were synced (a cut at a record boundary cannot be seen)",
                mark_path.display(),
                path.display()
            );
        }
        Ok(())
    }

    /// Cut the log to `len` bytes and sync it.
    fn cut(&self, len: usize) -> anyhow::Result<()> {
        let path = self.log_path();
        let named = |e: std::io::Error| anyhow::anyhow!("{}: {e}", path.display());
        let f = std::fs::OpenOptions::new()
            .write(true)
            .open(&path)
            .map_err(named)?;
        f.set_len(len as u64).map_err(named)?;
        f.sync_all().map_err(named)
    }

    /// Rewrite a log read in the old framing in the current one, ending with a `migrated`
    /// record: write `sessions.log.new`, sync it, rename it over the log, sync the folder.
    fn migrate(&mut self, records: &[Vec<u8>]) -> anyhow::Result<()> {
        let (path, new) = (self.log_path(), self.dir.join("sessions.log.new"));
        // Last, a `migrated` record: the records before it come from a store that never had a
        // watermark, so a start that finds none (a kill before the first one) still opens.
        let marker =
            serde_json::to_vec(&serde_json::json!({"t": MIGRATED, "records": records.len()}))?;
        let framed: Vec<u8> = records
            .iter()
            .map(Vec::as_slice)
            .chain([marker.as_slice()])
            .flat_map(store::encode)
            .collect();
        let write = || -> std::io::Result<()> {
            let mut f = std::fs::File::create(&new)?;
            f.write_all(&framed)?;
            f.sync_all()?;
            std::fs::rename(&new, &path)?;
            sync_dir(&self.dir)
        };
        write().map_err(|e| anyhow::anyhow!("{}: {e}", new.display()))?;
        self.len = framed.len() as u64;
        Ok(())
    }

    /// Append one record (`sync`: then sync the log and write the watermark).
    pub(super) fn persist(&mut self, record: &serde_json::Value, sync: bool) -> anyhow::Result<()> {
        let path = self.log_path();
        self.append(record, sync, &path)
            .map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
        if sync {
            let mark = self.mark_path();
            self.write_mark()
                .map_err(|e| anyhow::anyhow!("{}: {e}", mark.display()))?;
        }
        Ok(())
    }

    fn append(
        &mut self,
        record: &serde_json::Value,
        sync: bool,
        path: &Path,
    ) -> anyhow::Result<()> {
        let created = !path.exists();
        if self.log.is_none() {
            self.log = Some(
                std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(path)?,
            );
        }
        let framed = store::encode(&serde_json::to_vec(record)?);
        if let Some(held) = self.unsynced.as_mut() {
            held.extend_from_slice(&framed);
            if !sync {
                return Ok(());
            }
        }
        let f = self.log.as_mut().expect("opened above");
        let out = match self.unsynced.as_mut() {
            // Everything held, this record included, goes out in order before the sync.
            Some(held) => std::mem::take(held),
            None => framed,
        };
        f.write_all(&out)?;
        self.len += out.len() as u64;
        if sync {
            f.sync_all()?;
            if created {
                sync_dir(&self.dir)?;
            }
        }
        Ok(())
    }

    /// Write and sync the watermark: every byte of the log written so far is synced.
    fn write_mark(&mut self) -> std::io::Result<()> {
        let path = self.mark_path();
        let created = !path.exists();
        let next = self.mark.next(self.len, self.boot);
        let (at, bytes) = next.slot();
        let mut f = std::fs::OpenOptions::new()
            .create(true)
            .write(true)
            .truncate(false)
            .open(&path)?;
        f.seek(std::io::SeekFrom::Start(at))?;
        f.write_all(&bytes)?;
        f.sync_all()?;
        if created {
            sync_dir(&self.dir)?;
        }
        self.mark = next;
        Ok(())
    }
}

fn sync_dir(dir: &Path) -> std::io::Result<()> {
    std::fs::File::open(dir)?.sync_all()
}
