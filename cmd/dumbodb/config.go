package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Settings from a mongod-style YAML config file (--config, -f) and from
// the environment (docs/operations.md, "Configuration"): each setting is
// a flag, so the three sources meet in one flag set. Precedence: the
// command line, then the file, then the environment, then the defaults.

// configFlags maps mongod's config file keys to the flags they set.
var configFlags = map[string]string{
	"net.port":                   "port",
	"net.bindIp":                 "bind_ip",
	"net.bindIpAll":              "bind_ip_all",
	"net.maxIncomingConnections": "maxConns",
	"net.tls.mode":               "tlsMode",
	"net.tls.certificateKeyFile": "tlsCertificateKeyFile",
	"net.tls.CAFile":             "tlsCAFile",
	"net.tls.allowConnectionsWithoutCertificates": "tlsAllowConnectionsWithoutCertificates",
	"storage.dbPath":                       "dbpath",
	"storage.syncPeriodSecs":               "syncdelay",
	"systemLog.path":                       "logpath",
	"systemLog.logAppend":                  "logappend",
	"systemLog.logRotate":                  "logRotate",
	"systemLog.quiet":                      "quiet",
	"systemLog.verbosity":                  "verbosity",
	"processManagement.pidFilePath":        "pidfilepath",
	"processManagement.fork":               "fork",
	"operationProfiling.slowOpThresholdMs": "slowms",
	"operationProfiling.slowOpSampleRate":  "slowOpSampleRate",
	"operationProfiling.filter":            "profileFilter",
	"security.authorization":               "auth",
	"security.javascriptEnabled":           "noscripting",
	"replication.replSetName":              "replSet",
}

// configSpecial are the keys a function reads: their values need
// translating, or only some values are supported.
var configSpecial = map[string]func(v string, set func(flag, value string) error) error{
	"security.authorization": func(v string, set func(string, string) error) error {
		switch v {
		case "enabled":
			return set("auth", "true")
		case "disabled":
			return set("auth", "false")
		}
		return fmt.Errorf("must be enabled or disabled, not %q", v)
	},
	"security.javascriptEnabled": func(v string, set func(string, string) error) error {
		on, err := strconv.ParseBool(v)
		if err != nil {
			return err
		}
		return set("noscripting", strconv.FormatBool(!on))
	},
	"systemLog.destination": func(v string, _ func(string, string) error) error {
		if v != "file" {
			return fmt.Errorf("%q is not supported: the log goes to standard output, or to systemLog.path with destination file", v)
		}
		return nil
	},
	"operationProfiling.mode": func(v string, set func(string, string) error) error {
		level, ok := map[string]string{"off": "0", "slowOp": "1", "all": "2"}[v]
		if !ok {
			return fmt.Errorf("must be off, slowOp or all, not %q", v)
		}
		return set("profile", level)
	},
	"net.unixDomainSocket.enabled":    func(string, func(string, string) error) error { return nil }, // read with pathPrefix
	"net.unixDomainSocket.pathPrefix": func(string, func(string, string) error) error { return nil },
}

// loadConfigFile reads the YAML file at path and sets, in fs, each flag
// its keys name that the command line did not set (cmdline).
func loadConfigFile(fs *flag.FlagSet, path string, cmdline map[string]bool) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("--config: %w", err)
	}
	var root map[string]any
	if err := yaml.Unmarshal(data, &root); err != nil {
		return fmt.Errorf("--config %s: %w", path, err)
	}
	flat := map[string]string{}
	if err := flatten("", root, flat); err != nil {
		return fmt.Errorf("--config %s: %w", path, err)
	}
	set := func(name, value string) error {
		if cmdline[name] || cmdline[flagAliases[name]] {
			return nil
		}
		return fs.Set(name, value)
	}
	for _, key := range slices.Sorted(maps.Keys(flat)) {
		if err := applyConfigKey(fs, key, flat, set); err != nil {
			return fmt.Errorf("--config %s: %s: %w", path, key, err)
		}
	}
	return nil
}

// applyConfigKey applies one flattened key.
func applyConfigKey(fs *flag.FlagSet, key string, flat map[string]string, set func(string, string) error) error {
	v := flat[key]
	switch {
	case configSpecial[key] != nil:
		if err := configSpecial[key](v, set); err != nil {
			return err
		}
		if key == "net.unixDomainSocket.enabled" && v == "true" {
			prefix := flat["net.unixDomainSocket.pathPrefix"]
			if prefix == "" {
				prefix = "/tmp"
			}
			port := fs.Lookup("port").Value.String()
			return set("unixSocket", filepath.Join(prefix, "mongodb-"+port+".sock"))
		}
		return nil
	case configFlags[key] != "":
		return set(configFlags[key], v)
	case strings.HasPrefix(key, "systemLog.component.") && strings.HasSuffix(key, ".verbosity"):
		name := strings.TrimSuffix(strings.TrimPrefix(key, "systemLog.component."), ".verbosity")
		return set("componentVerbosity", name+"="+v)
	case strings.HasPrefix(key, "setParameter."):
		return set("setParameter", strings.TrimPrefix(key, "setParameter.")+"="+v)
	case strings.HasPrefix(key, "dumbodb."):
		name := strings.TrimPrefix(key, "dumbodb.")
		if fs.Lookup(name) == nil || name == "config" || name == "f" {
			return fmt.Errorf("no setting %q in the dumbodb section (it takes the flags' names)", name)
		}
		return set(name, v)
	}
	return fmt.Errorf("unknown or unsupported setting")
}

