//! The unit tests of `sim/src/nemesis/kinds/`: the rows agree with themselves.

use acp_chaos::nemesis::kinds::*;
use acp_chaos::nemesis::FaultKind;

#[test]
fn every_kind_acts_somewhere_and_only_the_everywhere_kinds_act_everywhere() {
    let all = [
        Topology {
            proxy: false,
            cluster: false,
            stdio: false,
        },
        Topology {
            proxy: true,
            cluster: false,
            stdio: false,
        },
        Topology {
            proxy: false,
            cluster: true,
            stdio: false,
        },
        Topology {
            proxy: true,
            cluster: true,
            stdio: false,
        },
        // A stdio pipe (one Client, one Agent process, no proxy): the socket's kinds are out.
        Topology {
            proxy: false,
            cluster: false,
            stdio: true,
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
    // A half-open break needs two ends that close apart: refused on a stdio pipe.
    assert!(FaultKind::HalfOpen
        .refused_in(all[4])
        .unwrap()
        .contains("needs the socket transport"));
    assert!(FaultKind::HalfOpen.refused_in(plain).is_none());
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

/// Each kind's row names it as scenario files and histories do (its serde name), and
/// `FaultKind::named` finds it by that name.
#[test]
fn every_row_s_name_is_its_kind_s_serde_name() {
    for k in FaultKind::ALL {
        let serde = serde_json::to_string(&k).unwrap();
        assert_eq!(serde, format!("\"{}\"", k.as_str()), "{k:?}");
        assert_eq!(FaultKind::named(k.as_str()), Some(k));
        assert!(!k.summary().is_empty(), "{k:?}");
    }
}

/// The default orders are ranks in the rows: no two kinds share one, so each order is a
/// total order (exploration's names every certificate's schedules).
#[test]
fn no_two_kinds_share_a_rank() {
    let explore: Vec<u8> = FaultKind::ALL
        .iter()
        .filter_map(|k| match k.row().explore.by_default {
            ByDefault::Rank(r) => Some(r),
            _ => None,
        })
        .collect();
    let space: Vec<u8> = FaultKind::ALL
        .iter()
        .filter_map(|k| k.row().space.rank)
        .collect();
    for ranks in [explore, space] {
        let unique: std::collections::BTreeSet<u8> = ranks.iter().copied().collect();
        assert_eq!(unique.len(), ranks.len(), "{ranks:?}");
    }
    assert_eq!(
        FaultKind::explored_by_default().len(),
        FaultKind::ALL
            .iter()
            .filter(|k| matches!(k.row().explore.by_default, ByDefault::Rank(_)))
            .count()
    );
}

/// What the swarm and a proptest space draw of a kind is what its row says it takes and what
/// may trigger it, so every drawn fault passes `FaultSpec::check`: each required setting is
/// drawn, no setting it does not take is, and the trigger is one it may fire on.
#[test]
fn every_kind_is_drawn_with_the_settings_and_triggers_it_takes() {
    for k in FaultKind::ALL {
        let row = k.row();
        for s in row.swarm.settings {
            assert!(k.takes(*s).is_some(), "{k:?}: the swarm draws {s:?}");
        }
        for t in k.settings() {
            if t.given == Given::Required {
                assert!(
                    row.swarm.settings.contains(&t.setting),
                    "{k:?}: the swarm does not draw required {:?}",
                    t.setting
                );
            }
        }
        let on = row.swarm.on;
        match k.fires() {
            Fires::AtFrame => assert_eq!(on, DrawnOn::Frame, "{k:?}"),
            Fires::AtPromptRequest => assert_eq!(on, DrawnOn::PromptRequest, "{k:?}"),
            Fires::AtEvent => assert!(
                !matches!(on, DrawnOn::Frame | DrawnOn::PromptRequest | DrawnOn::Point),
                "{k:?}"
            ),
            Fires::AtPoint => assert_eq!(on, DrawnOn::Point, "{k:?}"),
        }
        if matches!(
            on,
            DrawnOn::TimeOrPoint | DrawnOn::TimeOrFrameOrPoint | DrawnOn::Point
        ) {
            assert!(
                !k.points().is_empty(),
                "{k:?} drawn at a point it has none of"
            );
        }
        let knob_setting = |n: &Knob| match n {
            Knob::Silent => Setting::Silent,
            Knob::Stall | Knob::ReorderBound => Setting::StallMs,
            Knob::Heal => Setting::HealAfterMs,
            Knob::Restart => Setting::RestartAfterMs,
            Knob::Direction => Setting::Direction,
        };
        for n in row.space.settings {
            assert!(
                k.takes(knob_setting(n)).is_some(),
                "{k:?}: space knob {n:?}"
            );
        }
    }
}

/// Exploration places a kind only where it may fire (its points, frames for a frame kind, the
/// prompt request for `transient-error`), and in shapes made of settings it takes.
#[test]
fn exploration_places_each_kind_only_where_it_may_fire() {
    for k in FaultKind::ALL {
        let x = k.row().explore;
        let p = x.placed;
        for pt in p.points.iter().chain(p.cluster_points) {
            assert!(k.points().contains(pt), "{k:?} placed at {pt:?}");
        }
        if !p.cluster_points.is_empty() {
            assert!(matches!(p.on_cluster, OnCluster::AlsoLong(_)), "{k:?}");
        }
        match p.frames {
            AtFrames::No => {}
            AtFrames::Every => assert!(k.fires() != Fires::AtPromptRequest, "{k:?}"),
            AtFrames::PromptRequests => assert_eq!(k.fires(), Fires::AtPromptRequest),
        }
        if p.submissions {
            assert_eq!(k.fires(), Fires::AtEvent, "{k:?}");
        }
        if !p.points.is_empty() {
            assert!(
                matches!(k.fires(), Fires::AtEvent | Fires::AtPoint),
                "{k:?}"
            );
        }
        let needs = match p.shapes {
            Shapes::One => None,
            Shapes::AlsoSilent => Some(Setting::Silent),
            Shapes::AlsoPastTimeout => Some(Setting::StallMs),
            Shapes::EachDirection => Some(Setting::Direction),
        };
        let more = match p.on_cluster {
            OnCluster::Nothing => None,
            OnCluster::AlsoReroute => Some(Setting::Reroute),
            OnCluster::AlsoLong(s) => Some(s),
        };
        for s in needs.into_iter().chain(more) {
            assert!(k.takes(s).is_some(), "{k:?} placed with {s:?}");
        }
        let anywhere = p.frames != AtFrames::No || p.submissions || !p.points.is_empty();
        match x.by_default {
            ByDefault::Rank(_) | ByDefault::OnRequest | ByDefault::LeftOut(_) => {
                assert!(anywhere, "{k:?} is placed nowhere")
            }
            ByDefault::Never(_) => assert!(!anywhere, "{k:?} is never placed, yet has places"),
        }
    }
}

/// A kind's level follows from its effect, and only the disk's kinds (reach `Log`) damage it.
#[test]
fn a_kind_damages_the_disk_exactly_when_its_reach_is_a_log() {
    for k in FaultKind::ALL {
        assert_eq!(k.level() == Level::Disk, k.reach() == Reach::Log, "{k:?}");
        // A frame's fault fires at a frame; a process's at any event or at a point.
        assert_eq!(
            k.level() == Level::Frame,
            !matches!(k.fires(), Fires::AtEvent | Fires::AtPoint),
            "{k:?}"
        );
    }
}
