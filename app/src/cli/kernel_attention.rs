//! `dlsys-lab kernel attention`: one attention rung on your own Q, K and V
//! (stdin, little-endian f32, each heads × seq × head_dim), O to stdout —
//! checked against the core's f64 reference, each value within its bound,
//! before anything is written.

use std::process::ExitCode;

use dlsys_core::kernels::attention::{AttnRung, AttnShape, Qkv, Tiles, reference};

use super::choice::choice;
use super::kernel::{kernel_runner, read_stdin_f32, run_checked, write_words};
use super::{CliError, tf};

#[derive(Clone, Debug, clap::Args)]
pub struct AttnKernelArgs {
    #[arg(long)]
    pub seq: u32,
    #[arg(long)]
    pub head_dim: u32,
    #[arg(long, default_value_t = 1)]
    pub heads: u32,
    #[arg(long)]
    pub causal: bool,
    #[arg(long, default_value = AttnRung::Tiled.short_id(), value_parser = choice(&AttnRung::ALL, |r| r.short_id()))]
    pub rung: AttnRung,
    #[arg(long, default_value_t = Tiles::default().br)]
    pub br: u32,
    #[arg(long, default_value_t = Tiles::default().bc)]
    pub bc: u32,
    /// Also write the log-sum-exp per row after O.
    #[arg(long)]
    pub lse: bool,
}

pub(super) fn run(args: &AttnKernelArgs) -> Result<ExitCode, CliError> {
    let shape = AttnShape::new(args.heads, args.seq, args.head_dim, args.causal)
        .map_err(|e| super::say(&e))?;
    let tiles = Tiles {
        br: args.br,
        bc: args.bc,
    };
    if args.lse && !args.rung.writes_lse() {
        return Err(CliError::from(tf(
            "kernel.attention_no_lse",
            &[("rung", &args.rung.short_id())],
        )));
    }
    // Refused by the rules that need no device before one is asked for.
    shape
        .check(
            args.rung,
            tiles,
            dlsys_core::kernels::attention::AttnLimits {
                workgroup_bytes: u64::MAX,
                binding_bytes: u64::MAX,
            },
        )
        .map_err(|e| super::say(&e))?;
    let mut runner = kernel_runner()?;
    let limits = dlsys_shaders::attention::limits(&runner);
    shape
        .check(args.rung, tiles, limits)
        .map_err(|e| super::say(&e))?;
    let each = shape.values();
    let values = read_stdin_f32(3 * each)?;
    if values.len() as u64 != 3 * each {
        return Err(CliError::from(tf(
            "kernel.attention_len",
            &[
                ("count", &values.len()),
                ("want", &(3 * each)),
                ("heads", &args.heads),
                ("seq", &args.seq),
                ("d", &args.head_dim),
            ],
        )));
    }
    let n = each as usize;
    let qkv = Qkv {
        q: values[..n].to_vec(),
        k: values[n..2 * n].to_vec(),
        v: values[2 * n..].to_vec(),
    };
    // The f64 reference is heads·N²·d multiply–adds twice over (half that
    // with the mask: row i has i + 1 keys): say so before a long wait (past
    // about a second here).
    let seq = u64::from(args.seq);
    let work = if args.causal {
        each * (seq + 1)
    } else {
        2 * each * seq
    };
    if work > 1 << 30 {
        let work = dlsys_core::memory::show_count(work);
        eprintln!("{}", tf("kernel.attention_reference", &[("work", &work)]));
    }
    let want = reference(&shape, &qkv).map_err(|e| super::say(&e))?;
    let program = dlsys_shaders::attention::program(args.rung, &shape, tiles, limits, &qkv, &want)
        .map_err(|e| super::say(&e))?;
    let words = run_checked(
        &mut runner,
        &program,
        "kernel.attention_wrong",
        args.rung.id(),
    )?;
    let keep = if args.lse { words.len() } else { n };
    write_words(&words[..keep])
}
