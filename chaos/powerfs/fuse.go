package powerfs

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
)

// FS is a Disk mounted with FUSE.
type FS struct {
	disk       *Disk
	mountpoint string

	mu     sync.Mutex
	server *fuse.Server
}

// Mount mounts a power-loss file system on mountpoint (an existing
// directory) over backingDir, which it creates if needed and which keeps
// the files (backingDir/files) between mounts. Whatever the backing
// directory already holds counts as durable.
func Mount(backingDir, mountpoint string) (*FS, error) {
	d, err := OpenDisk(backingDir)
	if err != nil {
		return nil, err
	}
	f := &FS{disk: d, mountpoint: mountpoint}
	if err := f.mount(); err != nil {
		return nil, err
	}
	return f, nil
}

// Disk is the model behind the mount.
func (f *FS) Disk() *Disk { return f.disk }

// Mountpoint is where the file system is mounted.
func (f *FS) Mountpoint() string { return f.mountpoint }

func (f *FS) mount() error {
	lr := &fs.LoopbackRoot{Path: f.disk.root}
	var st syscall.Stat_t
	if err := syscall.Stat(f.disk.root, &st); err != nil {
		return fmt.Errorf("powerfs: %w", err)
	}
	lr.Dev = st.Dev
	root := &node{LoopbackNode: &fs.LoopbackNode{RootData: lr}, disk: f.disk}
	lr.RootNode = root
	sec := time.Second
	server, err := fs.Mount(f.mountpoint, root, &fs.Options{
		EntryTimeout: &sec,
		AttrTimeout:  &sec,
		MountOptions: fuse.MountOptions{
			FsName: f.disk.root,
			Name:   "powerfs",
			// Data goes through this process, never around it: no
			// passthrough, no writeback cache (neither is asked for).
			MaxBackground: 64,
		},
	})
	if err != nil {
		return fmt.Errorf("powerfs: mount %s: %w", f.mountpoint, err)
	}
	f.mu.Lock()
	f.server = server
	f.mu.Unlock()
	return nil
}

