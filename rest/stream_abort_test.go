package rest

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/kvnode/kvnode/region"
)

// brokenListings is a real store whose listings fail after a number of
// entries, as one does when a member serving part of it dies.
type brokenListings struct {
	Store
	after int
}

func (f brokenListings) OpenList(ctx context.Context, c region.Consistency, name string, opt region.ListOptions) (region.Listing, error) {
	ls, err := f.Store.OpenList(ctx, c, name, opt)
	if err != nil {
		return nil, err
	}
	return &failingListing{Listing: ls, left: f.after}, nil
}

type failingListing struct {
	region.Listing
	left int
	err  error
}

func (l *failingListing) Next() (region.Entry, bool) {
	if l.left == 0 {
		l.err = fmt.Errorf("member n2 went away: %w", io.ErrUnexpectedEOF)
		return region.Entry{}, false
	}
	l.left--
	return l.Listing.Next()
}

func (l *failingListing) Err() error {
	if l.err != nil {
		return l.err
	}
	return l.Listing.Err()
}

// A listing that fails after its answer began can no longer change the
// status: the client must see an incomplete body (a read error), never a
// complete JSON document that lacks entries.
func TestListingFailureAbortsTheAnswer(t *testing.T) {
	st := newTestStore(t)
	var kv []region.Entry
	for i := range 5000 {
		kv = append(kv, region.Entry{Key: fmt.Sprintf("k%05d", i), Value: json.RawMessage(fmt.Sprintf(`{"i":%d}`, i))})
	}
	ctx := context.Background()
	if err := st.CreateRegion(ctx, region.Info{Name: "r", Kind: region.Replicate}); err != nil {
		t.Fatal(err)
	}
	if err := st.Put(ctx, "r", kv, region.TTL{}); err != nil {
		t.Fatal(err)
	}
	for _, after := range []int{0, 3, 4000} {
		ts := serve(t, Config{}, brokenListings{Store: st, after: after}, nil)
		for _, path := range []string{"/kv/v1/r?limit=ALL", "/kv/v1/r/keys"} {
			t.Run(fmt.Sprintf("%s after %d", path, after), func(t *testing.T) {
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				req, err := http.NewRequestWithContext(ctx, "GET", ts.base+path, nil)
				if err != nil {
					t.Fatal(err)
				}
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					return // the connection closed before an answer: incomplete, as it must be
				}
				defer resp.Body.Close()
				data, err := io.ReadAll(resp.Body)
				if err == nil {
					t.Fatalf("status %d and a complete body of %d bytes (%.60s...); want the body cut off", resp.StatusCode, len(data), data)
				}
				if json.Valid(data) {
					t.Errorf("the cut body is valid JSON: %s", data)
				}
			})
		}
	}
}
