package durable

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"syscall"
)

// errPowerCut is what every operation answers once the power is cut.
var errPowerCut = errors.New("power cut")

// crashDisk is a fileSystem on a disk that keeps, at a power cut, only what
// was synced, plus whatever of the rest the kernel happened to write:
//
//   - a file's data is on disk once the file is fsynced; before that, the
//     disk may hold the data last synced (nothing for a new file), all of
//     the data written since, or part of it;
//   - a directory's entries (create, rename, remove, mkdir) are on disk
//     once the directory is fsynced; before that, the disk may hold any
//     prefix of the changes made since, in the order they were made (a
//     journalling file system commits its metadata in order);
//   - an entry whose directory is not on disk is lost with it.
//
// This is what POSIX promises and ext4 or XFS deliver at worst; a rename
// that reaches the disk before the renamed file's data is the classic way
// to find an empty file after a power cut.
type crashDisk struct {
	inodes  []*inode
	live    map[string]int // the entries running processes see
	durable map[string]int // the entries on disk
	pending []dirOp        // directory changes not yet on disk, in order
	budget  int            // operations allowed before the power cut; -1: no cut
	cut     bool           // an operation was refused: the power is off
	ops     []string       // what was done, for messages
}

type inode struct {
	dir          bool
	data, synced []byte
}

type opKind int

const (
	opLink opKind = iota // create or mkdir
	opRename
	opUnlink
)

type dirOp struct {
	kind     opKind
	dir      string // the directory whose entries change
	name, to string
	ino      int
}

func newCrashDisk() *crashDisk {
	d := &crashDisk{live: map[string]int{}, durable: map[string]int{}, budget: -1}
	d.put("/", true, nil)
	return d
}

// put adds an entry that was written and synced long ago.
func (d *crashDisk) put(name string, dir bool, data []byte) {
	d.inodes = append(d.inodes, &inode{dir: dir, data: slices.Clone(data), synced: slices.Clone(data)})
	d.live[name] = len(d.inodes) - 1
	d.durable[name] = len(d.inodes) - 1
}

func (d *crashDisk) step(format string, args ...any) error {
	if d.budget == 0 {
		d.cut = true
		return errPowerCut
	}
	if d.budget > 0 {
		d.budget--
	}
	d.ops = append(d.ops, fmt.Sprintf(format, args...))
	return nil
}

func pathErr(op, name string, err error) error { return &fs.PathError{Op: op, Path: name, Err: err} }

func (d *crashDisk) lookup(op, name string) (int, error) {
	ino, ok := d.live[name]
	if !ok {
		return 0, pathErr(op, name, fs.ErrNotExist)
	}
	return ino, nil
}

func (d *crashDisk) link(op, name string, dir bool) (int, error) {
	parent := filepath.Dir(name)
	if p, ok := d.live[parent]; !ok || !d.inodes[p].dir {
		return 0, pathErr(op, name, fs.ErrNotExist)
	}
	d.inodes = append(d.inodes, &inode{dir: dir})
	ino := len(d.inodes) - 1
	d.live[name] = ino
	d.pending = append(d.pending, dirOp{kind: opLink, dir: parent, name: name, ino: ino})
	return ino, nil
}

func (d *crashDisk) create(name string, _ fs.FileMode) (file, error) {
	if err := d.step("create %s", name); err != nil {
		return nil, err
	}
	if ino, ok := d.live[name]; ok {
		if d.inodes[ino].dir {
			return nil, pathErr("open", name, syscall.EISDIR)
		}
		d.inodes[ino].data = nil // O_TRUNC
		return &diskFile{d: d, ino: ino, name: name}, nil
	}
	ino, err := d.link("open", name, false)
	if err != nil {
		return nil, err
	}
	return &diskFile{d: d, ino: ino, name: name}, nil
}

