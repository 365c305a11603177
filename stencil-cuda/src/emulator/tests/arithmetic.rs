//! Integer instruction families (wrap-around, wide products, shifts, bit operations, min/max,
//! conversions between integer widths) against expectations computed in wider Rust arithmetic.

use stencil_core::rng::Rng;

use super::map3;

const COUNT: usize = 200;

/// Random 32-bit patterns, with the edge values first.
fn words(rng: &mut Rng) -> Vec<u64> {
    let mut values = vec![0, 1, 0x7FFF_FFFF, 0x8000_0000, 0xFFFF_FFFF];
    values.extend((values.len()..COUNT).map(|_| rng.next_u64() & 0xFFFF_FFFF));
    values
}

fn doublewords(rng: &mut Rng) -> Vec<u64> {
    let mut values = vec![0, 1, i64::MAX as u64, i64::MIN as u64, u64::MAX];
    values.extend((values.len()..COUNT).map(|_| rng.next_u64()));
    values
}

fn check32(body: &str, out_ty: &str, expect: impl Fn(i64, i64, i64) -> i64) {
    let mut rng = Rng::new(body.len() as u64);
    let (a, b, c) = (words(&mut rng), words(&mut rng), words(&mut rng));
    let out = map3("b32", out_ty, body, &a, &b, &c);
    let mask = if out_ty == "b32" {
        0xFFFF_FFFF
    } else {
        u64::MAX
    };
    for i in 0..a.len() {
        // Operands as signed 64-bit values of the 32-bit patterns; the closure picks signedness.
        let (x, y, z) = (a[i] as i64, b[i] as i64, c[i] as i64);
        let expected = expect(x, y, z) as u64 & mask;
        assert_eq!(out[i], expected, "{body} with a={x:#x} b={y:#x} c={z:#x}");
    }
}

/// The expected 64-bit result for operands `a, b, c`.
type Expect64 = fn(u64, u64, u64) -> u64;

fn s32(x: i64) -> i64 {
    i64::from(x as u32 as i32)
}

#[test]
fn add_sub_mul_wrap_at_32_bits() {
    check32("add.s32 %o, %a, %b;", "b32", |a, b, _| a + b);
    check32("add.u32 %o, %a, %b;", "b32", |a, b, _| a + b);
    check32("sub.s32 %o, %a, %b;", "b32", |a, b, _| a - b);
    check32("mul.lo.s32 %o, %a, %b;", "b32", |a, b, _| s32(a) * s32(b));
    check32("mul.lo.u32 %o, %a, %b;", "b32", |a, b, _| {
        ((a as u128 * b as u128) & 0xFFFF_FFFF) as i64
    });
    check32("mad.lo.s32 %o, %a, %b, %c;", "b32", |a, b, c| {
        s32(a) * s32(b) + s32(c)
    });
    check32("neg.s32 %o, %a;", "b32", |a, _, _| -s32(a));
    check32("add.s32 %o, %a, -5;", "b32", |a, _, _| a - 5);
}

#[test]
fn wide_products_keep_every_bit() {
    check32("mul.wide.s32 %o, %a, %b;", "b64", |a, b, _| s32(a) * s32(b));
    check32("mul.wide.u32 %o, %a, %b;", "b64", |a, b, _| {
        (a as u64).wrapping_mul(b as u64) as i64
    });
    check32(
        "cvt.s64.s32 %wd, %c;\n mad.wide.s32 %o, %a, %b, %wd;",
        "b64",
        |a, b, c| s32(a) * s32(b) + s32(c),
    );
    check32(
        "cvt.u64.u32 %wd, %c;\n mad.wide.u32 %o, %a, %b, %wd;",
        "b64",
        |a, b, c| ((a as u64) * (b as u64)).wrapping_add(c as u64) as i64,
    );
}

#[test]
fn min_max_respect_signedness() {
    check32("min.s32 %o, %a, %b;", "b32", |a, b, _| s32(a).min(s32(b)));
    check32("max.s32 %o, %a, %b;", "b32", |a, b, _| s32(a).max(s32(b)));
    check32("min.u32 %o, %a, %b;", "b32", |a, b, _| a.min(b));
    check32("max.u32 %o, %a, %b;", "b32", |a, b, _| a.max(b));
}

#[test]
fn shifts_clamp_large_amounts() {
    // Shift amounts 0..=39 so that amounts past the width are exercised.
    let shifted = |body: &str, expect: fn(i64, u32) -> i64| {
        let mut rng = Rng::new(7);
        let a = words(&mut rng);
        let b: Vec<u64> = (0..a.len() as u64).map(|i| i % 40).collect();
        let out = map3("b32", "b32", body, &a, &b, &a);
        for i in 0..a.len() {
            let expected = expect(a[i] as i64, b[i] as u32) as u64 & 0xFFFF_FFFF;
            assert_eq!(out[i], expected, "{body} a={:#x} b={}", a[i], b[i]);
        }
    };
    shifted(
        "shl.b32 %o, %a, %b;",
        |a, n| if n >= 32 { 0 } else { a << n },
    );
    shifted(
        "shr.u32 %o, %a, %b;",
        |a, n| if n >= 32 { 0 } else { a >> n },
    );
    shifted(
        "shr.b32 %o, %a, %b;",
        |a, n| if n >= 32 { 0 } else { a >> n },
    );
    shifted("shr.s32 %o, %a, %b;", |a, n| s32(a) >> n.min(31));
}

