//! `summary.json`'s `hashes`: every run's history hash as `scenario@design/seed` → hash. Read
//! back from a file it is a map; written by a campaign it is a log on disk (one fixed-width
//! record per run, in the order the runs were listed), so a campaign's memory does not grow with
//! its seeds. Both serialize the same: keys in string order.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{BufWriter, Read, Seek, SeekFrom, Write};
use std::path::Path;
use std::sync::{Arc, Mutex};

use serde::ser::{Error as _, SerializeMap};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// Bytes per record of the log: a length byte and the hash's bytes (zeros: the run did not
/// run).
const RECORD: usize = 32;

/// Every run's history hash (see the module doc).
#[derive(Clone, Default)]
pub struct Hashes(Inner);

#[derive(Clone)]
enum Inner {
    Map(BTreeMap<String, String>),
    Log(Arc<Log>),
    /// A log that could not be written (a full disk): only how many runs had a hash, so the
    /// verdict still counts them.
    Lost(usize),
}

impl Default for Inner {
    fn default() -> Inner {
        Inner::Map(BTreeMap::new())
    }
}

/// The records of a campaign's runs, in a file unlinked at creation (it lives as long as the
/// campaign's [`Summary`](super::Summary)).
struct Log {
    file: Mutex<File>,
    /// Row key (`scenario@design`), first seed, seeds: the runs in the order of the records.
    rows: Vec<(String, u64, u64)>,
    /// Records holding a hash.
    len: usize,
}

/// Writes the hash log of a campaign, one record per run in the order the runs are listed.
pub struct HashLogWriter {
    file: BufWriter<File>,
    reader: File,
    rows: Vec<(String, u64, u64)>,
    len: usize,
}

impl HashLogWriter {
    /// A new log in `dir` (the file is unlinked at once where the system allows it) for
    /// `rows`: row key (`scenario@design`), first seed and seeds, in run order.
    pub fn create(dir: &Path, rows: Vec<(String, u64, u64)>) -> anyhow::Result<HashLogWriter> {
        let path = dir.join(".hashes");
        let io = |e: std::io::Error| anyhow::anyhow!("{}: {e}", path.display());
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(&path)
            .map_err(io)?;
        let reader = file.try_clone().map_err(io)?;
        // Where the system cannot unlink an open file, it stays in the staging folder until
        // the campaign's end removes it with the folder.
        let _ = std::fs::remove_file(&path);
        Ok(HashLogWriter::on(file, reader, rows))
    }

    /// A log written to `file` and read back from `reader` (the same file opened twice, or
    /// `/dev/full` in the test of a full disk).
    pub fn on(file: File, reader: File, rows: Vec<(String, u64, u64)>) -> HashLogWriter {
        HashLogWriter {
            file: BufWriter::new(file),
            reader,
            rows,
            len: 0,
        }
    }

    /// The next run's hash (`None`: the run did not run).
    pub fn push(&mut self, hash: Option<&str>) -> std::io::Result<()> {
        let mut rec = [0u8; RECORD];
        if let Some(h) = hash {
            let b = h.as_bytes();
            if b.is_empty() || b.len() >= RECORD {
                return Err(std::io::Error::other(format!(
                    "history hash `{h}`: expected 1 to {} bytes",
                    RECORD - 1
                )));
            }
            rec[0] = b.len() as u8;
            rec[1..=b.len()].copy_from_slice(b);
            self.len += 1;
        }
        self.file.write_all(&rec)
    }

    /// The log, written out, as [`Hashes`]; when it could not be written, hashes that only
    /// count the runs (from memory, never from the file that failed) and the error.
    pub fn finish(mut self) -> (Hashes, std::io::Result<()>) {
        if let Err(e) = self.file.flush() {
            return (Hashes(Inner::Lost(self.len)), Err(e));
        }
        let log = Log {
            file: Mutex::new(self.reader),
            rows: self.rows,
            len: self.len,
        };
        (Hashes(Inner::Log(Arc::new(log))), Ok(()))
    }
}

impl Hashes {
    /// How many runs have a hash.
    pub fn len(&self) -> usize {
        match &self.0 {
            Inner::Map(m) => m.len(),
            Inner::Log(l) => l.len,
            Inner::Lost(n) => *n,
        }
    }

    /// No hash at all.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Every entry in key order (a log is read into memory: for tests and merges).
    pub fn to_map(&self) -> anyhow::Result<BTreeMap<String, String>> {
        let mut m = BTreeMap::new();
        self.each(&mut |k, v| {
            m.insert(k, v);
            Ok(())
        })?;
        Ok(m)
    }

