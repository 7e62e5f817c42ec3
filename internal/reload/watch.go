package reload

import (
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/fsnotify/fsnotify"
)

// DefaultDebounce is how long a watched directory must stay quiet after
// an event before its files are read again: long enough that one
// Kubernetes symlink swap, or an editor's write-and-rename, is one reload;
// short enough that a rotation is in force well within a second.
const DefaultDebounce = 200 * time.Millisecond

// maxQuietWaits bounds the wait for quiet: a directory that never stays
// quiet (a log file written next to the certificates) still has its files
// read every maxQuietWaits debounce periods.
const maxQuietWaits = 5

// Observer is told the outcome of every load of a watched file (the
// start's included; the node's metrics count them) and of every
// certificate TLS refuses, a peer's or a REST client's.
type Observer interface {
	// Reloaded reports that file (a File's Name) was loaded (err nil) or
	// that a changed file was refused and the previous one stays (err).
	Reloaded(file string, err error)
	// PeerRefused reports a certificate refused on the internal port:
	// reason is "ca" (no chain to the CA) or "name" (no allowed name).
	PeerRefused(reason string)
	// ClientRefused reports a client certificate refused on the REST
	// port (ClientAuthConfig): no chain to the clients' CA.
	ClientRefused()
}

// File is one thing a Watcher keeps loaded: one or more files loaded
// together (a certificate and its key).
type File struct {
	// Name says which it is, in logs and to the Observer: "tls", "ca",
	// "security".
	Name string
	// Title says what it is in log lines: "security file".
	Title string
	// Paths are the files, read in this order.
	Paths []string
	// Load takes the files' contents, in Paths' order, and puts them in
	// force, or returns why not, leaving what was in force as it was. On
	// success it may return attributes describing what is now in force,
	// for the log line (never a secret).
	Load func(contents [][]byte) ([]slog.Attr, error)
}

// watched is a File and the state it was last seen in.
type watched struct {
	File
	// seen digests what was last tried (contents, or the error reading
	// them), so that the same bad file is reported once, not at every
	// event in its directory.
	seen [sha256.Size]byte
}

// Options tune a Watcher.
type Options struct {
	// Debounce is the quiet period after an event; zero is
	// DefaultDebounce.
	Debounce time.Duration
	// Logger receives a line per load and per refused file; nil discards.
	Logger *slog.Logger
	// Observer is told every load's outcome; nil tells nobody.
	Observer Observer
}

// Watcher keeps Files loaded: at Add, when their directories see changes
// (after Start), and when Reload is called. Its methods are safe for
// concurrent use.
type Watcher struct {
	debounce time.Duration
	log      *slog.Logger
	obs      Observer

	// mu serialises loads: the event loop's and Reload's.
	mu    sync.Mutex
	files []*watched
	dirs  []string

	fsw  *fsnotify.Watcher // nil until Start, or if watching failed
	done chan struct{}
	wg   sync.WaitGroup
}

// NewWatcher returns a Watcher with nothing to watch yet.
func NewWatcher(o Options) *Watcher {
	if o.Debounce <= 0 {
		o.Debounce = DefaultDebounce
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return &Watcher{debounce: o.Debounce, log: o.Logger, obs: o.Observer, done: make(chan struct{})}
}

// Add loads f for the first time and keeps it loaded from then on. An
// error (a file missing or refused by f.Load) is returned and f is not
// watched: a member does not start on files it cannot use. Add every File
// before Start.
func (w *Watcher) Add(f File) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	f.Paths = slices.Clone(f.Paths)
	for i, p := range f.Paths {
		abs, err := filepath.Abs(p)
		if err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
		f.Paths[i] = abs
	}
	wf := &watched{File: f}
	if err := w.load(wf, true, true); err != nil {
		return err
	}
	w.files = append(w.files, wf)
	for _, p := range f.Paths {
		if dir := filepath.Dir(p); !slices.Contains(w.dirs, dir) {
			w.dirs = append(w.dirs, dir)
		}
	}
	return nil
}

// Start watches the directories of the Files added (with none, it does
// nothing: an inotify instance is a limited resource). If the system
// cannot watch them (inotify's limits, say), the files are still reloaded
// by Reload, and the log says so.
func (w *Watcher) Start() {
	w.mu.Lock()
	none := len(w.dirs) == 0
	w.mu.Unlock()
	if none {
		return
	}
	fsw, err := fsnotify.NewWatcher()
	if err != nil {
		w.log.Warn("cannot watch files for changes; they reload on SIGHUP only", "error", err)
		return
	}
	w.mu.Lock()
	for _, dir := range w.dirs {
		if err := fsw.Add(dir); err != nil {
			w.log.Warn("cannot watch a directory for changes; its files reload on SIGHUP only", "dir", dir, "error", err)
		}
	}
	w.fsw = fsw
	w.mu.Unlock()
	w.wg.Add(1)
	go w.run()
}

