package k8stest

import (
	"bytes"
	"crypto/rand"
	"crypto/tls"
	"encoding/base64"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"sigs.k8s.io/yaml"

	"github.com/kvnode/kvnode/auth"
	"github.com/kvnode/kvnode/internal/waitfor"
	"github.com/kvnode/kvnode/node"
	"github.com/kvnode/kvnode/node/nodeflags"
	"github.com/kvnode/kvnode/node/nodetest"
)

// The Kubernetes manifests in deploy/k8s are decoded strictly into the
// API's own types (an unknown or misspelt field fails) and checked against
// this program: flags, ports, probe paths, the image's user.

const k8sDir = "../k8s"

// kustomization is the part of kustomize's file these manifests use;
// decoding strictly means a field we do not check makes the test fail
// rather than be ignored.
type kustomization struct {
	APIVersion string   `json:"apiVersion"`
	Kind       string   `json:"kind"`
	Resources  []string `json:"resources"`
	Patches    []struct {
		Path string `json:"path"`
	} `json:"patches"`
	Images []struct {
		Name    string `json:"name"`
		NewTag  string `json:"newTag"`
		NewName string `json:"newName"`
	} `json:"images"`
}

// manifests is one rendered variant (base, or base plus an overlay).
type manifests struct {
	sts       *appsv1.StatefulSet
	services  map[string]*corev1.Service
	configMap *corev1.ConfigMap
	pdb       *policyv1.PodDisruptionBudget
	secret    *corev1.Secret // the overlay's example, if any
}

func strict(t *testing.T, file string, doc []byte, into any) {
	t.Helper()
	if err := yaml.UnmarshalStrict(doc, into); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
}

// documents splits a multi-document YAML file.
func documents(data []byte) [][]byte {
	var out [][]byte
	for _, d := range regexp.MustCompile(`(?m)^---\s*$`).Split(string(data), -1) {
		if strings.TrimSpace(stripComments(d)) != "" {
			out = append(out, []byte(d))
		}
	}
	return out
}

func stripComments(s string) string {
	var b strings.Builder
	for _, line := range strings.Split(s, "\n") {
		if !strings.HasPrefix(strings.TrimSpace(line), "#") {
			b.WriteString(line + "\n")
		}
	}
	return b.String()
}

// loadResources decodes every resource a kustomization lists, by kind.
func loadResources(t *testing.T, dir string, m *manifests) kustomization {
	t.Helper()
	var k kustomization
	path := filepath.Join(dir, "kustomization.yaml")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	strict(t, path, data, &k)
	if k.APIVersion != "kustomize.config.k8s.io/v1beta1" || k.Kind != "Kustomization" {
		t.Fatalf("%s: %s %s is not a kustomization", path, k.APIVersion, k.Kind)
	}
	for _, res := range k.Resources {
		p := filepath.Join(dir, res)
		if st, err := os.Stat(p); err == nil && st.IsDir() {
			loadResources(t, p, m)
			continue
		}
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatalf("%s lists %s: %v", path, res, err)
		}
		for _, doc := range documents(data) {
			var head struct {
				Kind string `json:"kind"`
			}
			if err := yaml.Unmarshal(doc, &head); err != nil {
				t.Fatalf("%s: %v", p, err)
			}
			switch head.Kind {
			case "StatefulSet":
				m.sts = new(appsv1.StatefulSet)
				strict(t, p, doc, m.sts)
			case "Service":
				var s corev1.Service
				strict(t, p, doc, &s)
				m.services[s.Name] = &s
			case "ConfigMap":
				m.configMap = new(corev1.ConfigMap)
				strict(t, p, doc, m.configMap)
			case "PodDisruptionBudget":
				m.pdb = new(policyv1.PodDisruptionBudget)
				strict(t, p, doc, m.pdb)
			default:
				t.Fatalf("%s: unexpected kind %q", p, head.Kind)
			}
		}
	}
	// Patches are strategic merge patches, as kustomize applies them.
	for _, patch := range k.Patches {
		p := filepath.Join(dir, patch.Path)
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		var probe appsv1.StatefulSet
		strict(t, p, data, &probe) // the patch alone must be well-formed
		if probe.Kind != "StatefulSet" || probe.Name != m.sts.Name {
			t.Fatalf("%s patches %s %s, want StatefulSet %s", p, probe.Kind, probe.Name, m.sts.Name)
		}
		orig, err := yaml.Marshal(m.sts)
		if err != nil {
			t.Fatal(err)
		}
		origJSON, _ := yaml.YAMLToJSON(orig)
		patchJSON, err := yaml.YAMLToJSON(data)
		if err != nil {
			t.Fatal(err)
		}
		merged, err := strategicpatch.StrategicMergePatch(origJSON, patchJSON, appsv1.StatefulSet{})
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		m.sts = new(appsv1.StatefulSet)
		strict(t, p+" (merged)", merged, m.sts)
	}
	return k
}

