// Reference: online softmax — one read for (max, sum), a tree of merges, then normalise.
// @harness-declarations

var<workgroup> part_m: array<f32, 256>;
var<workgroup> part_s: array<f32, 256>;

fn merged_sum(ma: f32, sa: f32, mb: f32, sb: f32, m: f32) -> f32 {
    if (m == params.neg_inf) {
        return 0.0;
    }
    return sa * exp(ma - m) + sb * exp(mb - m);
}

@compute @workgroup_size(256)
fn main(@builtin(local_invocation_index) tid: u32,
        @builtin(workgroup_id) wg: vec3<u32>) {
    let base = wg.x * params.cols;
    var m = params.neg_inf;
    var s = 0.0;
    for (var c = tid; c < params.cols; c += 256u) {
        let v = x[base + c];
        if (v == params.neg_inf) {
            continue;
        }
        if (v > m) {
            s = s * exp(m - v) + 1.0;
            m = v;
        } else {
            s += exp(v - m);
        }
    }
    part_m[tid] = m;
    part_s[tid] = s;
    for (var stride = 128u; stride > 0u; stride >>= 1u) {
        workgroupBarrier();
        if (tid < stride) {
            let ma = part_m[tid];
            let mb = part_m[tid + stride];
            let mm = max(ma, mb);
            part_s[tid] = merged_sum(ma, part_s[tid], mb, part_s[tid + stride], mm);
            part_m[tid] = mm;
        }
    }
    workgroupBarrier();
    let row_max = part_m[0];
    let total = part_s[0];
    for (var c = tid; c < params.cols; c += 256u) {
        y[base + c] = exp(x[base + c] - row_max) / total;
    }
}
