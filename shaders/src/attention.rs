//! The attention family's rungs (`wgsl/attention.wgsl`) as programs for the
//! one Ladder: Q, K, V and the key lengths as named buffers, the naive
//! rung's three dispatches through the score matrix `s`, the WGSL filled in
//! with the head dimension and the tiled rung's Br and Bc, each value of the
//! output held to the core's f64 reference within its own bound, and the
//! core's traffic model checked by the instrumented build.

use dlsys_core::kernels::Family;
use dlsys_core::kernels::attention::{
    AttnError, AttnLimits, AttnRung, AttnShape, NAIVE_TILE, Qkv, ROWS_WG, Reference, Tiles,
};
use serde::Serialize;

use crate::run::program::{
    Dispatch, ElementType, Expected, NamedBuffer, Program, Values, with_counters,
};
use crate::{KernelRunner, Outcome};

const SOURCE: &str = include_str!("../wgsl/attention.wgsl");

/// The WGSL for head dimension `d` and `tiles`: plain, or counting every
/// load and store's bytes.
pub fn source(d: u32, tiles: Tiles, instrumented: bool) -> String {
    with_counters(SOURCE, 7, instrumented)
        .replace("{{ROW_FNS}}", &row_fns(d))
        .replace("{{D}}", &d.to_string())
        .replace("{{BR}}", &tiles.br.to_string())
        .replace("{{BC}}", &tiles.bc.to_string())
}

/// The loops over one row's `d` values written out, one statement per
/// value: they cost the invocation no loop iterations (see the WGSL's
/// header) and keep the row in registers.
fn row_fns(d: u32) -> String {
    let each = |line: &dyn Fn(u32) -> String| (0..d).map(line).collect::<String>();
    let row = "ptr<function, array<f32, D>>";
    format!(
        "// Generated for D = {d}: each function is one statement per value.
fn load_row_q(qr: {row}, at: u32) {{
{load}}}

fn dot_k(qr: {row}, at: u32) -> f32 {{
    var x = 0.0;
{dot_k}    return x;
}}

fn update_v(acc: {row}, r: f32, p: f32, at: u32) {{
{update_v}}}

fn store_row(acc: {row}, inv: f32, at: u32) {{
{store}}}

fn dot_tile(qr: {row}, b: u32) -> f32 {{
    var x = 0.0;
{dot_tile}    return x;
}}

fn rescale(acc: {row}, r: f32) {{
{rescale}}}

fn add_tile(acc: {row}, p: f32, b: u32) {{
{add_tile}}}
",
        load = each(&|c| format!("    (*qr)[{c}] = load_q(at + {c}u);\n")),
        dot_k = each(&|c| format!("    x += (*qr)[{c}] * load_k(at + {c}u);\n")),
        update_v =
            each(&|c| { format!("    (*acc)[{c}] = (*acc)[{c}] * r + p * load_v(at + {c}u);\n") }),
        store = each(&|c| format!("    store_o(at + {c}u, (*acc)[{c}] * inv);\n")),
        dot_tile = each(&|c| format!("    x += (*qr)[{c}] * k_tile[b + {c}u];\n")),
        rescale = each(&|c| format!("    (*acc)[{c}] = (*acc)[{c}] * r;\n")),
        add_tile = each(&|c| format!("    (*acc)[{c}] += p * v_tile[b + {c}u];\n")),
    )
}

/// What `runner`'s device allows an attention rung.
pub fn limits(runner: &KernelRunner) -> AttnLimits {
    AttnLimits {
        workgroup_bytes: u64::from(runner.gpu().limits().max_compute_workgroup_storage_size),
        binding_bytes: runner.max_elements() * 4,
    }
}

/// `rung` on `qkv`, checked against `reference` (made once by the caller
/// for every rung of the same problem); refused where the core's check
/// refuses it.
pub fn program(
    rung: AttnRung,
    shape: &AttnShape,
    tiles: Tiles,
    limits: AttnLimits,
    qkv: &Qkv,
    reference: &Reference,
) -> Result<Program, AttnError> {
    shape.check(rung, tiles, limits)?;
    qkv.check(shape)?;
    let (n, d, heads) = (shape.seq, shape.head_dim, shape.heads);
    let kv_len: Vec<u32> = (0..heads as usize).map(|h| shape.key_len(h)).collect();
    let mut buffers = vec![
        NamedBuffer::input("q", Values::F32(qkv.q.clone())),
        NamedBuffer::input("k", Values::F32(qkv.k.clone())),
        NamedBuffer::input("v", Values::F32(qkv.v.clone())),
        NamedBuffer::input("kv_len", Values::U32(kv_len)),
        NamedBuffer::zeroed("o", ElementType::F32, shape.output_values(rung)),
    ];
    let params = [
        n,
        d,
        heads,
        u32::from(shape.causal),
        u32::from(rung == AttnRung::Causal),
        f32::NEG_INFINITY.to_bits(),
        (1.0 / f64::from(d).sqrt() as f32).to_bits(),
        0,
    ];
    let dispatch = |entry: &str, workgroups: [u32; 3]| Dispatch {
        entry: entry.to_owned(),
        workgroups,
        params,
    };
    let tiles_n = n.div_ceil(NAIVE_TILE);
    let dispatches = match rung {
        AttnRung::Naive => {
            buffers.push(NamedBuffer::zeroed(
                "s",
                ElementType::F32,
                shape.scores_bytes() / 4,
            ));
            vec![
                dispatch("scores", [tiles_n, tiles_n, heads]),
                dispatch("softmax_rows", [n, heads, 1]),
                dispatch("pv", [d / NAIVE_TILE, tiles_n, heads]),
            ]
        }
        AttnRung::Rows => vec![dispatch("rows", [n.div_ceil(ROWS_WG), heads, 1])],
        AttnRung::Tiled | AttnRung::Causal => {
            vec![dispatch("tiled", [n.div_ceil(tiles.br), heads, 1])]
        }
    };
    let traffic = shape.traffic(rung, tiles);
    // The counters are u32: the instrumented build runs where its counts fit.
    let counted = (traffic.bytes_read.max(traffic.bytes_written) <= u64::from(u32::MAX))
        .then(|| source(d, tiles, true));
    let (want, bound) = reference.expected(rung);
    Ok(Program {
        id: rung.id().to_owned(),
        family: Family::Attention,
        source: source(d, tiles, false),
        counted,
        buffers,
        dispatches,
        output: "o".to_owned(),
        expected: Expected::Within { want, bound },
        traffic,
        ops: shape.flops(rung),
    })
}

