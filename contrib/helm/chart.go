package helmconverge

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"path"
	"strings"

	"helm.sh/helm/v4/pkg/chart/loader/archive"
	chart "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	"helm.sh/helm/v4/pkg/postrenderer"

	"github.com/converge-dev/converge/addon"
)

// Chart is what an add-on applies: a chart and the values it is rendered
// with.
type Chart struct {
	// Chart is the loaded chart (LoadDir, LoadArchive, LoadFS, or the
	// host's own loader: pulling from an OCI or HTTP repository is the
	// host's business, done before the driver runs).
	Chart *chart.Chart
	// Values override the chart's values.yaml. They may hold secrets: the
	// driver never writes them to the add-on's status, events or logs, and
	// Helm keeps them in its release storage (Secrets on the apiserver).
	Values map[string]any
	// DriftIgnore lists the fields drift detection ignores (Flux's
	// driftDetection.ignore). The driver asks the chart function for the
	// installed version's rules at each drift check (req.To is req.From).
	DriftIgnore []IgnoreRule
	// CRDs says what the driver does with the chart's crds/ directory, on
	// install and on upgrade apart (Flux's install.crds and upgrade.crds).
	CRDs CRDPolicies
	// CreateNamespace creates the release's namespace when an install
	// finds it missing (helm install --create-namespace, Flux's
	// install.createNamespace); an upgrade never creates it.
	CreateNamespace bool
	// PostRenderers edit the rendered manifests before they are applied,
	// in order, each given what the one before it returned (helm
	// --post-renderer, Flux's postRenderers). Helm keeps the result as the
	// revision's manifest, so rollbacks, health and drift see it. They run
	// on every install and upgrade; a change of a post-renderer is no new
	// version, so a host that wants one applied names it in the version.
	PostRenderers []postrenderer.PostRenderer
}

// problems lists what is wrong with the chart's settings.
func (ch Chart) problems() []string {
	_, problems := parseIgnoreRules(ch.DriftIgnore)
	problems = append(problems, ch.CRDs.problems()...)
	for i, pr := range ch.PostRenderers {
		if isNil(pr) {
			problems = append(problems, fmt.Sprintf("post-renderer %d is nil", i))
		}
	}
	return problems
}

// postRenderer chains the chart's post-renderers; nil when it has none.
func (ch Chart) postRenderer() postrenderer.PostRenderer {
	if len(ch.PostRenderers) == 0 {
		return nil
	}
	return chain(ch.PostRenderers)
}

// chain runs post-renderers in order.
type chain []postrenderer.PostRenderer

// Run passes the manifests through each post-renderer in turn.
func (c chain) Run(manifests *bytes.Buffer) (*bytes.Buffer, error) {
	for i, pr := range c {
		out, err := pr.Run(manifests)
		if err != nil {
			return nil, fmt.Errorf("post-renderer %d: %w", i, err)
		}
		manifests = out
	}
	return manifests, nil
}

// ChartFunc gives the chart, values and settings of an add-on. It is called
// for an install and an upgrade with the request the engine made (req.Spec,
// with the desired version, and req.Host, the host's object); its result
// must carry req.To, the version the engine applies (Version computes one
// from the chart and values). Drift calls it for the installed version
// (req.To set to req.From) to read its DriftIgnore rules, so it should be
// cheap: a host that pulls charts caches them. A rollback needs no chart:
// Helm keeps every revision's chart and values.
type ChartFunc func(ctx context.Context, req addon.Request) (Chart, error)

// LoadDir loads the chart in directory dir (honouring its .helmignore).
func LoadDir(dir string) (*chart.Chart, error) {
	c, err := loader.LoadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("helm: load chart directory %s: %w", dir, err)
	}
	return c, nil
}

// LoadArchive loads a packaged chart (a .tgz as helm package writes it).
func LoadArchive(r io.Reader) (*chart.Chart, error) {
	c, err := loader.LoadArchive(r)
	if err != nil {
		return nil, fmt.Errorf("helm: load chart archive: %w", err)
	}
	return c, nil
}

// LoadFS loads the chart in directory dir of fsys, such as an embed.FS that
// ships the chart inside the host's binary. Every regular file under dir is
// part of the chart (an fs.FS has no .helmignore rules).
func LoadFS(fsys fs.FS, dir string) (*chart.Chart, error) {
	if fsys == nil {
		return nil, invalidf("chart", "nil fs.FS")
	}
	var files []*archive.BufferedFile
	err := fs.WalkDir(fsys, dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		data, err := fs.ReadFile(fsys, p)
		if err != nil {
			return err
		}
		name := strings.TrimPrefix(p, dir+"/")
		if dir == "." {
			name = p
		}
		files = append(files, &archive.BufferedFile{Name: path.Clean(name), Data: data})
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("helm: load chart %s from fs: %w", dir, err)
	}
	c, err := loader.LoadFiles(files)
	if err != nil {
		return nil, fmt.Errorf("helm: load chart %s from fs: %w", dir, err)
	}
	return c, nil
}

// Version names a chart and its values as one add-on version:
// "<chart version>+values.<digest>", the digest being the first 16 hex
// digits of the SHA-256 of the values' JSON (keys sorted). A change of the
// values is a new version, so the engine upgrades for it; the digest names
// the values without revealing them.
func Version(c *chart.Chart, values map[string]any) (string, error) {
	if c == nil || c.Metadata == nil {
		return "", invalidf("chart", "nil chart or chart without metadata")
	}
	raw, err := json.Marshal(values)
	if err != nil {
		return "", invalidf("values", "not JSON: %v", err)
	}
	if values == nil {
		raw = []byte("{}")
	}
	sum := sha256.Sum256(raw)
	return c.Metadata.Version + "+values." + hex.EncodeToString(sum[:8]), nil
}

// versionDigest is the label value that names a version in Helm's release
// storage: label values are short and plain, versions need not be.
func versionDigest(version string) string {
	sum := sha256.Sum256([]byte(version))
	return hex.EncodeToString(sum[:16])
}
