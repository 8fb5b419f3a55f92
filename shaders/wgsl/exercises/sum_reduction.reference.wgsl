// Reference: sum reduction (grid-stride loads, then a tree in workgroup memory).
// @harness-declarations

var<workgroup> partial: array<f32, 256>;

@compute @workgroup_size(256)
fn main(@builtin(local_invocation_index) tid: u32) {
    var total = 0.0;
    for (var i = tid; i < params.n; i += 256u) {
        total += x[i];
    }
    partial[tid] = total;
    for (var stride = 128u; stride > 0u; stride >>= 1u) {
        workgroupBarrier();
        if (tid < stride) {
            partial[tid] += partial[tid + stride];
        }
    }
    if (tid == 0u) {
        y[0] = partial[0];
    }
}
