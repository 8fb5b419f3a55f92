//! The browser side: starting eframe's web runner on the page's canvas, the
//! `#lesson_id` route in the address bar (back button included), and writing
//! the self-test result into the page.

use eframe::wasm_bindgen::JsCast as _;

use crate::{DlsysApp, Startup};

fn window() -> Option<web_sys::Window> {
    web_sys::window()
}

/// The route in the address bar, without the `#`.
pub fn hash() -> Option<String> {
    let hash = window()?.location().hash().ok()?;
    let id = hash.trim_start_matches('#');
    (!id.is_empty()).then(|| id.to_owned())
}

/// Sets `<html lang>` to the language drawn, so the browser's speech
/// synthesis (the read-aloud toggle) picks a voice for it.
pub fn set_document_lang(code: &str) {
    if let Some(root) = window()
        .and_then(|w| w.document())
        .and_then(|d| d.document_element())
        && root.get_attribute("lang").as_deref() != Some(code)
    {
        let _ = root.set_attribute("lang", code);
    }
}

/// Puts `#id` in the address bar as a new history entry (so Back returns).
pub fn push_hash(id: &str) {
    if hash().as_deref() == Some(id) {
        return;
    }
    if let Some(history) = window().and_then(|w| w.history().ok()) {
        let _ = history.push_state_with_url(
            &eframe::wasm_bindgen::JsValue::NULL,
            "",
            Some(&format!("#{id}")),
        );
    }
}

/// The browser's language (`navigator.language`, e.g. `zh-CN`).
pub fn browser_language() -> Option<String> {
    window()?.navigator().language()
}

/// The language the page's `?lang=` asks for (`en`, `zh`), if any.
pub fn asked_language() -> Option<dlsys_core::text::Lang> {
    let query = window()?.location().search().ok()?;
    let asked = query
        .trim_start_matches('?')
        .split('&')
        .find_map(|pair| pair.strip_prefix("lang="))?;
    dlsys_core::text::Lang::from_id(asked)
}

/// Whether the page was opened with `?selftest`.
pub fn selftest_requested() -> bool {
    window()
        .and_then(|w| w.location().search().ok())
        .is_some_and(|s| s.contains("selftest"))
}

/// Names the self-test's current stage on the page (`data-stage` of the
/// `#selftest` element), so a measuring script can tell which frames belong
/// to which lesson's action.
pub fn mark_stage(stage: &str) {
    if let Some(pre) = window()
        .and_then(|w| w.document())
        .and_then(|d| d.get_element_by_id("selftest"))
    {
        let _ = pre.set_attribute("data-stage", stage);
    }
}

/// Writes the self-test report where a headless browser can read it.
pub fn write_selftest(json: &str, ok: bool) {
    let Some(document) = window().and_then(|w| w.document()) else {
        return;
    };
    if let Some(pre) = document.get_element_by_id("selftest") {
        pre.set_text_content(Some(json));
    }
    document.set_title(if ok {
        "selftest: ok"
    } else {
        "selftest: failed"
    });
}

/// Offers `text` as a file to download (the browser asks where to save it).
pub fn download(filename: &str, text: &str) -> Result<(), String> {
    let fail = |what: &str| format!("could not offer the download: {what}");
    let document = window()
        .and_then(|w| w.document())
        .ok_or_else(|| fail("no document"))?;
    let parts = js_sys::Array::of1(&eframe::wasm_bindgen::JsValue::from_str(text));
    let blob = web_sys::Blob::new_with_str_sequence(&parts).map_err(|_| fail("no Blob"))?;
    let url = web_sys::Url::create_object_url_with_blob(&blob).map_err(|_| fail("no URL"))?;
    let anchor = document
        .create_element("a")
        .ok()
        .and_then(|e| e.dyn_into::<web_sys::HtmlAnchorElement>().ok())
        .ok_or_else(|| fail("no link element"))?;
    anchor.set_href(&url);
    anchor.set_download(filename);
    anchor.click();
    let _ = web_sys::Url::revoke_object_url(&url);
    Ok(())
}

/// A file the learner picked: its name and bytes, or why it could not be read.
pub type Picked = Result<(String, Vec<u8>), crate::persist::exchange::ImportError>;

thread_local! {
    static PICKED: std::cell::RefCell<Option<Picked>> = const { std::cell::RefCell::new(None) };
    /// The app's context, to draw again when a picked file arrives.
    static WAKE: std::cell::RefCell<Option<egui::Context>> = const { std::cell::RefCell::new(None) };
}

/// Hands over a picked file and wakes the app to take it.
fn deliver(picked: Picked) {
    PICKED.with(|p| *p.borrow_mut() = Some(picked));
    WAKE.with(|w| {
        if let Some(ctx) = &*w.borrow() {
            ctx.request_repaint();
        }
    });
}

/// The id of the page's file input (hidden): the import's file chooser,
/// and where the browser self-test hands a file to the page.
pub const IMPORT_INPUT: &str = "dlsys-import";