#[test]
fn bit_operations() {
    check32("and.b32 %o, %a, %b;", "b32", |a, b, _| a & b);
    check32("or.b32 %o, %a, %b;", "b32", |a, b, _| a | b);
    check32("xor.b32 %o, %a, %b;", "b32", |a, b, _| a ^ b);
    check32("not.b32 %o, %a;", "b32", |a, _, _| !a);
    check32(
        "setp.lt.u32 %p, %a, %b;\n setp.lt.u32 %q, %b, %c;\n xor.pred %p, %p, %q;\n not.pred %q, %p;\n selp.u32 %o, 10, 20, %q;",
        "b32",
        |a, b, c| if (a < b) ^ (b < c) { 20 } else { 10 },
    );
}

#[test]
fn integer_comparisons_and_selection() {
    for (compare, signed_expect) in [
        ("eq", (|a, b| a == b) as fn(i64, i64) -> bool),
        ("ne", |a, b| a != b),
        ("lt", |a, b| a < b),
        ("le", |a, b| a <= b),
        ("gt", |a, b| a > b),
        ("ge", |a, b| a >= b),
    ] {
        let body = format!("setp.{compare}.s32 %p, %a, %b;\n selp.s32 %o, %a, %c, %p;");
        check32(&body, "b32", |a, b, c| {
            if signed_expect(s32(a), s32(b)) { a } else { c }
        });
        let body = format!("setp.{compare}.u32 %p, %a, %b;\n selp.b32 %o, 1, 0, %p;");
        check32(&body, "b32", |a, b, _| i64::from(signed_expect(a, b)));
    }
    // Equal operands, which random data rarely produces.
    check32(
        "setp.le.s32 %p, %a, %a;\n selp.u32 %o, 1, 0, %p;",
        "b32",
        |_, _, _| 1,
    );
}

#[test]
fn sixty_four_bit_operations() {
    let mut rng = Rng::new(64);
    let (a, b, c) = (
        doublewords(&mut rng),
        doublewords(&mut rng),
        doublewords(&mut rng),
    );
    let cases: [(&str, Expect64); 9] = [
        ("add.s64 %o, %a, %b;", |a, b, _| a.wrapping_add(b)),
        ("sub.u64 %o, %a, %b;", |a, b, _| a.wrapping_sub(b)),
        ("mul.lo.u64 %o, %a, %b;", |a, b, _| {
            (a as u128 * b as u128) as u64
        }),
        ("mad.lo.s64 %o, %a, %b, %c;", |a, b, c| {
            (a as u128 * b as u128 + c as u128) as u64
        }),
        ("and.b64 %o, %a, %b;", |a, b, _| a & b),
        ("not.b64 %o, %a;", |a, _, _| !a),
        ("cvt.u32.u64 %w, %a;\n cvt.u64.u32 %o, %w;", |a, _, _| {
            a % (1 << 32)
        }),
        ("cvt.s32.s64 %w, %a;\n cvt.s64.s32 %o, %w;", |a, _, _| {
            a as i32 as i64 as u64
        }),
        (
            "setp.lt.s64 %p, %a, %b;\n selp.b64 %o, %a, %b, %p;",
            |a, b, _| (a as i64).min(b as i64) as u64,
        ),
    ];
    for (body, expect) in cases {
        let out = map3("b64", "b64", body, &a, &b, &c);
        for i in 0..a.len() {
            assert_eq!(
                out[i],
                expect(a[i], b[i], c[i]),
                "{body} a={:#x} b={:#x}",
                a[i],
                b[i]
            );
        }
    }
    let shifts: Vec<u64> = (0..a.len() as u64).map(|i| i % 70).collect();
    let shifted = map3(
        "b64",
        "b64",
        "cvt.u32.u64 %w, %b;\n shr.s64 %o, %a, %w;",
        &a,
        &shifts,
        &c,
    );
    let left = map3(
        "b64",
        "b64",
        "cvt.u32.u64 %w, %b;\n shl.b64 %o, %a, %w;",
        &a,
        &shifts,
        &c,
    );
    for i in 0..a.len() {
        assert_eq!(shifted[i], ((a[i] as i64) >> shifts[i].min(63)) as u64);
        let expected = if shifts[i] >= 64 {
            0
        } else {
            a[i] << shifts[i]
        };
        assert_eq!(left[i], expected);
    }
}
