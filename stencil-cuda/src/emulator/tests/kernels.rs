//! Whole kernels: vector add, a 1-D 3-point stencil with halo, shared-memory exchange and a tree
//! reduction whose results depend on `bar.sync` holding every thread, loops with predicates, and
//! a 64x64x64 7-point stencil (the speed check).

use std::time::Instant;

use stencil_core::rng::Rng;

use super::super::{LaunchStats, Memory, Module, ParamValue, launch};
use super::HEADER;

fn random_f64s(seed: u64, count: usize) -> Vec<f64> {
    let mut rng = Rng::new(seed);
    (0..count).map(|_| rng.uniform(-10.0, 10.0)).collect()
}

fn random_f32s(seed: u64, count: usize) -> Vec<f32> {
    let mut rng = Rng::new(seed);
    (0..count)
        .map(|_| rng.uniform(-10.0, 10.0) as f32)
        .collect()
}

fn parse(body: &str) -> Module {
    let text = format!("{HEADER}{body}");
    Module::parse(&text).unwrap_or_else(|e| panic!("{e}"))
}

const VECTOR_ADD: &str = "
.visible .entry vector_add(.param .u64 x, .param .u64 y, .param .u64 z, .param .u32 n)
{
    .reg .pred %p<2>;
    .reg .b32 %r<6>;
    .reg .b64 %rd<10>;
    .reg .f32 %f<4>;
    ld.param.u64 %rd1, [x];
    ld.param.u64 %rd2, [y];
    ld.param.u64 %rd3, [z];
    ld.param.u32 %r1, [n];
    mov.u32 %r2, %ctaid.x;
    mov.u32 %r3, %ntid.x;
    mov.u32 %r4, %tid.x;
    mad.lo.s32 %r5, %r2, %r3, %r4;
    setp.ge.u32 %p1, %r5, %r1;
    @%p1 bra DONE;
    cvta.to.global.u64 %rd4, %rd1;
    cvta.to.global.u64 %rd5, %rd2;
    cvta.to.global.u64 %rd6, %rd3;
    mul.wide.s32 %rd7, %r5, 4;
    add.s64 %rd8, %rd4, %rd7;
    ld.global.f32 %f1, [%rd8];
    add.s64 %rd8, %rd5, %rd7;
    ld.global.f32 %f2, [%rd8];
    add.rn.f32 %f3, %f1, %f2;
    add.s64 %rd9, %rd6, %rd7;
    st.global.f32 [%rd9], %f3;
DONE:
    ret;
}
";

#[test]
fn vector_add_covers_a_ragged_grid() {
    let module = parse(VECTOR_ADD);
    let n = 1000;
    let (x, y) = (random_f32s(1, n), random_f32s(2, n));
    let mut memory = Memory::new();
    let (px, py) = (memory.alloc_f32s(&x), memory.alloc_f32s(&y));
    let pz = memory.alloc(n * 4);
    let params = [
        ParamValue::U64(px),
        ParamValue::U64(py),
        ParamValue::U64(pz),
        ParamValue::U32(n as u32),
    ];
    let stats = launch(
        &module,
        "vector_add",
        [8, 1, 1],
        [128, 1, 1],
        &params,
        &mut memory,
    )
    .unwrap();
    let z = memory.read_f32s(pz, n).unwrap();
    for i in 0..n {
        assert_eq!(z[i], x[i] + y[i], "element {i}");
    }
    assert_eq!(stats.global_loads, 2 * n as u64);
    assert_eq!(stats.global_stores, n as u64);
    assert_eq!((stats.blocks, stats.threads, stats.barriers), (8, 1024, 0));
    // 10 instructions up to the branch for every thread, 11 more for each in-range thread, and
    // `ret` for every thread.
    assert_eq!(stats.instructions, 1024 * 10 + n as u64 * 11 + 1024);
}

