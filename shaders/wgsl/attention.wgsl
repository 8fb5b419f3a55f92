// Attention O = softmax(Q·Kᵀ·scale + mask)·V for params.heads heads of
// params.n × D, as the ladder's four rungs (see dlsys-core's
// kernels::attention for each one's traffic model):
//   scores, softmax_rows, pv — the naive rung's three dispatches through S;
//   rows  — one invocation per query row, K and V from global memory;
//   tiled — FlashAttention-2: BR rows per workgroup, K and V staged BC rows
//           at a time in workgroup memory; params.skip = 1 skips the tiles
//           above the diagonal under a causal mask.
// Key j of row i is masked when j ≥ kv_len[head] or, causal, j > i. The
// streaming rungs write the log-sum-exp after O (−inf for a row with no key).
//
// Every loop over the head dimension is written out by the host
// (the row functions the host writes in below the tiles: loads, dot
// products and updates of one row, D statements each), so an invocation's loops run over keys and tiles only: llvmpipe
// ends an invocation's loops after 65,535 iterations in all, and the core's
// `loop_iterations` keeps every rung below that.
//
// {{D}}, {{BR}} and {{BC}} are filled in by the host; {{COUNT_LOAD}} and
// {{COUNT_STORE}} are empty in the plain build and an atomic count of the
// bytes in the instrumented one.

struct Params {
    n: u32,
    d: u32,
    heads: u32,
    causal: u32,
    skip: u32,
    neg_inf: f32,
    scale: f32,
    pad7: u32,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> q: array<f32>;
@group(0) @binding(2) var<storage, read> k: array<f32>;
@group(0) @binding(3) var<storage, read> v: array<f32>;
@group(0) @binding(4) var<storage, read> kv_len: array<u32>;
@group(0) @binding(5) var<storage, read_write> s: array<f32>;
@group(0) @binding(6) var<storage, read_write> o: array<f32>;
{{COUNTERS}}

const D: u32 = {{D}}u;
const BR: u32 = {{BR}}u;
const BC: u32 = {{BC}}u;
const TILE_VALUES: u32 = {{BC}}u * {{D}}u;
// The naive rung's tiles are T × T.
const T: u32 = 16u;

fn load_q(at: u32) -> f32 {
    {{COUNT_LOAD}}
    return q[at];
}

fn load_k(at: u32) -> f32 {
    {{COUNT_LOAD}}
    return k[at];
}

fn load_v(at: u32) -> f32 {
    {{COUNT_LOAD}}
    return v[at];
}

fn load_s(at: u32) -> f32 {
    {{COUNT_LOAD}}
    return s[at];
}

fn store_s(at: u32, x: f32) {
    {{COUNT_STORE}}
    s[at] = x;
}

fn store_o(at: u32, x: f32) {
    {{COUNT_STORE}}
    o[at] = x;
}

// Real keys of head h.
fn key_len(h: u32) -> u32 {
    return min(kv_len[h], params.n);
}

// Keys row i of head h attends to (all with a smaller index).
fn keys(h: u32, i: u32) -> u32 {
    if (params.causal != 0u) {
        return min(key_len(h), i + 1u);
    }
    return key_len(h);
}

// O's row and the log-sum-exp: zeros and −inf for a row with no key.
fn write_row(h: u32, i: u32, m: f32, l: f32, acc: ptr<function, array<f32, D>>) {
    let n = params.n;
    var inv = 0.0;
    if (l > 0.0) {
        inv = 1.0 / l;
    }
    store_row(acc, inv, (h * n + i) * D);
    var lse = params.neg_inf;
    if (l > 0.0) {
        lse = m + log(l);
    }
    store_o(params.heads * n * D + h * n + i, lse);
}

var<workgroup> tile_a: array<array<f32, 16>, 16>;
var<workgroup> tile_b: array<array<f32, 16>, 16>;

// Naive 1/3: S = Q·Kᵀ·scale in 16 × 16 tiles, masked entries −inf.
@compute @workgroup_size(16, 16)
fn scores(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>) {
    let h = wg.z;
    let n = params.n;
    let base = h * n * D;
    let i = wg.y * T + lid.y;
    let j = wg.x * T + lid.x;
    // The key row this invocation stages.
    let kr = wg.x * T + lid.y;
    var acc = 0.0;
    for (var c0 = 0u; c0 < D; c0 += T) {
        var a = 0.0;
        var b = 0.0;
        if (i < n) {
            a = load_q(base + i * D + c0 + lid.x);
        }
        if (kr < n) {
            b = load_k(base + kr * D + c0 + lid.x);
        }
        tile_a[lid.y][lid.x] = a;
        tile_b[lid.y][lid.x] = b;
        workgroupBarrier();
        for (var c = 0u; c < T; c++) {
            acc += tile_a[lid.y][c] * tile_b[lid.x][c];
        }
        workgroupBarrier();
    }
    if (i < n && j < n) {
        var x = acc * params.scale;
        if (j >= keys(h, i)) {
            x = params.neg_inf;
        }
        store_s((h * n + i) * n + j, x);
    }
}

var<workgroup> part_m: array<f32, 256>;
var<workgroup> part_l: array<f32, 256>;

// Naive 2/3: each row of S replaced by its softmax, one workgroup per row:
// a running (max, sum) per invocation, merged in a tree, then P written.
// A row of −inf (no real key) gives zeros.
@compute @workgroup_size(256)
fn softmax_rows(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) tid: u32) {
    let n = params.n;
    let row = (wg.y * n + wg.x) * n;
    var m = params.neg_inf;
    var l = 0.0;
    for (var j = tid; j < n; j += 256u) {
        let x = load_s(row + j);
        if (x > m) {
            l = l * exp(m - x) + 1.0;
            m = x;
        } else if (x != params.neg_inf) {
            l += exp(x - m);
        }
    }
    part_m[tid] = m;
    part_l[tid] = l;
    workgroupBarrier();
    for (var stride = 128u; stride > 0u; stride >>= 1u) {
        if (tid < stride) {
            let ma = part_m[tid];
            let mb = part_m[tid + stride];
            let mm = max(ma, mb);
            var la = 0.0;
            var lb = 0.0;
            if (ma != params.neg_inf) {
                la = part_l[tid] * exp(ma - mm);
            }
            if (mb != params.neg_inf) {
                lb = part_l[tid + stride] * exp(mb - mm);
            }
            part_m[tid] = mm;
            part_l[tid] = la + lb;
        }
        workgroupBarrier();
    }
    let mx = part_m[0];
    let total = part_l[0];
    for (var j = tid; j < n; j += 256u) {
        let x = load_s(row + j);
        var p = 0.0;
        if (mx != params.neg_inf) {
            p = exp(x - mx) / total;
        }
        store_s(row + j, p);
    }
}

