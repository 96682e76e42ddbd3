// Package manifest loads a payload: the manifests of a directory of YAML and JSON
// files, in the cluster-version operator's order and with its annotations.
//
// A host calls Load on the directory of a release (an fs.FS) and hands the manifests
// to the payload worker in its payload.Loader (ExampleLoad); Inclusion decides which of
// them belong to a cluster (payload.Config.Include). A Manifest is a graph.Item: its
// file's name gives its run level and component (ParseRunLevel), a Job is a barrier and
// DependsOnAnnotation its dependencies.
//
// # Loading
//
// Load reads multi-document YAML and JSON files in CompareFiles order, one Manifest per
// non-empty document; a document it cannot read is a *LoadError naming the file and the
// document. A document in the block style manifests use is read once, into one buffer
// and maps made at their size; anything else (non-empty flow collections, anchors,
// floats, …) goes through sigs.k8s.io/yaml, with the same result (FuzzDecodeBlock). A
// 50 MB manifest, the limit raised to 64 MiB, allocates 2.0× its size for one large
// value and 4.0× for many keys (BenchmarkLoadLargeManifest); the default limit of 3 MiB
// refuses it once 3 MiB are read.
package manifest
