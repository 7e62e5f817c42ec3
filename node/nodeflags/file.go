package nodeflags

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/kvnode/kvnode/node"
)

// ConfigFlag is the flag (and, as KVNODE_CONFIG, the variable) naming a
// YAML file of flag values.
const ConfigFlag = "config"

// configFile is the file --config names, as the environment and the
// command line set it (the command line wins). It is needed before either
// is applied, because the file's values lie below both.
func configFile(args, env []string) string {
	scratch := node.Default()
	fs := FlagSet(&scratch, io.Discard)
	for _, kv := range env {
		if k, v, ok := strings.Cut(kv, "="); ok && k == EnvName(ConfigFlag) {
			_ = fs.Set(ConfigFlag, v)
		}
	}
	// A bad command line is the real parse's to report, with the same error.
	_ = fs.Parse(args)
	return fs.Lookup(ConfigFlag).Value.String()
}

// applyFile sets fs's flags from the YAML file at path: a mapping from
// flag names to values, where a value is a scalar (http-addr: :9000) or,
// for the list flags, a sequence (join: [a, b]) or the same comma list the
// flag takes. The file is strict: a key that is no flag, a key given twice
// or a value that does not parse is an error naming the key and its line,
// because a setting that is silently ignored is worse than none.
func applyFile(fs *flag.FlagSet, path string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("config file: %w", err)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return fmt.Errorf("config file %s: %w", path, err)
	}
	if len(doc.Content) == 0 {
		return nil // an empty file sets nothing
	}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode {
		return fmt.Errorf("config file %s:%d: want a mapping of flag names to values", path, root.Line)
	}
	seen := map[string]bool{}
	for i := 0; i+1 < len(root.Content); i += 2 {
		k, v := root.Content[i], root.Content[i+1]
		name := k.Value
		at := fmt.Sprintf("config file %s:%d", path, k.Line)
		switch {
		case k.Kind != yaml.ScalarNode:
			return fmt.Errorf("%s: a key must be a flag name", at)
		case name == ConfigFlag:
			return fmt.Errorf("%s: %q cannot be set in a config file", at, name)
		case fs.Lookup(name) == nil:
			return fmt.Errorf("%s: unknown key %q: no flag of kvnode has that name (see kvnode serve --help)", at, name)
		case seen[name]:
			return fmt.Errorf("%s: key %q is given twice", at, name)
		}
		seen[name] = true
		value, err := flagText(v)
		if err != nil {
			return fmt.Errorf("%s: %s: %w", at, name, err)
		}
		if err := fs.Set(name, value); err != nil {
			return fmt.Errorf("%s: %s: invalid value %q: %w", at, name, value, err)
		}
	}
	return nil
}

// flagText is a YAML value as the flag's text: a scalar as written, a
// sequence of scalars joined with commas (the list flags' syntax), null
// as empty.
func flagText(v *yaml.Node) (string, error) {
	if v.Kind == yaml.AliasNode {
		v = v.Alias
	}
	switch v.Kind {
	case yaml.ScalarNode:
		if v.Tag == "!!null" {
			return "", nil
		}
		return v.Value, nil
	case yaml.SequenceNode:
		parts := make([]string, 0, len(v.Content))
		for _, item := range v.Content {
			if item.Kind != yaml.ScalarNode {
				return "", errors.New("a list may hold only plain values")
			}
			parts = append(parts, item.Value)
		}
		return strings.Join(parts, ","), nil
	}
	return "", errors.New("want a value or a list of values, not a mapping")
}
