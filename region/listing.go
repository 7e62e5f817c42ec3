package region

// ListOptions say what a region listing returns.
type ListOptions struct {
	// Limit: at most this many entries; < 0 means all.
	Limit int
	// KeysOnly: the values are not needed; Listing.Next returns entries
	// without them.
	KeysOnly bool
	// PeekBytes > 0 asks for the listing's first keys before the first
	// entry (Listing.Peek): as many as it takes for their lengths plus one
	// each to pass PeekBytes, or all of them. It bounds the memory a caller
	// needs to learn whether the keys of a listing fit in a header.
	PeekBytes int
}

// Listing is an open listing of a region's entries in ascending key order
// (byte-wise), as of one cut of every Raft group it reads: each group's
// entries are those it held when the listing was opened (after the read
// barrier, for a linearizable one). It streams: its memory does not grow
// with the region.
//
// Opening it reports every error a caller can still answer with a status
// (unknown region, no leader); an error while it streams (a member that
// served part of it fails) ends Next, and Err returns it. A caller that has
// sent part of the entries must then make the answer visibly incomplete.
type Listing interface {
	// Peek returns the first keys (ListOptions.PeekBytes) and whether they
	// are all of the listing's keys.
	Peek() (keys []string, all bool)
	// Next returns the next entry, or false at the end or on an error.
	// The value is valid until the next call of Next (a listing may reuse
	// its memory) and must not be modified; the key stays valid.
	Next() (Entry, bool)
	// Err is the error that ended Next early, nil at the true end.
	Err() error
	// Close releases the listing; it may be called before the end, and
	// more than once.
	Close()
}