func render(t *testing.T, overlay string) manifests {
	t.Helper()
	m := manifests{services: map[string]*corev1.Service{}}
	loadResources(t, filepath.Join(k8sDir, overlay), &m)
	if m.sts == nil || m.configMap == nil || m.pdb == nil {
		t.Fatalf("%s: want a StatefulSet, a ConfigMap and a PodDisruptionBudget", overlay)
	}
	if overlay != "base" { // every overlay builds on secure, and mounts its Secret
		p := filepath.Join(k8sDir, "secure", "secret-example.yaml")
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		m.secret = new(corev1.Secret)
		strict(t, p, data, m.secret)
	}
	return m
}

// podEnv is the container's environment as the kubelet builds it for pod
// ordinal 0: envFrom first, then env in order, $(VAR) expanded from what
// came before, field references filled in, secret keys from the example
// with stand-ins for what the example cannot hold.
func podEnv(t *testing.T, m manifests, c corev1.Container) map[string]string {
	t.Helper()
	env := map[string]string{}
	for _, from := range c.EnvFrom {
		if from.ConfigMapRef == nil || from.ConfigMapRef.Name != m.configMap.Name {
			t.Fatalf("envFrom %+v: want the ConfigMap %s", from, m.configMap.Name)
		}
		for k, v := range m.configMap.Data {
			env[k] = v
		}
	}
	ref := regexp.MustCompile(`\$\(([A-Za-z_][A-Za-z0-9_]*)\)`)
	for _, e := range c.Env {
		switch {
		case e.ValueFrom == nil:
			env[e.Name] = ref.ReplaceAllStringFunc(e.Value, func(s string) string {
				v, ok := env[s[2:len(s)-1]]
				if !ok {
					t.Errorf("env %s refers to %s, which is not defined before it", e.Name, s)
				}
				return v
			})
		case e.ValueFrom.FieldRef != nil:
			switch e.ValueFrom.FieldRef.FieldPath {
			case "metadata.name":
				env[e.Name] = m.sts.Name + "-0"
			case "metadata.namespace":
				env[e.Name] = "default"
			default:
				t.Fatalf("env %s: unexpected field %s", e.Name, e.ValueFrom.FieldRef.FieldPath)
			}
		case e.ValueFrom.SecretKeyRef != nil:
			sk := e.ValueFrom.SecretKeyRef
			if m.secret == nil || sk.Name != m.secret.Name {
				t.Fatalf("env %s reads Secret %s, which no example shows", e.Name, sk.Name)
			}
			if _, ok := m.secret.StringData[sk.Key]; !ok {
				t.Fatalf("env %s reads key %s, which the example Secret lacks", e.Name, sk.Key)
			}
			key := make([]byte, 32)
			_, _ = rand.Read(key)
			env[e.Name] = base64.StdEncoding.EncodeToString(key) // the example holds a placeholder
		default:
			t.Fatalf("env %s: unexpected source", e.Name)
		}
	}
	return env
}

func portOf(t *testing.T, addr string) int32 {
	t.Helper()
	_, p, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatalf("address %q: %v", addr, err)
	}
	n, _ := strconv.Atoi(p)
	return int32(n)
}