// Reload reads every file again and loads those that changed; with
// force, it loads them even if they did not (SIGHUP's promise: what is on
// disk now is in force, or the log says why not). It returns the errors of
// the files refused; those stay as they were.
func (w *Watcher) Reload(force bool) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	var errs []error
	for _, f := range w.files {
		if err := w.load(f, force, false); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Close stops watching. It is safe to call more than once.
func (w *Watcher) Close() error {
	w.mu.Lock()
	select {
	case <-w.done:
		w.mu.Unlock()
		return nil
	default:
	}
	close(w.done)
	fsw := w.fsw
	w.mu.Unlock()
	var err error
	if fsw != nil {
		err = fsw.Close()
	}
	w.wg.Wait()
	return err
}

// run turns the directories' events into reloads: after an event, once
// the directories have been quiet for the debounce period, or at most
// maxQuietWaits periods after the first event not yet acted on.
func (w *Watcher) run() {
	defer w.wg.Done()
	timer := time.NewTimer(w.debounce)
	timer.Stop()
	var first time.Time // the first event since the last reload; zero: none
	changed := func() {
		now := time.Now()
		if first.IsZero() {
			first = now
		}
		wait := min(w.debounce, first.Add(maxQuietWaits*w.debounce).Sub(now))
		timer.Reset(max(wait, 0))
	}
	for {
		select {
		case <-w.done:
			timer.Stop()
			return
		case _, ok := <-w.fsw.Events:
			// Not logged, even at debug level: a log file in a watched
			// directory would log its own writes forever.
			if !ok {
				return
			}
			changed()
		case err, ok := <-w.fsw.Errors:
			if !ok {
				return
			}
			// An overflow of the kernel's queue loses events, not
			// changes: read everything again.
			w.log.Warn("watching files for changes", "error", err)
			changed()
		case <-timer.C:
			first = time.Time{}
			_ = w.Reload(false) // each refusal is logged and reported
			w.rewatch()
		}
	}
}

// rewatch watches again a directory that was removed and made anew (the
// watch dies with the directory).
func (w *Watcher) rewatch() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.fsw == nil {
		return
	}
	active := w.fsw.WatchList()
	for _, dir := range w.dirs {
		if !slices.Contains(active, dir) {
			if err := w.fsw.Add(dir); err == nil {
				w.log.Info("watching a directory again", "dir", dir)
			}
		}
	}
}

// load reads f's files and, if they differ from what was last tried (or
// force), loads them. w.mu is held.
func (w *Watcher) load(f *watched, force, first bool) error {
	contents, sum, readErr := read(f.Paths)
	if !force && sum == f.seen {
		return nil
	}
	f.seen = sum
	var attrs []slog.Attr
	err := readErr
	if err == nil {
		attrs, err = f.Load(contents)
	}
	if w.obs != nil {
		w.obs.Reloaded(f.Name, err)
	}
	paths := strings.Join(f.Paths, ",")
	if err != nil {
		if !first {
			w.log.Error("reloading the "+f.Title+" failed; the previous one stays in force", "file", f.Name, "paths", paths, "error", err)
		}
		return fmt.Errorf("%s (%s): %w", f.Name, paths, err)
	}
	msg := f.Title + " reloaded"
	if first {
		msg = f.Title + " loaded"
	}
	args := []any{"file", f.Name, "paths", paths}
	for _, a := range attrs {
		args = append(args, a)
	}
	w.log.Info(msg, args...)
	return nil
}

// read reads paths and digests what it found: their contents, or the
// error that kept it from reading them.
func read(paths []string) ([][]byte, [sha256.Size]byte, error) {
	h := sha256.New()
	contents := make([][]byte, 0, len(paths))
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			var sum [sha256.Size]byte
			h.Write([]byte("error\x00" + err.Error()))
			copy(sum[:], h.Sum(nil))
			return nil, sum, err
		}
		var n [8]byte
		binary.BigEndian.PutUint64(n[:], uint64(len(b)))
		h.Write(n[:])
		h.Write(b)
		contents = append(contents, b)
	}
	var sum [sha256.Size]byte
	copy(sum[:], h.Sum(nil))
	return contents, sum, nil
}
