// C = A·Bᵀ in integers: A is M × K and Bt is N × K (a weight's own
// [out, in] layout), both int8 packed four to a u32 word along K, lowest
// byte first, each row params.k4 words (the last padded with zeros). C is
// M × N in i32: every product is at most 2¹⁴, so K ≤ 131,071 (the host
// refuses more) keeps the sum inside an i32. One output per invocation;
// neighbouring invocations take neighbouring columns of C.
//
// {{COUNT_LOAD}} and {{COUNT_STORE}} are empty in the plain build and an
// atomic count of the bytes in the instrumented one.

struct Params {
    m: u32,
    n: u32,
    k4: u32,
    // 0: dot4I8Packed, 1: extractBits.
    rung: u32,
    pad4: u32,
    pad5: u32,
    pad6: u32,
    pad7: u32,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> a: array<u32>;
@group(0) @binding(2) var<storage, read> bt: array<u32>;
@group(0) @binding(3) var<storage, read_write> c: array<i32>;
{{COUNTERS}}

fn load_a(w: u32) -> u32 {
    {{COUNT_LOAD}}
    return a[w];
}

fn load_b(w: u32) -> u32 {
    {{COUNT_LOAD}}
    return bt[w];
}

fn store_c(g: u32, v: i32) {
    {{COUNT_STORE}}
    c[g] = v;
}

// Row i of A against row j of Bᵀ, four products and their sum in one
// call per word: a native dot-product instruction where the driver has
// one, a polyfill where it does not.
fn sum_dot4(i: u32, j: u32) -> i32 {
    var acc = 0i;
    for (var w = 0u; w < params.k4; w++) {
        acc += dot4I8Packed(load_a(i * params.k4 + w), load_b(j * params.k4 + w));
    }
    return acc;
}

// Lane l of a packed word, sign-extended to i32.
fn lane(word: u32, l: u32) -> i32 {
    return extractBits(bitcast<i32>(word), l * 8u, 8u);
}

// The same sum with each word unpacked by hand: four extracts per operand
// and four multiplies per word.
fn sum_extract(i: u32, j: u32) -> i32 {
    var acc = 0i;
    for (var w = 0u; w < params.k4; w++) {
        let x = load_a(i * params.k4 + w);
        let y = load_b(j * params.k4 + w);
        acc += lane(x, 0u) * lane(y, 0u) + lane(x, 1u) * lane(y, 1u)
            + lane(x, 2u) * lane(y, 2u) + lane(x, 3u) * lane(y, 3u);
    }
    return acc;
}

// One output per invocation (the grid wraps into y past 65,535
// workgroups); params.rung picks the sum, the same for every invocation.
@compute @workgroup_size(64)
fn main(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
) {
    let g = (wid.x + wid.y * nwg.x) * 64u + lid;
    if (g >= params.m * params.n) {
        return;
    }
    let i = g / params.n;
    let j = g % params.n;
    if (params.rung == 0u) {
        store_c(g, sum_dot4(i, j));
    } else {
        store_c(g, sum_extract(i, j));
    }
}
