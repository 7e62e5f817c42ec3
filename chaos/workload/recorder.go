package workload

import (
	"io"
	"net"
	"net/http"
	"net/url"
	"sync"
	"time"
)

// exchange is what the recorder saw of one operation's requests: the
// member the last one went to, its status, and whether its body was read
// to the end. One operation's tries are sequential, but the body is read
// after RoundTrip returns: hence the lock.
type exchange struct {
	mu       sync.Mutex
	base     string
	status   int
	complete bool
}

func (ex *exchange) last() string {
	ex.mu.Lock()
	defer ex.mu.Unlock()
	return ex.base
}

// answer is the last try's status (0 when none came) and whether its
// body came whole.
func (ex *exchange) answer() (int, bool) {
	ex.mu.Lock()
	defer ex.mu.Unlock()
	return ex.status, ex.complete
}

type exchangeKey struct{}

// recorder is the workload's HTTP transport: it notes, in the exchange
// its request's context carries (Do puts one there), where each try went
// and what came back. The client's own requests (the routing document)
// carry none and are only sent.
type recorder struct{ next http.RoundTripper }

func newRecorder(idle int) *recorder {
	return &recorder{next: &http.Transport{
		// No proxy from the environment; a dial that fails is a
		// *net.OpError "dial", which the client takes as not sent.
		DialContext:         (&net.Dialer{Timeout: 3 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConnsPerHost: idle,
		IdleConnTimeout:     90 * time.Second,
	}}
}

func (r *recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	ex, _ := req.Context().Value(exchangeKey{}).(*exchange)
	if ex == nil {
		return r.next.RoundTrip(req)
	}
	ex.mu.Lock()
	ex.base, ex.status, ex.complete = (&url.URL{Scheme: req.URL.Scheme, Host: req.URL.Host}).String(), 0, false
	ex.mu.Unlock()
	resp, err := r.next.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	ex.mu.Lock()
	ex.status = resp.StatusCode
	ex.mu.Unlock()
	resp.Body = &endReader{ReadCloser: resp.Body, ex: ex}
	return resp, nil
}

// endReader marks its exchange complete when the body reaches its end.
type endReader struct {
	io.ReadCloser
	ex *exchange
}

func (e *endReader) Read(p []byte) (int, error) {
	n, err := e.ReadCloser.Read(p)
	if err == io.EOF {
		e.ex.mu.Lock()
		e.ex.complete = true
		e.ex.mu.Unlock()
	}
	return n, err
}

// memberName is the name of the member at base (a URL the client used),
// base itself when none is known. A member may be known by another host
// name for the same address (compose's members advertise localhost, the
// suite reaches them at 127.0.0.1).
func (w *Clients) memberName(base string) string {
	u, err := url.Parse(base)
	if err != nil || base == "" {
		return base
	}
	for i, raw := range w.URLs {
		m, err := url.Parse(raw)
		if err == nil && sameHost(m.Host, u.Host) {
			return w.Names[i]
		}
	}
	return base
}

func sameHost(a, b string) bool {
	if a == b {
		return true
	}
	ha, pa, errA := net.SplitHostPort(a)
	hb, pb, errB := net.SplitHostPort(b)
	loopback := func(h string) bool { return h == "localhost" || h == "127.0.0.1" || h == "::1" }
	return errA == nil && errB == nil && pa == pb && loopback(ha) && loopback(hb)
}
