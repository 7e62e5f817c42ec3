package cluster

import "testing"

// TestMinFormats: the format every member reads is the least the members
// gossip, a member older than the field counting as 2 and one that left
// not at all.
func TestMinFormats(t *testing.T) {
	m := func(formats int, s Status) Member { return Member{Meta: Meta{Formats: formats}, Status: s} }
	for _, tc := range []struct {
		name    string
		members []Member
		want    int
	}{
		{"none known", nil, 0},
		{"all current", []Member{m(3, StatusAlive), m(3, StatusAlive)}, 3},
		{"an older member", []Member{m(3, StatusAlive), m(0, StatusAlive)}, 2},
		{"an older member that failed still counts", []Member{m(3, StatusAlive), m(0, StatusFailed)}, 2},
		{"an older member that left does not", []Member{m(3, StatusAlive), m(0, StatusLeft)}, 3},
		{"a newer member", []Member{m(4, StatusAlive), m(3, StatusAlive)}, 3},
	} {
		if got := MinFormats(tc.members); got != tc.want {
			t.Errorf("%s: MinFormats = %d, want %d", tc.name, got, tc.want)
		}
	}
}
