package powerfs

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"sync"

	"golang.org/x/sys/unix"
)

// Disk is the durability model over a backing directory: the tree the
// mount shows is backing/files, and backing/limbo holds inodes that only
// durable directories still name. Its methods do the file system
// operation on the backing tree and record what Cut needs to undo it.
// Paths are relative to the tree's root ("" is the root).
//
// Namespace operations are serialized; data operations on different
// files run in parallel.
type Disk struct {
	root, limbo string
	rootIno     uint64

	mu      sync.Mutex
	files   map[uint64]*fileState      // files changed since their last sync
	dirs    map[uint64]map[string]dent // durable entries of directories changed since their last sync
	inLimbo map[uint64]bool
	synced  map[uint64]bool // files fsynced since the mount or the last cut
}

// dent is a directory entry: the inode it names and whether that is a
// directory.
type dent struct {
	ino uint64
	dir bool
}

// fileState is what a file held at its last sync, as far as it changed.
type fileState struct {
	mu      sync.Mutex
	durable int64  // size at the last sync
	saved   []span // durable bytes overwritten since, sorted and disjoint, within [0, durable)
}

type span struct {
	off  int64
	data []byte
}

// OpenDisk opens the model over backing, creating its folders. Whatever
// backing/files holds counts as durable; limbo is emptied.
func OpenDisk(backing string) (*Disk, error) {
	d := &Disk{root: filepath.Join(backing, "files"), limbo: filepath.Join(backing, "limbo")}
	if err := os.MkdirAll(d.root, 0o755); err != nil {
		return nil, fmt.Errorf("powerfs: %w", err)
	}
	if err := os.RemoveAll(d.limbo); err != nil {
		return nil, fmt.Errorf("powerfs: empty limbo: %w", err)
	}
	if err := os.Mkdir(d.limbo, 0o700); err != nil {
		return nil, fmt.Errorf("powerfs: %w", err)
	}
	st, err := lstat(d.root)
	if err != nil {
		return nil, fmt.Errorf("powerfs: %w", err)
	}
	d.rootIno = st.Ino
	d.reset()
	return d, nil
}

func (d *Disk) reset() {
	d.files = map[uint64]*fileState{}
	d.dirs = map[uint64]map[string]dent{}
	d.inLimbo = map[uint64]bool{}
	d.synced = map[uint64]bool{}
}

// Root is the backing tree the mount shows.
func (d *Disk) Root() string { return d.root }

func (d *Disk) abs(rel string) string { return filepath.Join(d.root, rel) }

func (d *Disk) limboPath(ino uint64) string {
	return filepath.Join(d.limbo, strconv.FormatUint(ino, 10))
}

func lstat(p string) (unix.Stat_t, error) {
	var st unix.Stat_t
	err := unix.Lstat(p, &st)
	return st, err
}

func isDir(st unix.Stat_t) bool { return st.Mode&unix.S_IFMT == unix.S_IFDIR }

// listDir reads a directory's entries with their inode numbers.
func listDir(p string) (map[string]dent, error) {
	names, err := readNames(p)
	if err != nil {
		return nil, err
	}
	out := make(map[string]dent, len(names))
	for _, name := range names {
		st, err := lstat(filepath.Join(p, name))
		if err != nil {
			return nil, err
		}
		out[name] = dent{ino: st.Ino, dir: isDir(st)}
	}
	return out, nil
}

func readNames(p string) ([]string, error) {
	f, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return f.Readdirnames(-1)
}

// touchDir records the durable entries of the directory at p before its
// first change since its last sync. d.mu is held.
func (d *Disk) touchDir(p string) error {
	st, err := lstat(p)
	if err != nil {
		return err
	}
	if _, ok := d.dirs[st.Ino]; ok {
		return nil
	}
	entries, err := listDir(p)
	if err != nil {
		return err
	}
	d.dirs[st.Ino] = entries
	return nil
}

// referenced reports whether a durable directory entry names ino. d.mu
// is held.
func (d *Disk) referenced(ino uint64) bool {
	for _, entries := range d.dirs {
		for _, e := range entries {
			if e.ino == ino {
				return true
			}
		}
	}
	return false
}

