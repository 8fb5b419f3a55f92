// Reference: row max, one workgroup per row, starting from −inf.
struct Params { rows: u32, cols: u32, n: u32, neg_inf: f32 }
@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read_write> y: array<f32>;

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
