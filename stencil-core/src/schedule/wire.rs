//! A fixed-size wire format for schedules: a [`Schedule`] as [`WORDS`] `u64` words, for
//! sending a tuned CPU schedule to processes that did not tune (`stencil::mpi` broadcasts
//! it from the rank that tuned to the ranks of the same local shape). Only CPU schedules are
//! encoded; anything else travels as "no schedule", and its receiver chooses its own.
//!
//! Layout: word 0 is the tag (1: a CPU schedule, 0: none); then the
//! [`tile`](CpuSchedule::tile) extents, one word each; then `threads`, `force_generic`
//! (0 or 1), `chunk`, `row_block`, `register_rows`, `stores` (1 plain, 2 streaming, 0 the
//! backend's choice), `prefetch`, `time_depth` and `time_slab`.

use super::{CpuSchedule, CpuStores, Schedule};
use crate::ir::MAX_DIMS;

/// Words of an encoded schedule: a tag, the tile extents and nine fields.
pub const WORDS: usize = 1 + MAX_DIMS + 9;

/// `schedule` as words: a CPU schedule with tag 1, anything else as tag 0 (every word 0).
pub fn encode(schedule: &Schedule) -> [u64; WORDS] {
    let mut w = [0u64; WORDS];
    if let Schedule::Cpu(s) = schedule {
        w[0] = 1;
        let m = MAX_DIMS;
        for (slot, &t) in w[1..=m].iter_mut().zip(&s.tile) {
            *slot = t as u64;
        }
        let stores = match s.stores {
            CpuStores::Plain => 1,
            CpuStores::Streaming => 2,
            _ => 0,
        };
        w[m + 1..].copy_from_slice(&[
            s.threads as u64,
            u64::from(s.force_generic),
            s.chunk as u64,
            s.row_block as u64,
            s.register_rows as u64,
            stores,
            s.prefetch as u64,
            s.time_depth as u64,
            s.time_slab as u64,
        ]);
    }
    w
}

