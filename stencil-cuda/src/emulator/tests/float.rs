//! Float instruction families: f32 arithmetic must round in f32 (checked against the f64 result
//! rounded once to f32, which is exact for +, -, *, / and sqrt of f32 operands), f64 arithmetic,
//! fused multiply-add, NaN-ignoring min/max, every setp comparison on NaN, conversions, and the
//! approximate functions within a tolerance.

use std::cmp::Ordering::{Equal, Greater, Less};

use stencil_core::rng::Rng;

use super::{assert_same_f32, assert_same_f64, f32_bits, f64_bits, map3};

/// Random f32 values of mixed sign and magnitude, with zeros, infinities and NaN first.
fn floats(rng: &mut Rng) -> Vec<f32> {
    let mut values = vec![
        0.0,
        -0.0,
        f32::INFINITY,
        f32::NEG_INFINITY,
        f32::NAN,
        1.0,
        -3.5,
    ];
    values.extend((values.len()..160).map(|_| {
        let magnitude = rng.uniform(-30.0, 30.0).exp2();
        (rng.uniform(-1.0, 1.0) * magnitude) as f32
    }));
    values
}

fn doubles(rng: &mut Rng) -> Vec<f64> {
    let mut values = vec![0.0, -0.0, f64::INFINITY, f64::NAN, 1.0, -3.5];
    values.extend(
        (values.len()..160).map(|_| rng.uniform(-1.0, 1.0) * rng.uniform(-60.0, 60.0).exp2()),
    );
    values
}

fn check_f32(body: &str, expect: impl Fn(f32, f32, f32) -> f32) {
    let mut rng = Rng::new(body.len() as u64 + 1);
    let (a, b) = (floats(&mut rng), floats(&mut rng));
    let mut c = floats(&mut rng);
    c.reverse();
    let out = map3(
        "f32",
        "f32",
        body,
        &f32_bits(&a),
        &f32_bits(&b),
        &f32_bits(&c),
    );
    for i in 0..a.len() {
        let what = format!("{body} a={:e} b={:e} c={:e}", a[i], b[i], c[i]);
        assert_same_f32(out[i], expect(a[i], b[i], c[i]), &what);
    }
}

fn check_f64(body: &str, expect: impl Fn(f64, f64, f64) -> f64) {
    let mut rng = Rng::new(body.len() as u64 + 2);
    let (a, b) = (doubles(&mut rng), doubles(&mut rng));
    let mut c = doubles(&mut rng);
    c.reverse();
    let out = map3(
        "f64",
        "f64",
        body,
        &f64_bits(&a),
        &f64_bits(&b),
        &f64_bits(&c),
    );
    for i in 0..a.len() {
        let what = format!("{body} a={:e} b={:e} c={:e}", a[i], b[i], c[i]);
        assert_same_f64(out[i], expect(a[i], b[i], c[i]), &what);
    }
}

/// A comparison's expected truth value.
type Comparison = fn(f64, f64) -> bool;
/// An exact function the approximate instructions are compared with.
type Function = fn(f64) -> f64;

fn wide(x: f32) -> f64 {
    f64::from(x)
}

/// IEEE minNum written out: NaN ignored, -0 below +0.
fn min_num(a: f64, b: f64) -> f64 {
    if a.is_nan() {
        b
    } else if b.is_nan() || a < b || (a == b && a.is_sign_negative()) {
        a
    } else {
        b
    }
}

fn max_num(a: f64, b: f64) -> f64 {
    -min_num(-a, -b)
}

#[test]
fn f32_arithmetic_rounds_in_f32() {
    check_f32("add.f32 %o, %a, %b;", |a, b, _| (wide(a) + wide(b)) as f32);
    check_f32("add.rn.f32 %o, %a, %b;", |a, b, _| {
        (wide(a) + wide(b)) as f32
    });
    check_f32("sub.rn.f32 %o, %a, %b;", |a, b, _| {
        (wide(a) - wide(b)) as f32
    });
    check_f32("mul.rn.f32 %o, %a, %b;", |a, b, _| {
        (wide(a) * wide(b)) as f32
    });
    check_f32("div.rn.f32 %o, %a, %b;", |a, b, _| {
        (wide(a) / wide(b)) as f32
    });
    check_f32("sqrt.rn.f32 %o, %a;", |a, _, _| wide(a).sqrt() as f32);
    check_f32("rcp.rn.f32 %o, %a;", |a, _, _| (1.0 / wide(a)) as f32);
    check_f32("neg.f32 %o, %a;", |a, _, _| (-wide(a)) as f32);
    check_f32("abs.f32 %o, %a;", |a, _, _| wide(a).abs() as f32);
    check_f32("cvt.rmi.f32.f32 %o, %a;", |a, _, _| wide(a).floor() as f32);
    check_f32("cvt.rpi.f32.f32 %o, %a;", |a, _, _| wide(a).ceil() as f32);
    check_f32("min.f32 %o, %a, %b;", |a, b, _| {
        min_num(wide(a), wide(b)) as f32
    });
    check_f32("max.f32 %o, %a, %b;", |a, b, _| {
        max_num(wide(a), wide(b)) as f32
    });
    check_f32("add.f32 %o, %a, 0f3F800000;", |a, _, _| {
        (wide(a) + 1.0) as f32
    });
}

