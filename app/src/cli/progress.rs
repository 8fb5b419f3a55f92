//! `dlsys-lab progress`: the learner's record from the command line — the
//! overview the "Progress" page shows (`show`), and the progress file the
//! page exports and imports (`export FILE`, `import FILE`). It reads the
//! app's save file (`$DLSYS_LAB_DATA_DIR/app.ron`, else the per-user data
//! folder); a save it cannot read is refused, never written over.

use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use dlsys_core::study::{Overview, Suggestion, Visit};

use super::CliError;
use super::output::{Report, emit, line};
use crate::persist::exchange::{self, ImportError};
use crate::persist::{self, STORAGE_KEY, SavedState, Store as _};

#[derive(Clone, Debug, clap::Subcommand)]
pub enum ProgressCommand {
    Show {
        #[arg(long)]
        json: bool,
    },
    Export {
        #[arg(value_name = "FILE")]
        file: PathBuf,
    },
    Import {
        #[arg(value_name = "FILE")]
        file: PathBuf,
        #[arg(long)]
        replace: bool,
        #[arg(long)]
        dry_run: bool,
    },
}

impl ProgressCommand {
    pub fn json(&self) -> bool {
        matches!(self, Self::Show { json: true })
    }
}

/// The save file's path and the state it holds (defaults when there is none).
fn saved() -> Result<(PathBuf, SavedState), CliError> {
    let path = persist::save_file_path().ok_or_else(|| super::t("progress.no_data_dir"))?;
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(err) if err.kind() == io::ErrorKind::NotFound => {
            return Ok((path, SavedState::default()));
        }
        Err(err) => return Err(unreadable(&path, &err)),
    };
    let entries: std::collections::BTreeMap<String, String> =
        ron::from_str(&text).map_err(|err| unreadable(&path, &err))?;
    let found = persist::saved_text(|key| entries.get(key).cloned());
    let loaded = persist::load(found.as_ref().map(|(t, _)| t.as_str()), persist::now_secs());
    if let Some(notice) = loaded.notice {
        return Err(unreadable(&path, &notice.message(super::lang())));
    }
    Ok((path, loaded.state))
}

fn unreadable(path: &Path, err: &dyn std::fmt::Display) -> CliError {
    super::tf(
        "progress.unreadable",
        &[("path", &path.display()), ("error", err)],
    )
    .into()
}

pub fn run(command: &ProgressCommand) -> Result<ExitCode, CliError> {
    match command {
        ProgressCommand::Show { json } => {
            let (path, state) = saved()?;
            emit(&ShowReport::of(&path, &state), *json)
        }
        ProgressCommand::Export { file } => {
            let (_, state) = saved()?;
            let text = exchange::export(&state, dlsys_lessons::kit::today())
                .map_err(|err| err.to_string())?;
            if file.as_os_str() == "-" {
                let mut out = io::stdout().lock();
                out.write_all(text.as_bytes())?;
                out.write_all(b"\n")?;
                return Ok(ExitCode::SUCCESS);
            }
            std::fs::write(file, text).map_err(|err| {
                super::tf(
                    "progress.write_failed",
                    &[("path", &file.display()), ("error", &err)],
                )
            })?;
            println!(
                "{}",
                super::tf("progress.exported", &[("path", &file.display())])
            );
            Ok(ExitCode::SUCCESS)
        }
        ProgressCommand::Import {
            file,
            replace,
            dry_run,
        } => import(file, *replace, *dry_run),
    }
}

fn import(file: &Path, replace: bool, dry_run: bool) -> Result<ExitCode, CliError> {
    let refused = |why: ImportError| -> CliError {
        super::tf("progress.refused", &[("why", &why.message(super::lang()))]).into()
    };
    let (path, current) = saved()?;
    let incoming = exchange::read_path(file).map_err(refused)?;
    let fresh = exchange::fresh_page_states();
    let preview = exchange::preview(&current, &incoming, &fresh);
    let date = preview.exported_on.map_or_else(
        || super::t("progress.undated").to_owned(),
        |d| d.to_string(),
    );
    println!(
        "{}",
        super::tf(
            "progress.preview",
            &[
                ("date", &date),
                ("here", &preview.solved_here),
                ("file", &preview.solved_in_file),
                ("merged", &preview.solved_after_merge),
                ("pages", &preview.pages_in_file),
            ]
        )
    );
    if dry_run {
        return Ok(ExitCode::SUCCESS);
    }
    let state = exchange::apply(&current, incoming, replace, &fresh, persist::now_secs());
    let text = state.to_ron().map_err(|err| err.to_string())?;
    let opened = persist::save_file::SaveFile::open(
        Box::new(persist::save_file::RealDisk),
        &path,
        persist::now_secs(),
    );
    if let Some(notice) = opened.notice {
        return Err(unreadable(&path, &notice.message(super::lang())));
    }
    let mut save = opened.file;
    save.set_string(STORAGE_KEY, text);
    save.flush();
    if let Some(failure) = save.take_failure() {
        return Err(failure.message(super::lang()).into());
    }
    let key = if replace {
        "progress.replaced"
    } else {
        "progress.merged"
    };
    println!(
        "{}",
        super::tf(key, &[("file", &file.display()), ("path", &path.display())])
    );
    Ok(ExitCode::SUCCESS)
}

