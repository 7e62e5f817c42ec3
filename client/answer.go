package client

import (
	"context"
	"net/http"
)

// Answer is the raw answer of one call, before a typed method decoded it,
// for a program that must show or keep the API's answer as it came (a
// command line's JSON output, an audit log) or read what no method
// returns (a header; a management answer's statusMessage): WithAnswer.
// Body is nil for a streamed call (Keys, Values, Watch, a backup), whose
// iterator or reader reads it; Member is the base URL that answered.
type Answer struct {
	Status int
	Header http.Header
	Body   []byte
	Member string
}

type answerKey struct{} // WithAnswer's context key

// WithAnswer returns a copy of ctx under which a call that succeeds
// records its answer in a (as httptrace hands a trace to a request): e.g.
// c.CreateRegion(client.WithAnswer(ctx, &a), info), then a.Body is
// {"statusCode":"OK","statusMessage":"region orders created"}. An error
// leaves a alone (the *Error has the Body). Give each call that may run at
// the same time an Answer of its own.
func WithAnswer(ctx context.Context, a *Answer) context.Context {
	return context.WithValue(ctx, answerKey{}, a)
}

// record writes resp into the Answer ctx carries, if any.
func record(ctx context.Context, resp *response) {
	if a, _ := ctx.Value(answerKey{}).(*Answer); a != nil {
		*a = Answer{Status: resp.status, Header: resp.header, Body: resp.body, Member: resp.member}
	}
}
