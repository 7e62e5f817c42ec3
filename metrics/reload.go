package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// reloadMetrics count the loads of the files a member keeps in force
// while it serves (TLS certificate and key, CAs, security file), the
// peer certificates its internal port refuses and the client
// certificates its REST port refuses.
type reloadMetrics struct {
	successes     *prometheus.CounterVec
	failures      *prometheus.CounterVec
	lastSuccess   *prometheus.GaugeVec
	refused       *prometheus.CounterVec
	clientRefused prometheus.Counter
	// members counts the identity checks of other members that failed.
	members *prometheus.CounterVec
}

func newReloadMetrics() reloadMetrics {
	m := reloadMetrics{
		successes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Subsystem: "reload", Name: "successes_total",
			Help: "Loads of a watched file that put it in force, by file (tls, ca, security); the load at start counts.",
		}, []string{"file"}),
		failures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Subsystem: "reload", Name: "failures_total",
			Help: "Changed files refused (missing, empty, unparsable, a key not matching its certificate), by file; the previous one stays in force.",
		}, []string{"file"}),
		lastSuccess: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: namespace, Subsystem: "reload", Name: "last_success_timestamp_seconds",
			Help: "Unix time the file in force was loaded, by file.",
		}, []string{"file"}),
		refused: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Name: "peer_certificates_refused_total",
			Help: "Certificates refused at the internal port's mutual TLS handshakes, either side, by reason: ca (no chain to the CA in force) or name (no DNS name --peer-names allows).",
		}, []string{"reason"}),
		clientRefused: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: namespace, Name: "client_certificates_refused_total",
			Help: "Client certificates refused at the REST port's TLS handshakes under --client-cert-auth: no chain, for client use, to the client CA in force (another CA, expired, a server-only certificate). A client that sends none is refused by the TLS library and only logged.",
		}),
	}
	m.members = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace, Name: "member_refusals_total",
		Help: "Identity checks of a member that gossip shows but that failed, so the member is kept out of every Raft group, by reason: tls (the internal port's handshake failed), identity (another name or address answers), proof (no or a wrong proof of the gossip key), answer (no answer to the identity call), catch-up (removed for not catching up). A refused member is checked again every few seconds.",
	}, []string{"reason"})
	// Both reasons exist from the start, so that a rate over them is
	// defined before the first refusal.
	m.refused.WithLabelValues("ca")
	m.refused.WithLabelValues("name")
	// Package admission's reasons (node's tests check they agree), each
	// defined at 0 from the start.
	for _, reason := range []string{"tls", "identity", "proof", "answer", "catch-up"} {
		m.members.WithLabelValues(reason)
	}
	return m
}

func (m reloadMetrics) register(reg *prometheus.Registry) {
	reg.MustRegister(m.successes, m.failures, m.lastSuccess, m.refused, m.clientRefused, m.members)
}

// MemberRefused counts a failed identity check of a member, by reason
// (package admission's reasons).
func (r *Registry) MemberRefused(reason string) {
	r.reload.members.WithLabelValues(reason).Inc()
}

// Reloaded records a load of file (tls, ca, client-ca or security): in force when
// err is nil, else refused with the previous one kept.
func (r *Registry) Reloaded(file string, err error) {
	if err != nil {
		r.reload.failures.WithLabelValues(file).Inc()
		return
	}
	r.reload.successes.WithLabelValues(file).Inc()
	r.reload.failures.WithLabelValues(file) // 0 until one is refused
	r.reload.lastSuccess.WithLabelValues(file).Set(float64(time.Now().UnixNano()) / 1e9)
}

// PeerRefused records a peer certificate refused on the internal port,
// for reason "ca" or "name".
func (r *Registry) PeerRefused(reason string) {
	r.reload.refused.WithLabelValues(reason).Inc()
}

// ClientRefused records a client certificate refused at the REST port's
// handshake under --client-cert-auth.
func (r *Registry) ClientRefused() {
	r.reload.clientRefused.Inc()
}
