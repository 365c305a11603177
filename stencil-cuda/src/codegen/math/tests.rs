//! The math routines run in the PTX emulator over random arguments (across each function's
//! range, sign and exponent) and the special values, compared with Rust's std; the error is
//! measured in ulp of the std result and asserted against the bounds the module documents.
//! `accuracy_report` prints the measured maxima.

use stencil_core::rng::Rng;

use super::{Function, emit};
use crate::emulator::{self, Memory, ParamValue};
use crate::ptx::{
    Address, Axis, EntryBuilder, Inst, IntOp, Module, Operand, Param, RegClass, Space, Special,
    Type,
};

/// Threads per block of the test launches.
const BLOCK: usize = 128;

/// A PTX module whose thread `i` computes `function(in0[i], in1[i])` into `out[i]`.
fn test_module(function: Function, ty: Type, n_args: usize) -> Module {
    let mut b = EntryBuilder::new("math_test");
    let params: Vec<usize> = (0..=n_args)
        .map(|i| {
            b.param(Param {
                name: format!("math_test_param_{i}"),
                ty: Type::U64,
            })
        })
        .collect();
    let tid = b.reg(RegClass::B32);
    b.push(Inst::Mov {
        ty: Type::U32,
        dst: tid,
        src: Operand::Special(Special::Tid(Axis::X)),
    });
    let ctaid = b.reg(RegClass::B32);
    b.push(Inst::Mov {
        ty: Type::U32,
        dst: ctaid,
        src: Operand::Special(Special::Ctaid(Axis::X)),
    });
    let index = b.reg(RegClass::B32);
    b.push(Inst::MadLo {
        ty: Type::U32,
        dst: index,
        a: ctaid.into(),
        b: Operand::Int(BLOCK as i64),
        c: tid.into(),
    });
    let esz = if ty == Type::F32 { 4 } else { 8 };
    let offset = b.reg(RegClass::B64);
    b.push(Inst::MulWide {
        ty: Type::U32,
        dst: offset,
        a: index.into(),
        b: Operand::Int(esz),
    });
    let class = if ty == Type::F32 {
        RegClass::F32
    } else {
        RegClass::F64
    };
    let mut addresses = Vec::new();
    for &p in &params {
        let raw = b.reg(RegClass::B64);
        b.push(Inst::LdParam {
            ty: Type::U64,
            dst: raw,
            param: p,
        });
        let global = b.reg(RegClass::B64);
        b.push(Inst::CvtaGlobal {
            dst: global,
            src: raw,
        });
        let address = b.reg(RegClass::B64);
        b.push(Inst::Int {
            op: IntOp::Add,
            ty: Type::U64,
            dst: address,
            a: global.into(),
            b: offset.into(),
        });
        addresses.push(address);
    }
    let mut args = Vec::new();
    for &base in &addresses[..n_args] {
        let dst = b.reg(class);
        b.push(Inst::Ld {
            space: Space::Global,
            ty,
            dst,
            addr: Address { base, offset: 0 },
        });
        args.push(dst);
    }
    let result = emit(&mut b, function, ty, &args);
    b.push(Inst::St {
        space: Space::Global,
        ty,
        addr: Address {
            base: addresses[n_args],
            offset: 0,
        },
        src: result,
    });
    b.push(Inst::Ret);
    Module {
        version: (8, 0),
        target: 80,
        entries: vec![b.finish()],
    }
}

/// Runs `function` over the argument columns (each of the same length) in the emulator, in
/// f64 (`f32 == false`) or f32 (arguments rounded to f32, results widened).
fn run(function: Function, f32: bool, columns: &[Vec<f64>]) -> Vec<f64> {
    let n = columns[0].len();
    let padded = n.div_ceil(BLOCK) * BLOCK;
    let ty = if f32 { Type::F32 } else { Type::F64 };
    let text = test_module(function, ty, columns.len()).to_string();
    let module = emulator::Module::parse(&text).unwrap_or_else(|e| panic!("{e}\n{text}"));
    let mut memory = Memory::new();
    let mut params = Vec::new();
    for column in columns.iter().chain([&vec![0.0; n]]) {
        let mut values = column.clone();
        values.resize(padded, 1.0);
        let address = if f32 {
            let narrow: Vec<f32> = values.iter().map(|&v| v as f32).collect();
            memory.alloc_f32s(&narrow)
        } else {
            memory.alloc_f64s(&values)
        };
        params.push(ParamValue::U64(address));
    }
    let grid = [(padded / BLOCK) as u32, 1, 1];
    emulator::launch(
        &module,
        "math_test",
        grid,
        [BLOCK as u32, 1, 1],
        &params,
        &mut memory,
    )
    .unwrap_or_else(|e| panic!("{function:?}: {e}"));
    let out = match params[columns.len()] {
        ParamValue::U64(address) => address,
        _ => unreachable!("outputs are pointers"),
    };
    if f32 {
        let values = memory.read_f32s(out, n).expect("read results");
        values.into_iter().map(f64::from).collect()
    } else {
        memory.read_f64s(out, n).expect("read results")
    }
}

