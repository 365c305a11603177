//! The generator's own description of a random kernel ([`Recipe`]), drawn once from a
//! configuration and then turned into either IR (through [`KernelBuilder`]) or `stencil!`
//! source text (written directly from the recipe, without the IR or the IR printer).
//!
//! The two outputs describe the same expression tree node for node: a term is
//! `coefficient * (r0 + r1 + ...)` summed left to right, or `coefficient * (r0 * r1)` for a
//! product term; an input's terms are summed left to right; the inputs' sums are added left to
//! right (each later sum parenthesised in the text); with a nonlinear function, each input's sum
//! is a `let` first. So an evaluator that reads only the text computes the IR's bits, and a
//! bug in the builder, the macro's lowering or a backend that changes any read or coefficient
//! shows up against it.

use std::fmt::Write as _;

use crate::element::ElemType;
use crate::ir::{BinaryOp, CmpOp, ExprId, Kernel, KernelBuilder, Offset, UnaryOp};

/// A coefficient: a constant (a multiple of 1/512, exact in f32) or parameter `c<n>`.
#[derive(Clone, Copy, PartialEq, Debug)]
pub(super) enum Coefficient {
    Const(f64),
    Param(usize),
}

/// One term of an input's weighted sum.
#[derive(Clone, PartialEq, Debug)]
pub(super) struct Term {
    pub(super) coefficient: Coefficient,
    /// Offsets of the term's own input, summed in order (one or more).
    pub(super) reads: Vec<Offset>,
    /// A product term multiplies its single read by a read of input `.0` at offset `.1`.
    pub(super) times: Option<(usize, Offset)>,
}

/// The function the total goes through when the configuration asks for nonlinearity.
#[derive(Clone, Copy, PartialEq, Debug)]
pub(super) enum Nonlinear {
    Abs,
    /// `max(value, threshold)`.
    Max(f64),
    /// `min(threshold, value)`.
    Min(f64),
    /// `if value > threshold { value } else { 0.125 * value }`.
    Leaky(f64),
    SqrtAbs,
    Tanh,
}

/// A random kernel as the generator drew it.
#[derive(Clone, PartialEq, Debug)]
pub(super) struct Recipe {
    pub(super) name: String,
    pub(super) n_dims: usize,
    pub(super) elem: ElemType,
    pub(super) inputs: Vec<&'static str>,
    pub(super) n_params: usize,
    /// Per input, its terms in summation order.
    pub(super) sums: Vec<Vec<Term>>,
    pub(super) nonlinear: Option<Nonlinear>,
}

const INDEX_NAMES: [&str; 4] = ["i", "j", "k", "l"];

impl Recipe {
    /// The recipe as IR, built in the order the module documentation gives.
    pub(super) fn to_kernel(&self) -> Kernel {
        let mut b = KernelBuilder::new(&self.name, self.n_dims, self.elem);
        let inputs: Vec<_> = self.inputs.iter().map(|n| b.input(n)).collect();
        let out = b.output("out");
        let params: Vec<_> = (0..self.n_params)
            .map(|p| b.param(&format!("c{p}")))
            .collect();
        let n_dims = self.n_dims;
        let mut sums = Vec::new();
        for (i, terms) in self.sums.iter().enumerate() {
            let mut total: Option<ExprId> = None;
            for term in terms {
                let coefficient = match term.coefficient {
                    Coefficient::Const(c) => b.constant(c),
                    Coefficient::Param(p) => b.param_ref(params[p]),
                };
                let mut value = b.read(inputs[i], term.reads[0].as_slice(n_dims));
                for p in &term.reads[1..] {
                    let r = b.read(inputs[i], p.as_slice(n_dims));
                    value = b.add(value, r);
                }
                if let Some((j, q)) = term.times {
                    let r = b.read(inputs[j], q.as_slice(n_dims));
                    value = b.mul(value, r);
                }
                let term = b.mul(coefficient, value);
                total = Some(match total {
                    None => term,
                    Some(t) => b.add(t, term),
                });
            }
            let total = total.expect("every input has at least its centre term");
            sums.push(if self.nonlinear.is_some() {
                let var = b.let_(&format!("s{i}"), total);
                b.let_ref(var)
            } else {
                total
            });
        }
        let mut value = sums[0];
        for &s in &sums[1..] {
            value = b.add(value, s);
        }
        if let Some(f) = self.nonlinear {
            value = match f {
                Nonlinear::Abs => b.unary(UnaryOp::Abs, value),
                Nonlinear::Max(t) => {
                    let t = b.constant(t);
                    b.binary(BinaryOp::Max, value, t)
                }
                Nonlinear::Min(t) => {
                    let t = b.constant(t);
                    b.binary(BinaryOp::Min, t, value)
                }
                Nonlinear::Leaky(t) => {
                    let t = b.constant(t);
                    let cond = b.compare(CmpOp::Gt, value, t);
                    let slope = b.constant(0.125);
                    let scaled = b.mul(slope, value);
                    b.select(cond, value, scaled)
                }
                Nonlinear::SqrtAbs => {
                    let a = b.unary(UnaryOp::Abs, value);
                    b.unary(UnaryOp::Sqrt, a)
                }
                Nonlinear::Tanh => b.unary(UnaryOp::Tanh, value),
            };
        }
        b.store(out, value);
        b.finish()
            .unwrap_or_else(|e| panic!("random_stencil built an invalid kernel (a bug): {e}"))
    }

