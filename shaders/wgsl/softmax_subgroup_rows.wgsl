// One subgroup per row: online softmax where the only reductions are
// subgroupMax / subgroupAdd, so no workgroup barrier runs at all. Suits rows
// of up to a few thousand columns; each workgroup takes `params.aux` rows.
fn merge(a: vec2<f32>, b: vec2<f32>) -> vec2<f32> {
    let m = max_nan(a.x, b.x);
    if (!is_finite(m)) {
        return vec2<f32>(m, 0.0);
    }
    return vec2<f32>(m, a.y * exp(a.x - m) + b.y * exp(b.x - m));
}

@compute @workgroup_size({{WG}})
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32,
        @builtin(subgroup_size) sg_size: u32, @builtin(subgroup_invocation_id) lane: u32) {
    let sg = lid / sg_size;
    let row = row_index(wid, nwg) * params.aux + sg;
    // Whole subgroups leave together, so the subgroup operations below stay uniform.
    if (sg >= params.aux || row >= params.rows) {
        return;
    }
    let base = row * params.cols;
    var acc = vec2<f32>(params.neg_inf, 0.0);
    for (var c = lane; c < params.cols; c = c + sg_size) {
        acc = merge(acc, vec2<f32>(load_x(base + c), 1.0));
    }
    var m = subgroupMax(acc.x);
    if (subgroupAny(is_nan(acc.x))) {
        m = nan();
    }
    var scaled = 0.0;
    if (is_finite(m)) {
        scaled = acc.y * exp(acc.x - m);
    }
    let d = subgroupAdd(scaled);
    let finite = is_finite(m);
    for (var c = lane; c < params.cols; c = c + sg_size) {
        var out = nan();
        if (finite) {
            out = exp(load_x(base + c) - m) / d;
        }
        store_y(base + c, out);
    }
}

// The same, four columns at a time with 16-byte loads (columns a multiple of 4).
@compute @workgroup_size({{WG}})
fn main_vec4(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
             @builtin(local_invocation_index) lid: u32,
             @builtin(subgroup_size) sg_size: u32, @builtin(subgroup_invocation_id) lane: u32) {
    let sg = lid / sg_size;
    let row = row_index(wid, nwg) * params.aux + sg;
    if (sg >= params.aux || row >= params.rows) {
        return;
    }
    let quads = params.cols / 4u;
    let base = row * quads;
    var acc = vec2<f32>(params.neg_inf, 0.0);
    for (var q = lane; q < quads; q = q + sg_size) {
        let v = load_x4(base + q);
        let m4 = max_nan(max_nan(v.x, v.y), max_nan(v.z, v.w));
        var d4 = 0.0;
        if (is_finite(m4)) {
            let e = exp(v - vec4<f32>(m4));
            d4 = e.x + e.y + e.z + e.w;
        }
        acc = merge(acc, vec2<f32>(m4, d4));
    }
    var m = subgroupMax(acc.x);
    if (subgroupAny(is_nan(acc.x))) {
        m = nan();
    }
    var scaled = 0.0;
    if (is_finite(m)) {
        scaled = acc.y * exp(acc.x - m);
    }
    let d = subgroupAdd(scaled);
    let finite = is_finite(m);
    for (var q = lane; q < quads; q = q + sg_size) {
        var out = vec4<f32>(nan());
        if (finite) {
            out = exp(load_x4(base + q) - vec4<f32>(m)) / d;
        }
        store_y4(base + q, out);
    }
}