const STENCIL_1D: &str = "
.visible .entry smooth(.param .u64 input, .param .u64 output, .param .u32 n, .param .f64 weight)
{
    .reg .pred %p<2>;
    .reg .b32 %r<6>;
    .reg .b64 %rd<8>;
    .reg .f64 %fd<8>;
    ld.param.u64 %rd1, [input];
    ld.param.u64 %rd2, [output];
    ld.param.u32 %r1, [n];
    ld.param.f64 %fd1, [weight];
    mov.u32 %r2, %ctaid.x;
    mov.u32 %r3, %ntid.x;
    mov.u32 %r4, %tid.x;
    mad.lo.s32 %r5, %r2, %r3, %r4;
    setp.ge.u32 %p1, %r5, %r1;
    @%p1 bra DONE;
    // input holds n + 2 points: one halo point on each side; point i is input[i + 1].
    mul.wide.u32 %rd3, %r5, 8;
    add.s64 %rd4, %rd1, %rd3;
    ld.global.f64 %fd2, [%rd4];
    ld.global.f64 %fd3, [%rd4+8];
    ld.global.f64 %fd4, [%rd4+16];
    add.rn.f64 %fd5, %fd2, %fd4;
    mul.rn.f64 %fd6, %fd3, 0dC000000000000000;
    add.rn.f64 %fd5, %fd5, %fd6;
    fma.rn.f64 %fd7, %fd5, %fd1, %fd3;
    add.s64 %rd5, %rd2, %rd3;
    st.global.f64 [%rd5], %fd7;
DONE:
    exit;
}
";

#[test]
fn three_point_stencil_reads_its_halo() {
    let module = parse(STENCIL_1D);
    let n = 300;
    let input = random_f64s(3, n + 2);
    let weight = 0.25;
    let mut memory = Memory::new();
    let pin = memory.alloc_f64s(&input);
    let pout = memory.alloc(n * 8);
    let params = [
        ParamValue::U64(pin),
        ParamValue::U64(pout),
        ParamValue::U32(n as u32),
        ParamValue::F64(weight),
    ];
    launch(
        &module,
        "smooth",
        [3, 1, 1],
        [128, 1, 1],
        &params,
        &mut memory,
    )
    .unwrap();
    let out = memory.read_f64s(pout, n).unwrap();
    for i in 0..n {
        let laplacian = (input[i] + input[i + 2]) + input[i + 1] * -2.0;
        assert_eq!(out[i], laplacian.mul_add(weight, input[i + 1]), "point {i}");
    }
    // One more point than the halo allows reads past the input allocation.
    let params = [
        ParamValue::U64(pin),
        ParamValue::U64(pout),
        ParamValue::U32(n as u32 + 1),
        ParamValue::F64(weight),
    ];
    let error = launch(
        &module,
        "smooth",
        [3, 1, 1],
        [128, 1, 1],
        &params,
        &mut memory,
    )
    .unwrap_err();
    assert_eq!(
        error.kind(),
        super::super::EmulatorErrorKind::OutOfBounds,
        "{error}"
    );
}

/// Each thread writes its value to shared memory, waits, then reads its right neighbour's
/// (wrapping around at `active`); threads from `active` on exit before the first barrier.
fn neighbour_exchange(block: u32, active: u32) -> String {
    format!(
        "
.visible .entry exchange(.param .u64 data)
{{
    .shared .align 8 .b8 tile[{bytes}];
    .reg .pred %p<2>;
    .reg .b32 %r<8>;
    .reg .b64 %rd<8>;
    .reg .f64 %fd<4>;
    mov.u32 %r1, %tid.x;
    setp.ge.u32 %p1, %r1, {active};
    @%p1 exit;
    ld.param.u64 %rd1, [data];
    mul.wide.u32 %rd2, %r1, 8;
    add.s64 %rd3, %rd1, %rd2;
    ld.global.f64 %fd1, [%rd3];
    mov.u64 %rd4, tile;
    add.s64 %rd5, %rd4, %rd2;
    st.shared.f64 [%rd5], %fd1;
    bar.sync 0;
    add.s32 %r2, %r1, 1;
    setp.ge.u32 %p1, %r2, {active};
    @%p1 sub.s32 %r2, %r2, {active};
    mul.wide.u32 %rd6, %r2, 8;
    add.s64 %rd7, %rd4, %rd6;
    ld.shared.f64 %fd2, [%rd7];
    ld.shared.f64 %fd3, [tile];
    add.rn.f64 %fd2, %fd2, %fd3;
    bar.sync 0;
    st.global.f64 [%rd3], %fd2;
    ret;
}}
",
        bytes = block * 8
    )
}

