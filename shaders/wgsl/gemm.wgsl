// C = A·B in f32: A is M × K (params.rows × params.n), B is K × N
// (params.n × params.cols), both row-major in `x`, B from x[params.aux] on.
// C (M × N) goes to `y`. Every rung reads only values inside A and B (a
// tile's edge beyond them is filled with zeros, never loaded), so the
// instrumented build counts exactly what the plan says.

fn a_at(i: u32, p: u32) -> f32 {
    return load_x(i * params.n + p);
}

fn b_at(p: u32, j: u32) -> f32 {
    return load_x(params.aux + p * params.cols + j);
}

// One output per invocation; neighbouring invocations take neighbouring
// ROWS of C, so their reads of A are K floats apart (uncoalesced) and their
// writes N floats apart.
@compute @workgroup_size({{WG}})
fn naive(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
) {
    let m = params.rows;
    let g = row_index(wid, nwg) * WG + lid;
    if (g >= m * params.cols) {
        return;
    }
    let i = g % m;
    let j = g / m;
    var acc = 0.0;
    for (var p = 0u; p < params.n; p++) {
        acc = acc + a_at(i, p) * b_at(p, j);
    }
    store_y(i * params.cols + j, acc);
}

// One output per invocation; neighbours take neighbouring COLUMNS of C:
// they read one value of A (the same for all) and consecutive values of B.
@compute @workgroup_size({{WG}})
fn coalesced(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
) {
    let n = params.cols;
    let g = row_index(wid, nwg) * WG + lid;
    if (g >= params.rows * n) {
        return;
    }
    let i = g / n;
    let j = g % n;
    var acc = 0.0;
    for (var p = 0u; p < params.n; p++) {
        acc = acc + a_at(i, p) * b_at(p, j);
    }
    store_y(i * n + j, acc);
}

// {{T}} × {{T}} tiles: the workgroup stages a tile of A and one of B in
// workgroup memory (CUDA's __shared__), waits at a barrier
// (__syncthreads), and each invocation then reads {{T}} values of each from
// there instead of from global memory.
var<workgroup> tile_a: array<f32, {{T2}}>;
var<workgroup> tile_b: array<f32, {{T2}}>;

@compute @workgroup_size({{T}}, {{T}})
fn tiled(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
) {
    let m = params.rows;
    let n = params.cols;
    let k = params.n;
    let tiles_n = (n + {{T}}u - 1u) / {{T}}u;
    let t = row_index(wid, nwg);
    if (t >= ((m + {{T}}u - 1u) / {{T}}u) * tiles_n) {
        return;
    }
    let r = lid / {{T}}u;
    let c = lid % {{T}}u;
    let i = (t / tiles_n) * {{T}}u + r;
    let j = (t % tiles_n) * {{T}}u + c;
    var acc = 0.0;
    let steps = (k + {{T}}u - 1u) / {{T}}u;
    for (var q = 0u; q < steps; q++) {
        let ka = q * {{T}}u + c;
        var va = 0.0;
        if (i < m && ka < k) {
            va = a_at(i, ka);
        }
        tile_a[lid] = va;
        let kb = q * {{T}}u + r;
        var vb = 0.0;
        if (kb < k && j < n) {
            vb = b_at(kb, j);
        }
        tile_b[lid] = vb;
        workgroupBarrier();
        for (var p = 0u; p < {{T}}u; p++) {
            acc = acc + tile_a[r * {{T}}u + p] * tile_b[p * {{T}}u + c];
        }
        workgroupBarrier();
    }
    if (i < m && j < n) {
        store_y(i * n + j, acc);
    }
}

// Register blocking: tiles of C {{RT}} × {{RT}}, {{KD}} deep in K; each of
// the 16 × 16 invocations keeps a {{RB}} × {{RB}} block of C in registers
// (the accumulators below), so each value read from workgroup memory feeds
// {{RB}} multiply-adds. The staging, the block's arithmetic and its stores
// are unrolled in the text (written out for the block size), so the only
// loops are over k-tiles and over the tile's depth.
// Both tiles are stored K-major (A's transposed: depth × rows), as vec4s,
// so an invocation's {{RB}} values of A and of B at one depth are whole
// vec4s side by side: one 16-byte read where scalar reads would be four
// (on llvmpipe, where every workgroup-memory read is a per-lane gather,
// this alone took the 8 × 8 block from 6.5 to 11.5 GFLOP/s at 1024³).
var<workgroup> reg_a: array<vec4<f32>, {{RT_KD_DIV4}}>; // {{KD}} of K × {{RT}} rows
var<workgroup> reg_b: array<vec4<f32>, {{RT_KD_DIV4}}>; // {{KD}} of K × {{RT}} columns