// forget drops what the model knows about an inode that no longer
// exists (its number may be reused). d.mu is held.
func (d *Disk) forget(ino uint64) {
	delete(d.files, ino)
	delete(d.dirs, ino)
}

// toLimbo keeps the inode at p (its last name in the live tree) for the
// durable directories that still name it. d.mu is held.
func (d *Disk) toLimbo(p string, ino uint64) error {
	if err := os.Rename(p, d.limboPath(ino)); err != nil {
		return err
	}
	d.inLimbo[ino] = true
	return nil
}

// Create creates the file rel (or opens it when it exists and flags
// allow). A new file is empty until synced.
func (d *Disk) Create(rel string, flags int, mode uint32) (*os.File, error) {
	p := d.abs(rel)
	d.mu.Lock()
	_, err := lstat(p)
	if err == nil {
		d.mu.Unlock()
		if flags&unix.O_EXCL != 0 {
			return nil, &os.PathError{Op: "create", Path: rel, Err: unix.EEXIST}
		}
		return d.Open(rel, flags)
	}
	defer d.mu.Unlock()
	if !errors.Is(err, unix.ENOENT) {
		return nil, err
	}
	if err := d.touchDir(filepath.Dir(p)); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(p, flags&^unix.O_TRUNC|os.O_CREATE|os.O_EXCL, os.FileMode(mode&0o7777))
	if err != nil {
		return nil, err
	}
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		_ = f.Close()
		return nil, err
	}
	d.files[st.Ino] = &fileState{}
	return f, nil
}

// Open opens the existing file rel; O_TRUNC is recorded as a truncate.
func (d *Disk) Open(rel string, flags int) (*os.File, error) {
	f, err := os.OpenFile(d.abs(rel), flags&^unix.O_TRUNC, 0)
	if err != nil {
		return nil, err
	}
	if flags&unix.O_TRUNC != 0 && flags&unix.O_ACCMODE != unix.O_RDONLY {
		if err := d.Truncate(f, "", 0); err != nil {
			_ = f.Close()
			return nil, err
		}
	}
	return f, nil
}

// Mkdir creates the directory rel, empty until synced.
func (d *Disk) Mkdir(rel string, mode uint32) error {
	p := d.abs(rel)
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.touchDir(filepath.Dir(p)); err != nil {
		return err
	}
	if err := unix.Mkdir(p, mode); err != nil {
		return err
	}
	st, err := lstat(p)
	if err != nil {
		return err
	}
	d.dirs[st.Ino] = map[string]dent{}
	return nil
}

// Mknod creates a special (or regular) file.
func (d *Disk) Mknod(rel string, mode uint32, dev int) error {
	p := d.abs(rel)
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.touchDir(filepath.Dir(p)); err != nil {
		return err
	}
	if err := unix.Mknod(p, mode, dev); err != nil {
		return err
	}
	if mode&unix.S_IFMT == unix.S_IFREG || mode&unix.S_IFMT == 0 {
		if st, err := lstat(p); err == nil {
			d.files[st.Ino] = &fileState{}
		}
	}
	return nil
}

// Symlink creates the symbolic link rel to target.
func (d *Disk) Symlink(target, rel string) error {
	p := d.abs(rel)
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.touchDir(filepath.Dir(p)); err != nil {
		return err
	}
	return unix.Symlink(target, p)
}

// Link gives the inode at oldRel the name newRel too.
func (d *Disk) Link(oldRel, newRel string) error {
	p := d.abs(newRel)
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.touchDir(filepath.Dir(p)); err != nil {
		return err
	}
	return unix.Link(d.abs(oldRel), p)
}

// Unlink removes the name rel (not a directory).
func (d *Disk) Unlink(rel string) error {
	p := d.abs(rel)
	d.mu.Lock()
	defer d.mu.Unlock()
	st, err := lstat(p)
	if err != nil {
		return err
	}
	if isDir(st) {
		return unix.EISDIR
	}
	if err := d.touchDir(filepath.Dir(p)); err != nil {
		return err
	}
	last := st.Nlink == 1
	if last && d.referenced(st.Ino) {
		return d.toLimbo(p, st.Ino)
	}
	if err := unix.Unlink(p); err != nil {
		return err
	}
	if last {
		d.forget(st.Ino)
	}
	return nil
}

