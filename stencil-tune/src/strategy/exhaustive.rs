//! Exhaustive search: every point of the space in enumeration order (Kamil's search engine,
//! 000_..., section VI), for small spaces. With a pruning model, points predicted hopeless are
//! skipped; without one it is brute force.

use crate::search::Search;

/// Measures every legal point of the space in enumeration order until the search stops.
pub fn exhaustive(search: &mut Search<'_>) {
    let space = search.space();
    for index in 0..space.n_points() {
        if search.is_stopped() {
            return;
        }
        search.evaluate(&space.point_at(index));
    }
}
