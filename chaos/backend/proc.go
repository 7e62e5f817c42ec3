package backend

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/kvnode/kvnode/chaos/netproxy"
	"github.com/kvnode/kvnode/chaos/powerfs"
)

// ProcConfig describes a cluster of kvnode processes on 127.0.0.0/8.
type ProcConfig struct {
	Binary string   // the kvnode binary (BuildKvnode)
	Dir    string   // data directories and logs, one folder per member
	Size   int      // members; 3 when zero
	Flags  []string // more flags for every member (regions, timeouts)
	// FirstIP is member 0's address; member i is FirstIP+i. 127.0.0.11
	// when zero. Each member needs its own IP so the link proxies can tell
	// members apart.
	FirstIP netip.Addr
	// PowerFS puts a powerfs mount under every member's data directory, so
	// that PowerCut works; it needs FUSE. The chaos scenarios always set it.
	PowerFS bool
}

// ProcCluster is the process backend: each member is a kvnode process with
// its own loopback IP, and every member-to-member link (internal port and
// gossip) runs through Net's proxies, which the members advertise. With
// ProcConfig.PowerFS each member's data directory is a powerfs mount
// (Dir/nK/data over Dir/nK/disk), so that PowerCut can lose what the member
// had not fsynced.
type ProcCluster struct {
	cfg     ProcConfig
	net     *netproxy.Net
	members []*procMember
}

type procMember struct {
	name, dir, ip   string
	http, internal  string // where it listens
	gossip          string
	advInt, advGosp string // its proxies, which it advertises
	mu              sync.Mutex
	cmd             *exec.Cmd
	exited          chan struct{}
	log             *os.File
	disk            *powerfs.FS // the file system under its data directory
}

// dataDir is where the member keeps its data: its powerfs mount.
func (m *procMember) dataDir() string { return filepath.Join(m.dir, "data") }

// BuildKvnode builds the kvnode binary into dir (statically, as the image
// is) and returns its path.
func BuildKvnode(ctx context.Context, dir string) (string, error) {
	out := filepath.Join(dir, "kvnode")
	cmd := exec.CommandContext(ctx, "go", "build", "-o", out, "github.com/kvnode/kvnode/cmd/kvnode")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("build kvnode: %w\n%s", err, b)
	}
	return out, nil
}

// StartProcCluster starts cfg.Size members with their proxies and waits
// until every one is ready.
func StartProcCluster(ctx context.Context, cfg ProcConfig) (*ProcCluster, error) {
	if cfg.Size == 0 {
		cfg.Size = 3
	}
	if !cfg.FirstIP.IsValid() {
		cfg.FirstIP = netip.MustParseAddr("127.0.0.11")
	}
	ips := make([]netip.Addr, cfg.Size)
	ip := cfg.FirstIP
	for i := range ips {
		ips[i] = ip
		ip = ip.Next()
	}
	pc := &ProcCluster{cfg: cfg, net: netproxy.New(ips)}
	// The members' ports stay bound until every proxy has its own, so the
	// kernel cannot hand a proxy a port a member is about to listen on.
	var held []io.Closer
	defer func() {
		for _, c := range held {
			_ = c.Close()
		}
	}()
	reserve := func(ip string, udp bool) (string, error) {
		addr, c, err := reserveAddr(ip, udp)
		held = append(held, c...)
		return addr, err
	}
	for i, ip := range ips {
		m := &procMember{name: fmt.Sprintf("n%d", i+1), dir: filepath.Join(cfg.Dir, fmt.Sprintf("n%d", i+1)), ip: ip.String()}
		var err error
		if m.http, err = reserve(m.ip, false); err == nil {
			if m.internal, err = reserve(m.ip, false); err == nil {
				m.gossip, err = reserve(m.ip, true)
			}
		}
		if err == nil {
			m.advInt, err = pc.net.Proxy(i, m.ip+":0", m.internal, false)
		}
		for try := 0; try < 10 && err == nil; try++ {
			// The gossip proxy needs the same port free for TCP and UDP.
			if m.advGosp, err = pc.net.Proxy(i, m.ip+":0", m.gossip, true); err == nil {
				break
			}
			if try < 9 {
				err = nil
			}
		}
		if err == nil && cfg.PowerFS {
			err = m.mount()
		}
		if err != nil {
			_ = pc.Close()
			return nil, fmt.Errorf("member %s: %w", m.name, err)
		}
		pc.members = append(pc.members, m)
	}
	for _, c := range held {
		_ = c.Close()
	}
	held = nil
	for i := range pc.members {
		if err := pc.Start(i); err != nil {
			_ = pc.Close()
			return nil, err
		}
	}
	for i := range pc.members {
		if err := pc.WaitReady(ctx, i); err != nil {
			_ = pc.Close()
			return nil, err
		}
	}
	return pc, nil
}

