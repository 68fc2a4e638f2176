//! A model's whole state as one number, for exploration's pruning (`acp_chaos::explore`): two
//! placements of a fault are merged only when everything a run's future can depend on is
//! equal, and a model's memory is part of that.
//!
//! The digest hashes the model's `Debug` form (every field: a field added later is in it
//! without anyone remembering to add it) and the positions of its seeded random streams,
//! which `Debug` of `rand_chacha` hides. Names the model made up (ids, keys) are in it too: a
//! digest never calls two states equal that differ in anything.

use std::fmt::{self, Debug, Write as _};
use std::hash::{DefaultHasher, Hasher};

/// Feeds formatted text into a hasher without building the string.
struct HashWriter<'a>(&'a mut DefaultHasher);

impl fmt::Write for HashWriter<'_> {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        self.0.write(s.as_bytes());
        Ok(())
    }
}

/// The digest of `state` (its `Debug` form) and of `streams` (each seeded random stream's
/// position in words, `ChaCha8Rng::get_word_pos`). The same state gives the same number in one
/// build of the program (a `DefaultHasher` with its fixed keys); it is never written anywhere.
pub fn of(state: &impl Debug, streams: &[u128]) -> u64 {
    let mut h = DefaultHasher::new();
    for s in streams {
        h.write_u128(*s);
    }
    // Formatting into a hasher never fails.
    let _ = write!(HashWriter(&mut h), "{state:?}");
    h.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equal_states_equal_digests_and_any_difference_shows() {
        #[derive(Debug)]
        struct S {
            a: u32,
            b: Vec<&'static str>,
        }
        let x = S { a: 1, b: vec!["k"] };
        let y = S { a: 1, b: vec!["k"] };
        assert_eq!(of(&x, &[3]), of(&y, &[3]));
        assert_ne!(
            of(&x, &[3]),
            of(&y, &[4]),
            "a stream position is part of it"
        );
        let z = S { a: 2, b: vec!["k"] };
        assert_ne!(of(&x, &[3]), of(&z, &[3]));
        // Only the `Debug` form counts: the fields are read through it.
        assert_eq!((z.a, z.b.len()), (2, 1));
    }
}
