//! WGSL generated from an elementwise chain ([`Chain`], the fusion pass's
//! unit): one kernel that loads `x` and each extra input once per element,
//! applies the ops in registers and stores `y` once. The plain and the
//! instrumented build (every global load and store counted on `counters`)
//! come from the same text, and both are validated by naga before use.
//! Sizes are baked in as constants; the grid is two-dimensional so that
//! more than 65,535 workgroups' worth of elements fit, and an elementwise
//! kernel does not loop. A chain that starts by normalising rows
//! (LayerNorm) becomes one workgroup per row instead, its row kept in
//! workgroup memory ([`MAX_ROW`] values at most; each loop runs
//! `cols / WG` ≤ 32 times).

use dlsys_core::compile::chain::{Chain, ChainError, ChainOp, Extra};
use dlsys_core::kernels::Family;

use crate::kernel_track::{Diagnostic, parse_and_validate};
use crate::run::program::{Dispatch, ElementType, Expected, NamedBuffer, Program, Values};

/// Invocations per workgroup (a power of two: the row kernel's tree sum
/// halves it).
pub const WG: u32 = 64;
const _: () = assert!(WG.is_power_of_two());
/// Workgroups along x before the grid wraps to y.
const MAX_X: u32 = 65_535;

/// The most elements a generated kernel takes (a storage buffer of 1 GiB).
pub const MAX_ELEMENTS: usize = 1 << 28;

/// The helper functions a chain may call, each emitted only when used:
/// GELU's tanh form as the hand-written fusion rung writes it; tanh with
/// NaN kept (a GPU's clamp may turn NaN into a bound, and a shader
/// compiler may assume no NaN and fold `v != v` to false, so NaN is told
/// by its bits); the backward rules as the engine writes them.
const HELPERS: [(&str, &str); 4] = [
    (
        "gelu",
        "fn gelu(v: f32) -> f32 {
    let inner = clamp(0.7978845608 * (v + 0.044715 * v * v * v), -20.0, 20.0);
    return 0.5 * v * (1.0 + tanh(inner));
}
",
    ),
    (
        "tanh",
        "fn tanh_nan(v: f32) -> f32 {
    let nan = (bitcast<u32>(v) & 0x7fffffffu) > 0x7f800000u;
    return select(tanh(clamp(v, -20.0, 20.0)), v, nan);
}
",
    ),
    (
        "tanh_grad",
        "fn tanh_grad(g: f32, y: f32) -> f32 {
    return g * (1.0 - y * y);
}
",
    ),
    (
        "sigmoid_grad",
        "fn sigmoid_grad(g: f32, y: f32) -> f32 {
    return g * y * (1.0 - y);
}
",
    ),
];

/// The WGSL of `chain` over `n` elements in rows of `cols`.
pub fn wgsl(chain: &Chain, n: usize, cols: usize, instrumented: bool) -> String {
    let count = |which: usize| {
        if instrumented {
            format!("atomicAdd(&counters[{which}], 4u);\n    ")
        } else {
            String::new()
        }
    };
    let mut decls = String::from("@group(0) @binding(0) var<storage, read> x: array<f32>;\n");
    for k in 0..chain.extras.len() {
        decls.push_str(&format!(
            "@group(0) @binding({}) var<storage, read> in{k}: array<f32>;\n",
            k + 1
        ));
    }
    let out = chain.extras.len() + 1;
    decls.push_str(&format!(
        "@group(0) @binding({out}) var<storage, read_write> y: array<f32>;\n"
    ));
    if instrumented {
        decls.push_str(&format!(
            "@group(0) @binding({}) var<storage, read_write> counters: array<atomic<u32>, 2>;\n",
            out + 1
        ));
    }
    let body = op_lines(chain, cols, &count);
    let helpers: String = HELPERS
        .iter()
        .filter(|(key, _)| chain.ops.iter().any(|o| o.key() == *key))
        .map(|(_, text)| format!("\n{text}"))
        .collect();
    if chain.by_rows() {
        return by_rows(&decls, &helpers, &body, n, cols, &count);
    }
    format!(
        "{decls}{helpers}
@compute @workgroup_size({WG})
fn fused(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
) {{
    let i = (wid.y * nwg.x + wid.x) * {WG}u + lid;
    if (i >= {n}u) {{ return; }}
    {load}var v = x[i];
{body}    {store}y[i] = v;
}}
",
        load = count(0),
        store = count(1),
    )
}