// flatten turns nested maps into dotted keys and scalar strings.
func flatten(prefix string, v any, out map[string]string) error {
	switch t := v.(type) {
	case map[string]any:
		for k, sub := range t {
			key := k
			if prefix != "" {
				key = prefix + "." + k
			}
			if err := flatten(key, sub, out); err != nil {
				return err
			}
		}
	case []any:
		return fmt.Errorf("%s: a list is not a setting's value", prefix)
	case nil:
		out[prefix] = ""
	default:
		out[prefix] = fmt.Sprint(t)
	}
	return nil
}

// envPrefix prefixes the environment variables that set flags:
// DUMBODB_<FLAG>, the flag's name upper-cased with "-" as "_"
// (DUMBODB_CACHESIZEMB, DUMBODB_DATA_DIR).
const envPrefix = "DUMBODB_"

// flagAliases are flags that set the same setting: one set at a higher
// rank leaves the other alone at a lower one.
var flagAliases = map[string]string{"dbpath": "data-dir", "data-dir": "dbpath", "f": "config", "config": "f",
	"bind_ip": "bind_ip_all", "bind_ip_all": "bind_ip"}

// loadEnvironment sets each flag neither the command line nor the
// config file set (given) from its environment variable, if any.
func loadEnvironment(fs *flag.FlagSet, given map[string]bool) error {
	var err error
	fs.VisitAll(func(f *flag.Flag) {
		if err != nil || given[f.Name] || given[flagAliases[f.Name]] || f.Name == "config" || f.Name == "f" || f.Name == "setParameter" {
			return
		}
		name := envPrefix + strings.ToUpper(strings.ReplaceAll(f.Name, "-", "_"))
		if v, ok := os.LookupEnv(name); ok {
			if e := fs.Set(f.Name, v); e != nil {
				err = fmt.Errorf("%s: %w", name, e)
			}
		}
	})
	return err
}

// verbosityFlag is -v, -vv, ... -vvvvv: mongod's verbosity, as a flag
// without a value.
type verbosityFlag struct {
	level int
	dst   *int
}

func (v verbosityFlag) IsBoolFlag() bool { return true }
func (v verbosityFlag) String() string   { return "" }
func (v verbosityFlag) Set(s string) error {
	if on, err := strconv.ParseBool(s); err != nil || on {
		*v.dst = max(*v.dst, v.level)
	}
	return nil
}

// loadSettings applies the config file (--config) and then the
// environment to the flags the command line did not set, and adds to
// set every flag set by any of them.
func loadSettings(fs *flag.FlagSet, o *serverFlags, set map[string]bool) error {
	for i := 1; i <= 5; i++ {
		if set[strings.Repeat("v", i)] {
			set["verbosity"] = true // -v... on the command line wins over the file's verbosity
		}
	}
	if o.config == "" { // the file from the environment (a container's healthcheck reads it too)
		o.config = os.Getenv(envPrefix + "CONFIG")
	}
	if o.config != "" {
		if err := loadConfigFile(fs, o.config, set); err != nil {
			return err
		}
	}
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	if err := loadEnvironment(fs, given); err != nil {
		return err
	}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	switch {
	case o.logRotate != "rename" && o.logRotate != "reopen":
		return fmt.Errorf("--logRotate must be rename or reopen, not %q", o.logRotate)
	case o.verbosity < 0 || o.verbosity > 5:
		return fmt.Errorf("--verbosity must be 0 to 5, not %d", o.verbosity)
	case o.sampleRate < 0 || o.sampleRate > 1:
		return fmt.Errorf("--slowOpSampleRate must be 0 to 1, not %v", o.sampleRate)
	case o.profile < 0 || o.profile > 2:
		return fmt.Errorf("--profile must be 0, 1 or 2, not %d", o.profile)
	case o.profileFilter != "" && !json.Valid([]byte(o.profileFilter)):
		return fmt.Errorf("--profileFilter must be a document in Extended JSON, not %q", o.profileFilter)
	}
	for _, p := range o.setParams {
		name, v, ok := strings.Cut(p, "=")
		if !ok || !isWhole(v) && name != authMechanismsParameter {
			return fmt.Errorf("--setParameter %q: give name=value, the value a whole number", p)
		}
	}
	return nil
}

func isWhole(s string) bool {
	_, err := strconv.ParseInt(s, 10, 64)
	return err == nil
}
