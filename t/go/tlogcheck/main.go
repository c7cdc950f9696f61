// tlogcheck -- an independent client of sk-timeline's C2SP tlog-tiles,
// built on golang.org/x/mod/sumdb/tlog and sumdb/note (the Go checksum
// database's code), for t/timeline-tiles.t.
//
//	tlogcheck BASE-URL TIMELINE.pub OLD-CHECKPOINT NEW-CHECKPOINT
//
// Both checkpoints must carry a valid signature by the timeline's Ed25519
// key under their origin.  Over HTTP, with tiles fetched from
// BASE-URL/tile/..., it then checks: every entry in the entry bundles up
// to the new size is included in the new tree (ProveRecord/CheckRecord
// with the entry's own hash); the old tree is a prefix of the new
// (ProveTree/CheckTree); the tiles as of the old size hash to the old
// root; a changed entry fails its proof.  Prints "ok N entries" or the
// first failure, exiting 1.
package main

import (
	"crypto/ed25519"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"
)

type checkpoint struct {
	origin string
	size   int64
	root   tlog.Hash
}

func fail(format string, args ...interface{}) {
	fmt.Printf("FAIL "+format+"\n", args...)
	os.Exit(1)
}

// C2SP tile paths: N in 3-digit elements, "x" before all but the last.
func tilePath(t tlog.Tile) string {
	n := t.N
	elems := []string{fmt.Sprintf("%03d", n%1000)}
	for n >= 1000 {
		n /= 1000
		elems = append([]string{fmt.Sprintf("x%03d", n%1000)}, elems...)
	}
	level := strconv.Itoa(t.L)
	if t.L == -1 {
		level = "entries"
	}
	p := "tile/" + level + "/" + strings.Join(elems, "/")
	if t.W < 1<<uint(t.H) {
		p += fmt.Sprintf(".p/%d", t.W)
	}
	return p
}

type reader struct {
	base    string
	fetched int
}

func (r *reader) Height() int { return 8 }

func (r *reader) get(path string) ([]byte, error) {
	resp, err := http.Get(r.base + "/" + path)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != 200 {
		return nil, fmt.Errorf("GET %s: %s: %s", path, resp.Status, body)
	}
	r.fetched++
	return body, nil
}

func (r *reader) ReadTiles(tiles []tlog.Tile) ([][]byte, error) {
	out := make([][]byte, len(tiles))
	for i, t := range tiles {
		b, err := r.get(tilePath(t))
		if err != nil {
			return nil, err
		}
		out[i] = b
	}
	return out, nil
}

func (r *reader) SaveTiles([]tlog.Tile, [][]byte) {}

func loadKey(path string) ed25519.PublicKey {
	b, err := os.ReadFile(path)
	if err != nil {
		fail("%v", err)
	}
	blk, _ := pem.Decode(b)
	if blk == nil {
		fail("%s: no PEM block", path)
	}
	k, err := x509.ParsePKIXPublicKey(blk.Bytes)
	if err != nil {
		fail("%s: %v", path, err)
	}
	pub, ok := k.(ed25519.PublicKey)
	if !ok {
		fail("%s: not an Ed25519 key", path)
	}
	return pub
}

// The checkpoint in path, its signature checked with note.Open.
func loadCheckpoint(path string, pub ed25519.PublicKey) checkpoint {
	msg, err := os.ReadFile(path)
	if err != nil {
		fail("%v", err)
	}
	origin := strings.SplitN(string(msg), "\n", 2)[0]
	vkey, err := note.NewEd25519VerifierKey(origin, pub)
	if err != nil {
		fail("verifier key: %v", err)
	}
	v, err := note.NewVerifier(vkey)
	if err != nil {
		fail("verifier: %v", err)
	}
	n, err := note.Open(msg, note.VerifierList(v))
	if err != nil {
		fail("%s: signature: %v", path, err)
	}
	lines := strings.Split(n.Text, "\n")
	if len(lines) < 4 {
		fail("%s: short checkpoint", path)
	}
	size, err := strconv.ParseInt(lines[1], 10, 64)
	if err != nil {
		fail("%s: size: %v", path, err)
	}
	raw, err := base64.StdEncoding.DecodeString(lines[2])
	if err != nil || len(raw) != tlog.HashSize {
		fail("%s: root hash", path)
	}
	var cp checkpoint
	cp.origin, cp.size = origin, size
	copy(cp.root[:], raw)
	return cp
}

