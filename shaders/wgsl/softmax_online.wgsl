// Online softmax (Milakov & Gimelshein, 2018): one pass keeps a running max m
// and a sum d rescaled whenever m grows; a second pass normalises. Two reads
// and one write per element, instead of three reads and one write.

// Merges two (max, sum) pairs. An empty pair has m = −inf and d = 0.
fn merge(a: vec2<f32>, b: vec2<f32>) -> vec2<f32> {
    let m = max_nan(a.x, b.x);
    if (!is_finite(m)) {
        // −inf (nothing yet), +inf or NaN: the sum is meaningless, the row is decided.
        return vec2<f32>(m, 0.0);
    }
    return vec2<f32>(m, a.y * exp(a.x - m) + b.y * exp(b.x - m));
}

var<workgroup> pairs: array<vec2<f32>, {{WG}}>;

@compute @workgroup_size({{WG}})
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let row = row_index(wid, nwg);
    if (row >= params.rows) {
        return;
    }
    let base = row * params.cols;
    var acc = vec2<f32>(params.neg_inf, 0.0);
    for (var c = lid; c < params.cols; c = c + WG) {
        acc = merge(acc, vec2<f32>(load_x(base + c), 1.0));
    }
    pairs[lid] = acc;
    workgroupBarrier();
    for (var s = WG / 2u; s > 0u; s = s >> 1u) {
        if (lid < s) {
            pairs[lid] = merge(pairs[lid], pairs[lid + s]);
        }
        workgroupBarrier();
    }
    let total = pairs[0];
    for (var c = lid; c < params.cols; c = c + WG) {
        var out = nan();
        if (is_finite(total.x)) {
            out = exp(load_x(base + c) - total.x) / total.y;
        }
        store_y(base + c, out);
    }
}
