//! What PyTorch's autocast does per op (CUDA, `dtype=torch.float16`), from
//! its documentation's op lists ("CUDA Ops that can autocast to float16" and
//! "… to float32"), with the reason each group is where it is. The policy
//! the engine trains under rounds every op to one format; autocast decides
//! per op, and the reasons are numbers the emulator computes.

use crate::float::{Format, Rounding};

/// The precision autocast runs an op in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CastTo {
    /// The autocast dtype (fp16 here).
    Lower,
    Fp32,
}

/// Why an op is on its list.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Why {
    /// Products on tensor cores, accumulated in fp32 inside the op.
    TensorCores,
    /// The output leaves fp16's range: exp overflows past ln(65504).
    Range,
    /// A long sum: in fp16 adding 1 stops changing the total at 2048.
    Accumulation,
    /// exp, then a sum over the row.
    Softmax,
    /// A mean and a variance: sums of values and of squares.
    Statistics,
    /// Logs of probabilities, summed over the batch.
    Loss,
}

impl Why {
    pub const ALL: [Self; 6] = [
        Self::TensorCores,
        Self::Range,
        Self::Accumulation,
        Self::Softmax,
        Self::Statistics,
        Self::Loss,
    ];

    /// Stable key (catalogs).
    pub fn key(self) -> &'static str {
        match self {
            Self::TensorCores => "tensor_cores",
            Self::Range => "range",
            Self::Accumulation => "accumulation",
            Self::Softmax => "softmax",
            Self::Statistics => "statistics",
            Self::Loss => "loss",
        }
    }

    pub fn cast(self) -> CastTo {
        if self == Self::TensorCores {
            CastTo::Lower
        } else {
            CastTo::Fp32
        }
    }
}

/// One op as `torch` names it, and why autocast casts it as it does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AutocastOp {
    pub name: &'static str,
    pub why: Why,
}

impl AutocastOp {
    pub fn cast(&self) -> CastTo {
        self.why.cast()
    }
}

const fn op(name: &'static str, why: Why) -> AutocastOp {
    AutocastOp { name, why }
}

/// A selection of the documented lists (the lists are longer).
pub const OPS: [AutocastOp; 22] = [
    op("matmul", Why::TensorCores),
    op("mm", Why::TensorCores),
    op("bmm", Why::TensorCores),
    op("addmm", Why::TensorCores),
    op("baddbmm", Why::TensorCores),
    op("linear", Why::TensorCores),
    op("conv1d", Why::TensorCores),
    op("conv2d", Why::TensorCores),
    op("exp", Why::Range),
    op("pow", Why::Range),
    op("log", Why::Range),
    op("sum", Why::Accumulation),
    op("prod", Why::Accumulation),
    op("cumsum", Why::Accumulation),
    op("softmax", Why::Softmax),
    op("log_softmax", Why::Softmax),
    op("layer_norm", Why::Statistics),
    op("group_norm", Why::Statistics),
    op("norm", Why::Statistics),
    op("nll_loss", Why::Loss),
    op("mse_loss", Why::Loss),
    op("l1_loss", Why::Loss),
];

/// The ops of one group, in list order.
pub fn ops_of(why: Why) -> impl Iterator<Item = &'static AutocastOp> {
    OPS.iter().filter(move |o| o.why == why)
}

/// The largest x with exp(x) finite in `format`: ln of its largest finite value.
pub fn exp_overflows_above(format: &Format) -> f64 {
    format.range().max_finite.ln()
}

/// Where a running sum of ones stops growing in `format` (round to
/// nearest-even after every addition): 2048 in fp16.
pub fn ones_sum_stalls_at(format: &Format) -> f64 {
    let round = |x: f64| format.decode(format.encode_f64(x, Rounding::NearestEven));
    let mut total = 0.0;
    // 2^(significand bits + 1) is the answer in any binary format; the loop
    // finds it by adding, up to formats with 16 significand bits.
    for _ in 0..(1u32 << 17) {
        let next = round(total + 1.0);
        if next == total {
            break;
        }
        total = next;
    }
    total
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_lists_put_products_low_and_sums_exps_norms_and_losses_in_fp32() {
        let cast = |name: &str| OPS.iter().find(|o| o.name == name).map(AutocastOp::cast);
        for low in ["matmul", "linear", "conv2d", "bmm"] {
            assert_eq!(cast(low), Some(CastTo::Lower), "{low}");
        }
        for wide in ["softmax", "layer_norm", "sum", "exp", "nll_loss"] {
            assert_eq!(cast(wide), Some(CastTo::Fp32), "{wide}");
        }
        for why in Why::ALL {
            assert!(
                ops_of(why).count() >= 2,
                "{why:?} has too few ops for an exercise"
            );
        }
        let mut names: Vec<_> = OPS.iter().map(|o| o.name).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), OPS.len(), "an op listed twice");
    }

    #[test]
    fn the_reasons_are_the_emulators_numbers() {
        let fp16 = Format::fp16();
        let x = exp_overflows_above(&fp16);
        assert!((x - 65504f64.ln()).abs() < 1e-12);
        assert!((11.08..11.1).contains(&x), "{x}");
        assert_eq!(ones_sum_stalls_at(&fp16), 2048.0);
        assert_eq!(ones_sum_stalls_at(&Format::bf16()), 256.0);
    }
}
