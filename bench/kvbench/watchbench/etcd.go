package watchbench

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
)

// etcdTarget is an etcd member's v3 JSON gateway (etcd 3.4: /v3/watch,
// /v3/kv/put), so that the same run can measure etcd beside kvnode
// without a gRPC client: a watch is a streamed POST whose answer is one
// JSON object a line, the first saying the watch was created, the others
// carrying events whose keys and values are base64.
type etcdTarget struct {
	prefix string // every key written starts with it; the watch covers it
}

// rangeEnd is the end of prefix's range: prefix with its last byte one
// higher (the prefix here ends in '/', never in 0xff).
func rangeEnd(prefix string) string {
	b := []byte(prefix)
	b[len(b)-1]++
	return string(b)
}

func (e *etcdTarget) watch(ctx context.Context, hc *http.Client, base string, ready func(), value func([]byte)) error {
	body := `{"create_request":{"key":"` + b64(e.prefix) + `","range_end":"` + b64(rangeEnd(e.prefix)) + `"}}`
	req, err := http.NewRequestWithContext(ctx, "POST", base+"/v3/watch", bytes.NewReader([]byte(body)))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := hc.Do(req)
	if err != nil {
		return fmt.Errorf("watch: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return answerError("watch", resp)
	}
	// The gateway writes each message on its own line.
	lr := newLineReader(resp.Body)
	var buf []byte
	for {
		line, err := lr.readLine()
		if err != nil {
			if errors.Is(err, io.EOF) {
				return fmt.Errorf("%w: the member closed it without a cancel or error", errEnded)
			}
			return fmt.Errorf("watch stream: %w", err)
		}
		if bytes.Contains(line, []byte(`"events":`)) {
			// A thousand watchers receive a million of these a second: the
			// values are cut out by a byte search (base64 has no quote to
			// escape) rather than by decoding the JSON.
			if buf, err = eachValue(line, buf, value); err != nil {
				return fmt.Errorf("watch stream: %w", err)
			}
			continue
		}
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		var msg struct {
			Result *struct {
				Created      bool   `json:"created"`
				Canceled     bool   `json:"canceled"`
				CancelReason string `json:"cancel_reason"`
			} `json:"result"`
			Error *struct {
				Message string `json:"message"`
			} `json:"error"`
		}
		if err := json.Unmarshal(line, &msg); err != nil {
			return fmt.Errorf("watch stream: %w", err)
		}
		switch {
		case msg.Error != nil:
			return fmt.Errorf("%w: error: %s", errEnded, msg.Error.Message)
		case msg.Result != nil && msg.Result.Canceled:
			return fmt.Errorf("%w: canceled: %s", errEnded, msg.Result.CancelReason)
		case msg.Result != nil && msg.Result.Created:
			ready()
		}
	}
}

// eachValue calls value with each "value" of a watch response's events,
// decoded, reusing buf (which it returns).
func eachValue(line, buf []byte, value func([]byte)) ([]byte, error) {
	field := []byte(`"value":"`)
	for {
		i := bytes.Index(line, field)
		if i < 0 {
			return buf, nil
		}
		line = line[i+len(field):]
		j := bytes.IndexByte(line, '"')
		if j < 0 {
			return buf, errors.New(`an event's "value" has no end`)
		}
		enc := line[:j]
		line = line[j+1:]
		if n := base64.StdEncoding.DecodedLen(len(enc)); cap(buf) < n {
			buf = make([]byte, n)
		}
		n, err := base64.StdEncoding.Decode(buf[:cap(buf)], enc)
		if err != nil {
			return buf, fmt.Errorf("an event's value: %w", err)
		}
		value(buf[:n])
	}
}

func (e *etcdTarget) put(ctx context.Context, hc *http.Client, base, key string, v []byte) error {
	body := make([]byte, 0, 32+base64.StdEncoding.EncodedLen(len(e.prefix)+len(key)+len(v)))
	body = append(body, `{"key":"`...)
	body = base64.StdEncoding.AppendEncode(body, []byte(e.prefix+key))
	body = append(body, `","value":"`...)
	body = base64.StdEncoding.AppendEncode(body, v)
	body = append(body, `"}`...)
	req, err := http.NewRequestWithContext(ctx, "POST", base+"/v3/kv/put", bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	return send(hc, req)
}

func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

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