/// The elementwise ops' lines (a row op is the row kernel's own).
fn op_lines(chain: &Chain, cols: usize, count: &dyn Fn(usize) -> String) -> String {
    let mut body = String::new();
    for op in &chain.ops {
        let line = match op {
            ChainOp::Add(k)
            | ChainOp::Mul(k)
            | ChainOp::ReluGrad(k)
            | ChainOp::TanhGrad(k)
            | ChainOp::SigmoidGrad(k) => {
                let at = match chain.extras[*k] {
                    Extra::Full => "i".to_owned(),
                    Extra::Row => format!("i % {}u", cols.max(1)),
                };
                let e = format!("in{k}[{at}]");
                let update = match op {
                    ChainOp::Add(_) => format!("v + {e}"),
                    ChainOp::Mul(_) => format!("v * {e}"),
                    ChainOp::ReluGrad(_) => format!("select(0.0, v, {e} > 0.0)"),
                    ChainOp::TanhGrad(_) => format!("tanh_grad(v, {e})"),
                    _ => format!("sigmoid_grad(v, {e})"),
                };
                format!("{}v = {update};\n", count(0))
            }
            ChainOp::Scale(s) => format!("v = v * {};\n", literal(*s)),
            ChainOp::Shift(c) => format!("v = v + {};\n", literal(*c)),
            ChainOp::Relu => "v = select(0.0, v, v > 0.0);\n".to_owned(),
            ChainOp::Gelu => "v = gelu(v);\n".to_owned(),
            ChainOp::Tanh => "v = tanh_nan(v);\n".to_owned(),
            ChainOp::Sigmoid => "v = 1.0 / (1.0 + exp(-v));\n".to_owned(),
            ChainOp::Exp => "v = exp(v);\n".to_owned(),
            ChainOp::NormalizeRows => continue,
        };
        body.push_str("    ");
        body.push_str(&line);
    }
    body
}

/// The kernel of a chain that starts by normalising rows: one workgroup
/// per row (the grid wraps to y past 65,535 rows); the row loaded once
/// into workgroup memory while its sum is taken, its mean and the mean of
/// squared deviations from it (never E[x²] − E[x]²) reduced across the
/// workgroup as the hand-written LayerNorm rung does, then each value
/// normalised and the rest of the chain applied on its way out.
fn by_rows(
    decls: &str,
    helpers: &str,
    body: &str,
    n: usize,
    cols: usize,
    count: &dyn Fn(usize) -> String,
) -> String {
    let rows = n / cols.max(1);
    let half = WG / 2;
    let eps = literal(dlsys_core::kernels::LAYERNORM_EPS);
    let inner = body
        .replace("\n    ", "\n        ")
        .replacen("    ", "        ", 1);
    format!(
        "{decls}{helpers}
var<workgroup> row: array<f32, {cols}>;
var<workgroup> partial: array<f32, {WG}>;

fn wg_sum(v: f32, lid: u32) -> f32 {{
    partial[lid] = v;
    workgroupBarrier();
    for (var s = {half}u; s > 0u; s = s >> 1u) {{
        if (lid < s) {{
            partial[lid] = partial[lid] + partial[lid + s];
        }}
        workgroupBarrier();
    }}
    let total = partial[0];
    workgroupBarrier();
    return total;
}}

@compute @workgroup_size({WG})
fn fused(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
) {{
    let r = wid.y * nwg.x + wid.x;
    if (r >= {rows}u) {{ return; }}
    var s = 0.0;
    for (var c = lid; c < {cols}u; c += {WG}u) {{
        {load}let value = x[r * {cols}u + c];
        row[c] = value;
        s = s + value;
    }}
    let m = wg_sum(s, lid) / f32({cols}u);
    var q = 0.0;
    for (var c = lid; c < {cols}u; c += {WG}u) {{
        let d = row[c] - m;
        q = q + d * d;
    }}
    let inv = inverseSqrt(wg_sum(q, lid) / f32({cols}u) + {eps});
    for (var c = lid; c < {cols}u; c += {WG}u) {{
        let i = r * {cols}u + c;
        var v = (row[c] - m) * inv;
{inner}        {store}y[i] = v;
    }}
}}
",
        load = count(0),
        store = count(1),
    )
}

/// An f32 as WGSL: its shortest decimal, which reads back exactly, or its
/// bits where WGSL has no literal (NaN, ±inf).
fn literal(x: f32) -> String {
    if x.is_finite() {
        format!("{x:?}")
    } else {
        format!("bitcast<f32>({:#010x}u)", x.to_bits())
    }
}