/// The schedule [`encode`] wrote, or `None` when the tag is not 1. Decoding never fails
/// otherwise: a `force_generic` word other than 0 means `true`, and a `stores` word other
/// than 1 or 2 means [`CpuStores::Auto`].
pub fn decode(w: &[u64; WORDS]) -> Option<Schedule> {
    if w[0] != 1 {
        return None;
    }
    let m = MAX_DIMS;
    let mut s = CpuSchedule::default();
    for (t, &x) in s.tile.iter_mut().zip(&w[1..=m]) {
        *t = x as usize;
    }
    let f = &w[m + 1..];
    s.threads = f[0] as usize;
    s.force_generic = f[1] != 0;
    s.chunk = f[2] as usize;
    s.row_block = f[3] as usize;
    s.register_rows = f[4] as usize;
    s.stores = match f[5] {
        1 => CpuStores::Plain,
        2 => CpuStores::Streaming,
        _ => CpuStores::Auto,
    };
    s.prefetch = f[6] as usize;
    s.time_depth = f[7] as usize;
    s.time_slab = f[8] as usize;
    Some(Schedule::Cpu(s))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schedule::{GpuSchedule, GpuVariant, MergeKind};

    /// CPU schedules that set every field, each to a value no other field has.
    fn cpu_schedules() -> Vec<CpuSchedule> {
        let mut all = vec![CpuSchedule::default()];
        for (k, stores) in [CpuStores::Auto, CpuStores::Plain, CpuStores::Streaming]
            .into_iter()
            .enumerate()
        {
            let base = 100 * (k + 1);
            let s = CpuSchedule {
                tile: std::array::from_fn(|d| base + d + 1),
                threads: base + 11,
                force_generic: k % 2 == 0,
                chunk: base + 12,
                row_block: base + 13,
                register_rows: base + 14,
                stores,
                prefetch: base + 15,
                time_depth: base + 16,
                time_slab: base + 17,
            };
            all.push(s);
        }
        // Extremes: the largest values a word holds on this machine, and all zero.
        all.push(CpuSchedule {
            tile: [usize::MAX; MAX_DIMS],
            threads: usize::MAX,
            force_generic: true,
            chunk: usize::MAX,
            row_block: usize::MAX,
            register_rows: usize::MAX,
            stores: CpuStores::Streaming,
            prefetch: usize::MAX,
            time_depth: usize::MAX,
            time_slab: usize::MAX,
        });
        all.push(CpuSchedule {
            tile: [0; MAX_DIMS],
            threads: 0,
            force_generic: false,
            chunk: 0,
            row_block: 0,
            register_rows: 0,
            stores: CpuStores::Auto,
            prefetch: 0,
            time_depth: 0,
            time_slab: 0,
        });
        all
    }

    #[test]
    fn cpu_schedules_survive_their_encoding() {
        for s in cpu_schedules() {
            let words = encode(&Schedule::Cpu(s));
            assert_eq!(words[0], 1, "{s:?}");
            let Some(Schedule::Cpu(back)) = decode(&words) else {
                panic!("{s:?} did not decode as a CPU schedule");
            };
            // Field by field, so a field the format forgot names itself.
            assert_eq!(back.tile, s.tile);
            assert_eq!(back.threads, s.threads);
            assert_eq!(back.force_generic, s.force_generic);
            assert_eq!(back.chunk, s.chunk);
            assert_eq!(back.row_block, s.row_block);
            assert_eq!(back.register_rows, s.register_rows);
            assert_eq!(back.stores, s.stores);
            assert_eq!(back.prefetch, s.prefetch);
            assert_eq!(back.time_depth, s.time_depth);
            assert_eq!(back.time_slab, s.time_slab);
            assert_eq!(back, s);
        }
    }

    #[test]
    fn gpu_schedules_travel_as_no_schedule() {
        let gpu = [
            GpuSchedule::default(),
            GpuSchedule {
                variant: GpuVariant::SharedTile,
                block: [64, 8, 1],
                merge: 2,
                merge_kind: MergeKind::Cyclic,
                stream_chunk: 16,
                unroll: 4,
                time_steps: 2,
            },
        ];
        for s in gpu {
            let words = encode(&Schedule::Gpu(s));
            assert_eq!(words, [0; WORDS], "{s:?}");
            assert_eq!(decode(&words), None);
        }
    }

    #[test]
    fn corrupted_words_decode_as_before() {
        let mut s = CpuSchedule::default();
        s.tile[0] = 7;
        s.tile[2] = 64;
        s.threads = 3;
        s.force_generic = true;
        s.stores = CpuStores::Streaming;
        s.time_depth = 4;
        s.time_slab = 9;
        s.prefetch = 2;
        let words = encode(&Schedule::Cpu(s));
        // A tag other than 1: no schedule, whatever the other words hold.
        for tag in [0, 2, u64::MAX] {
            let mut w = words;
            w[0] = tag;
            assert_eq!(decode(&w), None, "tag {tag}");
        }
        assert_eq!(decode(&[0; WORDS]), None);
        // `force_generic`: any word but 0 is true.
        let m = MAX_DIMS;
        for (word, generic) in [(0, false), (1, true), (2, true), (u64::MAX, true)] {
            let mut w = words;
            w[m + 2] = word;
            let Some(Schedule::Cpu(back)) = decode(&w) else {
                panic!("tag 1 decodes");
            };
            assert_eq!(back.force_generic, generic, "word {word}");
            assert_eq!(
                back,
                CpuSchedule {
                    force_generic: generic,
                    ..s
                }
            );
        }
        // `stores`: a word other than 1 or 2 is the backend's choice.
        for (word, stores) in [
            (0, CpuStores::Auto),
            (1, CpuStores::Plain),
            (2, CpuStores::Streaming),
            (3, CpuStores::Auto),
            (u64::MAX, CpuStores::Auto),
        ] {
            let mut w = words;
            w[m + 6] = word;
            let Some(Schedule::Cpu(back)) = decode(&w) else {
                panic!("tag 1 decodes");
            };
            assert_eq!(back, CpuSchedule { stores, ..s }, "word {word}");
        }
    }
}
