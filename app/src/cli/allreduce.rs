//! `dlsys-lab allreduce`: one collective run on seeded buffers — the result
//! checked, the bytes and messages of every node, the time on the α-β
//! virtual clock beside the closed form.

use dlsys_core::names::{Named as _, Node};
use std::io::{self, Write};
use std::process::ExitCode;

use dlsys_core::collective::{
    Algorithm, Link, MAX_WORKERS, MIN_WORKERS, Network, Op, RELATIVE_TOLERANCE, Schedule,
    check_result, check_runnable, run, seeded_gradients, simulate, simulate_on,
};
use dlsys_core::memory::{show_bytes, show_seconds};

use super::choice::choice;
use super::lang::{pad, pad_left};
use super::output::{Report, emit, line};
use super::{CliError, say, t, tf};

#[derive(Clone, Debug, clap::Args)]
pub struct AllreduceArgs {
    #[arg(long, default_value = "ring", value_parser = choice(&Algorithm::ALL, |a| a.id()))]
    algo: Algorithm,
    #[arg(long, default_value = "all-reduce", value_parser = choice(&Op::ALL, |o| o.id()))]
    op: Op,
    #[arg(long, default_value_t = 4,
          value_parser = clap::value_parser!(u64).range(MIN_WORKERS as u64..=MAX_WORKERS as u64))]
    workers: u64,
    #[arg(long, default_value_t = 1 << 20)]
    elements: usize,
    #[arg(long, default_value_t = 5.0)]
    alpha_us: f64,
    #[arg(long, default_value_t = 25.0)]
    gbps: f64,
    #[arg(long, value_name = "K")]
    slow_link: Option<f64>,
    #[arg(long, default_value_t = 1)]
    seed: u64,
    #[arg(long)]
    pub json: bool,
}

#[derive(serde::Serialize)]
struct NodeRow {
    node: String,
    sent_bytes: u64,
    received_bytes: u64,
    sent_messages: u64,
    received_messages: u64,
}

#[derive(serde::Serialize)]
struct AllreduceOut {
    algorithm: &'static str,
    #[serde(skip)]
    kind: Algorithm,
    op: &'static str,
    workers: usize,
    elements: usize,
    bytes_per_worker: u64,
    alpha_us: f64,
    gbps: f64,
    /// How the result was checked: "bitwise" against a plain sum in the
    /// algorithm's order (or, for all-gather, against each owner's chunk),
    /// or "relative" against an f64 sum, within `tolerance`.
    check: &'static str,
    tolerance: Option<f64>,
    correct: bool,
    first_wrong_element: Option<usize>,
    steps: usize,
    nodes: Vec<NodeRow>,
    total_sent_bytes: u64,
    /// The algorithm's formula for all nodes' bytes (all-reduce only).
    formula_total_sent_bytes: Option<u64>,
    simulated_s: f64,
    /// The α-β closed form (all-reduce only; exact for equal chunks).
    closed_form_s: Option<f64>,
    /// With --slow-link: how many times slower the last worker's links
    /// are, and the virtual time with them.
    slow_link_factor: Option<f64>,
    slow_link_simulated_s: Option<f64>,
    /// The real time of the run on this machine (one thread), not the
    /// virtual clock's.
    wall_s: f64,
}

pub fn run_args(args: &AllreduceArgs) -> Result<ExitCode, CliError> {
    let workers = args.workers as usize;
    let link = Link::new(args.alpha_us, args.gbps).map_err(|e| say(&e))?;
    let schedule =
        Schedule::new(args.algo, args.op, workers, args.elements).map_err(|e| say(&e))?;
    check_runnable(schedule.nodes, schedule.elements).map_err(|e| say(&e))?;
    let slow = args
        .slow_link
        .map(|k| Network::with_slow_node(link, workers - 1, k))
        .transpose()
        .map_err(|e| say(&e))?;
    let inputs = seeded_gradients(workers, args.elements, args.seed);
    let mut buffers = inputs.clone();
    if schedule.nodes > workers {
        buffers.push(vec![0.0; args.elements]);
    }
    let started = web_time::Instant::now();
    let outcome = run(&schedule, &mut buffers).map_err(|e| say(&e))?;
    let wall_s = started.elapsed().as_secs_f64();
    let checked = check_result(&schedule, &inputs, &buffers);
    let all_reduce = args.op == Op::AllReduce;
    let report = AllreduceOut {
        algorithm: args.algo.id(),
        kind: args.algo,
        op: args.op.id(),
        workers,
        elements: args.elements,
        bytes_per_worker: 4 * args.elements as u64,
        alpha_us: args.alpha_us,
        gbps: args.gbps,
        check: if args.algo.fixed_order() {
            "bitwise"
        } else {
            "relative"
        },
        tolerance: (!args.algo.fixed_order()).then_some(RELATIVE_TOLERANCE),
        correct: checked.is_ok(),
        first_wrong_element: checked.err(),
        steps: outcome.steps,
        nodes: outcome
            .traffic
            .iter()
            .enumerate()
            .map(|(w, x)| NodeRow {
                node: node_name(w, workers),
                sent_bytes: x.sent_bytes,
                received_bytes: x.received_bytes,
                sent_messages: x.sent_messages,
                received_messages: x.received_messages,
            })
            .collect(),
        total_sent_bytes: outcome.total_sent(),
        formula_total_sent_bytes: all_reduce
            .then(|| 4 * args.algo.total_elements_sent(workers, args.elements)),
        simulated_s: simulate(&schedule, 4, link).end_s,
        closed_form_s: all_reduce.then(|| {
            args.algo
                .cost(workers)
                .time(4.0 * args.elements as f64, link)
        }),
        slow_link_factor: args.slow_link,
        slow_link_simulated_s: slow.map(|net| simulate_on(&schedule, 4, &net).end_s),
        wall_s,
    };
    emit(&report, args.json)
}

