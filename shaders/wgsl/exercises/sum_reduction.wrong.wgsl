// Known wrong: one element per invocation, no grid-stride loop, so
// everything past the first 256 values is ignored.
struct Params { rows: u32, cols: u32, n: u32, neg_inf: f32 }
@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read_write> y: array<f32>;

var<workgroup> partial: array<f32, 256>;

@compute @workgroup_size(256)
fn main(@builtin(local_invocation_index) tid: u32) {
    partial[tid] = select(0.0, x[tid], tid < params.n);
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
