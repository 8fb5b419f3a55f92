//! `dlsys-lab float`: one value in every float format, or a batch of fp32
//! patterns rounded into one.

use dlsys_core::names::Named as _;
use std::io::{self, Write};
use std::process::ExitCode;

use dlsys_core::float::{self, Exact, Format, Rounding, StochasticRounder};

use super::CliError;
use super::choice::choice;
use super::lang::pad;
use super::output::{Report, emit, exit_status};
use super::{t, tf};

#[derive(Clone, Debug, clap::Args)]
pub struct FloatArgs {
    #[arg(allow_hyphen_values = true)]
    pub value: Option<String>,
    #[arg(long = "format", short = 'f', value_name = "F")]
    pub formats: Vec<String>,
    #[arg(
        long,
        default_value = Rounding::NearestEven.short_name(),
        value_name = "MODE",
        ignore_case = true,
        value_parser = choice(&Rounding::ALL, |r| r.short_name()),
    )]
    pub round: Rounding,
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    #[arg(long, default_value = "fp32", value_name = "F")]
    pub bits_of: String,
    #[arg(long)]
    pub json: bool,
    #[arg(long, requires = "to", conflicts_with_all = ["value", "json", "formats", "bits_of"])]
    pub batch: bool,
    #[arg(long, value_name = "F")]
    pub to: Option<String>,
}

/// One value in each format asked for.
#[derive(serde::Serialize)]
struct FloatReport {
    input: String,
    /// How the input was read (a decimal, a bit pattern, …).
    input_kind: String,
    input_value: f64,
    rounding: &'static str,
    #[serde(skip)]
    rounding_mode: Rounding,
    seed: u64,
    formats: Vec<FormatRow>,
}

#[derive(serde::Serialize)]
struct FormatRow {
    #[serde(flatten)]
    described: float::Described,
    range: float::RangeTable,
}

pub fn run(args: &FloatArgs) -> Result<ExitCode, CliError> {
    if args.to.is_some() && !args.batch {
        return Err(CliError::from(super::t("float.to_without_batch")));
    }
    if args.batch {
        let target =
            Format::by_name(args.to.as_deref().unwrap_or_default()).map_err(|e| super::say(&e))?;
        return batch(&target, args.round, args.seed);
    }
    let text = args.value.as_deref().ok_or(super::t("float.no_value"))?;
    let formats = if args.formats.is_empty() {
        Format::builtins()
    } else {
        args.formats
            .iter()
            .map(|f| Format::by_name(f))
            .collect::<Result<_, _>>()
            .map_err(|e| super::say(&e))?
    };
    let bits_of = Format::by_name(&args.bits_of).map_err(|e| super::say(&e))?;
    let report = describe(text, &formats, args.round, args.seed, &bits_of)?;
    emit(&report, args.json)
}

fn describe(
    text: &str,
    formats: &[Format],
    rounding: Rounding,
    seed: u64,
    bits_of: &Format,
) -> Result<FloatReport, String> {
    let parsed = float::parse_input(text, bits_of).map_err(|e| super::say(&e))?;
    let input = parsed.exact.to_f64();
    let mut stochastic = StochasticRounder::new(seed);
    let mut encode = |format: &Format, exact: &Exact| {
        if rounding == Rounding::Stochastic {
            stochastic.encode(format, exact)
        } else {
            format.encode(exact, rounding)
        }
    };
    let formats = formats
        .iter()
        .map(|format| {
            let bits = encode(format, &parsed.exact);
            FormatRow {
                described: format.describe_bits(bits, input),
                range: format.range(),
            }
        })
        .collect();
    Ok(FloatReport {
        input: text.to_owned(),
        input_kind: format!("{:?}", parsed.kind),
        input_value: input,
        rounding: rounding.short_name(),
        rounding_mode: rounding,
        seed,
        formats,
    })
}

impl Report for FloatReport {
    fn text(&self, out: &mut dyn Write) -> io::Result<()> {
        let label = |key| pad(t(key), 9);
        writeln!(
            out,
            "{} {}  →  {}",
            label("float.input"),
            self.input,
            float::show(self.input_value)
        )?;
        writeln!(
            out,
            "{} {} ({})",
            label("float.rounding"),
            self.rounding,
            self.rounding_mode.name(super::lang())
        )?;
        let field = |key| pad(t(key), 5);
        for FormatRow {
            described: d,
            range: r,
        } in &self.formats
        {
            writeln!(out)?;
            writeln!(out, "{:<9} {}  {}", d.format, d.binary, d.hex)?;
            writeln!(
                out,
                "          {} {}  ({})",
                field("float.value"),
                float::show(d.value),
                d.class.name(super::lang())
            )?;
            if d.abs_error.is_finite() {
                writeln!(
                    out,
                    "          {} {}  ({} {})",
                    field("float.error"),
                    float::show_sig(d.abs_error, 6),
                    t("float.relative"),
                    float::show_sig(d.rel_error, 4)
                )?;
            }
            if let Some(ulp) = d.ulp {
                writeln!(out, "          {} {}", field("float.ulp"), float::show(ulp))?;
            }
            let side = |v: Option<f64>| v.map_or(t("float.none").to_owned(), float::show);
            writeln!(
                out,
                "          {} {}   {} {}",
                field("float.below"),
                side(d.below),
                t("float.above"),
                side(d.above)
            )?;
            let range = tf(
                "float.range",
                &[
                    ("max", &float::show(r.max_finite)),
                    ("normal", &float::show(r.min_normal)),
                    ("subnormal", &float::show(r.min_subnormal)),
                    ("eps", &float::show(r.epsilon)),
                ],
            );
            writeln!(out, "          {range}")?;
        }
        Ok(())
    }
}

/// `--batch`: a stream, one rounded pattern per line as it is read (no report).
fn batch(target: &Format, rounding: Rounding, seed: u64) -> Result<ExitCode, CliError> {
    let stdin = std::io::stdin().lock();
    let stdout = std::io::BufWriter::new(std::io::stdout().lock());
    let report = float::batch::convert_batch(stdin, stdout, target, rounding, seed, |line, err| {
        let message = super::say(err);
        eprintln!(
            "{}",
            tf("float.batch_line", &[("line", &line), ("error", &message)])
        );
    })
    .map_err(|failure| match failure {
        float::batch::BatchIo::Read(err) => CliError::from(tf("io.stdin", &[("error", &err)])),
        float::batch::BatchIo::Write(err) => CliError::from(err),
    })?;
    Ok(exit_status(report.invalid == 0))
}