#[test]
fn threads_read_neighbours_written_before_the_barrier() {
    let module = parse(&neighbour_exchange(128, 128));
    let data = random_f64s(4, 128);
    let mut memory = Memory::new();
    let address = memory.alloc_f64s(&data);
    let stats = launch(
        &module,
        "exchange",
        [1, 1, 1],
        [128, 1, 1],
        &[ParamValue::U64(address)],
        &mut memory,
    )
    .unwrap();
    let out = memory.read_f64s(address, 128).unwrap();
    for i in 0..128 {
        // Thread i's right neighbour ran after it: without the barrier its value would still be
        // the shared-memory poison (NaN).
        assert_eq!(out[i], data[(i + 1) % 128] + data[0], "thread {i}");
    }
    assert_eq!(stats.barriers, 2);
    assert_eq!(stats.shared_stores, 128);
}

#[test]
fn exited_threads_do_not_block_a_barrier() {
    let module = parse(&neighbour_exchange(128, 40));
    let data = random_f64s(5, 128);
    let mut memory = Memory::new();
    let address = memory.alloc_f64s(&data);
    let stats = launch(
        &module,
        "exchange",
        [1, 1, 1],
        [128, 1, 1],
        &[ParamValue::U64(address)],
        &mut memory,
    )
    .unwrap();
    let out = memory.read_f64s(address, 128).unwrap();
    for i in 0..40 {
        assert_eq!(out[i], data[(i + 1) % 40] + data[0], "thread {i}");
    }
    assert_eq!(&out[40..], &data[40..]);
    assert_eq!(stats.barriers, 2);
}

const REDUCTION: &str = "
.visible .entry block_sum(.param .u64 input, .param .u64 sums)
{
    .shared .align 4 .b8 partial[1024];
    .reg .pred %p<3>;
    .reg .b32 %r<10>;
    .reg .b64 %rd<10>;
    .reg .f32 %f<4>;
    mov.u32 %r1, %tid.x;
    mov.u32 %r2, %ctaid.x;
    mov.u32 %r3, %ntid.x;
    mad.lo.s32 %r4, %r2, %r3, %r1;
    ld.param.u64 %rd1, [input];
    mul.wide.u32 %rd2, %r4, 4;
    add.s64 %rd3, %rd1, %rd2;
    ld.global.f32 %f1, [%rd3];
    mul.wide.u32 %rd4, %r1, 4;
    mov.u64 %rd5, partial;
    add.s64 %rd6, %rd5, %rd4;
    st.shared.f32 [%rd6], %f1;
    bar.sync 0;
    shr.u32 %r5, %r3, 1;
LOOP:
    setp.eq.u32 %p1, %r5, 0;
    @%p1 bra WRITE;
    setp.lt.u32 %p2, %r1, %r5;
    @!%p2 bra SKIP;
    add.s32 %r6, %r1, %r5;
    mul.wide.u32 %rd7, %r6, 4;
    add.s64 %rd8, %rd5, %rd7;
    ld.shared.f32 %f2, [%rd8];
    ld.shared.f32 %f3, [%rd6];
    add.rn.f32 %f3, %f3, %f2;
    st.shared.f32 [%rd6], %f3;
SKIP:
    bar.sync 0;
    shr.u32 %r5, %r5, 1;
    bra.uni LOOP;
WRITE:
    setp.ne.u32 %p1, %r1, 0;
    @%p1 ret;
    ld.shared.f32 %f1, [partial];
    ld.param.u64 %rd1, [sums];
    mul.wide.u32 %rd9, %r2, 4;
    add.s64 %rd9, %rd1, %rd9;
    st.global.f32 [%rd9], %f1;
    ret;
}
";

