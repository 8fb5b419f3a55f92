// Online softmax with subgroup reductions: the (max, sum) pairs are merged
// inside each subgroup with subgroupMax / subgroupAdd, so the workgroup tree
// only spans one value per subgroup (fewer barriers).
fn merge(a: vec2<f32>, b: vec2<f32>) -> vec2<f32> {
    let m = max_nan(a.x, b.x);
    if (!is_finite(m)) {
        // −inf (nothing yet), +inf or NaN: the sum is meaningless, the row is decided.
        return vec2<f32>(m, 0.0);
    }
    return vec2<f32>(m, a.y * exp(a.x - m) + b.y * exp(b.x - m));
}

// At most WG / 4 subgroups (subgroups have at least 4 invocations).
var<workgroup> partial: array<vec2<f32>, {{WG_DIV4}}>;
var<workgroup> result: vec2<f32>;

@compute @workgroup_size({{WG}})
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32,
        @builtin(subgroup_size) sg_size: u32, @builtin(subgroup_invocation_id) sg_lane: u32) {
    let row = row_index(wid, nwg);
    if (row >= params.rows) {
        return;
    }
    let base = row * params.cols;
    var acc = vec2<f32>(params.neg_inf, 0.0);
    for (var c = lid; c < params.cols; c = c + WG) {
        acc = merge(acc, vec2<f32>(load_x(base + c), 1.0));
    }
    // Within the subgroup: the max, then every lane rescales its sum to it.
    var m = subgroupMax(acc.x);
    if (subgroupAny(is_nan(acc.x))) {
        m = nan();
    }
    var scaled = 0.0;
    if (is_finite(m)) {
        scaled = acc.y * exp(acc.x - m);
    }
    let d = subgroupAdd(scaled);
    let subgroups = WG / sg_size;
    let sg = lid / sg_size;
    if (sg_lane == 0u) {
        partial[sg] = vec2<f32>(m, d);
    }
    workgroupBarrier();
    if (lid == 0u) {
        var total = vec2<f32>(params.neg_inf, 0.0);
        for (var i = 0u; i < subgroups; i = i + 1u) {
            total = merge(total, partial[i]);
        }
        result = total;
    }
    let total = workgroupUniformLoad(&result);
    for (var c = lid; c < params.cols; c = c + WG) {
        var out = nan();
        if (is_finite(total.x)) {
            out = exp(load_x(base + c) - total.x) / total.y;
        }
        store_y(base + c, out);
    }
}
