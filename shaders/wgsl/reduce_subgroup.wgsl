// 7. Grid-stride loads, then subgroup reductions: only one value per subgroup
// goes through workgroup memory.
fn combine(a: f32, b: f32) -> f32 {
    {{COMBINE}}
}

fn identity() -> f32 {
    return {{IDENTITY}};
}

fn subgroup_combine(v: f32) -> f32 {
    {{SUBGROUP_COMBINE}}
}

var<workgroup> partial: array<f32, {{WG_DIV4}}>;

@compute @workgroup_size({{WG}})
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32,
        @builtin(subgroup_size) sg_size: u32, @builtin(subgroup_invocation_id) sg_lane: u32) {
    let w = wid.x + wid.y * nwg.x;
    let stride = nwg.x * nwg.y * WG;
    var acc = identity();
    for (var i = w * WG + lid; i < params.n; i = i + stride) {
        acc = combine(acc, load_x(i));
    }
    let v = subgroup_combine(acc);
    if (sg_lane == 0u) {
        partial[lid / sg_size] = v;
    }
    workgroupBarrier();
    if (lid == 0u) {
        var total = identity();
        for (var i = 0u; i < WG / sg_size; i = i + 1u) {
            total = combine(total, partial[i]);
        }
        store_y(w, total);
    }
}

// The same with 16-byte loads (first level, n a multiple of 4).
@compute @workgroup_size({{WG}})
fn main_vec4(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
             @builtin(local_invocation_index) lid: u32,
             @builtin(subgroup_size) sg_size: u32, @builtin(subgroup_invocation_id) sg_lane: u32) {
    let w = wid.x + wid.y * nwg.x;
    let stride = nwg.x * nwg.y * WG;
    var acc = identity();
    for (var i = w * WG + lid; i < params.n / 4u; i = i + stride) {
        let v = load_x4(i);
        acc = combine(acc, combine(combine(v.x, v.y), combine(v.z, v.w)));
    }
    let v = subgroup_combine(acc);
    if (sg_lane == 0u) {
        partial[lid / sg_size] = v;
    }
    workgroupBarrier();
    if (lid == 0u) {
        var total = identity();
        for (var i = 0u; i < WG / sg_size; i = i + 1u) {
            total = combine(total, partial[i]);
        }
        store_y(w, total);
    }
}
