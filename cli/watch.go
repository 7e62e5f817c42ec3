package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/kvnode/kvnode/cli/render"
	"github.com/kvnode/kvnode/cli/scalar"
	"github.com/kvnode/kvnode/cli/sse"
)

func newWatchCmd(a *app) *cobra.Command {
	var keys, prefix, oql, named, from string
	var binds []string
	var initial bool
	var count uint
	c := command("watch [REGION]", "Print the changes of a region, or of a continuous query, as they happen", `
Watch a region (GET /kv/v1/watch; DATA:READ:REGION): a line per event,
"create  KEY  VALUE", or with -o json the event's JSON plus its "token"
(and "ready" and "end", which the table form writes to stderr). Narrow it
with --keys k1,k2 or --prefix P; watch a continuous query with -q 'SELECT *
FROM /R r WHERE ...' or --named ID (REGION optional) and --bind TYPE:VALUE.
--initial prints the matching entries first; --from TOKEN resumes after it.
A dropped stream resumes on the next member after the last token, nothing
lost or repeated (exit code 6 when none accepts it for a minute); a token
older than the history kept is exit code 7, with the oldest token kept. A
destroyed region ends the watch; --count N stops after N changes, --timeout
D after D (exit code 0); else it runs until interrupted (Ctrl-C, exit code 0).`, cobra.MaximumNArgs(1), func(cmd *cobra.Command, args []string) error {
		q := url.Values{}
		if len(args) == 1 {
			q.Set("region", args[0])
		}
		switch {
		case keys != "" && prefix != "":
			return usagef("--keys and --prefix exclude each other")
		case oql != "" && named != "":
			return usagef("--query and --named exclude each other")
		case len(args) == 0 && oql == "" && named == "":
			return usagef("give the REGION to watch, or a continuous query with --query or --named")
		case len(binds) > 0 && oql == "" && named == "":
			return usagef("--bind needs a continuous query (--query or --named)")
		case initial && from != "":
			return usagef("--initial and --from exclude each other: a resumed watch continues where the former stopped")
		}
		for name, v := range map[string]string{"keys": keys, "prefix": prefix, "q": oql, "query": named} {
			if v != "" {
				q.Set(name, v)
			}
		}
		if initial {
			q.Set("initial", "true")
		}
		if len(binds) > 0 {
			values, err := scalar.ParseAll("bind", binds)
			if err != nil {
				return Usage(err)
			}
			q.Set("binds", string(scalar.JSON(values)))
		}
		ctx := cmd.Context()
		if cmd.Flags().Changed("timeout") {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, a.conn.timeout)
			defer cancel()
		}
		a.conn.timeout = 0 // a watch's answer never ends by itself
		cl, err := a.client()
		if err != nil {
			return err
		}
		w := &watcher{c: cl, p: a.printer(cmd), errOut: cmd.ErrOrStderr(), query: q, token: from, left: count, seen: map[string]string{}}
		if err := w.run(ctx); ctx.Err() == nil {
			return err
		}
		return nil // interrupted, or --timeout
	})
	f := c.Flags()
	f.StringVar(&keys, "keys", "", "watch only these keys (a comma list)")
	f.StringVar(&prefix, "prefix", "", "watch only the keys starting with this")
	f.StringVarP(&oql, "query", "q", "", "a continuous query: 'SELECT * FROM /R r WHERE ...'")
	f.StringVar(&named, "named", "", "the ID of a named query to watch as a continuous query")
	f.StringArrayVarP(&binds, "bind", "b", nil, "bind value TYPE:VALUE for $1, $2, ... of the query (repeat in order)")
	f.BoolVar(&initial, "initial", false, "print the matching entries first, then the changes")
	f.StringVar(&from, "from", "", "resume after this token")
	f.UintVar(&count, "count", 0, "stop after this many changes (0: no limit)")
	c.ValidArgsFunction = a.completeRegion
	return c
}

// Bounds of a watch: the wait for a member's answer (one that accepts
// connections and answers nothing is left), the time without any member
// accepting the watch before giving up, one line (an event's JSON).
const (
	headerWait   = 30 * time.Second
	patience     = time.Minute
	maxEventLine = 64 << 20
)

// watcher is one watch: it reads a member's stream, prints its events,
// and resumes on the next member after the last token when the stream
// drops, as a browser's EventSource does.
type watcher struct {
	c      *client
	p      printer
	errOut io.Writer
	query  url.Values // initial=true until ready: the token is of use only from then

	live  bool   // ready was received
	token string // the last event ID, sent as Last-Event-ID on resuming
	left  uint   // changes to print before stopping; 0 without --count
	// seen are the initial entries printed before ready: a stream that
	// drops before it starts them again, and none prints twice.
	seen map[string]string
}

var (
	// errWatchDone ends a watch as asked (--count) or by the server (end).
	errWatchDone = errors.New("watch done")
	// errNotStream is an answer no member would answer differently.
	errNotStream = errors.New("not the API's event stream")
)

