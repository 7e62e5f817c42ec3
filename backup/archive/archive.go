package archive

import (
	"bufio"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"time"
)

// Version is the archive format this build writes and reads.
const Version = 1

const (
	magic           = "KVBACKUP"
	kindManifest    = 'M'
	kindGroup       = 'G'
	kindEnd         = 'E'
	headerLen       = len(magic) + 1
	sectionHeadLen  = 1 + 8
	groupIDLen      = 8
	maxManifestSize = 64 << 20
)

// ErrDamaged is an archive that is not a whole, unaltered kvnode backup of
// a version this build reads: truncated, altered, or not a backup at all.
var ErrDamaged = errors.New("damaged backup archive")

// Manifest says what a backup holds. Counts are those of the snapshots in
// the archive, each taken at its group's own point (Group.Index): the
// archive is consistent per group, not across groups.
type Manifest struct {
	FormatVersion int       `json:"formatVersion"`
	KvnodeVersion string    `json:"kvnodeVersion"`
	Created       time.Time `json:"created"`
	// Member is the member that assembled the backup; Members the control
	// group's configuration when it did.
	Member  string   `json:"member"`
	Members []string `json:"members"`
	// Partitions is the cluster's number of partition groups (P), and
	// ReplicationFactor its partition table's.
	Partitions        int      `json:"partitions"`
	ReplicationFactor int      `json:"replicationFactor"`
	Groups            []Group  `json:"groups"`
	Regions           []Region `json:"regions"`
	Indexes           []Index  `json:"indexes"`
	NamedQueries      []string `json:"namedQueries"`
	Functions         []string `json:"functions"`
}

// Group is one Raft group's part of the archive.
type Group struct {
	ID uint64 `json:"id"`
	// Index is the state machine's applied index in the snapshot, and Term
	// the group's term when it was taken (at least the term of the entry
	// at Index).
	Index uint64 `json:"index"`
	Term  uint64 `json:"term"`
	// Entries counts the entries of every region in the snapshot; Bytes is
	// the snapshot's size.
	Entries int64 `json:"entries"`
	Bytes   int64 `json:"bytes"`
}

// Region is a region and its entries over every group of the archive.
type Region struct {
	Name    string `json:"name"`
	Kind    string `json:"kind"`
	Entries int64  `json:"entries"`
}

// Index is a secondary index's definition, as the control group keeps it.
type Index struct {
	Region string `json:"region"`
	Name   string `json:"name"`
}

// Entries is the total of the groups' entries.
func (m *Manifest) Entries() int64 {
	var n int64
	for _, g := range m.Groups {
		n += g.Entries
	}
	return n
}

// Size is the size in bytes of the archive of m, whose groups' snapshots
// are m.Groups[i].Bytes long, so that a server can announce it (progress).
func Size(m *Manifest) (int64, error) {
	data, err := encodeManifest(m)
	if err != nil {
		return 0, err
	}
	n := int64(headerLen + sectionHeadLen + len(data) + 1 + sha256.Size)
	for _, g := range m.Groups {
		n += sectionHeadLen + groupIDLen + g.Bytes
	}
	return n, nil
}

func encodeManifest(m *Manifest) ([]byte, error) {
	if m.FormatVersion == 0 {
		m.FormatVersion = Version
	}
	if m.FormatVersion != Version {
		return nil, fmt.Errorf("archive: manifest of format version %d, this build writes %d", m.FormatVersion, Version)
	}
	return json.Marshal(m)
}

// Writer writes an archive: NewWriter writes the header and the manifest,
// Group each group's snapshot in the manifest's order, Close the checksum.
type Writer struct {
	w    *bufio.Writer
	sum  hash.Hash
	m    *Manifest
	next int
	err  error
}

// NewWriter starts an archive of m on w.
func NewWriter(w io.Writer, m *Manifest) (*Writer, error) {
	data, err := encodeManifest(m)
	if err != nil {
		return nil, err
	}
	sum := sha256.New()
	aw := &Writer{w: bufio.NewWriterSize(io.MultiWriter(w, sum), 256<<10), sum: sum, m: m}
	aw.w.WriteString(magic)
	aw.w.WriteByte(Version)
	aw.section(kindManifest, uint64(len(data)))
	aw.w.Write(data)
	return aw, nil
}

