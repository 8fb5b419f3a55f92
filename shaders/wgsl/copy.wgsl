// The bandwidth ceiling: a vec4 copy with a grid-stride loop, 16-byte loads
// and stores, a bounded number of workgroups.

@compute @workgroup_size({{WG}})
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let stride = nwg.x * nwg.y * WG;
    for (var i = gid.x + gid.y * nwg.x * WG; i < params.n / 4u; i = i + stride) {
        store_y4(i, load_x4(i));
    }
}