// run watches until done, ctx ends, or an answer that no other member
// would answer differently (a 4xx).
func (w *watcher) run(ctx context.Context) error {
	member, lastOK, delay := 0, time.Now(), time.Duration(0)
	for {
		base := w.c.bases[member%len(w.c.bases)]
		member++
		accepted, delivered, err := w.stream(ctx, base)
		if err == nil || ctx.Err() != nil {
			return err
		}
		var api *APIError
		switch {
		case errors.As(err, &api) && api.Status == http.StatusGone:
			var doc struct {
				Oldest string `json:"oldestToken"`
			}
			if json.Unmarshal(api.Body, &doc) == nil && doc.Oldest != "" {
				api.Cause += fmt.Sprintf("; the oldest token kept is %s: watch again with --from %[1]s (the changes before it are lost) or with --initial", doc.Oldest)
			}
			return err
		case errors.As(err, &api) && api.Status != http.StatusServiceUnavailable, errors.Is(err, errNotStream):
			return err
		}
		if accepted {
			lastOK = time.Now()
		}
		if delivered {
			delay = 0
		} else if time.Since(lastOK) > patience {
			return &unreachableError{attempts: []error{fmt.Errorf("no member accepted the watch for %v; the last said: %w", patience, err)}}
		}
		fmt.Fprintf(w.errOut, "watch: %v; resuming on %s\n", err, w.c.bases[member%len(w.c.bases)].Redacted())
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(delay):
		}
		delay = min(max(2*delay, 100*time.Millisecond), 5*time.Second)
	}
}

// stream runs one request on base: accepted says that the member answered
// with a stream, delivered that an event came. A nil error is a watch done.
func (w *watcher) stream(ctx context.Context, base *url.URL) (accepted, delivered bool, err error) {
	attempt, cancel := context.WithCancel(ctx)
	defer cancel()
	waiting := time.AfterFunc(headerWait, cancel)
	defer waiting.Stop()
	req := request{Method: http.MethodGet, Path: "/kv/v1/watch", Query: w.query,
		Header: http.Header{"Accept": {"text/event-stream, application/json"}}}
	if w.query.Get("initial") == "" && w.token != "" {
		req.Header.Set("Last-Event-ID", w.token)
	}
	req.Stream = func(h http.Header, body io.Reader) error {
		waiting.Stop()
		if mt, _, _ := mime.ParseMediaType(h.Get("Content-Type")); mt != "text/event-stream" {
			return fmt.Errorf("%w: the answer is %q", errNotStream, h.Get("Content-Type"))
		}
		accepted = true
		r := sse.NewReader(body, maxEventLine)
		for {
			ev, err := r.Next()
			if w.live {
				w.token = r.LastID()
			}
			if err != nil {
				return fmt.Errorf("the stream dropped: %w", err)
			}
			delivered = true
			if err := w.event(ev); err != nil {
				return err
			}
		}
	}
	_, err = w.c.send(attempt, base, req)
	if errors.Is(err, errWatchDone) {
		return accepted, delivered, nil
	}
	return accepted, delivered, err
}

// event handles one event of the stream.
func (w *watcher) event(ev sse.Event) error {
	var d struct {
		Key   *string         `json:"key"`
		Value json.RawMessage `json:"value"`
		Cause string          `json:"cause"`
		Token string          `json:"token"`
	}
	if err := json.Unmarshal([]byte(ev.Data), &d); err != nil {
		return fmt.Errorf("%w: event %s: its data is not JSON: %w", errNotStream, ev.Type, err)
	}
	switch ev.Type {
	case "ready":
		w.live, w.seen, w.token = true, nil, ev.ID
		w.query.Del("initial")
		if !w.p.json {
			fmt.Fprintf(w.errOut, "watch: live from token %s\n", ev.ID)
			return nil
		}
	case "error":
		if w.live && d.Token != "" {
			w.token = d.Token
		}
		return errors.New("the member ended the stream: " + d.Cause)
	case "end":
		fmt.Fprintf(w.errOut, "watch: ended: %s\n", d.Cause)
		if !w.p.json {
			return errWatchDone
		}
	case "initial":
		if d.Key != nil && w.seen != nil {
			if v, ok := w.seen[*d.Key]; ok && v == string(d.Value) {
				return nil
			}
			w.seen[*d.Key] = string(d.Value)
		}
	case "create", "update", "destroy", "expire", "clear":
	default:
		return nil // an event type of a later version: not ours to print
	}
	if err := w.print(ev, d.Key, d.Value, d.Token != ""); err != nil {
		return err
	}
	if ev.Type != "initial" && ev.Type != "ready" && w.left > 0 {
		w.left--
		if w.left == 0 {
			return errWatchDone
		}
	}
	if ev.Type == "end" {
		return errWatchDone
	}
	return nil
}

// print writes an event: its data and its token as one JSON line, or
// "TYPE  KEY  VALUE".
func (w *watcher) print(ev sse.Event, key *string, value json.RawMessage, hasToken bool) error {
	if w.p.json {
		data := strings.TrimSpace(ev.Data)
		if !hasToken && strings.HasSuffix(data, "}") {
			tok, _ := json.Marshal(ev.ID)
			sep := ","
			if data == "{}" {
				sep = ""
			}
			data = data[:len(data)-1] + sep + `"token":` + string(tok) + "}"
		}
		return w.p.raw([]byte(data))
	}
	k, v := "-", "-"
	if key != nil {
		if k = *key; k == "" || strings.ContainsAny(k, " \t") || strconv.Quote(k) != `"`+k+`"` {
			k = strconv.Quote(k)
		}
	}
	if len(value) > 0 {
		v = render.Cell(value)
	}
	_, err := fmt.Fprintf(w.p.out, "%-7s  %s  %s\n", ev.Type, k, v)
	return err
}
