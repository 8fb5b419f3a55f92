// Reference: FlashAttention forward for one head (see flash_attention.wgsl).
// @harness-declarations

const TILE: u32 = 16u;
var<workgroup> k_tile: array<f32, 1024>;
var<workgroup> v_tile: array<f32, 1024>;

@compute @workgroup_size(64)
fn main(@builtin(local_invocation_index) tid: u32,
        @builtin(workgroup_id) wg: vec3<u32>) {
    let n = params.rows;
    let d = params.cols;
    let keys = min(params.n, n);
    let i = wg.x * 64u + tid;
    let live = i < n;
    let scale = inverseSqrt(f32(d));
    var q: array<f32, 64>;
    var acc: array<f32, 64>;
    if (live) {
        for (var c = 0u; c < d; c++) {
            q[c] = x[i * d + c];
        }
    }
    var m = params.neg_inf;
    var l = 0.0;
    for (var j0 = 0u; j0 < keys; j0 += TILE) {
        let here = min(TILE, keys - j0);
        for (var e = tid; e < here * d; e += 64u) {
            k_tile[e] = x[n * d + j0 * d + e];
            v_tile[e] = x[2u * n * d + j0 * d + e];
        }
        workgroupBarrier();
        if (live) {
            var s: array<f32, 16>;
            var mt = m;
            for (var t = 0u; t < here; t++) {
                var dot = 0.0;
                for (var c = 0u; c < d; c++) {
                    dot += q[c] * k_tile[t * d + c];
                }
                s[t] = dot * scale;
                mt = max(mt, s[t]);
            }
            let r = exp(m - mt);
            l = l * r;
            for (var c = 0u; c < d; c++) {
                acc[c] = acc[c] * r;
            }
            for (var t = 0u; t < here; t++) {
                let p = exp(s[t] - mt);
                l += p;
                for (var c = 0u; c < d; c++) {
                    acc[c] += p * v_tile[t * d + c];
                }
            }
            m = mt;
        }
        workgroupBarrier();
    }
    if (live) {
        for (var c = 0u; c < d; c++) {
            var o = 0.0;
            if (l > 0.0) {
                o = acc[c] / l;
            }
            y[i * d + c] = o;
        }
    }
}
