// Reference: safe softmax (max, then sum of exp(x − max), then normalise).
// @harness-declarations

var<workgroup> partial: array<f32, 256>;

@compute @workgroup_size(256)
fn main(@builtin(local_invocation_index) tid: u32,
        @builtin(workgroup_id) wg: vec3<u32>) {
    let base = wg.x * params.cols;
    var m = params.neg_inf;
    for (var c = tid; c < params.cols; c += 256u) {
        m = max(m, x[base + c]);
    }
    partial[tid] = m;
    for (var stride = 128u; stride > 0u; stride >>= 1u) {
        workgroupBarrier();
        if (tid < stride) {
            partial[tid] = max(partial[tid], partial[tid + stride]);
        }
    }
    workgroupBarrier();
    let row_max = partial[0];
    workgroupBarrier();
    var s = 0.0;
    for (var c = tid; c < params.cols; c += 256u) {
        s += exp(x[base + c] - row_max);
    }
    partial[tid] = s;
    for (var stride = 128u; stride > 0u; stride >>= 1u) {
        workgroupBarrier();
        if (tid < stride) {
            partial[tid] += partial[tid + stride];
        }
    }
    workgroupBarrier();
    let total = partial[0];
    for (var c = tid; c < params.cols; c += 256u) {
        y[base + c] = exp(x[base + c] - row_max) / total;
    }
}
