// Package web embeds the built browser page so that batchd serves it without
// Node at run time. The sources are in web/src; `npm run build` (or the
// Makefile) rebuilds dist/, which is committed.
package web

import (
	"embed"
	"io/fs"
	"net/http"
	"path"
	"strings"
)

//go:embed dist
var dist embed.FS

// Handler serves the built page at /. The bundles are named by content hash,
// so they are cached for good; index.html is revalidated on every load so a
// new build is picked up at once.
func Handler() http.Handler {
	sub, err := fs.Sub(dist, "dist")
	if err != nil {
		panic(err) // dist is embedded at build time; a failure here is a build bug
	}
	files := http.FileServer(http.FS(sub))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name := path.Base(r.URL.Path)
		if strings.HasPrefix(name, "app-") && (strings.HasSuffix(name, ".js") || strings.HasSuffix(name, ".css")) {
			w.Header().Set("Cache-Control", "public, max-age=31536000, immutable")
		} else {
			w.Header().Set("Cache-Control", "no-cache")
		}
		w.Header().Set("X-Content-Type-Options", "nosniff")
		files.ServeHTTP(w, r)
	})
}
