package ports

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
)

// span is how far below the ephemeral range ports are looked for.
const span = 10000

// Stable returns n distinct ports, free for TCP and UDP (gossip needs
// both) on every address now, below the kernel's ephemeral range.
func Stable(n int) ([]int, error) {
	lo := ephemeralStart()
	first := max(lo-span, 1024)
	var out []int
	seen := map[int]bool{}
	for tries := 0; len(out) < n; tries++ {
		if tries > 1000 {
			return nil, fmt.Errorf("no %d free ports in [%d, %d)", n, first, lo)
		}
		p := first + rand.IntN(lo-first)
		if seen[p] {
			continue
		}
		seen[p] = true
		ln, err := net.Listen("tcp", ":"+strconv.Itoa(p))
		if err != nil {
			continue
		}
		pc, err := net.ListenPacket("udp", ":"+strconv.Itoa(p))
		_ = ln.Close()
		if err != nil {
			continue
		}
		_ = pc.Close()
		out = append(out, p)
	}
	return out, nil
}

// ephemeralStart is the first port of the kernel's ephemeral range
// (Linux's ip_local_port_range), or 32768, Linux's default, where it
// cannot be read.
func ephemeralStart() int {
	data, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err == nil {
		if f := strings.Fields(string(data)); len(f) == 2 {
			if lo, err := strconv.Atoi(f[0]); err == nil && lo > 1024+span/10 {
				return lo
			}
		}
	}
	return 32768
}
