// The compute roof: each invocation runs params.aux rounds of eight
// independent fused multiply-adds on registers (x ← x·c + d, which
// converges, so nothing overflows), then writes their sum. Almost no
// memory traffic: its speed is the arithmetic's.
@compute @workgroup_size({{WG}})
fn main(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
) {
    let g = row_index(wid, nwg) * WG + lid;
    if (g >= params.n) {
        return;
    }
    let c = {{FMA_MUL}};
    let d = {{FMA_ADD}};
    let start = f32(g % 1024u) / 1024.0;
    var x0 = start;
    var x1 = start + 1.0;
    var x2 = start + 2.0;
    var x3 = start + 3.0;
    var x4 = start + 4.0;
    var x5 = start + 5.0;
    var x6 = start + 6.0;
    var x7 = start + 7.0;
    for (var it = 0u; it < params.aux; it++) {
        x0 = fma(x0, c, d);
        x1 = fma(x1, c, d);
        x2 = fma(x2, c, d);
        x3 = fma(x3, c, d);
        x4 = fma(x4, c, d);
        x5 = fma(x5, c, d);
        x6 = fma(x6, c, d);
        x7 = fma(x7, c, d);
    }
    store_y(g, ((x0 + x1) + (x2 + x3)) + ((x4 + x5) + (x6 + x7)));
}