/// The overview as the page shows it, with the lessons' titles.
#[derive(serde::Serialize)]
struct ShowReport {
    save_file: String,
    lessons: Vec<Row>,
    solved: usize,
    total: usize,
    tests: usize,
    next: String,
}

#[derive(serde::Serialize)]
struct Row {
    id: &'static str,
    title: String,
    solved: usize,
    total: usize,
    /// The day of the last visit, "undated" or null (never).
    last_visit: Option<String>,
    quiz_right: usize,
    quiz_total: usize,
    due: usize,
}

impl ShowReport {
    fn of(path: &Path, state: &SavedState) -> Self {
        let lang = super::lang();
        // The lessons as the app has them: the mock test's part of the
        // record is the mock test's own saved state.
        let mut lessons = dlsys_lessons::all();
        for lesson in &mut lessons {
            if let Some(text) = state.lesson_states.get(lesson.id()) {
                let _ = lesson.load_state(text);
            }
        }
        let quiz = lessons
            .iter()
            .find_map(|l| l.quiz_record())
            .unwrap_or_default();
        let overview = Overview::of(&dlsys_lessons::listed(), &state.progress, quiz);
        let title = |id: &str| {
            lessons
                .iter()
                .find(|l| l.id() == id)
                .map_or_else(|| id.to_owned(), |l| l.title(lang))
        };
        let (solved, total) = overview.totals();
        let next = match overview.suggestion {
            Suggestion::Review { lesson, due } => super::tf(
                "progress.next_review",
                &[("due", &due), ("lesson", &title(lesson))],
            ),
            Suggestion::Continue { lesson, unsolved } => super::tf(
                "progress.next_continue",
                &[("unsolved", &unsolved), ("lesson", &title(lesson))],
            ),
            Suggestion::AllDone => super::t("progress.next_done").to_owned(),
        };
        Self {
            save_file: path.display().to_string(),
            lessons: overview
                .rows
                .iter()
                .map(|r| Row {
                    id: r.id,
                    title: title(r.id),
                    solved: r.solved,
                    total: r.total,
                    last_visit: match r.visit {
                        Visit::Never => None,
                        Visit::Undated => Some("undated".to_owned()),
                        Visit::On(day) => Some(day.to_string()),
                    },
                    quiz_right: r.quiz_right,
                    quiz_total: r.quiz_total,
                    due: r.due,
                })
                .collect(),
            solved,
            total,
            tests: overview.tests,
            next,
        }
    }
}

impl Report for ShowReport {
    fn text(&self, out: &mut dyn Write) -> io::Result<()> {
        line(out, "progress.heading", &[("path", &self.save_file)])?;
        for row in &self.lessons {
            let visit = match row.last_visit.as_deref() {
                None => super::t("progress.never").to_owned(),
                Some("undated") => super::t("progress.undated").to_owned(),
                Some(day) => day.to_owned(),
            };
            let quiz = if row.quiz_total == 0 {
                super::t("progress.none").to_owned()
            } else {
                format!("{}/{}", row.quiz_right, row.quiz_total)
            };
            line(
                out,
                "progress.row",
                &[
                    ("title", &super::lang::pad(&row.title, 28)),
                    ("solved", &format!("{:>2}/{:<2}", row.solved, row.total)),
                    ("visit", &super::lang::pad(&visit, 12)),
                    ("quiz", &super::lang::pad(&quiz, 7)),
                    ("due", &row.due),
                ],
            )?;
        }
        line(
            out,
            "progress.totals",
            &[
                ("solved", &self.solved),
                ("total", &self.total),
                ("tests", &self.tests),
            ],
        )?;
        writeln!(out, "{}", self.next)
    }
}
