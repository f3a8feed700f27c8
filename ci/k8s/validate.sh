#!/usr/bin/env bash
# ci/k8s/validate.sh [MANIFEST...] — validates the Kubernetes manifests
# (default ci/k8s/*.yaml) against the Kubernetes API schema with
# kubeconform, strictly (no unknown fields, no duplicate keys), with no
# cluster and nothing but the Go module proxy:
#   - the schema comes from the API's OpenAPI document in the
#     k8s.io/kubernetes module at $K8S_VERSION (api/openapi-spec/
#     swagger.json; `go mod download`, 18 MB, cached after the first run),
#     turned into kubeconform's standalone-strict JSON schemas for the
#     kinds the manifests use by ci/k8s/schemagen;
#   - kubeconform runs as `go run github.com/yannh/kubeconform/cmd/kubeconform@$KUBECONFORM`.
set -euo pipefail
cd "$(dirname "$0")/../.."
K8S_VERSION=${K8S_VERSION:-v1.34.1}
KUBECONFORM=${KUBECONFORM:-v0.7.0}
[ $# -gt 0 ] || set -- ci/k8s/*.yaml
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
dir=$(cd "$tmp" && GOFLAGS=-mod=mod go mod download -json "k8s.io/kubernetes@$K8S_VERSION" |
  sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
[ -f "$dir/api/openapi-spec/swagger.json" ] || { echo "ci/k8s/validate.sh: no swagger.json in k8s.io/kubernetes@$K8S_VERSION" >&2; exit 1; }
mapfile -t kinds < <(sed -n 's/^kind:[[:space:]]*\([A-Za-z]*\).*/\1/p' "$@" ci/k8s/testdata/invalid-job.yaml | sort -u)
mkdir "$tmp/schemas"
go run ./ci/k8s/schemagen -swagger "$dir/api/openapi-spec/swagger.json" -out "$tmp/schemas" "${kinds[@]}"
kubeconform() {
  go run "github.com/yannh/kubeconform/cmd/kubeconform@$KUBECONFORM" -strict -summary \
    -kubernetes-version "${K8S_VERSION#v}" \
    -schema-location "$tmp/schemas/{{ .ResourceKind }}{{ .KindSuffix }}.json" "$@"
}
# The check must be able to fail: a Job with a misspelt field and a
# string for a number is refused, for both reasons.
if out=$(kubeconform ci/k8s/testdata/invalid-job.yaml 2>&1) ||
  ! grep -q backoffLimitPerIndx <<<"$out" || ! grep -q completions <<<"$out"; then
  echo "ci/k8s/validate.sh: kubeconform did not refuse ci/k8s/testdata/invalid-job.yaml as it should:" >&2
  echo "$out" >&2
  exit 1
fi
kubeconform "$@"
