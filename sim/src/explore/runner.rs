//! Who runs an exploration's schedules: the project's models in parallel on the pool, or a
//! user's [`Parties`] one at a time on this thread (their factories are `Rc` closures, so a
//! party need not be `Send`). Either way the results keep the schedules' order, so an
//! exploration is the same list of runs for any number of threads.

use rayon::prelude::*;

use crate::world::Parties;

/// `f` over `items`, in order: in parallel on `pool` when every party is the project's model
/// (each worker builds its own [`Parties::default`]), else sequentially with `parties`.
pub fn map_runs<T, R, F>(items: Vec<T>, parties: &Parties, pool: &rayon::ThreadPool, f: F) -> Vec<R>
where
    T: Send,
    R: Send,
    F: Fn(T, &Parties) -> R + Sync + Send,
{
    if parties.all_models() {
        pool.install(|| {
            items
                .into_par_iter()
                .map(|x| f(x, &Parties::default()))
                .collect()
        })
    } else {
        items.into_iter().map(|x| f(x, parties)).collect()
    }
}