/// The grid for `chain` over `n` elements in rows of `cols`: a workgroup
/// per `WG` elements, or per row for a chain that normalises rows.
pub fn workgroups(chain: &Chain, n: usize, cols: usize) -> [u32; 3] {
    let groups = if chain.by_rows() {
        (n / cols.max(1)) as u64
    } else {
        (n as u64).div_ceil(u64::from(WG))
    }
    .max(1);
    let x = groups.min(u64::from(MAX_X));
    [x as u32, groups.div_ceil(x) as u32, 1]
}

/// Storage buffers a generated kernel may bind: WebGPU's default limit
/// per shader stage (x, the extra inputs, y, and the instrumented build's
/// counters).
pub const MAX_BUFFERS: usize = 8;

/// Why a generated kernel is not made.
#[derive(Clone, Debug, PartialEq)]
pub enum CodegenError {
    Chain(ChainError),
    /// No elements.
    Empty,
    /// More elements than a generated kernel takes.
    TooLarge {
        n: usize,
        max: usize,
    },
    /// More extra inputs than a kernel can bind.
    TooManyBuffers {
        buffers: usize,
        max: usize,
    },
    /// Rows longer than a row kernel keeps in workgroup memory.
    RowTooLong {
        cols: usize,
        max: usize,
    },
    /// naga refused the generated text (a generator bug).
    Invalid(Diagnostic),
}

/// The longest row a row kernel keeps in workgroup memory: 8 KiB of it,
/// with the reduction's 256 B, inside WebGPU's 16 KiB.
pub const MAX_ROW: usize = 2048;

/// [`wgsl`], refused where it cannot run (no elements, too many, more
/// buffers than a kernel binds) and validated by naga.
pub fn validated(
    chain: &Chain,
    n: usize,
    cols: usize,
    instrumented: bool,
) -> Result<String, CodegenError> {
    chain.check().map_err(CodegenError::Chain)?;
    if n == 0 {
        return Err(CodegenError::Empty);
    }
    if chain.by_rows() {
        if cols == 0 || !n.is_multiple_of(cols) {
            return Err(CodegenError::Chain(ChainError::NotRows { n, cols }));
        }
        if cols > MAX_ROW {
            return Err(CodegenError::RowTooLong { cols, max: MAX_ROW });
        }
    }
    if n > MAX_ELEMENTS {
        return Err(CodegenError::TooLarge {
            n,
            max: MAX_ELEMENTS,
        });
    }
    let buffers = chain.extras.len() + 3;
    if buffers > MAX_BUFFERS {
        return Err(CodegenError::TooManyBuffers {
            buffers,
            max: MAX_BUFFERS,
        });
    }
    let text = wgsl(chain, n, cols, instrumented);
    parse_and_validate(&text).map_err(CodegenError::Invalid)?;
    Ok(text)
}

/// `chain` as a checked program on `x` (rows of `cols`) and its extra
/// inputs: both builds validated by naga, the output expected within
/// 1e-5 relative to max(|want|, 0.1) of the CPU's [`Chain::eval`] (so
/// within 1e-6 absolute near zero), NaN and ±inf where it has them.
pub fn program(
    chain: &Chain,
    x: Vec<f32>,
    extras: Vec<Vec<f32>>,
    cols: usize,
) -> Result<Program, CodegenError> {
    let n = x.len();
    let source = validated(chain, n, cols, false)?;
    let counted = validated(chain, n, cols, true)?;
    let refs: Vec<&[f32]> = extras.iter().map(Vec::as_slice).collect();
    let want = chain.eval(&x, &refs, cols).map_err(CodegenError::Chain)?;
    let keys: Vec<&str> = chain.ops.iter().map(ChainOp::key).collect();
    let mut buffers = vec![NamedBuffer::input("x", Values::F32(x))];
    for (k, e) in extras.into_iter().enumerate() {
        buffers.push(NamedBuffer::input(&format!("in{k}"), Values::F32(e)));
    }
    buffers.push(NamedBuffer::zeroed("y", ElementType::F32, n as u64));
    Ok(Program {
        id: format!("generated/{}", keys.join("+")),
        family: Family::Fusion,
        source,
        counted: Some(counted),
        buffers,
        dispatches: vec![Dispatch {
            entry: "fused".to_owned(),
            workgroups: workgroups(chain, n, cols),
            params: [0; 8],
        }],
        output: "y".to_owned(),
        expected: Expected::Close {
            want,
            tolerance: 1e-5,
            floor: 0.1,
        },
        traffic: chain.fused_traffic(n),
        ops: chain.ops_per_element() * n as f64,
    })
}