func (d *crashDisk) openDir(name string) (file, error) {
	if err := d.step("open %s", name); err != nil {
		return nil, err
	}
	ino, err := d.lookup("open", name)
	if err != nil {
		return nil, err
	}
	return &diskFile{d: d, ino: ino, name: name}, nil
}

func (d *crashDisk) rename(from, to string) error {
	if err := d.step("rename %s %s", from, to); err != nil {
		return err
	}
	ino, err := d.lookup("rename", from)
	if err != nil {
		return err
	}
	if filepath.Dir(from) != filepath.Dir(to) {
		return fmt.Errorf("the crash disk renames within a directory only: %s → %s", from, to)
	}
	delete(d.live, from)
	d.live[to] = ino
	d.pending = append(d.pending, dirOp{kind: opRename, dir: filepath.Dir(from), name: from, to: to})
	return nil
}

func (d *crashDisk) remove(name string) error {
	if err := d.step("remove %s", name); err != nil {
		return err
	}
	if _, err := d.lookup("remove", name); err != nil {
		return err
	}
	delete(d.live, name)
	d.pending = append(d.pending, dirOp{kind: opUnlink, dir: filepath.Dir(name), name: name})
	return nil
}

func (d *crashDisk) readFile(name string) ([]byte, error) {
	if err := d.step("read %s", name); err != nil {
		return nil, err
	}
	ino, err := d.lookup("open", name)
	if err != nil {
		return nil, err
	}
	return slices.Clone(d.inodes[ino].data), nil
}

func (d *crashDisk) mkdir(name string, _ fs.FileMode) error {
	if err := d.step("mkdir %s", name); err != nil {
		return err
	}
	if _, ok := d.live[name]; ok {
		return pathErr("mkdir", name, fs.ErrExist)
	}
	_, err := d.link("mkdir", name, true)
	return err
}

func (d *crashDisk) isDir(name string) (bool, error) {
	if err := d.step("stat %s", name); err != nil {
		return false, err
	}
	ino, err := d.lookup("stat", name)
	if err != nil {
		return false, err
	}
	return d.inodes[ino].dir, nil
}

// diskFile is an open file or directory of a crashDisk.
type diskFile struct {
	d    *crashDisk
	ino  int
	name string
}

func (f *diskFile) Write(p []byte) (int, error) {
	if err := f.d.step("write %s %q", f.name, p); err != nil {
		return 0, err
	}
	in := f.d.inodes[f.ino]
	if in.dir {
		return 0, pathErr("write", f.name, syscall.EISDIR)
	}
	in.data = append(in.data, p...)
	return len(p), nil
}

// Sync puts a file's data, or a directory's changed entries, on disk.
func (f *diskFile) Sync() error {
	if err := f.d.step("fsync %s", f.name); err != nil {
		return err
	}
	in := f.d.inodes[f.ino]
	if !in.dir {
		in.synced = slices.Clone(in.data)
		return nil
	}
	var rest []dirOp
	for _, op := range f.d.pending {
		if op.dir == f.name {
			apply(f.d.durable, op)
		} else {
			rest = append(rest, op)
		}
	}
	f.d.pending = rest
	return nil
}

func (f *diskFile) Close() error { return f.d.step("close %s", f.name) }

func apply(entries map[string]int, op dirOp) {
	switch op.kind {
	case opLink:
		entries[op.name] = op.ino
	case opRename:
		if ino, ok := entries[op.name]; ok {
			delete(entries, op.name)
			entries[op.to] = ino
		}
	case opUnlink:
		delete(entries, op.name)
	}
}

