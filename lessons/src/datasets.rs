//! The data sets lessons and the CLI train on, by name.

use dlsys_core::nn::{Dataset, Synthetic};

/// The names `--dataset` and the trainer accept.
pub const NAMES: [&str; 6] = ["mnist", "digits", "spirals", "moons", "circles", "xor"];

/// The MNIST file, compiled in on native builds (the web build fetches it).
#[cfg(not(target_arch = "wasm32"))]
const MNIST: Option<&[u8]> = Some(include_bytes!("../../assets/data/mnist10k.dlds"));
#[cfg(target_arch = "wasm32")]
const MNIST: Option<&[u8]> = None;

const DIGITS: &[u8] = include_bytes!("../../assets/data/digits.dlds");

/// Points in each synthetic set.
pub const SYNTHETIC_POINTS: usize = 1000;

/// Where a data set fetched on demand stands (web build).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Fetch {
    NotStarted,
    Pending,
    Ready,
    Failed(String),
}

#[cfg(target_arch = "wasm32")]
thread_local! {
    static FETCHED_MNIST: std::cell::RefCell<(Fetch, Option<Vec<u8>>)> =
        const { std::cell::RefCell::new((Fetch::NotStarted, None)) };
}

/// Whether `name` must be downloaded before [`load`] can return it.
pub fn needs_fetch(name: &str) -> bool {
    MNIST.is_none() && name.trim().eq_ignore_ascii_case("mnist")
}

/// Starts (once) or reports the download of MNIST next to the page
/// (`assets/data/mnist10k.dlds`). Native builds have it compiled in.
pub fn fetch_mnist() -> Fetch {
    #[cfg(target_arch = "wasm32")]
    {
        let state = FETCHED_MNIST.with(|cell| cell.borrow().0.clone());
        if state == Fetch::NotStarted {
            FETCHED_MNIST.with(|cell| cell.borrow_mut().0 = Fetch::Pending);
            wasm_bindgen_futures::spawn_local(async {
                let result = download("assets/data/mnist10k.dlds").await;
                FETCHED_MNIST.with(|cell| {
                    *cell.borrow_mut() = match result {
                        Ok(bytes) => (Fetch::Ready, Some(bytes)),
                        Err(err) => (Fetch::Failed(err), None),
                    };
                });
            });
            return Fetch::Pending;
        }
        state
    }
    #[cfg(not(target_arch = "wasm32"))]
    {
        Fetch::Ready
    }
}

#[cfg(target_arch = "wasm32")]
async fn download(url: &str) -> Result<Vec<u8>, String> {
    use wasm_bindgen::JsCast as _;
    use wasm_bindgen_futures::JsFuture;
    let window = web_sys::window().ok_or("no window")?;
    let response = JsFuture::from(window.fetch_with_str(url))
        .await
        .map_err(|e| format!("fetching {url}: {e:?}"))?;
    let response: web_sys::Response = response
        .dyn_into()
        .map_err(|_| "not a response".to_owned())?;
    if !response.ok() {
        return Err(format!("fetching {url}: HTTP {}", response.status()));
    }
    let buffer = JsFuture::from(response.array_buffer().map_err(|e| format!("{e:?}"))?)
        .await
        .map_err(|e| format!("reading {url}: {e:?}"))?;
    Ok(js_sys::Uint8Array::new(&buffer).to_vec())
}

/// Loads a data set by name; `seed` seeds the synthetic ones.
pub fn load(name: &str, seed: u64) -> Result<Dataset, String> {
    match name.trim().to_ascii_lowercase().as_str() {
        "mnist" => match MNIST {
            Some(bytes) => Dataset::from_dlds("mnist", bytes),
            None => fetched_mnist(),
        },
        "digits" => Dataset::from_dlds("digits", DIGITS),
        other => Synthetic::ALL
            .into_iter()
            .find(|s| s.name() == other)
            .map(|s| s.generate(SYNTHETIC_POINTS, seed))
            .ok_or_else(|| format!("unknown data set `{name}`; use one of {}", NAMES.join(", "))),
    }
}

#[cfg(target_arch = "wasm32")]
fn fetched_mnist() -> Result<Dataset, String> {
    FETCHED_MNIST.with(|cell| match &*cell.borrow() {
        (_, Some(bytes)) => Dataset::from_dlds("mnist", bytes),
        (Fetch::Failed(err), _) => Err(err.clone()),
        _ => Err("MNIST is still downloading".to_owned()),
    })
}

#[cfg(not(target_arch = "wasm32"))]
fn fetched_mnist() -> Result<Dataset, String> {
    Err("MNIST is not compiled into this build".to_owned())
}

/// The held-out fraction used everywhere (MNIST 10k: 8,000 / 2,000).
pub const TEST_FRACTION: f64 = 0.2;

#[cfg(test)]
mod tests {
    #[test]
    fn every_name_loads() {
        for name in super::NAMES {
            let data = super::load(name, 1).unwrap_or_else(|e| panic!("{e}"));
            assert!(!data.is_empty());
        }
        assert!(super::load("cifar", 1).is_err());
    }
}
