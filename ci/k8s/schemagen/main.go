// Command schemagen writes the JSON schemas kubeconform validates
// Kubernetes manifests against, from the API's OpenAPI (swagger 2.0)
// document that the k8s.io/kubernetes module carries
// (api/openapi-spec/swagger.json), so that ci/k8s/validate.sh needs
// nothing but the Go module proxy.
//
// Usage:
//
//	go run ./ci/k8s/schemagen -swagger FILE -out DIR KIND...
//
// For each KIND (Job, PersistentVolumeClaim, …) it writes every
// group/version of it as DIR/<kind>-<group>-<version>.json
// (<kind>-<version>.json for the core group), the name kubeconform's
// schema-location template {{ .ResourceKind }}{{ .KindSuffix }}.json
// asks for. The schemas are made as kubeconform's own (yannh's
// openapi2jsonschema, "standalone-strict"): every $ref is expanded in
// place, an object with properties takes no others, apiVersion and kind
// are pinned to the group/version and kind, and IntOrString and Quantity
// take a string or a number.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

func main() {
	swagger := flag.String("swagger", "", "the API's swagger.json")
	out := flag.String("out", "", "directory to write the schemas into")
	flag.Parse()
	if *swagger == "" || *out == "" || flag.NArg() == 0 {
		fmt.Fprintln(os.Stderr, "usage: schemagen -swagger FILE -out DIR KIND...")
		os.Exit(2)
	}
	if err := run(*swagger, *out, flag.Args()); err != nil {
		fmt.Fprintln(os.Stderr, "schemagen:", err)
		os.Exit(1)
	}
}

type gvk struct{ Group, Version, Kind string }

func run(swagger, out string, kinds []string) error {
	data, err := os.ReadFile(swagger)
	if err != nil {
		return err
	}
	var doc struct {
		Definitions map[string]map[string]any `json:"definitions"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		return fmt.Errorf("%s: %w", swagger, err)
	}
	want := map[string]bool{}
	for _, k := range kinds {
		want[strings.ToLower(k)] = true
	}
	found := map[string]bool{}
	for name, def := range doc.Definitions {
		for _, g := range groupVersionKinds(def) {
			if !want[strings.ToLower(g.Kind)] {
				continue
			}
			found[strings.ToLower(g.Kind)] = true
			schema := expand(def, doc.Definitions, map[string]bool{name: true}).(map[string]any)
			pin(schema, "apiVersion", apiVersion(g))
			pin(schema, "kind", g.Kind)
			file := strings.ToLower(g.Kind)
			if g.Group != "" {
				file += "-" + strings.ToLower(strings.Split(g.Group, ".")[0])
			}
			file += "-" + strings.ToLower(g.Version) + ".json"
			b, err := json.Marshal(schema)
			if err != nil {
				return err
			}
			if err := os.WriteFile(filepath.Join(out, file), b, 0o644); err != nil {
				return err
			}
		}
	}
	for _, k := range kinds {
		if !found[strings.ToLower(k)] {
			return fmt.Errorf("%s: no kind %q", swagger, k)
		}
	}
	return nil
}

func apiVersion(g gvk) string {
	if g.Group == "" {
		return g.Version
	}
	return g.Group + "/" + g.Version
}

func groupVersionKinds(def map[string]any) []gvk {
	list, _ := def["x-kubernetes-group-version-kind"].([]any)
	var out []gvk
	for _, e := range list {
		m, _ := e.(map[string]any)
		g, _ := m["group"].(string)
		v, _ := m["version"].(string)
		k, _ := m["kind"].(string)
		out = append(out, gvk{g, v, k})
	}
	return out
}

// pin restricts a top-level string property to one value, as
// openapi2jsonschema does for apiVersion and kind.
func pin(schema map[string]any, prop, value string) {
	props, _ := schema["properties"].(map[string]any)
	if p, ok := props[prop].(map[string]any); ok {
		p["enum"] = []any{value}
	}
}

// expand returns v with every "#/definitions/…" reference replaced by the
// definition, expanded in turn; a reference back into a definition being
// expanded (a recursive type) becomes an open schema. Objects with
// properties take no others (strict), and the two types that take either
// a string or a number say so.
func expand(v any, defs map[string]map[string]any, open map[string]bool) any {
	switch v := v.(type) {
	case map[string]any:
		if ref, ok := v["$ref"].(string); ok {
			name := strings.TrimPrefix(ref, "#/definitions/")
			switch name {
			case "io.k8s.apimachinery.pkg.util.intstr.IntOrString":
				return map[string]any{"oneOf": []any{map[string]any{"type": "string"}, map[string]any{"type": "integer"}}}
			case "io.k8s.apimachinery.pkg.api.resource.Quantity":
				return map[string]any{"oneOf": []any{map[string]any{"type": "string"}, map[string]any{"type": "number"}}}
			}
			def, ok := defs[name]
			if !ok || open[name] {
				return map[string]any{}
			}
			open[name] = true
			defer delete(open, name)
			out := expand(def, defs, open).(map[string]any)
			if d, ok := v["description"]; ok {
				out["description"] = d
			}
			return out
		}
		out := make(map[string]any, len(v)+1)
		for k, e := range v {
			if k == "properties" {
				props := map[string]any{}
				for name, p := range e.(map[string]any) {
					props[name] = expand(p, defs, open)
				}
				out[k] = props
				continue
			}
			out[k] = expand(e, defs, open)
		}
		if _, ok := out["properties"]; ok {
			if _, set := out["additionalProperties"]; !set {
				out["additionalProperties"] = false
			}
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = expand(e, defs, open)
		}
		return out
	}
	return v
}