// Rmdir removes the empty directory rel.
func (d *Disk) Rmdir(rel string) error {
	p := d.abs(rel)
	d.mu.Lock()
	defer d.mu.Unlock()
	st, err := lstat(p)
	if err != nil {
		return err
	}
	if !isDir(st) {
		return unix.ENOTDIR
	}
	if names, err := readNames(p); err != nil {
		return err
	} else if len(names) > 0 {
		return unix.ENOTEMPTY
	}
	if err := d.touchDir(filepath.Dir(p)); err != nil {
		return err
	}
	if d.referenced(st.Ino) {
		return d.toLimbo(p, st.Ino)
	}
	if err := unix.Rmdir(p); err != nil {
		return err
	}
	d.forget(st.Ino)
	return nil
}

// Rename renames oldRel to newRel (renameat2 flags: 0, RENAME_NOREPLACE
// or RENAME_EXCHANGE).
func (d *Disk) Rename(oldRel, newRel string, flags uint32) error {
	po, pn := d.abs(oldRel), d.abs(newRel)
	if flags&^(unix.RENAME_NOREPLACE|unix.RENAME_EXCHANGE) != 0 {
		return unix.EINVAL
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	sto, err := lstat(po)
	if err != nil {
		return err
	}
	stn, err := lstat(pn)
	exists := err == nil
	if err != nil && !errors.Is(err, unix.ENOENT) {
		return err
	}
	if exists && sto.Ino == stn.Ino {
		return nil // two names of one inode: rename does nothing
	}
	if flags != 0 {
		if err := d.touchDir(filepath.Dir(po)); err != nil {
			return err
		}
		if err := d.touchDir(filepath.Dir(pn)); err != nil {
			return err
		}
		return unix.Renameat2(unix.AT_FDCWD, po, unix.AT_FDCWD, pn, uint(flags))
	}
	if exists {
		switch {
		case isDir(stn) && !isDir(sto):
			return unix.EISDIR
		case !isDir(stn) && isDir(sto):
			return unix.ENOTDIR
		case isDir(stn):
			if names, err := readNames(pn); err != nil {
				return err
			} else if len(names) > 0 {
				return unix.ENOTEMPTY
			}
		}
	}
	if err := d.touchDir(filepath.Dir(po)); err != nil {
		return err
	}
	if err := d.touchDir(filepath.Dir(pn)); err != nil {
		return err
	}
	// The inode the rename replaces goes to limbo first when a durable
	// directory still names it: a file keeps a hard link there, an (empty)
	// directory moves there.
	last := exists && (isDir(stn) || stn.Nlink == 1)
	kept := false
	if last && d.referenced(stn.Ino) {
		if isDir(stn) {
			err = os.Rename(pn, d.limboPath(stn.Ino))
		} else {
			err = os.Link(pn, d.limboPath(stn.Ino))
		}
		if err != nil {
			return err
		}
		kept = true
	}
	if err := unix.Rename(po, pn); err != nil {
		if kept {
			if isDir(stn) {
				_ = os.Rename(d.limboPath(stn.Ino), pn)
			} else {
				_ = os.Remove(d.limboPath(stn.Ino))
			}
		}
		return err
	}
	switch {
	case kept:
		d.inLimbo[stn.Ino] = true
	case last:
		d.forget(stn.Ino)
	}
	return nil
}

// file returns the state of the file ino, creating it with the file's
// current size as durable when the file has not changed since its last
// sync.
func (d *Disk) file(ino uint64, size func() (int64, error)) (*fileState, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if fs, ok := d.files[ino]; ok {
		return fs, nil
	}
	n, err := size()
	if err != nil {
		return nil, err
	}
	fs := &fileState{durable: n}
	d.files[ino] = fs
	return fs, nil
}

func fileIno(f *os.File) (uint64, int64, error) {
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		return 0, 0, err
	}
	return st.Ino, st.Size, nil
}

func (d *Disk) fileOf(f *os.File) (*fileState, error) {
	ino, size, err := fileIno(f)
	if err != nil {
		return nil, err
	}
	return d.file(ino, func() (int64, error) { return size, nil })
}