func containerPort(t *testing.T, c corev1.Container, name string, proto corev1.Protocol) int32 {
	t.Helper()
	for _, p := range c.Ports {
		pp := p.Protocol
		if pp == "" {
			pp = corev1.ProtocolTCP
		}
		if p.Name == name && pp == proto {
			return p.ContainerPort
		}
	}
	t.Fatalf("container has no %s port named %s", proto, name)
	return 0
}

func TestKubernetesManifests(t *testing.T) {
	for _, overlay := range []string{"base", "secure", "client-certs"} {
		t.Run(overlay, func(t *testing.T) { checkManifests(t, overlay) })
	}
}

func checkManifests(t *testing.T, overlay string) {
	m := render(t, overlay)
	sts := m.sts
	spec := sts.Spec.Template.Spec
	if len(spec.Containers) != 1 {
		t.Fatalf("want one container, got %d", len(spec.Containers))
	}
	c := spec.Containers[0]

	// Flags: every KVNODE_* variable is a flag, and the whole environment
	// makes a configuration this program accepts.
	env := podEnv(t, m, c)
	known := map[string]bool{}
	nodeflags.FlagSet(&node.Config{}, io.Discard).VisitAll(func(f *flag.Flag) { known[nodeflags.EnvName(f.Name)] = true })
	var list []string
	for k, v := range env {
		if strings.HasPrefix(k, nodeflags.EnvPrefix) {
			if !known[k] {
				t.Errorf("%s is not the variable of any flag", k)
			}
			list = append(list, k+"="+v)
		}
	}
	cfg, unknown, err := nodeflags.Parse(nil, list, io.Discard)
	if err != nil {
		t.Fatalf("the pod's environment is refused: %v", err)
	}
	if len(unknown) > 0 {
		t.Errorf("unknown variables: %v", unknown)
	}
	if spec.EnableServiceLinks == nil || *spec.EnableServiceLinks {
		t.Errorf("enableServiceLinks must be false: a service named kvnode would inject KVNODE_SERVICE_HOST and friends")
	}

	// Identity: the pod name is the member name; bootstrap-expect is the
	// replica count; Parallel start, so the first bootstrap can happen.
	if cfg.Name != sts.Name+"-0" {
		t.Errorf("member name %q, want the pod name %s-0", cfg.Name, sts.Name)
	}
	if sts.Spec.Replicas == nil {
		t.Fatalf("replicas is not set")
	}
	if int(*sts.Spec.Replicas) != cfg.BootstrapExpect {
		t.Errorf("replicas %d, bootstrap-expect %d: they must be equal", *sts.Spec.Replicas, cfg.BootstrapExpect)
	}
	if *sts.Spec.Replicas != 3 {
		t.Errorf("replicas %d, want 3", *sts.Spec.Replicas)
	}
	if sts.Spec.PodManagementPolicy != appsv1.ParallelPodManagement {
		t.Errorf("podManagementPolicy %q, want Parallel", sts.Spec.PodManagementPolicy)
	}

	// Labels and selectors agree everywhere.
	podLabels := labels.Set(sts.Spec.Template.Labels)
	if !labels.SelectorFromSet(sts.Spec.Selector.MatchLabels).Matches(podLabels) {
		t.Errorf("the StatefulSet's selector does not match its pods")
	}
	if !labels.SelectorFromSet(m.pdb.Spec.Selector.MatchLabels).Matches(podLabels) {
		t.Errorf("the PodDisruptionBudget does not select the pods")
	}
	if m.pdb.Spec.MaxUnavailable == nil || *m.pdb.Spec.MaxUnavailable != intstr.FromInt32(1) {
		t.Errorf("PodDisruptionBudget maxUnavailable %v, want 1", m.pdb.Spec.MaxUnavailable)
	}
	aa := spec.Affinity
	if aa == nil || aa.PodAntiAffinity == nil || len(aa.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution)+len(aa.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution) == 0 {
		t.Fatalf("no pod anti-affinity")
	}
	for _, term := range aa.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution {
		if !labels.SelectorFromSet(term.PodAffinityTerm.LabelSelector.MatchLabels).Matches(podLabels) {
			t.Errorf("the anti-affinity term does not select the pods")
		}
	}

	// Ports: the container's match the flags, the services' match the
	// container's.
	httpPort := containerPort(t, c, "http", corev1.ProtocolTCP)
	if httpPort != portOf(t, cfg.HTTPAddr) {
		t.Errorf("container port http %d, --http-addr %s", httpPort, cfg.HTTPAddr)
	}
	if p := containerPort(t, c, "internal", corev1.ProtocolTCP); p != portOf(t, cfg.InternalAddr) {
		t.Errorf("container port internal %d, --internal-addr %s", p, cfg.InternalAddr)
	}
	gossip := portOf(t, cfg.GossipAddr)
	if containerPort(t, c, "gossip-tcp", corev1.ProtocolTCP) != gossip || containerPort(t, c, "gossip-udp", corev1.ProtocolUDP) != gossip {
		t.Errorf("gossip container ports do not match --gossip-addr %s (TCP and UDP)", cfg.GossipAddr)
	}
	peers := m.services[sts.Spec.ServiceName]
	if peers == nil {
		t.Fatalf("serviceName %q is not one of the services", sts.Spec.ServiceName)
	}
	if peers.Spec.ClusterIP != corev1.ClusterIPNone || !peers.Spec.PublishNotReadyAddresses {
		t.Errorf("%s must be headless with publishNotReadyAddresses", peers.Name)
	}
	for name, svc := range m.services {
		if !labels.SelectorFromSet(svc.Spec.Selector).Matches(podLabels) {
			t.Errorf("service %s does not select the pods", name)
		}
		for _, sp := range svc.Spec.Ports {
			proto := sp.Protocol
			if proto == "" {
				proto = corev1.ProtocolTCP
			}
			if sp.TargetPort.Type != intstr.String {
				t.Errorf("service %s port %s: target the container port by name", name, sp.Name)
				continue
			}
			if cp := containerPort(t, c, sp.TargetPort.StrVal, proto); cp != sp.Port {
				t.Errorf("service %s port %s is %d, the container's %d", name, sp.Name, sp.Port, cp)
			}
		}
	}
	client := m.services[sts.Name]
	if client == nil || client.Spec.ClusterIP == corev1.ClusterIPNone || client.Spec.PublishNotReadyAddresses {
		t.Errorf("want a client service %s that only routes to ready pods", sts.Name)
	}

	// Join: one name, the headless service's, on the gossip port.
	if len(cfg.Join) != 1 {
		t.Fatalf("--join %v: want the headless service's name", cfg.Join)
	}
	host, port, err := net.SplitHostPort(cfg.Join[0])
	if err != nil {
		host, port = cfg.Join[0], "7946"
	}
	if first, _, _ := strings.Cut(host, "."); first != peers.Name || port != strconv.Itoa(int(gossip)) {
		t.Errorf("--join %s: want %s on the gossip port %d", cfg.Join[0], peers.Name, gossip)
	}
	// REST advertised under the pod's stable DNS name, in the right scheme.
	scheme := "http"
	if cfg.TLSCert != "" {
		scheme = "https"
	}
	if want := fmt.Sprintf("%s://%s-0.%s.default.svc:%d", scheme, sts.Name, peers.Name, httpPort); cfg.AdvertiseHTTP != want {
		t.Errorf("--advertise-http %s, want %s", cfg.AdvertiseHTTP, want)
	}

	// Probes: readiness /readyz and liveness /livez, on the REST port in
	// the scheme the node serves; under --client-cert-auth, whose handshake
	// the kubelet (no client certificate) cannot pass, on --metrics-addr's
	// plain listener. That the paths answer there is checked against a
	// running node in TestProbePathsServe.
	probePort, probeScheme := "http", scheme
	if cfg.ClientCertAuth {
		if cfg.MetricsAddr == "" {
			t.Fatalf("--client-cert-auth without --metrics-addr: the kubelet's probes, which present no client certificate, would be refused")
		}
		probePort, probeScheme = "metrics", "http"
		if p := containerPort(t, c, "metrics", corev1.ProtocolTCP); p != portOf(t, cfg.MetricsAddr) {
			t.Errorf("container port metrics %d, --metrics-addr %s", p, cfg.MetricsAddr)
		}
	}
	for _, pr := range []struct {
		name  string
		probe *corev1.Probe
		path  string
	}{{"readiness", c.ReadinessProbe, "/readyz"}, {"liveness", c.LivenessProbe, "/livez"}} {
		if pr.probe == nil || pr.probe.HTTPGet == nil {
			t.Errorf("no HTTP %s probe", pr.name)
			continue
		}
		g := pr.probe.HTTPGet
		if g.Path != pr.path || g.Port != intstr.FromString(probePort) || !strings.EqualFold(string(g.Scheme), probeScheme) && !(g.Scheme == "" && probeScheme == "http") {
			t.Errorf("%s probe %s %s on %s, want %s %s on %s", pr.name, g.Scheme, g.Path, g.Port.String(), probeScheme, pr.path, probePort)
		}
	}

	// Storage: the claim is mounted where the node keeps its data.
	if len(sts.Spec.VolumeClaimTemplates) != 1 {
		t.Fatalf("want one volumeClaimTemplate")
	}
	claim := sts.Spec.VolumeClaimTemplates[0].Name
	// A member scaled away has left the cluster; its data is of no use to
	// a later member of the same name, which would start from stale state.
	if r := sts.Spec.PersistentVolumeClaimRetentionPolicy; r == nil || r.WhenScaled != appsv1.DeletePersistentVolumeClaimRetentionPolicyType || r.WhenDeleted != appsv1.RetainPersistentVolumeClaimRetentionPolicyType {
		t.Errorf("persistentVolumeClaimRetentionPolicy %+v, want whenScaled Delete, whenDeleted Retain", r)
	}
	mounted := false
	for _, vm := range c.VolumeMounts {
		if vm.Name == claim && filepath.Clean(vm.MountPath) == filepath.Clean(cfg.DataDir) {
			mounted = true
		}
	}
	if !mounted {
		t.Errorf("the claim %s is not mounted at --data-dir %s", claim, cfg.DataDir)
	}

	// Shutdown: the grace period covers the preStop pause and the node's
	// own shutdown timeout.
	var pause time.Duration
	if c.Lifecycle == nil || c.Lifecycle.PreStop == nil || c.Lifecycle.PreStop.Sleep == nil {
		t.Errorf("no preStop sleep")
	} else {
		pause = time.Duration(c.Lifecycle.PreStop.Sleep.Seconds) * time.Second
	}
	if spec.TerminationGracePeriodSeconds == nil {
		t.Fatalf("no terminationGracePeriodSeconds")
	}
	if grace := time.Duration(*spec.TerminationGracePeriodSeconds) * time.Second; grace < pause+cfg.ShutdownTimeout+5*time.Second {
		t.Errorf("terminationGracePeriodSeconds %v < preStop %v + --shutdown-timeout %v + 5s", grace, pause, cfg.ShutdownTimeout)
	}
	if c.Resources.Requests.Cpu().IsZero() || c.Resources.Requests.Memory().IsZero() {
		t.Errorf("no CPU or memory request")
	}

	// The image's user owns /data; the pod runs as it.
	dockerfile, err := os.ReadFile("../../deploy/Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	user := regexp.MustCompile(`(?m)^USER (\d+):(\d+)`).FindSubmatch(dockerfile)
	if user == nil {
		t.Fatalf("the Dockerfile sets no numeric USER")
	}
	sc := spec.SecurityContext
	if sc == nil || sc.RunAsUser == nil || strconv.FormatInt(*sc.RunAsUser, 10) != string(user[1]) || sc.FSGroup == nil || strconv.FormatInt(*sc.FSGroup, 10) != string(user[2]) {
		t.Errorf("the pod's runAsUser/fsGroup must be the image's USER %s:%s", user[1], user[2])
	}

	if overlay != "base" {
		checkSecure(t, m, c, cfg)
	}
}

// checkSecure: every file the flags name is in the mounted Secret, whose
// example has the key, and the example's security file parses.
func checkSecure(t *testing.T, m manifests, c corev1.Container, cfg node.Config) {
	mounts := map[string]string{} // mount path → Secret name
	for _, v := range m.sts.Spec.Template.Spec.Volumes {
		if v.Secret == nil {
			continue
		}
		for _, vm := range c.VolumeMounts {
			if vm.Name == v.Name {
				mounts[filepath.Clean(vm.MountPath)] = v.Secret.SecretName
			}
		}
	}
	files := map[string]string{"--security-file": cfg.SecurityFile, "--tls-cert": cfg.TLSCert, "--tls-key": cfg.TLSKey, "--tls-ca": cfg.TLSCA}
	if cfg.ClientCertAuth {
		files["--client-ca"] = cfg.ClientCA
	}
	for flag, path := range files {
		if path == "" {
			t.Errorf("%s is not set", flag)
			continue
		}
		secret, ok := mounts[filepath.Dir(path)]
		if !ok || secret != m.secret.Name {
			t.Errorf("%s %s is not in the mounted Secret %s", flag, path, m.secret.Name)
			continue
		}
		if _, ok := m.secret.StringData[filepath.Base(path)]; !ok {
			t.Errorf("%s %s: the example Secret has no key %s", flag, path, filepath.Base(path))
		}
	}
	if cfg.GossipKey == "" {
		t.Errorf("--gossip-key is not set")
	}
	hash, err := auth.HashPassword([]byte("example"))
	if err != nil {
		t.Fatal(err)
	}
	file := strings.ReplaceAll(m.secret.StringData["security.json"], "<bcrypt hash from kvnode hash-password>", hash)
	if _, err := auth.Parse(bytes.NewReader([]byte(file))); err != nil {
		t.Errorf("the example security.json: %v", err)
	}
}

// TestProbePathsServe: the probes of each variant answer 200 without
// credentials or a client certificate, as the kubelet sends them, on a
// running, ready node configured as the variant's (a typo would be a 404,
// a probe on a port that asks for a client certificate a refused
// handshake, and the pods never ready).
func TestProbePathsServe(t *testing.T) {
	dir := t.TempDir()
	ca := nodetest.NewCA(t, "probe CA")
	caPath := filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(caPath, ca.PEM, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, overlay := range []string{"base", "client-certs"} {
		t.Run(overlay, func(t *testing.T) {
			m := render(t, overlay)
			c := m.sts.Spec.Template.Spec.Containers[0]
			cfg, _, err := nodeflags.Parse(nil, envList(podEnv(t, m, c)), io.Discard)
			if err != nil {
				t.Fatal(err)
			}
			ip := nodetest.New(t)
			ip.Tune = func(name string, nc *node.Config) {
				if cfg.ClientCertAuth {
					nc.TLSCert, nc.TLSKey = ca.Issue(t, dir, name)
					nc.TLSCA, nc.ClientCertAuth, nc.MetricsAddr = caPath, true, "127.0.0.1:0"
				}
			}
			n := ip.Start("solo", 1)
			// The kubelet's GET: plain or TLS without verification, and no
			// client certificate.
			kubelet := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
			for _, probe := range []*corev1.Probe{c.ReadinessProbe, c.LivenessProbe} {
				g := probe.HTTPGet
				addr := n.HTTPAddr()
				if g.Port == intstr.FromString("metrics") {
					addr = n.MetricsAddr()
				}
				url := strings.ToLower(string(g.Scheme)) + "://" + addr + g.Path
				if g.Scheme == "" {
					url = "http://" + addr + g.Path
				}
				waitfor.Cond(t, 20*time.Second, "GET "+url+" to answer 200", func() bool {
					resp, err := kubelet.Get(url)
					if err != nil {
						return false
					}
					resp.Body.Close()
					return resp.StatusCode == 200
				})
				if cfg.ClientCertAuth {
					// Why the probes are not on the REST port.
					if resp, err := kubelet.Get("https://" + n.HTTPAddr() + g.Path); err == nil {
						resp.Body.Close()
						t.Errorf("GET %s on the REST port without a client certificate answered %d, want the handshake refused", g.Path, resp.StatusCode)
					}
				}
			}
		})
	}
}

// envList is an environment as KEY=VALUE lines, kvnode's variables only.
func envList(env map[string]string) []string {
	var out []string
	for k, v := range env {
		if strings.HasPrefix(k, nodeflags.EnvPrefix) {
			out = append(out, k+"="+v)
		}
	}
	return out
}
