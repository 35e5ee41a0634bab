//! HTML for the console: the one escape function every server-supplied
//! string goes through ([`escape`]), the page frame, and the headers every
//! answer carries (a strict Content-Security-Policy above all).

use std::fmt::Write as _;

use switchboard_server::http::AppResponse;

/// The Content-Security-Policy of every console answer: nothing but the
/// console's own scripts, styles and images, no inline script or style,
/// no framing, forms posting only to the console itself.
pub(crate) const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

/// The console's script and style, embedded in the binary.
pub(crate) const SCRIPT: &str = include_str!("assets/console.js");
pub(crate) const STYLE: &str = include_str!("assets/console.css");

/// `text` made safe to put into HTML, as element content or as a quoted
/// attribute value: `&`, `<`, `>`, `"` and `'` become entities. Every
/// string that did not come from the console's own code goes through
/// here (server names, descriptions, reasons, principals, audit fields).
pub(crate) fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// The headers of every console answer.
pub(crate) fn secured(response: AppResponse) -> AppResponse {
    response
        .header("content-security-policy", CSP)
        .header("x-content-type-options", "nosniff")
        .header("x-frame-options", "DENY")
        .header("referrer-policy", "same-origin")
        .header("cache-control", "no-store")
        .header("cross-origin-opener-policy", "same-origin")
        .header("cross-origin-resource-policy", "same-origin")
}

/// Who is looking at a page, for its frame.
pub(crate) struct Frame<'a> {
    /// The signed-in principal (escaped here).
    pub(crate) principal: &'a str,
    /// The session's CSRF token, when signed in with a session (the sign
    /// out form needs it).
    pub(crate) csrf: Option<&'a str>,
}

/// A whole page: `body` (already HTML) in the frame, titled `title`.
pub(crate) fn page(status: u16, title: &str, frame: Option<&Frame<'_>>, body: &str) -> AppResponse {
    let mut html = String::with_capacity(body.len() + 1024);
    let _ = write!(
        html,
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <title>{} · Switchboard console</title>\
         <link rel=\"stylesheet\" href=\"/console/assets/console.css\">\
         <script src=\"/console/assets/console.js\" defer></script></head><body>",
        escape(title)
    );
    html.push_str("<header><span class=\"brand\">Switchboard console</span>");
    if let Some(frame) = frame {
        html.push_str(
            "<nav><a href=\"/console/servers\">Servers</a><a href=\"/console/tools\">Tools</a>\
             <a href=\"/console/calls\">Calls</a><a href=\"/console/approvals\">Approvals</a><a href=\"/console/evals\">Evals</a></nav>",
        );
        let _ = write!(
            html,
            "<span class=\"who\">signed in as <b>{}</b></span>",
            escape(frame.principal)
        );
        if let Some(csrf) = frame.csrf {
            let _ = write!(
                html,
                "<form method=\"post\" action=\"/console/logout\" class=\"inline\">{}\
                 <button type=\"submit\">Sign out</button></form>",
                csrf_field(csrf)
            );
        }
    }
    let _ = write!(
        html,
        "</header><main><h1>{}</h1>{body}</main></body></html>",
        escape(title)
    );
    secured(AppResponse::new(status, "text/html; charset=utf-8", html))
}

/// The hidden field carrying the session's CSRF token in a form.
pub(crate) fn csrf_field(csrf: &str) -> String {
    format!(
        "<input type=\"hidden\" name=\"csrf\" value=\"{}\">",
        escape(csrf)
    )
}

/// A short page saying `message` (escaped), with `status`.
pub(crate) fn message(status: u16, title: &str, message: &str) -> AppResponse {
    page(status, title, None, &format!("<p>{}</p>", escape(message)))
}

#[cfg(test)]
mod tests {
    use super::escape;

    #[test]
    fn markup_and_quotes_become_text() {
        assert_eq!(
            escape("<script>alert('x')</script> & \"q\""),
            "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt; &amp; &quot;q&quot;"
        );
        assert_eq!(escape("plain"), "plain");
    }
}