#[test]
fn f32_fma_is_fused() {
    // The exact product of two f32 values fits an f64, so a*b+c is rounded once to f64 and then
    // to f32; double rounding could differ only on exact ties, which random data does not hit.
    check_f32("fma.rn.f32 %o, %a, %b, %c;", |a, b, c| {
        (wide(a) * wide(b) + wide(c)) as f32
    });
    // A case where fusing matters: (1+e)(1-e) - 1 = -e^2, which an unfused f32 product loses.
    let e = f32::EPSILON;
    let fused = map3(
        "f32",
        "f32",
        "fma.rn.f32 %o, %a, %b, %c;",
        &f32_bits(&[1.0 + e]),
        &f32_bits(&[1.0 - e]),
        &f32_bits(&[-1.0]),
    );
    assert_same_f32(fused[0], -(e * e), "fma keeps the low product bits");
}

#[test]
fn f64_arithmetic() {
    check_f64("add.rn.f64 %o, %a, %b;", |a, b, _| a + b);
    check_f64("sub.f64 %o, %a, %b;", |a, b, _| a - b);
    check_f64("mul.rn.f64 %o, %a, %b;", |a, b, _| a * b);
    check_f64("div.rn.f64 %o, %a, %b;", |a, b, _| a / b);
    check_f64("fma.rn.f64 %o, %a, %b, %c;", |a, b, c| a.mul_add(b, c));
    check_f64("sqrt.rn.f64 %o, %a;", |a, _, _| a.sqrt());
    check_f64("rcp.rn.f64 %o, %a;", |a, _, _| 1.0 / a);
    check_f64("neg.f64 %o, %a;", |a, _, _| -a);
    check_f64("abs.f64 %o, %a;", |a, _, _| a.abs());
    check_f64("cvt.rmi.f64.f64 %o, %a;", |a, _, _| a.floor());
    check_f64("cvt.rpi.f64.f64 %o, %a;", |a, _, _| a.ceil());
    check_f64("min.f64 %o, %a, %b;", min_num_3);
    check_f64("max.f64 %o, %a, %b;", |a, b, _| max_num(a, b));
    check_f64(
        "mov.f64 %wfd, 0d4000000000000000;\n mul.rn.f64 %o, %a, %wfd;",
        |a, _, _| a * 2.0,
    );
    // A float immediate written in f32 hex for an f64 instruction is widened exactly.
    check_f64("add.f64 %o, %a, 0f3FC00000;", |a, _, _| a + 1.5);
}

fn min_num_3(a: f64, b: f64, _: f64) -> f64 {
    min_num(a, b)
}

#[test]
fn min_max_ignore_nan_and_order_zeros() {
    let a = f32_bits(&[f32::NAN, 2.0, f32::NAN, -0.0, 0.0]);
    let b = f32_bits(&[1.0, f32::NAN, f32::NAN, 0.0, -0.0]);
    let min = map3("f32", "f32", "min.f32 %o, %a, %b;", &a, &b, &a);
    let max = map3("f32", "f32", "max.f32 %o, %a, %b;", &a, &b, &a);
    assert_same_f32(min[0], 1.0, "min(NaN, 1)");
    assert_same_f32(max[1], 2.0, "max(2, NaN)");
    assert!(f32::from_bits(min[2] as u32).is_nan());
    assert_eq!(min[3] as u32, (-0.0f32).to_bits());
    assert_eq!(min[4] as u32, (-0.0f32).to_bits());
    assert_eq!(max[3] as u32, 0.0f32.to_bits());
}