#[test]
fn shared_memory_tree_reduction_needs_every_barrier() {
    let module = parse(REDUCTION);
    let (blocks, threads) = (5usize, 256usize);
    let input = random_f32s(6, blocks * threads);
    let mut memory = Memory::new();
    let pin = memory.alloc_f32s(&input);
    let psums = memory.alloc(blocks * 4);
    let stats = launch(
        &module,
        "block_sum",
        [blocks as u32, 1, 1],
        [threads as u32, 1, 1],
        &[ParamValue::U64(pin), ParamValue::U64(psums)],
        &mut memory,
    )
    .unwrap();
    let sums = memory.read_f32s(psums, blocks).unwrap();
    for (block, &sum) in sums.iter().enumerate() {
        // The same pairwise tree, in f32, computed here.
        let mut partial = input[block * threads..(block + 1) * threads].to_vec();
        let mut stride = threads / 2;
        while stride > 0 {
            for i in 0..stride {
                partial[i] += partial[i + stride];
            }
            stride /= 2;
        }
        assert_eq!(sum, partial[0], "block {block}");
    }
    // One barrier after the stores, one per halving step (8 for 256 threads), per block.
    assert_eq!(stats.barriers, blocks as u64 * 9);
}

const TRIANGLE: &str = "
.visible .entry triangle(.param .u64 out, .param .s32 scale)
{
    .reg .pred %p<2>;
    .reg .b32 %r<8>;
    .reg .b64 %rd<4>;
    mov.u32 %r1, %tid.x;
    ld.param.s32 %r2, [scale];
    mov.s32 %r3, 0;
    mov.s32 %r4, 0;
LOOP:
    setp.gt.s32 %p1, %r4, %r1;
    @%p1 bra DONE;
    mad.lo.s32 %r3, %r4, %r2, %r3;
    add.s32 %r4, %r4, 1;
    bra LOOP;
DONE:
    ld.param.u64 %rd1, [out];
    mul.wide.u32 %rd2, %r1, 4;
    add.s64 %rd3, %rd1, %rd2;
    st.global.s32 [%rd3], %r3;
    ret;
}
";

#[test]
fn loops_with_per_thread_trip_counts() {
    let module = parse(TRIANGLE);
    let mut memory = Memory::new();
    let out = memory.alloc(64 * 4);
    launch(
        &module,
        "triangle",
        [1, 1, 1],
        [64, 1, 1],
        &[ParamValue::U64(out), ParamValue::S32(-3)],
        &mut memory,
    )
    .unwrap();
    let bytes = memory.read(out, 64 * 4).unwrap();
    for t in 0..64i32 {
        let got = i32::from_le_bytes(bytes[t as usize * 4..][..4].try_into().unwrap());
        assert_eq!(got, -3 * (0..=t).sum::<i32>(), "thread {t}");
    }
}

