// The bandwidth ceiling: a vec4 copy with a grid-stride loop, 16-byte loads
// and stores, a bounded number of workgroups.
struct Params {
    rows: u32,
    cols: u32,
    n: u32,
    neg_inf: f32,
    aux: u32,
    pad0: u32,
    pad1: u32,
    pad2: u32,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(5) var<storage, read> x4: array<vec4<f32>>;
@group(0) @binding(6) var<storage, read_write> y4: array<vec4<f32>>;
@group(0) @binding(4) var<storage, read_write> counters: array<atomic<u32>, 2>;

@compute @workgroup_size({{WG}})
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let stride = nwg.x * nwg.y * {{WG}}u;
    for (var i = gid.x + gid.y * nwg.x * {{WG}}u; i < params.n / 4u; i = i + stride) {
        {{COUNT_LOAD16}}
        let v = x4[i];
        {{COUNT_STORE16}}
        y4[i] = v;
    }
}