/// A rung's program, or why it is refused.
pub type Made = (AttnRung, Result<Program, AttnError>);

/// [`program`] for each of `rungs` on one problem, the reference made once;
/// each refused rung with its reason.
pub fn programs(
    rungs: &[AttnRung],
    shape: &AttnShape,
    tiles: Tiles,
    limits: AttnLimits,
    qkv: &Qkv,
) -> Result<Vec<Made>, AttnError> {
    let reference = dlsys_core::kernels::attention::reference(shape, qkv)?;
    Ok(rungs
        .iter()
        .map(|&rung| (rung, program(rung, shape, tiles, limits, qkv, &reference)))
        .collect())
}

/// One rung's line in the attention race, read off the ladder's outcome:
/// what both the page and `bench kernels --family attention` show.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct AttnRow {
    pub id: String,
    pub median_ms: f64,
    /// By the traffic model.
    pub bytes: u64,
    pub gb_per_s: f64,
    pub gflops: f64,
    /// Global memory beyond Q, K, V and O (the score matrix, or the
    /// log-sum-exp).
    pub extra_bytes: u64,
    pub ok: bool,
    /// The worst error as a share of its own bound (≤ 1 when right).
    pub share_of_bound: f64,
}

/// The rows of `outcomes` that are attention rungs of `shape`, in ladder order.
pub fn rows(outcomes: &[Outcome], shape: &AttnShape) -> Vec<AttnRow> {
    outcomes
        .iter()
        .filter_map(Outcome::program)
        .filter_map(|row| {
            let rung = AttnRung::from_id(&row.id)?;
            Some(AttnRow {
                id: row.id.clone(),
                median_ms: row.median_ms,
                bytes: row.bytes,
                gb_per_s: row.gb_per_s,
                gflops: row.ops / (row.median_ms * 1e6),
                extra_bytes: shape.extra_bytes(rung),
                ok: row.check.ok,
                share_of_bound: row.check.max_rel_error,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use dlsys_core::kernels::attention::{BC, BR, HEAD_DIMS};

    #[test]
    fn every_build_validates_with_its_entries() {
        for d in HEAD_DIMS {
            for (br, bc) in [(BR[0], BC[0]), (BR[2], BC[3])] {
                for instrumented in [false, true] {
                    let text = source(d, Tiles { br, bc }, instrumented);
                    let checked = crate::source::check(&text).unwrap();
                    for entry in ["scores", "softmax_rows", "pv", "rows", "tiled"] {
                        assert!(checked.bindings.iter().any(|(e, _)| e == entry), "{entry}");
                    }
                }
            }
        }
    }

    #[test]
    fn the_naive_rung_has_three_dispatches_and_its_score_matrix() {
        let shape = AttnShape::new(2, 40, 64, true).unwrap();
        let qkv = Qkv::seeded(&shape, 1);
        let all = programs(
            &AttnRung::ALL,
            &shape,
            Tiles::default(),
            AttnLimits::WEBGPU,
            &qkv,
        )
        .unwrap();
        let naive = all[0].1.as_ref().unwrap();
        assert_eq!(naive.dispatches.len(), 3);
        assert_eq!(naive.dispatches[0].workgroups, [3, 3, 2]);
        assert!(naive.buffers.iter().any(|b| b.name == "s"));
        let tiled = all[2].1.as_ref().unwrap();
        assert_eq!(tiled.dispatches[0].workgroups, [2, 2, 1]);
        assert!(!tiled.buffers.iter().any(|b| b.name == "s"));
        let Expected::Within { want, .. } = &tiled.expected else {
            panic!()
        };
        assert_eq!(want.len(), 2 * 40 * 64 + 2 * 40);
    }
}
