//! Thin calls into the browser's own APIs, shared by every island: `fetch`, so the islands
//! carry no HTTP client of their own (the request and its body are the browser's objects, and
//! so is the error text), and finding elements by selector as the type an island needs.

use wasm_bindgen::JsCast;
use web_sys::Element;

/// The first element under `root` that matches `selector` and is a `T`.
pub fn first<T: JsCast>(root: &Element, selector: &str) -> Option<T> {
    root.query_selector(selector).ok().flatten().and_then(|e| e.dyn_into().ok())
}

/// Every element under `root` that matches `selector` and is a `T`, in document order.
pub fn all<T: JsCast>(root: &Element, selector: &str) -> Vec<T> {
    let Ok(nodes) = root.query_selector_all(selector) else { return Vec::new() };
    (0..nodes.length()).filter_map(|i| nodes.item(i)?.dyn_into().ok()).collect()
}

/// The page's root element, for finding anything on the page.
pub fn page() -> Option<Element> {
    web_sys::window()?.document()?.document_element()
}
use wasm_bindgen_futures::JsFuture;

/// Sends `method url` with an optional form body, posted as a browser posts a form
/// (`application/x-www-form-urlencoded`, accepting HTML), so the server answers it exactly as
/// it answers a page without JavaScript; redirects are followed. A response with any status
/// is `Ok`; `Err` says why none came back.
pub async fn fetch(
    method: &str,
    url: &str,
    form: Option<&web_sys::UrlSearchParams>,
) -> Result<web_sys::Response, String> {
    let window = web_sys::window().ok_or("no browser window")?;
    let init = web_sys::RequestInit::new();
    init.set_method(method);
    if let Some(form) = form {
        init.set_body(form);
        let headers = web_sys::Headers::new().map_err(error_text)?;
        headers.set("accept", "text/html").map_err(error_text)?;
        init.set_headers(&headers);
    }
    let response = JsFuture::from(window.fetch_with_str_and_init(url, &init)).await.map_err(error_text)?;
    response.dyn_into().map_err(error_text)
}

/// Posts `form` to a server function and reads its JSON answer with the browser's own
/// parser (no JSON deserializer ships in the wasm). A non-2xx answer is `Err` with the
/// server's words.
pub async fn post_for_json(
    url: &str,
    form: &web_sys::UrlSearchParams,
) -> Result<wasm_bindgen::JsValue, String> {
    let window = web_sys::window().ok_or("no browser window")?;
    let init = web_sys::RequestInit::new();
    init.set_method("POST");
    init.set_body(form);
    let headers = web_sys::Headers::new().map_err(error_text)?;
    headers.set("accept", "application/json").map_err(error_text)?;
    init.set_headers(&headers);
    let response: web_sys::Response = JsFuture::from(window.fetch_with_str_and_init(url, &init))
        .await
        .map_err(error_text)?
        .dyn_into()
        .map_err(error_text)?;
    let body = text(&response).await?;
    if !response.ok() {
        return Err(body);
    }
    js_sys::JSON::parse(&body).map_err(error_text)
}

/// A string field of a parsed JSON object, or empty.
pub fn json_str(v: &wasm_bindgen::JsValue, key: &str) -> Option<String> {
    js_sys::Reflect::get(v, &wasm_bindgen::JsValue::from_str(key)).ok()?.as_string()
}

/// The response's body as text.
pub async fn text(response: &web_sys::Response) -> Result<String, String> {
    let body = JsFuture::from(response.text().map_err(error_text)?).await.map_err(error_text)?;
    body.as_string().ok_or_else(|| "the body is not text".to_string())
}

fn error_text(e: wasm_bindgen::JsValue) -> String {
    match e.dyn_ref::<js_sys::Error>() {
        Some(e) => String::from(e.message()),
        None => e.as_string().unwrap_or_else(|| "the browser refused the request".to_string()),
    }
}
