// Package console owns kvnode's web console: the page, its style sheet and
// its scripts (plain HTML, CSS and JavaScript modules under assets/,
// embedded in the binary with embed: no build step, nothing fetched from
// the internet when the page is shown), and the http.Handler that serves
// them. Package rest mounts the handler at /console/ and redirects / there.
//
// The page is a client of the public REST API like any other: everything
// it shows and changes goes through /kv/v1, /management/v1 and /readyz
// from the browser, with the user's HTTP Basic credentials on every call
// when security is on. There is no endpoint of the console's own. The
// assets are static and need no credentials; the page shows nothing but
// its sign-in form until the API accepts the credentials, and keeps them
// in memory only (never in cookies or web storage), so they are gone when
// the tab is closed or reloaded.
//
// The handler answers GET and HEAD with the embedded files, each with its
// content type, a strong ETag (304 on If-None-Match), Cache-Control:
// no-cache and a Content-Security-Policy that lets the page load and
// connect to its own origin only (no inline script, no framing).
//
// It must not import rest (which serves it), Echo, nor any package of
// kvnode: it is a page, not behaviour (imports_test.go checks).
package console