#[test]
fn every_float_comparison_on_nan_and_numbers() {
    let comparisons: [(&str, Comparison); 14] = [
        ("eq", |a, b| a == b),
        ("ne", |a, b| !a.is_nan() && !b.is_nan() && a != b),
        ("lt", |a, b| a < b),
        ("le", |a, b| a <= b),
        ("gt", |a, b| a > b),
        ("ge", |a, b| a >= b),
        ("equ", |a, b| {
            !matches!(a.partial_cmp(&b), Some(Less | Greater))
        }),
        ("neu", |a, b| a != b),
        ("ltu", |a, b| {
            !matches!(a.partial_cmp(&b), Some(Greater | Equal))
        }),
        ("leu", |a, b| !matches!(a.partial_cmp(&b), Some(Greater))),
        ("gtu", |a, b| {
            !matches!(a.partial_cmp(&b), Some(Less | Equal))
        }),
        ("geu", |a, b| !matches!(a.partial_cmp(&b), Some(Less))),
        ("num", |a, b| a == a && b == b),
        ("nan", |a, b| a != a || b != b),
    ];
    let values = [f64::NAN, -1.0, 0.0, 2.5, f64::INFINITY];
    let pairs: Vec<(f64, f64)> = values
        .iter()
        .flat_map(|&a| values.iter().map(move |&b| (a, b)))
        .collect();
    let a: Vec<f64> = pairs.iter().map(|p| p.0).collect();
    let b: Vec<f64> = pairs.iter().map(|p| p.1).collect();
    for (name, expect) in comparisons {
        let body32 = format!("setp.{name}.f32 %p, %a, %b;\n selp.u32 %o, 1, 0, %p;");
        let narrow: Vec<f32> = a.iter().map(|&x| x as f32).collect();
        let narrow_b: Vec<f32> = b.iter().map(|&x| x as f32).collect();
        let out32 = map3(
            "f32",
            "u32",
            &body32,
            &f32_bits(&narrow),
            &f32_bits(&narrow_b),
            &f32_bits(&narrow),
        );
        let body64 = format!("setp.{name}.f64 %p, %a, %b;\n selp.u32 %o, 1, 0, %p;");
        let out64 = map3(
            "f64",
            "u32",
            &body64,
            &f64_bits(&a),
            &f64_bits(&b),
            &f64_bits(&a),
        );
        for i in 0..a.len() {
            let expected = u64::from(expect(a[i], b[i]));
            assert_eq!(out32[i], expected, "setp.{name}.f32 {} {}", a[i], b[i]);
            assert_eq!(out64[i], expected, "setp.{name}.f64 {} {}", a[i], b[i]);
        }
    }
}

#[test]
fn conversions() {
    let values = [
        0.5,
        -0.5,
        1.5,
        -2.5,
        3.7,
        -3.7,
        1e10,
        -1e10,
        3e9,
        f64::NAN,
        0.1,
        16777217.0,
    ];
    let v = f64_bits(&values);
    let narrowed = map3("f64", "f32", "cvt.rn.f32.f64 %o, %a;", &v, &v, &v);
    let truncated32 = map3("f64", "s32", "cvt.rzi.s32.f64 %o, %a;", &v, &v, &v);
    let truncated64 = map3("f64", "s64", "cvt.rzi.s64.f64 %o, %a;", &v, &v, &v);
    let floored = map3(
        "f64",
        "s32",
        "cvt.rmi.f64.f64 %wfd, %a;\n cvt.rzi.s32.f64 %o, %wfd;",
        &v,
        &v,
        &v,
    );
    for (i, &x) in values.iter().enumerate() {
        assert_same_f32(narrowed[i], x as f32, "cvt.rn.f32.f64");
        // Truncation toward zero, saturating, NaN to 0.
        let expected32 = if x.is_nan() {
            0
        } else {
            x.trunc().clamp(-2147483648.0, 2147483647.0) as i64
        };
        assert_eq!(
            truncated32[i] as u32 as i32 as i64, expected32,
            "cvt.rzi.s32.f64 {x}"
        );
        let expected64 = if x.is_nan() { 0 } else { x.trunc() as i64 };
        assert_eq!(truncated64[i] as i64, expected64, "cvt.rzi.s64.f64 {x}");
        if x.abs() < 1e9 {
            assert_eq!(floored[i] as u32 as i32, x.floor() as i32, "floor {x}");
        }
    }
    let floats = f32_bits(&[0.1, -7.9, 1e-3, 3.4e38]);
    let widened = map3(
        "f32",
        "f64",
        "cvt.f64.f32 %o, %a;",
        &floats,
        &floats,
        &floats,
    );
    let to_int = map3(
        "f32",
        "s32",
        "cvt.rzi.s32.f32 %o, %a;",
        &floats,
        &floats,
        &floats,
    );
    for (i, x) in [0.1f32, -7.9, 1e-3, 3.4e38].into_iter().enumerate() {
        assert_same_f64(widened[i], f64::from(x), "cvt.f64.f32");
        assert_eq!(
            to_int[i] as u32 as i32,
            if x > 2e9 { i32::MAX } else { x as i32 }
        );
    }
    // Integers to floats round to nearest even: 2^24 + 1 is not an f32.
    let ints: Vec<u64> = [16777217u64, 0xFFFF_FFFF, 7].to_vec();
    let from_s32 = map3("b32", "f32", "cvt.rn.f32.s32 %o, %a;", &ints, &ints, &ints);
    let from_u32 = map3("b32", "f64", "cvt.rn.f64.u32 %o, %a;", &ints, &ints, &ints);
    let from_u32_f32 = map3("b32", "f32", "cvt.rn.f32.u32 %o, %a;", &ints, &ints, &ints);
    assert_same_f32(from_s32[0], 16777216.0, "cvt.rn.f32.s32 2^24+1");
    assert_same_f32(from_s32[1], -1.0, "cvt.rn.f32.s32 -1");
    assert_same_f64(from_u32[1], 4294967295.0, "cvt.rn.f64.u32");
    assert_same_f32(from_u32_f32[2], 7.0, "cvt.rn.f32.u32");
    let longs: Vec<u64> = vec![(1u64 << 53) + 1, (-5i64) as u64];
    let from_s64 = map3(
        "b64",
        "f64",
        "cvt.rn.f64.s64 %o, %a;",
        &longs,
        &longs,
        &longs,
    );
    assert_same_f64(from_s64[0], 9007199254740992.0, "cvt.rn.f64.s64 2^53+1");
    assert_same_f64(from_s64[1], -5.0, "cvt.rn.f64.s64 -5");
}

