// Naive, unsafe softmax: exp(x) / Σ exp(x), no max subtracted. One workgroup
// per row: one pass to sum, one to normalise. exp overflows above ~88.7.
// Like every variant, a row whose maximum is not finite (NaN, +inf, or all
// −inf) comes out NaN; the maximum is tracked only for that rule.
@compute @workgroup_size({{WG}})
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let row = row_index(wid, nwg);
    if (row >= params.rows) {
        return;
    }
    let base = row * params.cols;
    var s = 0.0;
    var m = params.neg_inf;
    for (var c = lid; c < params.cols; c = c + WG) {
        let v = load_x(base + c);
        m = max_nan(m, v);
        s = s + exp(v);
    }
    s = wg_sum(s, lid);
    m = wg_max(m, lid);
    for (var c = lid; c < params.cols; c = c + WG) {
        var out = nan();
        if (is_finite(m)) {
            out = exp(load_x(base + c)) / s;
        }
        store_y(base + c, out);
    }
}