    /// Add `other`'s entries (a merge of shards).
    pub fn extend(&mut self, other: &Hashes) -> anyhow::Result<()> {
        let mut m = self.to_map()?;
        m.extend(other.to_map()?);
        self.0 = Inner::Map(m);
        Ok(())
    }

    /// Call `f` on every entry, in key order.
    fn each(&self, f: &mut dyn FnMut(String, String) -> anyhow::Result<()>) -> anyhow::Result<()> {
        match &self.0 {
            Inner::Map(m) => m.iter().try_for_each(|(k, v)| f(k.clone(), v.clone())),
            Inner::Log(l) => l.each(f),
            Inner::Lost(_) => anyhow::bail!("the hash log could not be written"),
        }
    }
}

impl Log {
    /// Rows in the string order of `row/`, each row's seeds in the string order of their
    /// decimal digits: the order of the keys `row/seed`.
    fn each(&self, f: &mut dyn FnMut(String, String) -> anyhow::Result<()>) -> anyhow::Result<()> {
        let mut base = 0u64;
        let mut rows: Vec<(String, u64, u64, u64)> = Vec::new();
        for (key, first, seeds) in &self.rows {
            rows.push((format!("{key}/"), *first, *seeds, base));
            base += seeds;
        }
        rows.sort();
        let mut file = self
            .file
            .lock()
            .map_err(|_| anyhow::anyhow!("hash log: poisoned"))?;
        for (prefix, first, seeds, base) in rows {
            let end = first.saturating_add(seeds);
            lex_order(first, end, &mut |seed| {
                let mut rec = [0u8; RECORD];
                file.seek(SeekFrom::Start((base + (seed - first)) * RECORD as u64))?;
                file.read_exact(&mut rec)?;
                let n = usize::from(rec[0]).min(RECORD - 1);
                if n > 0 {
                    let hash = String::from_utf8_lossy(&rec[1..=n]).into_owned();
                    f(format!("{prefix}{seed}"), hash)?;
                }
                Ok(())
            })?;
        }
        Ok(())
    }
}

/// Call `f` on every number of `[lo, hi)` in the string order of their decimal digits (`10` before
/// `9`): a walk of the decimal trie, entering only subtrees that hold a number of the range.
pub fn lex_order(
    lo: u64,
    hi: u64,
    f: &mut dyn FnMut(u64) -> anyhow::Result<()>,
) -> anyhow::Result<()> {
    // The numbers under prefix p with k more digits are [p·10^k, (p+1)·10^k).
    let meets = |p: u64| {
        let (mut a, mut b) = (u128::from(p), u128::from(p) + 1);
        loop {
            if a >= u128::from(hi) {
                return false;
            }
            if b > u128::from(lo) {
                return true;
            }
            a *= 10;
            b *= 10;
        }
    };
    fn walk(
        p: u64,
        lo: u64,
        hi: u64,
        meets: &dyn Fn(u64) -> bool,
        f: &mut dyn FnMut(u64) -> anyhow::Result<()>,
    ) -> anyhow::Result<()> {
        if (lo..hi).contains(&p) {
            f(p)?;
        }
        for d in 0..10 {
            match p.checked_mul(10).and_then(|x| x.checked_add(d)) {
                Some(c) if meets(c) => walk(c, lo, hi, meets, f)?,
                _ => {}
            }
        }
        Ok(())
    }
    if lo == 0 && hi > 0 {
        f(0)?;
    }
    for p in 1..10 {
        if meets(p) {
            walk(p, lo, hi, &meets, f)?;
        }
    }
    Ok(())
}

impl From<BTreeMap<String, String>> for Hashes {
    fn from(m: BTreeMap<String, String>) -> Hashes {
        Hashes(Inner::Map(m))
    }
}

impl PartialEq for Hashes {
    fn eq(&self, other: &Hashes) -> bool {
        match (self.to_map(), other.to_map()) {
            (Ok(a), Ok(b)) => a == b,
            _ => false,
        }
    }
}

impl std::fmt::Debug for Hashes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Hashes({} runs)", self.len())
    }
}

impl Serialize for Hashes {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(Some(self.len()))?;
        let mut failed = None;
        let r = self.each(&mut |k, v| {
            map.serialize_entry(&k, &v).map_err(|e| {
                let msg = e.to_string();
                failed = Some(e);
                anyhow::anyhow!(msg)
            })
        });
        if let Some(e) = failed {
            return Err(e);
        }
        r.map_err(|e| S::Error::custom(format!("{e:#}")))?;
        map.end()
    }
}

impl<'de> Deserialize<'de> for Hashes {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Hashes, D::Error> {
        BTreeMap::<String, String>::deserialize(d).map(Hashes::from)
    }
}
