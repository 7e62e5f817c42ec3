package watchbench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
)

// kvnodeTarget is a kvnode member: watches are SSE streams of one region.
type kvnodeTarget struct {
	region string
	auth   string
}

func (k *kvnodeTarget) watch(ctx context.Context, hc *http.Client, base string, ready func(), value func([]byte)) error {
	req, err := http.NewRequestWithContext(ctx, "GET", base+"/kv/v1/watch?region="+url.QueryEscape(k.region), nil)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "text/event-stream")
	if k.auth != "" {
		req.Header.Set("Authorization", k.auth)
	}
	resp, err := hc.Do(req)
	if err != nil {
		return fmt.Errorf("watch: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return answerError("watch", resp)
	}
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt != "text/event-stream" {
		return fmt.Errorf("watch: 200 with Content-Type %q, want text/event-stream", resp.Header.Get("Content-Type"))
	}
	sr := newSSEReader(resp.Body)
	for {
		ev, err := sr.next()
		if err != nil {
			if errors.Is(err, io.EOF) {
				return fmt.Errorf("%w: the member closed it without an error or end event", errEnded)
			}
			return fmt.Errorf("watch stream: %w", err)
		}
		switch ev.name {
		case "ready":
			ready()
		case "error", "end":
			var doc struct {
				Cause string `json:"cause"`
			}
			_ = json.Unmarshal(ev.data, &doc) // the cause is for the report; a body without one still ends the stream
			return fmt.Errorf("%w: %s event: %s", errEnded, ev.name, doc.Cause)
		case "create", "update":
			value(ev.data) // the event's JSON: the stamp is found in it by a byte search
		}
	}
}

func (k *kvnodeTarget) put(ctx context.Context, hc *http.Client, base, key string, v []byte) error {
	u := base + "/kv/v1/" + url.PathEscape(k.region) + "/" + url.PathEscape(key)
	req, err := http.NewRequestWithContext(ctx, "PUT", u, bytes.NewReader(v))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	if k.auth != "" {
		req.Header.Set("Authorization", k.auth)
	}
	return send(hc, req)
}

// send does req and reads its answer whole: a status other than 200 is a
// *statusError.
func send(hc *http.Client, req *http.Request) error {
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, err = io.Copy(io.Discard, resp.Body)
	if resp.StatusCode != http.StatusOK {
		return &statusError{resp.StatusCode}
	}
	return err
}