/// Distance in ulp between two f64 (0 for two NaN, `u64::MAX` for NaN against a number).
fn ulp_f64(a: f64, b: f64) -> u64 {
    if a.is_nan() || b.is_nan() {
        return if a.is_nan() && b.is_nan() {
            0
        } else {
            u64::MAX
        };
    }
    let key = |x: f64| {
        let bits = x.to_bits() as i64;
        if bits < 0 { i64::MIN - bits } else { bits }
    };
    key(a).abs_diff(key(b))
}

/// Distance in ulp between two f32.
fn ulp_f32(a: f32, b: f32) -> u64 {
    if a.is_nan() || b.is_nan() {
        return if a.is_nan() && b.is_nan() {
            0
        } else {
            u64::MAX
        };
    }
    let key = |x: f32| {
        let bits = x.to_bits() as i32;
        i64::from(if bits < 0 { i32::MIN - bits } else { bits })
    };
    key(a).abs_diff(key(b))
}

/// The reference: Rust's std in f64 or f32.
fn reference(function: Function, f32: bool, args: &[f64]) -> f64 {
    if f32 {
        let x = args[0] as f32;
        f64::from(match function {
            Function::Exp => x.exp(),
            Function::Ln => x.ln(),
            Function::Sin => x.sin(),
            Function::Cos => x.cos(),
            Function::Tan => x.tan(),
            Function::Tanh => x.tanh(),
            Function::Pow => x.powf(args[1] as f32),
        })
    } else {
        let x = args[0];
        match function {
            Function::Exp => x.exp(),
            Function::Ln => x.ln(),
            Function::Sin => x.sin(),
            Function::Cos => x.cos(),
            Function::Tan => x.tan(),
            Function::Tanh => x.tanh(),
            Function::Pow => x.powf(args[1]),
        }
    }
}

/// The largest error in ulp of `function` over the argument columns, and its arguments.
fn max_error(function: Function, f32: bool, columns: &[Vec<f64>]) -> (u64, Vec<f64>, f64, f64) {
    let got = run(function, f32, columns);
    let mut worst = (0, vec![], 0.0, 0.0);
    for (i, &g) in got.iter().enumerate() {
        let args: Vec<f64> = columns.iter().map(|c| c[i]).collect();
        let want = reference(function, f32, &args);
        let err = if f32 {
            ulp_f32(g as f32, want as f32)
        } else {
            ulp_f64(g, want)
        };
        if err > worst.0 || worst.1.is_empty() {
            worst = (err, args, g, want);
        }
    }
    worst
}

/// A random f64 with a uniform exponent in `[lo, hi]` and a random sign.
fn log_uniform(rng: &mut Rng, lo: i32, hi: i32) -> f64 {
    let e = rng.range(i64::from(lo), i64::from(hi) + 1) as i32;
    let m = 1.0 + rng.next_f64();
    let sign = if rng.chance(0.5) { -1.0 } else { 1.0 };
    sign * m * 2f64.powi(e)
}

/// The documented accurate range of `sin cos tan`: `|x| <= 2^44`.
const TRIG_LIMIT: f64 = 17_592_186_044_416.0;

/// Special values every unary function is checked on.
const SPECIALS: [f64; 12] = [
    0.0,
    -0.0,
    1.0,
    -1.0,
    0.5,
    f64::INFINITY,
    f64::NEG_INFINITY,
    f64::NAN,
    f64::MIN_POSITIVE,
    5e-324,
    f64::MAX,
    -f64::MAX,
];

/// Arguments of a unary function: the specials, then `count` random ones per range.
fn unary_arguments(function: Function, seed: u64, count: usize) -> Vec<f64> {
    let mut rng = Rng::new(seed);
    let mut xs = SPECIALS.to_vec();
    for _ in 0..count {
        let x = match function {
            Function::Exp => rng.uniform(-746.0, 710.0),
            Function::Ln => f64::from_bits(rng.next_u64() >> 1),
            Function::Sin | Function::Cos | Function::Tan => log_uniform(&mut rng, -30, 43),
            Function::Tanh => log_uniform(&mut rng, -30, 5),
            Function::Pow => unreachable!("pow is binary"),
        };
        let near = match function {
            Function::Exp => rng.uniform(-2.0, 2.0),
            Function::Ln => 1.0 + log_uniform(&mut rng, -40, -1),
            Function::Sin | Function::Cos | Function::Tan => {
                // Near multiples of pi/2, where cancellation is largest.
                let k = rng.range(-1_000_000, 1_000_000) as f64;
                k * std::f64::consts::FRAC_PI_2 + log_uniform(&mut rng, -40, -2)
            }
            Function::Tanh => rng.uniform(-1.0, 1.0),
            Function::Pow => unreachable!("pow is binary"),
        };
        xs.push(x);
        xs.push(near);
    }
    match function {
        Function::Exp => xs.extend([709.782712893384, 709.79, -745.13, -745.14, -708.4, 1e-300]),
        Function::Tanh => xs.extend([0.55, -0.55, 0.549_999_999_999_999_9, 19.0, -22.0, 1e-9]),
        Function::Sin | Function::Cos | Function::Tan => {
            xs.extend([
                std::f64::consts::FRAC_PI_2,
                std::f64::consts::PI,
                1e-300,
                1073741824.0,
                TRIG_LIMIT,
            ]);
            // The accurate range (past it: `trigonometric_functions_stay_finite_...`).
            xs.retain(|x| !x.is_finite() || x.abs() <= TRIG_LIMIT);
        }
        _ => {}
    }
    xs
}

