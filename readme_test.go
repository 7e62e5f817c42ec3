package kvnode_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/kvnode/kvnode/internal/waitfor"
	"github.com/kvnode/kvnode/node"
	"github.com/kvnode/kvnode/node/nodetest"
)

// The README's tour is a promise to a newcomer: every command works as
// written. TestReadmeTour keeps it. The tour is the README's section
// between "## A 30-second tour" and the next "---"; each ```sh block in
// it is followed by a ```text block, what the block prints. The blocks
// run in order in one bash (a variable set in one is seen by the next)
// against a fresh node, and each block's output must match its text, in
// which … stands for any text. The tour names the node started with no
// flags, localhost:8080; the test's node listens on a free port, which
// replaces localhost:8080 in the commands and in the expected output.

const (
	tourStart  = "## A 30-second tour"
	tourEnd    = "\n---\n"
	tourAddr   = "localhost:8080"
	blockFence = "```"
)

// tourBlock is one command block and what it must print.
type tourBlock struct {
	line           int // of the sh block in README.md
	script, expect string
}

// readTour parses the tour out of README.md.
func readTour(t *testing.T) []tourBlock {
	t.Helper()
	data, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	text := string(data)
	start := strings.Index(text, tourStart)
	if start < 0 {
		t.Fatalf("README.md has no %q section", tourStart)
	}
	end := strings.Index(text[start:], tourEnd)
	if end < 0 {
		t.Fatalf("the tour does not end with a --- line")
	}
	lines := strings.Split(text[start:start+end], "\n")
	firstLine := strings.Count(text[:start], "\n") + 1
	var blocks []tourBlock
	var pending *tourBlock
	for i := 0; i < len(lines); i++ {
		lang, ok := strings.CutPrefix(lines[i], blockFence)
		if !ok {
			if pending != nil && strings.TrimSpace(lines[i]) != "" {
				t.Fatalf("README.md:%d: the sh block is not followed by a text block of its output", pending.line)
			}
			continue
		}
		j := i + 1
		for j < len(lines) && lines[j] != blockFence {
			j++
		}
		if j == len(lines) {
			t.Fatalf("README.md:%d: a code block without its end", firstLine+i)
		}
		body := strings.Join(lines[i+1:j], "\n") + "\n"
		switch {
		case lang == "sh" && pending == nil:
			pending = &tourBlock{line: firstLine + i, script: body}
		case lang == "text" && pending != nil:
			pending.expect = body
			blocks = append(blocks, *pending)
			pending = nil
		default:
			t.Fatalf("README.md:%d: a %q block where the tour wants %s", firstLine+i, lang, map[bool]string{true: "a text block (the output)", false: "an sh block"}[pending != nil])
		}
		i = j
	}
	if pending != nil {
		t.Fatalf("README.md:%d: the last sh block has no text block of its output", pending.line)
	}
	if len(blocks) < 3 {
		t.Fatalf("the tour has %d command blocks; expected more", len(blocks))
	}
	return blocks
}

// outputPattern turns an expected output into a regular expression: the
// text literally, … for any text.
func outputPattern(expect string) *regexp.Regexp {
	parts := strings.Split(expect, "…")
	for i, p := range parts {
		parts[i] = regexp.QuoteMeta(p)
	}
	return regexp.MustCompile(`(?s)\A` + strings.Join(parts, ".*?") + `\z`)
}

// runTour runs the blocks against the member at addr (host:port).
func runTour(t *testing.T, blocks []tourBlock, addr string) {
	t.Helper()
	if _, err := exec.LookPath("bash"); err != nil {
		t.Fatal("the README's tour is run with bash, which is not installed")
	}
	if _, err := exec.LookPath("curl"); err != nil {
		t.Fatal("the README's tour uses curl, which is not installed (Debian: apt-get install -y curl)")
	}
	// One script, the blocks in order, each followed by a marker line,
	// so that the output can be split back into the blocks'.
	var script strings.Builder
	markers := make([]string, len(blocks))
	for i, b := range blocks {
		markers[i] = fmt.Sprintf("@@tour-block-%d-%d@@", i, time.Now().UnixNano())
		script.WriteString(strings.ReplaceAll(b.script, tourAddr, addr))
		fmt.Fprintf(&script, "\necho %s\n", markers[i])
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "--noprofile", "--norc")
	cmd.Stdin = strings.NewReader(script.String())
	cmd.Dir = t.TempDir()
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("the tour's script failed: %v\nstderr:\n%s\nstdout:\n%s", err, stderr.String(), stdout.String())
	}
	out := stdout.String()
	for i, b := range blocks {
		got, rest, ok := strings.Cut(out, markers[i]+"\n")
		if !ok {
			t.Fatalf("README.md:%d: the block did not finish; output so far:\n%s\nstderr:\n%s", b.line, out, stderr.String())
		}
		out = rest
		want := strings.ReplaceAll(b.expect, tourAddr, addr)
		if !outputPattern(want).MatchString(got) {
			t.Errorf("README.md:%d: the block\n%s\nprinted\n%s\nwhere the README shows\n%s", b.line, b.script, got, b.expect)
		}
	}
	if stderr.Len() > 0 {
		t.Errorf("the tour wrote to standard error:\n%s", stderr.String())
	}
}