func (f *FS) unmount() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.server == nil {
		return nil
	}
	var err error
	for try := 0; try < 50; try++ {
		if err = f.server.Unmount(); err == nil {
			f.server = nil
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("powerfs: unmount %s: %w", f.mountpoint, err)
}

// Cut cuts the power: everything not made durable is lost, and the file
// system is mounted again on what is left, with nothing cached. The
// programs using the mount must be dead already (unmounting waits for
// their files to close).
func (f *FS) Cut() (CutStats, error) {
	if err := f.unmount(); err != nil {
		return CutStats{}, err
	}
	stats, err := f.disk.Cut()
	if err != nil {
		return stats, err
	}
	return stats, f.mount()
}

// Close unmounts the file system; the backing directory keeps its files
// as they are (nothing is discarded).
func (f *FS) Close() error { return f.unmount() }

// node is a loopback node whose changes go through the Disk.
type node struct {
	*fs.LoopbackNode
	disk *Disk
}

var (
	_ fs.NodeWrapChilder    = (*node)(nil)
	_ fs.NodeCreater        = (*node)(nil)
	_ fs.NodeOpener         = (*node)(nil)
	_ fs.NodeMkdirer        = (*node)(nil)
	_ fs.NodeMknoder        = (*node)(nil)
	_ fs.NodeSymlinker      = (*node)(nil)
	_ fs.NodeLinker         = (*node)(nil)
	_ fs.NodeUnlinker       = (*node)(nil)
	_ fs.NodeRmdirer        = (*node)(nil)
	_ fs.NodeRenamer        = (*node)(nil)
	_ fs.NodeSetattrer      = (*node)(nil)
	_ fs.NodeFsyncer        = (*node)(nil)
	_ fs.NodeCopyFileRanger = (*node)(nil)
	_ fs.NodeOpendirHandler = (*node)(nil)
)

// WrapChild makes every node of the tree a node of ours.
func (n *node) WrapChild(ctx context.Context, ops fs.InodeEmbedder) fs.InodeEmbedder {
	if lb, ok := ops.(*fs.LoopbackNode); ok {
		return &node{LoopbackNode: lb, disk: n.disk}
	}
	return ops
}

// rel is the node's path in the backing tree.
func (n *node) rel() string {
	return n.Path(n.Root())
}

func (n *node) child(name string) string { return filepath.Join(n.rel(), name) }

// entry looks up the child just made and hands it to the kernel.
func (n *node) entry(ctx context.Context, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	return n.LoopbackNode.Lookup(ctx, name, out)
}

func errno(err error) syscall.Errno {
	if err == nil {
		return 0
	}
	return fs.ToErrno(err)
}

func (n *node) Create(ctx context.Context, name string, flags uint32, mode uint32, out *fuse.EntryOut) (*fs.Inode, fs.FileHandle, uint32, syscall.Errno) {
	f, err := n.disk.Create(n.child(name), int(flags)&^syscall.O_APPEND, mode)
	if err != nil {
		return nil, nil, 0, errno(err)
	}
	ch, e := n.entry(ctx, name, out)
	if e != 0 {
		_ = f.Close()
		return nil, nil, 0, e
	}
	return ch, newHandle(f, n.disk), 0, 0
}

func (n *node) Open(ctx context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	f, err := n.disk.Open(n.rel(), int(flags)&^(syscall.O_APPEND|fuse.FMODE_EXEC))
	if err != nil {
		return nil, 0, errno(err)
	}
	return newHandle(f, n.disk), 0, 0
}

func (n *node) Mkdir(ctx context.Context, name string, mode uint32, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	if err := n.disk.Mkdir(n.child(name), mode); err != nil {
		return nil, errno(err)
	}
	return n.entry(ctx, name, out)
}

func (n *node) Mknod(ctx context.Context, name string, mode, rdev uint32, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	if err := n.disk.Mknod(n.child(name), mode, int(rdev)); err != nil {
		return nil, errno(err)
	}
	return n.entry(ctx, name, out)
}

func (n *node) Symlink(ctx context.Context, target, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	if err := n.disk.Symlink(target, n.child(name)); err != nil {
		return nil, errno(err)
	}
	return n.entry(ctx, name, out)
}

func (n *node) Link(ctx context.Context, target fs.InodeEmbedder, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	t, ok := target.(*node)
	if !ok {
		return nil, syscall.EXDEV
	}
	if err := n.disk.Link(t.rel(), n.child(name)); err != nil {
		return nil, errno(err)
	}
	return n.entry(ctx, name, out)
}

func (n *node) Unlink(ctx context.Context, name string) syscall.Errno {
	return errno(n.disk.Unlink(n.child(name)))
}

func (n *node) Rmdir(ctx context.Context, name string) syscall.Errno {
	return errno(n.disk.Rmdir(n.child(name)))
}

func (n *node) Rename(ctx context.Context, name string, newParent fs.InodeEmbedder, newName string, flags uint32) syscall.Errno {
	p, ok := newParent.(*node)
	if !ok {
		return syscall.EXDEV
	}
	return errno(n.disk.Rename(n.child(name), p.child(newName), flags))
}

// Setattr records a truncate; the rest (modes, owners, times) passes
// through.
func (n *node) Setattr(ctx context.Context, f fs.FileHandle, in *fuse.SetAttrIn, out *fuse.AttrOut) syscall.Errno {
	if size, ok := in.GetSize(); ok {
		var file *os.File
		if h, ok := f.(*handle); ok {
			file = h.f
		}
		if err := n.disk.Truncate(file, n.rel(), int64(size)); err != nil {
			return errno(err)
		}
		cp := *in
		cp.Valid &^= fuse.FATTR_SIZE
		in = &cp
	}
	if h, ok := f.(*handle); ok {
		f = h.lf // it sets modes and times on the open file
	}
	return n.LoopbackNode.Setattr(ctx, f, in, out)
}

// Fsync makes a file's data, or a directory's entries, durable.
func (n *node) Fsync(ctx context.Context, f fs.FileHandle, flags uint32) syscall.Errno {
	if n.IsDir() {
		return errno(n.disk.SyncDir(n.rel()))
	}
	h, ok := f.(*handle)
	if !ok {
		file, err := os.Open(filepath.Join(n.disk.root, n.rel()))
		if err != nil {
			return errno(err)
		}
		defer file.Close()
		return errno(n.disk.Sync(file, flags&1 != 0))
	}
	return errno(n.disk.Sync(h.f, flags&1 != 0))
}

// CopyFileRange is refused, so the kernel falls back to reads and
// writes, which the model sees.
func (n *node) CopyFileRange(ctx context.Context, fhIn fs.FileHandle, offIn uint64, out *fs.Inode, fhOut fs.FileHandle, offOut uint64, length uint64, flags uint64) (uint32, syscall.Errno) {
	return 0, syscall.ENOTSUP
}

// OpendirHandle lists the directory; its fsync comes to Fsync above.
func (n *node) OpendirHandle(ctx context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	ds, e := fs.NewLoopbackDirStream(filepath.Join(n.disk.root, n.rel()))
	if e != 0 {
		return nil, 0, e
	}
	return dirHandle{ds}, 0, 0
}

// dirHandle is a directory stream without its own fsync.
type dirHandle struct{ fs.DirStream }

func (h dirHandle) Readdirent(ctx context.Context) (*fuse.DirEntry, syscall.Errno) {
	if r, ok := h.DirStream.(fs.FileReaddirenter); ok {
		return r.Readdirent(ctx)
	}
	if !h.HasNext() {
		return nil, 0
	}
	e, errno := h.Next()
	return &e, errno
}

func (h dirHandle) Seekdir(ctx context.Context, off uint64) syscall.Errno {
	if s, ok := h.DirStream.(fs.FileSeekdirer); ok {
		return s.Seekdir(ctx, off)
	}
	return syscall.ENOTSUP
}

func (h dirHandle) Releasedir(ctx context.Context, flags uint32) {
	if r, ok := h.DirStream.(fs.FileReleasedirer); ok {
		r.Releasedir(ctx, flags)
		return
	}
	h.Close()
}

// handle is an open file: reads pass through, changes go through the
// Disk. It offers no passthrough file descriptor, so the kernel sends
// every write here.
type handle struct {
	f    *os.File
	lf   *fs.LoopbackFile
	disk *Disk
}

var (
	_ fs.FileReader    = (*handle)(nil)
	_ fs.FileWriter    = (*handle)(nil)
	_ fs.FileFlusher   = (*handle)(nil)
	_ fs.FileReleaser  = (*handle)(nil)
	_ fs.FileGetattrer = (*handle)(nil)
	_ fs.FileLseeker   = (*handle)(nil)
	_ fs.FileAllocater = (*handle)(nil)
)

func newHandle(f *os.File, d *Disk) *handle {
	return &handle{f: f, lf: fs.NewLoopbackFileFromOS(f), disk: d}
}

func (h *handle) Read(ctx context.Context, buf []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	return h.lf.Read(ctx, buf, off)
}

func (h *handle) Write(ctx context.Context, data []byte, off int64) (uint32, syscall.Errno) {
	n, err := h.disk.WriteAt(h.f, data, off)
	if err != nil && n == 0 {
		return 0, errno(err)
	}
	return uint32(n), 0
}

func (h *handle) Flush(ctx context.Context) syscall.Errno   { return h.lf.Flush(ctx) }
func (h *handle) Release(ctx context.Context) syscall.Errno { return h.lf.Release(ctx) }

func (h *handle) Getattr(ctx context.Context, out *fuse.AttrOut) syscall.Errno {
	return h.lf.Getattr(ctx, out)
}

func (h *handle) Lseek(ctx context.Context, off uint64, whence uint32) (uint64, syscall.Errno) {
	return h.lf.Lseek(ctx, off, whence)
}

func (h *handle) Allocate(ctx context.Context, off uint64, size uint64, mode uint32) syscall.Errno {
	return errno(h.disk.Allocate(h.f, int64(off), int64(size), mode))
}

// ErrNoFUSE says FUSE cannot be used here.
var ErrNoFUSE = errors.New("powerfs: FUSE is not usable")

// Check reports why FUSE cannot be mounted on this machine, or nil: it
// mounts a throwaway file system under dir and unmounts it.
func Check(dir string) error {
	if _, err := os.Stat("/dev/fuse"); err != nil {
		return fmt.Errorf("%w: %v", ErrNoFUSE, err)
	}
	backing, err := os.MkdirTemp(dir, "powerfs-check-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(backing)
	mnt := filepath.Join(backing, "mnt")
	if err := os.Mkdir(mnt, 0o755); err != nil {
		return err
	}
	f, err := Mount(filepath.Join(backing, "disk"), mnt)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrNoFUSE, err)
	}
	return f.Close()
}