// mount puts a power-loss file system under the member's data directory.
func (m *procMember) mount() error {
	if err := os.MkdirAll(m.dataDir(), 0o755); err != nil {
		return err
	}
	fs, err := powerfs.Mount(filepath.Join(m.dir, "disk"), m.dataDir())
	if err != nil {
		return fmt.Errorf("%w (the chaos scenarios need FUSE: /dev/fuse, and root or fusermount3)", err)
	}
	m.disk = fs
	return nil
}

// reserveAddr finds a free ip:port (for TCP, and with udp for UDP too)
// and keeps it bound: the caller closes what it returns just before the
// member that will listen there starts.
func reserveAddr(ip string, udp bool) (string, []io.Closer, error) {
	for range 20 {
		ln, err := net.Listen("tcp", ip+":0")
		if err != nil {
			return "", nil, err
		}
		addr := ln.Addr().String()
		if !udp {
			return addr, []io.Closer{ln}, nil
		}
		pc, err := net.ListenPacket("udp", addr)
		if err == nil {
			return addr, []io.Closer{ln, pc}, nil
		}
		_ = ln.Close()
	}
	return "", nil, fmt.Errorf("no port free on %s", ip)
}

func (pc *ProcCluster) Size() int         { return len(pc.members) }
func (pc *ProcCluster) Name(i int) string { return pc.members[i].name }
func (pc *ProcCluster) URL(i int) string  { return "http://" + pc.members[i].http }

// Net is the proxies' fault table, for faults the Cluster methods do not
// name.
func (pc *ProcCluster) Net() *netproxy.Net { return pc.net }

// LogPath is member i's log (all its runs, appended).
func (pc *ProcCluster) LogPath(i int) string { return filepath.Join(pc.members[i].dir, "kvnode.log") }

