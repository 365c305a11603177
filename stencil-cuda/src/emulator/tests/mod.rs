//! Emulator tests: hand-written PTX programs whose results are checked against values the tests
//! compute themselves (instruction families, whole kernels, barriers, and every error path).
//!
//! [`map3`] runs one instruction sequence per element of three random input arrays, so each
//! instruction family is tested on many values with one small kernel.

mod arithmetic;
mod errors;
mod float;
mod kernels;

use super::{Memory, Module, ParamValue, launch};

/// The module header every test kernel starts with.
pub(super) const HEADER: &str = ".version 8.0\n.target sm_80\n.address_size 64\n";

/// The memory access type used to move a value of register type `ty`.
fn memory_type(ty: &str) -> (&'static str, usize) {
    match ty {
        "f32" => ("f32", 4),
        "f64" => ("f64", 8),
        "b32" | "u32" | "s32" => ("u32", 4),
        _ => ("u64", 8),
    }
}

fn store_bits(memory: &mut Memory, values: &[u64], size: usize) -> u64 {
    let bytes: Vec<u8> = values
        .iter()
        .flat_map(|v| v.to_le_bytes()[..size].to_vec())
        .collect();
    let address = memory.alloc(bytes.len());
    memory.write(address, &bytes).unwrap();
    address
}

/// Runs `body` once per element `i`: registers `%a %b %c` (type `in_ty`) hold `a[i] b[i] c[i]`,
/// the body writes `%o` (type `out_ty`), which is stored to `out[i]`. Scratch registers: `%p %q`
/// (pred), `%w` (b32), `%wd` (b64), `%wf` (f32), `%wfd` (f64). Values are bit patterns (32-bit
/// types in the low bits); the result is returned the same way.
pub(super) fn map3(
    in_ty: &str,
    out_ty: &str,
    body: &str,
    a: &[u64],
    b: &[u64],
    c: &[u64],
) -> Vec<u64> {
    let (in_memory, in_size) = memory_type(in_ty);
    let (out_memory, out_size) = memory_type(out_ty);
    let ptx = format!(
        "{HEADER}
.visible .entry map3(.param .u64 pa, .param .u64 pb, .param .u64 pc, .param .u64 po, .param .u32 n)
{{
    .reg .pred %guard, %p, %q;
    .reg .b32 %i, %n, %ntid, %ctaid, %w;
    .reg .b64 %offset_in, %offset_out, %addr, %base, %wd;
    .reg .f32 %wf;
    .reg .f64 %wfd;
    .reg .{in_ty} %a, %b, %c;
    .reg .{out_ty} %o;
    mov.u32 %i, %tid.x;
    mov.u32 %ntid, %ntid.x;
    mov.u32 %ctaid, %ctaid.x;
    mad.lo.s32 %i, %ctaid, %ntid, %i;
    ld.param.u32 %n, [n];
    setp.ge.u32 %guard, %i, %n;
    @%guard bra DONE;
    mul.wide.u32 %offset_in, %i, {in_size};
    mul.wide.u32 %offset_out, %i, {out_size};
    ld.param.u64 %base, [pa];
    add.s64 %addr, %base, %offset_in;
    ld.global.{in_memory} %a, [%addr];
    ld.param.u64 %base, [pb];
    add.s64 %addr, %base, %offset_in;
    ld.global.{in_memory} %b, [%addr];
    ld.param.u64 %base, [pc];
    add.s64 %addr, %base, %offset_in;
    ld.global.{in_memory} %c, [%addr];
{body}
    ld.param.u64 %base, [po];
    add.s64 %addr, %base, %offset_out;
    st.global.{out_memory} [%addr], %o;
DONE:
    ret;
}}
"
    );
    let module = Module::parse(&ptx).unwrap_or_else(|e| panic!("{e}\n{ptx}"));
    let n = a.len();
    assert!(b.len() == n && c.len() == n);
    let mut memory = Memory::new();
    let pa = store_bits(&mut memory, a, in_size);
    let pb = store_bits(&mut memory, b, in_size);
    let pc = store_bits(&mut memory, c, in_size);
    let po = memory.alloc(n * out_size);
    let blocks = (n as u32).div_ceil(64);
    launch(
        &module,
        "map3",
        [blocks, 1, 1],
        [64, 1, 1],
        &[
            ParamValue::U64(pa),
            ParamValue::U64(pb),
            ParamValue::U64(pc),
            ParamValue::U64(po),
            ParamValue::U32(n as u32),
        ],
        &mut memory,
    )
    .unwrap_or_else(|e| panic!("{e}"));
    memory
        .read(po, n * out_size)
        .unwrap()
        .chunks_exact(out_size)
        .map(super::memory::read_le)
        .collect()
}

/// Bits of f32 values, for [`map3`].
pub(super) fn f32_bits(values: &[f32]) -> Vec<u64> {
    values.iter().map(|v| u64::from(v.to_bits())).collect()
}

/// Bits of f64 values, for [`map3`].
pub(super) fn f64_bits(values: &[f64]) -> Vec<u64> {
    values.iter().map(|v| v.to_bits()).collect()
}

/// Checks that two float results agree bit for bit, or are both NaN.
pub(super) fn assert_same_f32(actual: u64, expected: f32, what: &str) {
    let actual = f32::from_bits(actual as u32);
    assert!(
        actual.to_bits() == expected.to_bits() || (actual.is_nan() && expected.is_nan()),
        "{what}: got {actual:e}, expected {expected:e}"
    );
}

/// Checks that two float results agree bit for bit, or are both NaN.
pub(super) fn assert_same_f64(actual: u64, expected: f64, what: &str) {
    let actual = f64::from_bits(actual);
    assert!(
        actual.to_bits() == expected.to_bits() || (actual.is_nan() && expected.is_nan()),
        "{what}: got {actual:e}, expected {expected:e}"
    );
}
