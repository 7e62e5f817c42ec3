package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/kvnode/kvnode/cli/render"
	"github.com/kvnode/kvnode/client"
)

func newWatchCmd(a *app) *cobra.Command {
	var keys, prefix, oql, named, from string
	var bindArgs []string
	var initial bool
	var count uint
	c := a.command("watch [REGION]", "Print the changes of a region, or of a continuous query, as they happen", `
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
D after D (exit code 0); else it runs until interrupted (Ctrl-C, exit code 0).`, cobra.MaximumNArgs(1), func(s *session, args []string) error {
		opts := client.WatchOptions{Prefix: prefix, Query: oql, NamedQuery: named, Initial: initial, From: from}
		if len(args) == 1 {
			opts.Region = args[0]
		}
		switch {
		case keys != "" && prefix != "":
			return usagef("--keys and --prefix exclude each other")
		case oql != "" && named != "":
			return usagef("--query and --named exclude each other")
		case len(args) == 0 && oql == "" && named == "":
			return usagef("give the REGION to watch, or a continuous query with --query or --named")
		case len(bindArgs) > 0 && oql == "" && named == "":
			return usagef("--bind needs a continuous query (--query or --named)")
		case initial && from != "":
			return usagef("--initial and --from exclude each other: a resumed watch continues where the former stopped")
		}
		if keys != "" {
			opts.Keys = strings.Split(keys, ",")
		}
		if len(bindArgs) > 0 {
			var err error
			if opts.Binds, err = binds("bind", bindArgs); err != nil {
				return err
			}
		}
		if !s.cmd.Flags().Changed("timeout") {
			s.untimed() // a watch's answer never ends by itself
		}
		errOut := s.cmd.ErrOrStderr()
		opts.OnStream = func(st client.WatchStream) {
			var e *client.Error
			if st.Err != nil && !errors.Is(st.Err, client.ErrWatchEnded) && (!errors.As(st.Err, &e) || e.Status == http.StatusServiceUnavailable) {
				fmt.Fprintf(errOut, "watch: %v; resuming\n", st.Err) // what the watch goes on after
			}
		}
		w := &watcher{p: s.p, errOut: errOut, token: from, left: count}
		for ev, err := range s.Watch(s.ctx, opts) {
			if err != nil {
				return w.ended(err)
			}
			if done, err := w.event(ev); done || err != nil {
				return err
			}
		}
		return nil // interrupted, or --timeout
	})
	f := c.Flags()
	f.StringVar(&keys, "keys", "", "watch only these keys (a comma list)")
	f.StringVar(&prefix, "prefix", "", "watch only the keys starting with this")
	f.StringVarP(&oql, "query", "q", "", "a continuous query: 'SELECT * FROM /R r WHERE ...'")
	f.StringVar(&named, "named", "", "the ID of a named query to watch as a continuous query")
	f.StringArrayVarP(&bindArgs, "bind", "b", nil, "bind value TYPE:VALUE for $1, $2, ... of the query (repeat in order)")
	f.BoolVar(&initial, "initial", false, "print the matching entries first, then the changes")
	f.StringVar(&from, "from", "", "resume after this token")
	f.UintVar(&count, "count", 0, "stop after this many changes (0: no limit)")
	c.ValidArgsFunction = a.completeRegion
	return c
}

// watcher prints one watch's events.
type watcher struct {
	p      printer
	errOut io.Writer
	token  string // the latest event's token
	left   uint   // changes to print before stopping; 0 without --count
}

// event prints ev; done when --count is reached.
func (w *watcher) event(ev client.Event) (done bool, err error) {
	if ev.Token != "" {
		w.token = ev.Token
	}
	if ev.Type == client.EventReady && !w.p.json {
		fmt.Fprintf(w.errOut, "watch: live from token %s\n", ev.Token)
		return false, nil
	}
	if err := w.print(ev.Type, ev.Key, ev.Value, ev.Data, ev.Token); err != nil {
		return true, err
	}
	if ev.Type != client.EventInitial && ev.Type != client.EventReady && w.left > 0 {
		w.left--
		return w.left == 0, nil
	}
	return false, nil
}

// ended handles the error that ended the watch: the members' end of it
// (exit code 0), a resume token too old (saying which is the oldest one
// kept), or a failure.
func (w *watcher) ended(err error) error {
	var end *client.WatchEndedError
	var e *client.Error
	switch {
	case errors.As(err, &end):
		fmt.Fprintf(w.errOut, "watch: ended: %s\n", end.Cause)
		if w.p.json {
			return w.print("end", "", nil, end.Data, w.token)
		}
		return nil
	case errors.As(err, &e) && errors.Is(err, client.ErrGone):
		var doc struct {
			Oldest string `json:"oldestToken"`
		}
		if json.Unmarshal(e.Body, &doc) == nil && doc.Oldest != "" {
			e.Message += fmt.Sprintf("; the oldest token kept is %s: watch again with --from %[1]s (the changes before it are lost) or with --initial", doc.Oldest)
		}
	}
	return err
}

// print writes an event: its data as the member sent it, with its token
// when the data lacks one, as one JSON line; or "TYPE  KEY  VALUE".
func (w *watcher) print(typ, key string, value, data json.RawMessage, token string) error {
	if w.p.json {
		var has struct {
			Token *string `json:"token"`
		}
		out := bytes.TrimSpace(data)
		if json.Unmarshal(out, &has) == nil && has.Token == nil && bytes.HasSuffix(out, []byte("}")) {
			tok, _ := json.Marshal(token)
			sep := ","
			if string(out) == "{}" {
				sep = ""
			}
			out = fmt.Appendf(nil, "%s%s\"token\":%s}", out[:len(out)-1], sep, tok)
		}
		return w.p.raw(out)
	}
	k, v := "-", "-"
	if key != "" {
		if k = key; strings.ContainsAny(k, " \t") || strconv.Quote(k) != `"`+k+`"` {
			k = strconv.Quote(k)
		}
	}
	if len(value) > 0 {
		v = render.Cell(value)
	}
	_, err := fmt.Fprintf(w.p.out, "%-7s  %s  %s\n", typ, k, v)
	return err
}
