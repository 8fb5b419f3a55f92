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

// 16 × 16 tiles: the workgroup stages a tile of A and one of B in
// workgroup memory (CUDA's __shared__), waits at a barrier
// (__syncthreads), and each invocation then reads 16 values of each from
// there instead of from global memory.
var<workgroup> tile_a: array<f32, 256>;
var<workgroup> tile_b: array<f32, 256>;

@compute @workgroup_size(16, 16)
fn tiled(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
) {
    let m = params.rows;
    let n = params.cols;
    let k = params.n;
    let tiles_n = (n + 15u) / 16u;
    let t = row_index(wid, nwg);
    if (t >= ((m + 15u) / 16u) * tiles_n) {
        return;
    }
    let r = lid / 16u;
    let c = lid % 16u;
    let i = (t / tiles_n) * 16u + r;
    let j = (t % tiles_n) * 16u + c;
    var acc = 0.0;
    let steps = (k + 15u) / 16u;
    for (var q = 0u; q < steps; q++) {
        let ka = q * 16u + c;
        var va = 0.0;
        if (i < m && ka < k) {
            va = a_at(i, ka);
        }
        tile_a[lid] = va;
        let kb = q * 16u + r;
        var vb = 0.0;
        if (kb < k && j < n) {
            vb = b_at(kb, j);
        }
        tile_b[lid] = vb;
        workgroupBarrier();
        for (var p = 0u; p < 16u; p++) {
            acc = acc + tile_a[r * 16u + p] * tile_b[p * 16u + c];
        }
        workgroupBarrier();
    }
    if (i < m && j < n) {
        store_y(i * n + j, acc);
    }
}

// 64 × 64 tiles of C, 16 deep in K; each of the 256 invocations keeps a
// 4 × 4 block of C in registers (four vec4 accumulators), so each value
// read from workgroup memory feeds four multiply-adds.
var<workgroup> reg_a: array<f32, 1024>; // 64 rows × 16 of K
var<workgroup> reg_b: array<f32, 1024>; // 16 of K × 64 columns

// Stages value e (0..1024) of the k-tile starting at k0.
fn stage_a(row0: u32, k0: u32, e: u32) {
    let i = row0 + e / 16u;
    let p = k0 + e % 16u;
    var v = 0.0;
    if (i < params.rows && p < params.n) {
        v = a_at(i, p);
    }
    reg_a[e] = v;
}

fn stage_b(col0: u32, k0: u32, e: u32) {
    let p = k0 + e / 64u;
    let j = col0 + e % 64u;
    var v = 0.0;
    if (p < params.n && j < params.cols) {
        v = b_at(p, j);
    }
    reg_b[e] = v;
}

// The same tile read 16 bytes at a time: a row of the A tile is four vec4s
// (K a multiple of 4), a row of the B tile sixteen (N a multiple of 4), so
// each invocation loads one vec4 of each per k-tile.
fn stage4(row0: u32, col0: u32, k0: u32, lid: u32) {
    let ar = lid / 4u;
    let ap = k0 + (lid % 4u) * 4u;
    var va = vec4<f32>(0.0);
    if (row0 + ar < params.rows && ap < params.n) {
        va = load_x4(((row0 + ar) * params.n + ap) / 4u);
    }
    let ea = ar * 16u + (lid % 4u) * 4u;
    reg_a[ea] = va.x;
    reg_a[ea + 1u] = va.y;
    reg_a[ea + 2u] = va.z;
    reg_a[ea + 3u] = va.w;
    let bp = k0 + lid / 16u;
    let bj = col0 + (lid % 16u) * 4u;
    var vb = vec4<f32>(0.0);
    if (bp < params.n && bj < params.cols) {
        vb = load_x4((params.aux + bp * params.cols + bj) / 4u);
    }
    let eb = (lid / 16u) * 64u + (lid % 16u) * 4u;
    reg_b[eb] = vb.x;
    reg_b[eb + 1u] = vb.y;
    reg_b[eb + 2u] = vb.z;
    reg_b[eb + 3u] = vb.w;
}

// The 4 × 4 block: rows row0 + tr·4 …, columns col0 + tc·4 ….
fn register_blocked(lid: u32, t: u32, vec4_loads: bool) {
    let m = params.rows;
    let n = params.cols;
    let tiles_n = (n + 63u) / 64u;
    let row0 = (t / tiles_n) * 64u;
    let col0 = (t % tiles_n) * 64u;
    let tr = lid / 16u;
    let tc = lid % 16u;
    var acc0 = vec4<f32>(0.0);
    var acc1 = vec4<f32>(0.0);
    var acc2 = vec4<f32>(0.0);
    var acc3 = vec4<f32>(0.0);
    let steps = (params.n + 15u) / 16u;
    for (var q = 0u; q < steps; q++) {
        let k0 = q * 16u;
        if (vec4_loads) {
            stage4(row0, col0, k0, lid);
        } else {
            stage_a(row0, k0, lid);
            stage_a(row0, k0, lid + 256u);
            stage_a(row0, k0, lid + 512u);
            stage_a(row0, k0, lid + 768u);
            stage_b(col0, k0, lid);
            stage_b(col0, k0, lid + 256u);
            stage_b(col0, k0, lid + 512u);
            stage_b(col0, k0, lid + 768u);
        }
        workgroupBarrier();
        for (var p = 0u; p < 16u; p++) {
            let bo = p * 64u + tc * 4u;
            let b = vec4<f32>(reg_b[bo], reg_b[bo + 1u], reg_b[bo + 2u], reg_b[bo + 3u]);
            let ao = tr * 64u + p;
            acc0 = acc0 + reg_a[ao] * b;
            acc1 = acc1 + reg_a[ao + 16u] * b;
            acc2 = acc2 + reg_a[ao + 32u] * b;
            acc3 = acc3 + reg_a[ao + 48u] * b;
        }
        workgroupBarrier();
    }
    let i0 = row0 + tr * 4u;
    let j0 = col0 + tc * 4u;
    store_block(i0, j0, acc0);
    store_block(i0 + 1u, j0, acc1);
    store_block(i0 + 2u, j0, acc2);
    store_block(i0 + 3u, j0, acc3);
}

fn store_block(i: u32, j: u32, v: vec4<f32>) {
    if (i >= params.rows) {
        return;
    }
    let n = params.cols;
    let base = i * n;
    if (j < n) { store_y(base + j, v.x); }
    if (j + 1u < n) { store_y(base + j + 1u, v.y); }
    if (j + 2u < n) { store_y(base + j + 2u, v.z); }
    if (j + 3u < n) { store_y(base + j + 3u, v.w); }
}

fn register_tile(wid: vec3<u32>, nwg: vec3<u32>) -> u32 {
    return row_index(wid, nwg);
}

fn register_tiles() -> u32 {
    return ((params.rows + 63u) / 64u) * ((params.cols + 63u) / 64u);
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
