//! The unit tests of `sim/src/nemesis/kinds.rs`.

use acp_chaos::nemesis::fault::FaultKind;
use acp_chaos::nemesis::kinds::*;

#[test]
fn every_kind_acts_somewhere_and_only_the_everywhere_kinds_act_everywhere() {
    let all = [
        Topology {
            proxy: false,
            cluster: false,
        },
        Topology {
            proxy: true,
            cluster: false,
        },
        Topology {
            proxy: false,
            cluster: true,
        },
        Topology {
            proxy: true,
            cluster: true,
        },
    ];
    for k in FaultKind::ALL {
        let acts = all.iter().filter(|t| t.acts(k.reach())).count();
        assert!(acts > 0, "{k:?} acts nowhere");
        assert_eq!(acts == all.len(), k.reach() == Reach::Everywhere, "{k:?}");
        assert_eq!(k.reach().needs().is_none(), k.reach() == Reach::Everywhere);
        assert!(all.iter().all(|t| !t.acts(k.reach()) || t.has(k.reach())));
    }
    let plain = all[0];
    assert!(FaultKind::CrashProxy
        .refused_in(plain)
        .unwrap()
        .contains("needs a proxy"));
    // Accepted behind a proxy (drawn there since the swarm began), placed only without one.
    assert!(FaultKind::LoseExchange.refused_in(all[3]).is_none());
    assert!(!all[3].acts(Reach::Remote) && all[2].acts(Reach::Remote));
    assert!(FaultKind::LoseExchange.refused_in(all[1]).is_some());
    assert!(FaultKind::FlipBit.refused_in(all[2]).is_some());
}

/// The kinds that damage the disk (reach `Log`) are exactly those with a [`DiskDamage`], each
/// its own, so the disk host has a damage to do for every one the step loop marks.
#[test]
fn every_disk_kind_has_its_own_damage_and_no_other_kind_has_one() {
    for k in FaultKind::ALL {
        assert_eq!(k.damages_disk(), k.disk_damage().is_some(), "{k:?}");
        if let Some(d) = k.disk_damage() {
            assert_eq!(d.kind(), k);
        }
    }
    assert_eq!(
        DiskDamage::ALL.len(),
        FaultKind::ALL.iter().filter(|k| k.damages_disk()).count()
    );
}