// WriteAt writes data at off in the open file f.
func (d *Disk) WriteAt(f *os.File, data []byte, off int64) (int, error) {
	fs, err := d.fileOf(f)
	if err != nil {
		return 0, err
	}
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if err := fs.save(f, off, off+int64(len(data))); err != nil {
		return 0, err
	}
	return f.WriteAt(data, off)
}

// Truncate sets the size of the open file f, or of the file rel when f
// is nil.
func (d *Disk) Truncate(f *os.File, rel string, size int64) error {
	if f == nil {
		var err error
		if f, err = os.OpenFile(d.abs(rel), os.O_WRONLY, 0); err != nil {
			return err
		}
		defer f.Close()
	}
	fs, err := d.fileOf(f)
	if err != nil {
		return err
	}
	fs.mu.Lock()
	defer fs.mu.Unlock()
	_, cur, err := fileIno(f)
	if err != nil {
		return err
	}
	if size < cur {
		if err := fs.save(f, size, cur); err != nil {
			return err
		}
	}
	return f.Truncate(size)
}

// Allocate is fallocate(2) on the open file f.
func (d *Disk) Allocate(f *os.File, off, length int64, mode uint32) error {
	fs, err := d.fileOf(f)
	if err != nil {
		return err
	}
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if mode&^unix.FALLOC_FL_KEEP_SIZE != 0 {
		// Punching, zeroing, collapsing or inserting changes bytes from
		// off on: keep them all.
		_, cur, err := fileIno(f)
		if err != nil {
			return err
		}
		if err := fs.save(f, off, max(cur, off+length)); err != nil {
			return err
		}
	}
	return unix.Fallocate(int(f.Fd()), mode, off, length)
}

// Sync makes the open file f durable (fsync or fdatasync: the same here).
func (d *Disk) Sync(f *os.File, datasync bool) error {
	fs, err := d.fileOf(f)
	if err != nil {
		return err
	}
	if ino, _, err := fileIno(f); err == nil {
		d.mu.Lock()
		d.synced[ino] = true
		d.mu.Unlock()
	}
	fs.mu.Lock()
	_, size, err := fileIno(f)
	if err == nil {
		fs.durable, fs.saved = size, nil
	}
	fs.mu.Unlock()
	if err != nil {
		return err
	}
	if datasync {
		return unix.Fdatasync(int(f.Fd()))
	}
	return f.Sync()
}

// SyncDir makes the directory rel's entries durable.
func (d *Disk) SyncDir(rel string) error {
	p := d.abs(rel)
	d.mu.Lock()
	st, err := lstat(p)
	if err == nil {
		delete(d.dirs, st.Ino)
		err = d.collect()
	}
	d.mu.Unlock()
	if err != nil {
		return err
	}
	f, err := os.Open(p)
	if err != nil {
		return err
	}
	defer f.Close()
	return f.Sync()
}

// collect deletes the inodes in limbo that no durable directory names
// any more. d.mu is held.
func (d *Disk) collect() error {
	for changed := true; changed; {
		changed = false
		for ino := range d.inLimbo {
			if d.referenced(ino) {
				continue
			}
			p := d.limboPath(ino)
			st, err := lstat(p)
			if err != nil {
				return err
			}
			if err := os.Remove(p); err != nil {
				return err
			}
			delete(d.inLimbo, ino)
			if isDir(st) || st.Nlink == 1 {
				d.forget(ino)
			}
			changed = true
		}
	}
	return nil
}

