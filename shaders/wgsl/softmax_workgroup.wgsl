// Fused safe softmax, one workgroup per row, reductions in workgroup memory.
// `cached` keeps the row in workgroup memory (one read of global memory per
// element); `reread` is the fallback for rows that do not fit (three reads).
const CACHE: u32 = {{CACHE}}u;
var<workgroup> row_cache: array<f32, {{CACHE}}>;

@compute @workgroup_size({{WG}})
fn cached(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
          @builtin(local_invocation_index) lid: u32) {
    let row = row_index(wid, nwg);
    if (row >= params.rows) {
        return;
    }
    let base = row * params.cols;
    var m = params.neg_inf;
    for (var c = lid; c < params.cols; c = c + WG) {
        let v = load_x(base + c);
        row_cache[c] = v;
        m = max_nan(m, v);
    }
    m = wg_max(m, lid);
    var s = 0.0;
    for (var c = lid; c < params.cols; c = c + WG) {
        s = s + exp(row_cache[c] - m);
    }
    s = wg_sum(s, lid);
    for (var c = lid; c < params.cols; c = c + WG) {
        var out = nan();
        if (is_finite(m)) {
            out = exp(row_cache[c] - m) / s;
        }
        store_y(base + c, out);
    }
}

@compute @workgroup_size({{WG}})
fn reread(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
          @builtin(local_invocation_index) lid: u32) {
    let row = row_index(wid, nwg);
    if (row >= params.rows) {
        return;
    }
    let base = row * params.cols;
    var m = params.neg_inf;
    for (var c = lid; c < params.cols; c = c + WG) {
        m = max_nan(m, load_x(base + c));
    }
    m = wg_max(m, lid);
    var s = 0.0;
    for (var c = lid; c < params.cols; c = c + WG) {
        s = s + exp(load_x(base + c) - m);
    }
    s = wg_sum(s, lid);
    for (var c = lid; c < params.cols; c = c + WG) {
        var out = nan();
        if (is_finite(m)) {
            out = exp(load_x(base + c) - m) / s;
        }
        store_y(base + c, out);
    }
}
