// Package doctree owns the path-indexed form of large documents
// (docs/format/doctree.md): a document from the storage engine's
// LargeDocThreshold bytes on is stored as a prolly map of its own whose
// keys follow the document's element positions, so that a change to one
// field rewrites the chunks near it, not the whole document, and versions
// share the rest.
//
// Build turns a document's BSON into such a tree, and a Writer writes
// trees into a node store skipping the nodes it already wrote; Load and
// FromMap read one back (Tree: the whole document, or only some paths
// through Fields); Diff compares two trees by the paths that changed,
// reading only the chunks that differ. The byte layout of keys and segments is key.go's and
// build.go's; storage decides when a document becomes a tree and how a
// collection refers to it.
package doctree