func (w *Writer) section(kind byte, n uint64) {
	var head [sectionHeadLen]byte
	head[0] = kind
	binary.BigEndian.PutUint64(head[1:], n)
	w.w.Write(head[:])
}

// Group copies the next group's snapshot (m.Groups in order, gid its ID,
// exactly its Bytes from r).
func (w *Writer) Group(gid uint64, r io.Reader) error {
	if w.err != nil {
		return w.err
	}
	if w.next >= len(w.m.Groups) || w.m.Groups[w.next].ID != gid {
		return fmt.Errorf("archive: group %d is not the manifest's next group", gid)
	}
	g := w.m.Groups[w.next]
	w.next++
	w.section(kindGroup, uint64(groupIDLen+g.Bytes))
	var id [groupIDLen]byte
	binary.BigEndian.PutUint64(id[:], gid)
	w.w.Write(id[:])
	n, err := io.Copy(w.w, io.LimitReader(r, g.Bytes))
	if err == nil && n != g.Bytes {
		err = fmt.Errorf("%d bytes, the manifest says %d", n, g.Bytes)
	}
	if err != nil {
		w.err = fmt.Errorf("archive: group %d's snapshot: %w", gid, err)
	}
	return w.err
}

// Close writes the end and the checksum; it does not close the writer
// underneath.
func (w *Writer) Close() error {
	if w.err != nil {
		return w.err
	}
	if w.next != len(w.m.Groups) {
		return fmt.Errorf("archive: %d of the manifest's %d groups written", w.next, len(w.m.Groups))
	}
	w.w.WriteByte(kindEnd)
	if err := w.w.Flush(); err != nil {
		return fmt.Errorf("archive: %w", err)
	}
	// The checksum itself is not part of what it sums.
	if _, err := w.w.Write(w.sum.Sum(nil)); err != nil {
		return fmt.Errorf("archive: %w", err)
	}
	if err := w.w.Flush(); err != nil {
		return fmt.Errorf("archive: %w", err)
	}
	return nil
}

// Verify reads a whole archive and checks it: header and version, the
// sections' structure, the manifest against the sections, the checksum,
// and that nothing follows it. It returns the manifest and the archive's
// SHA-256 (hex) only when all holds; any other outcome wraps ErrDamaged.
func Verify(r io.Reader) (*Manifest, string, error) {
	return Read(r, nil)
}

