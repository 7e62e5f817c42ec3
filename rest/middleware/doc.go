// Package middleware holds the HTTP conveniences around kvnode's API that
// know nothing of what the API means: gzip of answers (Compress) and of
// request bodies (Decompress), cross-origin access for browsers (CORS),
// request IDs (RequestID), and serving one path prefix as another
// (AliasPrefix, for Geode's /geode/v1). Package rest puts them in its Echo
// chain; they work for every route alike, the API's and Swagger UI's.
//
// What each guarantees, and why:
//
//   - Compress gzips an answer only when the client's Accept-Encoding
//     admits gzip and the answer is at least 1 KiB (shorter ones, an
//     entry or an error, go as they are: gzip's header and CPU would cost
//     more than it saves), and writes through a compressor of bounded size, so a
//     streamed listing still streams in constant memory. An answer that
//     aborts its connection mid-body (http.ErrAbortHandler, how rest ends
//     a listing that failed after its 200) leaves the gzip stream
//     unfinished as well, so no layer of the client mistakes it for a
//     whole answer. An answer that already has a Content-Encoding (the
//     pre-compressed assets of Swagger UI) is left as it is.
//   - Decompress accepts Content-Encoding: gzip on request bodies and
//     decodes them as they are read, so the body size limit that rest puts
//     on the read applies to the decoded bytes: a small body that inflates
//     past it (a zip bomb) is refused with 413 after at most the limit of
//     work. A corrupt body is a 400 (region.ErrInvalid); any other coding
//     is ErrUnsupportedEncoding, which rest answers 415.
//   - CORS is off unless origins are given. It never sends
//     Access-Control-Allow-Credentials: a page sends the user's
//     credentials itself, in an Authorization header the preflight
//     allows, and a browser's remembered credentials are never used on
//     another origin's behalf.
//   - RequestID keeps a client's X-Request-ID when it is 1 to
//     MaxRequestIDLen visible ASCII characters and makes one otherwise;
//     the answer echoes it, and rest puts it in the request's log lines.
//   - AliasPrefix rewrites the path before routing only; the handlers
//     see the client's URL (RestoreAliasedURL) and which prefix it used
//     (AliasUsed), so that the URLs they name use the client's prefix.
//
// It imports Echo and package region (for ErrInvalid) and nothing else of
// kvnode: it must not import rest, store, fsm, cluster, oql, function or
// auth (imports_test.go checks).
package middleware
