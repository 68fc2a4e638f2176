//! The unit tests of `sim/src/world/wakes.rs`.

use acp_chaos::world::wakes::*;
use std::future::Future;
use std::pin::pin;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .unwrap()
}

#[test]
fn a_timer_is_armed_from_its_first_poll_until_it_ends() {
    let w = Wakes::default();
    w.set_now(100);
    let rt = rt();
    let _g = rt.enter();
    let mut cx = Context::from_waker(Waker::noop());
    {
        let mut s = pin!(w.sleep("h", Duration::from_millis(25)));
        // Not polled: not armed (a disabled `select!` branch is never polled).
        assert_eq!(w.next(), None);
        assert!(s.as_mut().poll(&mut cx).is_pending());
        assert_eq!(w.next(), Some(125));
        let mut t = pin!(w.timeout("h", Duration::from_millis(10), std::future::pending::<()>()));
        assert!(t.as_mut().poll(&mut cx).is_pending());
        assert_eq!((w.next(), w.len()), (Some(110), 2));
    }
    // Dropped (cancelled): disarmed.
    assert!(w.is_empty());
    // Ended: disarmed.
    rt.block_on(w.sleep("h", Duration::from_millis(3)));
    assert!(w.is_empty());
    let r = rt.block_on(w.timeout("h", Duration::from_millis(3), async { 7 }));
    assert_eq!(r.ok(), Some(7));
    assert!(w.is_empty());
}

/// Every host timer is armed through `Wakes`: no other file of `world/` arms a tokio timer.
#[test]
fn no_other_world_file_arms_a_tokio_timer() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../sim/src/world");
    let mut seen = 0;
    for e in std::fs::read_dir(dir).unwrap() {
        let path = e.unwrap().path();
        if path.file_name().is_some_and(|n| n == "wakes.rs") {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        for bad in [
            "time::sleep",
            "time::timeout",
            "time::interval",
            "sleep_until",
        ] {
            assert!(
                !text.contains(bad),
                "{}: arms a timer with tokio `{bad}`: use world::wakes::Wakes",
                path.display()
            );
        }
        seen += 1;
    }
    assert!(seen >= 5, "read the world/ files ({seen})");
}

/// `due` tells a host's timers from another's: a host with no timer ending by a step's end
/// may be left out of that step.
#[test]
fn due_names_the_host_whose_timer_ends() {
    let w = Wakes::default();
    w.set_now(10);
    let rt = rt();
    let _g = rt.enter();
    let mut cx = Context::from_waker(Waker::noop());
    let mut a = Box::pin(w.sleep("agent", Duration::from_millis(5)));
    let mut c = Box::pin(w.sleep("client", Duration::from_millis(2)));
    assert!(a.as_mut().poll(&mut cx).is_pending());
    assert!(c.as_mut().poll(&mut cx).is_pending());
    assert!(!w.due("agent", 14) && w.due("agent", 15) && w.due("agent", 30));
    assert!(!w.due("client", 11) && w.due("client", 12));
    assert!(!w.due("proxy", 100));
    drop(c);
    assert!(!w.due("client", 100) && w.due("agent", 15));
}

#[test]
fn equal_deadlines_are_counted() {
    let w = Wakes::default();
    let rt = rt();
    let _g = rt.enter();
    let mut cx = Context::from_waker(Waker::noop());
    let mut a = Box::pin(w.sleep("h", Duration::from_millis(5)));
    let mut b = Box::pin(w.sleep("h", Duration::from_micros(4_100)));
    assert_eq!(a.as_mut().poll(&mut cx), Poll::Pending);
    assert_eq!(b.as_mut().poll(&mut cx), Poll::Pending);
    assert_eq!((w.next(), w.len()), (Some(5), 2));
    drop(a);
    assert_eq!((w.next(), w.len()), (Some(5), 1));
    drop(b);
    assert_eq!(w.next(), None);
}
