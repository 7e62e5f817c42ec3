package powerfs

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// refInode is a file of the reference model: what it holds now and what
// it held at its last sync.
type refInode struct {
	data, synced []byte
}

// refDisk is the rules of doc.go for one directory of files, kept the
// simplest way: every name maps to an inode, and the directory's durable
// listing is a copy taken at its last sync.
type refDisk struct {
	live, durable map[string]*refInode
}

// TestRandomOperationsMatchTheRules drives Disk and the reference with the
// same random operations on a few names in one directory (writes over
// synced and unsynced bytes, truncates both ways, renames over files,
// unlinks, syncs of files and of the directory) and, after every cut,
// compares the directory with what the rules say survives.
func TestRandomOperationsMatchTheRules(t *testing.T) {
	names := []string{"a", "b", "c"}
	for seed := uint64(1); seed <= 40; seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 7))
			d := openDisk(t)
			ref := &refDisk{live: map[string]*refInode{}, durable: map[string]*refInode{}}
			open := map[string]*os.File{}
			defer func() {
				for _, f := range open {
					f.Close()
				}
			}()
			file := func(name string) *os.File {
				if f := open[name]; f != nil {
					return f
				}
				f, err := d.Open(name, os.O_RDWR)
				if err != nil {
					t.Fatal(err)
				}
				open[name] = f
				return f
			}
			closeAll := func() {
				for name, f := range open {
					f.Close()
					delete(open, name)
				}
			}
			var log []string
			for step := 0; step < 200; step++ {
				name := names[rng.IntN(len(names))]
				in := ref.live[name]
				var op string
				switch k := rng.IntN(10); {
				case in == nil || k == 0:
					if in != nil {
						continue
					}
					f, err := d.Create(name, os.O_RDWR, 0o644)
					if err != nil {
						t.Fatal(err)
					}
					open[name] = f
					ref.live[name] = &refInode{}
					op = "create " + name
				case k <= 3:
					off := rng.IntN(len(in.data) + 4)
					data := bytes.Repeat([]byte{byte('A' + step%26)}, 1+rng.IntN(6))
					if _, err := d.WriteAt(file(name), data, int64(off)); err != nil {
						t.Fatal(err)
					}
					if grow := off + len(data) - len(in.data); grow > 0 {
						in.data = append(in.data, make([]byte, grow)...)
					}
					copy(in.data[off:], data)
					op = fmt.Sprintf("write %s %d %q", name, off, data)
				case k == 4:
					size := rng.IntN(len(in.data) + 5)
					if err := d.Truncate(file(name), "", int64(size)); err != nil {
						t.Fatal(err)
					}
					if size < len(in.data) {
						in.data = in.data[:size]
					} else {
						in.data = append(in.data, make([]byte, size-len(in.data))...)
					}
					op = fmt.Sprintf("truncate %s %d", name, size)
				case k == 5:
					if err := d.Sync(file(name), rng.IntN(2) == 0); err != nil {
						t.Fatal(err)
					}
					in.synced = bytes.Clone(in.data)
					op = "sync " + name
				case k == 6:
					if err := d.SyncDir(""); err != nil {
						t.Fatal(err)
					}
					ref.durable = clone(ref.live)
					op = "syncdir"
				case k == 7:
					to := names[rng.IntN(len(names))]
					if err := d.Rename(name, to, 0); err != nil {
						t.Fatal(err)
					}
					if to != name {
						ref.live[to] = in
						delete(ref.live, name)
						if f := open[name]; f != nil {
							if g := open[to]; g != nil {
								g.Close()
							}
							open[to] = f
							delete(open, name)
						} else if g := open[to]; g != nil {
							g.Close()
							delete(open, to)
						}
					}
					op = "rename " + name + " " + to
				case k == 8:
					if f := open[name]; f != nil {
						f.Close()
						delete(open, name)
					}
					if err := d.Unlink(name); err != nil {
						t.Fatal(err)
					}
					delete(ref.live, name)
					op = "unlink " + name
				default:
					closeAll()
					if _, err := d.Cut(); err != nil {
						t.Fatal(err)
					}
					op = "CUT"
					log = append(log, op)
					ref.cut()
					ref.check(t, d, log)
					continue
				}
				log = append(log, op)
			}
			closeAll()
			if _, err := d.Cut(); err != nil {
				t.Fatal(err)
			}
			log = append(log, "CUT")
			ref.cut()
			ref.check(t, d, log)
			limboEmpty(t, d)
		})
	}
}

func clone(m map[string]*refInode) map[string]*refInode {
	out := make(map[string]*refInode, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// cut: the directory lists what it listed at its last sync, each file
// holds what it held at its last sync.
func (r *refDisk) cut() {
	r.live = map[string]*refInode{}
	seen := map[*refInode]*refInode{}
	for name, in := range r.durable {
		n, ok := seen[in]
		if !ok {
			n = &refInode{data: bytes.Clone(in.synced), synced: bytes.Clone(in.synced)}
			seen[in] = n
		}
		r.live[name] = n
	}
	r.durable = clone(r.live)
}

func (r *refDisk) check(t *testing.T, d *Disk, log []string) {
	t.Helper()
	var want, got []string
	for name, in := range r.live {
		want = append(want, fmt.Sprintf("%s=%q", name, in.data))
	}
	entries, err := os.ReadDir(d.Root())
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(d.Root(), e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, fmt.Sprintf("%s=%q", e.Name(), data))
	}
	sort.Strings(want)
	sort.Strings(got)
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("after %d operations:\n got  %v\n want %v\noperations:\n%s", len(log), got, want, strings.Join(log, "\n"))
	}
}
