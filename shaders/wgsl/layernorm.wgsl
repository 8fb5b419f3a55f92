// LayerNorm without affine, y = (x − mean) / √(var + ε) per row: as three
// kernels (mean, variance, normalise; the statistics go through `stats`),
// or fused, one workgroup per row, the row kept in workgroup memory when it
// fits. The variance is the mean of squared deviations from the mean, never
// E[x²] − E[x]² (which cancels when the mean is large).

var<workgroup> ln_stat: array<f32, 2>;
var<workgroup> ln_row: array<f32, {{CACHE}}>;

fn ln_row_index(wid: vec3<u32>, nwg: vec3<u32>) -> u32 {
    return row_index(wid, nwg);
}

fn row_total(r: u32, lid: u32) -> f32 {
    let cols = params.cols;
    var s = 0.0;
    for (var c = lid; c < cols; c += WG) {
        s = s + load_x(r * cols + c);
    }
    return wg_sum(s, lid);
}

fn squared_deviations(r: u32, lid: u32, mean: f32) -> f32 {
    let cols = params.cols;
    var s = 0.0;
    for (var c = lid; c < cols; c += WG) {
        let d = load_x(r * cols + c) - mean;
        s = s + d * d;
    }
    return wg_sum(s, lid);
}

@compute @workgroup_size({{WG}})
fn mean(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
) {
    let r = ln_row_index(wid, nwg);
    if (r >= params.rows) {
        return;
    }
    let total = row_total(r, lid);
    if (lid == 0u) {
        store_stats(2u * r, total / f32(params.cols));
    }
}

@compute @workgroup_size({{WG}})
fn variance(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
) {
    let r = ln_row_index(wid, nwg);
    if (r >= params.rows) {
        return;
    }
    if (lid == 0u) {
        ln_stat[0] = load_stats(2u * r);
    }
    let m = workgroupUniformLoad(&ln_stat[0]);
    let total = squared_deviations(r, lid, m);
    if (lid == 0u) {
        store_stats(2u * r + 1u, total / f32(params.cols));
    }
}

@compute @workgroup_size({{WG}})
fn normalize_rows(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
) {
    let r = ln_row_index(wid, nwg);
    if (r >= params.rows) {
        return;
    }
    if (lid == 0u) {
        ln_stat[0] = load_stats(2u * r);
        ln_stat[1] = load_stats(2u * r + 1u);
    }
    workgroupBarrier();
    let m = ln_stat[0];
    let inv = inverseSqrt(ln_stat[1] + {{LN_EPS}});
    let cols = params.cols;
    for (var c = lid; c < cols; c += WG) {
        store_y(r * cols + c, (load_x(r * cols + c) - m) * inv);
    }
}

@compute @workgroup_size({{WG}})
fn fused_cached(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
) {
    let r = ln_row_index(wid, nwg);
    if (r >= params.rows) {
        return;
    }
    let cols = params.cols;
    var s = 0.0;
    for (var c = lid; c < cols; c += WG) {
        let v = load_x(r * cols + c);
        ln_row[c] = v;
        s = s + v;
    }
    // wg_sum's barriers also make the cached row visible to every invocation.
    let m = wg_sum(s, lid) / f32(cols);
    var q = 0.0;
    for (var c = lid; c < cols; c += WG) {
        let d = ln_row[c] - m;
        q = q + d * d;
    }
    let inv = inverseSqrt(wg_sum(q, lid) / f32(cols) + {{LN_EPS}});
    for (var c = lid; c < cols; c += WG) {
        store_y(r * cols + c, (ln_row[c] - m) * inv);
    }
}

@compute @workgroup_size({{WG}})
fn fused_reread(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
) {
    let r = ln_row_index(wid, nwg);
    if (r >= params.rows) {
        return;
    }
    let cols = params.cols;
    let m = row_total(r, lid) / f32(cols);
    let inv = inverseSqrt(squared_deviations(r, lid, m) / f32(cols) + {{LN_EPS}});
    for (var c = lid; c < cols; c += WG) {
        store_y(r * cols + c, (load_x(r * cols + c) - m) * inv);
    }
}