#[test]
fn approximate_functions_are_close() {
    let mut rng = Rng::new(11);
    let inputs: Vec<f32> = (0..100).map(|_| rng.uniform(0.01, 8.0) as f32).collect();
    let bits = f32_bits(&inputs);
    let cases: [(&str, Function); 4] = [
        ("ex2.approx.f32 %o, %a;", f64::exp2),
        ("lg2.approx.f32 %o, %a;", f64::log2),
        ("sin.approx.f32 %o, %a;", f64::sin),
        ("cos.approx.f32 %o, %a;", f64::cos),
    ];
    for (body, exact) in cases {
        let out = map3("f32", "f32", body, &bits, &bits, &bits);
        for (i, &x) in inputs.iter().enumerate() {
            let got = f64::from(f32::from_bits(out[i] as u32));
            let want = exact(f64::from(x));
            assert!(
                (got - want).abs() <= 1e-6 * want.abs().max(1.0),
                "{body} {x}: {got} vs {want}"
            );
        }
    }
}

#[test]
fn round_to_nearest_integer_ties_to_even() {
    // (argument, expected), written out: ties go to the even neighbour, the sign of zero and
    // of the argument is kept, integers, infinities and NaN pass through.
    let cases = [
        (0.5, 0.0),
        (1.5, 2.0),
        (2.5, 2.0),
        (-0.5, -0.0),
        (-2.5, -2.0),
        (-3.5, -4.0),
        (3.7, 4.0),
        (-3.2, -3.0),
        (0.49999999999999994, 0.0),
        (4503599627370497.0, 4503599627370497.0),
        (1e300, 1e300),
        (f64::NEG_INFINITY, f64::NEG_INFINITY),
        (f64::NAN, f64::NAN),
    ];
    let v = f64_bits(&cases.map(|c| c.0));
    let out = map3("f64", "f64", "cvt.rni.f64.f64 %o, %a;", &v, &v, &v);
    for (i, &(x, want)) in cases.iter().enumerate() {
        assert_same_f64(out[i], want, &format!("cvt.rni.f64.f64 {x:e}"));
    }
    let narrow = cases.map(|c| (c.0 as f32, c.1 as f32));
    let v = f32_bits(&narrow.map(|c| c.0));
    let out = map3("f32", "f32", "cvt.rni.f32.f32 %o, %a;", &v, &v, &v);
    for (i, &(x, want)) in narrow.iter().enumerate() {
        // 0.49999999999999994 rounds up to 0.5 in f32, a tie that goes to 0.
        assert_same_f32(out[i], want, &format!("cvt.rni.f32.f32 {x:e}"));
    }
}