// Start starts member i (it must not be running).
func (pc *ProcCluster) Start(i int) error {
	m := pc.members[i]
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.cmd != nil {
		return fmt.Errorf("member %s is already running", m.name)
	}
	if err := os.MkdirAll(m.dir, 0o755); err != nil {
		return err
	}
	if err := pc.net.Up(i); err != nil {
		return err
	}
	var join []string
	for _, o := range pc.members {
		join = append(join, o.advGosp)
	}
	args := []string{
		"--name", m.name,
		"--data-dir", m.dataDir(),
		"--http-addr", m.http,
		"--internal-addr", m.internal,
		"--advertise-internal", m.advInt,
		"--gossip-addr", m.gossip,
		"--advertise-gossip", m.advGosp,
		"--join", strings.Join(join, ","),
		"--bootstrap-expect", strconv.Itoa(len(pc.members)),
	}
	args = append(args, pc.cfg.Flags...)
	log, err := os.OpenFile(filepath.Join(m.dir, "kvnode.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	fmt.Fprintf(log, "---- start %s %s\n", time.Now().Format(time.RFC3339Nano), strings.Join(args, " "))
	cmd := exec.Command(pc.cfg.Binary, args...)
	cmd.Stdout, cmd.Stderr = log, log
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "KVNODE_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	if err := cmd.Start(); err != nil {
		_ = log.Close()
		return fmt.Errorf("start %s: %w", m.name, err)
	}
	m.cmd, m.log, m.exited = cmd, log, make(chan struct{})
	go func(cmd *exec.Cmd, exited chan struct{}, log *os.File) {
		_ = cmd.Wait()
		fmt.Fprintf(log, "---- exit %s %v\n", time.Now().Format(time.RFC3339Nano), cmd.ProcessState)
		_ = log.Close()
		close(exited)
	}(cmd, m.exited, log)
	return nil
}

// signal sends sig to member i's process, if it runs.
func (pc *ProcCluster) signal(i int, sig syscall.Signal) (chan struct{}, error) {
	m := pc.members[i]
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.cmd == nil {
		return nil, fmt.Errorf("member %s is not running", m.name)
	}
	if err := m.cmd.Process.Signal(sig); err != nil {
		return nil, fmt.Errorf("signal %v to %s: %w", sig, m.name, err)
	}
	return m.exited, nil
}

// wait waits for member i's process to exit after a signal, and forgets it.
func (pc *ProcCluster) wait(i int, exited chan struct{}, d time.Duration) error {
	select {
	case <-exited:
	case <-time.After(d):
		return fmt.Errorf("member %s did not exit within %v", pc.members[i].name, d)
	}
	m := pc.members[i]
	m.mu.Lock()
	m.cmd = nil
	m.mu.Unlock()
	return nil
}

func (pc *ProcCluster) Kill(i int) error {
	exited, err := pc.signal(i, syscall.SIGKILL)
	if err != nil {
		return err
	}
	err = pc.wait(i, exited, 10*time.Second)
	pc.net.Down(i)
	return err
}

func (pc *ProcCluster) PowerFaults() bool { return pc.cfg.PowerFS }

// PowerCut SIGKILLs the members, all before any is rolled back, then
// cuts each one's file system: what it had not fsynced is gone. What was
// lost is noted in the member's log too. A member that loses a file it had
// fsynced (its name was never made durable) is an error: the member
// believed that file safe.
func (pc *ProcCluster) PowerCut(members ...int) ([]string, error) {
	if !pc.cfg.PowerFS {
		return nil, ErrUnsupported
	}
	exits := make([]chan struct{}, len(members))
	for k, i := range members {
		exited, err := pc.signal(i, syscall.SIGKILL)
		if err != nil {
			return nil, err
		}
		exits[k] = exited
	}
	var errs []error
	for k, i := range members {
		errs = append(errs, pc.wait(i, exits[k], 10*time.Second))
		pc.net.Down(i)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	var lost []string
	for _, i := range members {
		m := pc.members[i]
		stats, err := m.disk.Cut()
		lost = append(lost, fmt.Sprintf("%s: %v", m.name, stats))
		if log, lerr := os.OpenFile(pc.LogPath(i), os.O_WRONLY|os.O_APPEND, 0o644); lerr == nil {
			fmt.Fprintf(log, "---- power cut %s: %v (error: %v)\n", time.Now().Format(time.RFC3339Nano), stats, err)
			_ = log.Close()
		}
		if err != nil {
			return lost, fmt.Errorf("power cut %s: %w", m.name, err)
		}
		if len(stats.LostSynced) > 0 {
			errs = append(errs, fmt.Errorf("%s lost files it had fsynced, because it never fsynced the directories naming them: %s", m.name, strings.Join(stats.LostSynced, ", ")))
		}
	}
	return lost, errors.Join(errs...)
}

func (pc *ProcCluster) Stop(i int) error {
	exited, err := pc.signal(i, syscall.SIGTERM)
	if err != nil {
		return err
	}
	if err := pc.wait(i, exited, 40*time.Second); err != nil {
		_ = pc.Kill(i)
		return err
	}
	pc.net.Down(i)
	return nil
}

func (pc *ProcCluster) Pause(i int) error {
	_, err := pc.signal(i, syscall.SIGSTOP)
	return err
}

func (pc *ProcCluster) Resume(i int) error {
	_, err := pc.signal(i, syscall.SIGCONT)
	return err
}

func (pc *ProcCluster) Isolate(i int) error {
	pc.net.Isolate(i, len(pc.members), netproxy.Blackhole)
	return nil
}

func (pc *ProcCluster) LinkFaults() bool { return true }

func (pc *ProcCluster) CutOneWay(from, to int) error {
	pc.net.Set(from, to, netproxy.LinkState{Fault: netproxy.Blackhole})
	return nil
}

func (pc *ProcCluster) Slow(from, to int, ms int) error {
	pc.net.Set(from, to, netproxy.LinkState{Fault: netproxy.Delay, Delay: time.Duration(ms) * time.Millisecond})
	return nil
}

func (pc *ProcCluster) Heal() error {
	pc.net.Heal()
	return nil
}

func (pc *ProcCluster) WaitReady(ctx context.Context, i int) error {
	m := pc.members[i]
	m.mu.Lock()
	exited := m.exited
	m.mu.Unlock()
	gone := func() error {
		select {
		case <-exited:
			return fmt.Errorf("member %s exited; the end of its log:\n%s", m.name, logTail(pc.LogPath(i), 20))
		default:
			return nil
		}
	}
	return waitReady(ctx, pc.URL(i), m.name, gone)
}

// logTail is the last n lines of the file at path.
func logTail(path string, n int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// waitReady polls url's /readyz until it answers 200. gone, when not nil,
// says the member can no longer become ready (its process exited).
func waitReady(ctx context.Context, url, name string, gone func() error) error {
	ctx, cancel := context.WithTimeout(ctx, 90*time.Second)
	defer cancel()
	client := &http.Client{Timeout: 2 * time.Second}
	last := "no answer"
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url+"/readyz", nil)
		if err != nil {
			return err
		}
		if resp, err := client.Do(req); err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			last = resp.Status
		} else {
			last = err.Error()
		}
		if gone != nil {
			if err := gone(); err != nil {
				return err
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("member %s not ready (last: %s): %w", name, last, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// Close kills every member, stops the proxies and unmounts the members'
// file systems (their files stay in the backing directories).
func (pc *ProcCluster) Close() error {
	var errs []error
	for i, m := range pc.members {
		m.mu.Lock()
		running := m.cmd != nil
		m.mu.Unlock()
		if running {
			if err := pc.Kill(i); err != nil {
				errs = append(errs, err)
			}
		}
	}
	pc.net.Close()
	for _, m := range pc.members {
		if m.disk != nil {
			if err := m.disk.Close(); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}
