//! `dlsys-lab bench search`: the app's search index built from every page's
//! catalog and the glossary, then a fixed set of queries in both languages
//! (short, long, a Chinese pair of characters inside a longer word, an
//! English term that finds its Chinese word, one that matches nothing),
//! each run many times: the median and the slowest per query against the
//! 5 ms a keystroke may take.

use std::io::{self, Write};
use std::process::ExitCode;

use dlsys_core::text::Lang;

use super::CliError;
use super::lang::pad;
use super::output::{Report, emit, line};

/// What one keystroke's search may take.
const BUDGET_MS: f64 = 5.0;

/// The queries timed: (query, the language the page is in).
const QUERIES: [(&str, Lang); 10] = [
    ("a", Lang::En),
    ("softmax", Lang::En),
    ("bank conflict", Lang::En),
    ("all-reduce ring", Lang::En),
    ("zero", Lang::Zh),
    ("规格", Lang::Zh),
    ("显存", Lang::Zh),
    ("非规格化数", Lang::En),
    ("ＧＥＭＭ", Lang::En),
    ("no page says this", Lang::En),
];

#[derive(Clone, Debug, clap::Args)]
pub struct SearchArgs {
    #[arg(long, default_value_t = 200, value_parser = clap::value_parser!(u32).range(1..=100_000))]
    repeat: u32,
    #[arg(long)]
    json: bool,
}

impl SearchArgs {
    pub fn json(&self) -> bool {
        self.json
    }
}

#[derive(serde::Serialize)]
struct SearchReport {
    pieces: usize,
    build_ms: f64,
    repeat: u32,
    budget_ms: f64,
    queries: Vec<QueryRow>,
}

#[derive(serde::Serialize)]
struct QueryRow {
    query: &'static str,
    lang: &'static str,
    hits: usize,
    /// Where the first hit opens (`page/section`).
    first: Option<String>,
    median_ms: f64,
    max_ms: f64,
    /// The budget over the median: how many times over it fits.
    headroom: f64,
}

pub fn run(args: &SearchArgs) -> Result<ExitCode, CliError> {
    let pages = dlsys_lessons::searchable();
    let started = web_time::Instant::now();
    let index = dlsys_lessons::search_index(&pages);
    let build_ms = started.elapsed().as_secs_f64() * 1e3;
    let queries = QUERIES
        .iter()
        .map(|&(query, lang)| {
            let times: Vec<f64> = (0..args.repeat)
                .map(|_| {
                    let started = web_time::Instant::now();
                    let hits = index.search(query, lang, 8);
                    std::hint::black_box(hits);
                    started.elapsed().as_secs_f64() * 1e3
                })
                .collect();
            let median = dlsys_shaders::plumbing::median(&times);
            let hits = index.search(query, lang, 8);
            QueryRow {
                query,
                lang: lang.id(),
                hits: hits.len(),
                first: hits.first().map(|h| h.route.clone()),
                median_ms: median,
                max_ms: times.iter().copied().fold(median, f64::max),
                headroom: BUDGET_MS / median.max(1e-9),
            }
        })
        .collect();
    let report = SearchReport {
        pieces: index.len(),
        build_ms,
        repeat: args.repeat,
        budget_ms: BUDGET_MS,
        queries,
    };
    emit(&report, args.json)
}

impl Report for SearchReport {
    fn text(&self, out: &mut dyn Write) -> io::Result<()> {
        line(
            out,
            "bench.search.heading",
            &[
                ("pieces", &self.pieces),
                ("ms", &format!("{:.1}", self.build_ms)),
                ("repeat", &self.repeat),
            ],
        )?;
        for q in &self.queries {
            line(
                out,
                "bench.search.row",
                &[
                    ("query", &pad(&format!("\"{}\" ({})", q.query, q.lang), 26)),
                    ("hits", &q.hits),
                    ("first", &q.first.as_deref().unwrap_or("—")),
                    ("median", &format!("{:.3}", q.median_ms)),
                    ("max", &format!("{:.3}", q.max_ms)),
                    ("headroom", &format!("{:.0}", q.headroom)),
                ],
            )?;
        }
        line(out, "bench.search.budget", &[("budget", &self.budget_ms)])
    }
}
