//! The lesson's exercises. Every answer comes from
//! `dlsys_core::kernels::attention`: the textbook byte count, the tiled
//! rung's traffic model, the tile rows that fit, the rescale factor and the
//! tiles the causal rung skips.

use dlsys_core::errors::Localized as _;
use dlsys_core::exercise::Task;
use dlsys_core::kernels::attention::{
    AttnRung, AttnShape, BC, BR, Tiles, rescale_factor, standard_bytes, tile_rows_fit,
};
use dlsys_core::text::Lang;

use super::TEXT;
use crate::kit::exercise_kit::{pick, show};

#[cfg(test)]
mod tests {
    #[test]
    fn every_variant_has_a_real_answer_and_its_mistakes_are_caught() {
        // The last one is multiple choice.
        crate::check_numeric_exercises(&super::EXERCISES[..5], 1);
    }
}

crate::exercises! {
    catalog: TEXT,
    salt: 0x37_a77e,
    naive_bytes => naive_bytes,
    tiled_bytes => tiled_bytes,
    tile_fit => tile_fit,
    rescale => rescale,
    causal_skip => causal_skip,
    why_lse => why_lse,
}

fn naive_bytes(seed: u64, lang: Lang) -> Task {
    let mut rng = rng(seed);
    let n = pick(&mut rng, &[512u64, 1024, 2048, 4096, 8192]);
    let d = pick(&mut rng, &[64u64, 128]);
    let elem = pick(&mut rng, &[2u64, 4]);
    let answer = standard_bytes(n, d, elem) as f64;
    Task::numeric(
        TEXT.fill(lang, "ex.naive_bytes.prompt", &[("n", &n), ("d", &d), ("elem", &elem)]),
        answer,
        vec![t(lang, "ex.naive_bytes.hint1")],
        TEXT.fill(
            lang,
            "ex.naive_bytes.explain",
            &[("n", &n), ("d", &d), ("elem", &elem), ("answer", &show(answer))],
        ),
        vec![
            ((elem * (4 * n * d + 2 * n * n)) as f64, t(lang, "ex.naive_bytes.no_p")),
            (answer / elem as f64, t(lang, "ex.naive_bytes.elements")),
            ((elem * 4 * n * d) as f64, t(lang, "ex.naive_bytes.no_scores")),
        ],
    )
}

fn tiled_bytes(seed: u64, lang: Lang) -> Task {
    let mut rng = rng(seed);
    let n = pick(&mut rng, &[1024u32, 2048, 4096]);
    let d = pick(&mut rng, &[32u32, 64, 128]);
    let tiles = Tiles {
        br: pick(&mut rng, &BR),
        bc: pick(&mut rng, &BC),
    };
    let shape = match AttnShape::new(1, n, d, false) {
        Ok(shape) => shape,
        Err(e) => return Task::numeric(e.message(lang), 0.0, Vec::new(), String::new(), Vec::new()),
    };
    let answer = shape.traffic(AttnRung::Tiled, tiles).bytes() as f64;
    let (n64, d64) = (u64::from(n), u64::from(d));
    let blocks = n64.div_ceil(u64::from(tiles.br));
    let per_tile = n64.div_ceil(u64::from(tiles.bc));
    Task::numeric(
        TEXT.fill(
            lang,
            "ex.tiled_bytes.prompt",
            &[("n", &n), ("d", &d), ("br", &tiles.br), ("bc", &tiles.bc)],
        ),
        answer,
        vec![t(lang, "ex.tiled_bytes.hint1")],
        TEXT.fill(
            lang,
            "ex.tiled_bytes.explain",
            &[("n", &n), ("d", &d), ("blocks", &blocks), ("answer", &show(answer))],
        ),
        vec![
            ((4 * (n64 * d64 + 2 * n64 * d64 + n64 * (d64 + 1))) as f64, t(lang, "ex.tiled_bytes.once")),
            ((4 * (n64 * d64 + 2 * n64 * d64 * per_tile + n64 * (d64 + 1))) as f64, t(lang, "ex.tiled_bytes.per_bc")),
        ],
    )
}

