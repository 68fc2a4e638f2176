//! The unit tests of `sim/src/summary/hashes.rs`.

use acp_chaos::summary::*;

#[test]
fn a_log_that_cannot_be_written_still_counts_its_runs() {
    // `/dev/full`: every write fails with ENOSPC, as on a full disk.
    let full = std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .unwrap();
    let mut w = HashLogWriter::on(
        full.try_clone().unwrap(),
        full,
        vec![("s@stored".into(), 0, 3)],
    );
    for h in [Some("h0"), None, Some("h2")] {
        let _ = w.push(h);
    }
    let (hashes, written) = w.finish();
    assert!(written.is_err());
    assert_eq!(hashes.len(), 2);
    assert!(hashes.to_map().is_err());
}