    /// The recipe as a `stencil! { pub fn ... }` invocation, written from the recipe alone.
    pub(super) fn to_source(&self) -> String {
        let elem = self.elem.rust_name();
        let grid = format!("Grid{}<{elem}>", self.n_dims);
        let mut args: Vec<String> = self
            .inputs
            .iter()
            .map(|n| format!("{n}: &{grid}"))
            .collect();
        args.push(format!("out: &mut {grid}"));
        args.extend((0..self.n_params).map(|p| format!("c{p}: {elem}")));
        let mut text = String::from("stencil! {\n");
        let _ = writeln!(text, "    pub fn {}({}) {{", self.name, args.join(", "));
        let sums: Vec<String> = self
            .sums
            .iter()
            .enumerate()
            .map(|(i, terms)| self.sum_text(i, terms))
            .collect();
        let value = if self.nonlinear.is_some() {
            for (i, sum) in sums.iter().enumerate() {
                let _ = writeln!(text, "        let s{i} = {sum};");
            }
            (0..sums.len())
                .map(|i| format!("s{i}"))
                .collect::<Vec<_>>()
                .join(" + ")
        } else {
            let mut value = sums[0].clone();
            for sum in &sums[1..] {
                let _ = write!(value, " + ({sum})");
            }
            value
        };
        let value = match self.nonlinear {
            None => value,
            Some(Nonlinear::Abs) => format!("abs({value})"),
            Some(Nonlinear::Max(t)) => format!("max({value}, {t:?})"),
            Some(Nonlinear::Min(t)) => format!("min({t:?}, {value})"),
            Some(Nonlinear::Leaky(t)) => {
                format!("if ({value}) > {t:?} {{ {value} }} else {{ 0.125 * ({value}) }}")
            }
            Some(Nonlinear::SqrtAbs) => format!("sqrt(abs({value}))"),
            Some(Nonlinear::Tanh) => format!("tanh({value})"),
        };
        let _ = writeln!(
            text,
            "        {} = {value};",
            self.read_text("out", Offset::ZERO)
        );
        text.push_str("    }\n}\n");
        text
    }

    fn sum_text(&self, input: usize, terms: &[Term]) -> String {
        let terms: Vec<String> = terms
            .iter()
            .map(|term| {
                let coefficient = match term.coefficient {
                    Coefficient::Const(c) => format!("{c:?}"),
                    Coefficient::Param(p) => format!("c{p}"),
                };
                let reads: Vec<String> = term
                    .reads
                    .iter()
                    .map(|p| self.read_text(self.inputs[input], *p))
                    .collect();
                let mut value = reads.join(" + ");
                if let Some((j, q)) = term.times {
                    let _ = write!(value, " * {}", self.read_text(self.inputs[j], q));
                }
                format!("{coefficient} * ({value})")
            })
            .collect();
        terms.join(" + ")
    }

    fn read_text(&self, field: &str, offset: Offset) -> String {
        let index: Vec<String> = (0..self.n_dims)
            .map(|d| match offset.0[d] {
                0 => INDEX_NAMES[d].to_string(),
                o if o > 0 => format!("{} + {o}", INDEX_NAMES[d]),
                o => format!("{} - {}", INDEX_NAMES[d], -o),
            })
            .collect();
        format!("{field}[{}]", index.join(", "))
    }
}
