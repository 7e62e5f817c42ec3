package admission

import (
	"encoding/json"
	"testing"
)

// FuzzIdentity feeds the identity call's decoders what a peer may send:
// the answering side's challenge and the checking side's answer. Neither
// may panic; a challenge that is answered is well-formed, and the answer
// carries a proof that checks.
func FuzzIdentity(f *testing.F) {
	f.Add([]byte(`{"verifier":"a","nonce":"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA="}`))
	f.Add([]byte(`{"name":"b","addr":"10.0.0.2:7070","mac":"AAAA"}`))
	f.Add([]byte(`{"verifier":"` + string(make([]byte, 2000)) + `"}`))
	f.Add([]byte(`[1,2,{"nonce":null}]`))
	key := []byte("0123456789abcdef")
	id := Identity{Name: "b", Addr: "10.0.0.2:7070", Key: key}
	f.Fuzz(func(t *testing.T, body []byte) {
		_, _ = decodeAnswer(body)
		out, err := id.Answer(body)
		if err != nil {
			return
		}
		ch, err := decodeChallenge(body)
		if err != nil {
			t.Fatalf("answered a challenge that does not decode: %v", err)
		}
		a, err := decodeAnswer(out)
		if err != nil {
			t.Fatalf("our own answer does not decode: %v", err)
		}
		if string(a.MAC) != string(proof(key, ch.Verifier, "b", "10.0.0.2:7070", ch.Nonce)) {
			t.Fatal("our own proof does not check")
		}
		if _, err := json.Marshal(a); err != nil {
			t.Fatal(err)
		}
	})
}