const STENCIL_3D: &str = "
.visible .entry seven_point(.param .u64 input, .param .u64 output, .param .u32 n, .param .f32 c0, .param .f32 c1)
{
    .reg .pred %p<4>;
    .reg .b32 %r<20>;
    .reg .b64 %rd<12>;
    .reg .f32 %f<12>;
    mov.u32 %r1, %ctaid.x;
    mov.u32 %r2, %ntid.x;
    mov.u32 %r3, %tid.x;
    mad.lo.s32 %r4, %r1, %r2, %r3;
    mov.u32 %r1, %ctaid.y;
    mov.u32 %r2, %ntid.y;
    mov.u32 %r3, %tid.y;
    mad.lo.s32 %r5, %r1, %r2, %r3;
    mov.u32 %r6, %ctaid.z;
    ld.param.u32 %r7, [n];
    // interior: 1 <= x, y, z < n - 1
    sub.s32 %r8, %r7, 1;
    min.u32 %r9, %r4, %r5;
    min.u32 %r9, %r9, %r6;
    max.u32 %r10, %r4, %r5;
    max.u32 %r10, %r10, %r6;
    setp.eq.u32 %p1, %r9, 0;
    setp.ge.u32 %p2, %r10, %r8;
    or.pred %p3, %p1, %p2;
    @%p3 bra DONE;
    mad.lo.s32 %r11, %r6, %r7, %r5;
    mad.lo.s32 %r11, %r11, %r7, %r4;
    mul.wide.u32 %rd1, %r11, 4;
    mul.wide.u32 %rd2, %r7, 4;
    mul.lo.s32 %r12, %r7, %r7;
    mul.wide.u32 %rd3, %r12, 4;
    ld.param.u64 %rd4, [input];
    add.s64 %rd5, %rd4, %rd1;
    ld.global.f32 %f1, [%rd5];
    ld.global.f32 %f2, [%rd5+-4];
    ld.global.f32 %f3, [%rd5+4];
    sub.s64 %rd6, %rd5, %rd2;
    ld.global.f32 %f4, [%rd6];
    add.s64 %rd6, %rd5, %rd2;
    ld.global.f32 %f5, [%rd6];
    sub.s64 %rd6, %rd5, %rd3;
    ld.global.f32 %f6, [%rd6];
    add.s64 %rd6, %rd5, %rd3;
    ld.global.f32 %f7, [%rd6];
    add.rn.f32 %f8, %f2, %f3;
    add.rn.f32 %f8, %f8, %f4;
    add.rn.f32 %f8, %f8, %f5;
    add.rn.f32 %f8, %f8, %f6;
    add.rn.f32 %f8, %f8, %f7;
    ld.param.f32 %f9, [c0];
    ld.param.f32 %f10, [c1];
    mul.rn.f32 %f11, %f8, %f10;
    fma.rn.f32 %f11, %f1, %f9, %f11;
    ld.param.u64 %rd7, [output];
    add.s64 %rd8, %rd7, %rd1;
    st.global.f32 [%rd8], %f11;
DONE:
    ret;
}
";

#[test]
fn seven_point_stencil_on_64_cubed_runs_quickly() {
    let module = parse(STENCIL_3D);
    let n = 64usize;
    let input = random_f32s(7, n * n * n);
    let (c0, c1) = (-0.4f32, 0.1f32);
    let mut memory = Memory::new();
    let pin = memory.alloc_f32s(&input);
    let pout = memory.alloc(n * n * n * 4);
    let params = [
        ParamValue::U64(pin),
        ParamValue::U64(pout),
        ParamValue::U32(n as u32),
        ParamValue::F32(c0),
        ParamValue::F32(c1),
    ];
    let start = Instant::now();
    let stats: LaunchStats = launch(
        &module,
        "seven_point",
        [2, 16, 64],
        [32, 4, 1],
        &params,
        &mut memory,
    )
    .unwrap();
    let elapsed = start.elapsed();
    println!(
        "64^3 7-point stencil: {} instructions in {elapsed:?}",
        stats.instructions
    );
    let out = memory.read_f32s(pout, n * n * n).unwrap();
    let at = |x: usize, y: usize, z: usize| input[(z * n + y) * n + x];
    for z in 0..n {
        for y in 0..n {
            for x in 0..n {
                let got = out[(z * n + y) * n + x];
                let interior =
                    (1..n - 1).contains(&x) && (1..n - 1).contains(&y) && (1..n - 1).contains(&z);
                let expected = if interior {
                    let sum = at(x - 1, y, z)
                        + at(x + 1, y, z)
                        + at(x, y - 1, z)
                        + at(x, y + 1, z)
                        + at(x, y, z - 1)
                        + at(x, y, z + 1);
                    at(x, y, z).mul_add(c0, sum * c1)
                } else {
                    0.0
                };
                assert_eq!(got, expected, "point ({x},{y},{z})");
            }
        }
    }
    assert_eq!(stats.global_stores, 62 * 62 * 62);
    assert_eq!(stats.threads, 64 * 64 * 64);
}