// Read reads an archive like Verify and hands each group's snapshot to
// fn (nil: skip it) as it comes. fn sees bytes the checksum has not
// covered yet: a restore verifies the whole archive first (Verify), then
// reads it again to use it.
func Read(r io.Reader, fn func(m *Manifest, g Group, snapshot io.Reader) error) (*Manifest, string, error) {
	rd := &reader{br: bufio.NewReaderSize(r, 256<<10), sum: sha256.New()}
	head, err := rd.full(headerLen, "the header")
	if err != nil {
		return nil, "", err
	}
	if string(head[:len(magic)]) != magic {
		return nil, "", fmt.Errorf("%w: not a kvnode backup (it starts with %q, not %q)", ErrDamaged, head[:len(magic)], magic)
	}
	if v := head[len(magic)]; v != Version {
		return nil, "", fmt.Errorf("%w: format version %d, this build reads version %d (restore it with the kvnode release that wrote it, or a later one)", ErrDamaged, v, Version)
	}
	kind, n, err := rd.sectionHead()
	if err != nil {
		return nil, "", err
	}
	if kind != kindManifest {
		return nil, "", fmt.Errorf("%w: the first section is %q, not the manifest", ErrDamaged, kind)
	}
	if n > maxManifestSize {
		return nil, "", fmt.Errorf("%w: a manifest of %d bytes (at most %d)", ErrDamaged, n, maxManifestSize)
	}
	data, err := rd.full(int(n), "the manifest")
	if err != nil {
		return nil, "", err
	}
	m := &Manifest{}
	if err := json.Unmarshal(data, m); err != nil {
		return nil, "", fmt.Errorf("%w: the manifest is not valid JSON: %v", ErrDamaged, err)
	}
	if m.FormatVersion != Version {
		return nil, "", fmt.Errorf("%w: the manifest says format version %d, the header %d", ErrDamaged, m.FormatVersion, Version)
	}
	for i := 0; ; i++ {
		kind, n, err := rd.sectionHead()
		if err != nil {
			return nil, "", err
		}
		if kind == kindEnd {
			if i != len(m.Groups) {
				return nil, "", fmt.Errorf("%w: %d group snapshots, the manifest lists %d", ErrDamaged, i, len(m.Groups))
			}
			break
		}
		if kind != kindGroup {
			return nil, "", fmt.Errorf("%w: unknown section %q after %d groups", ErrDamaged, kind, i)
		}
		if i >= len(m.Groups) {
			return nil, "", fmt.Errorf("%w: more group snapshots than the manifest's %d", ErrDamaged, len(m.Groups))
		}
		g := m.Groups[i]
		if g.Bytes < 0 || n != uint64(groupIDLen+g.Bytes) {
			return nil, "", fmt.Errorf("%w: group %d's section is %d bytes, the manifest says %d", ErrDamaged, g.ID, n, groupIDLen+g.Bytes)
		}
		id, err := rd.full(groupIDLen, "a group's ID")
		if err != nil {
			return nil, "", err
		}
		if gid := binary.BigEndian.Uint64(id); gid != g.ID {
			return nil, "", fmt.Errorf("%w: section %d holds group %d, the manifest says %d", ErrDamaged, i+1, gid, g.ID)
		}
		body := &io.LimitedReader{R: rd, N: g.Bytes}
		if fn != nil {
			if err := fn(m, g, body); err != nil {
				return nil, "", err
			}
		}
		// What fn left unread (all of it without fn) still goes through the
		// checksum.
		if _, err := io.Copy(io.Discard, body); err != nil {
			return nil, "", fmt.Errorf("%w: group %d's snapshot: %v", ErrDamaged, g.ID, err)
		}
		if body.N != 0 {
			return nil, "", fmt.Errorf("%w: truncated in group %d's snapshot (%d of its %d bytes missing)", ErrDamaged, g.ID, body.N, g.Bytes)
		}
	}
	want := rd.sum.Sum(nil)
	// The checksum does not sum itself: read it past the hash.
	got := make([]byte, sha256.Size)
	if _, err := io.ReadFull(rd.br, got); err != nil {
		return nil, "", fmt.Errorf("%w: truncated in the checksum: %v", ErrDamaged, err)
	}
	if string(got) != string(want) {
		return nil, "", fmt.Errorf("%w: SHA-256 checksum mismatch (the archive says %x, its content sums to %x): it was altered or damaged", ErrDamaged, got, want)
	}
	if _, err := rd.br.ReadByte(); err != io.EOF {
		return nil, "", fmt.Errorf("%w: bytes follow the checksum", ErrDamaged)
	}
	return m, fmt.Sprintf("%x", want), nil
}

// reader reads an archive's bytes, summing each one it hands out.
type reader struct {
	br  *bufio.Reader
	sum hash.Hash
}

func (r *reader) Read(p []byte) (int, error) {
	n, err := r.br.Read(p)
	r.sum.Write(p[:n])
	return n, err
}

// full reads n bytes of what, or says where the archive was cut.
func (r *reader) full(n int, what string) ([]byte, error) {
	buf := make([]byte, n)
	if _, err := io.ReadFull(r, buf); err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return nil, fmt.Errorf("%w: truncated in %s", ErrDamaged, what)
		}
		return nil, fmt.Errorf("%w: reading %s: %v", ErrDamaged, what, err)
	}
	return buf, nil
}

// sectionHead reads a section's kind and, but for the end, its length.
func (r *reader) sectionHead() (byte, uint64, error) {
	k, err := r.full(1, "a section's head")
	if err != nil {
		return 0, 0, err
	}
	if k[0] == kindEnd {
		return kindEnd, 0, nil
	}
	n, err := r.full(8, "a section's head")
	if err != nil {
		return 0, 0, err
	}
	return k[0], binary.BigEndian.Uint64(n), nil
}
