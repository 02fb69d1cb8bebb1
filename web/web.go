// Package web embeds the built browser page so that batchd serves it without
// Node at run time. The sources are in web/src; `make web` rebuilds dist/.
package web

import (
	"embed"
	"io/fs"
	"net/http"
)

//go:embed dist
var dist embed.FS

// Handler serves the built page at /.
func Handler() http.Handler {
	sub, err := fs.Sub(dist, "dist")
	if err != nil {
		panic(err) // dist is embedded at build time; a failure here is a build bug
	}
	return http.FileServer(http.FS(sub))
}
