//! The GEMM kernels' size-dependent text: the tiled kernel's tile edge, and
//! the register-blocked kernels' accumulators, staging, arithmetic and
//! stores written out for one block size (unrolled in the text, so they cost
//! no loop iterations and the compiler keeps the block in registers).

use dlsys_core::kernels::{Block, Tile, WG};

/// The `{{TOKEN}}`s `gemm.wgsl` uses, filled in for `tile` and `block`.
pub(crate) fn gemm_tokens(tile: Tile, block: Block) -> Vec<(&'static str, String)> {
    let (b, rt, kd) = (block.edge(), block.tile(), block.depth());
    // Accumulators are vec4s (vec2s for the 2 × 2 block): `chunks` per row.
    let width = b.min(4);
    let chunks = b / width;
    let vec = |w: u32| format!("vec{w}<f32>");
    let mut acc = String::new();
    for r in 0..b {
        for c in 0..chunks {
            acc.push_str(&format!("    var acc_{r}_{c} = {}(0.0);\n", vec(width)));
        }
    }
    // Scalar staging: each tile holds rt·kd values, WG staged per round.
    let values = rt * kd;
    let mut stage = String::new();
    for e in 0..values.div_ceil(WG) {
        stage.push_str(&format!(
            "            stage_a(row0, k0, lid + {}u);\n            stage_b(col0, k0, lid + {}u);\n",
            e * WG,
            e * WG
        ));
    }
    let mut stage4 = String::new();
    let vec4s = values / 4;
    for e in 0..vec4s.div_ceil(WG) {
        let v = format!("lid + {}u", e * WG);
        let call = format!("stage4_a(row0, k0, {v}); stage4_b(col0, k0, {v});");
        if (e + 1) * WG > vec4s {
            stage4.push_str(&format!("            if ({v} < {vec4s}u) {{ {call} }}\n"));
        } else {
            stage4.push_str(&format!("            {call}\n"));
        }
    }
    // The block's values at one depth: vec4s of the K-major tiles (the
    // 2 × 2 block reads half of one).
    let mut fma = String::new();
    let read = |tile: &str, name: &str, c: u32| {
        if width == 4 {
            format!(
                "            let {name}{c} = {tile}[(bo + {}u) / 4u];\n",
                4 * c
            )
        } else {
            format!(
                "            let {name}{c} = vec2<f32>({tile}[bo / 4u][bo % 4u], {tile}[bo / 4u][bo % 4u + 1u]);\n"
            )
        }
    };
    for c in 0..chunks {
        fma.push_str(&read("reg_b", "b", c));
    }
    for c in 0..chunks {
        fma.push_str(&read("reg_a", "a", c).replace("bo", "ao"));
    }
    for r in 0..b {
        let a = format!("a{}[{}]", r / width, r % width);
        for c in 0..chunks {
            fma.push_str(&format!(
                "            acc_{r}_{c} = acc_{r}_{c} + {a} * b{c};\n"
            ));
        }
    }
    let mut store = String::new();
    for r in 0..b {
        for c in 0..chunks {
            for q in 0..width {
                store.push_str(&format!(
                    "    store_at(i0 + {r}u, j0 + {}u, acc_{r}_{c}[{q}]);\n",
                    c * width + q
                ));
            }
        }
    }
    let t = tile.edge();
    vec![
        ("{{T}}", t.to_string()),
        ("{{T2}}", (t * t).to_string()),
        ("{{RB}}", b.to_string()),
        ("{{RT}}", rt.to_string()),
        ("{{KD}}", kd.to_string()),
        ("{{RT_KD_DIV4}}", (values / 4).to_string()),
        ("{{KD_DIV4}}", (kd / 4).to_string()),
        ("{{RT_DIV4}}", (rt / 4).to_string()),
        ("{{RB_ACC}}", acc),
        ("{{RB_STAGE}}", stage),
        ("{{RB_STAGE4}}", stage4),
        ("{{RB_FMA}}", fma),
        ("{{RB_STORE}}", store),
    ]
}