// save keeps the durable bytes in [a, b) not kept yet, read from f
// before they are overwritten. fs.mu is held.
func (fs *fileState) save(f *os.File, a, b int64) error {
	b = min(b, fs.durable)
	if a >= b {
		return nil
	}
	r, done, err := readable(f)
	if err != nil {
		return err
	}
	defer done()
	var add []span
	for pos := a; pos < b; {
		// The first kept span that ends after pos.
		i := sort.Search(len(fs.saved), func(i int) bool {
			s := fs.saved[i]
			return s.off+int64(len(s.data)) > pos
		})
		if i < len(fs.saved) && fs.saved[i].off <= pos {
			pos = fs.saved[i].off + int64(len(fs.saved[i].data))
			continue
		}
		end := b
		if i < len(fs.saved) {
			end = min(end, fs.saved[i].off)
		}
		buf := make([]byte, end-pos)
		if n, err := r.ReadAt(buf, pos); n < len(buf) {
			// Bytes past the current end but within the durable size were
			// kept when the file shrank; not finding them is a bug.
			return fmt.Errorf("powerfs: read durable bytes [%d, %d): got %d: %v", pos, end, n, err)
		}
		add = append(add, span{off: pos, data: buf})
		pos = end
	}
	if len(add) > 0 {
		fs.saved = append(fs.saved, add...)
		sort.Slice(fs.saved, func(i, j int) bool { return fs.saved[i].off < fs.saved[j].off })
	}
	return nil
}

// readable returns f, or when f was opened write-only, the same file
// opened again for reading.
func readable(f *os.File) (io.ReaderAt, func(), error) {
	fl, err := unix.FcntlInt(f.Fd(), unix.F_GETFL, 0)
	if err != nil {
		return nil, nil, err
	}
	if fl&unix.O_ACCMODE != unix.O_WRONLY {
		return f, func() {}, nil
	}
	r, err := os.Open("/proc/self/fd/" + strconv.Itoa(int(f.Fd())))
	if err != nil {
		return nil, nil, fmt.Errorf("powerfs: reopen a write-only file to keep its durable bytes: %w", err)
	}
	return r, func() { r.Close() }, nil
}

// CutStats says what a cut discarded.
type CutStats struct {
	// Files whose content was rolled back, and the bytes written since
	// their last sync that were discarded or restored.
	Files int
	Bytes int64
	// Names in the live tree that were not durable, and durable names
	// the live tree had lost (unlinked or renamed away), put back.
	Dropped, Restored []string
	// LostSynced are live names of files the program had fsynced that no
	// durable directory reached: it made their data durable and never
	// their names, which is a durability bug of the program under POSIX
	// (ext4, XFS and btrfs would have kept them).
	LostSynced []string
}

func (s CutStats) String() string {
	out := fmt.Sprintf("%d files rolled back (%d bytes), %d names dropped %v, %d restored %v",
		s.Files, s.Bytes, len(s.Dropped), s.Dropped, len(s.Restored), s.Restored)
	if len(s.LostSynced) > 0 {
		out += fmt.Sprintf(", fsynced files lost with their names %v", s.LostSynced)
	}
	return out
}