fn put_a(e: u32, v: f32) {
    reg_a[e / 4u][e % 4u] = v;
}

fn put_b(e: u32, v: f32) {
    reg_b[e / 4u][e % 4u] = v;
}

// Stages value e of A's k-tile starting at k0.
fn stage_a(row0: u32, k0: u32, e: u32) {
    let r = e / {{KD}}u;
    let d = e % {{KD}}u;
    var v = 0.0;
    if (row0 + r < params.rows && k0 + d < params.n) {
        v = a_at(row0 + r, k0 + d);
    }
    put_a(d * {{RT}}u + r, v);
}

fn stage_b(col0: u32, k0: u32, e: u32) {
    let p = k0 + e / {{RT}}u;
    let j = col0 + e % {{RT}}u;
    var v = 0.0;
    if (p < params.n && j < params.cols) {
        v = b_at(p, j);
    }
    put_b(e, v);
}

// The same tiles read 16 bytes at a time (K and N multiples of 4, so a vec4
// is wholly inside A or B or wholly outside): vec4 number v of each tile.
fn stage4_a(row0: u32, k0: u32, v: u32) {
    let r = v / {{KD_DIV4}}u;
    let p = k0 + (v % {{KD_DIV4}}u) * 4u;
    var x = vec4<f32>(0.0);
    if (row0 + r < params.rows && p < params.n) {
        x = load_x4(((row0 + r) * params.n + p) / 4u);
    }
    let d = (v % {{KD_DIV4}}u) * 4u;
    put_a(d * {{RT}}u + r, x.x);
    put_a((d + 1u) * {{RT}}u + r, x.y);
    put_a((d + 2u) * {{RT}}u + r, x.z);
    put_a((d + 3u) * {{RT}}u + r, x.w);
}

fn stage4_b(col0: u32, k0: u32, v: u32) {
    let p = k0 + v / {{RT_DIV4}}u;
    let j = col0 + (v % {{RT_DIV4}}u) * 4u;
    var x = vec4<f32>(0.0);
    if (p < params.n && j < params.cols) {
        x = load_x4((params.aux + p * params.cols + j) / 4u);
    }
    reg_b[v] = x;
}

fn store_at(i: u32, j: u32, v: f32) {
    if (i < params.rows && j < params.cols) {
        store_y(i * params.cols + j, v);
    }
}

// The block: rows row0 + tr·{{RB}} …, columns col0 + tc·{{RB}} ….
fn register_blocked(lid: u32, t: u32, vec4_loads: bool) {
    let tiles_n = (params.cols + {{RT}}u - 1u) / {{RT}}u;
    let row0 = (t / tiles_n) * {{RT}}u;
    let col0 = (t % tiles_n) * {{RT}}u;
    let tr = lid / 16u;
    let tc = lid % 16u;
{{RB_ACC}}
    let steps = (params.n + {{KD}}u - 1u) / {{KD}}u;
    for (var q = 0u; q < steps; q++) {
        let k0 = q * {{KD}}u;
        if (vec4_loads) {
{{RB_STAGE4}}
        } else {
{{RB_STAGE}}
        }
        workgroupBarrier();
        for (var p = 0u; p < {{KD}}u; p++) {
            let bo = p * {{RT}}u + tc * {{RB}}u;
            let ao = p * {{RT}}u + tr * {{RB}}u;
{{RB_FMA}}
        }
        workgroupBarrier();
    }
    let i0 = row0 + tr * {{RB}}u;
    let j0 = col0 + tc * {{RB}}u;
{{RB_STORE}}
}

fn register_tile(wid: vec3<u32>, nwg: vec3<u32>) -> u32 {
    return row_index(wid, nwg);
}

fn register_tiles() -> u32 {
    return ((params.rows + {{RT}}u - 1u) / {{RT}}u) * ((params.cols + {{RT}}u - 1u) / {{RT}}u);
}

@compute @workgroup_size({{WG}})
fn blocked(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
) {
    let t = register_tile(wid, nwg);
    if (t >= register_tiles()) {
        return;
    }
    register_blocked(lid, t, false);
}

@compute @workgroup_size({{WG}})
fn blocked_vec4(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
) {
    let t = register_tile(wid, nwg);
    if (t >= register_tiles()) {
        return;
    }
    register_blocked(lid, t, true);
}