fn tile_fit(seed: u64, lang: Lang) -> Task {
    let mut rng = rng(seed);
    let kib = pick(&mut rng, &[16u64, 32, 48, 64, 100]);
    let d = pick(&mut rng, &[32u64, 64, 128]);
    let answer = tile_rows_fit(d, kib * 1024) as f64;
    Task::numeric(
        TEXT.fill(lang, "ex.tile_fit.prompt", &[("kib", &kib), ("d", &d)]),
        answer,
        vec![t(lang, "ex.tile_fit.hint1")],
        TEXT.fill(
            lang,
            "ex.tile_fit.explain",
            &[("kib", &kib), ("d", &d), ("answer", &answer)],
        ),
        vec![
            ((kib * 1024 / (4 * d)) as f64, t(lang, "ex.tile_fit.k_only")),
            ((kib * 1024 / (2 * d)) as f64, t(lang, "ex.tile_fit.bytes")),
            ((kib * 1000 / (8 * d)) as f64, t(lang, "ex.tile_fit.kilo")),
        ],
    )
}

fn rescale(seed: u64, lang: Lang) -> Task {
    let mut rng = rng(seed);
    let m_old = pick(&mut rng, &[1.5f64, 2.0, -0.5, 3.25, 0.75, 4.0]);
    let rise = pick(&mut rng, &[0.5f64, 1.0, 2.0, 3.0, 0.25]);
    let tile_max = m_old + rise;
    let answer = rescale_factor(m_old, tile_max);
    Task::numeric(
        TEXT.fill(lang, "ex.rescale.prompt", &[("m_old", &m_old), ("tile_max", &tile_max)]),
        answer,
        vec![t(lang, "ex.rescale.hint1")],
        TEXT.fill(
            lang,
            "ex.rescale.explain",
            &[("m_old", &m_old), ("tile_max", &tile_max), ("answer", &show(answer))],
        ),
        vec![
            (rise.exp(), t(lang, "ex.rescale.inverted")),
            (-rise, t(lang, "ex.rescale.no_exp")),
            (1.0, t(lang, "ex.rescale.none")),
        ],
    )
}

fn causal_skip(seed: u64, lang: Lang) -> Task {
    let mut rng = rng(seed);
    let n = pick(&mut rng, &[256u32, 512, 1024, 2048]);
    let tiles = Tiles {
        br: pick(&mut rng, &BR),
        bc: pick(&mut rng, &BC),
    };
    let shape = match AttnShape::new(1, n, 64, true) {
        Ok(shape) => shape,
        Err(e) => return Task::numeric(e.message(lang), 0.0, Vec::new(), String::new(), Vec::new()),
    };
    let (skipped, total) = shape.tiles_skipped(tiles);
    let answer = skipped as f64;
    let blocks = n.div_ceil(tiles.br);
    Task::numeric(
        TEXT.fill(
            lang,
            "ex.causal_skip.prompt",
            &[("n", &n), ("br", &tiles.br), ("bc", &tiles.bc)],
        ),
        answer,
        vec![t(lang, "ex.causal_skip.hint1")],
        TEXT.fill(
            lang,
            "ex.causal_skip.explain",
            &[("blocks", &blocks), ("total", &total), ("answer", &answer)],
        ),
        vec![
            (total as f64 / 2.0, t(lang, "ex.causal_skip.half")),
            ((total - skipped) as f64, t(lang, "ex.causal_skip.kept")),
            (total as f64, t(lang, "ex.causal_skip.total")),
        ],
    )
}

fn why_lse(seed: u64, lang: Lang) -> Task {
    let mut rng = rng(seed);
    let n = pick(&mut rng, &[2048u32, 4096, 8192, 16384]);
    let heads = pick(&mut rng, &[16u32, 32, 40]);
    let options = ["recompute", "normalise", "stable", "next_layer"];
    let args: [(&str, &dyn std::fmt::Display); 2] = [("n", &n), ("heads", &heads)];
    crate::kit::exercise_kit::catalog_choice(&TEXT, lang, "why_lse", seed, &options, &args)
}
