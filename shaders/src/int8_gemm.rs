//! The int8 GEMM's two rungs (`wgsl/gemm_int8.wgsl`) as programs for the
//! one Ladder: A and Bᵀ packed four int8 values to a word, C in i32 checked
//! bit for bit against the core's integer reference, each with its
//! instrumented build and the core's traffic model.

use dlsys_core::kernels::Family;
use dlsys_core::quant::QuantError;
use dlsys_core::quant::gemm::{GemmShape, Int8Kernel, gemm_i32};

use crate::run::program::{
    Dispatch, ElementType, Expected, NamedBuffer, Program, Values, with_counters,
};

const SOURCE: &str = include_str!("../wgsl/gemm_int8.wgsl");

/// `dot4I8Packed` by hand, from the module's own `lane`.
const DOT4_BY_HAND: &str = "
fn dot4_by_hand(x: u32, y: u32) -> i32 {
    return lane(x, 0u) * lane(y, 0u) + lane(x, 1u) * lane(y, 1u)
        + lane(x, 2u) * lane(y, 2u) + lane(x, 3u) * lane(y, 3u);
}
";

/// The WGSL: plain, or counting every load and store's bytes.
pub fn source(instrumented: bool) -> String {
    source_with(instrumented, true)
}

/// [`source`]; without `dot4`, `dot4I8Packed` is replaced by the same sum
/// written by hand, for a browser whose WGSL lacks the language extension
/// `packed_4x8_integer_dot_product` (one module holds both rungs, so the
/// builtin must not appear at all there).
pub fn source_with(instrumented: bool, dot4: bool) -> String {
    let text = source_template(instrumented);
    if dot4 {
        return text;
    }
    let mut text = text.replace("dot4I8Packed(", "dot4_by_hand(");
    text.push_str(DOT4_BY_HAND);
    text
}

fn source_template(instrumented: bool) -> String {
    with_counters(SOURCE, 4, instrumented)
}

/// `rows` rows of `k` values, each padded with zeros to whole words.
fn padded(values: &[i8], rows: usize, k: usize) -> Vec<i8> {
    let width = k.div_ceil(4) * 4;
    let mut out = vec![0i8; rows * width];
    for (r, row) in values.chunks(k).enumerate() {
        out[r * width..r * width + k].copy_from_slice(row);
    }
    out
}

/// `kernel` on A (`m × k`) and B (`k × n`), both row-major: B is stored
/// transposed, as a weight's [out, in] rows, so both operands are read
/// along K. Refuses the shapes the core refuses.
pub fn program(
    kernel: Int8Kernel,
    shape: GemmShape,
    a: &[i8],
    b: &[i8],
) -> Result<Program, QuantError> {
    let mut programs = programs(&[kernel], shape, a, b)?;
    Ok(programs.remove(0))
}

/// [`program`] for each of `kernels` on the same A and B: the integer
/// reference and the packed operands are made once and shared.
pub fn programs(
    kernels: &[Int8Kernel],
    shape: GemmShape,
    a: &[i8],
    b: &[i8],
) -> Result<Vec<Program>, QuantError> {
    let want = gemm_i32(shape, a, b)?;
    let (m, n, k) = (shape.m as usize, shape.n as usize, shape.k as usize);
    let bt: Vec<i8> = (0..n * k).map(|i| b[(i % k) * n + i / k]).collect();
    let (a, bt) = (
        Values::Packed8(padded(a, m, k)),
        Values::Packed8(padded(&bt, n, k)),
    );
    let expected = Expected::Exact(Values::I32(want));
    let dot4 = kernels.contains(&Int8Kernel::Dot4);
    Ok(kernels
        .iter()
        .map(|&kernel| {
            let traffic = kernel.traffic(shape);
            // The counters are u32: the instrumented build runs where its
            // counts fit.
            let counted =
                (traffic.bytes_read <= u64::from(u32::MAX)).then(|| source_with(true, dot4));
            let rung = kernel.selector();
            Program {
                id: kernel.id().to_owned(),
                family: Family::Gemm,
                source: source_with(false, dot4),
                counted,
                buffers: vec![
                    NamedBuffer::input("a", a.clone()),
                    NamedBuffer::input("bt", bt.clone()),
                    NamedBuffer::zeroed("c", ElementType::I32, shape.outputs()),
                ],
                dispatches: vec![Dispatch {
                    entry: "main".to_owned(),
                    workgroups: shape.workgroups(),
                    params: [shape.m, shape.n, shape.words_per_row(), rung, 0, 0, 0, 0],
                }],
                output: "c".to_owned(),
                expected: expected.clone(),
                traffic,
                ops: kernel.ops(shape),
            }
        })
        .collect())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn both_builds_validate_with_their_entry() {
        for instrumented in [false, true] {
            let checked = crate::source::check(&source(instrumented)).unwrap();
            assert!(checked.bindings.iter().any(|(entry, _)| entry == "main"));
        }
    }

    #[test]
    fn without_dot4_the_builtin_is_gone_and_the_module_still_validates() {
        for instrumented in [false, true] {
            let text = source_with(instrumented, false);
            assert!(!text.contains("dot4I8Packed("));
            crate::source::check(&text).unwrap();
        }
        let shape = GemmShape::new(2, 3, 9).unwrap();
        let (a, b) = ([1i8; 18], [-1i8; 27]);
        let only = programs(&[Int8Kernel::Extract], shape, &a, &b).unwrap();
        assert!(!only[0].source.contains("dot4I8Packed("));
        let both = programs(&Int8Kernel::ALL, shape, &a, &b).unwrap();
        assert!(both[0].source.contains("dot4I8Packed("));
    }

    #[test]
    fn rows_are_padded_to_whole_words_and_b_is_transposed() {
        let shape = GemmShape::new(1, 2, 5).unwrap();
        let a = [1, 2, 3, 4, 5];
        let b = [1, -1, 2, -2, 3, -3, 4, -4, 5, -5];
        let p = program(Int8Kernel::Dot4, shape, &a, &b).unwrap();
        assert_eq!(
            p.buffers[0].init,
            crate::run::program::Init::Values(Values::Packed8(vec![1, 2, 3, 4, 5, 0, 0, 0]))
        );
        let bt = vec![1, 2, 3, 4, 5, 0, 0, 0, -1, -2, -3, -4, -5, 0, 0, 0];
        assert_eq!(
            p.buffers[1].init,
            crate::run::program::Init::Values(Values::Packed8(bt))
        );
        assert_eq!(p.expected, Expected::Exact(Values::I32(vec![55, -55])));
    }
}
