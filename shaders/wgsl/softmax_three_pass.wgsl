// Safe softmax as three dispatches, one workgroup per row in each:
// the row max, then Σ exp(x − max), then the normalised output.
// stats[2·row] holds the max, stats[2·row + 1] the sum.
@compute @workgroup_size({{WG}})
fn row_max(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
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
    if (lid == 0u) {
        store_stats(2u * row, m);
    }
}

var<workgroup> row_stats: vec2<f32>;

@compute @workgroup_size({{WG}})
fn row_sum(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
           @builtin(local_invocation_index) lid: u32) {
    let row = row_index(wid, nwg);
    if (row >= params.rows) {
        return;
    }
    if (lid == 0u) {
        row_stats.x = load_stats(2u * row);
    }
    let m = workgroupUniformLoad(&row_stats).x;
    let base = row * params.cols;
    var s = 0.0;
    for (var c = lid; c < params.cols; c = c + WG) {
        s = s + exp(load_x(base + c) - m);
    }
    s = wg_sum(s, lid);
    if (lid == 0u) {
        store_stats(2u * row + 1u, s);
    }
}

@compute @workgroup_size({{WG}})
fn normalize(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
             @builtin(local_invocation_index) lid: u32) {
    let row = row_index(wid, nwg);
    if (row >= params.rows) {
        return;
    }
    if (lid == 0u) {
        row_stats = vec2<f32>(load_stats(2u * row), load_stats(2u * row + 1u));
    }
    let st = workgroupUniformLoad(&row_stats);
    let base = row * params.cols;
    let finite = is_finite(st.x);
    for (var c = lid; c < params.cols; c = c + WG) {
        var out = nan();
        if (finite) {
            out = exp(load_x(base + c) - st.x) / st.y;
        }
        store_y(base + c, out);
    }
}