fn node_name(index: usize, workers: usize) -> String {
    Node { index, workers }.name(super::lang())
}

impl Report for AllreduceOut {
    fn text(&self, out: &mut dyn Write) -> io::Result<()> {
        let lang = super::lang();
        let algorithm = self.kind;
        line(
            out,
            "allreduce.setup",
            &[
                ("algo", &algorithm.name(lang)),
                ("op", &self.op),
                ("size", &show_bytes(self.bytes_per_worker)),
                ("elements", &self.elements),
                ("workers", &self.workers),
                ("alpha", &dlsys_core::float::show_sig(self.alpha_us, 4)),
                ("gbps", &dlsys_core::float::show_sig(self.gbps, 4)),
            ],
        )?;
        let how = match self.tolerance {
            None => t("allreduce.bitwise").to_owned(),
            Some(tol) => tf("allreduce.relative", &[("tol", &format!("{tol:e}"))]),
        };
        let (correct, wrong) = match self.op {
            "reduce-scatter" => ("allreduce.correct_rs", "allreduce.wrong_rs"),
            "all-gather" => ("allreduce.correct_ag", "allreduce.wrong_ag"),
            _ => ("allreduce.correct", "allreduce.wrong"),
        };
        match self.first_wrong_element {
            None => line(out, correct, &[("how", &how)])?,
            Some(i) => line(out, wrong, &[("how", &how), ("i", &i)])?,
        }
        const W: usize = 12;
        writeln!(
            out,
            "{}{}{}{}",
            pad(t("allreduce.node"), 8),
            pad_left(t("allreduce.sent"), W),
            pad_left(t("allreduce.received"), W),
            pad_left(t("allreduce.messages"), W)
        )?;
        for node in &self.nodes {
            writeln!(
                out,
                "{}{}{}{}",
                pad(&node.node, 8),
                pad_left(&show_bytes(node.sent_bytes), W),
                pad_left(&show_bytes(node.received_bytes), W),
                pad_left(
                    &format!("{}/{}", node.sent_messages, node.received_messages),
                    W
                )
            )?;
        }
        match self.formula_total_sent_bytes {
            Some(formula) => line(
                out,
                "allreduce.total_formula",
                &[
                    ("total", &show_bytes(self.total_sent_bytes)),
                    ("bytes", &self.total_sent_bytes),
                    ("formula", &formula),
                    (
                        "verdict",
                        &t(if formula == self.total_sent_bytes {
                            "allreduce.equal"
                        } else {
                            "allreduce.differ"
                        }),
                    ),
                ],
            )?,
            None => line(
                out,
                "allreduce.total",
                &[("total", &show_bytes(self.total_sent_bytes))],
            )?,
        }
        let closed = self
            .closed_form_s
            .map(|c| tf("allreduce.closed", &[("time", &show_seconds(c))]))
            .unwrap_or_default();
        line(
            out,
            "allreduce.time",
            &[
                ("steps", &self.steps),
                ("sim", &show_seconds(self.simulated_s)),
                ("closed", &closed),
                ("wall", &show_seconds(self.wall_s)),
            ],
        )?;
        if let (Some(k), Some(time)) = (self.slow_link_factor, self.slow_link_simulated_s) {
            line(
                out,
                "allreduce.slow",
                &[
                    ("worker", &node_name(self.workers - 1, self.workers)),
                    ("k", &dlsys_core::float::show_sig(k, 4)),
                    ("sim", &show_seconds(time)),
                    (
                        "ratio",
                        &dlsys_core::float::show_sig(
                            time / self.simulated_s.max(f64::MIN_POSITIVE),
                            3,
                        ),
                    ),
                ],
            )?;
        }
        Ok(())
    }

    fn ok(&self) -> bool {
        self.correct
    }
}