// afterPowerCut lists every disk this one may come back as after a power
// cut now, each with a description.
func (d *crashDisk) afterPowerCut() (disks []*crashDisk, descs []string) {
	for k := 0; k <= len(d.pending); k++ {
		entries := map[string]int{}
		for name, ino := range d.durable {
			entries[name] = ino
		}
		for _, op := range d.pending[:k] {
			apply(entries, op)
		}
		for name := range entries {
			if !reachable(entries, d.inodes, name) {
				delete(entries, name)
			}
		}
		// The files' possible contents: as synced, or, when written since,
		// with all or half of the data written.
		var files []int
		for _, ino := range entries {
			if !d.inodes[ino].dir && !slices.Contains(files, ino) {
				files = append(files, ino)
			}
		}
		sort.Ints(files)
		choices := make([][][]byte, len(files))
		for i, ino := range files {
			in := d.inodes[ino]
			options := [][]byte{in.synced}
			if !bytes.Equal(in.data, in.synced) {
				options = append(options, in.data, in.data[:len(in.data)/2])
			}
			for _, c := range options {
				if !slices.ContainsFunc(choices[i], func(o []byte) bool { return bytes.Equal(o, c) }) {
					choices[i] = append(choices[i], c)
				}
			}
		}
		pick := make([]int, len(files))
		for {
			nd := &crashDisk{live: map[string]int{}, durable: map[string]int{}, budget: -1}
			for _, in := range d.inodes {
				nd.inodes = append(nd.inodes, &inode{dir: in.dir, data: slices.Clone(in.synced), synced: slices.Clone(in.synced)})
			}
			var contents []string
			for i, ino := range files {
				c := choices[i][pick[i]]
				nd.inodes[ino].data, nd.inodes[ino].synced = slices.Clone(c), slices.Clone(c)
			}
			var names []string
			for name, ino := range entries {
				nd.live[name], nd.durable[name] = ino, ino
				names = append(names, name)
			}
			sort.Strings(names)
			for _, name := range names {
				if in := nd.inodes[entries[name]]; !in.dir {
					contents = append(contents, fmt.Sprintf("%s=%q", name, in.data))
				}
			}
			disks = append(disks, nd)
			descs = append(descs, fmt.Sprintf("%d of %d pending directory changes on disk; files %s", k, len(d.pending), strings.Join(contents, " ")))
			// Next combination.
			i := 0
			for ; i < len(pick); i++ {
				if pick[i]++; pick[i] < len(choices[i]) {
					break
				}
				pick[i] = 0
			}
			if i == len(pick) {
				break
			}
		}
	}
	return disks, descs
}

func reachable(entries map[string]int, inodes []*inode, name string) bool {
	for name != "/" {
		name = filepath.Dir(name)
		ino, ok := entries[name]
		if !ok || !inodes[ino].dir {
			return false
		}
	}
	return true
}

// powerCuts runs op on disks that setup prepares, cutting the power after
// 0, 1, 2, ... operations until op runs to its end, and asks check about
// every disk each cut may leave (completed: op returned before the cut).
// It returns the problems check found.
func powerCuts(setup func(*crashDisk), op func(fileSystem) error, check func(after *crashDisk, completed bool) string) []string {
	var problems []string
	for budget := 0; budget < 100; budget++ {
		d := newCrashDisk()
		setup(d)
		d.budget = budget
		err := op(d)
		completed := !d.cut
		if completed && err != nil {
			return append(problems, fmt.Sprintf("without a power cut: %v", err))
		}
		if !completed && err == nil {
			problems = append(problems, fmt.Sprintf("cut after %d operations (%s): the operation returned success", budget, strings.Join(d.ops, "; ")))
		}
		disks, descs := d.afterPowerCut()
		for i, after := range disks {
			if p := check(after, completed); p != "" {
				when := fmt.Sprintf("cut after %d operations (%s)", budget, strings.Join(d.ops, "; "))
				if completed {
					when = fmt.Sprintf("cut after the operation returned (%s)", strings.Join(d.ops, "; "))
				}
				problems = append(problems, fmt.Sprintf("%s, the disk came back with %s: %s", when, descs[i], p))
			}
		}
		if completed {
			return problems
		}
	}
	return append(problems, "the operation did not end within 100 steps")
}