// Naive 3/3: O = P·V in 16 × 16 tiles of O.
@compute @workgroup_size(16, 16)
fn pv(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>) {
    let h = wg.z;
    let n = params.n;
    let i = wg.y * T + lid.y;
    let c = wg.x * T + lid.x;
    var acc = 0.0;
    for (var j0 = 0u; j0 < n; j0 += T) {
        var p = 0.0;
        var b = 0.0;
        if (i < n && j0 + lid.x < n) {
            p = load_s((h * n + i) * n + j0 + lid.x);
        }
        if (j0 + lid.y < n) {
            b = load_v((h * n + j0 + lid.y) * D + c);
        }
        tile_a[lid.y][lid.x] = p;
        tile_b[lid.y][lid.x] = b;
        workgroupBarrier();
        for (var t = 0u; t < T; t++) {
            acc += tile_a[lid.y][t] * tile_b[t][lid.x];
        }
        workgroupBarrier();
    }
    if (i < n) {
        store_o((h * n + i) * D + c, acc);
    }
}

// Fused rows: one invocation per query row, the online softmax over keys
// read from global memory one at a time.
@compute @workgroup_size(64)
fn rows(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) tid: u32) {
    let h = wg.y;
    let n = params.n;
    let i = wg.x * 64u + tid;
    if (i >= n) {
        return;
    }
    let base = h * n * D;
    var qr: array<f32, D>;
    var acc: array<f32, D>;
    load_row_q(&qr, base + i * D);
    var m = params.neg_inf;
    var l = 0.0;
    let e = keys(h, i);
    for (var j = 0u; j < e; j++) {
        let x = dot_k(&qr, base + j * D) * params.scale;
        let mn = max(m, x);
        let r = exp(m - mn);
        let p = exp(x - mn);
        l = l * r + p;
        update_v(&acc, r, p, base + j * D);
        m = mn;
    }
    write_row(h, i, m, l, &acc);
}

var<workgroup> k_tile: array<f32, TILE_VALUES>;
var<workgroup> v_tile: array<f32, TILE_VALUES>;

{{ROW_FNS}}

// Tiled (FlashAttention-2): BR query rows per workgroup, each invocation
// holding its row of Q and of O; K and V staged BC rows at a time.
@compute @workgroup_size(BR)
fn tiled(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) tid: u32) {
    let h = wg.y;
    let n = params.n;
    let r0 = wg.x * BR;
    let r1 = min(r0 + BR, n);
    let i = r0 + tid;
    let live = i < n;
    let base = h * n * D;
    var qr: array<f32, D>;
    var acc: array<f32, D>;
    var m = params.neg_inf;
    var l = 0.0;
    var e = 0u;
    if (live) {
        load_row_q(&qr, base + i * D);
        e = keys(h, i);
    }
    // The last key any row of the block needs: all of them, or with the
    // causal skip only those up to the block's last row.
    var kmax = key_len(h);
    if (params.skip != 0u && params.causal != 0u) {
        kmax = min(kmax, r1);
    }
    for (var j0 = 0u; j0 < kmax; j0 += BC) {
        let here = min(BC, kmax - j0);
        for (var x = tid; x < here * D; x += BR) {
            k_tile[x] = load_k(base + j0 * D + x);
            v_tile[x] = load_v(base + j0 * D + x);
        }
        workgroupBarrier();
        let stop = min(j0 + here, e);
        if (stop > j0) {
            var sc: array<f32, BC>;
            var mt = m;
            for (var t = 0u; t < stop - j0; t++) {
                let x = dot_tile(&qr, t * D) * params.scale;
                sc[t] = x;
                mt = max(mt, x);
            }
            // What the old max was worth against the new one: O and l
            // were summed against m, so both are rescaled to mt.
            let r = exp(m - mt);
            rescale(&acc, r);
            var sum = 0.0;
            for (var t = 0u; t < stop - j0; t++) {
                let p = exp(sc[t] - mt);
                sum += p;
                add_tile(&acc, p, t * D);
            }
            l = l * r + sum;
            m = mt;
        }
        workgroupBarrier();
    }
    if (live) {
        write_row(h, i, m, l, &acc);
    }
}
