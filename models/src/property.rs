//! The property ids: what a checker judges, a verdict names and a mutant must be caught by
//! (`spec/RULES.md` "Properties"). One enum, so a registry row cannot name a property that
//! does not exist; the text form (`P1`, `X4`) is what reports, schedule files and
//! `--expect` read and write.

use serde::{Deserialize, Serialize};

/// A property's id. Written as its name (`"P1"`), in reports and in JSON.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum Property {
    /// At-most-once insertion.
    P1,
    /// No silent drop.
    P2,
    /// The same answer to a retry.
    P3,
    /// An error means not inserted.
    P4,
    /// Key validation.
    P5,
    /// Cancel.
    P6,
    /// Every request answered.
    P7,
    /// Key privacy.
    P8,
    /// Keys scoped to their session.
    P9,
    /// The retry class of a method.
    P10,
    /// Durability.
    P11,
    /// Message id uniqueness.
    P12,
    /// Forwarding order through an intermediary.
    P13,
    /// The Client's keys.
    P14,
    /// Echo.
    P15,
    /// The active session.
    P16,
    /// A turn's stop.
    P17,
    /// Resume order.
    X4,
}

impl Property {
    /// Its id as reports write it: `P1`, `X4`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Property::P1 => "P1",
            Property::P2 => "P2",
            Property::P3 => "P3",
            Property::P4 => "P4",
            Property::P5 => "P5",
            Property::P6 => "P6",
            Property::P7 => "P7",
            Property::P8 => "P8",
            Property::P9 => "P9",
            Property::P10 => "P10",
            Property::P11 => "P11",
            Property::P12 => "P12",
            Property::P13 => "P13",
            Property::P14 => "P14",
            Property::P15 => "P15",
            Property::P16 => "P16",
            Property::P17 => "P17",
            Property::X4 => "X4",
        }
    }
}

impl std::fmt::Display for Property {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // `pad`, so a width (`{p:>5}`) lines it up as it does a `&str`.
        f.pad(self.as_str())
    }
}

impl PartialEq<&str> for Property {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

impl PartialEq<String> for Property {
    fn eq(&self, other: &String) -> bool {
        self.as_str() == other
    }
}