/// Arguments of `pow`: a grid of special values, random bases and exponents of every
/// magnitude, results near overflow and underflow, and negative bases with integer exponents.
fn pow_arguments(seed: u64, count: usize) -> Vec<Vec<f64>> {
    let specials = [
        0.0,
        -0.0,
        1.0,
        -1.0,
        2.0,
        -2.0,
        0.5,
        -0.5,
        3.0,
        -3.0,
        f64::INFINITY,
        f64::NEG_INFINITY,
        f64::NAN,
        1e300,
        -1e300,
        5e-324,
    ];
    let (mut xs, mut ys) = (Vec::new(), Vec::new());
    for &x in &specials {
        for &y in &specials {
            xs.push(x);
            ys.push(y);
        }
    }
    let mut rng = Rng::new(seed);
    for _ in 0..count {
        // Any positive base and a moderate exponent.
        xs.push(log_uniform(&mut rng, -200, 200).abs());
        ys.push(rng.uniform(-3.0, 3.0));
        // Bases near 1 with large exponents: results across the whole range.
        let x = rng.uniform(0.5, 2.0);
        xs.push(x);
        ys.push(rng.uniform(-700.0, 700.0) / x.ln().abs().max(1e-3));
        // Negative bases with integer exponents (signed results).
        xs.push(-rng.uniform(0.1, 10.0));
        ys.push(rng.range(-60, 61) as f64);
    }
    vec![xs, ys]
}

/// The bound each function is held to, in ulp of std's result (f64, f32). Std is not
/// correctly rounded either: glibc's `tanh` and `tanhf` are off by up to 2 ulp where these
/// routines give the correctly rounded result (checked with mpmath at 0.4415509053819526 and
/// 0.46765452f32), hence the `tanh` bounds.
fn bound(function: Function) -> (u64, u64) {
    match function {
        Function::Exp | Function::Ln | Function::Sin | Function::Cos => (1, 1),
        Function::Tan | Function::Pow => (2, 1),
        Function::Tanh => (2, 2),
    }
}

const UNARY: [Function; 6] = [
    Function::Exp,
    Function::Ln,
    Function::Sin,
    Function::Cos,
    Function::Tan,
    Function::Tanh,
];

fn check(function: Function, f32: bool, columns: &[Vec<f64>]) -> u64 {
    let (err, args, got, want) = max_error(function, f32, columns);
    let (b64, b32) = bound(function);
    let limit = if f32 { b32 } else { b64 };
    let ty = if f32 { "f32" } else { "f64" };
    println!(
        "{function:?} {ty}: max error {err} ulp over {} arguments (worst at {args:?}: got {got:e}, std {want:e})",
        columns[0].len()
    );
    assert!(
        err <= limit,
        "{function:?} {ty}: {err} ulp at {args:?}: got {got:e} ({:#x}), std {want:e} ({:#x})",
        got.to_bits(),
        want.to_bits()
    );
    err
}

#[test]
fn accuracy_report() {
    for (i, &function) in UNARY.iter().enumerate() {
        let xs = unary_arguments(function, 0x3a7 + i as u64, 10000);
        check(function, false, std::slice::from_ref(&xs));
        check(function, true, &[xs]);
    }
    let columns = pow_arguments(0x90e, 10000);
    check(Function::Pow, false, &columns);
    check(Function::Pow, true, &columns);
}

#[test]
fn trigonometric_functions_stay_finite_past_the_accurate_range() {
    let mut rng = Rng::new(0xb16);
    let mut xs = vec![
        1e15,
        -1e15,
        1e300,
        -1e300,
        f64::MAX,
        2f64.powi(52),
        2f64.powi(60),
    ];
    xs.extend((0..2000).map(|_| log_uniform(&mut rng, 44, 1023)));
    for function in [Function::Sin, Function::Cos, Function::Tan] {
        for f32 in [false, true] {
            let got = run(function, f32, std::slice::from_ref(&xs));
            for (&x, &g) in xs.iter().zip(&got) {
                let x_in_type = if f32 { f64::from(x as f32) } else { x };
                if x_in_type.is_infinite() {
                    assert!(g.is_nan(), "{function:?}({x:e}) = {g:e}");
                    continue;
                }
                assert!(g.is_finite(), "{function:?}({x:e}) = {g:e}");
                if function != Function::Tan {
                    assert!((-1.0..=1.0).contains(&g), "{function:?}({x:e}) = {g:e}");
                }
            }
        }
    }
}
