//! `dlsys-lab`: the app, or a subcommand over the same cores.

#[cfg(not(target_arch = "wasm32"))]
fn main() -> std::process::ExitCode {
    use std::process::ExitCode;

    let cli = match dlsys_lab::cli::parse() {
        Ok(cli) => cli,
        Err(status) => return status,
    };
    let json = cli
        .command
        .as_ref()
        .is_some_and(dlsys_lab::cli::Command::json);
    let result = match cli.command {
        Some(command) => dlsys_lab::cli::run(command),
        None => run_app(cli.lesson, cli.lang).map(|()| ExitCode::SUCCESS),
    };
    match result {
        Ok(status) => status,
        // `dlsys-lab … | head`: the reader has all it wanted.
        Err(dlsys_lab::cli::CliError::ClosedPipe) => ExitCode::SUCCESS,
        Err(dlsys_lab::cli::CliError::Message(err)) => {
            dlsys_lab::cli::report_error(&err, json);
            ExitCode::FAILURE
        }
    }
}

#[cfg(not(target_arch = "wasm32"))]
fn run_app(
    lesson: Option<String>,
    lang: Option<dlsys_core::text::Lang>,
) -> Result<(), dlsys_lab::cli::CliError> {
    use dlsys_lab::{APP_ID, DlsysApp, Startup, persist};

    let mut notices = Vec::new();
    let save_file = persist::save_file_path();
    // The app's state goes to its own save file (which never writes over a
    // file it could not read); eframe's storage keeps only the window.
    let storage = save_file.as_deref().map(|path| {
        let opened = persist::save_file::SaveFile::open(
            Box::new(persist::save_file::RealDisk),
            path,
            persist::now_secs(),
        );
        notices.extend(opened.notice);
        let file: Box<dyn persist::Store> = Box::new(opened.file);
        file
    });
    let window_file = save_file
        .as_deref()
        .map(|path| path.with_file_name("window.ron"));
    let options = eframe::NativeOptions {
        viewport: egui::ViewportBuilder::default()
            .with_app_id(APP_ID)
            .with_title("dlsys-lab")
            .with_inner_size([1200.0, 780.0])
            .with_min_inner_size([640.0, 420.0]),
        wgpu_options: dlsys_lab::setup::wgpu_configuration(),
        persistence_path: window_file,
        ..Default::default()
    };
    let startup = Startup {
        lesson,
        notices,
        storage,
        lang,
        system_lang: dlsys_lab::system_lang(),
        ..Default::default()
    };
    eframe::run_native(
        "dlsys-lab",
        options,
        Box::new(move |cc| Ok(Box::new(DlsysApp::new(cc, startup)))),
    )
    .map_err(|err| dlsys_lab::cli::tf("app.no_window", &[("error", &err)]).into())
}

#[cfg(target_arch = "wasm32")]
fn main() {
    dlsys_lab::web::start();
}