/// The page's hidden file input, made once with its change handler: a file
/// chosen there (or set on it by a test) arrives through [`take_picked`]. A
/// file over `max_bytes` is not read at all: its size comes back as the reason.
fn import_input(ctx: &egui::Context, max_bytes: u64) -> Result<web_sys::HtmlInputElement, String> {
    use eframe::wasm_bindgen::closure::Closure;
    WAKE.with(|w| *w.borrow_mut() = Some(ctx.clone()));
    let fail = |what: &str| format!("could not open the file chooser: {what}");
    let document = window()
        .and_then(|w| w.document())
        .ok_or_else(|| fail("no document"))?;
    if let Some(found) = document
        .get_element_by_id(IMPORT_INPUT)
        .and_then(|e| e.dyn_into::<web_sys::HtmlInputElement>().ok())
    {
        return Ok(found);
    }
    let input = document
        .create_element("input")
        .ok()
        .and_then(|e| e.dyn_into::<web_sys::HtmlInputElement>().ok())
        .ok_or_else(|| fail("no input element"))?;
    input.set_type("file");
    input.set_id(IMPORT_INPUT);
    input.set_accept(".json,application/json");
    let _ = input.set_attribute("style", "display: none");
    let chosen = input.clone();
    let on_change = Closure::<dyn FnMut()>::new(move || {
        let Some(file) = chosen.files().and_then(|files| files.get(0)) else {
            return;
        };
        // The same file chosen again is a change too.
        chosen.set_value("");
        let name = file.name();
        let size = file.size() as u64;
        if size > max_bytes {
            deliver(Err(crate::persist::exchange::ImportError::TooLarge {
                bytes: size,
            }));
            return;
        }
        wasm_bindgen_futures::spawn_local(async move {
            let read = wasm_bindgen_futures::JsFuture::from(file.array_buffer()).await;
            let picked = match read {
                Ok(buffer) => Ok((name, js_sys::Uint8Array::new(&buffer).to_vec())),
                Err(err) => Err(crate::persist::exchange::ImportError::Read {
                    error: format!("{err:?}"),
                }),
            };
            deliver(picked);
        });
    });
    input.set_onchange(Some(eframe::wasm_bindgen::JsCast::unchecked_ref(
        on_change.as_ref(),
    )));
    // The handler lives as long as the page.
    on_change.forget();
    document
        .body()
        .ok_or_else(|| fail("no body"))?
        .append_child(&input)
        .map_err(|_| fail("could not add the input"))?;
    Ok(input)
}

/// Asks the learner for a file (the browser's file chooser); what they pick
/// arrives later through [`take_picked`].
pub fn pick_file(ctx: &egui::Context, max_bytes: u64) -> Result<(), String> {
    import_input(ctx, max_bytes)?.click();
    Ok(())
}

/// Makes the page's file input ready without opening the chooser (the
/// self-test hands it a file).
pub fn ready_import(ctx: &egui::Context, max_bytes: u64) {
    if let Err(err) = import_input(ctx, max_bytes) {
        log::warn!("{err}");
    }
}

/// Writes what the last import read into `#selftest[data-import]`, for the
/// browser self-test's export → import round trip.
pub fn mark_import(summary: &str) {
    if let Some(element) = window()
        .and_then(|w| w.document())
        .and_then(|d| d.get_element_by_id("selftest"))
    {
        let _ = element.set_attribute("data-import", summary);
    }
}

/// The file picked since the last call, if one arrived.
pub fn take_picked() -> Option<Picked> {
    PICKED.with(|p| p.borrow_mut().take())
}

/// Keeps Ctrl+K (⌘K) for the app's search box: the browsers take it for
/// their own search bar, and the canvas would lose the keys typed next.
/// The key still reaches the app (only the browser's default is stopped).
fn keep_search_key() {
    use eframe::wasm_bindgen::closure::Closure;
    let Some(window) = window() else {
        return;
    };
    let on_key =
        Closure::<dyn FnMut(web_sys::KeyboardEvent)>::new(|event: web_sys::KeyboardEvent| {
            if (event.ctrl_key() || event.meta_key()) && event.key().eq_ignore_ascii_case("k") {
                event.prevent_default();
            }
        });
    let added = window.add_event_listener_with_callback(
        "keydown",
        eframe::wasm_bindgen::JsCast::unchecked_ref(on_key.as_ref()),
    );
    if added.is_err() {
        log::warn!("could not keep Ctrl+K for the search box");
    }
    // The listener lives as long as the page.
    on_key.forget();
}

/// Starts the app on the page's canvas.
pub fn start() {
    eframe::WebLogger::init(log::LevelFilter::Info).ok();
    keep_search_key();
    let options = eframe::WebOptions {
        wgpu_options: crate::setup::wgpu_configuration(),
        ..Default::default()
    };
    wasm_bindgen_futures::spawn_local(async move {
        let Some(document) = window().and_then(|w| w.document()) else {
            return;
        };
        let Some(canvas) = document
            .get_element_by_id("dlsys_canvas")
            .and_then(|e| e.dyn_into::<web_sys::HtmlCanvasElement>().ok())
        else {
            log::error!("no <canvas id=\"dlsys_canvas\"> on the page");
            return;
        };
        let startup = Startup {
            lesson: hash(),
            selftest: selftest_requested(),
            lang: asked_language(),
            system_lang: crate::system_lang(),
            ..Default::default()
        };
        let result = eframe::WebRunner::new()
            .start(
                canvas,
                options,
                Box::new(move |cc| Ok(Box::new(DlsysApp::new(cc, startup)))),
            )
            .await;
        if let Some(loading) = document.get_element_by_id("loading") {
            match result {
                Ok(()) => loading.remove(),
                Err(err) => {
                    loading.set_text_content(Some(&format!("dlsys-lab could not start: {err:?}")));
                }
            }
        }
    });
}