// Cut discards everything not durable: afterwards the backing tree holds
// what the model says a disk would after a power failure. Nothing may use
// the tree meanwhile (the FUSE mount is down).
func (d *Disk) Cut() (CutStats, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	var stats CutStats

	// Where every inode is now, and every live name.
	live := map[string]uint64{}
	liveDirs := map[uint64]map[string]dent{d.rootIno: nil}
	var walk func(rel string, ino uint64) error
	walk = func(rel string, ino uint64) error {
		entries, err := listDir(d.abs(rel))
		if err != nil {
			return err
		}
		liveDirs[ino] = entries
		for name, e := range entries {
			child := filepath.Join(rel, name)
			live[child] = e.ino
			if e.dir {
				if err := walk(child, e.ino); err != nil {
					return err
				}
			}
		}
		return nil
	}
	if err := walk("", d.rootIno); err != nil {
		return stats, fmt.Errorf("powerfs: cut: %w", err)
	}
	where := map[uint64]bool{} // inodes that exist, in the tree or in limbo
	for _, ino := range live {
		where[ino] = true
	}
	for ino := range d.inLimbo {
		where[ino] = true
		if _, ok := liveDirs[ino]; !ok {
			liveDirs[ino] = map[string]dent{} // a directory in limbo is empty
		}
	}

	// The durable tree, parents before children.
	type place struct {
		rel string
		e   dent
	}
	var plan []place
	durable := map[string]uint64{}
	seenDir := map[uint64]bool{d.rootIno: true}
	var visit func(rel string, ino uint64) error
	visit = func(rel string, ino uint64) error {
		entries, ok := d.dirs[ino]
		if !ok {
			entries = liveDirs[ino]
		}
		names := make([]string, 0, len(entries))
		for name := range entries {
			names = append(names, name)
		}
		sort.Strings(names)
		for _, name := range names {
			e := entries[name]
			child := filepath.Join(rel, name)
			if !where[e.ino] {
				return fmt.Errorf("durable entry %s names inode %d, which is gone", child, e.ino)
			}
			if e.dir {
				if seenDir[e.ino] {
					continue
				}
				seenDir[e.ino] = true
			}
			plan = append(plan, place{child, e})
			durable[child] = e.ino
			if e.dir {
				if err := visit(child, e.ino); err != nil {
					return err
				}
			}
		}
		return nil
	}
	if err := visit("", d.rootIno); err != nil {
		return stats, fmt.Errorf("powerfs: cut: %w", err)
	}
	for rel, ino := range live {
		if durable[rel] != ino {
			stats.Dropped = append(stats.Dropped, rel)
		}
	}
	for rel, ino := range durable {
		if live[rel] != ino {
			stats.Restored = append(stats.Restored, rel)
		}
	}
	kept := map[uint64]bool{}
	for _, ino := range durable {
		kept[ino] = true
	}
	for rel, ino := range live {
		if d.synced[ino] && !kept[ino] {
			stats.LostSynced = append(stats.LostSynced, rel)
		}
	}
	sort.Strings(stats.Dropped)
	sort.Strings(stats.Restored)
	sort.Strings(stats.LostSynced)

	// Every inode into limbo, children first.
	var flatten func(rel string) error
	flatten = func(rel string) error {
		names, err := readNames(d.abs(rel))
		if err != nil {
			return err
		}
		for _, name := range names {
			child := filepath.Join(rel, name)
			st, err := lstat(d.abs(child))
			if err != nil {
				return err
			}
			if isDir(st) {
				if err := flatten(child); err != nil {
					return err
				}
			}
			dst := d.limboPath(st.Ino)
			move := os.Rename
			if _, err := lstat(dst); err == nil {
				// Another name of an inode already there.
				move = func(p, _ string) error { return os.Remove(p) }
			}
			if err := move(d.abs(child), dst); err != nil {
				return err
			}
		}
		return nil
	}
	if err := flatten(""); err != nil {
		return stats, fmt.Errorf("powerfs: cut: %w", err)
	}

	// Files back to their durable content.
	for ino, fs := range d.files {
		p := d.limboPath(ino)
		st, err := lstat(p)
		if errors.Is(err, unix.ENOENT) {
			continue // gone for good
		}
		if err != nil {
			return stats, fmt.Errorf("powerfs: cut: %w", err)
		}
		if st.Size == fs.durable && len(fs.saved) == 0 {
			continue
		}
		stats.Files++
		stats.Bytes += max(st.Size-fs.durable, 0)
		if err := rollback(p, fs); err != nil {
			return stats, fmt.Errorf("powerfs: cut: roll back %s: %w", p, err)
		}
		for _, s := range fs.saved {
			stats.Bytes += int64(len(s.data))
		}
	}

	// The durable tree back in place.
	placed := map[uint64]string{}
	for _, pl := range plan {
		dst := d.abs(pl.rel)
		var err error
		if first, ok := placed[pl.e.ino]; ok {
			err = os.Link(first, dst)
		} else {
			err = os.Rename(d.limboPath(pl.e.ino), dst)
			placed[pl.e.ino] = dst
		}
		if err != nil {
			return stats, fmt.Errorf("powerfs: cut: %w", err)
		}
	}
	if err := os.RemoveAll(d.limbo); err != nil {
		return stats, fmt.Errorf("powerfs: cut: %w", err)
	}
	if err := os.Mkdir(d.limbo, 0o700); err != nil {
		return stats, fmt.Errorf("powerfs: cut: %w", err)
	}
	d.reset()
	return stats, nil
}

func rollback(p string, fs *fileState) error {
	f, err := os.OpenFile(p, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := f.Truncate(fs.durable); err != nil {
		return err
	}
	for _, s := range fs.saved {
		if _, err := f.WriteAt(s.data, s.off); err != nil {
			return err
		}
	}
	return nil
}
