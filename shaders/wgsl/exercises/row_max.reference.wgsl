// Reference: row max, one workgroup per row, starting from −inf.
// @harness-declarations

var<workgroup> partial: array<f32, 256>;

@compute @workgroup_size(256)
fn main(@builtin(local_invocation_index) tid: u32,
        @builtin(workgroup_id) wg: vec3<u32>) {
    let row = wg.x;
    let base = row * params.cols;
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
    if (tid == 0u) {
        y[row] = partial[0];
    }
}
