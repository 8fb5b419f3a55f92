// Known wrong: exp(x) / sum(exp(x)) without subtracting the row max:
// exp(10000) is inf in f32, and inf / inf is NaN.
struct Params { rows: u32, cols: u32, n: u32, neg_inf: f32 }
@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read_write> y: array<f32>;

var<workgroup> partial: array<f32, 256>;

@compute @workgroup_size(256)
fn main(@builtin(local_invocation_index) tid: u32,
        @builtin(workgroup_id) wg: vec3<u32>) {
    let base = wg.x * params.cols;
    var s = 0.0;
    for (var c = tid; c < params.cols; c += 256u) {
        s += exp(x[base + c]);
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
        y[base + c] = exp(x[base + c]) / total;
    }
}