// TestReadmeTour runs the tour against a single node, as `go run
// ./cmd/kvnode` starts one, and against three members, as the compose
// cluster runs (its published ports are checked against the tour's).
// With KVNODE_TOUR_ADDR=host:port it runs the tour against that running
// member instead, e.g. a fresh compose cluster's localhost:8081.
func TestReadmeTour(t *testing.T) {
	blocks := readTour(t)
	if addr := os.Getenv("KVNODE_TOUR_ADDR"); addr != "" {
		runTour(t, blocks, addr)
		return
	}
	compose, err := os.ReadFile("docker-compose.yml")
	if err != nil {
		t.Fatal(err)
	}
	for i, port := range []string{"8081", "8082", "8083"} {
		published := fmt.Sprintf(`"${KVNODE_PORT_%d:-%s}:8080"`, i, port)
		if !bytes.Contains(compose, []byte(published)) {
			t.Errorf("docker-compose.yml does not publish %s, which the tour names", published)
		}
		if !strings.Contains(blocks[0].script, "localhost:"+port) && i == 0 {
			t.Errorf("the tour's first block does not say how to reach the compose cluster (localhost:%s)", port)
		}
	}
	for _, size := range []int{1, 3} {
		t.Run(fmt.Sprintf("%d members", size), func(t *testing.T) {
			c := nodetest.New(t)
			var members []*node.Node
			for i := 1; i <= size; i++ {
				members = append(members, c.Start(fmt.Sprintf("n%d", i), size))
			}
			for _, m := range members {
				waitfor.Cond(t, 30*time.Second, m.Name()+" to be ready", func() bool {
					resp, err := http.Get("http://" + m.HTTPAddr() + "/readyz")
					if err != nil {
						return false
					}
					resp.Body.Close()
					return resp.StatusCode == http.StatusOK
				})
			}
			// Compose's users talk to any member: here the last one.
			runTour(t, blocks, members[len(members)-1].HTTPAddr())
		})
	}
}

// TestReadmeLinks: every relative link of the README names a file or
// directory of this repository (never one outside it), and every
// #anchor a heading of the README.
func TestReadmeLinks(t *testing.T) {
	data, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	text := string(data)
	anchors := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^#+ (.+)$`).FindAllStringSubmatch(text, -1) {
		anchors[slug(m[1])] = true
	}
	root, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	links := regexp.MustCompile(`\]\(([^)\s]+)\)`).FindAllStringSubmatch(text, -1)
	if len(links) < 5 {
		t.Fatalf("only %d links found", len(links))
	}
	for _, m := range links {
		target := m[1]
		switch {
		case strings.HasPrefix(target, "http://"), strings.HasPrefix(target, "https://"):
		case strings.HasPrefix(target, "#"):
			if !anchors[target[1:]] {
				t.Errorf("link %s: no such heading in README.md", target)
			}
		default:
			file, _, _ := strings.Cut(target, "#")
			abs, err := filepath.Abs(file)
			if err != nil {
				t.Fatal(err)
			}
			if rel, err := filepath.Rel(root, abs); err != nil || strings.HasPrefix(rel, "..") {
				t.Errorf("link %s leaves the repository", target)
				continue
			}
			if _, err := os.Stat(abs); err != nil {
				t.Errorf("link %s: %v", target, err)
			}
		}
	}
	if strings.Contains(text, "../shared") {
		t.Errorf("README.md refers to ../shared, outside the repository")
	}
}

// slug is GitHub's anchor of a heading: lower case, spaces to hyphens,
// punctuation but hyphens and underscores dropped.
func slug(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(heading)) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r > 127:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// TestReadmeGo: the README's Go program (the ```go block of "## The Go
// client") builds against this checkout's package client and prints, run
// against a fresh node with a region orders, what the ```text block after
// it shows. It is built with -overlay as a package of this module, so
// that it is the README's text that runs, not a copy.
func TestReadmeGo(t *testing.T) {
	data, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	text := string(data)
	start := strings.Index(text, "## The Go client")
	if start < 0 {
		t.Fatal(`README.md has no "## The Go client" section`)
	}
	section := text[start:]
	code, ok := fencedBlock(section, "go")
	if !ok {
		t.Fatal("the Go client section has no ```go block")
	}
	expect, ok := fencedBlock(section[strings.Index(section, code)+len(code):], "text")
	if !ok {
		t.Fatal("the ```go block is not followed by a ```text block of its output")
	}
	c := nodetest.New(t)
	n := c.Start("g1", 1)
	waitfor.Cond(t, 30*time.Second, "the node to be ready", func() bool {
		resp, err := http.Get("http://" + n.HTTPAddr() + "/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	nodetest.MustCall(t, n, "POST", "/management/v1/regions", `{"name":"orders","type":"REPLICATE"}`, 201)

	dir := t.TempDir()
	src := filepath.Join(dir, "main.go")
	if err := os.WriteFile(src, []byte(strings.ReplaceAll(code, tourAddr, n.HTTPAddr())), 0o644); err != nil {
		t.Fatal(err)
	}
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	overlay, err := json.Marshal(map[string]map[string]string{"Replace": {filepath.Join(wd, "internal", "readmego", "main.go"): src}})
	if err != nil {
		t.Fatal(err)
	}
	ovPath := filepath.Join(dir, "overlay.json")
	if err := os.WriteFile(ovPath, overlay, 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", "run", "-overlay", ovPath, "./internal/readmego")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("the README's Go program: %v\n%s%s", err, stderr.String(), stdout.String())
	}
	if got := stdout.String(); got != expect {
		t.Errorf("the README's Go program printed\n%s\nwhere the README shows\n%s", got, expect)
	}
}

// fencedBlock is the body of the first ```lang block of text.
func fencedBlock(text, lang string) (string, bool) {
	open := blockFence + lang + "\n"
	i := strings.Index(text, open)
	if i < 0 {
		return "", false
	}
	body := text[i+len(open):]
	j := strings.Index(body, "\n"+blockFence+"\n")
	if j < 0 {
		return "", false
	}
	return body[:j+1], true
}
