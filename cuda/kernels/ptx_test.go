package kernels

import (
	"bytes"
	"fmt"
	"strings"
)

// Entries returns the entry points of a PTX module and the type of each of
// their parameters (".u64", ".u32", ".f32", ...), in order, read from the
// ".entry name(.param .type name_param_0, ...)" declarations. An executor can
// check a Launch's arguments against them: a Buf or a uint64 is ".u64", an
// int32 or a uint32 ".u32" or ".s32", a float32 ".f32".
func Entries(ptx []byte) (map[string][]string, error) {
	entries := map[string][]string{}
	rest := ptx
	for {
		i := bytes.Index(rest, []byte(".entry "))
		if i < 0 {
			return entries, nil
		}
		rest = rest[i+len(".entry "):]
		open := bytes.IndexByte(rest, '(')
		end := bytes.IndexByte(rest, ')')
		if open < 0 || end < open {
			return nil, fmt.Errorf("kernels: ptx: an .entry without a parameter list")
		}
		name := string(bytes.TrimSpace(rest[:open]))
		if name == "" || strings.ContainsAny(name, " \t\n{};") {
			return nil, fmt.Errorf("kernels: ptx: bad entry name %q", name)
		}
		if _, dup := entries[name]; dup {
			return nil, fmt.Errorf("kernels: ptx: entry %s declared twice", name)
		}
		types := []string{}
		for _, p := range strings.Split(string(rest[open+1:end]), ",") {
			f := strings.Fields(p)
			if len(f) == 0 && len(types) == 0 {
				continue // no parameters
			}
			// .param .type [.ptr .space .align n] name
			if len(f) < 3 || f[0] != ".param" || !strings.HasPrefix(f[1], ".") {
				return nil, fmt.Errorf("kernels: ptx: entry %s: bad parameter %q", name, strings.TrimSpace(p))
			}
			types = append(types, f[1])
		}
		entries[name] = types
		rest = rest[end+1:]
	}
}