// Entry bundle n of width w: uint16 length, then the entry, each.
func bundle(r *reader, n int64, w int) [][]byte {
	b, err := r.get(tilePath(tlog.Tile{H: 8, L: -1, N: n, W: w}))
	if err != nil {
		fail("%v", err)
	}
	var out [][]byte
	for len(b) > 0 {
		if len(b) < 2 {
			fail("bundle %d: torn length", n)
		}
		l := int(b[0])<<8 | int(b[1])
		if len(b) < 2+l {
			fail("bundle %d: torn entry", n)
		}
		out = append(out, b[2:2+l])
		b = b[2+l:]
	}
	if len(out) != w {
		fail("bundle %d: %d entries, want %d", n, len(out), w)
	}
	return out
}

func main() {
	if len(os.Args) != 5 {
		fmt.Fprintln(os.Stderr, "usage: tlogcheck BASE-URL TIMELINE.pub OLD-CHECKPOINT NEW-CHECKPOINT")
		os.Exit(2)
	}
	r := &reader{base: strings.TrimRight(os.Args[1], "/")}
	pub := loadKey(os.Args[2])
	old := loadCheckpoint(os.Args[3], pub)
	cur := loadCheckpoint(os.Args[4], pub)
	if old.origin != cur.origin || old.size > cur.size || old.size == 0 {
		fail("checkpoints: origins %q %q, sizes %d %d", old.origin, cur.origin, old.size, cur.size)
	}

	hr := tlog.TileHashReader(tlog.Tree{N: cur.size, Hash: cur.root}, r)
	th, err := tlog.TreeHash(cur.size, hr)
	if err != nil || th != cur.root {
		fail("tree hash at %d: %v (%v, checkpoint %v)", cur.size, err, th, cur.root)
	}

	// Every entry, from its bundle, proved into the new tree.
	var changed []byte
	for n := int64(0); n*256 < cur.size; n++ {
		w := 256
		if rest := cur.size - n*256; rest < 256 {
			w = int(rest)
		}
		for k, e := range bundle(r, n, w) {
			i := n*256 + int64(k)
			p, err := tlog.ProveRecord(cur.size, i, hr)
			if err != nil {
				fail("prove entry %d: %v", i, err)
			}
			if err := tlog.CheckRecord(p, cur.size, cur.root, i, tlog.RecordHash(e)); err != nil {
				fail("entry %d: %v", i, err)
			}
			if i == cur.size/2 {
				changed = append([]byte{}, e...)
				changed[len(changed)/2] ^= 1
				if tlog.CheckRecord(p, cur.size, cur.root, i, tlog.RecordHash(changed)) == nil {
					fail("entry %d changed still proves", i)
				}
			}
		}
	}

	// The old tree is a prefix of the new one.
	tp, err := tlog.ProveTree(cur.size, old.size, hr)
	if err != nil {
		fail("prove tree %d..%d: %v", old.size, cur.size, err)
	}
	if err := tlog.CheckTree(tp, cur.size, cur.root, old.size, old.root); err != nil {
		fail("consistency %d..%d: %v", old.size, cur.size, err)
	}
	// The tiles as they were at the old size (partial widths) still hash
	// to the old root.
	ohr := tlog.TileHashReader(tlog.Tree{N: old.size, Hash: old.root}, r)
	if oh, err := tlog.TreeHash(old.size, ohr); err != nil || oh != old.root {
		fail("tree hash at %d: %v", old.size, err)
	}
	fmt.Printf("ok %d entries, consistent with size %d, %d fetches\n", cur.size, old.size, r.fetched)
}