/// Each thread writes its value to shared memory and reads its *left* neighbour's, with no
/// `bar.sync` in between (the planted race): in ascending order the neighbour has always
/// written first, so only another order shows the race.
const LEFT_EXCHANGE_WITHOUT_BARRIER: &str = "
.visible .entry left(.param .u64 data)
{
    .shared .align 8 .b8 tile[1024];
    .reg .pred %p<2>;
    .reg .b32 %r<4>;
    .reg .b64 %rd<8>;
    .reg .f64 %fd<3>;
    mov.u32 %r1, %tid.x;
    ld.param.u64 %rd1, [data];
    mul.wide.u32 %rd2, %r1, 8;
    add.s64 %rd3, %rd1, %rd2;
    ld.global.f64 %fd1, [%rd3];
    mov.u64 %rd4, tile;
    add.s64 %rd5, %rd4, %rd2;
    st.shared.f64 [%rd5], %fd1;
    setp.eq.u32 %p1, %r1, 0;
    @%p1 bra DONE;
    sub.s32 %r2, %r1, 1;
    mul.wide.u32 %rd6, %r2, 8;
    add.s64 %rd7, %rd4, %rd6;
    ld.shared.f64 %fd2, [%rd7];
    st.global.f64 [%rd3], %fd2;
DONE:
    ret;
}
";

#[test]
fn a_missing_barrier_that_ascending_order_hides_shows_in_other_orders() {
    use super::super::{LaunchOptions, Order, launch_with_options};
    let module = parse(LEFT_EXCHANGE_WITHOUT_BARRIER);
    let data = random_f64s(6, 128);
    let run = |threads: Order, blocks: Order| {
        let mut memory = Memory::new();
        let address = memory.alloc_f64s(&data);
        launch_with_options(
            &module,
            "left",
            [1, 1, 1],
            [128, 1, 1],
            &[ParamValue::U64(address)],
            &mut memory,
            LaunchOptions {
                threads,
                blocks,
                ..LaunchOptions::default()
            },
        )
        .unwrap();
        memory.read_f64s(address, 128).unwrap()
    };
    let ascending = run(Order::Ascending, Order::Ascending);
    // Ascending: every neighbour wrote before it was read, so the race is invisible.
    assert!((1..128).all(|i| ascending[i] == data[i - 1]));
    let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
    for order in [Order::Descending, Order::Shuffled(7), Order::Shuffled(8)] {
        let other = run(order, Order::Shuffled(3));
        assert_ne!(bits(&other), bits(&ascending), "{order:?} shows the race");
    }
    // The same kernel with the barrier (the neighbour exchange above) agrees in every order.
    let module = parse(&neighbour_exchange(128, 128));
    let mut results = Vec::new();
    for order in [Order::Ascending, Order::Descending, Order::Shuffled(9)] {
        let mut memory = Memory::new();
        let address = memory.alloc_f64s(&data);
        launch_with_options(
            &module,
            "exchange",
            [1, 1, 1],
            [128, 1, 1],
            &[ParamValue::U64(address)],
            &mut memory,
            LaunchOptions {
                threads: order,
                ..LaunchOptions::default()
            },
        )
        .unwrap();
        results.push(bits(&memory.read_f64s(address, 128).unwrap()));
    }
    assert!(results.windows(2).all(|w| w[0] == w[1]));
}
