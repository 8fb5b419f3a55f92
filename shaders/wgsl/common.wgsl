// Shared by every dlsys-lab kernel. The host fills in the template tokens: the
// workgroup size, and the load/store counters (empty, or an atomicAdd in the
// instrumented build that verifies the memory-traffic model).

struct Params {
    rows: u32,
    cols: u32,
    n: u32,
    // −inf, passed in: WGSL forbids an infinite constant expression.
    neg_inf: f32,
    // Kernel-specific: rows per workgroup for the row-per-subgroup softmax.
    aux: u32,
    pad0: u32,
    pad1: u32,
    pad2: u32,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read_write> y: array<f32>;
@group(0) @binding(3) var<storage, read_write> stats: array<f32>;
// Bytes loaded from and stored to global memory (instrumented build only).
@group(0) @binding(4) var<storage, read_write> counters: array<atomic<u32>, 2>;

const WG: u32 = {{WG}}u;

fn load_x(i: u32) -> f32 {
    {{COUNT_LOAD}}
    return x[i];
}

fn store_y(i: u32, v: f32) {
    {{COUNT_STORE}}
    y[i] = v;
}

// The same buffers read as vec4 (16-byte loads and stores).
@group(0) @binding(5) var<storage, read> x4: array<vec4<f32>>;
@group(0) @binding(6) var<storage, read_write> y4: array<vec4<f32>>;

fn load_x4(i: u32) -> vec4<f32> {
    {{COUNT_LOAD16}}
    return x4[i];
}

fn store_y4(i: u32, v: vec4<f32>) {
    {{COUNT_STORE16}}
    y4[i] = v;
}

fn load_stats(i: u32) -> f32 {
    {{COUNT_LOAD}}
    return stats[i];
}

fn store_stats(i: u32, v: f32) {
    {{COUNT_STORE}}
    stats[i] = v;
}

// One workgroup per row; rows beyond 65,535 continue in the y dimension.
fn row_index(wid: vec3<u32>, nwg: vec3<u32>) -> u32 {
    return wid.x + wid.y * nwg.x;
}

var<workgroup> scratch: array<f32, {{WG}}>;

// NaN and infinity tests on the bits: comparisons and max() on NaN are not
// reliable in WGSL (an ordered `!=` is false for NaN; max() may drop it).
fn is_nan(v: f32) -> bool {
    return (bitcast<u32>(v) & 0x7fffffffu) > 0x7f800000u;
}

fn is_finite(v: f32) -> bool {
    return (bitcast<u32>(v) & 0x7fffffffu) < 0x7f800000u;
}

fn max_nan(a: f32, b: f32) -> f32 {
    if (is_nan(a)) {
        return a;
    }
    if (is_nan(b)) {
        return b;
    }
    return max(a, b);
}

// A quiet NaN made at run time (a constant NaN is not allowed).
fn nan() -> f32 {
    return bitcast<f32>(bitcast<u32>(params.neg_inf) | 0x00400000u);
}

// Tree reductions in workgroup memory with sequential addressing.
// The max propagates NaN: a row holding NaN has a NaN maximum.
fn wg_max(v: f32, lid: u32) -> f32 {
    scratch[lid] = v;
    workgroupBarrier();
    for (var s = WG / 2u; s > 0u; s = s >> 1u) {
        if (lid < s) {
            scratch[lid] = max_nan(scratch[lid], scratch[lid + s]);
        }
        workgroupBarrier();
    }
    let r = scratch[0];
    workgroupBarrier();
    return r;
}

fn wg_sum(v: f32, lid: u32) -> f32 {
    scratch[lid] = v;
    workgroupBarrier();
    for (var s = WG / 2u; s > 0u; s = s >> 1u) {
        if (lid < s) {
            scratch[lid] = scratch[lid] + scratch[lid + s];
        }
        workgroupBarrier();
    }
    let r = scratch[0];
    workgroupBarrier();
    return r;
}
