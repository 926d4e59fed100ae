package doctree

import "fmt"

// Key layout: docs/format/doctree.md.
const (
	keyTag    = 0x01
	pieceComp = 0xFE
	endComp   = 0xFF
)

// appendIndex appends i in the prefix-free, order-preserving index encoding.
func appendIndex(dst []byte, i int) []byte {
	switch {
	case i < 0xF0:
		return append(dst, byte(i))
	case i < 0xF0+1<<8:
		return append(dst, 0xF0, byte(i-0xF0))
	case i < 0xF0+1<<8+1<<16:
		j := i - 0xF0 - 1<<8
		return append(dst, 0xF1, byte(j>>8), byte(j))
	default:
		j := i - 0xF0 - 1<<8 - 1<<16
		return append(dst, 0xF2, byte(j>>24), byte(j>>16), byte(j>>8), byte(j))
	}
}

// readIndex decodes one index at the start of b, returning it and its width.
func readIndex(b []byte) (int, int, error) {
	if len(b) == 0 {
		return 0, 0, errBadKey
	}
	width := 0
	switch b[0] {
	case 0xF0:
		width = 2
	case 0xF1:
		width = 3
	case 0xF2:
		width = 5
	}
	switch {
	case b[0] < 0xF0:
		return int(b[0]), 1, nil
	case width == 0 || len(b) < width:
		return 0, 0, errBadKey
	case width == 2:
		return 0xF0 + int(b[1]), 2, nil
	case width == 3:
		return 0xF0 + 1<<8 + (int(b[1])<<8 | int(b[2])), 3, nil
	}
	return 0xF0 + 1<<8 + 1<<16 + (int(b[1])<<24 | int(b[2])<<16 | int(b[3])<<8 | int(b[4])), 5, nil
}

var errBadKey = fmt.Errorf("doctree: malformed key")

// pathKey encodes the key of the token at path.
func pathKey(dst []byte, path []int) []byte {
	dst = append(dst[:0], keyTag)
	for _, i := range path {
		dst = appendIndex(dst, i)
	}
	return dst
}

// keyKind tells what a segment starts with.
type keyKind uint8

const (
	kindElem  keyKind = iota // an element (or the root header: empty path)
	kindEnd                  // the end token of the container at path
	kindPiece                // piece n of the scalar at path
)

// parseKey decodes a segment key into its path, kind and piece number.
func parseKey(k []byte, path []int) ([]int, keyKind, int, error) {
	if len(k) == 0 || k[0] != keyTag {
		return nil, 0, 0, errBadKey
	}
	path = path[:0]
	for b := k[1:]; len(b) > 0; {
		switch b[0] {
		case endComp:
			if len(b) != 1 {
				return nil, 0, 0, errBadKey
			}
			return path, kindEnd, 0, nil
		case pieceComp:
			n, w, err := readIndex(b[1:])
			if err != nil || 1+w != len(b) {
				return nil, 0, 0, errBadKey
			}
			return path, kindPiece, n, nil
		}
		i, w, err := readIndex(b)
		if err != nil {
			return nil, 0, 0, err
		}
		path = append(path, i)
		b = b[w:]
	}
	return path, kindElem, 0, nil
}

// comparePaths orders two token slots in document order.
func comparePaths(a, b []int) int {
	for i := 0; i < len(a) && i < len(b); i++ {
		if a[i] != b[i] {
			if a[i] < b[i] {
				return -1
			}
			return 1
		}
	}
	return len(a) - len(b)
}

// within reports whether path lies in the subtree rooted at prefix.
func within(path, prefix []int) bool {
	if len(path) < len(prefix) {
		return false
	}
	for i := range prefix {
		if path[i] != prefix[i] {
			return false
		}
	}
	return true
}
