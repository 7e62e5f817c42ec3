package admission

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"net/http"
)

// Path is the identity call on the internal port's RPC server: a POST of
// a JSON challenge, answered with a JSON answer.
const Path = "/v1/identity"

// nonceLen is the size of a challenge's nonce; maxChallenge bounds what
// the answering side reads (a challenge is well under 1 KiB).
const (
	nonceLen     = 32
	maxChallenge = 4 << 10
	maxNameLen   = 1024
)

// challenge is what a verifier sends.
type challenge struct {
	// Verifier is the name of the member asking, bound into the proof so
	// that an answer given to one member proves nothing to another.
	Verifier string `json:"verifier"`
	Nonce    []byte `json:"nonce"`
}

// answer is what a candidate sends back.
type answer struct {
	Name string `json:"name"`
	Addr string `json:"addr"`
	// MAC is the proof of the gossip key (absent without one).
	MAC []byte `json:"mac,omitempty"`
}

// Identity is this member as it proves itself to others.
type Identity struct {
	// Name is the member's name, Addr the internal address it advertises.
	Name string
	Addr string
	// Key is the gossip key (--gossip-key), nil without one.
	Key []byte
}

// Answer is the candidate's side of the identity call: the answer to the
// challenge in body.
func (id Identity) Answer(body []byte) ([]byte, error) {
	ch, err := decodeChallenge(body)
	if err != nil {
		return nil, err
	}
	a := answer{Name: id.Name, Addr: id.Addr}
	if id.Key != nil {
		a.MAC = proof(id.Key, ch.Verifier, id.Name, id.Addr, ch.Nonce)
	}
	return json.Marshal(a)
}

// ServeHTTP answers the identity call: 200 with the answer, or 400 for a
// challenge that does not decode.
func (id Identity) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	body, err := io.ReadAll(io.LimitReader(req.Body, maxChallenge+1))
	if err == nil && len(body) > maxChallenge {
		err = fmt.Errorf("identity challenge: larger than %d bytes", maxChallenge)
	}
	var out []byte
	if err == nil {
		out, err = id.Answer(body)
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(out)
}

// decodeChallenge reads a challenge, strictly: a verifier's name of
// sensible length and a nonce of nonceLen bytes.
func decodeChallenge(body []byte) (challenge, error) {
	var ch challenge
	if err := json.Unmarshal(body, &ch); err != nil {
		return ch, fmt.Errorf("identity challenge: %w", err)
	}
	if ch.Verifier == "" || len(ch.Verifier) > maxNameLen {
		return ch, fmt.Errorf("identity challenge: a verifier name of %d bytes", len(ch.Verifier))
	}
	if len(ch.Nonce) != nonceLen {
		return ch, fmt.Errorf("identity challenge: a nonce of %d bytes, want %d", len(ch.Nonce), nonceLen)
	}
	return ch, nil
}

// decodeAnswer reads a candidate's answer.
func decodeAnswer(body []byte) (answer, error) {
	var a answer
	if err := json.Unmarshal(body, &a); err != nil {
		return a, fmt.Errorf("its answer to the identity call does not decode: %w", err)
	}
	if a.Name == "" {
		return a, errors.New("its answer to the identity call names no member")
	}
	return a, nil
}

// proof is the HMAC-SHA256, under the gossip key, of the nonce, the
// verifier's name and the candidate's name and address. Every field is
// length-prefixed, so no two different tuples are hashed alike.
func proof(key []byte, verifier, name, addr string, nonce []byte) []byte {
	m := hmac.New(sha256.New, key)
	for _, field := range [][]byte{[]byte("kvnode identity proof v1"), nonce, []byte(verifier), []byte(name), []byte(addr)} {
		writeField(m, field)
	}
	return m.Sum(nil)
}

func writeField(h hash.Hash, b []byte) {
	var n [binary.MaxVarintLen64]byte
	h.Write(n[:binary.PutUvarint(n[:], uint64(len(b)))])
	h.Write(b)
}
